import AMS
import ANCS
import ATT
import HCI
import Wire

/// One line of the timeline `ancs inspect` prints: what happened, at which record.
public struct CaptureEvent: Sendable {
  /// The record that made it happen (numbered as in Wireshark).
  public var record: Int
  /// Seconds since the capture's first record.
  public var time: Double
  /// The connection handle, when it is about one.
  public var connection: UInt16?
  /// What kind of thing happened (Protocol/captures.md lists them): `connected`, `added`, ...
  public var event: String
  /// The same in words.
  public var text: String
  /// The details, for `--json`.
  public var fields: [(String, JSON)]

  /// `{"record":12,"time":0.031,"connection":64,"event":"added",...}`.
  public var json: JSON {
    var all: [(String, JSON)] = [("record", .number(Double(record))), ("time", .number(time))]
    if let connection { all.append(("connection", .number(Double(connection)))) }
    all.append(("event", .string(event)))
    return .object(all + fields)
  }
}

/// One ATT or SMP frame in a capture, reassembled from its ACL packets.
public struct CapturedFrame: Sendable {
  /// The record that completed it.
  public var record: Int
  public var time: Double
  public var connection: UInt16
  /// Sent by the host that took the capture.
  public var sent: Bool
  /// ATT, or else the Security Manager.
  public var isATT: Bool
  public var bytes: [UInt8]
}

/// Reads a capture's HCI records and tells the story of ANCS and AMS in it: connections,
/// encryption, MTU, discovery, subscriptions, each notification's life, the Control Point
/// commands and their answers reassembled from the Data Source, the media player's updates
/// and commands. Pure: records in, events out.
public struct CaptureInspector: Sendable {
  /// How the ANCS characteristics were found on a connection.
  public enum Found: String, Sendable {
    /// From the GATT discovery in the capture.
    case discovery
    /// From their traffic: the capture starts after discovery.
    case traffic
  }

  private var links: [UInt16: Link] = [:]
  private var first: Int64?
  private var events: [CaptureEvent] = []
  /// ACL packets whose connection the capture never showed opening are still read, as if it had.
  private var now: (record: Int, time: Double) = (0, 0)

  /// With `keepsFrames`, every ATT and SMP frame is kept in `frames` (the charts of the HTML
  /// conformance report).
  public init(keepsFrames: Bool = false) { self.keepsFrames = keepsFrames }

  public let keepsFrames: Bool
  /// The ATT and SMP frames read, reassembled, when `keepsFrames`.
  public private(set) var frames: [CapturedFrame] = []

  /// How many events `drain` has handed out.
  private var drained = 0

  /// The events found since the last call, in record order (`--follow`).
  public mutating func drain() -> [CaptureEvent] {
    let fresh = events[drained...].enumerated().sorted {
      ($0.element.record, $0.offset) < ($1.element.record, $1.offset)
    }.map(\.element)
    drained = events.count
    return fresh
  }

  /// The events so far, in record order.
  public var timeline: [CaptureEvent] {
    events.enumerated().sorted { ($0.element.record, $0.offset) < ($1.element.record, $1.offset) }.map(\.element)
  }

  /// How ANCS was found on each connection that used it (kept after it closed).
  public private(set) var foundANCS: [UInt16: Found] = [:]

  public mutating func take(_ record: HCIRecord) {
    let start = first ?? record.microseconds
    first = start
    // In doubles: a damaged timestamp must not overflow.
    now = (record.number, (Double(record.microseconds) - Double(start)) / 1e6)
    if let note = record.note { emit(note.connection, "linkLayer", note.text) }
    switch record.kind {
    case .event: event(record.bytes)
    case .acl: acl(record.bytes, sent: record.sent)
    default: break
    }
  }

  // MARK: - HCI

  private mutating func emit(
    _ connection: UInt16?, _ event: String, _ text: String, _ fields: [(String, JSON)] = [],
    at: (record: Int, time: Double)? = nil
  ) {
    let (record, time) = at ?? now
    events.append(
      CaptureEvent(record: record, time: time, connection: connection, event: event, text: text, fields: fields))
  }

