import ATT
import TestSupport
import Testing

@testable import Links
@testable import Sockets

/// What every socket link must do, whichever kind.
@Suite("Socket links", .timeLimit(scaledMinutes(2)))
struct SocketLinkTests {
  @Test("one send is one receive, both ways", arguments: LinkKind.allCases)
  func oneSendOneReceive(kind: LinkKind) async throws {
    let ends = try await kind.open()
    defer { ends.close() }
    let pdus: [[UInt8]] = [[0x0A, 0x03, 0x00], [0x02], [0x1B, 0x0E, 0x00, 0x00, 0x12, 0x34, 0x56, 0x78, 0x00, 0x00]]
    for pdu in pdus { try ends.a.send(pdu) }
    for pdu in pdus { #expect(try await ends.b.receive() == pdu) }
    for pdu in pdus.reversed() { try ends.b.send(pdu) }
    for pdu in pdus.reversed() { #expect(try await ends.a.receive() == pdu) }
  }

  @Test("order is kept over thousands of PDUs sent both ways at once", arguments: LinkKind.allCases)
  func orderUnderLoad(kind: LinkKind) async throws {
    let ends = try await kind.open()
    defer { ends.close() }
    let count = 5000
    func pdu(_ index: Int) -> [UInt8] {
      [0x52, UInt8(index & 0xFF), UInt8(index >> 8)] + [UInt8](repeating: UInt8(index % 251), count: index % 40)
    }
    // Both ends send everything before reading anything: the links' reader threads must
    // absorb it, or the two senders would block each other.
    async let sentByA: Void = { for index in 0..<count { try ends.a.send(pdu(index)) } }()
    async let sentByB: Void = { for index in 0..<count { try ends.b.send(pdu(index)) } }()
    try await sentByA
    try await sentByB
    for index in 0..<count { #expect(try await ends.b.receive() == pdu(index)) }
    for index in 0..<count { #expect(try await ends.a.receive() == pdu(index)) }
  }

  @Test(
    "send never suspends; receiveIfReady takes only what is queued, in order", arguments: LinkKind.allCases
  )
  func withoutSuspending(kind: LinkKind) async throws {
    let ends = try await kind.open()
    defer { ends.close() }
    let count = 300
    for index in 0..<count { try ends.a.send([0x1B, UInt8(index & 0xFF), UInt8(index >> 8)]) }
    // Awaiting one PDU, then taking whatever the reader has queued without waiting, then
    // awaiting again: the two ways never reorder or lose a PDU.
    var received: [[UInt8]] = []
    while received.count < count {
      guard let first = try await ends.b.receive() else { break }
      received.append(first)
      while let queued = ends.b.receiveIfReady() { received.append(queued) }
    }
    #expect(received == (0..<count).map { [0x1B, UInt8($0 & 0xFF), UInt8($0 >> 8)] })
    #expect(ends.b.receiveIfReady() == nil, "nothing more was sent")
    ends.a.close()
    #expect(throws: BearerError.disconnected) { try ends.a.send([0x02]) }
  }

  @Test("large PDUs pass whole; over the limit is refused", arguments: LinkKind.allCases)
  func largePDUs(kind: LinkKind) async throws {
    let ends = try await kind.open()
    defer { ends.close() }
    let pdu517 = (0..<517).map { UInt8(truncatingIfNeeded: $0 * 7) }
    let largest = (0..<LinkFraming.maxPDUSize).map { UInt8(truncatingIfNeeded: $0) }
    try ends.a.send(pdu517)
    try ends.a.send(largest)
    #expect(try await ends.b.receive() == pdu517)
    #expect(try await ends.b.receive() == largest)
    #expect(throws: BearerError.tooLarge(size: 4096, limit: 4095)) {
      try ends.a.send([UInt8](repeating: 0, count: 4096))
    }
    // The refused PDU did not hurt the link.
    try ends.b.send(pdu517)
    #expect(try await ends.a.receive() == pdu517)
  }

  @Test("closing one end is seen by the other", arguments: LinkKind.allCases, [true, false])
  func disconnect(kind: LinkKind, closeA: Bool) async throws {
    let ends = try await kind.open()
    defer { ends.close() }
    let (closer, other) = closeA ? (ends.a, ends.b) : (ends.b, ends.a)
    try closer.send([0x01, 0x02])
    closer.close()
    closer.close()
    #expect(throws: BearerError.disconnected) { try closer.send([0x02]) }
    // What was sent before closing still arrives, then the end.
    #expect(try await other.receive() == [0x01, 0x02])
    #expect(try await other.receive() == nil)
    #expect(try await other.receive() == nil)
    #expect(!other.isConnected)
    #expect(throws: BearerError.disconnected) { try other.send([0x02]) }
    #expect(try await closer.receive() == nil)
    #expect(other.lastError == nil)
    #expect(closer.lastError == nil)
  }

  @Test("pairing raises the level on both ends", arguments: LinkKind.allCases)
  func pairingRaisesLevel(kind: LinkKind) async throws {
    let ends = try await kind.open()
    defer { ends.close() }
    #expect(ends.a.securityLevel == .unencrypted)
    #expect(try await ends.a.pair(.encrypted) == .encrypted)
    #expect(ends.a.securityLevel == .encrypted)
    #expect(ends.b.securityLevel == .encrypted)
    // The other end may ask too; asking for less keeps the higher level.
    #expect(try await ends.b.pair(.authenticated) == .authenticated)
    #expect(try await ends.a.pair(.encrypted) == .authenticated)
    #expect(ends.a.securityLevel == .authenticated)
    #expect(ends.b.securityLevel == .authenticated)
    // Control messages never come out of receive(): the next PDU is the ATT one.
    try ends.b.send([0x1B, 0x03, 0x00])
    #expect(try await ends.a.receive() == [0x1B, 0x03, 0x00])
  }

  @Test("concurrent pairing requests are answered in order", arguments: LinkKind.allCases)
  func concurrentPairing(kind: LinkKind) async throws {
    let ends = try await kind.open(b: .accept(upTo: .encrypted))
    defer { ends.close() }
    async let first = ends.a.pair(.encrypted)
    async let second = ends.a.pair(.encrypted)
    async let fromB = ends.b.pair(.authenticated)
    // b's own request may be granted first and raise b's level, so a may get more than it asked.
    #expect(try await first >= .encrypted)
    #expect(try await second >= .encrypted)
    #expect(try await fromB == .authenticated)
    #expect(ends.a.securityLevel == .authenticated)
    #expect(ends.b.securityLevel == .authenticated)
  }

  @Test("a responder that rejects, or grants less, fails the pairing", arguments: LinkKind.allCases)
  func pairingRejected(kind: LinkKind) async throws {
    let rejecting = try await kind.open(b: .reject)
    defer { rejecting.close() }
    await #expect(throws: BearerError.pairingFailed("the peer rejects pairing")) {
      try await rejecting.a.pair(.encrypted)
    }
    #expect(rejecting.a.securityLevel == .unencrypted)
    #expect(rejecting.b.securityLevel == .unencrypted)
    // b rejects, but a accepts when b asks.
    #expect(try await rejecting.b.pair(.authenticated) == .authenticated)

    let limited = try await kind.open(b: .accept(upTo: .encrypted))
    defer { limited.close() }
    await #expect(throws: BearerError.pairingFailed("the peer grants at most encrypted")) {
      try await limited.a.pair(.authenticated)
    }
    #expect(limited.a.securityLevel == .unencrypted)
    #expect(try await limited.a.pair(.encrypted) == .encrypted)
    // The link is still fine after a rejection.
    try limited.a.send([0x0A, 0x01, 0x00])
    #expect(try await limited.b.receive() == [0x0A, 0x01, 0x00])
  }

  @Test("pairing over a closed link fails with .disconnected", arguments: LinkKind.allCases)
  func pairingClosed(kind: LinkKind) async throws {
    let ends = try await kind.open()
    defer { ends.close() }
    ends.a.close()
    await #expect(throws: BearerError.disconnected) { try await ends.a.pair(.encrypted) }
    #expect(try await ends.b.receive() == nil)
    await #expect(throws: BearerError.disconnected) { try await ends.b.pair(.encrypted) }
  }

  @Test("socketpair ends share the initial level and the policy")
  func socketpairOptions() async throws {
    let (central, peripheral) = try UnixSeqpacketLink.pair(on: testLoop, pairing: .reject, initialLevel: .encrypted)
    defer {
      central.close()
      peripheral.close()
    }
    #expect(central.securityLevel == .encrypted)
    #expect(peripheral.securityLevel == .encrypted)
    #expect(central.pairingPolicy == .reject)
    #expect(central.name == "unix:socketpair(central)")
    await #expect(throws: BearerError.pairingFailed("the peer rejects pairing")) {
      try await peripheral.pair(.authenticated)
    }
  }

