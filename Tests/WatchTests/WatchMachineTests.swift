import ANCS
import TestSupport
import Testing
import Watch

// Unit tests of WatchMachine: inputs with explicit times, exact actions back. No clock, no
// engine, no sleeping. A small fake phone answers the machine's Control Point writes with
// the ANCS codec, at a chosen MTU.

// MARK: - The phone's side

/// A notification as the fake phone holds it. `flags` are the EventFlags of its events.
private struct Note {
  var uid: UInt32
  var category: CategoryID = .social
  var flags: EventFlags = []
  var app = "com.example.chat"
  var title = ""
  var subtitle = ""
  var message = ""
  var date = "20250615T161837"
  var positive = ""
  var negative = ""

  static func chat(_ uid: UInt32, _ title: String, message: String = "", flags: EventFlags = []) -> Note {
    Note(uid: uid, flags: flags, title: title, subtitle: "re: \(title)", message: message)
  }

  static func call(_ uid: UInt32, from caller: String) -> Note {
    Note(
      uid: uid, category: .incomingCall, flags: [.positiveAction, .negativeAction], app: "com.apple.mobilephone",
      title: caller, date: "", positive: "Answer", negative: "Decline")
  }

  /// The value the phone gives for an attribute (before any maximum).
  func text(_ id: NotificationAttributeID) -> String {
    switch id {
    case .appIdentifier: return app
    case .title: return title
    case .subtitle: return subtitle
    case .message: return message
    case .messageSize: return String(message.utf8.count)
    case .date: return date
    case .positiveActionLabel: return positive
    case .negativeActionLabel: return negative
    default: return ""
    }
  }

  /// Its Notification Source event.
  func event(_ id: EventID = .added, count: UInt8 = 1) -> WatchMachine.Input {
    .notificationSource(
      NotificationSourceEvent(
        eventID: id, eventFlags: flags, categoryID: category, categoryCount: count, notificationUID: uid
      ).encoded())
  }

  /// What the watch announces once it has the attributes and the app's name.
  func shown(_ appName: String = "Chat", at receivedAt: Duration = .zero) -> WatchNotification {
    var n = WatchNotification(uid: uid, category: category, flags: flags, receivedAt: receivedAt)
    n.appIdentifier = app
    n.appName = appName
    n.title = title
    n.subtitle = subtitle
    n.message = message
    n.messageSize = message.utf8.count
    n.date = date
    n.positiveActionLabel = flags.contains(.positiveAction) ? positive : ""
    n.negativeActionLabel = flags.contains(.negativeAction) ? negative : ""
    n.fetched = true
    return n
  }

  /// What the watch announces when it lists it without its attributes.
  func unfetched(at receivedAt: Duration = .zero) -> WatchNotification {
    WatchNotification(uid: uid, category: category, flags: flags, receivedAt: receivedAt)
  }
}

/// Plays the phone: answers a Control Point write with the write's outcome, then the Data
/// Source fragments of the answer at ATT_MTU - 3.
private struct FakePhone {
  var notes: [UInt32: Note] = [:]
  var apps = ["com.example.chat": "Chat", "com.example.mail": "Mail", "com.apple.mobilephone": "Phone"]
  var mtu = 23
  /// Bytes per Data Source notification when the phone fills fewer than ATT_MTU - 3.
  var chunk: Int?
  /// Tuples left out of notification answers.
  var omitted: Set<NotificationAttributeID> = []
  var reversed = false
  /// Send values whole, whatever maximum was asked.
  var ignoresMaximum = false
  /// Error codes forced on Get Notification Attributes, by UID.
  var refusals: [UInt32: UInt8] = [:]

  mutating func add(_ list: Note...) {
    for note in list { notes[note.uid] = note }
  }

  /// The ATT outcome of a write (nil: Write Response) and the whole Data Source answer.
  func response(to bytes: [UInt8]) -> (code: UInt8?, data: [UInt8]) {
    guard let command = try? ControlPointCommand(decoding: bytes) else { return (0xA1, []) }
    switch command {
    case .getNotificationAttributes(let get):
      if let code = refusals[get.notificationUID] { return (code, []) }
      guard let note = notes[get.notificationUID] else { return (0xA2, []) }
      var tuples = get.attributes.filter { !omitted.contains($0.id) }.map { request in
        let whole = Array(note.text(request.id).utf8)
        let value =
          ignoresMaximum ? whole : request.maxLength.map { ANCSText.truncate(whole, toBytes: Int($0)) } ?? whole
        return NotificationAttribute(request.id, value)
      }
      if reversed { tuples.reverse() }
      return (
        nil,
        DataSourceResponse.notificationAttributes(.init(notificationUID: note.uid, attributes: tuples)).encoded()
      )
    case .getAppAttributes(let get):
      guard let name = apps[get.appIdentifier] else { return (0xA2, []) }
      let tuples = get.attributes.map { AppAttribute($0, text: name) }
      return (
        nil, DataSourceResponse.appAttributes(.init(appIdentifier: get.appIdentifier, attributes: tuples)).encoded()
      )
    case .performNotificationAction(let action):
      guard let note = notes[action.notificationUID] else { return (0xA2, []) }
      let label = action.actionID == .positive ? note.positive : note.negative
      return (label.isEmpty ? 0xA3 : nil, [])
    }
  }

  /// Everything the watch receives after writing `bytes`, in order.
  func answer(_ bytes: [UInt8]) -> [WatchMachine.Input] {
    let (code, data) = response(to: bytes)
    return [.written(code)] + fragments(data)
  }

  func fragments(_ data: [UInt8]) -> [WatchMachine.Input] {
    dataSourceFragments(data, maximumSize: chunk ?? mtu - 3).map { .dataSource(Array($0)) }
  }
}

// MARK: - Driving the machine

/// An action, with Control Point writes decoded and error texts set aside (see `errors`).
private enum Step: Hashable, CustomStringConvertible {
  case write(ControlPointCommand)
  case garbled([UInt8])
  case emit(WatchEvent)
  case error
  case probe
  case resubscribe
  case disconnect
  case media(MediaRequest)

  var description: String {
    switch self {
    case .write(let command): return "write \(command)"
    case .garbled(let bytes): return "write \(bytes) (undecodable)"
    case .emit(let event): return "emit \(event)"
    case .error: return "error"
    case .probe: return "probe"
    case .resubscribe: return "resubscribe"
    case .disconnect: return "disconnect"
    case .media(let request): return "media \(request)"
    }
  }
}

private let connected = Step.emit(.connected(link: "phone"))

private func fetch(
  _ uid: UInt32, _ flags: EventFlags = [], title: UInt16 = 65535, subtitle: UInt16 = 65535, message: UInt16 = 65535
) -> Step {
  var attributes = [AttributeRequest(.appIdentifier)]
  if flags.contains(.positiveAction) { attributes.append(AttributeRequest(.positiveActionLabel)) }
  if flags.contains(.negativeAction) { attributes.append(AttributeRequest(.negativeActionLabel)) }
  attributes += [
    AttributeRequest(.title, maxLength: title), AttributeRequest(.subtitle, maxLength: subtitle),
    AttributeRequest(.message, maxLength: message), AttributeRequest(.date), AttributeRequest(.messageSize),
  ]
  return .write(.getNotificationAttributes(.init(notificationUID: uid, attributes: attributes)))
}

private func appName(_ identifier: String = "com.example.chat") -> Step {
  .write(.getAppAttributes(.init(appIdentifier: identifier, attributes: [.displayName])))
}

/// The incoming-call check: Get Notification Attributes with only AppIdentifier.
private func check(_ uid: UInt32) -> Step {
  .write(.getNotificationAttributes(.init(notificationUID: uid, attributes: [AttributeRequest(.appIdentifier)])))
}

private func act(_ uid: UInt32, _ action: ActionID) -> Step {
  .write(.performNotificationAction(.init(notificationUID: uid, actionID: action)))
}

private func added(_ n: WatchNotification) -> Step { .emit(.added(n)) }
private func removed(_ uid: UInt32) -> Step { .emit(.removed(uid: uid)) }

private func seconds(_ value: Double) -> Duration { .milliseconds(Int64((value * 1000).rounded())) }

private struct Harness {
  var machine: WatchMachine
  var phone = FakePhone()
  var now: Duration = .zero
  /// The bytes of the last Control Point write the machine asked for.
  var lastWrite: [UInt8] = []
  /// Every error message emitted, in order.
  var errors: [String] = []

  init(_ configure: (inout WatchOptions) -> Void = { _ in }) {
    var options = WatchOptions()
    configure(&options)
    machine = WatchMachine(options: options)
  }

  var state: WatchState { machine.state }

  /// One input at `time` (default: the time of the previous input), without answering.
  mutating func feed(_ input: WatchMachine.Input, at time: Duration? = nil) -> [Step] {
    if let time { now = time }
    return steps(machine.handle(input, now: now))
  }

  /// Several inputs at the same time, without answering.
  mutating func feed(_ inputs: [WatchMachine.Input], at time: Duration? = nil) -> [Step] {
    if let time { now = time }
    return inputs.flatMap { feed($0) }
  }

