import ANCS
import ATT
import GATT
import Phone
import Runtime
import Wire

/// The phone's Control Point, through its GATT server: a watch on an encrypted link
/// subscribes to both sources (and is told the three notifications the phone holds), then
/// the script writes commands, exchanges the MTU and turns Data Source notifications off and
/// on. Each Control Point write is answered as Protocol/ANCS.md says, checked in its order:
/// 0xA0/0xA1 when the command does not decode, 0xA2 for an unknown UID, app, attribute or
/// action, 0xA3 for an action the notification lacks, 0xFD without a Data Source
/// subscription; otherwise a Write Response, then exactly the expected answer on the Data
/// Source (tuples in request order, or reversed under the quirk, each value cut to its
/// maximum) in notifications of ATT_MTU - 3 bytes (20 under chunk20), or for an action the
/// Removed event. A Write Command gets no ATT answer.
///
/// Layout: quirk bits (chunk20, ellipsis, empty-packet, reverse-tuples), then operations
/// (`PhoneOperation`).
func fuzz(_ bytes: [UInt8]) {
  var input = FuzzInput(bytes)
  let bits = input.byte()
  var quirks = Quirks()
  quirks.chunk20 = bits & 1 != 0
  quirks.ellipsis = bits & 2 != 0
  quirks.emptyPacket = bits & 4 != 0
  quirks.reverseTuples = bits & 8 != 0
  // The minimal layout: the rules judged here are the Control Point's, the same in either
  // layout, and a phone of that layout starts nothing of its own on the link (an iPhone's
  // Exchange MTU and Device Name read would sit outside this script's model).
  let phone = try! Phone(
    quirks: quirks, settings: PhoneSettings(layout: .minimal), wallClock: FixedWallClock(seconds: 1_796_083_200))
  let ancs = phone.server.handles(of: BluetoothUUID(ANCSUUID.service)!)!
  let (source, control, data) = (ancs[0], ancs[1], ancs[2])

  // The model: what each scripted PDU is, and the link as the phone sees it when it arrives.
  var script = [write(source.cccd!, [1, 0]), write(data.cccd!, [1, 0])]
  var steps: [Step] = [.subscribe, .other]
  var link = Link()
  while !input.isAtEnd {
    switch PhoneOperation(rawValue: input.byte() % UInt8(PhoneOperation.allCases.count))! {
    case .writeRequest:
      let value = input.chunk()
      script.append(write(control.value, value))
      steps.append(.controlPoint(value, link))
    case .writeCommand:
      script.append([ATTOpcode.writeCommand.rawValue] + le(control.value) + input.chunk())
      steps.append(.writeCommand)
    case .exchangeMTU:
      let mtu = input.u16()
      script.append([ATTOpcode.exchangeMTURequest.rawValue] + le(mtu))
      steps.append(.other)
      link.mtu = Int(max(ATTConnection.defaultMTU, min(ATTConnection.Options().localMTU, mtu)))
    case .dataSourceSubscription:
      link.dataSource = input.byte() & 1 == 1
      script.append(write(data.cccd!, [link.dataSource ? 1 : 0, 0]))
      steps.append(.other)
    }
  }

  // The notifications the phone held as each scripted PDU arrived.
  let held = Locked<[[PhoneNotification]]>([])
  let bearer = ScriptedBearer(script: script, securityLevel: .encrypted) { _ in
    let notifications = await phone.notifications
    held.withLock { $0.append(notifications) }
  }
  let apps = runBlocking {
    for (id, name) in [("com.example.chat", "Chat"), ("com.apple.mobilephone", "Phone")] {
      await phone.register(app: id, name: name)
    }
    for notification in notifications { await phone.post(notification) }
    await phone.serve(bearer)
    return await phone.apps
  }

  let snapshots = held.withLock { $0 }
  require(snapshots.count == script.count, "the phone read \(snapshots.count) of \(script.count) PDUs")
  let phoneSide = PhoneSide(
    quirks: quirks, source: source.value, control: control.value, data: data.value, apps: apps)
  for (index, (answers, step)) in zip(bearer.answers(), steps).enumerated() {
    let context = { "step \(index): \(Hex.encode(script[index])) answered \(answers.map { Hex.encode($0) })" }
    phoneSide.check(answers, to: step, holding: snapshots[index], context)
  }
}

