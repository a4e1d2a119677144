import AMS
import ANCS
import ATT
import Capture
import Foundation
import Links
import TestSupport
import Testing
import Wire

/// An ANCS and AMS session as the watch's HCI log holds it: the connection, Exchange MTU,
/// discovery, subscriptions, a notification fetched over three Data Source notifications, its
/// app's name, an action, its removal, and the media player's updates.
struct Session {
  /// Each packet as H4 (indicator first), and whether the watch's host sent it.
  var packets: [(h4: [UInt8], sent: Bool)] = []
  let ns: UInt16 = 0x000B
  let cp: UInt16 = 0x000E
  let ds: UInt16 = 0x0010
  let rc: UInt16 = 0x0014
  let eu: UInt16 = 0x0017

  mutating func att(_ pdu: ATTPDU, sent: Bool) { packets.append((Btsnoop.h4Packet(attPDU: pdu.encoded()), sent)) }

  /// A request from the watch and the phone's answer.
  mutating func exchange(_ request: ATTPDU, _ response: ATTPDU) {
    att(request, sent: true)
    att(response, sent: false)
  }

  /// Discovers the characteristics in `range`: these declarations answer.
  mutating func characteristics(_ range: HandleRange, _ declarations: [HandleValue]) {
    exchange(
      .readByTypeRequest(ReadByTypeRequest(range: range, type: 0x2803)),
      .readByTypeResponse(ReadByTypeResponse(entries: declarations)))
  }

  /// A Write Request from the watch, answered.
  mutating func write(_ handle: UInt16, _ value: [UInt8]) {
    exchange(.writeRequest(WriteRequest(handle: handle, value: value)), .writeResponse(WriteResponse()))
  }

  /// Finds the CCCD at `handle`.
  mutating func cccd(_ handle: UInt16) {
    exchange(
      .findInformationRequest(FindInformationRequest(range: HandleRange(handle, handle))),
      .findInformationResponse(FindInformationResponse(entries: [.init(handle: handle, type: 0x2902)])))
  }

  static func declaration(_ handle: UInt16, value: UInt16, properties: UInt8, _ uuid: String) -> HandleValue {
    HandleValue(
      handle: handle,
      value: [properties, UInt8(value & 0xFF), UInt8(value >> 8)] + BluetoothUUID(uuid)!.littleEndian)
  }

  static let title = "Über 🚀 Ada"
  static let message = "ça va? 日本 🙂 — a message long enough to need three notifications at ATT_MTU 23"
  static let uid: UInt32 = 42
  /// The packet index of the Added event, and how many notifications the answer took.
  var addedIndex = 0
  var answerFragments = 0