  /// Feeds the inputs and plays the phone: each write's answer is queued behind whatever is
  /// already queued, as the radio would deliver it. Every step, in order.
  mutating func run(_ inputs: [WatchMachine.Input], at time: Duration? = nil) -> [Step] {
    if let time { now = time }
    var pending = inputs
    var out: [Step] = []
    while !pending.isEmpty {
      let actions = machine.handle(pending.removeFirst(), now: now)
      out += steps(actions)
      for case .write(let bytes) in actions { pending += phone.answer(bytes) }
    }
    return out
  }

  mutating func run(_ input: WatchMachine.Input, at time: Duration? = nil) -> [Step] { run([input], at: time) }

  /// Plays the phone's answer to the last write.
  mutating func answer() -> [Step] { run(phone.answer(lastWrite)) }

  /// A session at `mtu`, then the link is up (the engine's order).
  mutating func connect(mtu: Int = 23, at time: Duration = .zero) -> [Step] {
    phone.mtu = mtu
    return run([.sessionStarted(mtu: mtu), .link(.connected("phone"))], at: time)
  }

  private mutating func steps(_ actions: [WatchMachine.Action]) -> [Step] {
    actions.map { action in
      switch action {
      case .write(let bytes):
        lastWrite = bytes
        guard let command = try? ControlPointCommand(decoding: bytes) else { return .garbled(bytes) }
        return .write(command)
      case .emit(.error(let message)):
        errors.append(message)
        return .error
      case .emit(let event): return .emit(event)
      case .probe: return .probe
      case .resubscribe: return .resubscribe
      case .disconnect: return .disconnect
      case .media(let request): return .media(request)
      }
    }
  }
}

// MARK: - Session start, fetching, app names

@Suite struct WatchMachineFetchTests {
  @Test func addedIsAnnouncedOnlyOnceAttributesAndAppNameAreKnown() {
    var h = Harness()
    let note = Note(
      uid: 7, flags: [.important, .positiveAction, .negativeAction], title: "Alice", subtitle: "Lunch",
      message: "See you at noon? Table for two at Café Müller 🍕", positive: "Reply", negative: "Mark as Read")
    h.phone.add(note)
    #expect(h.feed(.sessionStarted(mtu: 23), at: seconds(1)) == [])
    // Subscriptions are being written: the event queues, nothing is written yet.
    #expect(h.feed(note.event(), at: seconds(2)) == [])
    #expect(h.feed(.link(.connected("phone"))) == [connected, fetch(7, note.flags)])
    let answer = h.phone.answer(h.lastWrite)
    #expect(answer.count > 4, "the answer spans several fragments at MTU 23")
    for input in answer.dropLast() { #expect(h.feed(input) == []) }
    #expect(h.feed(answer.last!) == [appName()])
    // Attributes known, app name not yet: still no event.
    #expect(h.state.notifications.first?.fetched == true)
    let shown = note.shown(at: seconds(2))
    #expect(h.answer() == [added(shown)])
    #expect(h.state.notifications == [shown])
    #expect(h.state.appNames == ["com.example.chat": "Chat"])
    // Every field filled.
    for field in [
      shown.appIdentifier, shown.appName, shown.title, shown.subtitle, shown.message, shown.date,
      shown.positiveActionLabel, shown.negativeActionLabel,
    ] {
      #expect(!field.isEmpty)
    }
    #expect(shown.messageSize == note.message.utf8.count)
    #expect(h.errors.isEmpty)
  }

  @Test func oneControlPointCommandAtATime() {
    var h = Harness()
    let a = Note.chat(1, "A", message: "first")
    let b = Note.chat(2, "B", message: "second")
    h.phone.add(a, b)
    #expect(h.connect() == [connected])
    #expect(h.feed(a.event()) == [fetch(1)])
    let first = h.lastWrite
    #expect(h.feed(b.event()) == [])
    #expect(h.feed(.written(nil)) == [])
    #expect(h.feed(.tick, at: seconds(1)) == [])
    #expect(
      h.run(Array(h.phone.answer(first).dropFirst())) == [appName(), added(a.shown()), fetch(2), added(b.shown())])
  }

  @Test func appNameIsFetchedOncePerAppAndKeptAcrossSessions() {
    var h = Harness()
    let chat1 = Note.chat(1, "one")
    let mail2 = Note(uid: 2, app: "com.example.mail", title: "two")
    let chat3 = Note.chat(3, "three")
    let mail4 = Note(uid: 4, app: "com.example.mail", title: "four")
    h.phone.add(chat1, mail2, chat3, mail4)
    #expect(h.connect() == [connected])
    #expect(
      h.run([chat1.event(), mail2.event(), chat3.event(), mail4.event()]) == [
        fetch(1), appName(), added(chat1.shown()), fetch(2), appName("com.example.mail"), added(mail2.shown("Mail")),
        fetch(3), added(chat3.shown()), fetch(4), added(mail4.shown("Mail")),
      ])
    // A new session: UIDs are void, the names are not.
    #expect(h.run(.sessionStarted(mtu: 23), at: seconds(5)) == [removed(1), removed(2), removed(3), removed(4)])
    let chat10 = Note.chat(10, "ten")
    let mail11 = Note(uid: 11, app: "com.example.mail", title: "eleven")
    h.phone.notes = [:]
    h.phone.add(chat10, mail11)
    #expect(
      h.run([chat10.event(), mail11.event()], at: seconds(6)) == [
        fetch(10), added(chat10.shown(at: seconds(6))), fetch(11), added(mail11.shown("Mail", at: seconds(6))),
      ])
    #expect(h.state.appNames == ["com.example.chat": "Chat", "com.example.mail": "Mail"])
  }

  @Test func unknownAppFallsBackToItsIdentifier() {
    var h = Harness()
    let note = Note(uid: 1, app: "com.example.gone", title: "orphan")
    h.phone.add(note)
    _ = h.connect()
    #expect(h.run(note.event()) == [fetch(1), appName("com.example.gone"), added(note.shown("com.example.gone"))])
    #expect(h.errors.isEmpty)
  }
}

// MARK: - Queue order and pre-existing notifications

@Suite struct WatchMachineQueueTests {
  private let old1 = Note(uid: 1, flags: [.preExisting], title: "old 1")
  private let old2 = Note(uid: 2, flags: [.preExisting], title: "old 2")
  private let old3 = Note(uid: 3, flags: [.preExisting], title: "old 3")
  private let old4 = Note(uid: 4, flags: [.preExisting], title: "old 4")

  @Test func newNotificationsAreFetchedBeforePreExistingOnes() {
    var h = Harness()
    let new5 = Note.chat(5, "new 5")
    let new6 = Note.chat(6, "new 6")
    h.phone.add(old1, old2, old3, new5, new6)
    #expect(h.feed([.sessionStarted(mtu: 23), old1.event(), old2.event(), new5.event()]) == [])
    #expect(
      h.run(.link(.connected("phone"))) == [
        connected, fetch(5), appName(), added(new5.shown()), fetch(1), added(old1.shown()), fetch(2),
        added(old2.shown()),
      ])
    // While a pre-existing one is in flight, a new one still goes before the rest.
    #expect(h.feed(old3.event()) == [fetch(3)])
    #expect(h.feed(old1.event(.removed)) == [removed(1)])
    #expect(h.feed(old2.event(.removed)) == [removed(2)])
    let old7 = Note(uid: 7, flags: [.preExisting], title: "old 7")
    h.phone.add(old7)
    #expect(h.feed(old7.event()) == [])
    #expect(h.feed(new6.event()) == [])
    #expect(h.answer() == [added(old3.shown()), fetch(6), added(new6.shown()), fetch(7), added(old7.shown())])
  }

  @Test func incomingCallJumpsTheQueue() {
    var h = Harness()
    let a = Note.chat(1, "A")
    let b = Note.chat(2, "B")
    let call = Note.call(3, from: "Bob")
    h.phone.add(a, b, call)
    _ = h.connect()
    #expect(h.feed(a.event()) == [fetch(1)])
    #expect(h.feed(b.event()) == [])
    #expect(h.feed(call.event()) == [])
    #expect(
      h.answer() == [
        appName(), added(a.shown()), fetch(3, call.flags), appName("com.apple.mobilephone"),
        added(call.shown("Phone")), fetch(2), added(b.shown()),
      ])
  }

  @Test func fetchAllFetchesEveryPreExistingNotificationInOrder() {
    var h = Harness { $0.preExisting = .fetchAll }
    h.phone.add(old1, old2, old3)
    #expect(h.feed([.sessionStarted(mtu: 23), old1.event(), old2.event(), old3.event()]) == [])
    #expect(
      h.run(.link(.connected("phone"))) == [
        connected, fetch(1), appName(), added(old1.shown()), fetch(2), added(old2.shown()), fetch(3),
        added(old3.shown()),
      ])
  }

  @Test func fetchNewestListsOlderOnesWithoutText() {
    var h = Harness { $0.preExisting = .fetchNewest(2) }
    let new5 = Note.chat(5, "new 5")
    h.phone.add(old1, old2, old3, old4, new5)
    #expect(h.feed([.sessionStarted(mtu: 23), old1.event(), old2.event()]) == [])
    #expect(h.feed(old3.event()) == [added(old1.unfetched())])
    #expect(h.feed(new5.event()) == [])
    #expect(h.feed(old4.event()) == [added(old2.unfetched())])
    #expect(
      h.run(.link(.connected("phone"))) == [
        connected, fetch(5), appName(), added(new5.shown()), fetch(3), added(old3.shown()), fetch(4),
        added(old4.shown()),
      ])
    #expect(h.state.notifications.map(\.uid) == [1, 2, 3, 5, 4])
    #expect(h.state.notifications.map(\.fetched) == [false, false, true, true, true])
  }

  @Test(arguments: [PreExistingPolicy.listOnly, .fetchNewest(0)])
  func listOnlyFetchesNoPreExistingNotification(policy: PreExistingPolicy) {
    var h = Harness { $0.preExisting = policy }
    let new3 = Note.chat(3, "new 3")
    h.phone.add(old1, old2, new3)
    #expect(h.feed(.sessionStarted(mtu: 23)) == [])
    #expect(h.feed(old1.event()) == [added(old1.unfetched())])
    #expect(h.feed(old2.event()) == [added(old2.unfetched())])
    #expect(h.run(.link(.connected("phone"))) == [connected])
    #expect(h.run(new3.event()) == [fetch(3), appName(), added(new3.shown())])
    // Listed ones are fetched when they change.
    #expect(h.run(old1.event(.modified)) == [fetch(1), .emit(.modified(old1.shown()))])
  }

  @Test func preExistingFlagCountsOnlyWithinTheWindow() {
    var h = Harness {
      $0.preExisting = .listOnly
      $0.preExistingWindow = .seconds(3)
    }
    h.phone.add(old1, old2, old3)
    #expect(h.connect(at: seconds(10)) == [connected])
    #expect(h.feed(old1.event(), at: seconds(13)) == [added(old1.unfetched(at: seconds(13)))])
    // Past the window the flag is not believed: a new notification, fetched.
    #expect(h.run(old2.event(), at: seconds(13.001)) == [fetch(2), appName(), added(old2.shown(at: seconds(13.001)))])
    // The window starts again with each session.
    #expect(h.run(.sessionStarted(mtu: 23), at: seconds(100)) == [removed(1), removed(2)])
    #expect(h.feed(old3.event(), at: seconds(102)) == [added(old3.unfetched(at: seconds(102)))])
    // A Modified event is never pre-existing.
    let modified4 = Note(uid: 4, flags: [.preExisting], title: "changed")
    h.phone.add(modified4)
    #expect(
      h.run(modified4.event(.modified), at: seconds(102)) == [fetch(4), added(modified4.shown(at: seconds(102)))])
  }
}