  @Test("cancelling a pending accept ends it; the listener goes on", arguments: [LinkKind.unixNamed, .tcp])
  func cancelAccept(kind: LinkKind) async throws {
    let directory = TemporaryDirectory()
    let listener: any LinkListener =
      kind == .tcp
      ? try TCPListener(on: testLoop) : try UnixSeqpacketListener(path: directory.file("c.sock"), on: testLoop)
    defer { listener.close() }
    let pending = Task { try await listener.accept() }
    pending.cancel()
    let error = await #expect(throws: LinkError.self) { _ = try await pending.value }
    #expect(error?.kind == .cancelled)

    let address = try LinkAddress(parsing: listener.name)
    async let accepted = listener.accept()
    let client = try await address.connect(on: testLoop)
    let server = try await accepted
    defer {
      client.close()
      server.close()
    }
    try server.send([0x1B, 0x01, 0x00])
    #expect(try await client.receive() == [0x1B, 0x01, 0x00])
  }

  /// One reactor thread reads every socket link of the process: links cost no thread each.
  @Test("a hundred links add no threads, and all of them carry PDUs")
  func linksShareOneReader() async throws {
    func threads() -> Int {
      let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
      let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
      return Int(line?.split(separator: "\t").last ?? "") ?? 0
    }
    // The reactor itself exists once the first link does.
    _ = try UnixSeqpacketLink.pair(on: testLoop)
    let before = threads()
    var pairs: [(central: SocketBearer, peripheral: SocketBearer)] = []
    for _ in 0..<100 { pairs.append(try UnixSeqpacketLink.pair(on: testLoop)) }
    for (index, pair) in pairs.enumerated() { try pair.central.send([UInt8(index)]) }
    for (index, pair) in pairs.enumerated() { #expect(try await pair.peripheral.receive() == [UInt8(index)]) }
    // A thread per socket would be 200 more. Other tests running meanwhile start threads of
    // their own (process readers, the executor's workers), hence the wide margin.
    #expect(threads() < before + 100, "\(threads()) threads, \(before) before the links")
  }

  @Test("a dropped bearer closes its link")
  func droppedBearerCloses() async throws {
    var pair: (central: SocketBearer, peripheral: SocketBearer)? = try UnixSeqpacketLink.pair(on: testLoop)
    let peripheral = pair!.peripheral
    pair = nil
    #expect(try await peripheral.receive() == nil)
  }
}

@Suite("Memory links", .timeLimit(scaledMinutes(1)))
struct MemoryLinkTests {
  @Test("send queues at the peer at once; receiveIfReady takes it without waiting; closed refuses")
  func withoutSuspending() async throws {
    let (a, b) = MemoryLink.pair()
    #expect(b.receiveIfReady() == nil)
    for index in 0..<3 { try a.send([0x1B, UInt8(index)]) }
    #expect(b.receiveIfReady() == [0x1B, 0])
    #expect(try await b.receive() == [0x1B, 1])
    #expect(b.receiveIfReady() == [0x1B, 2])
    #expect(b.receiveIfReady() == nil)
    a.close()
    #expect(throws: BearerError.disconnected) { try a.send([0x02]) }
    #expect(try await b.receive() == nil)
  }
}