  /// `discovery`: whether the capture starts early enough to hold the discovery. `faults`:
  /// what either side does wrong (`CaptureRulesTests`).
  /// `mtu`: the ATT_MTU the watch asks for (the phone offers 247).
  init(discovery: Bool = true, faults: Set<String> = [], mtu: UInt16 = 185) {
    packets.append((Btsnoop.h4ConnectionComplete(.init(role: .peripheral)), false))
    if discovery {
      exchange(
        .exchangeMTURequest(ExchangeMTURequest(clientRxMTU: mtu)),
        .exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: 247)))
      characteristics(
        HandleRange(0x0001, 0x0004), [Self.declaration(0x0002, value: 0x0003, properties: 0x20, "2A05")])
      cccd(0x0004)
      characteristics(
        HandleRange(0x000A, 0x0011),
        [
          Self.declaration(0x000A, value: ns, properties: 0x10, ANCSUUID.notificationSource),
          Self.declaration(0x000D, value: cp, properties: 0x08, ANCSUUID.controlPoint),
          Self.declaration(0x000F, value: ds, properties: 0x10, ANCSUUID.dataSource),
        ])
      cccd(0x000C)
      cccd(0x0011)
      characteristics(
        HandleRange(0x0012, 0x001A),
        [
          Self.declaration(0x0013, value: rc, properties: 0x18, AMSUUID.remoteCommand),
          Self.declaration(0x0016, value: eu, properties: 0x18, AMSUUID.entityUpdate),
          Self.declaration(0x0019, value: 0x001A, properties: 0x0A, AMSUUID.entityAttribute),
        ])
      cccd(0x0015)
      cccd(0x0018)
      if faults.contains("plain") {
        write(0x000C, [1, 0])
      }
      packets.append(([0x04, 0x08, 0x04, 0x00, 0x40, 0x00, 0x01], false))  // Encryption Change: on
      write(0x0004, [2, 0])
      write(0x000C, [1, 0])
      write(0x0011, [1, 0])
    }
    let added = NotificationSourceEvent(
      eventID: .added, eventFlags: [.positiveAction, .negativeAction], categoryID: .social, categoryCount: 1,
      notificationUID: Self.uid)
    addedIndex = packets.count
    att(.handleValueNotification(HandleValueNotification(handle: ns, value: added.encoded())), sent: false)
    if faults.contains("malformed-event") {
      att(.handleValueNotification(HandleValueNotification(handle: ns, value: [0, 0, 1, 1, 0, 0, 0])), sent: false)
    }
    if faults.contains("never-announced") {
      let get = GetNotificationAttributesCommand(notificationUID: 77, attributes: [.init(.title, maxLength: 8)])
      write(cp, ControlPointCommand.getNotificationAttributes(get).encoded())
    }
    let titleMaximum: UInt16 = faults.contains("over-maximum") ? 4 : 64
    let get = GetNotificationAttributesCommand(
      notificationUID: Self.uid,
      attributes: [.init(.appIdentifier), .init(.title, maxLength: titleMaximum), .init(.message, maxLength: 200)])
    if !faults.contains("no-fetch") { write(cp, ControlPointCommand.getNotificationAttributes(get).encoded()) }
    let answer = DataSourceResponse.notificationAttributes(
      NotificationAttributesResponse(
        notificationUID: Self.uid,
        attributes: [
          NotificationAttribute(.appIdentifier, text: "com.example.chat"),
          faults.contains("bad-answer")
            ? NotificationAttribute(.title, [0x55, 0xC3]) : NotificationAttribute(.title, text: Self.title),
          NotificationAttribute(.message, text: Self.message),
        ] + (faults.contains("bad-answer") ? [NotificationAttribute(.subtitle, text: "extra")] : [])))
    let action = ControlPointCommand.performNotificationAction(
      PerformNotificationActionCommand(notificationUID: Self.uid, actionID: .positive))
    let fragments = faults.contains("no-fetch") ? [] : dataSourceFragments(answer.encoded(), maximumSize: 20)
    answerFragments = fragments.count
    for (index, fragment) in fragments.enumerated() {
      att(.handleValueNotification(HandleValueNotification(handle: ds, value: Array(fragment))), sent: false)
      if index == 0 && faults.contains("overlap") { write(cp, action.encoded()) }
    }
    if !faults.contains("overlap") { write(cp, action.encoded()) }
    let removed = NotificationSourceEvent(
      eventID: .removed, eventFlags: [], categoryID: .social, categoryCount: 0, notificationUID: Self.uid)
    att(.handleValueNotification(HandleValueNotification(handle: ns, value: removed.encoded())), sent: false)
    if faults.contains("fetch-after-removed") {
      write(cp, ControlPointCommand.getNotificationAttributes(get).encoded())
    }
    if discovery {
      write(0x0015, [1, 0])
      if !faults.contains("register-before-subscribe") { write(0x0018, [1, 0]) }
    }
    let listed: [RemoteCommandID] = faults.contains("unlisted-command") ? [.play] : [.play, .pause, .togglePlayPause]
    att(
      .handleValueNotification(HandleValueNotification(handle: rc, value: SupportedCommands(listed).encoded())),
      sent: false)
    write(eu, EntityRegistration(.track, [2]).encoded())
    let update = EntityUpdate(.title, text: "Clair de Lune", capacity: 182)
    att(.handleValueNotification(HandleValueNotification(handle: eu, value: update.encoded())), sent: false)
    write(rc, RemoteCommand(.pause).encoded() + (faults.contains("padded-command") ? [0] : []))
    if faults.contains("service-changed") {
      att(.handleValueIndication(HandleValueIndication(handle: 0x0003, value: [0x0A, 0x00, 0x11, 0x00])), sent: false)
      att(.handleValueConfirmation(HandleValueConfirmation()), sent: true)
    }
    packets.append((Btsnoop.h4DisconnectionComplete(handle: Btsnoop.aclHandle, reason: 0x13), false))
  }

  static let start: Int64 = 1_764_590_400_000_000

  /// As btsnoop with datalink 1002 (H4), records 10 ms apart.
  var h4: [UInt8] {
    var file = Btsnoop.fileHeader
    for (index, packet) in packets.enumerated() {
      file += Btsnoop.record(
        packet.h4, direction: packet.sent ? .sent : .received, isEvent: packet.h4.first == 4,
        unixMicroseconds: Self.start + Int64(index) * 10_000)
    }
    return file
  }

  /// As btsnoop with datalink 1001 (no indicator; the flags say command/event or data).
  var hci: [UInt8] {
    var file = Array(Btsnoop.fileHeader.prefix(12)) + [0, 0, 0x03, 0xE9]
    for (index, packet) in packets.enumerated() {
      file += Btsnoop.record(
        Array(packet.h4.dropFirst()), direction: packet.sent ? .sent : .received, isEvent: packet.h4.first != 2,
        unixMicroseconds: Self.start + Int64(index) * 10_000)
    }
    return file
  }

  /// As btmon writes it: datalink 2001, the monitor opcode in the flags.
  var monitor: [UInt8] {
    var file = Array(Btsnoop.fileHeader.prefix(12)) + [0, 0, 0x07, 0xD1]
    for (index, packet) in packets.enumerated() {
      let opcode: UInt32 = packet.h4.first == 4 ? 3 : packet.h4.first == 1 ? 2 : packet.sent ? 4 : 5
      let data = Array(packet.h4.dropFirst())
      file += Self.bigEndian(UInt32(data.count)) + Self.bigEndian(UInt32(data.count)) + Self.bigEndian(opcode)
      file += Self.bigEndian(UInt32(0))
      file += Self.bigEndian(UInt64(Self.start + Int64(index) * 10_000 + 0x00DC_DDB3_0F2F_8000))
      file += data
    }
    return file
  }

  /// As PacketLogger writes it, big- or little-endian.
  func packetLogger(littleEndian: Bool) -> [UInt8] {
    var file: [UInt8] = []
    func integer(_ value: UInt32) -> [UInt8] { littleEndian ? Self.bigEndian(value).reversed() : Self.bigEndian(value) }
    for (index, packet) in packets.enumerated() {
      let type: UInt8 = packet.h4.first == 4 ? 0x01 : packet.h4.first == 1 ? 0x00 : packet.sent ? 0x02 : 0x03
      let data = Array(packet.h4.dropFirst())
      let micros = Self.start + Int64(index) * 10_000
      file += integer(UInt32(data.count + 9)) + integer(UInt32(micros / 1_000_000))
      file += integer(UInt32(micros % 1_000_000)) + [type] + data
    }
    return file
  }

  /// As classic pcap: link type 201 (a big-endian direction header, bit 0 set when
  /// received) or 187 (H4 alone); timestamps in micro- or nanoseconds.
  func pcap(linktype: UInt32 = 201, littleEndian: Bool = true, nanoseconds: Bool = false) -> [UInt8] {
    func integer(_ value: UInt32) -> [UInt8] { littleEndian ? Self.bigEndian(value).reversed() : Self.bigEndian(value) }
    let magic: UInt32 = nanoseconds ? 0xA1B2_3C4D : 0xA1B2_C3D4
    var file = integer(magic) + (littleEndian ? [2, 0, 4, 0] : [0, 2, 0, 4]) + integer(0) + integer(0)
    file += integer(65_535) + integer(linktype)
    for (index, packet) in packets.enumerated() {
      let data = (linktype == 201 ? Self.bigEndian(UInt32(packet.sent ? 0 : 1)) : []) + packet.h4
      let micros = Self.start + Int64(index) * 10_000
      file += integer(UInt32(micros / 1_000_000))
      file += integer(UInt32(micros % 1_000_000 * (nanoseconds ? 1000 : 1)))
      file += integer(UInt32(data.count)) + integer(UInt32(data.count)) + data
    }
    return file
  }

  /// As pcapng: a Section Header, an Interface Description (link type 201, if_tsresol 9:
  /// nanoseconds), then an Enhanced Packet Block each.
  func pcapng(littleEndian: Bool = true) -> [UInt8] {
    func u32(_ value: UInt32) -> [UInt8] { littleEndian ? Self.bigEndian(value).reversed() : Self.bigEndian(value) }
    func u16(_ value: UInt16) -> [UInt8] { littleEndian ? Self.bigEndian(value).reversed() : Self.bigEndian(value) }
    func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
      let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
      return u32(type) + u32(UInt32(padded.count + 12)) + padded + u32(UInt32(padded.count + 12))
    }
    var file = block(0x0A0D_0D0A, u32(0x1A2B_3C4D) + u16(1) + u16(0) + u32(0xFFFF_FFFF) + u32(0xFFFF_FFFF))
    let options = u16(9) + u16(1) + [9, 0, 0, 0] + u16(0) + u16(0)
    file += block(1, u16(201) + u16(0) + u32(65_535) + options)
    for (index, packet) in packets.enumerated() {
      let data = Self.bigEndian(UInt32(packet.sent ? 0 : 1)) + packet.h4
      let nanos = UInt64(Self.start + Int64(index) * 10_000) * 1000
      let body = u32(0) + u32(UInt32(nanos >> 32)) + u32(UInt32(nanos & 0xFFFF_FFFF)) + u32(UInt32(data.count))
      file += block(6, body + u32(UInt32(data.count)) + data)
    }
    return file
  }

  static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
    (0..<T.bitWidth / 8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
  }
}

