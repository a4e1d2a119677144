import AMS
import ANCS
import ATT
import HCI
import Wire

/// What one connection of a capture has shown so far: its ACL fragments, its MTU, the GATT
/// database its discovery revealed, and where ANCS and AMS are.
struct Link: Sendable {
  /// An event found: kind, words, fields, and the record and time it belongs to when not
  /// the one being read (a Notification Source event recognised later).
  struct Event: Sendable {
    var event: String
    var text: String
    var fields: [(String, JSON)]
    var at: (record: Int, time: Double)?
  }
  typealias Output = [Event]

  /// The characteristics `ancs inspect` follows, by UUID.
  enum Role: String, Sendable {
    case notificationSource = "Notification Source"
    case controlPoint = "Control Point"
    case dataSource = "Data Source"
    case remoteCommand = "Remote Command"
    case entityUpdate = "Entity Update"
    case entityAttribute = "Entity Attribute"
    case serviceChanged = "Service Changed"

    static let byUUID: [BluetoothUUID: Role] = [
      BluetoothUUID(ANCSUUID.notificationSource)!: .notificationSource,
      BluetoothUUID(ANCSUUID.controlPoint)!: .controlPoint, BluetoothUUID(ANCSUUID.dataSource)!: .dataSource,
      BluetoothUUID(AMSUUID.remoteCommand)!: .remoteCommand, BluetoothUUID(AMSUUID.entityUpdate)!: .entityUpdate,
      BluetoothUUID(AMSUUID.entityAttribute)!: .entityAttribute, BluetoothUUID(0x2A05): .serviceChanged,
    ]
  }

  private var sentFragments = ACLReassembler()
  private var receivedFragments = ACLReassembler()
  private var clientMTU: [Bool: UInt16] = [:]
  var mtu = 23
  private var mtuTold = false
  /// Every characteristic's UUID by value handle, for naming the ones not followed.
  private var uuids: [UInt16: BluetoothUUID] = [:]
  var found: CaptureInspector.Found?
  /// The request each side sent and the other has not answered (by who sent it).
  private var pending: [Bool: ATTPDU] = [:]
  /// Value handle → the characteristic's role, from discovery or traffic.
  private var roles: [UInt16: Role] = [:]
  /// Every characteristic's value handle seen in discovery, for placing descriptors.
  private var valueHandles: [UInt16] = []
  /// CCCD handle → the value handle it configures.
  private var cccds: [UInt16: UInt16] = [:]
  /// Notifications that read as Notification Source events, on handles not known yet, with
  /// their record and time.
  private var candidates: [UInt16: [(NotificationSourceEvent, record: Int, time: Double)]] = [:]
  /// The record being read.
  private var now: (record: Int, time: Double) = (0, 0)
  // What the rules need (Rules.swift).
  /// The capture holds this connection from its start: what was not announced was not.
  var fromStart = false
  private var announced: Set<UInt32> = []
  /// Removed UIDs and the record that removed each.
  private var removed: [UInt32: Int] = [:]
  /// Where the answer in progress began (the command's record).
  private var commandRecord = 0
  /// CCCD values by the value handle they configure.
  private var subscriptions: [UInt16: UInt8] = [:]
  /// The commands the player last listed on Remote Command.
  private var listed: [RemoteCommandID]?
  /// Records of ANCS and AMS use before the link was encrypted.
  private var plainUses: [Int] = []
  var encrypted = false
  /// The Service Changed indication the accessory has not answered with a new subscription.
  var unansweredServiceChanged: Int?
  /// The Control Point command whose answer the Data Source owes, and its reassembly.
  private var command: ControlPointCommand?
  private var answer: DataSourceReassembler?
  /// The Entity Attribute selection, and a whole value being read.
  private var selection: EntityAttribute?
  private var wholeValue: [UInt8] = []

  /// Answers are taken as they come, to be told and then judged (Rules.swift): a value over
  /// its maximum or cut inside a character is a finding, not a broken answer.
  static let lenient = DataSourceReassembler.Policy(
    optionalAttributes: DataSourceReassembler.Policy.standard.optionalAttributes, acceptPartial: true,
    unrequested: .keep, validateUTF8: false, enforceMaximumLength: false)