// MARK: - A call reported PreExisting (issue #14, 5)

@Suite struct WatchMachinePreExistingCallTests {
  /// An ongoing call comes back PreExisting, under a new UID, when the watch subscribes again
  /// (coredevices/PebbleOS commit 25cb2ee4a): it is still ringing, so it is fetched first,
  /// and even when old notifications are only listed.
  @Test(arguments: [PreExistingPolicy.fetchAll, .listOnly, .fetchNewest(0)])
  func aPreExistingCallIsFetchedFirst(policy: PreExistingPolicy) {
    var h = Harness { $0.preExisting = policy }
    let mail1 = Note(uid: 1, flags: [.preExisting], title: "mail 1")
    let mail2 = Note(uid: 2, flags: [.preExisting], title: "mail 2")
    var call = Note.call(9, from: "Bob")
    call.flags.insert(.preExisting)
    h.phone.add(mail1, mail2, call)
    #expect(h.feed(.sessionStarted(mtu: 185)) == [])
    let listed = policy == .fetchAll ? [] : [added(mail1.unfetched()), added(mail2.unfetched())]
    #expect(h.feed([mail1.event(), mail2.event(), call.event()]) == listed)
    let first = h.run(.link(.connected("phone")))
    #expect(first.prefix(2) == [connected, fetch(9, call.flags)], "\(first)")
    let shown = h.state.notifications.first { $0.uid == 9 }
    #expect(shown?.fetched == true && shown?.title == "Bob")
  }

  /// FAULT preexisting-call-queued: the call waits behind the old mails (and is not fetched
  /// at all when they are only listed).
  @Test func theFaultQueuesTheCallBehind() throws {
    var h = Harness { $0.faults = [.preexistingCallQueued] }
    let mail1 = Note(uid: 1, flags: [.preExisting], title: "mail 1")
    var call = Note.call(9, from: "Bob")
    call.flags.insert(.preExisting)
    h.phone.add(mail1, call)
    _ = h.feed(.sessionStarted(mtu: 185))
    _ = h.feed([mail1.event(), call.event()])
    #expect(h.run(.link(.connected("phone"))).prefix(2) == [connected, fetch(1)])
  }
}

// MARK: - Removal

@Suite struct WatchMachineRemovalTests {
  @Test func removedWhileItsFetchIsInFlightDiscardsTheLateAnswer() {
    var h = Harness()
    let a = Note.chat(1, "A", message: String(repeating: "long message ", count: 8))
    let b = Note.chat(2, "B")
    h.phone.add(a, b)
    _ = h.connect()
    #expect(h.feed(a.event()) == [fetch(1)])
    let answer = h.phone.answer(h.lastWrite)
    #expect(answer.count > 3)
    #expect(h.feed(b.event()) == [])
    #expect(h.feed(Array(answer[0...1])) == [])
    // Never announced: nothing to retract.
    #expect(h.feed(a.event(.removed)) == [])
    #expect(h.state.notifications.map(\.uid) == [2])
    // The rest of the answer arrives: no `added`, no app name fetched for it, the queue goes on.
    #expect(h.run(Array(answer[2...])) == [fetch(2), appName(), added(b.shown())])
    #expect(h.errors.isEmpty)
  }

  @Test func removedWhileWaitingForItsAppName() {
    var h = Harness()
    let a = Note.chat(1, "A")
    h.phone.add(a)
    _ = h.connect()
    #expect(h.feed(a.event()) == [fetch(1)])
    #expect(h.feed(h.phone.answer(h.lastWrite)) == [appName()])
    let appAnswer = h.phone.answer(h.lastWrite)
    #expect(h.feed(a.event(.removed)) == [])
    #expect(h.feed(appAnswer) == [])
    #expect(h.state.notifications == [])
    #expect(h.state.appNames == ["com.example.chat": "Chat"])
  }

  @Test func removedAfterAnnouncementIsReportedOnce() {
    var h = Harness()
    let a = Note.chat(1, "A")
    h.phone.add(a)
    _ = h.connect()
    #expect(h.run(a.event()) == [fetch(1), appName(), added(a.shown())])
    #expect(h.feed(a.event(.removed)) == [removed(1)])
    #expect(h.feed(a.event(.removed)) == [])
    #expect(h.feed(Note.chat(99, "").event(.removed)) == [])
    #expect(h.state.notifications == [])
  }
}

// MARK: - Control Point errors

@Suite struct WatchMachineErrorTests {
  @Test func invalidParameterDropsOnlyThatNotification() {
    var h = Harness()
    let a = Note.chat(1, "retracted")
    let b = Note.chat(2, "B")
    h.phone.add(b)
    _ = h.connect()
    #expect(h.run([a.event(), b.event()]) == [fetch(1), fetch(2), appName(), added(b.shown())])
    #expect(h.state.notifications.map(\.uid) == [2])
    #expect(h.errors.isEmpty)
  }

  @Test func burstWithRetractedUIDsKeepsEveryOtherNotification() {
    var h = Harness()
    let notes = (1...6).map { Note.chat(UInt32($0), "mail \($0)") }
    for note in notes where note.uid != 2 && note.uid != 5 { h.phone.add(note) }
    _ = h.connect()
    // No flush, no resubscribe, no probe: only the retracted ones are missing.
    #expect(
      h.run(notes.map { $0.event() }) == [
        fetch(1), appName(), added(notes[0].shown()), fetch(2), fetch(3), added(notes[2].shown()), fetch(4),
        added(notes[3].shown()), fetch(5), fetch(6), added(notes[5].shown()),
      ])
    #expect(h.state.notifications.map(\.uid) == [1, 3, 4, 6])
  }

  @Test func invalidParameterOnARefetchRetractsTheAnnouncedNotification() {
    var h = Harness()
    let a = Note.chat(1, "A")
    h.phone.add(a)
    _ = h.connect()
    #expect(h.run(a.event()) == [fetch(1), appName(), added(a.shown())])
    h.phone.notes[1] = nil
    #expect(h.run(a.event(.modified), at: seconds(1)) == [fetch(1), removed(1)])
    #expect(h.state.notifications == [])
  }

  @Test(arguments: [0xA0, 0xA1, 0xA3, 0x0E] as [UInt8])
  func otherErrorCodesAreReportedAndTheQueueGoesOn(code: UInt8) {
    var h = Harness()
    let a = Note.chat(1, "A")
    let b = Note.chat(2, "B")
    h.phone.add(a, b)
    h.phone.refusals[1] = code
    _ = h.connect()
    // A is listed without its text rather than hidden; the queue goes on.
    #expect(
      h.run([a.event(), b.event()]) == [fetch(1), .error, added(a.unfetched()), fetch(2), appName(), added(b.shown())])
    #expect(h.errors.count == 1)
    #expect(h.errors.first?.contains("UID 1") == true)
  }

  @Test func failedWriteIsReportedAndTheQueueGoesOn() {
    var h = Harness()
    let a = Note.chat(1, "A")
    let b = Note.chat(2, "B")
    h.phone.add(a, b)
    _ = h.connect()
    #expect(h.feed(a.event()) == [fetch(1)])
    #expect(h.feed(b.event()) == [])
    #expect(
      h.run(.writeFailed("ATT timeout")) == [.error, added(a.unfetched()), fetch(2), appName(), added(b.shown())])
    #expect(h.errors.first?.contains("ATT timeout") == true)
  }
}