func timeline(_ bytes: [UInt8]) throws -> [CaptureEvent] {
  var inspector = CaptureInspector()
  for record in try CaptureFormat.read(bytes).records { inspector.take(record) }
  return inspector.timeline
}

@Suite struct CaptureInspectorTests {
  @Test func theSessionsStoryIsTold() throws {
    let events = try timeline(Session().h4)
    let kinds = events.map(\.event)
    #expect(
      kinds == [
        "connected", "mtu", "found", "found", "encrypted", "subscribed", "subscribed", "subscribed", "added", "fetch",
        "answer", "action", "removed", "subscribed", "subscribed", "mediaCommands", "mediaRegistration", "media",
        "remoteCommand", "disconnected",
      ], "\(events.map(\.text))")
    let answer = try #require(events.first { $0.event == "answer" })
    #expect(answer.text.contains("title=\"\(Session.title)\"") && answer.text.hasSuffix(" notifications)"))
    #expect(answer.json["notifications"]?.integer == Session().answerFragments && Session().answerFragments > 2)
    #expect(answer.json["message"]?.string == Session.message)
    #expect(events.first { $0.event == "mtu" }?.text == "ATT_MTU 185")
    #expect(
      events.first { $0.event == "added" }?.text
        == "Added UID 42 (social, 1 in category, positiveAction negativeAction)")
    #expect(
      events.filter { $0.event == "subscribed" }.map(\.text).prefix(3) == [
        "Service Changed: indications", "Notification Source: notifications", "Data Source: notifications",
      ])
    #expect(events.first { $0.event == "media" }?.text == "track.title = \"Clair de Lune\"")
    #expect(events.first { $0.event == "remoteCommand" }?.text == "remote command pause")
    // Numbered as the file's records, 10 ms apart.
    let added = try #require(events.first { $0.event == "added" })
    let index = Session().addedIndex
    #expect(added.record == index + 1 && abs(added.time - Double(index) * 0.01) < 1e-9)
  }

  /// The same session in every container gives the same timeline.
  @Test func everyFormatGivesTheSameTimeline() throws {
    let session = Session()
    let expected = try timeline(session.h4).map { "\($0.record) \($0.time) \($0.text)" }
    for (name, bytes) in [
      ("1001", session.hci), ("2001", session.monitor), ("pklg big", session.packetLogger(littleEndian: false)),
      ("pklg little", session.packetLogger(littleEndian: true)), ("pcap 201", session.pcap()),
      ("pcap 201 big ns", session.pcap(littleEndian: false, nanoseconds: true)),
      ("pcap 187", session.pcap(linktype: 187)),
      ("pcapng", session.pcapng()), ("pcapng big", session.pcapng(littleEndian: false)),
    ] {
      #expect(try timeline(bytes).map { "\($0.record) \($0.time) \($0.text)" } == expected, "\(name)")
    }
    #expect(try CaptureFormat.read(session.monitor).format == "btsnoop, Linux monitor (btmon)")
    #expect(try CaptureFormat.read(session.packetLogger(littleEndian: true)).format == "PacketLogger, little-endian")
    #expect(try CaptureFormat.read(session.pcapng()).format == "pcapng, H4 with direction")
    #expect(
      throws: CaptureError(
        "link type 1 is not read (187 Bluetooth HCI H4, 201 H4 with direction, 254 Linux monitor, 256 LE link "
          + "layer with RF header and 272 nRF Sniffer are)")
    ) {
      var ethernet = session.pcap()
      ethernet[20] = 1
      _ = try CaptureFormat.read(ethernet)
    }
  }

  /// A pcapng block that is all there but says its packet is longer than the block is
  /// damage, not a file still being written: an error even for `--follow`.
  @Test func aDamagedBlockIsAnErrorEvenWhileGrowing() throws {
    var file = Session().pcapng()
    // The first Enhanced Packet Block follows the 28-byte Section Header and the 32-byte
    // Interface Description; its captured length is its 21st byte.
    #expect(file[60..<64] == [6, 0, 0, 0])
    file.replaceSubrange(80..<84, with: [0xFF, 0xFF, 0, 0])
    for growing in [false, true] {
      #expect(
        throws: CaptureError(
          "block 3's 65535 bytes of packet runs past the end of its block (at byte 20 of it, 65535 bytes wanted, 28 left)"
        )
      ) { _ = try CaptureFormat.read(file, growing: growing) }
    }
  }

  /// A capture that starts after discovery: ANCS is found by its traffic, and the
  /// notification announced before that is still told.
  @Test func withoutDiscoveryANCSIsFoundByItsTraffic() throws {
    let events = try timeline(Session(discovery: false).h4)
    #expect(
      events.filter { $0.event == "found" }.map(\.text) == [
        "ANCS found by its traffic (the capture starts after discovery): Notification Source 0x000B, Control Point 0x000E",
        "Data Source found by its traffic: 0x0010",
      ])
    #expect(
      events.map(\.event).starts(with: ["connected", "added", "found", "fetch", "found", "answer", "action", "removed"])
    )
    #expect(events.first { $0.event == "answer" }?.json["title"]?.string == Session.title)
  }

  /// Nothing in a file can crash the reader: every cut of a capture, and garbage, end in a
  /// typed error or in fewer records.
  @Test func truncatedAndMalformedFilesGiveOneError() throws {
    let session = Session()
    for bytes in [session.h4, session.monitor, session.packetLogger(littleEndian: false)] {
      for cut in stride(from: 0, to: bytes.count, by: 7) {
        do { _ = try timeline(Array(bytes.prefix(cut))) } catch let error as CaptureError {
          #expect(!error.message.isEmpty && !error.message.contains("\n"))
        }
      }
    }
    #expect(throws: CaptureError.self) { try CaptureFormat.read([]) }
    #expect(throws: CaptureError.self) { try CaptureFormat.read(Array("hello, world".utf8)) }
    var wrongVersion = session.h4
    wrongVersion[11] = 2
    #expect(throws: CaptureError("btsnoop version 2: only version 1 is defined")) {
      try CaptureFormat.read(wrongVersion)
    }
    let cut = Array(session.h4.prefix(16 + 24 + 3))
    do {
      _ = try CaptureFormat.read(cut)
      Issue.record("a record cut short was read")
    } catch {
      #expect(error.message.hasPrefix("the file ends inside record 1's "), "\(error)")
      #expect(error.message.contains("at byte 40") && error.message.hasSuffix(", 3 left)"), "\(error)")
    }
  }

  /// A file still being written (`--follow`): every prefix of every format reads as the
  /// records whole in it, never an error, and more as it grows.
  @Test func aGrowingFileReadsItsWholeRecords() throws {
    let session = Session()
    for bytes in [
      session.h4, session.hci, session.monitor, session.packetLogger(littleEndian: false), session.pcap(),
      session.pcapng(),
    ] {
      let whole = try CaptureFormat.read(bytes).records
      var last = 0
      for cut in 0...bytes.count {
        let records = try CaptureFormat.read(Array(bytes.prefix(cut)), growing: true).records
        #expect(records.count >= last && records == Array(whole.prefix(records.count)), "cut at \(cut)")
        last = records.count
      }
      #expect(last == whole.count)
    }
  }

  /// Mutated captures (bytes changed at random in every format, seeded): reading and
  /// inspecting them never crashes; each ends in a timeline or a one-line error.
  @Test func mutatedCapturesNeverCrash() {
    let session = Session()
    var random = SplitMix64(seed: 18)
    var read = 0
    for original in [
      session.h4, session.hci, session.monitor, session.packetLogger(littleEndian: true), session.pcap(),
      session.pcapng(),
    ] {
      for _ in 0..<400 {
        var bytes = original
        for _ in 0..<(1 + Int(random.next() % 6)) {
          let index = Int(random.next() % UInt64(bytes.count))
          bytes[index] = UInt8(truncatingIfNeeded: random.next())
        }
        do {
          _ = try timeline(bytes)
          read += 1
        } catch let error as CaptureError {
          #expect(!error.message.isEmpty && !error.message.contains("\n"))
        } catch {
          Issue.record("an error that is not a CaptureError: \(error)")
        }
      }
    }
    #expect(read > 1200, "most mutations leave a readable file: \(read) of 2400")
  }
}

