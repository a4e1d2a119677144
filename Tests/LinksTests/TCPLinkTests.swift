import ATT
import Glibc
import TestSupport
import Testing

@testable import Links
@testable import Sockets

@Suite("TCP link", .timeLimit(scaledMinutes(2)))
struct TCPLinkTests {
  @Test("port 0 picks a free port, which the listener reports")
  func ephemeralPort() async throws {
    let listener = try TCPListener(on: testLoop)
    defer { listener.close() }
    #expect(listener.port != 0)
    #expect(listener.name == "tcp:127.0.0.1:\(listener.port)")
    let error = #expect(throws: LinkError.self) { try TCPListener(port: listener.port, on: testLoop) }
    #expect(error?.kind == .addressInUse)
    #expect(error?.description.hasPrefix("tcp:127.0.0.1:\(listener.port): address in use (") == true)
  }

  @Test("connection refused says what to do")
  func connectionRefused() async throws {
    // A port bound but not listening refuses connections, and while this socket holds it no
    // other test's listener can take it and no connect can use it as its own source port.
    // (Closing a listener to "free" a port lets a parallel test's listener reuse it.)
    let address = try SocketAddress.resolveTCP(host: "127.0.0.1", port: 0, passive: true).get()[0]
    let holder = RawSocket(fd: try makeSocket(family: AF_INET, type: Int32(SOCK_STREAM.rawValue)).get())
    defer { holder.close() }
    try #require(address.withSockaddr { bind(holder.fd, $0, $1) } == 0)
    let port = try #require(SocketAddress.local(of: holder.fd)?.port)
    let error = await #expect(throws: LinkError.self) { _ = try await TCPLink.connect(port: port, on: testLoop) }
    #expect(error?.kind == .connectionRefused)
    #expect(error?.description == "tcp:127.0.0.1:\(port): connection refused (is `ancs phone --listen` running?)")
  }

  @Test("frames written a byte at a time, or several in one write, come out whole")
  func partialWrites() async throws {
    let listener = try TCPListener(on: testLoop)
    defer { listener.close() }
    async let accepted = listener.accept()
    let raw = try await RawSocket.tcp(port: listener.port)
    let bearer = try await accepted
    defer { bearer.close() }
    #expect(bearer.name.hasPrefix("tcp:127.0.0.1:\(listener.port) (from 127.0.0.1:"))

    let pdu = (0..<517).map { UInt8(truncatingIfNeeded: $0) }
    for byte in StreamFrameDecoder.frame([0x04] + pdu) { raw.write([byte]) }
    #expect(try await bearer.receive() == pdu)

    let several = [[0x0A, 0x03, 0x00], [0x02, 0x00, 0x02], [0x1D, 0x10, 0x00, 0xAA]].map {
      StreamFrameDecoder.frame([0x04] + $0)
    }
    raw.write(several.flatMap { $0 })
    #expect(try await bearer.receive() == [0x0A, 0x03, 0x00])
    #expect(try await bearer.receive() == [0x02, 0x00, 0x02])
    #expect(try await bearer.receive() == [0x1D, 0x10, 0x00, 0xAA])

    // A frame split across two writes at an odd place.
    let frame = StreamFrameDecoder.frame([0x04] + pdu)
    raw.write(Array(frame[0..<1]))
    raw.write(Array(frame[1..<300]))
    raw.write(Array(frame[300...]))
    #expect(try await bearer.receive() == pdu)

    // What the link sends is framed as documented.
    try bearer.send([0x0B, 0x01, 0x02])
    #expect(await raw.read(exactly: 6) == [0x04, 0x00, 0x04, 0x0B, 0x01, 0x02])
    // And so is pairing.
    async let paired = bearer.pair(.encrypted)
    #expect(await raw.read(exactly: 5) == [0x03, 0x00, 0x06, 0x01, 0x02])
    raw.write([0x03, 0x00, 0x06, 0x02, 0x02])
    #expect(try await paired == .encrypted)
    #expect(bearer.securityLevel == .encrypted)
  }

  @Test(
    "a malformed frame closes the link and records why",
    arguments: [
      ([0x00, 0x20], LinkFault.frameTooLong(length: 8192, limit: 4096)),
      ([0x01, 0x10], .frameTooLong(length: 4097, limit: 4096)),
      ([0x00, 0x00], .emptyFrame),
      ([0x02, 0x00, 0x07, 0x01], .unknownChannel(0x07)),
      ([0x03, 0x00, 0x06, 0x02, 0x09], .malformedControl("Pair Accept with level 9, expected 1...3")),
      ([0x03, 0x00, 0x06, 0x02, 0x02], .unexpectedPairResponse),
    ] as [([UInt8], LinkFault)])
  func malformedFrame(input: [UInt8], fault: LinkFault) async throws {
    let listener = try TCPListener(on: testLoop)
    defer { listener.close() }
    async let accepted = listener.accept()
    let raw = try await RawSocket.tcp(port: listener.port)
    let bearer = try await accepted
    raw.write(StreamFrameDecoder.frame([0x04, 0x0A]) + input)
    #expect(try await bearer.receive() == [0x0A])
    #expect(try await bearer.receive() == nil)
    #expect(bearer.lastError == fault)
    #expect(!bearer.isConnected)
    #expect(throws: BearerError.disconnected) { try bearer.send([0x0A]) }
    // The peer sees the link end.
    #expect(await raw.read(exactly: 1) == [])
  }

