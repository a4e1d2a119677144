import AMS
import ANCS
import Wire

/// The ANCS client's decisions as a plain value: it takes an input (bytes from the phone,
/// the result of a write, the time) and returns what to do. It does no I/O and reads no
/// clock, so every race and timeout is tested by feeding inputs. `WatchEngine` is the shell
/// that performs the actions.
public struct WatchMachine: Sendable {
  public enum Input: Sendable {
    /// Subscriptions are in place: a new ANCS session begins (the old UIDs are void).
    case sessionStarted(mtu: Int)
    case notificationSource([UInt8])
    case dataSource([UInt8])
    /// The Control Point write of the command in flight was answered (nil: Write Response;
    /// otherwise the ATT error code).
    case written(UInt8?)
    /// The write failed without an answer (timeout, link down).
    case writeFailed(String)
    case tick
    /// The wearer asks for an action on a notification of `session` (`WatchState.session`
    /// when it was shown): a UID names a notification in its session only.
    case perform(uid: UInt32, action: ActionID, session: Int)
    /// Result of a liveness probe: is Notification Source still enabled?
    case probed(subscribed: Bool)
    case currentTime([UInt8])
    case battery(UInt8)
    case link(LinkState)
    /// For the Apple Media Service client (`MediaClient`).
    case media(MediaClient.Input)
  }

  public enum Action: Hashable, Sendable {
    /// Write these bytes to the Control Point and feed back `.written` or `.writeFailed`.
    case write([UInt8])
    case emit(WatchEvent)
    /// Read the Notification Source CCCD and feed back `.probed`.
    case probe
    /// Write the CCCDs again (the phone dropped them), then feed `.sessionStarted`.
    case resubscribe
    /// Close the link (only fault switches ask for it).
    case disconnect(String)
    /// Ask the phone's Apple Media Service; feed back `.media(.answered)`.
    case media(MediaRequest)
  }

  enum Command: Sendable {
    case notification(uid: UInt32, request: GetNotificationAttributesCommand)
    /// A minimal fetch that only asks whether the UID still exists.
    case verify(uid: UInt32)
    case app(String)
    case action(uid: UInt32, action: ActionID)
    /// Does the phone share its notifications with us? A fetch of a UID no phone has.
    case sharingCheck
  }

  /// The UID of the sharing check: never one a phone has given (UIDs count up from 0).
  static let sharingCheckUID: UInt32 = 0xFFFF_FFFF

  struct InFlight: Sendable {
    var command: Command
    var deadline: Duration
    var written = false
    /// The notification was removed while its fetch was in flight: discard the answer.
    var cancelled = false
    var reassembler: DataSourceReassembler?
    /// The answer stopped where it may be whole (`awaitsOnlyOptional`): taken as it is at
    /// this time unless more arrives.
    var settleAt: Duration?

    /// When the command times out: once written, or at once for one whose answer is the
    /// Write Response alone (an action); nil while a fetch awaits its Write Response.
    var timeout: Duration? { written || !awaitsData ? deadline : nil }

    /// The timeout and the settle time at once. `mutating` only so that optional chaining
    /// reaches it in place: in the release build, reading the fields one by one copied the
    /// whole command in flight, reassembler and all, for each (this runs after every input).
    mutating func times() -> (timeout: Duration?, settleAt: Duration?) { (timeout, settleAt) }

    /// A Data Source answer follows the Write Response (every command but an action).
    var awaitsData: Bool {
      if case .action = command { return false }
      return true
    }
  }

  /// An answer taken as whole without some optional tuples, in case the phone was not done:
  /// a continuation that brings them (its first byte is one of their IDs, never a CommandID)
  /// is added to the notification instead of being dropped as a stray.
  struct LateTuples: Sendable {
    var uid: UInt32
    /// The size of the fragment the answer was taken as ending with.
    var lastFragmentSize: Int
    var reassembler: DataSourceReassembler
  }