/// The files the tests build are real captures: Wireshark reads every one with the same
/// frames, the directions the tests meant, and nothing malformed.
@Suite(.enabled(if: tsharkAvailable, "tshark is not installed"))
struct CaptureFilesAsWiresharkReadsThem {
  @Test func tsharkReadsEachFormatAlike() async throws {
    let tshark = try #require(tsharkPath)
    let session = Session()
    let directory = NSTemporaryDirectory() + "ancs-captures-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let sent = session.packets.map { $0.sent ? "0x00" : "0x01" }
    for (name, bytes, directions) in [
      ("h4.btsnoop", session.h4, true), ("hci.btsnoop", session.hci, false),
      ("monitor.btsnoop", session.monitor, false),
      ("big.pklg", session.packetLogger(littleEndian: false), false), ("capture.pcap", session.pcap(), true),
      ("capture.pcapng", session.pcapng(), true),
    ] {
      let path = "\(directory)/\(name)"
      try Data(bytes).write(to: URL(fileURLWithPath: path))
      let (status, output, error) = try await offThread {
        try runToCompletion(tshark, ["-r", path, "-T", "fields", "-e", "hci_h4.direction", "-e", "btatt.opcode"])
      }
      #expect(status == 0, "\(name): \(error)")
      let rows = output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map {
        $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
      }
      #expect(rows.count == session.packets.count, "\(name): \(rows.count) frames")
      #expect(
        rows.filter { ($0.last ?? "").isEmpty == false }.count == session.packets.count { $0.h4.first == 2 }, "\(name)")
      if directions { #expect(rows.map { $0.first ?? "" } == sent, "\(name)") }
      let malformed = try await offThread { try runToCompletion(tshark, ["-r", path, "-Y", "_ws.malformed"]) }
      #expect(malformed.output.isEmpty, "\(name): \(malformed.output)")
    }
  }
}