  /// `lenient`, knowing the link's notification size once the capture told its MTU: a
  /// notification shorter than that ends an answer that may be whole.
  var policy: DataSourceReassembler.Policy {
    var policy = Self.lenient
    if mtuTold { policy.fragmentCapacity = mtu - 3 }
    return policy
  }

  func handle(of role: Role) -> UInt16? { roles.first { $0.value == role }?.key }

  mutating func reassemble(_ packet: ACLPacket, sent: Bool) throws(ACLReassemblyError) -> [UInt8]? {
    sent ? try sentFragments.push(packet) : try receivedFragments.push(packet)
  }

  // MARK: - ATT

  mutating func take(_ pdu: ATTPDU, sent: Bool, at now: (record: Int, time: Double), _ out: inout Output) {
    self.now = now
    switch pdu {
    case .exchangeMTURequest(let request):
      clientMTU[sent] = request.clientRxMTU
    case .exchangeMTUResponse(let response):
      // Both sides may exchange; the MTU is told when it changes.
      if let client = clientMTU[!sent] ?? clientMTU[sent],
        Int(max(23, min(client, response.serverRxMTU))) != mtu || !mtuTold
      {
        mtu = Int(max(23, min(client, response.serverRxMTU)))
        mtuTold = true
        out.append(("mtu", "ATT_MTU \(mtu)", [("mtu", .number(Double(mtu)))]))
      }
    case .readByGroupTypeRequest, .findByTypeValueRequest, .readByTypeRequest, .findInformationRequest,
      .readRequest, .readBlobRequest:
      pending[sent] = pdu
    case .readByTypeResponse(let response):
      guard case .readByTypeRequest(let request)? = answered(sent),
        request.type == BluetoothUUID(0x2803)
      else { return }
      for entry in response.entries where entry.value.count >= 5 {
        let value = UInt16(entry.value[1]) | UInt16(entry.value[2]) << 8
        valueHandles.append(value)
        guard let uuid = BluetoothUUID(littleEndian: entry.value.dropFirst(3)) else { continue }
        uuids[value] = uuid
        if let role = Role.byUUID[uuid] { learn(role, at: value, &out) }
      }
    case .findInformationResponse(let response):
      for entry in response.entries where entry.type == BluetoothUUID(0x2902) {
        if let owner = valueHandles.filter({ $0 < entry.handle }).max() { cccds[entry.handle] = owner }
      }
    case .writeRequest(let write):
      written(write.handle, write.value, withResponse: true, &out)
    case .writeCommand(let write):
      written(write.handle, write.value, withResponse: false, &out)
    case .errorResponse(let error):
      _ = answered(sent)
      // Discovery ends with an error (Attribute Not Found): only other refusals are news.
      let discovery: [ATTOpcode] = [
        .readByGroupTypeRequest, .readByTypeRequest, .findInformationRequest, .findByTypeValueRequest,
      ]
      if !discovery.contains(error.requestOpcode) { refused(error, &out) }
    case .readResponse(let response):
      readAnswer(response.value, request: answered(sent), &out)
    case .readBlobResponse(let response):
      readAnswer(response.value, request: answered(sent), &out)
    case .handleValueNotification(let notification):
      notified(notification.handle, notification.value, &out)
    case .handleValueIndication(let indication) where roles[indication.handle] == .serviceChanged:
      let value = indication.value
      let range = value.count >= 4 ? "0x\(hex16(value[0], value[1]))-0x\(hex16(value[2], value[3]))" : "?"
      out.append(("serviceChanged", "Service Changed over \(range): the database changed there", []))
      if value.count >= 4, let source = handle(of: .notificationSource) {
        let start = UInt16(value[0]) | UInt16(value[1]) << 8
        let end = UInt16(value[2]) | UInt16(value[3]) << 8
        if (start...max(start, end)).contains(source) { unansweredServiceChanged = now.record }
      }
    default:
      break
    }
  }

