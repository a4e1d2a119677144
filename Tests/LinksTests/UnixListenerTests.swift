import ATT
import Foundation
import Glibc
import TestSupport
import Testing

@testable import Links
@testable import Sockets

@Suite("Unix named sockets", .timeLimit(scaledMinutes(2)))
struct UnixListenerTests {
  @Test("the socket file has mode 0600 and goes away on close")
  func modeAndRemoval() throws {
    let directory = TemporaryDirectory()
    let path = directory.file("phone.sock")
    let listener = try UnixSeqpacketListener(path: path, on: testLoop)
    var info = stat()
    #expect(lstat(path, &info) == 0)
    #expect(info.st_mode & S_IFMT == S_IFSOCK)
    #expect(info.st_mode & 0o777 == 0o600)
    #expect(listener.name == "unix:\(path)")
    listener.close()
    listener.close()
    #expect(lstat(path, &info) != 0 && errno == ENOENT)
  }

  @Test("a stale socket file (nobody listening) is removed and reused")
  func stalePath() async throws {
    let directory = TemporaryDirectory()
    let path = directory.file("stale.sock")
    // What a phone that died leaves behind: the file of a socket that listened, with no
    // socket behind it any more.
    let fd = try makeSocket(family: AF_UNIX, type: Int32(SOCK_SEQPACKET.rawValue)).get()
    #expect(SocketAddress(unixPath: path)!.withSockaddr { bind(fd, $0, $1) } == 0)
    #expect(listen(fd, 1) == 0)
    Glibc.close(fd)
    var info = stat()
    #expect(lstat(path, &info) == 0)

    let listener = try UnixSeqpacketListener(path: path, on: testLoop)
    defer { listener.close() }
    async let accepted = listener.accept()
    let client = try await UnixSeqpacketLink.connect(path: path, on: testLoop)
    let server = try await accepted
    defer {
      client.close()
      server.close()
    }
    try client.send([0x02, 0x00, 0x02])
    #expect(try await server.receive() == [0x02, 0x00, 0x02])
  }