/// Issue #18 (2): what a capture shows is judged by the harness's rules; each broken rule is
/// named with its side and records, and a capture without faults breaks none.
@Suite struct CaptureRulesTests {
  static func rules(_ faults: Set<String>) throws -> [String] {
    var inspector = CaptureInspector()
    for record in try CaptureFormat.read(Session(faults: faults).h4).records { inspector.take(record) }
    inspector.finish()
    return inspector.findings.map { ($0.json["side"]?.string ?? "") + ": " + ($0.json["rule"]?.string ?? "") }
  }

  @Test func aCleanSessionBreaksNoRule() throws {
    #expect(try Self.rules([]) == [])
  }

  @Test(arguments: [
    ("overlap", ["accessory: ANCS.md, What an accessory must do, Control Point: one command at a time"]),
    (
      "fetch-after-removed",
      ["accessory: ANCS.md, What an accessory must do, Notification Source: Removed ends the notification"]
    ),
    ("never-announced", ["accessory: ANCS.md, Control Point: a command names a UID the phone announced"]),
    ("plain", ["accessory: ANCS.md, What an accessory must do, Security: use ANCS over an encrypted link"]),
    (
      "service-changed",
      [
        "accessory: ANCS.md, What an accessory must do, Discovery: on Service Changed, discover again and subscribe "
          + "at the new handles"
      ]
    ),
    ("malformed-event", ["phone: ANCS.md, Notification Source: 8 bytes"]),
    ("over-maximum", ["phone: ANCS.md, Control Point commands: a value is cut to the maximum asked"]),
    (
      "bad-answer",
      [
        "phone: ANCS.md, Text: a value is never cut inside a UTF-8 character",
        "phone: ANCS.md, Data Source responses: the attributes asked for, no others",
      ]
    ),
    (
      "register-before-subscribe",
      ["accessory: AMS.md, What an accessory must do, 1: subscribe to Entity Update before writing it"]
    ),
    ("padded-command", ["accessory: AMS.md, What an accessory must do, 5: a remote command is one byte"]),
    ("unlisted-command", ["accessory: AMS.md, What an accessory must do, 6: only the commands the player lists now"]),
  ])
  func eachFaultIsNamed(_ fault: String, _ expected: [String]) throws {
    #expect(try Self.rules([fault]) == expected)
  }
}