  /// The request a response sent by `sent` answers: the other side's, or, in a capture that
  /// cannot tell directions apart (pcap's plain H4), the only one pending.
  private mutating func answered(_ sent: Bool) -> ATTPDU? {
    pending.removeValue(forKey: !sent) ?? pending.removeValue(forKey: sent)
  }

  private mutating func learn(_ role: Role, at value: UInt16, _ out: inout Output) {
    // A service found again (after Service Changed) moves its characteristics.
    roles = roles.filter { $0.value != role }
    roles[value] = role
    let ancs: [Role] = [.notificationSource, .controlPoint, .dataSource]
    if ancs.contains(role), ancs.allSatisfy({ handle(of: $0) != nil }) {
      found = .discovery
      out.append(("found", "ANCS found by discovery: \(describe(ancs))", [("by", .string("discovery"))]))
    }
    let ams: [Role] = [.remoteCommand, .entityUpdate, .entityAttribute]
    if ams.contains(role), ams.allSatisfy({ handle(of: $0) != nil }) {
      out.append(("found", "AMS found by discovery: \(describe(ams))", [("by", .string("discovery"))]))
    }
  }

  /// A characteristic's name: its role, or its handle and UUID.
  private func name(_ handle: UInt16) -> String {
    if let role = roles[handle] { return role.rawValue }
    return "handle 0x\(hex16(handle))" + (uuids[handle].map { " (\($0))" } ?? "")
  }

  private func describe(_ roles: [Role]) -> String {
    roles.map { "\($0.rawValue) 0x\(hex16(handle(of: $0) ?? 0))" }.joined(separator: ", ")
  }

  // MARK: - Writes

  private mutating func written(_ handle: UInt16, _ value: [UInt8], withResponse: Bool, _ out: inout Output) {
    if let owner = cccds[handle] ?? (roles[handle] == nil ? guessedCCCDOwner(handle) : nil), value.count == 2 {
      let name = self.name(owner)
      let what = value[0] & 1 != 0 ? "notifications" : value[0] & 2 != 0 ? "indications" : "off"
      subscriptions[owner] = value[0]
      if roles[owner] == .notificationSource && value[0] & 1 != 0 { unansweredServiceChanged = nil }
      if let role = roles[owner], role != .serviceChanged, !encrypted { plainUses.append(now.record) }
      out.append(
        ("subscribed", "\(name): \(what)", [("characteristic", .string(name)), ("value", .string(what))]))
      return
    }
    if let role = roles[handle], role != .serviceChanged, !encrypted { plainUses.append(now.record) }
    switch roles[handle] {
    case .controlPoint?:
      controlPoint(value, &out)
    case .entityUpdate?:
      if fromStart, subscriptions[handle, default: 0] & 1 == 0 {
        out.append(
          Self.finding(.mediaBeforeSubscribing, "wrote Entity Update before subscribing to it", records: [now.record]))
      }
      guard let registration = try? EntityRegistration(decoding: value) else {
        out.append(("mediaRegistration", "Entity Update write \(Hex.encode(value)): malformed", []))
        return
      }
      let names = registration.pairs.map { $0.name ?? "\($0.attribute)" }
      let entity = registration.entity.name ?? "entity \(registration.entity.rawValue)"
      out.append(
        (
          "mediaRegistration", "registers for the \(entity)'s \(names.joined(separator: ", "))",
          [("entity", .string(entity)), ("attributes", .array(names.map { .string($0) }))]
        ))
    case .remoteCommand?:
      guard let command = try? RemoteCommand(decoding: value) else {
        out.append(("remoteCommand", "Remote Command write \(Hex.encode(value)): not one byte", []))
        out.append(
          Self.finding(.remoteCommandSize, "Remote Command written as \(Hex.encode(value))", records: [now.record]))
        return
      }
      let name = command.command.name ?? "command \(command.command.rawValue)"
      out.append(("remoteCommand", "remote command \(name)", [("command", .string(name))]))
      if let listed, !listed.contains(command.command) {
        out.append(Self.finding(.unlistedCommand, "sent \(name), which the player did not list", records: [now.record]))
      }
    case .entityAttribute?:
      selection = (try? EntityAttributeSelection(decoding: value))?.attribute
      wholeValue = []
    case nil:
      identifyControlPoint(handle, value, &out)
    default:
      break
    }
  }