/// What the phone holds before the watch connects: a message with both actions, a call,
/// and a long text from an app with no registered name.
private let notifications = [
  PhoneNotification(
    appIdentifier: "com.example.chat", category: .social, flags: .important, title: "Maya", subtitle: "Lunch",
    message: "Lunch at 12? Café Lumière 🍝", date: "20261129T120000", positiveAction: "Reply",
    negativeAction: "Dismiss"),
  PhoneNotification(
    appIdentifier: "com.apple.mobilephone", category: .incomingCall, title: "Alice", message: "Incoming Call",
    date: "", positiveAction: "Answer", negativeAction: "Decline"),
  PhoneNotification(
    appIdentifier: "com.example.news.daily", category: .news, title: "Fireworks over the harbour",
    message: String(repeating: "Crowds gathered along the quay; 京都の花火大会, fête, Feuerwerk 🎆. ", count: 5),
    date: "20261231T235945"),
]

private struct Link {
  var mtu = Int(ATTConnection.defaultMTU)
  var dataSource = true
}

private enum Step {
  /// The Notification Source subscription: the held notifications are reported.
  case subscribe
  case controlPoint([UInt8], Link)
  case writeCommand
  /// Answered with a response and nothing more.
  case other
}

private func le(_ value: UInt16) -> [UInt8] { [UInt8(truncatingIfNeeded: value), UInt8(value >> 8)] }

private func write(_ handle: UInt16, _ value: [UInt8]) -> [UInt8] {
  [ATTOpcode.writeRequest.rawValue] + le(handle) + value
}

/// The phone's side of the link, and the answers it owes.
private struct PhoneSide {
  var quirks: Quirks
  var source: UInt16
  var control: UInt16
  var data: UInt16
  var apps: [String: String]

  private static let writeResponse = [ATTOpcode.writeResponse.rawValue]

  func check(_ answers: [[UInt8]], to step: Step, holding held: [PhoneNotification], _ context: () -> String) {
    switch step {
    case .subscribe:
      require(answers.first == Self.writeResponse && answers.count == 1 + held.count, context())
      for (answer, notification) in zip(answers.dropFirst(), held) {
        let event = try? NotificationSourceEvent(decoding: notified(answer, on: source, context))
        require(
          event?.eventID == .added && event?.notificationUID == notification.uid
            && event?.eventFlags == notification.eventFlags.union(.preExisting)
            && event?.categoryID == notification.category
            && event?.categoryCount == Self.count(notification.category, in: held),
          "\(context()): not the pre-existing report")
      }
    case .other:
      require(answers.count == 1, context())
    case .writeCommand:
      require(answers.allSatisfy { $0.first == ATTOpcode.handleValueNotification.rawValue }, context())
    case .controlPoint(let value, let link):
      switch expected(value, held: held, link: link) {
      case .refused(let code):
        let refusal = [ATTOpcode.errorResponse.rawValue, ATTOpcode.writeRequest.rawValue] + le(control)
        require(answers == [refusal + [code]], "\(context()): expected error \(code)")
      case .removed(let notification):
        require(answers.count == 2 && answers[0] == Self.writeResponse, "\(context()): expected the Removed event")
        let event = try? NotificationSourceEvent(decoding: notified(answers[1], on: source, context))
        let left = held.filter { $0.uid != notification.uid }
        require(
          event?.eventID == .removed && event?.notificationUID == notification.uid
            && event?.categoryCount == Self.count(notification.category, in: left),
          "\(context()): expected UID \(notification.uid) removed")
      case .answer(let response, let command):
        require(answers.first == Self.writeResponse, "\(context()): expected a Write Response")
        let size = quirks.chunk20 ? 20 : link.mtu - 3
        let fragments = answers.dropFirst().map { notified($0, on: data, context) }
        let expected = dataSourceFragments(response.encoded(), maximumSize: size).map(Array.init)
        require(fragments == expected + (quirks.emptyPacket ? [[]] : []), "\(context()): expected \(response)")
        reassemble(fragments, answering: command, as: response, context)
      }
    }
  }

  private func notified(_ pdu: [UInt8], on handle: UInt16, _ context: () -> String) -> [UInt8] {
    let header = [ATTOpcode.handleValueNotification.rawValue] + le(handle)
    require(pdu.starts(with: header), "\(context()): \(Hex.encode(pdu)) is not a notification on handle \(handle)")
    return Array(pdu.dropFirst(3))
  }

