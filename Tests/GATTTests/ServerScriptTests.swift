import ATT
import GATT
import Links
import TestSupport
import Testing
import Wire

// 128-bit UUIDs of the fixture, little-endian as on the wire.
private let serviceLE = "d0 00 2d 12 1e 4b 0f a4 99 4e ce b5 31 f4 05 79"
private let sourceLE = "bd 1d a2 99 e6 25 58 8c d9 42 01 63 0d 12 bf 9f"
private let controlLE = "d9 d9 aa fd bd 9b 21 98 a8 49 e1 45 f3 d8 d1 69"
private let dataLE = "fb 7b 7c ce 6a b3 44 be b5 4b d6 24 e9 c6 ea 22"

/// Server behaviour as scripted PDU exchanges: the test plays the client byte for byte.
private let serverScripts: [Script] = [
  Script(
    "GATT/SR/GAD/BV-01 discover all primary services",
    [
      .send("all services from 1", "10 01 00 ff ff 00 28"),
      .expect("16-bit services", "11 06 01 00 04 00 01 18 05 00 08 00 0f 18"),
      .send("from 9", "10 09 00 ff ff 00 28"),
      .expect("the 128-bit service alone", "11 14 09 00 11 00 " + serviceLE),
      .send("from 0x12", "10 12 00 ff ff 00 28"),
      .expect("current time", "11 06 12 00 16 00 05 18"),
      .send("from 0x17", "10 17 00 ff ff 00 28"),
      .expect("end", "01 10 17 00 0a"),
    ]),
  Script(
    "GATT/SR/GAD/BV-02 discover a primary service by UUID",
    [
      .send("find by type value", "06 01 00 ff ff 00 28 " + serviceLE),
      .expect("its range", "07 09 00 11 00"),
      .send("continue", "06 12 00 ff ff 00 28 " + serviceLE),
      .expect("no more", "01 06 12 00 0a"),
    ]),
  Script(
    "GATT/SR/GAD/BV-04 discover characteristics inside the service range",
    [
      .send("read by type 0x2803", "08 09 00 11 00 03 28"),
      .expect("one 128-bit declaration fits MTU 23", "09 15 0a 00 10 0b 00 " + sourceLE),
      .send("continue", "08 0b 00 11 00 03 28"),
      .expect("control point", "09 15 0d 00 08 0e 00 " + controlLE),
      .send("continue", "08 0e 00 11 00 03 28"),
      .expect("data source", "09 15 0f 00 10 10 00 " + dataLE),
      .send("continue", "08 10 00 11 00 03 28"),
      .expect("no more", "01 08 10 00 0a"),
    ]),
  Script(
    "GATT/SR/GAD/BV-06 discover descriptors",
    [
      .send("find information after the value", "04 0c 00 0c 00"),
      .expect("CCCD", "05 01 0c 00 02 29"),
      .send("the whole battery service", "04 05 00 08 00"),
      .expect("all 16-bit types", "05 01 05 00 00 28 06 00 03 28 07 00 19 2a 08 00 02 29"),
      .send("the 128-bit value", "04 0b 00 0b 00"),
      .expect("format 2", "05 02 0b 00 " + sourceLE),
    ]),
  Script(
    "GATT/SR/GAR/BV-01 read, read long, read by type",
    [
      .send("read battery level", "0a 07 00"),
      .expect("42", "0b 2a"),
      .send("read a 60-byte value", "0a 14 00"),
      .expect("first 22 bytes", "0b " + Hex.encode(0..<22)),
      .send("blob at 22", "0c 14 00 16 00"),
      .expect("next 22", "0d " + Hex.encode(22..<44)),
      .send("blob at 44", "0c 14 00 2c 00"),
      .expect("last 16", "0d " + Hex.encode(44..<60)),
      .send("blob at the end", "0c 14 00 3c 00"),
      .expect("empty part", "0d"),
      .send("blob past the end", "0c 14 00 3d 00"),
      .expect("invalid offset", "01 0c 14 00 07"),
      .send("read by type 0x2A19", "08 01 00 ff ff 19 2a"),
      .expect("handle and value", "09 03 07 00 2a"),
    ]),
  Script(
    "GATT/SR/GAR/BI-01 reads refused with the right error",
    [
      .send("handle 0", "0a 00 00"),
      .expect("invalid handle", "01 0a 00 00 01"),
      .send("a handle past the end", "0a 99 00"),
      .expect("invalid handle", "01 0a 99 00 01"),
      .send("a notify-only value", "0a 0b 00"),
      .expect("read not permitted", "01 0a 0b 00 02"),
      .send("an authenticated value on a plain link", "0a 16 00"),
      .expect("insufficient authentication", "01 0a 16 00 05"),
      .send("read by type hits the authenticated value first", "08 16 00 16 00 0f 2a"),
      .expect("insufficient authentication", "01 08 16 00 05"),
      .send("a truncated read", "0a 01"),
      .expect("invalid PDU", "01 0a 00 00 04"),
      .send("read with a trailing byte", "0a 07 00 00"),
      .expect("invalid PDU", "01 0a 00 00 04"),
    ]),
  Script(
    "GATT/SR/GAW/BI-01 writes refused with the right error",
    [
      .send("write a read-only value", "12 07 00 01"),
      .expect("write not permitted", "01 12 07 00 03"),
      .send("write a declaration", "12 06 00 01"),
      .expect("write not permitted", "01 12 06 00 03"),
      .send("CCCD of 1 byte", "12 08 00 01"),
      .expect("invalid length", "01 12 08 00 0d"),
      .send("indications where only notify is allowed", "12 08 00 02 00"),
      .expect("CCCD improperly configured", "01 12 08 00 fd"),
      .send("encrypted CCCD on a plain link", "12 0c 00 01 00"),
      .expect("insufficient encryption", "01 12 0c 00 0f"),
      .send("encrypted value on a plain link", "12 0e 00 00 01 02"),
      .expect("insufficient encryption", "01 12 0e 00 0f"),
      .send("write to nothing", "12 50 00 01"),
      .expect("invalid handle", "01 12 50 00 01"),
      .send("write command to a read-only value: ignored", "52 07 00 01"),
      .send("then a read is still answered", "0a 07 00"),
      .expect("42", "0b 2a"),
    ]),
  Script(
    "ATT/SR/GEN/BI-01 unsupported and invalid requests",
    [
      .send("read multiple", "0e 01 00 02 00"),
      .expect("request not supported", "01 0e 00 00 06"),
      .send("unknown request opcode 0x30", "30 01 02"),
      .expect("request not supported", "01 30 00 00 06"),
      .send("unknown command 0x70: no answer", "70 01 02"),
      .send("signed write command: no answer", "d2 07 00 01 02 03 04 05 06 07 08 09 0a 0b 0c"),
      .send("find information, start 0", "04 00 00 ff ff"),
      .expect("invalid handle", "01 04 00 00 01"),
      .send("find information, start > end", "04 05 00 01 00"),
      .expect("invalid handle", "01 04 05 00 01"),
      .send("group type that is not a service", "10 01 00 ff ff 03 28"),
      .expect("unsupported group type", "01 10 01 00 10"),
      .send("read by type with a 3-byte UUID", "08 01 00 ff ff 03 28 00"),
      .expect("invalid PDU", "01 08 00 00 04"),
      .send("nothing found", "08 01 00 ff ff 34 12"),
      .expect("attribute not found", "01 08 01 00 0a"),
    ]),
  Script(
    "GATT/SR/GAN/BV-01 notifications follow the CCCD",
    [
      .send("enable notifications", "12 08 00 01 00"),
      .expect("write response", "13"),
      .send("read the CCCD back", "0a 08 00"),
      .expect("0x0001", "0b 01 00"),
    ]),
  Script(
    "ATT/SR/MTU/BV-01 exchange MTU, then larger answers",
    Prefix.mtu(247),
    [
      .send("read the 60-byte value", "0a 14 00"),
      .expect("all of it in one answer", "0b " + Hex.encode(0..<60)),
    ]),
]