  /// Without discovery, a CCCD is taken to be the handle after a known value handle's.
  private func guessedCCCDOwner(_ handle: UInt16) -> UInt16? {
    guard found == .traffic, handle > 0, roles[handle - 1] != nil else { return nil }
    return handle - 1
  }

  private mutating func controlPoint(_ value: [UInt8], _ out: inout Output) {
    let decoded: ControlPointCommand
    do { decoded = try ControlPointCommand(decoding: value) } catch {
      out.append(("command", "Control Point write \(Hex.encode(value)): \(error)", []))
      return
    }
    // An answer that stopped where it may be whole (an iPhone leaves out an attribute it has
    // no value for, as Mail's missing action label) is whole once the next command comes,
    // when the capture never told the MTU (with it, a short notification ended the answer).
    if !mtuTold, var previous = answer, previous.awaitsOnlyOptional, let response = try? previous.finish() {
      answer = nil
      told(response, parts: previous.fragmentCount, &out)
    }
    if let previous = answer, previous.fragmentCount > 0, !previous.isComplete {
      out.append(
        Self.finding(
          .commandsOverlap, "a command written while the answer to the one before was still arriving",
          records: [commandRecord, now.record]))
    }
    command = decoded
    commandRecord = now.record
    switch decoded {
    case .getNotificationAttributes(let get):
      let uid = get.notificationUID
      if let at = removed[uid] {
        out.append(
          Self.finding(.fetchAfterRemoved, "fetched UID \(uid) after it was Removed", records: [at, now.record]))
      } else if fromStart && found == .discovery && uid != 0xFFFF_FFFF && !announced.contains(uid) {
        out.append(Self.finding(.fetchNeverAnnounced, "fetched UID \(uid), never announced", records: [now.record]))
      }
      answer = DataSourceReassembler(expecting: .notificationAttributes(get), policy: policy)
      let asked = get.attributes.map { request in
        (request.id.name ?? "\(request.id.rawValue)") + (request.maxLength.map { "(\($0))" } ?? "")
      }
      out.append(
        (
          "fetch", "fetches UID \(get.notificationUID): \(asked.joined(separator: " "))",
          [("uid", .number(Double(get.notificationUID))), ("attributes", .array(asked.map { .string($0) }))]
        ))
    case .getAppAttributes(let get):
      answer = DataSourceReassembler(expecting: .appAttributes(get), policy: policy)
      out.append(("appFetch", "asks the name of \(get.appIdentifier)", [("app", .string(get.appIdentifier))]))
    case .performNotificationAction(let perform):
      answer = nil
      let action = perform.actionID.name ?? "\(perform.actionID.rawValue)"
      out.append(
        (
          "action", "\(action) action on UID \(perform.notificationUID)",
          [("uid", .number(Double(perform.notificationUID))), ("action", .string(action))]
        ))
    }
  }

  private mutating func refused(_ error: ErrorResponse, _ out: inout Output) {
    let code = error.errorCode.rawValue
    let role = roles[error.handle]
    let name: String
    switch role {
    case .controlPoint?: name = ANCSErrorCode(rawValue: code).name.map { "\($0) " } ?? ""
    case .entityUpdate?, .entityAttribute?, .remoteCommand?:
      name = AMSErrorCode(rawValue: code).name.map { "\($0) " } ?? ""
    default: name = ""
    }
    let target = self.name(error.handle)
    if role == .controlPoint { answer = nil }
    out.append(
      (
        "refused", "\(target) refused: \(name)(0x\(hexByte(code)))",
        [("characteristic", .string(target)), ("code", .number(Double(code)))]
      ))
  }