/// Issue #18 (4): the project's Wireshark dissector (Wireshark/ancs.lua) decodes ANCS and AMS
/// inside captures of every container, with display filter fields, and nothing malformed.
@Suite(.enabled(if: tsharkAvailable, "tshark is not installed"))
struct WiresharkDissectorTests {
  static let plugin = repositoryFile("Wireshark/ancs.lua").path

  @Test func tsharkShowsANCSTitlesAndAMSValues() async throws {
    let tshark = try #require(tsharkPath)
    let session = Session()
    let directory = NSTemporaryDirectory() + "ancs-dissector-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    for (name, bytes) in [("h4.btsnoop", session.h4), ("capture.pcapng", session.pcapng())] {
      let path = "\(directory)/\(name)"
      try Data(bytes).write(to: URL(fileURLWithPath: path))
      let fields = [
        "ancs.event", "ancs.uid", "ancs.command", "ancs.title", "ancs.message", "ancs.fragments", "ancs.action",
        "apple_ams.command", "apple_ams.value",
      ]
      let (status, output, error) = try await offThread {
        try runToCompletion(
          tshark,
          [
            "-X", "lua_script:\(Self.plugin)", "-r", path, "-Y", "ancs || apple_ams", "-T", "fields", "-E",
            "separator=|",
          ]
            + fields.flatMap { ["-e", $0] })
      }
      #expect(status == 0, "\(name): \(error)")
      #expect(!error.contains("Lua") && !error.contains("rror"), "\(name): \(error)")
      let rows = output.split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false) }
      func column(_ field: String) -> [String] {
        let index = fields.firstIndex(of: field)!
        return rows.map { String($0[index]) }.filter { !$0.isEmpty }
      }
      #expect(column("ancs.event") == ["0", "2"], "\(name): \(output)")
      #expect(column("ancs.title") == [Session.title], "\(name)")
      #expect(column("ancs.message") == [Session.message], "\(name)")
      #expect(column("ancs.fragments") == ["\(session.answerFragments)"], "\(name)")
      #expect(column("ancs.action") == ["0"], "\(name)")
      #expect(column("apple_ams.value") == ["Clair de Lune"], "\(name)")
      #expect(column("apple_ams.command").last == "1", "\(name): the pause")
      let malformed = try await offThread {
        try runToCompletion(tshark, ["-X", "lua_script:\(Self.plugin)", "-r", path, "-Y", "_ws.malformed"])
      }
      #expect(malformed.output.isEmpty, "\(name): \(malformed.output)")
    }
  }

  /// What a faulty phone or accessory sends (a 7-byte event, a value cut inside a
  /// character, an unrequested tuple, overlapping commands, a two-byte remote command) is
  /// shown as it is, never a Lua error.
  @Test func faultyTrafficNeverBreaksTheDissector() async throws {
    let tshark = try #require(tsharkPath)
    let session = Session(faults: ["malformed-event", "bad-answer", "overlap", "padded-command", "never-announced"])
    let path = NSTemporaryDirectory() + "ancs-dissector-faults-\(getpid()).btsnoop"
    try Data(session.h4).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let (status, output, error) = try await offThread {
      try runToCompletion(tshark, ["-X", "lua_script:\(Self.plugin)", "-r", path, "-V"])
    }
    #expect(status == 0, "\(error)")
    #expect(output.contains("ANCS Notification Source") && !output.contains("Lua Error"), "\(output)")
    #expect(output.contains("(not 8 bytes)"))
  }
}

/// Issue #18 (3): the scenario written from a capture holds the phone's notifications as
/// fetched and its steps at their times.
@Suite struct CapturedScenarioTests {
  @Test func theSessionBecomesAScenario() throws {
    let scenario = CapturedScenario(try timeline(Session().h4), name: "replay")
    let json = scenario.json
    #expect(scenario.notifications == 1 && scenario.unfetched == 0)
    #expect(json["apps"]?.array?.first?["id"]?.string == "com.example.chat")
    let template = try #require(json["notifications"]?.array?.first)
    #expect(template["id"]?.string == "n42" && template["category"]?.string == "social")
    #expect(template["title"]?.string == Session.title && template["message"]?.string == Session.message)
    let steps = try #require(json["steps"]?.array)
    #expect(steps.compactMap { $0["post"]?.string ?? $0["remove"]?.string } == ["n42", "n42"])
    #expect(steps.first?["at"]?.number == 0)
    // Removed 10 ms a record later than the post: the times are the capture's.
    let removal = try #require(steps.first { $0["remove"] != nil }?["at"]?.number)
    #expect(removal > 0.05 && removal < 1)
    #expect(steps.last?["play"]?["title"]?.string == "Clair de Lune")
  }