// MARK: - Per-command timeout

@Suite struct WatchMachineTimeoutTests {
  private let a = Note.chat(1, "Hello", message: String(repeating: "never quite arrives. ", count: 5))
  private let b = Note.chat(2, "B", message: "fine")

  @Test func unansweredCommandTimesOutAndTheQueueGoesOn() {
    var h = Harness { $0.commandTimeout = .seconds(10) }
    h.phone.add(a, b)
    _ = h.connect()
    #expect(h.feed(a.event()) == [fetch(1)])
    #expect(h.feed(.written(nil)) == [])
    #expect(h.feed(b.event()) == [])
    #expect(h.feed(.tick, at: seconds(9.999)) == [])
    // Listed without text, then the next one.
    #expect(h.run(.tick, at: seconds(10)) == [.error, added(a.unfetched()), fetch(2), appName(), added(b.shown())])
    #expect(h.errors.first?.contains("not answered") == true)
  }

  @Test func partialAnswerEndingOnATupleBoundaryIsUsed() {
    var h = Harness()
    h.phone.add(a, b)
    _ = h.connect(mtu: 185)
    #expect(h.feed(a.event()) == [fetch(1)])
    let whole = h.phone.response(to: h.lastWrite).data
    let cut = 5 + (3 + a.app.utf8.count) + (3 + a.title.utf8.count)  // header, AppIdentifier, Title
    #expect(h.feed([.written(nil), .dataSource(Array(whole[..<cut]))]) == [])
    #expect(h.feed(b.event()) == [])
    #expect(h.feed(.tick, at: seconds(9.999)) == [])
    var partial = a.unfetched()
    partial.appIdentifier = a.app
    partial.appName = "Chat"
    partial.title = a.title
    partial.fetched = true
    #expect(h.run(.tick, at: seconds(10)) == [.error, appName(), added(partial), fetch(2), added(b.shown())])
    #expect(h.errors.first?.contains("incomplete") == true)
  }

  @Test func partialAnswerCutInsideATupleIsDropped() {
    var h = Harness()
    h.phone.add(a, b)
    _ = h.connect(mtu: 185)
    #expect(h.feed(a.event()) == [fetch(1)])
    let whole = h.phone.response(to: h.lastWrite).data
    let cut = 5 + (3 + a.app.utf8.count) + 3 + 2  // two bytes into the Title's value
    #expect(h.feed([.written(nil), .dataSource(Array(whole[..<cut])), b.event()]) == [])
    #expect(h.run(.tick, at: seconds(10)) == [.error, added(a.unfetched()), fetch(2), appName(), added(b.shown())])
  }