  private mutating func readAnswer(_ value: [UInt8], request: ATTPDU?, _ out: inout Output) {
    let handle: UInt16
    switch request {
    case .readRequest(let read)?:
      handle = read.handle
      wholeValue = []
    case .readBlobRequest(let read)?: handle = read.handle
    default: return
    }
    guard roles[handle] == .entityAttribute else { return }
    wholeValue += value
    // A response shorter than a full one is the last.
    guard value.count < mtu - 1 else { return }
    let attribute = selection.map { "\($0)" } ?? "nothing selected"
    let text = String(decoding: wholeValue, as: UTF8.self)
    out.append(
      (
        "mediaRead", "reads \(attribute) whole: \"\(text)\"",
        [("attribute", .string(attribute)), ("value", .string(text))]
      ))
  }

  // MARK: - Notifications

  private mutating func notified(_ handle: UInt16, _ value: [UInt8], _ out: inout Output) {
    switch roles[handle] {
    case .notificationSource?:
      guard let event = try? NotificationSourceEvent(decoding: value) else {
        out.append(
          Self.finding(
            .malformedEvent, "a Notification Source value of \(value.count) bytes (\(Hex.encode(value)))",
            records: [now.record]))
        return
      }
      if event.eventID == .removed {
        removed[event.notificationUID] = now.record
      } else {
        removed[event.notificationUID] = nil
        announced.insert(event.notificationUID)
      }
      out.append(Self.describe(event))
    case .dataSource?:
      dataSource(value, &out)
    case .entityUpdate?:
      guard let update = try? EntityUpdate(decoding: value) else { return }
      let cut = update.flags.contains(.truncated)
      out.append(
        (
          "media", "\(update.attribute) = \"\(update.text)\"\(cut ? " (truncated)" : "")",
          [
            ("attribute", .string("\(update.attribute)")), ("value", .string(update.text)), ("truncated", .bool(cut)),
          ]
        ))
    case .remoteCommand?:
      listed = SupportedCommands(decoding: value).commands
      let names = (listed ?? []).map { $0.name ?? "\($0.rawValue)" }
      let list = names.isEmpty ? "no command" : names.joined(separator: ", ")
      out.append(("mediaCommands", "the player takes \(list)", [("commands", .array(names.map { .string($0) }))]))
    case nil:
      identify(handle, value, &out)
    default:
      break
    }
  }

  static func describe(_ event: NotificationSourceEvent) -> (String, String, [(String, JSON)]) {
    let name = event.eventID.name ?? "event \(event.eventID.rawValue)"
    let category = CategoryID.names[event.categoryID.rawValue] ?? "category \(event.categoryID.rawValue)"
    let flags = event.eventFlags.flagNames
    let text =
      "\(name.capitalized) UID \(event.notificationUID) (\(category), \(event.categoryCount) in category"
      + (flags.isEmpty ? ")" : ", \(flags.joined(separator: " ")))")
    return (
      name, text,
      [
        ("uid", .number(Double(event.notificationUID))), ("category", .string(category)),
        ("count", .number(Double(event.categoryCount))), ("flags", .array(flags.map { .string($0) })),
      ]
    )
  }

  private mutating func dataSource(_ value: [UInt8], _ out: inout Output) {
    guard var reassembler = answer else {
      out.append(("stray", "Data Source \(Hex.encode(value)) with no command waiting for it", []))
      return
    }
    let response: DataSourceResponse?
    do { response = try reassembler.feed(value) } catch {
      answer = nil
      out.append(("error", "Data Source answer broken: \(error)", []))
      return
    }
    answer = reassembler
    guard let response else { return }
    answer = nil
    told(response, parts: reassembler.fragmentCount, &out)
  }

  /// An answer whole: told, and judged against the command it answers.
  private mutating func told(_ response: DataSourceResponse, parts: Int, _ out: inout Output) {
    switch response {
    case .notificationAttributes(let attributes):
      if case .getNotificationAttributes(let get)? = command {
        out += Self.judge(attributes, asked: get, record: now.record)
      }
      let shown = attributes.attributes.map { "\($0.id.name ?? "\($0.id.rawValue)")=\"\($0.text)\"" }
      var fields: [(String, JSON)] = [("uid", .number(Double(attributes.notificationUID)))]
      for tuple in attributes.attributes {
        fields.append((tuple.id.name ?? "\(tuple.id.rawValue)", .string(tuple.text)))
      }
      fields.append(("notifications", .number(Double(parts))))
      out.append(
        (
          "answer",
          "UID \(attributes.notificationUID): \(shown.joined(separator: " ")) (\(parts) notification\(parts == 1 ? "" : "s"))",
          fields
        ))
    case .appAttributes(let app):
      let name = app.attributes.first { $0.id == .displayName }?.text ?? ""
      out.append(
        (
          "appName", "\(app.appIdentifier) is \"\(name)\"",
          [("app", .string(app.appIdentifier)), ("name", .string(name))]
        ))
    }
  }