  /// The machine's decisions, computed once from the options. The rules below read only
  /// this: a fault switch (`WatchFaults`, each breaking one rule that an NC case checks)
  /// changes a field here, never a branch there. Faults that change bytes on the wire are
  /// the bearer's (`WatchFaults.outgoingRewrite`).
  struct Policy: Sendable {
    // Notification Source
    /// A value that is not 8 bytes drops the link (FAULT malformed-event-fatal; the rule:
    /// it is ignored).
    var malformedEventDropsLink = false
    /// An event with reserved EventFlags bits is taken (false: FAULT reserved-flags-rejected).
    var takesReservedFlags = true
    /// PreExisting is honoured whenever it comes (FAULT preexisting-always-listed; the rule:
    /// only at session start).
    var preExistingAnyTime = false
    /// A ringing call is fetched first, PreExisting or not (false: FAULT preexisting-call-queued).
    var callsFirst = true
    /// More notifications than this waiting to be fetched drop the link (FAULT flood-fatal:
    /// 100; the rule: none).
    var backlogLimit: Int?
    /// Removed ends the notification (false: FAULT ignore-removed).
    var honoursRemoved = true
    /// Removed wins over a fetch of it in flight (false: FAULT late-answer-kept).
    var removedCancelsFetch = true
    // Control Point
    /// One command at a time, its answer awaited (false: FAULT commands-overlap).
    var oneCommandAtATime = true
    /// App display names are cached for the session (false: FAULT no-app-name-cache).
    var cachesAppNames = true
    /// 0xA2 empties the queues and subscribes again (FAULT flush-on-a2; the rule: it drops
    /// that notification only).
    var unknownUIDFlushes = false
    /// An answer is awaited `commandTimeout`, not forever (false: FAULT no-command-timeout).
    var timesOutCommands = true
    /// Write Not Permitted means "not shared" (false: FAULT ignore-not-shared).
    var recognisesNotShared = true
    // Data Source
    /// An answer is reassembled across notifications (false: FAULT no-reassembly, the first
    /// notification is taken as the whole).
    var reassembles = true
    /// Tuples must come in request order (FAULT tuples-in-request-order; the rule: found by
    /// AttributeID).
    var tuplesInRequestOrder = false
    /// An empty notification starts the next answer (FAULT empty-packet-starts-answer; the
    /// rule: it is harmless).
    var emptyFragmentStartsAnswer = false
    /// A value over the maximum asked drops the link (FAULT over-long-fatal; the rule: it is
    /// survived).
    var overLongDropsLink = false
    /// How answers are reassembled; each command sets its fragment capacity. FAULT
    /// omitted-tuple-fatal (no answer completes without every tuple), unrequested-tuple-fatal
    /// (an unrequested tuple refuses the answer) and over-long-fatal change it.
    var reassembly = DataSourceReassembler.Policy()
    // Time
    /// How long a silent phone goes before the liveness probe (nil: never, FAULT
    /// no-liveness-probe).
    var livenessInterval: Duration?
    /// How often a ringing call is checked again (nil: never, FAULT no-call-recheck).
    var callRecheckInterval: Duration?
    /// `resubscribeAfterSilence`; nil with FAULT no-silence-resubscribe.
    var silenceLimit: Duration?

    init(_ options: WatchOptions) {
      let faults = options.faults
      malformedEventDropsLink = faults.contains(.malformedEventFatal)
      takesReservedFlags = !faults.contains(.reservedFlagsRejected)
      preExistingAnyTime = faults.contains(.preexistingAlwaysListed)
      callsFirst = !faults.contains(.preexistingCallQueued)
      backlogLimit = faults.contains(.floodFatal) ? 100 : nil
      honoursRemoved = !faults.contains(.ignoreRemoved)
      removedCancelsFetch = !faults.contains(.lateAnswerKept)
      oneCommandAtATime = !faults.contains(.commandsOverlap)
      cachesAppNames = !faults.contains(.noAppNameCache)
      unknownUIDFlushes = faults.contains(.flushOnA2)
      timesOutCommands = !faults.contains(.noCommandTimeout)
      recognisesNotShared = !faults.contains(.ignoreNotShared)
      reassembles = !faults.contains(.noReassembly)
      tuplesInRequestOrder = faults.contains(.tuplesInRequestOrder)
      emptyFragmentStartsAnswer = faults.contains(.emptyPacketStartsAnswer)
      overLongDropsLink = faults.contains(.overLongFatal)
      let lenient = !faults.contains(.omittedTupleFatal)
      reassembly = DataSourceReassembler.Policy(
        optionalAttributes: lenient ? WatchOptions.optionalAttributes : [], acceptPartial: lenient,
        unrequested: faults.contains(.unrequestedTupleFatal) ? .reject : .keep,
        enforceMaximumLength: faults.contains(.overLongFatal))
      livenessInterval = faults.contains(.noLivenessProbe) ? nil : options.livenessInterval
      callRecheckInterval = faults.contains(.noCallRecheck) ? nil : options.callRecheckInterval
      silenceLimit = faults.contains(.noSilenceResubscribe) ? nil : options.resubscribeAfterSilence
    }
  }

  public let options: WatchOptions
  let policy: Policy
  public private(set) var state = WatchState()
  var now: Duration = .zero
  var mtu = 23
  var sessionStart: Duration = .zero
  var inFlight: InFlight?
  /// How much the phone puts in one Data Source notification, once an answer has shown it
  /// (a phone that chunks below ATT_MTU - 3); nil: ATT_MTU - 3.
  var phoneFill: Int?
  var lateTuples: LateTuples?
  /// New notifications and actions first, then pre-existing ones.
  var actions: [(UInt32, ActionID)] = []
  var urgent = UIDQueue()
  var background = UIDQueue()
  var apps: [String] = []
  var verifications: [UInt32] = []
  /// Fetched notifications waiting for their app's display name.
  var awaitingApp: Set<UInt32> = []
  var announced: Set<UInt32> = []
  var lastHeard: Duration = .zero
  /// The last Notification Source event (or the session's start).
  var lastEvent: Duration = .zero
  var probing = false
  var lastCallCheck: [UInt32: Duration] = [:]
  /// Apps named by their identifier because their name could not be had this session.
  var fallbackApps: Set<String> = []
  /// When the next sharing check is due; nil when none is.
  var sharingCheckAt: Duration?