  @Test func strayFragmentsOfATimedOutCommandAreDropped() {
    var h = Harness()
    h.phone.add(a, b)
    _ = h.connect(mtu: 23)
    #expect(h.feed(a.event()) == [fetch(1)])
    let answerA = h.phone.answer(h.lastWrite)
    #expect(answerA.count > 4)
    #expect(h.feed(b.event()) == [])
    #expect(h.feed(Array(answerA[0...1])) == [])
    #expect(h.feed(.tick, at: seconds(10)) == [.error, added(a.unfetched()), fetch(2)])
    let answerB = h.phone.answer(h.lastWrite)
    #expect(h.feed(answerB[0]) == [])
    // The rest of the old answer arrives late: each fragment is dropped.
    for stray in answerA[2...] { #expect(h.feed(stray) == [.error]) }
    #expect(h.run(Array(answerB[1...])) == [appName(), added(b.shown(at: .zero))])
  }

  @Test func lateWholeAnswerToATimedOutCommandIsDropped() {
    var h = Harness()
    h.phone.add(a, b)
    _ = h.connect(mtu: 23)
    #expect(h.feed(a.event()) == [fetch(1)])
    let answerA = h.phone.answer(h.lastWrite)
    #expect(h.feed([answerA[0], b.event()]) == [])
    #expect(h.feed(.tick, at: seconds(10)) == [.error, added(a.unfetched()), fetch(2)])
    let answerB = h.phone.answer(h.lastWrite)
    #expect(h.feed(answerB[0]) == [])
    for stray in answerA.dropFirst() { #expect(h.feed(stray) == [.error]) }
    #expect(h.run(Array(answerB.dropFirst())) == [appName(), added(b.shown())])
  }

  @Test func answerTimeCountsFromTheWriteResponse() {
    var h = Harness { $0.commandTimeout = .seconds(10) }
    h.phone.add(b)
    _ = h.connect()
    #expect(h.feed(b.event()) == [fetch(2)])
    let answer = h.phone.answer(h.lastWrite)
    // A write not yet answered is the engine's to fail (`.writeFailed`), not the timer's.
    #expect(h.feed(.tick, at: seconds(11)) == [])
    // A slow Write Response: the answer that follows still gets its time.
    #expect(h.feed(answer[0], at: seconds(12)) == [])
    #expect(h.feed(.tick, at: seconds(12)) == [])
    #expect(h.run(Array(answer.dropFirst()), at: seconds(12)) == [appName(), added(b.shown())])
  }

  @Test func appNameTimeoutFallsBackToTheIdentifier() {
    var h = Harness()
    h.phone.add(b)
    _ = h.connect()
    #expect(h.feed(b.event()) == [fetch(2)])
    #expect(h.feed(h.phone.answer(h.lastWrite)) == [appName()])
    #expect(h.feed(.written(nil)) == [])
    #expect(h.feed(.tick, at: seconds(10)) == [.error, added(b.shown("com.example.chat"))])
  }
}

// MARK: - Data Source reassembly

@Suite struct WatchMachineReassemblyTests {
  private let note = Note(
    uid: 0x0102_0304, flags: [.positiveAction, .negativeAction], title: "Ünïcödé ✓", subtitle: "日本語",
    message: "Fragments split anywhere 😀 even inside a scalar", positive: "OK", negative: "Nope")

  @Test func responseSplitAtEveryBytePositionGivesTheSameNotification() {
    var phone = FakePhone()
    phone.add(note)
    let request = ControlPointCommand.getNotificationAttributes(
      .init(
        notificationUID: note.uid,
        attributes: [
          AttributeRequest(.appIdentifier), AttributeRequest(.positiveActionLabel),
          AttributeRequest(.negativeActionLabel), AttributeRequest(.title, maxLength: 65535),
          AttributeRequest(.subtitle, maxLength: 65535), AttributeRequest(.message, maxLength: 65535),
          AttributeRequest(.date), AttributeRequest(.messageSize),
        ]))
    let whole = phone.response(to: request.encoded()).data
    #expect(whole.count > 100)
    for split in 1..<whole.count {
      var h = Harness()
      h.phone = phone
      // The first part is a full notification at this MTU, as a phone sends it.
      _ = h.connect(mtu: split + 3)
      #expect(h.feed(note.event()) == [.write(request)])
      #expect(h.feed(.written(nil)) == [])
      #expect(h.feed(.dataSource(Array(whole[..<split]))) == [], "split at \(split)")
      #expect(h.feed(.dataSource(Array(whole[split...]))) == [appName()], "split at \(split)")
      #expect(h.answer() == [added(note.shown())], "split at \(split)")
      #expect(h.errors.isEmpty, "split at \(split)")
    }
  }

  @Test func appAnswerSplitAtEveryBytePositionGivesTheSameName() {
    // The moment the app's name is asked for; the machine is a value, so each split starts from a copy.
    var base = Harness()
    base.phone.add(note)
    _ = base.connect(mtu: 517)
    #expect(base.feed(note.event()) == [fetch(note.uid, note.flags)])
    #expect(base.feed(base.phone.answer(base.lastWrite)) == [appName()])
    let whole = base.phone.response(to: base.lastWrite).data
    for split in 1..<whole.count {
      var h = base
      #expect(h.feed([.written(nil), .dataSource(Array(whole[..<split]))]) == [], "split at \(split)")
      #expect(h.feed(.dataSource(Array(whole[split...]))) == [added(note.shown())], "split at \(split)")
    }
  }

  @Test func tuplesInReverseOrder() {
    var h = Harness()
    h.phone.add(note)
    h.phone.reversed = true
    _ = h.connect()
    #expect(h.run(note.event()) == [fetch(note.uid, note.flags), appName(), added(note.shown())])
    #expect(h.errors.isEmpty)
  }

  @Test(arguments: [[4], [6], [7], [6, 7], [4, 6, 7]] as [[UInt8]])
  func omittedOptionalTuplesCompleteOnAShortFragment(omitted: [UInt8]) {
    var h = Harness()
    h.phone.add(note)
    h.phone.omitted = Set(omitted.map(NotificationAttributeID.init(rawValue:)))
    _ = h.connect(mtu: 23)
    #expect(h.feed(note.event()) == [fetch(note.uid, note.flags)])
    let answer = h.phone.answer(h.lastWrite)
    #expect(h.phone.response(to: h.lastWrite).data.count % 20 != 0, "the last fragment is short")
    var expected = note.shown()
    if omitted.contains(4) { expected.messageSize = nil }
    if omitted.contains(6) { expected.positiveActionLabel = "" }
    if omitted.contains(7) { expected.negativeActionLabel = "" }
    // Complete without any tick.
    #expect(h.run(answer) == [appName(), added(expected)])
    #expect(h.errors.isEmpty)
  }

  /// An answer without MessageSize that fills exactly one notification: the phone might
  /// have more to say. Returns what the watch should show once the answer is taken as whole.
  private func answerFillingOneNotification(_ h: inout Harness) -> WatchNotification {
    h.phone.add(note)
    h.phone.omitted = [.messageSize]
    let request = fetch(note.uid, note.flags)
    guard case .write(let command) = request else { return note.shown() }
    let whole = h.phone.response(to: command.encoded()).data
    _ = h.connect(mtu: whole.count + 3)
    #expect(h.feed(note.event()) == [request])
    #expect(h.feed([.written(nil), .dataSource(whole)]) == [])
    var expected = note.shown()
    expected.messageSize = nil
    return expected
  }

  /// The phone may be done or may have more: after `answerSettle` without more, the answer
  /// is whole, with no error (the command timeout is for answers that stop inside a tuple).
  @Test func omittedOptionalTupleOnAFullFragmentIsTakenAfterTheSettleTime() {
    var h = Harness()
    let expected = answerFillingOneNotification(&h)
    #expect(h.feed(.tick, at: seconds(0.999)) == [])
    #expect(h.run(.tick, at: seconds(1)) == [appName(), added(expected)])
    #expect(h.errors.isEmpty)
  }

  /// Issue #13 (1): a phone that chunks below ATT_MTU - 3 (`chunk20`). Wherever a 20-byte
  /// chunk ends on a tuple boundary, MessageSize after it is waited for: the chunks before
  /// it show that 20 bytes is not the phone's last notification.
  @Test(arguments: 0..<24)
  func chunksBelowTheMTUEndingOnATupleBoundaryAreNotTheLast(titleLength: Int) {
    var h = Harness()
    var long = Note.chat(1, String(repeating: "t", count: titleLength), message: "A long message é 日本語 🚄 in chunks")
    long.subtitle = "sub"
    h.phone.add(long)
    h.phone.chunk = 20
    _ = h.connect(mtu: 185)
    #expect(h.run(long.event()) == [fetch(1), appName(), added(long.shown())])
    #expect(h.errors.isEmpty, "\(h.errors)")
  }

  /// A phone that fills fewer bytes than ATT_MTU - 3 and whose first notification ends
  /// exactly where only MessageSize is left: nothing yet shows that it chunks, so the answer
  /// is taken as whole; the continuation that follows fills in MessageSize instead of being
  /// dropped as a stray, and the next answers wait for it.
  @Test func aContinuationAfterAnAnswerTakenAsWholeIsAdded() {
    var h = Harness()
    let first = Note.chat(1, "first", message: "hello")
    let second = Note.chat(2, "second", message: "hello")
    h.phone.add(first, second)
    _ = h.connect(mtu: 185)
    #expect(h.feed(first.event()) == [fetch(1)])
    let whole = h.phone.response(to: h.lastWrite).data
    let withoutSize = whole.count - (3 + "5".utf8.count)
    h.phone.chunk = withoutSize
    #expect(h.run(h.phone.answer(h.lastWrite)) == [appName(), added(first.shown())])
    #expect(h.errors.isEmpty, "\(h.errors)")
    // The phone's fill size is learned: the next answer that stops at that size waits.
    #expect(h.run(second.event()) == [fetch(2), added(second.shown())])
    #expect(h.errors.isEmpty, "\(h.errors)")
    // A new session starts from ATT_MTU - 3 again; the app's name is known, so the early
    // answer is shown at once, then completed.
    let third = Note.chat(3, "third", message: "hello")
    h.phone.notes = [3: third]
    _ = h.connect(mtu: 185)
    var early = third.shown()
    early.messageSize = nil
    #expect(h.run(third.event()) == [fetch(3), added(early), .emit(.modified(third.shown()))])
    #expect(h.errors.isEmpty, "\(h.errors)")
  }

  /// Field problem 13: a phone that adds an empty notification after an answer that filled
  /// its last notification exactly. The empty one ends the answer at once.
  @Test func emptyPacketAfterAFullFragmentEndsTheAnswer() {
    var h = Harness()
    let expected = answerFillingOneNotification(&h)
    #expect(h.run(.dataSource([])) == [appName(), added(expected)])
    #expect(h.errors.isEmpty)
  }

  @Test func emptyDataSourcePacketsAreHarmless() {
    var h = Harness()
    h.phone.add(note)
    _ = h.connect()
    #expect(h.feed(.dataSource([])) == [])
    #expect(h.feed(note.event()) == [fetch(note.uid, note.flags)])
    #expect(h.feed(.dataSource([])) == [])
    let inputs = h.phone.answer(h.lastWrite).flatMap { [$0, .dataSource([])] }
    #expect(h.feed(inputs) == [appName()])
    let appInputs = h.phone.answer(h.lastWrite).flatMap { [.dataSource([]), $0] }
    #expect(h.feed(appInputs) == [added(note.shown())])
    #expect(h.feed(.dataSource([])) == [])
    #expect(h.errors.isEmpty)
  }

  @Test func overLongValuesAreAccepted() {
    var h = Harness {
      $0.titleMaximum = 8
      $0.messageMaximum = 16
    }
    let long = Note.chat(
      1, "A title far longer than eight bytes", message: String(repeating: "much more than 16 ", count: 4))
    h.phone.add(long)
    h.phone.ignoresMaximum = true
    _ = h.connect()
    #expect(h.run(long.event()) == [fetch(1, title: 8, message: 16), appName(), added(long.shown())])
    #expect(h.errors.isEmpty)
  }

  @Test(arguments: [23, 24, 50, 185, 517])
  func longMessagesArriveWholeAtEveryMTU(mtu: Int) {
    var h = Harness()
    let long = Note.chat(1, "long", message: String(repeating: "aé€😀", count: 100))
    h.phone.add(long)
    _ = h.connect(mtu: mtu)
    #expect(h.run(long.event()) == [fetch(1), appName(), added(long.shown())])
    #expect(h.errors.isEmpty)
  }
}

// MARK: - Notification Source

@Suite struct WatchMachineNotificationSourceTests {
  private let a = Note.chat(1, "A")

  @Test(arguments: [0, 7, 9])
  func malformedEventIsReportedAndTheMachineKeepsWorking(length: Int) {
    var h = Harness()
    h.phone.add(a)
    _ = h.connect()
    guard case .notificationSource(let valid) = a.event() else { return }
    let bytes = length <= 8 ? Array(valid.prefix(length)) : valid + [UInt8](repeating: 0, count: length - 8)
    #expect(h.feed(.notificationSource(bytes)) == [.error])
    #expect(h.state.notifications == [])
    #expect(h.run(a.event()) == [fetch(1), appName(), added(a.shown())])
  }

  @Test(arguments: [3, 255] as [UInt8])
  func unknownEventIDIsReportedAndIgnored(eventID: UInt8) {
    var h = Harness()
    h.phone.add(a)
    _ = h.connect()
    #expect(h.feed(a.event(EventID(rawValue: eventID))) == [.error])
    #expect(h.errors.first?.contains("EventID \(eventID)") == true)
    #expect(h.state.notifications == [])
    #expect(h.run(a.event()) == [fetch(1), appName(), added(a.shown())])
  }

  @Test func unknownCategoryIsKept() {
    var h = Harness()
    let odd = Note(uid: 1, category: 200, title: "future")
    h.phone.add(odd)
    _ = h.connect()
    #expect(h.run(odd.event()) == [fetch(1), appName(), added(odd.shown())])
    #expect(h.state.notifications.first?.category == 200)
    #expect(h.errors.isEmpty)
  }

  @Test func malformedEventDuringAFetchDoesNotDisturbIt() {
    var h = Harness()
    h.phone.add(a)
    _ = h.connect()
    #expect(h.feed(a.event()) == [fetch(1)])
    let answer = h.phone.answer(h.lastWrite)
    #expect(h.feed(.notificationSource([0, 0, 0])) == [.error])
    #expect(h.run(answer) == [appName(), added(a.shown())])
  }
}

// MARK: - Modified

@Suite struct WatchMachineModifiedTests {
  private let a = Note.chat(1, "A", message: "first version")

  private func edited() -> Note {
    var b = a
    b.title = "A, edited"
    b.message = "second version"
    b.flags = [.important, .positiveAction]
    b.positive = "Reply"
    return b
  }

  @Test(arguments: [EventID.modified, .added])
  func changeIsFetchedAgainAndReportedAsModified(eventID: EventID) {
    var h = Harness()
    h.phone.add(a)
    _ = h.connect()
    #expect(h.run(a.event()) == [fetch(1), appName(), added(a.shown())])
    let b = edited()
    h.phone.add(b)
    // Flags come from the new event; receivedAt stays the first report's.
    #expect(h.run(b.event(eventID), at: seconds(5)) == [fetch(1, b.flags), .emit(.modified(b.shown()))])
    #expect(h.state.notifications == [b.shown()])
  }

  @Test func modifiedForAnUnknownUIDIsFetchedAsNew() {
    var h = Harness()
    h.phone.add(a)
    _ = h.connect()
    #expect(h.run(a.event(.modified)) == [fetch(1), appName(), added(a.shown())])
  }

  @Test func modifiedWhileTheFirstFetchIsInFlight() {
    var h = Harness()
    h.phone.add(a)
    _ = h.connect()
    #expect(h.feed(a.event()) == [fetch(1)])
    let first = h.phone.answer(h.lastWrite)
    let b = edited()
    h.phone.add(b)
    #expect(h.feed(b.event(.modified)) == [])
    var firstShown = a.shown()
    firstShown.flags = b.flags
    #expect(h.run(first) == [appName(), added(firstShown), fetch(1, b.flags), .emit(.modified(b.shown()))])
  }
}

// MARK: - Actions

@Suite struct WatchMachineActionTests {
  private let a = Note(uid: 1, flags: [.positiveAction], title: "A", positive: "Reply")
  private let b = Note.chat(2, "B")
  private let c = Note.chat(3, "C")

  @Test func performGoesBeforeQueuedFetches() {
    var h = Harness()
    h.phone.add(a, b, c)
    _ = h.connect()
    #expect(h.run(a.event()) == [fetch(1, a.flags), appName(), added(a.shown())])
    #expect(h.feed(b.event()) == [fetch(2)])
    #expect(h.feed(c.event()) == [])
    #expect(h.feed(.perform(uid: 1, action: .positive, session: h.state.session)) == [])
    #expect(
      h.answer() == [
        added(b.shown()), act(1, .positive), .emit(.action(uid: 1, action: .positive)), fetch(3), added(c.shown()),
      ])
  }

  @Test func refusedActionIsReported() {
    var h = Harness()
    h.phone.add(a, b)
    _ = h.connect()
    #expect(h.run(b.event()) == [fetch(2), appName(), added(b.shown())])
    #expect(h.run(.perform(uid: 2, action: .positive, session: h.state.session)) == [act(2, .positive), .error])
    #expect(h.errors.last?.contains("actionFailed") == true)
    #expect(h.run(.perform(uid: 99, action: .negative, session: h.state.session)) == [act(99, .negative), .error])
    #expect(h.errors.last?.contains("invalidParameter") == true)
    // The machine still works.
    #expect(
      h.run(.perform(uid: 1, action: .positive, session: h.state.session)) == [
        act(1, .positive), .emit(.action(uid: 1, action: .positive)),
      ])
  }