  @Test("a path someone listens on fails with address in use")
  func pathInUse() async throws {
    let directory = TemporaryDirectory()
    let path = directory.file("busy.sock")
    let first = try UnixSeqpacketListener(path: path, on: testLoop)
    defer { first.close() }
    let error = #expect(throws: LinkError.self) { try UnixSeqpacketListener(path: path, on: testLoop) }
    #expect(error?.kind == .addressInUse)
    #expect(
      error?.description == "unix:\(path): address in use (another phone is listening there; pick another path)")
    // The first listener keeps its file and still works. The probe that found it busy
    // shows up there as a peer that left at once.
    var info = stat()
    #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK)
    let probe = try await first.accept()
    #expect(try await probe.receive() == nil)
    async let accepted = first.accept()
    let client = try await UnixSeqpacketLink.connect(path: path, on: testLoop)
    let server = try await accepted
    defer {
      client.close()
      server.close()
    }
    try client.send([0x0A, 0x01, 0x00])
    #expect(try await server.receive() == [0x0A, 0x01, 0x00])
  }

  @Test("a regular file is never replaced")
  func regularFile() throws {
    let directory = TemporaryDirectory()
    let path = directory.file("notes.txt")
    try Data("keep me".utf8).write(to: URL(fileURLWithPath: path))
    let error = #expect(throws: LinkError.self) { try UnixSeqpacketListener(path: path, on: testLoop) }
    #expect(error?.kind == .notASocket)
    #expect(error?.description.hasPrefix("unix:\(path): exists and is not a socket") == true)
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep me")
  }

  @Test("close wakes a pending accept, and later accepts fail")
  func closeWakesAccept() async throws {
    let directory = TemporaryDirectory()
    let listener = try UnixSeqpacketListener(path: directory.file("x.sock"), on: testLoop)
    let accepted = Task { try await listener.accept() }
    // The accept may start before or after close; either way it must end with listenerClosed.
    listener.close()
    await #expect(throws: LinkError.self) { _ = try await accepted.value }
    let error = await #expect(throws: LinkError.self) { _ = try await listener.accept() }
    #expect(error?.kind == .listenerClosed)
  }

  @Test("connecting to nothing says what to do")
  func connectErrors() async throws {
    let directory = TemporaryDirectory()
    let missing = directory.file("none.sock")
    let error = await #expect(throws: LinkError.self) {
      _ = try await UnixSeqpacketLink.connect(path: missing, on: testLoop)
    }
    #expect(error?.kind == .noSuchPath)
    #expect(error?.description == "unix:\(missing): no such socket (is `ancs phone --listen` running?)")

    let noDirectory = directory.file("missing/dir/x.sock")
    let bindError = #expect(throws: LinkError.self) { try UnixSeqpacketListener(path: noDirectory, on: testLoop) }
    #expect(bindError?.kind == .noSuchPath)

    let long = "/tmp/" + String(repeating: "x", count: 200)
    let longError = #expect(throws: LinkError.self) { try UnixSeqpacketListener(path: long, on: testLoop) }
    #expect(longError?.kind == .invalidAddress)
  }

  @Test("a listener takes several peers; each link is independent")
  func severalPeers() async throws {
    let directory = TemporaryDirectory()
    let path = directory.file("multi.sock")
    let listener = try UnixSeqpacketListener(path: path, on: testLoop, pairing: .accept(upTo: .encrypted))
    defer { listener.close() }
    var pairs: [(SocketBearer, SocketBearer)] = []
    for _ in 0..<3 {
      async let accepted = listener.accept()
      let client = try await UnixSeqpacketLink.connect(path: path, on: testLoop)
      pairs.append((client, try await accepted))
    }
    defer {
      for (client, server) in pairs {
        client.close()
        server.close()
      }
    }
    #expect(try await pairs[1].0.pair(.encrypted) == .encrypted)
    #expect(pairs[0].1.securityLevel == .unencrypted)
    #expect(pairs[1].1.securityLevel == .encrypted)
    for (index, (client, server)) in pairs.enumerated() {
      try client.send([UInt8(index)])
      #expect(try await server.receive() == [UInt8(index)])
    }
  }

  @Test("a peer breaking the framing closes the link with the reason recorded")
  func malformedMessages() async throws {
    let cases: [([UInt8], LinkFault)] = [
      ([0x05, 0x01], .unknownChannel(0x05)),
      ([UInt8](repeating: 0x04, count: 5000), .frameTooLong(length: 5000, limit: 4096)),
      ([0x06], .malformedControl("empty message")),
      ([0x06, 0x09], .malformedControl("unknown code 0x09")),
      ([0x06, 0x01], .malformedControl("Pair Request of 1 bytes, expected 2")),
      ([0x06, 0x02, 0x02], .unexpectedPairResponse),
      ([0x06, 0x03, 0x05], .unexpectedPairResponse),
    ]
    for (input, fault) in cases {
      let (bearer, raw) = try RawSocket.seqpacketPair()
      raw.write([0x04, 0x0A])
      raw.write(input)
      #expect(try await bearer.receive() == [0x0A])
      #expect(try await bearer.receive() == nil)
      #expect(bearer.lastError == fault)
      #expect(throws: BearerError.disconnected) { try bearer.send([0x01]) }
      #expect(await raw.read() == [])
    }
  }

  @Test("pairing messages on the wire, and a peer that leaves mid-pairing")
  func pairingWireFormat() async throws {
    let (bearer, raw) = try RawSocket.seqpacketPair(pairing: .accept(upTo: .encrypted))
    defer { bearer.close() }
    // The raw peer asks for levels; the link answers per its policy.
    raw.write([0x06, 0x01, 0x02])
    #expect(await raw.read() == [0x06, 0x02, 0x02])
    #expect(bearer.securityLevel == .encrypted)
    raw.write([0x06, 0x01, 0x03])
    #expect(await raw.read() == [0x06, 0x03, 0x03] + Array("the peer grants at most encrypted".utf8))
    raw.write([0x06, 0x01, 0x07])
    #expect(await raw.read() == [0x06, 0x03, 0x0A] + Array("the peer got an invalid level 7".utf8))
    // A reject with no text still explains itself.
    let rejected = Task { try await bearer.pair(.authenticated) }
    #expect(await raw.read() == [0x06, 0x01, 0x03])
    raw.write([0x06, 0x03, 0x05])
    await #expect(throws: BearerError.pairingFailed("the peer rejected pairing (reason 0x05)")) {
      _ = try await rejected.value
    }
    // The raw peer reads the request and leaves without answering.
    let pending = Task { try await bearer.pair(.authenticated) }
    #expect(await raw.read() == [0x06, 0x01, 0x03])
    raw.close()
    await #expect(throws: BearerError.disconnected) { _ = try await pending.value }
    #expect(bearer.lastError == nil)
  }
}