  /// When a `.tick` next has something to do, as of the last input: the earliest of the
  /// command's timeout or the time its answer has settled, the sharing check, the liveness
  /// probe, the rewrite after silence and an incoming call's recheck. Nil when nothing waits
  /// for time. A tick before it changes nothing; one at or after it leaves a later deadline
  /// or none, so a driver that sleeps until it and then ticks never spins (the engine's one
  /// timer, instead of a tick every second).
  public private(set) var deadline: Duration?
  /// Sharing was stopped in a session that had notifications: once it is back, a new session.
  var sharingLostMidSession = false
  /// An empty notification was taken as an answer's start (`emptyFragmentStartsAnswer`).
  var emptyAnswerStarted = false
  /// The Apple Media Service beside ANCS.
  var media: MediaClient

  public init(options: WatchOptions = WatchOptions()) {
    self.options = options
    self.policy = Policy(options)
    self.media = MediaClient(policy: MediaClient.Policy(options.faults))
  }

  /// Handles one input at time `now` (the engine clock).
  public mutating func handle(_ input: Input, now: Duration) -> [Action] {
    self.now = now
    let out = run(input)
    deadline = nextDeadline()
    return out
  }

  private mutating func run(_ input: Input) -> [Action] {
    var out: [Action] = []
    switch input {
    case .sessionStarted(let mtu):
      self.mtu = mtu
      emptyAnswerStarted = false
      startSession(&out)
    case .notificationSource(let bytes):
      lastHeard = now
      lastEvent = now
      // Events come only from a phone that shares its notifications.
      sharingCheckAt = nil
      if sharedAgain(&out) {
        // The new session's report tells what the phone holds; a removal is applied now all
        // the same, so that a notification the phone removed is not shown until then.
        if bytes.first == EventID.removed.rawValue { notificationSource(bytes, &out) }
        return out
      }
      notificationSource(bytes, &out)
    case .dataSource(let bytes):
      lastHeard = now
      dataSource(bytes, &out)
    case .written(let code):
      lastHeard = now
      written(code, &out)
    case .writeFailed(let reason):
      out.append(.emit(.error("Control Point write failed: \(reason)")))
      if let flight = inFlight { giveUp(flight, &out) }
      inFlight = nil
    case .tick:
      tick(&out)
    case .perform(let uid, let action, let session):
      // Asked while the session before this one was shown: that UID is void now.
      if session != state.session {
        out.append(.emit(.error("\(action.name ?? "?") action on UID \(uid) dropped: its session ended")))
      } else {
        actions.append((uid, action))
      }
    case .probed(let subscribed):
      probing = false
      lastHeard = now
      // Still subscribed, yet silent: the phone may have stopped sharing (its user revoked
      // it), which only a Control Point write can tell.
      if subscribed && state.sharingAllowed != false { sharingCheckAt = now }
      if !subscribed {
        out.append(.emit(.error("the phone dropped the subscriptions; subscribing again")))
        out.append(.resubscribe)
      }
    case .currentTime(let bytes):
      if let date = Self.decodeCurrentTime(bytes) {
        state.time = PhoneTime(date: date, receivedAt: now)
        out.append(.emit(.time(date)))
      }
    case .battery(let level):
      state.battery = level
      out.append(.emit(.battery(level)))
    case .link(let link):
      linkChanged(link, &out)
    case .media(let input):
      media.handle(input, &state.nowPlaying, now: now, &out)
      return out
    }
    next(&out)
    return out
  }

  // MARK: - Session

  private mutating func startSession(_ out: inout [Action]) {
    // UIDs are valid within a session only: everything is rebuilt from the events to come.
    state.session += 1
    for uid in announced.sorted() { out.append(.emit(.removed(uid: uid))) }
    // An action asked for in the old session names an old UID: never perform it on a new one.
    for (uid, action) in actions {
      out.append(.emit(.error("\(action.name ?? "?") action on UID \(uid) dropped: its session ended")))
    }
    actions = []
    // Names that could not be had last session are asked for again.
    for app in fallbackApps { state.appNames[app] = nil }
    fallbackApps = []
    state.notifications = []
    positions = [:]
    positionsValid = true
    announced = []
    awaitingApp = []
    urgent.removeAll()
    background.removeAll()
    verifications = []
    lastCallCheck = [:]
    inFlight = nil
    lateTuples = nil
    phoneFill = nil
    probing = false
    sessionStart = now
    lastHeard = now
    lastEvent = now
    sharingCheckAt = now + options.sharingCheckDelay
    sharingLostMidSession = false
  }

  /// The phone shares (again). True when a session in which it had stopped must give way to
  /// a new one: the events of the time it did not share are lost, so nothing of this
  /// session is fetched any more, and the subscriptions are written again.
  private mutating func sharedAgain(_ out: inout [Action]) -> Bool {
    guard sharingChanged(to: true, &out), sharingLostMidSession else { return false }
    sharingLostMidSession = false
    urgent.removeAll()
    background.removeAll()
    verifications = []
    out.append(.resubscribe)
    return true
  }

  /// Records whether the phone shares its notifications; true when that changed.
  @discardableResult
  private mutating func sharingChanged(to allowed: Bool, _ out: inout [Action]) -> Bool {
    guard state.sharingAllowed != allowed else { return false }
    let known = state.sharingAllowed != nil
    state.sharingAllowed = allowed
    // A phone that shares from the start is not news; one that stops or starts again is.
    if known || !allowed { out.append(.emit(.sharing(allowed: allowed))) }
    return known
  }