  @Test func performWaitsForTheLink() {
    var h = Harness()
    h.phone.add(a)
    #expect(h.feed(.sessionStarted(mtu: 23)) == [])
    #expect(h.feed(.perform(uid: 1, action: .positive, session: h.state.session)) == [])
    #expect(
      h.run(.link(.connected("phone"))) == [connected, act(1, .positive), .emit(.action(uid: 1, action: .positive))])
  }

  /// An action whose Write Response never comes is reported, so the wearer knows it may
  /// not have happened: when the link drops, when the write fails, when it times out.
  @Test(arguments: [
    WatchMachine.Input.link(.reconnecting(attempt: 1, retryIn: .seconds(1), reason: "link lost")),
    .writeFailed("ATT timeout"), .tick,
  ])
  func unconfirmedActionIsReported(_ loss: WatchMachine.Input) {
    var h = Harness()
    h.phone.add(a)
    _ = h.connect()
    #expect(h.run(a.event()) == [fetch(1, a.flags), appName(), added(a.shown())])
    #expect(h.feed(.perform(uid: 1, action: .negative, session: h.state.session)) == [act(1, .negative)])
    let steps = h.feed(loss, at: seconds(11))
    #expect(steps.contains(.error), "\(steps)")
    #expect(h.errors.contains("negative action on UID 1 not confirmed by the phone"), "\(h.errors)")
  }

  /// The wearer acted on what the old session showed, but the action reaches the machine
  /// after a new session began (the engine's inputs come from several places): the UID is
  /// void, so the action is dropped and said so, never performed on the new session's UID.
  @Test func actionAskedInAnEndedSessionIsDropped() {
    var h = Harness()
    h.phone.add(a)
    _ = h.connect()
    #expect(h.run(a.event()) == [fetch(1, a.flags), appName(), added(a.shown())])
    let shown = h.state.session
    _ = h.feed(.link(.reconnecting(attempt: 0, retryIn: .zero, reason: "link lost")), at: seconds(1))
    let other = Note(uid: 1, flags: [.positiveAction], title: "someone else", positive: "Delete")
    h.phone.notes = [1: other]
    #expect(h.feed(.sessionStarted(mtu: 23), at: seconds(2)) == [removed(1)])
    #expect(h.state.session == shown + 1)
    #expect(h.feed(.perform(uid: 1, action: .positive, session: shown)) == [.error])
    #expect(h.errors.last == "positive action on UID 1 dropped: its session ended")
    // Nothing is written for it once the link is back.
    #expect(h.run(.link(.connected("phone"))) == [connected])
  }

  @Test func pendingActionIsNotCarriedIntoANewSession() {
    var h = Harness()
    h.phone.add(a)
    _ = h.connect()
    #expect(h.run(a.event()) == [fetch(1, a.flags), appName(), added(a.shown())])
    #expect(
      h.feed(.link(.reconnecting(attempt: 1, retryIn: .seconds(1), reason: "link lost")), at: seconds(1)) == [
        .emit(.disconnected(reason: "link lost"))
      ])
    #expect(h.feed(.perform(uid: 1, action: .positive, session: h.state.session)) == [])
    #expect(h.feed(.link(.connecting), at: seconds(2)) == [])
    // In the new session UID 1 is somebody else's notification.
    let other = Note(uid: 1, flags: [.positiveAction], title: "someone else", positive: "Delete")
    h.phone.notes = [1: other]
    #expect(h.feed(.sessionStarted(mtu: 23), at: seconds(3)) == [removed(1), .error])
    #expect(h.feed(other.event()) == [])
    #expect(
      h.run(.link(.connected("phone"))) == [connected, fetch(1, other.flags), added(other.shown(at: seconds(3)))])
  }
}

// MARK: - Liveness

@Suite struct WatchMachineLivenessTests {
  fileprivate let probe: [Step] = [.probe]

  @Test func silenceYieldsExactlyOneProbe() {
    // The sharing check of a quiet session has tests of its own (WatchMachineSharingTests).
    var h = Harness {
      $0.livenessInterval = .seconds(30)
      $0.sharingCheckDelay = .seconds(1000)
    }
    #expect(h.connect() == [connected])
    #expect(h.feed(.tick, at: seconds(29.999)) == [])
    #expect(h.feed(.tick, at: seconds(30)) == probe)
    #expect(h.feed(.tick, at: seconds(31)) == [])
    #expect(h.feed(.tick, at: seconds(90)) == [])
    // Still subscribed, yet silent: does the phone still share? (WatchMachineSharingTests)
    #expect(h.feed(.probed(subscribed: true), at: seconds(91)) == [WatchMachineSharingTests.sharingCheck])
    #expect(h.feed(.written(0xA2)) == [])
    #expect(h.feed(.tick, at: seconds(91)) == [])
    #expect(h.feed(.tick, at: seconds(120.999)) == [])
    #expect(h.feed(.tick, at: seconds(121)) == probe)
  }

  @Test func droppedSubscriptionsAreRenewed() {
    var h = Harness()
    let a = Note.chat(1, "A")
    h.phone.add(a)
    _ = h.connect()
    #expect(h.run(a.event()) == [fetch(1), appName(), added(a.shown())])
    #expect(h.feed(.tick, at: seconds(30)) == probe)
    #expect(h.feed(.probed(subscribed: false), at: seconds(31)) == [.error, .resubscribe])
    // The engine writes the CCCDs again and a new session begins.
    #expect(h.feed(.sessionStarted(mtu: 23), at: seconds(32)) == [removed(1)])
    let again = Note(uid: 1, flags: [.preExisting], title: "A", subtitle: "re: A")
    h.phone.add(again)
    #expect(h.run(again.event()) == [fetch(1), added(again.shown(at: seconds(32)))])
    #expect(h.feed(.tick, at: seconds(61.999)) == [])
  }

  /// coredevices/PebbleOS#1348: a phone can answer the Control Point and read subscribed
  /// while its Notification Source has gone silent. After `resubscribeAfterSilence` without
  /// an event the watch writes the CCCDs again, once per silence; any event puts it off.
  @Test func aLongSilenceRewritesTheSubscriptions() {
    var h = Harness {
      $0.livenessInterval = .seconds(100_000)
      $0.sharingCheckDelay = .seconds(100_000)
      $0.resubscribeAfterSilence = .seconds(600)
    }
    _ = h.connect()
    #expect(h.feed(Note.chat(99, "").event(.removed), at: seconds(100)) == [])
    #expect(h.feed(.tick, at: seconds(699.999)) == [])
    #expect(h.feed(.tick, at: seconds(700)) == [.error, .resubscribe])
    #expect(h.errors.last == "no Notification Source event for 600.0 seconds; writing the subscriptions again")
    #expect(h.feed(.tick, at: seconds(701)) == [])
    // The engine writes the CCCDs again: a new session, whose silence counts from its start.
    #expect(h.feed(.sessionStarted(mtu: 23), at: seconds(702)) == [])
    #expect(h.feed(.tick, at: seconds(1301.999)) == [])
    #expect(h.feed(.tick, at: seconds(1302)) == [.error, .resubscribe])
  }