  private mutating func event(_ bytes: [UInt8]) {
    guard bytes.count >= 2 else { return }
    let code = bytes[0]
    let parameters = Array(bytes.dropFirst(2))
    func handle(at offset: Int) -> UInt16? {
      guard parameters.count >= offset + 2 else { return nil }
      return UInt16(parameters[offset]) | UInt16(parameters[offset + 1] & 0x0F) << 8
    }
    switch code {
    case 0x05:  // Disconnection Complete: status, handle, reason
      guard parameters.count >= 4, parameters[0] == 0, let handle = handle(at: 1) else { return }
      if let link = links.removeValue(forKey: handle) { emit(handle, link.ended(at: now.record)) }
      emit(
        handle, "disconnected", "disconnected, reason \(Self.hex(parameters[3]))",
        [("reason", .number(Double(parameters[3])))])
    case 0x08, 0x59:  // Encryption Change (v1, v2): status, handle, enabled
      guard parameters.count >= 4, let handle = handle(at: 1) else { return }
      if parameters[0] != 0 {
        emit(
          handle, "encryptionFailed", "encryption failed, status \(Self.hex(parameters[0]))",
          [("status", .number(Double(parameters[0])))])
      } else {
        emit(handle, "encrypted", parameters[3] != 0 ? "link encrypted" : "encryption off")
        if parameters[3] != 0 { encryptionOn(handle) }
      }
    case 0x30:  // Encryption Key Refresh Complete: status, handle
      guard parameters.count >= 3, parameters[0] == 0, let handle = handle(at: 1) else { return }
      emit(handle, "encrypted", "link encryption refreshed")
      encryptionOn(handle)
    case 0x3E:  // LE Meta: LE (Enhanced) Connection Complete
      guard let subevent = parameters.first, [0x01, 0x0A, 0x29].contains(subevent), parameters.count >= 12,
        parameters[1] == 0
      else { return }
      let handle = UInt16(parameters[2]) | UInt16(parameters[3] & 0x0F) << 8
      let role = parameters[4] == 0 ? "central" : "peripheral"
      let address = parameters[6..<12].reversed().map(hexByte).joined(separator: ":")
      var link = Link()
      link.fromStart = true
      links[handle] = link
      emit(
        handle, "connected", "connected to \(address), this host \(role)",
        [("peer", .string(address)), ("role", .string(role))])
    default: break
    }
  }

  private mutating func encryptionOn(_ handle: UInt16) {
    var link = links[handle] ?? Link()
    var out: Link.Output = []
    link.encryptionOn(&out)
    links[handle] = link
    emit(handle, out)
  }

  private mutating func emit(_ handle: UInt16, _ found: Link.Output) {
    for event in found { emit(handle, event.event, event.text, event.fields, at: event.at) }
  }

  /// The capture ended: what the links still open owed is judged now.
  public mutating func finish() {
    for (handle, link) in links.sorted(by: { $0.key < $1.key }) { emit(handle, link.ended(at: now.record)) }
  }

  /// The rules broken, in record order.
  public var findings: [CaptureEvent] { timeline.filter { $0.event == "finding" } }

  private mutating func acl(_ bytes: [UInt8], sent: Bool) {
    guard let packet = try? ACLPacket(decoding: bytes) else { return }
    var link = links[packet.handle] ?? Link()
    let frame: [UInt8]?
    do { frame = try link.reassemble(packet, sent: sent) } catch {
      links[packet.handle] = link
      emit(packet.handle, "error", "ACL: \(error)")
      return
    }
    links[packet.handle] = link
    guard let frame, let l2cap = try? L2CAPFrame(decoding: frame) else { return }
    if keepsFrames && (l2cap.channel == .att || l2cap.channel == .smp) {
      frames.append(
        CapturedFrame(
          record: now.record, time: now.time, connection: packet.handle, sent: sent, isATT: l2cap.channel == .att,
          bytes: l2cap.payload))
    }
    guard l2cap.channel == .att else { return }
    att(l2cap.payload, sent: sent, on: packet.handle)
  }

  // MARK: - ATT

  private mutating func att(_ bytes: [UInt8], sent: Bool, on handle: UInt16) {
    guard var link = links[handle] else { return }
    let pdu: ATTPDU
    do { pdu = try ATTPDU(decoding: bytes) } catch {
      emit(handle, "error", "ATT PDU that does not decode (\(Hex.encode(bytes))): \(error)")
      return
    }
    var out: Link.Output = []
    link.take(pdu, sent: sent, at: now, &out)
    links[handle] = link
    if let found = link.found { foundANCS[handle] = found }
    emit(handle, out)
  }

  static func hex(_ byte: UInt8) -> String { "0x" + hexByte(byte) }
}