  private mutating func linkChanged(_ link: LinkState, _ out: inout [Action]) {
    let was = state.link
    state.link = link
    let reason: String
    switch link {
    case .connected(let name):
      out.append(.emit(.connected(link: name)))
      return
    case .reconnecting(_, _, let why): reason = why
    case .stopped: reason = "stopped"
    case .connecting: return
    }
    if case .connected = was { out.append(.emit(.disconnected(reason: reason))) }
    // AMS belongs to the link: the next one registers afresh.
    media = MediaClient(policy: media.policy)
    state.nowPlaying = NowPlaying()
    // An action cut off by the link is reported; a fetch is simply asked again next session.
    if let flight = inFlight, case .action = flight.command { giveUp(flight, &out) }
    inFlight = nil
    probing = false
  }

  // MARK: - Notification Source

  private mutating func notificationSource(_ bytes: [UInt8], _ out: inout [Action]) {
    let event: NotificationSourceEvent
    do {
      event = try NotificationSourceEvent(decoding: bytes)
    } catch {
      out.append(.emit(.error("Notification Source: \(error); ignored")))
      if policy.malformedEventDropsLink { out.append(.disconnect("malformed Notification Source value")) }
      return
    }
    let uid = event.notificationUID
    // Bits 5-7 are reserved; iPhones set bit 5 on MMS. The event stands without them.
    if !policy.takesReservedFlags && event.eventFlags.rawValue & 0xE0 != 0 {
      out.append(.emit(.error("Notification Source: reserved EventFlags bits in the event for UID \(uid); ignored")))
      return
    }
    switch event.eventID {
    case .added, .modified:
      let alwaysListed = policy.preExistingAnyTime && event.eventFlags.contains(.preExisting)
      let preExisting =
        event.eventFlags.contains(.preExisting) && event.eventID == .added
        && (now - sessionStart <= options.preExistingWindow || alwaysListed)
      if let index = position(of: uid) {
        state.notifications[index].flags = event.eventFlags
        state.notifications[index].category = event.categoryID
        enqueue(uid, urgent: true)
        return
      }
      var notification = WatchNotification(
        uid: uid, category: event.categoryID, flags: event.eventFlags, receivedAt: now)
      // A call reported PreExisting is still ringing (iOS gives it a new UID when the watch
      // subscribes again): it is fetched first, whatever the policy for old notifications.
      let ringing = event.categoryID == .incomingCall && policy.callsFirst
      if preExisting, !ringing, alwaysListed || options.preExisting == .listOnly {
        notification.fetched = false
        append(notification)
        announce(uid, &out)
        return
      }
      append(notification)
      enqueue(uid, urgent: !preExisting || ringing)
      if let limit = policy.backlogLimit, urgent.count + background.count > limit {
        out.append(.disconnect("more than \(limit) notifications to fetch"))
      }
      if preExisting, case .fetchNewest(let limit) = options.preExisting, background.count > max(0, limit),
        let dropped = background.popFirst()
      {
        announce(dropped, &out)
      }
    case .removed:
      if !policy.honoursRemoved { return }
      if !policy.removedCancelsFetch && inFlight?.command.uid == uid { return }
      remove(uid, &out)
    default:
      out.append(
        .emit(.error("Notification Source: unknown EventID \(event.eventID.rawValue) for UID \(uid); ignored")))
    }
  }

  private mutating func enqueue(_ uid: UInt32, urgent isUrgent: Bool) {
    if urgent.contains(uid) { return }
    background.remove(uid)
    if isUrgent {
      // An incoming call jumps the queue.
      if notification(uid)?.category == .incomingCall { urgent.prepend(uid) } else { urgent.append(uid) }
    } else {
      background.append(uid)
    }
  }

  // MARK: - The list

  /// The index of each notification in `state.notifications`, rebuilt after a removal.
  private var positions: [UInt32: Int] = [:]
  private var positionsValid = true

  mutating func position(of uid: UInt32) -> Int? {
    if !positionsValid {
      // Reads each UID in place: enumerating would copy every notification (and retain its
      // strings) for its UID, which a watch of a thousand-watch fleet paid after every removal.
      var rebuilt: [UInt32: Int] = [:]
      rebuilt.reserveCapacity(state.notifications.count)
      for index in state.notifications.indices { rebuilt[state.notifications[index].uid] = index }
      positions = rebuilt
      positionsValid = true
    }
    return positions[uid]
  }

  mutating func notification(_ uid: UInt32) -> WatchNotification? {
    position(of: uid).map { state.notifications[$0] }
  }

  private mutating func append(_ notification: WatchNotification) {
    if positionsValid { positions[notification.uid] = state.notifications.count }
    state.notifications.append(notification)
  }