  /// Not while the phone says it does not share (it sends nothing then), and never with the
  /// fault no-silence-resubscribe.
  @Test func noRewriteWhileNotSharedNorWithTheFault() {
    var h = Harness {
      $0.livenessInterval = .seconds(100_000)
      $0.resubscribeAfterSilence = .seconds(600)
    }
    _ = h.connect()
    #expect(h.feed(.tick, at: seconds(2)) == [WatchMachineSharingTests.sharingCheck])
    #expect(h.feed(.written(0x03)) == [.emit(.sharing(allowed: false))])
    for minute in 1...20 {
      #expect(!h.feed(.tick, at: seconds(Double(minute * 60))).contains(.resubscribe))
    }
    var faulty = Harness {
      $0.livenessInterval = .seconds(100_000)
      $0.sharingCheckDelay = .seconds(100_000)
      $0.resubscribeAfterSilence = .seconds(600)
      $0.faults = [.noSilenceResubscribe]
    }
    _ = faulty.connect()
    #expect(faulty.feed(.tick, at: seconds(86_400)) == [])
  }

  @Test func trafficPostponesTheProbe() {
    var h = Harness()
    _ = h.connect()
    #expect(h.feed(Note.chat(99, "").event(.removed), at: seconds(20)) == [])
    #expect(h.feed(.tick, at: seconds(30)) == [])
    #expect(h.feed(.tick, at: seconds(49.999)) == [])
    #expect(h.feed(.tick, at: seconds(50)) == probe)
  }

  @Test func noProbeWithoutTheLink() {
    var h = Harness { $0.sharingCheckDelay = .seconds(1000) }
    #expect(h.feed(.sessionStarted(mtu: 23)) == [])
    #expect(h.feed(.tick, at: seconds(100)) == [])
    _ = h.connect(at: seconds(100))
    #expect(h.feed(.tick, at: seconds(130)) == probe)
    // The link drops while the probe is out: no answer will come.
    #expect(
      h.feed(.link(.reconnecting(attempt: 1, retryIn: .seconds(1), reason: "gone")), at: seconds(131)) == [
        .emit(.disconnected(reason: "gone"))
      ])
    #expect(h.feed(.tick, at: seconds(500)) == [])
    _ = h.connect(at: seconds(600))
    #expect(h.feed(.tick, at: seconds(630)) == probe)
  }
}

// MARK: - Notification sharing

/// A phone that does not share its notifications (iOS 13's "Allow") answers every Control
/// Point write with Write Not Permitted and sends no event.
@Suite struct WatchMachineSharingTests {
  fileprivate static let sharingCheck = check(0xFFFF_FFFF)

  @Test func aQuietSessionIsCheckedAndASharingPhoneIsNoNews() {
    var h = Harness()
    #expect(h.connect() == [connected])
    #expect(h.feed(.tick, at: seconds(1.999)) == [])
    #expect(h.feed(.tick, at: seconds(2)) == [Self.sharingCheck])
    // 0xA2: the phone took the command, it shares (and has no such notification).
    #expect(h.feed(.written(0xA2)) == [])
    #expect(h.state.sharingAllowed == true)
    #expect(h.feed(.tick, at: seconds(20)) == [])
  }

  @Test func aSessionWithEventsIsNeverChecked() {
    var h = Harness()
    let a = Note.chat(1, "A")
    h.phone.add(a)
    _ = h.connect()
    #expect(h.run(a.event(), at: seconds(0.5)) == [fetch(1), appName(), added(a.shown(at: seconds(0.5)))])
    #expect(h.feed(.tick, at: seconds(5)) == [])
  }

  @Test func writeNotPermittedMeansNotSharedUntilEventsCome() {
    var h = Harness()
    _ = h.connect()
    #expect(h.feed(.tick, at: seconds(2)) == [Self.sharingCheck])
    #expect(h.feed(.written(0x03)) == [.emit(.sharing(allowed: false))])
    #expect(h.state.sharingAllowed == false)
    // Checked again after the recheck interval, not before.
    #expect(h.feed(.tick, at: seconds(11.999)) == [])
    #expect(h.feed(.tick, at: seconds(12)) == [Self.sharingCheck])
    #expect(h.feed(.written(0x03)) == [])
    // The user allows the watch: the phone's report arrives, and is fetched.
    let a = Note(uid: 4, flags: [.preExisting], title: "A")
    h.phone.add(a)
    #expect(
      h.run(a.event(), at: seconds(15)) == [
        .emit(.sharing(allowed: true)), fetch(4), appName(), added(a.shown(at: seconds(15))),
      ])
  }

  /// A silent phone that still reads subscribed may have stopped sharing: after the liveness
  /// probe the watch asks the Control Point.
  @Test func aSilentSubscribedPhoneIsAskedWhetherItStillShares() {
    var h = Harness()
    let a = Note.chat(1, "A")
    h.phone.add(a)
    _ = h.connect()
    _ = h.run(a.event(), at: seconds(1))
    #expect(h.feed(.tick, at: seconds(31)) == [.probe])
    #expect(h.feed(.probed(subscribed: true)) == [Self.sharingCheck])
    #expect(h.feed(.written(0x03)) == [.emit(.sharing(allowed: false))])
    // No further probe's check while known not shared: the recheck timer does it.
    #expect(h.feed(.tick, at: seconds(40.999)) == [])
    #expect(h.feed(.tick, at: seconds(41)) == [Self.sharingCheck])
  }

  /// Revoked mid-session: the fetch refused with 0x03 is kept for later; once the phone
  /// shares again, a new session (the phone's events of the revoked time are lost).
  @Test func revokedMidSessionStartsANewSessionOnceSharedAgain() {
    var (h, _) = Self.revokedMidSession()
    #expect(h.feed(.tick, at: seconds(15)) == [])
    #expect(h.feed(.tick, at: seconds(20)) == [Self.sharingCheck])
    #expect(h.feed(.written(0xA2)) == [.emit(.sharing(allowed: true)), .resubscribe])
  }

  /// Sharing comes back with a Removed event: the new session is started, and the removal
  /// is applied at once rather than left on the face until the new session's report.
  @Test func aRemovalThatBringsSharingBackIsApplied() {
    var (h, a) = Self.revokedMidSession()
    #expect(h.feed(a.event(.removed), at: seconds(12)) == [.emit(.sharing(allowed: true)), .resubscribe, removed(1)])
    #expect(h.state.notification(1) == nil)
  }

  /// A is shown; at 10 s the fetch of B is refused Write Not Permitted: sharing revoked.
  private static func revokedMidSession() -> (Harness, Note) {
    var h = Harness()
    let a = Note.chat(1, "A")
    let b = Note.chat(2, "B")
    h.phone.add(a)
    _ = h.connect()
    _ = h.run(a.event(), at: seconds(1))
    #expect(h.feed(b.event(), at: seconds(10)) == [fetch(2)])
    #expect(h.feed(.written(0x03)) == [.emit(.sharing(allowed: false))])
    return (h, a)
  }
}

// MARK: - Incoming-call recheck

@Suite struct WatchMachineCallRecheckTests {
  @Test func ringingCallIsRecheckedAndRemovedWhenGone() {
    var h = Harness { $0.callRecheckInterval = .seconds(20) }
    let call = Note.call(9, from: "Bob")
    h.phone.add(call)
    _ = h.connect()
    #expect(
      h.run(call.event()) == [fetch(9, call.flags), appName("com.apple.mobilephone"), added(call.shown("Phone"))])
    #expect(h.feed(.tick, at: seconds(19.999)) == [])
    // Still ringing: the check is answered and nothing changes.
    #expect(h.run(.tick, at: seconds(20)) == [check(9)])
    #expect(h.feed(.tick, at: seconds(39.999)) == [])
    // The call ended and its Removed event was lost (field problem 8).
    h.phone.notes[9] = nil
    #expect(h.run(.tick, at: seconds(40)) == [check(9), removed(9)])
    #expect(h.state.notifications == [])
    #expect(h.run(.tick, at: seconds(60)) == [])
  }

  @Test func otherNotificationsAreNotRechecked() {
    var h = Harness()
    let a = Note.chat(1, "A")
    h.phone.add(a)
    _ = h.connect()
    #expect(h.run(a.event()) == [fetch(1), appName(), added(a.shown())])
    #expect(h.feed(.tick, at: seconds(20)) == [])
    #expect(h.feed(.tick, at: seconds(29)) == [])
  }
}

// MARK: - Sessions and the link

@Suite struct WatchMachineSessionTests {
  private let a = Note.chat(1, "A")
  private let b = Note.chat(2, "B")
  private let c = Note.chat(3, "C")