  /// A notification the accessory never fetched is posted with what is known (its
  /// category, an app of its own), and counted so that the user is told.
  @Test func unfetchedNotificationsAreCounted() throws {
    let scenario = CapturedScenario(try timeline(Session(faults: ["no-fetch"]).h4), name: "unfetched")
    #expect(scenario.notifications == 1 && scenario.unfetched == 1)
    let template = try #require(scenario.json["notifications"]?.array?.first)
    #expect(template["app"]?.string == "com.example.captured" && template["title"] == nil)
    #expect(scenario.json["apps"]?.array?.first?["name"]?.string == "Captured")
    #expect(scenario.json["comment"]?.string?.hasPrefix("1 notification(s) were never fetched") == true)
  }
}

/// Issue #18 (6): the real iPhone answers of Protocol/vectors/ios-captures.txt, carried by a
/// session (connection, discovery, subscriptions at the captures' ATT_MTU of 158, the Added
/// event and the command each answers), in every container `ancs inspect` reads.
@Suite struct IOSCapturesInContainersTests {
  /// The session of one capture: the setup of `Session`, then the command and its answer.
  static func session(_ capture: IOSCaptures.Capture) throws -> Session {
    let (request, _) = try IOSCaptures.expected(capture)
    var session = Session(mtu: 158)
    session.packets = Array(session.packets.prefix(session.addedIndex))
    if case .getNotificationAttributes(let get) = request {
      let added = NotificationSourceEvent(
        eventID: .added, eventFlags: [], categoryID: .other, categoryCount: 1, notificationUID: get.notificationUID)
      session.att(
        .handleValueNotification(HandleValueNotification(handle: session.ns, value: added.encoded())), sent: false)
    }
    session.write(session.cp, capture.request ?? request.encoded())
    for fragment in capture.fragments {
      #expect(fragment.count <= 155, "\(capture.name): a fragment over ATT_MTU 158")
      session.att(.handleValueNotification(HandleValueNotification(handle: session.ds, value: fragment)), sent: false)
    }
    return session
  }

  @Test func everyContainerTellsTheIPhonesAnswers() throws {
    let captures = try IOSCaptures.all()
    #expect(captures.count >= 9)
    for capture in captures {
      let session = try Self.session(capture)
      let events = try timeline(session.h4)
      let (_, expected) = try IOSCaptures.expected(capture)
      switch expected {
      case .notificationAttributes(let response):
        let answer = try #require(events.first { $0.event == "answer" }, "\(capture.name): \(events.map(\.text))")
        #expect(answer.json["uid"]?.integer == Int(response.notificationUID), "\(capture.name)")
        for tuple in response.attributes {
          let name = try #require(tuple.id.name)
          #expect(answer.json[name]?.string == tuple.text, "\(capture.name): \(name)")
        }
        #expect(answer.json["notifications"]?.integer == capture.fragments.count, "\(capture.name)")
      case .appAttributes(let app):
        let named = try #require(events.first { $0.event == "appName" }, "\(capture.name): \(events.map(\.text))")
        #expect(named.json["app"]?.string == app.appIdentifier, "\(capture.name)")
        #expect(named.json["name"]?.string == app.attributes.first { $0.id == .displayName }?.text, "\(capture.name)")
      }
      // What these iPhones sent breaks no rule a capture shows.
      #expect(events.filter { $0.event == "finding" || $0.event == "error" }.map(\.text) == [], "\(capture.name)")
      let told = events.map { "\($0.record) \($0.time) \($0.text)" }
      for (container, bytes) in [
        ("btsnoop 1001", session.hci), ("btsnoop 2001", session.monitor),
        ("PacketLogger", session.packetLogger(littleEndian: false)),
        ("PacketLogger little-endian", session.packetLogger(littleEndian: true)), ("pcap 201", session.pcap()),
        ("pcap 187", session.pcap(linktype: 187)), ("pcapng", session.pcapng()),
      ] {
        let again = try timeline(bytes).map { "\($0.record) \($0.time) \($0.text)" }
        #expect(again == told, "\(capture.name) in \(container)")
      }
    }
  }
}

extension IOSCapturesInContainersTests {
  /// Without the MTU in the capture, an answer that stopped where it may be whole (Mail
  /// leaves out the positive action label it was asked for) is whole when the next command
  /// comes, and that command overlaps nothing.
  @Test func anAnswerThatMayBeWholeEndsAtTheNextCommand() throws {
    let mail = try #require(try IOSCaptures.all().first { $0.name == "mail-loading-ellipsis" })
    var session = try Self.session(mail)
    session.packets.removeSubrange(1...2)  // the MTU exchange
    let next = GetAppAttributesCommand(appIdentifier: "com.apple.mobilemail", attributes: [.displayName])
    session.write(session.cp, ControlPointCommand.getAppAttributes(next).encoded())
    let events = try timeline(session.h4)
    #expect(!events.contains { $0.event == "mtu" })
    let answer = try #require(events.first { $0.event == "answer" }, "\(events.map(\.text))")
    let asked = try #require(events.first { $0.event == "appFetch" })
    #expect(answer.record == asked.record && answer.json["message"]?.string == "Loading…")
    #expect(events.filter { $0.event == "finding" }.map(\.text) == [])
  }
}