  private mutating func remove(_ uid: UInt32, _ out: inout [Action]) {
    if let index = position(of: uid) {
      state.notifications.remove(at: index)
      positionsValid = false
    }
    urgent.remove(uid)
    background.remove(uid)
    verifications.removeAll { $0 == uid }
    awaitingApp.remove(uid)
    lastCallCheck[uid] = nil
    if var flight = inFlight, flight.command.uid == uid {
      flight.cancelled = true
      inFlight = flight
    }
    if announced.remove(uid) != nil { out.append(.emit(.removed(uid: uid))) }
  }

  /// Emits `added` the first time, `modified` afterwards.
  private mutating func announce(_ uid: UInt32, _ out: inout [Action]) {
    guard let index = position(of: uid) else { return }
    // Copied once, into the event (a notification holds a dozen strings).
    if state.notifications[index].category == .incomingCall { lastCallCheck[uid] = now }
    if announced.insert(uid).inserted {
      out.append(.emit(.added(state.notifications[index])))
    } else {
      out.append(.emit(.modified(state.notifications[index])))
    }
  }

  // MARK: - Commands

  /// Starts the next command when none is in flight: actions, then app names, then
  /// verifications, new notifications, pre-existing ones.
  private mutating func next(_ out: inout [Action]) {
    guard inFlight == nil, case .connected = state.link else { return }
    let command: Command
    if !actions.isEmpty {
      let (uid, action) = actions.removeFirst()
      command = .action(uid: uid, action: action)
    } else if let due = sharingCheckAt, now >= due {
      sharingCheckAt = nil
      command = .sharingCheck
    } else if state.sharingAllowed == false {
      // Nothing is fetched from a phone that refuses every command; the check asks again.
      return
    } else if !apps.isEmpty {
      command = .app(apps.removeFirst())
    } else if !verifications.isEmpty {
      let uid = verifications.removeFirst()
      // A call's next recheck counts from this one, however long it waited for its turn.
      if lastCallCheck[uid] != nil { lastCallCheck[uid] = now }
      command = .verify(uid: uid)
    } else if let uid = urgent.popFirst() ?? background.popFirst() {
      let flags = notification(uid)?.flags ?? []
      command = .notification(
        uid: uid,
        request: GetNotificationAttributesCommand(
          notificationUID: uid, attributes: options.attributeRequests(for: flags)))
    } else {
      return
    }
    var flight = InFlight(command: command, deadline: now + options.commandTimeout)
    var reassembly = policy.reassembly
    reassembly.fragmentCapacity = min(mtu - 3, phoneFill ?? .max)
    switch command {
    case .notification(_, let request):
      flight.reassembler = DataSourceReassembler(expecting: .notificationAttributes(request), policy: reassembly)
    case .verify, .sharingCheck:
      // Both ask AppIdentifier alone: of the UID checked, or of the sharing check's.
      let uid = command.uid ?? Self.sharingCheckUID
      flight.reassembler = DataSourceReassembler(
        expecting: .notificationAttributes(.init(notificationUID: uid, attributes: [AttributeRequest(.appIdentifier)])),
        policy: reassembly)
    case .app(let identifier):
      flight.reassembler = DataSourceReassembler(
        expecting: .appAttributes(.init(appIdentifier: identifier)), policy: reassembly)
    case .action: break
    }
    inFlight = flight
    out.append(.write(command.encoded))
  }

  private mutating func written(_ code: UInt8?, _ out: inout [Action]) {
    guard inFlight != nil else { return }
    // Write Not Permitted, whatever the command: the phone does not share its notifications.
    if code == 0x03 && policy.recognisesNotShared {
      notShared(&out)
      return
    }
    if case .sharingCheck? = inFlight?.command {
      // Any other answer means the phone took the command: it shares.
      if sharedAgain(&out) {
        inFlight = nil
        return
      }
      // 0xFD (no Data Source subscription seen) is handled below, as for any command.
      if let code, code != 0xFD {
        inFlight = nil
        return
      }
    }
    guard let code else {
      if case .action(let uid, let action)? = inFlight?.command {
        out.append(.emit(.action(uid: uid, action: action)))
        inFlight = nil
        return
      }
      if !policy.oneCommandAtATime {
        inFlight = nil
        return
      }
      // Changed in place: a copy would share the reassembler's buffers until written back.
      inFlight?.written = true
      // The answer's time counts from the Write Response: a slow write must not use it up.
      inFlight?.deadline = now + options.commandTimeout
      return
    }
    guard let flight = inFlight.take() else { return }
    let name = ANCSErrorCode(rawValue: code).description
    switch flight.command {
    case _ where code == 0xFD:
      // CCCD improperly configured: the phone no longer sees our Data Source subscription.
      out.append(.emit(.error("the phone refused \(flight.command) for lack of a subscription; subscribing again")))
      out.append(.resubscribe)
    case .notification(let uid, _), .verify(let uid):
      // 0xA2: "that notification is gone": drop it and go on, never flush or resubscribe.
      if code == ANCSErrorCode.invalidParameter.rawValue {
        remove(uid, &out)
        if policy.unknownUIDFlushes {
          urgent = UIDQueue()
          background = UIDQueue()
          out.append(.resubscribe)
        }
      } else {
        out.append(.emit(.error("fetching UID \(uid) refused with \(name)")))
        giveUp(flight, &out)
      }
    case .app(let identifier):
      giveUp(flight, &out)
      if code != ANCSErrorCode.invalidParameter.rawValue {
        out.append(.emit(.error("app attributes of \(identifier) refused with \(name)")))
      }
    case .action(let uid, let action):
      out.append(.emit(.error("\(action.name ?? "?") action on UID \(uid) refused with \(name)")))
    case .sharingCheck:
      break
    }
  }