  @Test func newSessionRetractsEveryAnnouncedNotification() {
    var h = Harness()
    h.phone.add(a, b, c)
    _ = h.connect()
    #expect(h.run([c.event(), a.event()]) == [fetch(3), appName(), added(c.shown()), fetch(1), added(a.shown())])
    #expect(h.feed(b.event()) == [fetch(2)])
    let late = h.phone.answer(h.lastWrite)
    #expect(h.feed(.sessionStarted(mtu: 23), at: seconds(5)) == [removed(1), removed(3)])
    #expect(h.state.notifications == [])
    #expect(h.state.appNames == ["com.example.chat": "Chat"])
    // The old session's answer, arriving late, is taken for nothing.
    #expect(h.feed(late[0]) == [])
    for fragment in late.dropFirst() { #expect(h.feed(fragment) == [.error]) }
    #expect(h.state.notifications == [])
  }

  @Test func linkLossReportsDisconnectedAndHoldsEveryWrite() {
    var h = Harness()
    h.phone.add(a, b, c)
    _ = h.connect()
    #expect(h.run(a.event()) == [fetch(1), appName(), added(a.shown())])
    #expect(h.feed(b.event()) == [fetch(2)])
    let lost = WatchMachine.Input.link(.reconnecting(attempt: 1, retryIn: .seconds(1), reason: "supervision timeout"))
    #expect(h.feed(lost, at: seconds(1)) == [.emit(.disconnected(reason: "supervision timeout"))])
    #expect(h.state.link == .reconnecting(attempt: 1, retryIn: .seconds(1), reason: "supervision timeout"))
    #expect(h.feed(c.event()) == [])
    #expect(h.feed(.tick, at: seconds(100)) == [])
    #expect(h.feed(.link(.connecting)) == [])
    #expect(h.feed(.link(.reconnecting(attempt: 2, retryIn: .seconds(2), reason: "refused"))) == [])
    #expect(h.feed(.link(.connecting), at: seconds(102)) == [])
    // A new session: the phone reports what it still has.
    let c2 = Note(uid: 3, flags: [.preExisting], title: "C", subtitle: "re: C")
    #expect(h.feed([.sessionStarted(mtu: 23), c2.event()]) == [removed(1)])
    #expect(h.run(.link(.connected("phone"))) == [connected, fetch(3), added(c2.shown(at: seconds(102)))])
  }

  @Test func stoppingAfterConnectionReportsDisconnected() {
    var h = Harness()
    #expect(h.feed(.link(.reconnecting(attempt: 1, retryIn: .seconds(1), reason: "no phone"))) == [])
    #expect(h.feed(.link(.stopped)) == [])
    _ = h.connect()
    #expect(h.feed(.link(.stopped)) == [.emit(.disconnected(reason: "stopped"))])
    #expect(h.state.link == .stopped)
  }
}

// MARK: - Current Time and battery

@Suite struct WatchMachinePhoneStatusTests {
  /// Issue #13 (12): after a reconnect the phone reports what it had as PreExisting; their
  /// age counts from their Date on the phone's clock, not from the new session's start.
  @Test func preExistingNotificationsKeepTheirAgeFromTheirDate() {
    var h = Harness()
    var old = Note.chat(1, "old", flags: [.preExisting])
    old.date = "20250615T160837"  // ten minutes before the phone's time below
    var fresh = Note.chat(2, "fresh")
    fresh.date = "20250615T160837"  // not PreExisting: its age counts from its arrival
    h.phone.add(old, fresh)
    _ = h.feed(.currentTime([0xE9, 0x07, 6, 15, 16, 18, 37, 7, 0, 0]), at: seconds(100))
    _ = h.connect(at: seconds(100))
    _ = h.run([old.event(), fresh.event()])
    #expect(h.state.notification(1)?.receivedAt == seconds(100 - 600))
    #expect(h.state.notification(2)?.receivedAt == seconds(100))
  }

  @Test func currentTimeSetsTheClock() {
    var h = Harness()
    let date = ANCSDate(year: 2025, month: 6, day: 15, hour: 16, minute: 18, second: 37)
    #expect(h.feed(.currentTime([0xE9, 0x07, 6, 15, 16, 18, 37, 7, 0, 0]), at: seconds(5)) == [.emit(.time(date))])
    #expect(h.state.time?.date == date)
    #expect(h.state.time?.receivedAt == seconds(5))
    // Seven bytes (no day of week, fractions or reason) are enough.
    let later = ANCSDate(year: 2025, month: 6, day: 15, hour: 16, minute: 20, second: 0)
    #expect(h.feed(.currentTime([0xE9, 0x07, 6, 15, 16, 20, 0]), at: seconds(6)) == [.emit(.time(later))])
    #expect(h.state.time?.date == later)
    #expect(h.state.time?.receivedAt == seconds(6))
  }

  @Test(
    arguments: [
      [], [0xE9, 0x07, 6, 15, 16, 18], [0xE9, 0x07, 0, 15, 16, 18, 37], [0xE9, 0x07, 13, 15, 16, 18, 37],
      [0xE9, 0x07, 6, 0, 16, 18, 37], [0xE9, 0x07, 6, 31, 16, 18, 37], [0xE9, 0x07, 2, 29, 16, 18, 37],
      [0xE9, 0x07, 6, 15, 24, 18, 37], [0xE9, 0x07, 6, 15, 16, 60, 37], [0xE9, 0x07, 6, 15, 16, 18, 61],
      [0x10, 0x27, 6, 15, 16, 18, 37], [0x00, 0x00, 6, 15, 16, 18, 37],
    ] as [[UInt8]])
  func badCurrentTimeIsIgnored(bytes: [UInt8]) {
    var h = Harness()
    let good = ANCSDate(year: 2025, month: 6, day: 15, hour: 16, minute: 18, second: 37)
    #expect(h.feed(.currentTime([0xE9, 0x07, 6, 15, 16, 18, 37, 7, 0, 0]), at: seconds(1)) == [.emit(.time(good))])
    #expect(h.feed(.currentTime(bytes), at: seconds(2)) == [])
    #expect(h.state.time?.date == good)
    #expect(h.state.time?.receivedAt == seconds(1))
  }

  @Test func batteryLevelIsKept() {
    var h = Harness()
    #expect(h.feed(.battery(42)) == [.emit(.battery(42))])
    #expect(h.state.battery == 42)
    #expect(h.feed(.battery(0)) == [.emit(.battery(0))])
    #expect(h.state.battery == 0)
  }
}

// MARK: - Deadline

/// `deadline` is when the next tick acts; the engine's timer sleeps until it.
@Suite struct WatchMachineDeadlineTests {
  @Test func aTickActsAtTheDeadlineAndNotBefore() {
    var h = Harness()
    _ = h.connect()
    // A quiet session's sharing check (the liveness probe would come at 30 s).
    #expect(h.machine.deadline == seconds(2))
    #expect(h.feed(.tick, at: seconds(1.999)) == [])
    #expect(h.feed(.tick, at: seconds(2)) == [WatchMachineSharingTests.sharingCheck])
    // Until its Write Response, a command has no deadline of the watch's own: ATT's
    // transaction timeout ends it.
    #expect(h.machine.deadline == nil)
    #expect(h.feed(.written(0xA2)) == [])
    // The liveness probe, 30 s after the phone was last heard.
    #expect(h.machine.deadline == seconds(32))
    #expect(h.feed(.tick, at: seconds(31.999)) == [])
    #expect(h.feed(.tick, at: seconds(32)) == [.probe])
    // Nothing more is due until the probe is answered.
    #expect(h.machine.deadline == nil)
  }

  @Test func aWrittenCommandIsDueAtItsTimeout() {
    var h = Harness()
    let a = Note.chat(1, "A")
    h.phone.add(a)
    _ = h.connect()
    #expect(h.feed(a.event(), at: seconds(1)) == [fetch(1)])
    #expect(h.feed(.written(nil), at: seconds(1.5)) == [])
    #expect(h.machine.deadline == seconds(11.5))
    #expect(h.feed(.tick, at: seconds(11.499)) == [])
    #expect(h.feed(.tick, at: seconds(11.5)).contains(.error))
    #expect(h.errors.last?.contains("not answered within") == true)
    #expect(h.machine.deadline.map { $0 > seconds(11.5) } ?? true)
  }

  /// An incoming call is checked again 20 s after its last check; one that waited for its
  /// turn behind another command counts from when it was made, so it is not due at once.
  @Test func aCallsRecheckCountsFromWhenItWasMade() {
    var h = Harness { $0.callRecheckInterval = .seconds(20) }
    let call = Note.call(9, from: "Bob")
    let a = Note.chat(1, "A")
    h.phone.add(call)
    h.phone.add(a)
    _ = h.connect()
    _ = h.run(call.event())
    #expect(h.machine.deadline == seconds(20))
    #expect(h.feed(a.event(), at: seconds(19)) == [fetch(1)])
    // Due, but the fetch is in flight: the check waits for its turn.
    #expect(h.feed(.tick, at: seconds(20)) == [])
    h.now = seconds(25)
    #expect(h.answer().contains(check(9)))
    // 20 s after the check made at 25 s (the liveness probe would come at 55 s).
    #expect(h.machine.deadline == seconds(45))
  }
}