/// The HTML conformance report's charts: each PDU an arrow from the side that sent it, with
/// what it meant; what happened to the link and each broken rule a note across both lanes.
@Suite struct SequenceChartTests {
  func messages(_ chart: SequenceChart) -> [(record: Int, fromHost: Bool, label: String, meaning: [String])] {
    chart.rows.compactMap {
      if case .message(_, let record, let fromHost, let label, let meaning) = $0 {
        return (record, fromHost, label, meaning)
      }
      return nil
    }
  }

  @Test func everyPDUIsAnArrowWithItsMeaning() throws {
    let session = Session()
    let chart = try SequenceChart(capture: session.h4)
    let arrows = messages(chart)
    // One arrow per ACL packet (each carries one whole ATT PDU here), from its sender.
    let acl = session.packets.enumerated().filter { $0.element.h4.first == 0x02 }
    #expect(arrows.map(\.record) == acl.map { $0.offset + 1 })
    #expect(arrows.map(\.fromHost) == acl.map(\.element.sent))
    #expect(chart.omitted == 0)
    guard case .note(_, 1, let connected, false) = chart.rows.first else {
      Issue.record("the chart does not start with the connection: \(chart.rows.prefix(1))")
      return
    }
    #expect(connected.hasPrefix("connected to "))
    let added = try #require(arrows.first { $0.record == session.addedIndex + 1 })
    #expect(!added.fromHost && added.label.hasPrefix("Handle Value Notification 0x000B: 00 18 04 01 2a 00 00 00"))
    #expect(added.meaning == ["Added UID 42 (social, 1 in category, positiveAction negativeAction)"])
    let fetch = try #require(arrows.first { $0.meaning.contains { $0.hasPrefix("fetches UID 42") } })
    #expect(fetch.fromHost && fetch.label.hasPrefix("Write Request 0x000E: 00 2a 00 00 00 00 01 40 00 03 c8 00"))
    #expect(arrows.contains { $0.label == "Exchange MTU Request 185" && $0.fromHost })
    #expect(arrows.contains { $0.label == "Read By Type Request 0x000A–0x0011" })
  }

  @Test func aBrokenRuleFollowsItsPDU() throws {
    let chart = try SequenceChart(capture: Session(faults: ["overlap"]).h4)
    let index = try #require(
      chart.rows.firstIndex {
        if case .note(_, _, let text, true) = $0 { return text.contains("one command at a time") }
        return false
      })
    guard index > 0, case .message(_, let record, true, let label, _) = chart.rows[index - 1] else {
      Issue.record("the finding does not follow the overlapping write: \(chart.rows[max(0, index - 1)])")
      return
    }
    #expect(label.hasPrefix("Write Request 0x000E: 02 2a 00 00 00 00"))
    #expect(chart.rows[index].record == record)
  }

  @Test func aLongCaptureIsCutAndSaysSo() throws {
    let whole = try SequenceChart(capture: Session().h4)
    let cut = try SequenceChart(capture: Session().h4, limit: 10)
    #expect(cut.rows == Array(whole.rows.prefix(10)))
    #expect(cut.omitted == whole.rows.count - 10 && cut.omitted > 0)
    #expect(cut.svg(host: "harness (phone)", peer: "accessory").contains("\(cut.omitted) more rows not drawn"))
  }

  /// What a peer put in a title is text in the chart, never markup.
  /// A timestamp earlier than the capture's first (a damaged record) keeps its sign.
  @Test func anEarlierTimeIsNegative() throws {
    let records = Session().packets.prefix(3).enumerated().map { index, packet in
      HCIRecord(
        number: index + 1, microseconds: Session.start - Int64(index) * 250_000, sent: packet.sent,
        kind: packet.h4.first == 4 ? .event : .acl, bytes: Array(packet.h4.dropFirst()))
    }
    let svg = SequenceChart(records: records).svg(host: "h", peer: "p")
    #expect(svg.contains("-0.250") && svg.contains("-0.500"), "\(svg)")
  }

  /// Text from the capture (a track title the inspector decodes) and the lane names are
  /// escaped.
  @Test func thePeersTextIsEscaped() throws {
    var session = Session()
    let evil = "<script>alert(1)</script>"
    let update = EntityUpdate(.title, text: evil, capacity: 182)
    session.packets.insert(
      (
        Btsnoop.h4Packet(
          attPDU: ATTPDU.handleValueNotification(HandleValueNotification(handle: session.eu, value: update.encoded()))
            .encoded()), false
      ), at: session.packets.count - 1)
    let svg = try SequenceChart(capture: session.h4).svg(host: "a & b", peer: "<p>")
    #expect(!svg.contains("<script") && !svg.contains("<p>"))
    #expect(svg.contains("a &amp; b") && svg.contains("&lt;p&gt;"))
    #expect(svg.contains("track.title = &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;"), "\(svg)")
  }
}