  // MARK: - Finding ANCS by its traffic

  /// A notification on a handle no discovery named: kept when it reads as a Notification
  /// Source event (the handle may prove to be one), or taken as the Data Source when it
  /// starts as the answer to the command waiting.
  private mutating func identify(_ handle: UInt16, _ value: [UInt8], _ out: inout Output) {
    if found == nil || self.handle(of: .notificationSource) == nil,
      let event = try? NotificationSourceEvent(decoding: value), event.eventID.rawValue <= 2
    {
      candidates[handle, default: []].append((event, now.record, now.time))
      return
    }
    guard found == .traffic, self.handle(of: .dataSource) == nil, case .getNotificationAttributes(let get)? = command,
      value.count >= 5, value[0] == 0,
      Array(value[1..<5]) == withUnsafeBytes(of: get.notificationUID.littleEndian, Array.init)
    else { return }
    roles[handle] = .dataSource
    out.append(("found", "Data Source found by its traffic: 0x\(hex16(handle))", [("by", .string("traffic"))]))
    dataSource(value, &out)
  }

  /// A write on a handle no discovery named: the Control Point, when it fetches a UID a
  /// candidate Notification Source announced.
  private mutating func identifyControlPoint(_ handle: UInt16, _ value: [UInt8], _ out: inout Output) {
    guard self.handle(of: .controlPoint) == nil,
      case .getNotificationAttributes(let get)? = try? ControlPointCommand(decoding: value),
      let (source, events) = candidates.first(where: {
        $0.value.contains { $0.0.notificationUID == get.notificationUID }
      })
    else { return }
    roles[source] = .notificationSource
    roles[handle] = .controlPoint
    found = .traffic
    candidates = [:]
    out.append(
      (
        "found",
        "ANCS found by its traffic (the capture starts after discovery): Notification Source 0x\(hex16(source)), "
          + "Control Point 0x\(hex16(handle))", [("by", .string("traffic"))]
      ))
    // What the Notification Source said before it was known, at the record that reveals it.
    for (event, record, time) in events {
      let (kind, text, fields) = Self.describe(event)
      out.append(Event(event: kind, text: text, fields: fields, at: (record, time)))
    }
    controlPoint(value, &out)
  }
}

func hex16(_ value: UInt16) -> String { hexByte(UInt8(value >> 8)) + hexByte(UInt8(value & 0xFF)) }
func hex16(_ low: UInt8, _ high: UInt8) -> String { hexByte(high) + hexByte(low) }

extension [Link.Event] {
  /// An event of the record being read.
  mutating func append(_ event: (String, String, [(String, JSON)])) {
    append(Link.Event(event: event.0, text: event.1, fields: event.2, at: nil))
  }
}

extension Link {
  /// The link got encrypted: ANCS and AMS used before it broke the security rule.
  mutating func encryptionOn(_ out: inout Output) {
    if !plainUses.isEmpty {
      out.append(
        Self.finding(
          .plainLink, "used ANCS or AMS before the link was encrypted", records: Array(plainUses.prefix(5))))
      plainUses = []
    }
    encrypted = true
  }

  /// The link ended (or the capture did): a Service Changed over ANCS never answered.
  func ended(at record: Int) -> [Event] {
    guard let indication = unansweredServiceChanged else { return [] }
    return [
      Self.finding(
        .noRediscovery, "Service Changed over ANCS, and no new Notification Source subscription after it",
        records: [indication, record])
    ]
  }
}