  /// The phone answered Write Not Permitted: it does not share its notifications with this
  /// watch (the user has not allowed it, or revoked it). The command is dropped, and the
  /// check made again until the phone shares.
  private mutating func notShared(_ out: inout [Action]) {
    guard let flight = inFlight.take() else { return }
    if !announced.isEmpty { sharingLostMidSession = true }
    sharingChanged(to: false, &out)
    sharingCheckAt = now + options.sharingRecheckInterval
    switch flight.command {
    case .sharingCheck: break
    case .notification(let uid, _):
      // Fetched again once the phone shares (in the new session, if it must start one).
      if position(of: uid) != nil { background.prepend(uid) }
    default: giveUp(flight, &out)
    }
  }

  // MARK: - Data Source

  private mutating func dataSource(_ bytes: [UInt8], _ out: inout [Action]) {
    // The next fragment taken as the rest of an answer an empty one began, and dropped.
    if policy.emptyFragmentStartsAnswer && (inFlight?.reassembler?.byteCount ?? 0) == 0 {
      if bytes.isEmpty {
        emptyAnswerStarted = true
        return
      }
      if emptyAnswerStarted {
        emptyAnswerStarted = false
        return
      }
    }
    if (inFlight?.reassembler?.byteCount ?? 0) == 0, lateContinuation(bytes, &out) { return }
    guard let before = inFlight?.reassembler?.byteCount else {
      if !bytes.isEmpty {
        out.append(.emit(.error("Data Source: \(bytes.count) bytes with no command in flight; ignored")))
      }
      return
    }
    // Fed in place inside `inFlight`: a copy taken first would share the reassembler's
    // buffers, and the first append would copy them all, for every fragment.
    do {
      var response = try inFlight?.reassembler?.feed(bytes)
      if response == nil && !policy.reassembles { response = try inFlight?.reassembler?.finish() }
      if !bytes.isEmpty { lateTuples = nil }
      if let response, let flight = inFlight.take() {
        complete(flight, response, &out)
      } else if inFlight?.reassembler?.awaitsOnlyOptional == true {
        inFlight?.settleAt = now + options.answerSettle
      } else {
        inFlight?.settleAt = nil
      }
    } catch {
      if policy.overLongDropsLink, case .valueTooLong = error.reason {
        out.append(.disconnect("Data Source: \(error)"))
        inFlight = nil
        return
      }
      // The reassembler kept the fragment's bytes even though it threw.
      if before == 0, let stray = inFlight?.reassembler {
        // A stray fragment (late answer to a command that timed out): drop it, keep waiting
        // with the reassembler as it was before this fragment (it had received nothing).
        inFlight?.reassembler = DataSourceReassembler(expecting: stray.expectation, policy: stray.policy)
        out.append(.emit(.error("Data Source: \(error); fragment dropped")))
        return
      }
      out.append(.emit(.error("Data Source: \(error)")))
      if let flight = inFlight.take() { giveUp(flight, &out) }
    }
  }

  /// After a command failed for good: a notification is listed without its text rather than
  /// kept hidden; an app is named by its identifier for the rest of the session.
  private mutating func giveUp(_ flight: InFlight, _ out: inout [Action]) {
    switch flight.command {
    case .notification(let uid, _):
      if !flight.cancelled, position(of: uid) != nil, !announced.contains(uid) { announce(uid, &out) }
    case .app(let identifier):
      fallbackApps.insert(identifier)
      appNameArrived(identifier, identifier, &out)
    case .action(let uid, let action):
      // The wearer is told: the phone may or may not have done it (a Removed or Modified
      // event, or the next session's report, will say).
      out.append(.emit(.error("\(action.name ?? "?") action on UID \(uid) not confirmed by the phone")))
    case .verify, .sharingCheck:
      break
    }
  }

  private mutating func complete(_ flight: InFlight, _ response: DataSourceResponse, _ out: inout [Action]) {
    inFlight = nil
    if let fill = flight.reassembler?.fillSize { phoneFill = fill }
    switch (flight.command, response) {
    case (.notification(let uid, let request), .notificationAttributes(let attributes)):
      guard !flight.cancelled, let index = position(of: uid) else { return }
      if let reassembler = flight.reassembler {
        expectLate(
          uid, request.attributes.filter { attributes.missing.contains($0.id) }, reassembler.policy,
          lastFragmentSize: reassembler.lastFragmentSize)
      }
      let requested = request.attributes.map(\.id)
      let arrived = attributes.attributes.map(\.id).filter(requested.contains)
      if policy.tuplesInRequestOrder && arrived != requested.filter(arrived.contains) {
        out.append(.emit(.error("Data Source: tuples out of request order")))
        giveUp(flight, &out)
        return
      }
      Self.fill(&state.notifications[index], attributes)
      // A notification the phone already had when the session began arrived before it: its
      // age counts from its Date on the phone's clock, not from this session's start.
      if state.notifications[index].flags.contains(.preExisting), let phone = state.time?.current(at: now),
        let date = (try? ANCSDate.parse(state.notifications[index].date)) ?? nil
      {
        let elapsed = phone.secondsSinceEpoch - date.secondsSinceEpoch
        if elapsed > 0 { state.notifications[index].receivedAt = now - .seconds(elapsed) }
      }
      let app = state.notifications[index].appIdentifier
      if let name = state.appNames[app], policy.cachesAppNames {
        state.notifications[index].appName = name
        announce(uid, &out)
      } else {
        awaitingApp.insert(uid)
        if !apps.contains(app) { apps.append(app) }
      }
    case (.verify, _), (.sharingCheck, _):
      break
    case (.app(let identifier), .appAttributes(let attributes)):
      let name = attributes[.displayName]?.text ?? ""
      appNameArrived(identifier, name.isEmpty ? identifier : name, &out)
    default:
      out.append(.emit(.error("Data Source: answer does not match the command")))
    }
  }