  enum Outcome {
    /// An Error Response with this code.
    case refused(UInt8)
    case answer(DataSourceResponse, ControlPointCommand)
    /// A Write Response, then the Removed event of this notification.
    case removed(PhoneNotification)
  }

  /// Protocol/ANCS.md, "Errors", in the order the phone checks.
  func expected(_ value: [UInt8], held: [PhoneNotification], link: Link) -> Outcome {
    let invalidParameter = ANCSErrorCode.invalidParameter.rawValue
    let command: ControlPointCommand
    do {
      command = try ControlPointCommand(decoding: value)
    } catch {
      return .refused(error.controlPointErrorCode.rawValue)
    }
    switch command {
    case .getNotificationAttributes(let get):
      guard let notification = held.first(where: { $0.uid == get.notificationUID }) else {
        return .refused(invalidParameter)
      }
      var tuples: [NotificationAttribute] = []
      for request in get.attributes {
        guard let text = Self.text(of: request.id, in: notification) else { return .refused(invalidParameter) }
        let value = request.maxLength.map { ANCSText.truncate(text, toBytes: Int($0), ellipsis: quirks.ellipsis) }
        tuples.append(NotificationAttribute(request.id, value ?? Array(text.utf8)))
      }
      if quirks.reverseTuples { tuples.reverse() }
      guard link.dataSource else { return .refused(ATTErrorCode.cccdImproperlyConfigured.rawValue) }
      return .answer(.notificationAttributes(.init(notificationUID: notification.uid, attributes: tuples)), command)
    case .getAppAttributes(let get):
      let app = get.appIdentifier
      let known = held.contains { $0.appIdentifier == app }
      guard let name = apps[app] ?? (known ? app.split(separator: ".").last.map(String.init) ?? app : nil),
        get.attributes.allSatisfy({ $0 == .displayName })
      else { return .refused(invalidParameter) }
      guard link.dataSource else { return .refused(ATTErrorCode.cccdImproperlyConfigured.rawValue) }
      let tuples = get.attributes.map { AppAttribute($0, text: name) }
      return .answer(.appAttributes(.init(appIdentifier: app, attributes: tuples)), command)
    case .performNotificationAction(let action):
      guard let notification = held.first(where: { $0.uid == action.notificationUID }), action.actionID.rawValue < 2
      else { return .refused(invalidParameter) }
      let label = action.actionID == .positive ? notification.positiveAction : notification.negativeAction
      return label == nil ? .refused(ANCSErrorCode.actionFailed.rawValue) : .removed(notification)
    }
  }

  /// CategoryCount: how many of `notifications` are in `category`.
  static func count(_ category: CategoryID, in notifications: [PhoneNotification]) -> UInt8 {
    UInt8(clamping: notifications.count { $0.category == category })
  }

  /// The attribute's whole text (ANCS.md: MessageSize in decimal digits, empty labels and
  /// dates where there are none); nil for an unknown attribute.
  static func text(of id: NotificationAttributeID, in notification: PhoneNotification) -> String? {
    switch id {
    case .appIdentifier: return notification.appIdentifier
    case .title: return notification.title
    case .subtitle: return notification.subtitle
    case .message: return notification.message
    case .messageSize: return String(notification.message.utf8.count)
    case .date: return notification.date
    case .positiveActionLabel: return notification.positiveAction ?? ""
    case .negativeActionLabel: return notification.negativeAction ?? ""
    default: return nil
    }
  }

  /// The watch's reassembler, strict, takes the fragments as the expected response (when
  /// the command names each attribute once, as a response may hold each only once).
  private func reassemble(
    _ fragments: [[UInt8]], answering command: ControlPointCommand, as response: DataSourceResponse,
    _ context: () -> String
  ) {
    let expectation: DataSourceReassembler.Expectation
    switch command {
    case .getNotificationAttributes(let get):
      guard Set(get.attributes.map(\.id)).count == get.attributes.count else { return }
      expectation = .notificationAttributes(get)
    case .getAppAttributes(let get):
      guard Set(get.attributes).count == get.attributes.count else { return }
      expectation = .appAttributes(get)
    case .performNotificationAction:
      return
    }
    var reassembler = DataSourceReassembler(expecting: expectation, policy: .strict)
    var result: DataSourceResponse?
    do {
      for fragment in fragments where result == nil { result = try reassembler.feed(fragment) }
    } catch {
      require(false, "\(context()): the reassembler refuses the answer: \(error)")
    }
    require(result == response, "\(context()): reassembled as \(String(describing: result))")
  }
}