  @Test("a stream that ends inside a frame, and a reset, are recorded")
  func truncatedAndReset() async throws {
    let listener = try TCPListener(on: testLoop)
    defer { listener.close() }

    async let first = listener.accept()
    let raw = try await RawSocket.tcp(port: listener.port)
    let bearer = try await first
    raw.write([0x10, 0x00, 0x04, 0x01])
    raw.close()
    #expect(try await bearer.receive() == nil)
    #expect(bearer.lastError == .truncatedFrame(bufferedBytes: 4))

    async let second = listener.accept()
    let resetter = try await RawSocket.tcp(port: listener.port)
    let reset = try await second
    resetter.closeWithReset()
    #expect(try await reset.receive() == nil)
    #expect(reset.lastError == .connectionReset)
    #expect(throws: BearerError.disconnected) { try reset.send([0x0A]) }
  }
}

@Suite("Stream frame decoder")
struct StreamFrameDecoderTests {
  @Test("every split point of three frames gives the same frames")
  func everySplit() throws {
    let bodies: [[UInt8]] = [
      [0x04, 0x0A, 0x03, 0x00], [0x06, 0x01, 0x02], [0x04] + [UInt8](repeating: 0x55, count: 300),
    ]
    let stream = bodies.flatMap { StreamFrameDecoder.frame($0) }
    for split in 0...stream.count {
      for second in split...stream.count {
        var decoder = StreamFrameDecoder()
        var out: [[UInt8]] = []
        for piece in [stream[0..<split], stream[split..<second], stream[second...]] {
          decoder.append(piece)
          while let body = try decoder.next() { out.append(body) }
        }
        #expect(out == bodies, "split at \(split), \(second)")
        #expect(decoder.bufferedCount == 0)
        if out != bodies { return }
      }
    }
  }

  @Test("byte by byte")
  func byteByByte() throws {
    let bodies: [[UInt8]] = (1...50).map { count in [0x04] + (0..<count).map { UInt8($0) } }
    var decoder = StreamFrameDecoder()
    var out: [[UInt8]] = []
    for byte in bodies.flatMap({ StreamFrameDecoder.frame($0) }) {
      decoder.append([byte])
      while let body = try decoder.next() { out.append(body) }
    }
    #expect(out == bodies)
  }

  @Test("a bad length is reported as soon as it is in")
  func badLength() throws {
    var decoder = StreamFrameDecoder()
    decoder.append([0x01])
    #expect(throws: Never.self) { try decoder.next() }
    decoder.append([0x10])
    #expect(throws: LinkFault.frameTooLong(length: 4097, limit: 4096)) { try decoder.next() }
    var empty = StreamFrameDecoder()
    empty.append([0x00, 0x00, 0x04])
    #expect(throws: LinkFault.emptyFrame) { try empty.next() }
    var largest = StreamFrameDecoder()
    largest.append([0x00, 0x10])
    #expect(try largest.next() == nil)
    largest.append([UInt8](repeating: 4, count: 4096))
    #expect(try largest.next()?.count == 4096)
  }
}

@Suite("Link-control messages")
struct ControlMessageTests {
  @Test("encode and decode are symmetric")
  func roundTrip() throws {
    let messages: [ControlMessage] = [
      .pairRequest(wanted: 2), .pairAccept(granted: .authenticated),
      .pairReject(reason: 0x03, text: "the peer grants at most encrypted"), .pairReject(reason: 0x05, text: ""),
    ]
    for message in messages {
      #expect(try ControlMessage.decode(message.encoded[...]) == message)
    }
    #expect(ControlMessage.pairRequest(wanted: 3).encoded == [0x01, 0x03])
    #expect(ControlMessage.pairAccept(granted: .encrypted).encoded == [0x02, 0x02])
    #expect(ControlMessage.pairReject(reason: 5, text: "no").encoded == [0x03, 0x05, 0x6E, 0x6F])
  }

  @Test(
    "malformed messages are refused with the reason",
    arguments: [
      ([], "empty message"),
      ([0x01], "Pair Request of 1 bytes, expected 2"),
      ([0x01, 0x02, 0x03], "Pair Request of 3 bytes, expected 2"),
      ([0x02], "Pair Accept of 1 bytes, expected 2"),
      ([0x02, 0x00], "Pair Accept with level 0, expected 1...3"),
      ([0x03], "Pair Reject without a reason"),
      ([0xFF, 0x00], "unknown code 0xFF"),
    ] as [([UInt8], String)])
  func malformed(bytes: [UInt8], reason: String) {
    #expect(throws: LinkFault.malformedControl(reason)) { try ControlMessage.decode(bytes[...]) }
  }
}