  /// Keeps the way open for the phone to send `missing` after all (nothing when it is empty).
  private mutating func expectLate(
    _ uid: UInt32, _ missing: [AttributeRequest], _ policy: DataSourceReassembler.Policy, lastFragmentSize: Int
  ) {
    guard !missing.isEmpty else { return }
    var policy = policy
    // Only optional tuples are left: any fragment that ends on a tuple boundary ends it.
    policy.fragmentCapacity = .max
    lateTuples = LateTuples(
      uid: uid, lastFragmentSize: lastFragmentSize,
      reassembler: DataSourceReassembler(
        expecting: .notificationAttributes(.init(notificationUID: uid, attributes: missing)), policy: policy))
  }

  /// Takes a fragment that continues the answer last taken as whole without its optional
  /// tuples (see `LateTuples`); false when it is not one.
  private mutating func lateContinuation(_ bytes: [UInt8], _ out: inout [Action]) -> Bool {
    guard var late = lateTuples, let first = bytes.first else { return false }
    let started = late.reassembler.byteCount > 0
    // The tuples still missing are what its reassembler expects.
    let missing = late.reassembler.expectation.notificationRequest?.attributes.map(\.id.rawValue) ?? []
    guard started || missing.contains(first) else { return false }
    // The phone was not done: that fragment was not its last, so it fills at least as much.
    phoneFill = max(phoneFill ?? 0, late.lastFragmentSize)
    let uid = late.uid
    let header =
      started ? [] : [CommandID.getNotificationAttributes.rawValue] + withUnsafeBytes(of: uid.littleEndian, Array.init)
    let response: DataSourceResponse?
    do {
      response = try late.reassembler.feed(header + bytes)
    } catch {
      lateTuples = nil
      out.append(.emit(.error("Data Source: rest of the answer for UID \(uid): \(error); fragment dropped")))
      return true
    }
    guard case .notificationAttributes(let rest)? = response else {
      lateTuples = late
      return true
    }
    lateTuples = nil
    if let request = late.reassembler.expectation.notificationRequest {
      expectLate(
        uid, request.attributes.filter { rest.missing.contains($0.id) }, late.reassembler.policy,
        lastFragmentSize: late.lastFragmentSize)
    }
    guard let index = position(of: uid) else { return true }
    Self.fill(&state.notifications[index], rest)
    if announced.contains(uid) { out.append(.emit(.modified(state.notifications[index]))) }
    return true
  }

  private mutating func appNameArrived(_ identifier: String, _ name: String, _ out: inout [Action]) {
    state.appNames[identifier] = name
    for uid in awaitingApp.sorted() {
      guard let index = position(of: uid),
        state.notifications[index].appIdentifier == identifier
      else { continue }
      state.notifications[index].appName = name
      awaitingApp.remove(uid)
      announce(uid, &out)
    }
  }

  private static func fill(_ notification: inout WatchNotification, _ response: NotificationAttributesResponse) {
    for tuple in response.attributes {
      let text = tuple.text
      switch tuple.id {
      case .appIdentifier: notification.appIdentifier = text
      case .title: notification.title = text
      case .subtitle: notification.subtitle = text
      case .message: notification.message = text
      case .messageSize: notification.messageSize = Int(text)
      case .date: notification.date = text
      case .positiveActionLabel: notification.positiveActionLabel = text
      case .negativeActionLabel: notification.negativeActionLabel = text
      default: break
      }
    }
    notification.fetched = true
  }

  // MARK: - Time

  private mutating func nextDeadline() -> Duration? {
    var earliest: Duration?
    func consider(_ time: Duration?) {
      if let time, earliest.map({ time < $0 }) ?? true { earliest = time }
    }
    let flight = inFlight?.times()
    if policy.timesOutCommands { consider(flight?.timeout) }
    consider(flight?.settleAt)
    guard case .connected = state.link else { return earliest }
    if flight == nil {
      consider(sharingCheckAt)
      if !probing, let interval = policy.livenessInterval { consider(lastHeard + interval) }
      if !probing, let limit = policy.silenceLimit, state.sharingAllowed != false { consider(lastEvent + limit) }
    }
    if let recheck = policy.callRecheckInterval, !lastCallCheck.isEmpty {
      for (uid, last) in lastCallCheck where !verifications.contains(uid) { consider(last + recheck) }
    }
    return earliest
  }

