import ATT
import TestSupport
import Testing

@testable import Links
@testable import Sockets

@Suite("Link addresses")
struct LinkAddressTests {
  @Test(
    "valid addresses parse to typed values",
    arguments: [
      ("memory", LinkAddress.memory, "memory"),
      ("unix:/tmp/phone.sock", .unix(path: "/tmp/phone.sock"), "unix:/tmp/phone.sock"),
      ("unix:phone.sock", .unix(path: "phone.sock"), "unix:phone.sock"),
      ("tcp:127.0.0.1:5000", .tcp(host: "127.0.0.1", port: 5000), "tcp:127.0.0.1:5000"),
      ("tcp::5000", .tcp(host: "127.0.0.1", port: 5000), "tcp:127.0.0.1:5000"),
      ("tcp:5000", .tcp(host: "127.0.0.1", port: 5000), "tcp:127.0.0.1:5000"),
      ("tcp:0", .tcp(host: "127.0.0.1", port: 0), "tcp:127.0.0.1:0"),
      ("tcp:localhost:65535", .tcp(host: "localhost", port: 65535), "tcp:localhost:65535"),
      ("tcp:0.0.0.0:80", .tcp(host: "0.0.0.0", port: 80), "tcp:0.0.0.0:80"),
      ("tcp:[::1]:5000", .tcp(host: "::1", port: 5000), "tcp:[::1]:5000"),
    ] as [(String, LinkAddress, String)])
  func valid(text: String, expected: LinkAddress, canonical: String) throws {
    let address = try LinkAddress(parsing: text)
    #expect(address == expected)
    #expect(address.description == canonical)
    #expect(try LinkAddress(parsing: canonical) == expected)
  }

  @Test(
    "invalid addresses fail with one line naming the alternatives",
    arguments: [
      ("bogus", LinkError.Kind.unknownTransport, "bogus: unknown transport (use memory, unix:PATH or tcp:HOST:PORT)"),
      (
        "udp:1.2.3.4:5", .unknownTransport,
        "udp:1.2.3.4:5: unknown transport udp: (use memory, unix:PATH or tcp:HOST:PORT)"
      ),
      (
        "hci-tcp:127.0.0.1:1234", .unavailableTransport,
        "hci-tcp:127.0.0.1:1234: hci-tcp: is a Bluetooth transport, not a simulated link (give it to --bluetooth, or use memory, unix:PATH or tcp:HOST:PORT here)"
      ),
      (
        "hci-uart:/dev/ttyUSB0,1000000", .unavailableTransport,
        "hci-uart:/dev/ttyUSB0,1000000: hci-uart: is a Bluetooth transport, not a simulated link (give it to --bluetooth, or use memory, unix:PATH or tcp:HOST:PORT here)"
      ),
      (
        "hci-user:0", .unavailableTransport,
        "hci-user:0: hci-user: is a Bluetooth transport, not a simulated link (give it to --bluetooth, or use memory, unix:PATH or tcp:HOST:PORT here)"
      ),
      (
        "l2cap:hci0", .unavailableTransport,
        "l2cap:hci0: l2cap: is a Bluetooth transport, not a simulated link (give it to --bluetooth, or use memory, unix:PATH or tcp:HOST:PORT here)"
      ),
      ("", .invalidAddress, "no link address given (use memory, unix:PATH or tcp:HOST:PORT)"),
      ("memory:x", .invalidAddress, "memory:x: memory takes no argument (write just memory)"),
      ("unix:", .invalidAddress, "unix: empty socket path (write unix:PATH)"),
      ("tcp:", .invalidAddress, "tcp: missing port (write tcp:HOST:PORT or tcp:PORT)"),
      ("tcp:host:", .invalidAddress, "tcp:host: missing port (write tcp:HOST:PORT or tcp:PORT)"),
      (
        "tcp:host:70000", .invalidAddress,
        "tcp:host:70000: bad port \"70000\" (0...65535) (write tcp:HOST:PORT or tcp:PORT)"
      ),
      ("tcp:host:-1", .invalidAddress, "tcp:host:-1: bad port \"-1\" (0...65535) (write tcp:HOST:PORT or tcp:PORT)"),
      ("tcp:host:+1", .invalidAddress, "tcp:host:+1: bad port \"+1\" (0...65535) (write tcp:HOST:PORT or tcp:PORT)"),
      ("tcp:::1:5000", .invalidAddress, "tcp:::1:5000: an IPv6 host needs brackets (write tcp:[ADDRESS]:PORT)"),
      ("tcp:[::1]5000", .invalidAddress, "tcp:[::1]5000: bad IPv6 host (write tcp:[ADDRESS]:PORT)"),
    ] as [(String, LinkError.Kind, String)])
  func invalid(text: String, kind: LinkError.Kind, message: String) {
    let error = #expect(throws: LinkError.self) { try LinkAddress(parsing: text) }
    #expect(error?.kind == kind)
    #expect(error?.description == message)
    #expect(error?.description.contains("\n") == false)
  }

  @Test("a Unix path too long for sun_path is refused at parse time")
  func longPath() {
    let path = "/tmp/" + String(repeating: "p", count: 120)
    let error = #expect(throws: LinkError.self) { try LinkAddress(parsing: "unix:\(path)") }
    #expect(error?.kind == .invalidAddress)
    #expect(error?.description.contains("too long for a Unix socket (at most 107)") == true)
  }

  @Test("listen and connect by address", arguments: ["unix", "tcp"])
  func listenAndConnect(scheme: String) async throws {
    let directory = TemporaryDirectory()
    let text = scheme == "unix" ? "unix:\(directory.file("a.sock"))" : "tcp::0"
    let listener = try LinkAddress(parsing: text).listen(on: testLoop, pairing: .reject)
    defer { listener.close() }
    // The listener's name is an address the peer can connect to (the real port for tcp::0).
    let address = try LinkAddress(parsing: listener.name)
    async let accepted = listener.accept()
    let client = try await address.connect(on: testLoop)
    let server = try await accepted
    defer {
      client.close()
      server.close()
    }
    #expect(server.pairingPolicy == .reject)
    try client.send([0x12, 0x34])
    #expect(try await server.receive() == [0x12, 0x34])
  }

  @Test("memory has nothing to listen on or connect to")
  func memoryAcrossProcesses() async {
    let error = #expect(throws: LinkError.self) { try LinkAddress.memory.listen(on: testLoop) }
    #expect(
      error?.description
        == "memory: an in-process link has no listener (use unix:PATH or tcp:HOST:PORT between two processes)")
    await #expect(throws: LinkError.self) { _ = try await LinkAddress.memory.connect(on: testLoop) }
  }
}