@Suite(.timeLimit(scaledMinutes(2))) struct ServerScriptTests {
  @Test(arguments: serverScripts)
  func script(_ script: Script) async throws {
    let served = await ServedLink(server: try makeFixtureServer())
    try await play(script, on: served.peer)
    await served.stop()
  }

  @Test func notificationReachesSubscriberOnly() async throws {
    let served = await ServedLink(server: try makeFixtureServer())
    #expect(try await served.session.notify(7, [43]) == false)
    try await play(Script("subscribe", [.send("enable", "12 08 00 01 00"), .expect("ok", "13")]), on: served.peer)
    #expect(try await served.session.notify(7, [43]) == true)
    try await play(Script("value", [.expect("notification", "1b 07 00 2b")]), on: served.peer)
    // A value longer than ATT_MTU - 3 is cut to it.
    #expect(try await served.session.notify(7, Array(repeating: 1, count: 40)) == true)
    try await play(
      Script("cut", [.expect("20 bytes", "1b 07 00 " + Hex.encode(Array(repeating: UInt8(1), count: 20)))]),
      on: served.peer)
    await served.stop()
  }

  /// Long writes (Vol 3 Part F 3.4.6): parts queue until Execute Write, which writes each
  /// value once, whole; a cancel or a bad offset writes nothing.
  @Test func queuedWrites() async throws {
    let recorder = Recorder()
    let served = await ServedLink(server: try makeFixtureServer(recorder))
    try await play(
      Script(
        "refused at once",
        [
          .send("prepare on a plain link", "16 0e 00 00 00 01"), .expect("insufficient encryption", "01 16 0e 00 0f"),
          .send("prepare a read-only value", "16 07 00 00 00 01"), .expect("write not permitted", "01 16 07 00 03"),
          .send("prepare nothing", "16 50 00 00 00 01"), .expect("invalid handle", "01 16 50 00 01"),
          .send("reserved execute flags", "18 02"), .expect("invalid PDU", "01 18 00 00 04"),
          .send("a part over ATT_MTU - 5", "16 0e 00 00 00 " + Hex.encode(Array(repeating: UInt8(1), count: 19))),
          .expect("invalid PDU: its echo would not fit", "01 16 0e 00 04"),
        ]), on: served.peer)
    #expect(try await served.peer.pair(.encrypted) == .encrypted)
    try await play(
      Script(
        "a long write",
        [
          .send("part 1 at 0", "16 0e 00 00 00 01 02 03"), .expect("echoed", "17 0e 00 00 00 01 02 03"),
          .send("part 2 at 3", "16 0e 00 03 00 04 05"), .expect("echoed", "17 0e 00 03 00 04 05"),
        ]), on: served.peer)
    #expect(recorder.writes.withLock { $0 }.isEmpty, "nothing is written before Execute Write")
    try await play(Script("execute", [.send("execute", "18 01"), .expect("done", "19")]), on: served.peer)
    #expect(recorder.writes.withLock { $0 } == [[1, 2, 3, 4, 5]])
    try await play(
      Script(
        "cancel, then a gap",
        [
          .send("part", "16 0e 00 00 00 09"), .expect("echoed", "17 0e 00 00 00 09"),
          .send("cancel", "18 00"), .expect("done", "19"),
          .send("execute the empty queue", "18 01"), .expect("done", "19"),
          .send("part at 0", "16 0e 00 00 00 07"), .expect("echoed", "17 0e 00 00 00 07"),
          .send("part past the end", "16 0e 00 05 00 08"), .expect("echoed", "17 0e 00 05 00 08"),
          .send("execute", "18 01"), .expect("invalid offset", "01 18 0e 00 07"),
          .send("the queue is gone", "18 01"), .expect("done", "19"),
          .send("a value the handler refuses", "16 0e 00 00 00 ee"), .expect("echoed", "17 0e 00 00 00 ee"),
          .send("execute", "18 01"), .expect("its code", "01 18 0e 00 a1"),
        ]), on: served.peer)
    #expect(recorder.writes.withLock { $0 } == [[1, 2, 3, 4, 5], [0xEE]])
    // The queue is bounded: Prepare Queue Full, and the queued parts stay executable.
    var steps: [Step] = []
    for part in 0..<GATTSession.preparedPartsLimit {
      let offset = Hex.encode([UInt8(part), 0])
      steps += [.send("part \(part)", "16 0e 00 \(offset) 01"), .expect("echoed", "17 0e 00 \(offset) 01")]
    }
    steps += [.send("one more", "16 0e 00 40 00 01"), .expect("queue full", "01 16 0e 00 09")]
    steps += [.send("execute", "18 01"), .expect("done", "19")]
    try await play(Script("full", steps), on: served.peer)
    #expect(recorder.writes.withLock { $0.last } == Array(repeating: 1, count: GATTSession.preparedPartsLimit))
    await served.stop()
  }

  @Test func encryptedAccessAfterPairing() async throws {
    let recorder = Recorder()
    let served = await ServedLink(server: try makeFixtureServer(recorder))
    #expect(try await served.peer.pair(.encrypted) == .encrypted)
    try await play(
      Script(
        "encrypted",
        [
          .send("subscribe", "12 0c 00 01 00"), .expect("ok", "13"),
          .send("write the control value", "12 0e 00 00 01 02"), .expect("ok", "13"),
          .send("a value the handler refuses", "12 0e 00 ee"), .expect("its code", "01 12 0e 00 a1"),
          .send("authenticated value still refused", "0a 16 00"), .expect("0x05", "01 0a 16 00 05"),
        ]), on: served.peer)
    #expect(recorder.writes.withLock { $0 } == [[0, 1, 2], [0xEE]])
    #expect(recorder.subscriptions.withLock { $0 } == [1])
    await served.stop()
  }
}

extension Hex {
  static func encode(_ range: Range<Int>) -> String { encode(range.map { UInt8($0) }) }
}