  private mutating func tick(_ out: inout [Action]) {
    if let flight = inFlight, policy.timesOutCommands, let timeout = flight.timeout, now >= timeout {
      timeOut(flight, &out)
    } else if let flight = inFlight, let settleAt = flight.settleAt, now >= settleAt,
      var reassembler = flight.reassembler
    {
      inFlight = nil
      do {
        complete(flight, try reassembler.finish(), &out)
      } catch {
        out.append(.emit(.error("\(flight.command): \(error)")))
        giveUp(flight, &out)
      }
    }
    guard case .connected = state.link else { return }
    if let interval = policy.livenessInterval, inFlight == nil, !probing, now - lastHeard >= interval {
      probing = true
      out.append(.probe)
    }
    // "After ANCS_NO_NS_TIMEOUT_HOURS [...] we force a CCCD re-subscribe to nudge iOS into
    // pushing again" (coredevices/PebbleOS#1348): a phone may answer the Control Point and
    // read subscribed while its Notification Source has gone silent. Never with a command in
    // flight, nor while the phone does not share (it sends nothing then anyway).
    if let limit = policy.silenceLimit, inFlight == nil, !probing, state.sharingAllowed != false,
      now - lastEvent >= limit
    {
      lastEvent = now
      out.append(.emit(.error("no Notification Source event for \(limit); writing the subscriptions again")))
      out.append(.resubscribe)
    }
    guard let recheck = policy.callRecheckInterval else { return }
    // Kept for announced calls only (set by `announce`, cleared by `remove`); in UID order,
    // which is the order the phone gave them.
    for (uid, last) in lastCallCheck.sorted(by: { $0.key < $1.key })
    where now - last >= recheck && !verifications.contains(uid) {
      // A Modified event can make a call something else: no longer rechecked.
      guard announced.contains(uid), notification(uid)?.category == .incomingCall else {
        lastCallCheck[uid] = nil
        continue
      }
      lastCallCheck[uid] = now
      verifications.append(uid)
    }
  }

  /// "A per-command timeout after which it moves on": take what arrived if it ends on a
  /// tuple boundary, otherwise report and drop the command.
  private mutating func timeOut(_ flight: InFlight, _ out: inout [Action]) {
    inFlight = nil
    guard var reassembler = flight.reassembler else {
      giveUp(flight, &out)
      return
    }
    do {
      let response = try reassembler.finish()
      out.append(
        .emit(.error("\(flight.command) answer incomplete after \(options.commandTimeout); using what arrived")))
      complete(flight, response, &out)
    } catch {
      out.append(.emit(.error("\(flight.command) not answered within \(options.commandTimeout): \(error)")))
      if case .app = flight.command { giveUp(flight, &out) }
      if case .notification(let uid, _) = flight.command, position(of: uid) != nil, !announced.contains(uid) {
        announce(uid, &out)
      }
    }
  }

  /// Current Time characteristic: year(2) month day hours minutes seconds, then day of week,
  /// fractions and adjust reason (ignored).
  static func decodeCurrentTime(_ bytes: [UInt8]) -> ANCSDate? {
    guard bytes.count >= 7 else { return nil }
    // Year 0 means "not known"; 1582-9999 is the valid range (Date Time, Current Time Service).
    let year = Int(bytes[0]) | Int(bytes[1]) << 8
    guard (1582...9999).contains(year) else { return nil }
    let date = ANCSDate(
      year: year, month: Int(bytes[2]), day: Int(bytes[3]), hour: Int(bytes[4]),
      minute: Int(bytes[5]), second: Int(bytes[6]))
    return (try? ANCSDate.parse(date.description)) ?? nil
  }
}

extension WatchMachine.Command: CustomStringConvertible {
  var uid: UInt32? {
    switch self {
    case .notification(let uid, _), .verify(let uid), .action(let uid, _): return uid
    case .app, .sharingCheck: return nil
    }
  }

  var encoded: [UInt8] {
    switch self {
    case .notification(_, let request): return ControlPointCommand.getNotificationAttributes(request).encoded()
    case .verify(let uid):
      return ControlPointCommand.getNotificationAttributes(
        .init(notificationUID: uid, attributes: [AttributeRequest(.appIdentifier)])
      ).encoded()
    case .sharingCheck: return WatchMachine.Command.verify(uid: WatchMachine.sharingCheckUID).encoded
    case .app(let identifier): return ControlPointCommand.getAppAttributes(.init(appIdentifier: identifier)).encoded()
    case .action(let uid, let action):
      return ControlPointCommand.performNotificationAction(.init(notificationUID: uid, actionID: action)).encoded()
    }
  }

  var description: String {
    switch self {
    case .notification(let uid, _): return "Get Notification Attributes for UID \(uid)"
    case .verify(let uid): return "check of UID \(uid)"
    case .sharingCheck: return "sharing check"
    case .app(let identifier): return "Get App Attributes for \(identifier)"
    case .action(let uid, let action): return "\(action.name ?? "?") action on UID \(uid)"
    }
  }
}
