import ANCS
import Watch
import Wire

/// The watch's state machine, fed Notification Source and Data Source traffic, write
/// outcomes, time and link changes. It writes only well-formed Control Point commands, one
/// at a time (no write while one is unanswered, unless an input that can end it came: a
/// fetch is not ended by its Write Response, unless the watch starts a new session on it);
/// it fetches only UIDs it lists and performs only the actions the wearer asked for; its
/// events tell a consistent story (`added` once, then `modified` or `removed`; an action
/// only one the wearer asked for); a Removed event takes the UID off its list; every
/// notification it announced is in its list, which holds each UID once. Its `deadline` is
/// when a tick next acts: a tick before it does nothing, and a tick leaves it in the future.
///
/// Layout: an options byte (bits 0-1: pre-existing policy fetch all, list only, newest 2,
/// newest 0; bit 2: small byte maxima; bit 3: Title only), then operations
/// (`WatchOperation`). The machine starts connected.
func fuzz(_ bytes: [UInt8]) {
  var input = FuzzInput(bytes)
  let settings = input.byte()
  var options = WatchOptions()
  options.preExisting = [.fetchAll, .listOnly, .fetchNewest(2), .fetchNewest(0)][Int(settings & 3)]
  if settings & 4 != 0 {
    options.titleMaximum = 8
    options.subtitleMaximum = 4
    options.messageMaximum = 16
  }
  if settings & 8 != 0 { options.attributes = [.title] }

  var watch = Harness(machine: WatchMachine(options: options))
  watch.feed(.link(.connected("fuzz")))
  while !input.isAtEnd {
    switch WatchOperation(rawValue: input.byte() % UInt8(WatchOperation.allCases.count))! {
    case .sessionStarted:
      watch.mtu = 23 + 2 * Int(input.byte())
      watch.feed(.sessionStarted(mtu: watch.mtu))
    case .notificationSourceEvent: watch.feed(.notificationSource(input.bytes(8)))
    case .notificationSourceValue: watch.feed(.notificationSource(input.chunk()))
    case .dataSourceValue: watch.feed(.dataSource(input.chunk()))
    case .dataSourceAnswer:
      for fragment in dataSourceFragments(watch.answerHeader + input.chunk(), maximumSize: watch.mtu - 3) {
        watch.feed(.dataSource(Array(fragment)))
      }
    case .writeResponse: watch.feed(.written(nil))
    case .writeError: watch.feed(.written(input.byte()))
    case .writeFailed: watch.feed(.writeFailed("fuzz"))
    case .tick:
      watch.now += .milliseconds(250 * Int(input.byte()))
      watch.feed(.tick)
    case .perform:
      let (uid, action) = (input.u32(), ActionID(rawValue: input.byte()))
      watch.acted.insert(UInt64(uid) << 8 | UInt64(action.rawValue))
      // Now and then asked in the session before this one.
      let stale = input.byte() & 1
      watch.feed(.perform(uid: uid, action: action, session: watch.machine.state.session - Int(stale)))
    case .probed: watch.feed(.probed(subscribed: input.byte() & 1 == 1))
    case .currentTime: watch.feed(.currentTime(input.chunk()))
    case .battery: watch.feed(.battery(input.byte()))
    case .link:
      let states: [LinkState] = [
        .connecting, .connected("fuzz"), .reconnecting(attempt: 1, retryIn: .seconds(1), reason: "fuzz"), .stopped,
      ]
      watch.feed(.link(states[Int(input.byte()) % states.count]))
    }
  }
}

/// The machine and what its outputs have told so far.
private struct Harness {
  var machine: WatchMachine
  var now: Duration = .zero
  var mtu = 23
  /// The actions the wearer asked for: UID << 8 | ActionID.
  var acted: Set<UInt64> = []
  /// UIDs announced and not removed since.
  private var announced: Set<UInt32> = []
  /// A Control Point write is unanswered, as far as the inputs since tell.
  private var writing = false
  private var lastWrite: ControlPointCommand?
  private var step = 0

  init(machine: WatchMachine) { self.machine = machine }

  /// The header of an answer to the last command written: its CommandID and UID or
  /// AppIdentifier, so that fuzzed tuples reach the watch's parser.
  var answerHeader: [UInt8] {
    switch lastWrite {
    case .getNotificationAttributes(let get)?:
      let uid = get.notificationUID
      return [0] + (0..<4).map { UInt8(truncatingIfNeeded: uid >> (8 * $0)) }
    case .getAppAttributes(let get)?: return [1] + Array(get.appIdentifier.utf8) + [0]
    default: return []
    }
  }

  mutating func feed(_ input: WatchMachine.Input) {
    step += 1
    let context = { [step] in "step \(step): \(input)" }
    switch input {
    case .written(nil):
      // A Write Response ends an action; a fetch goes on until its answer.
      if case .performNotificationAction? = lastWrite { writing = false }
    case .written, .writeFailed, .dataSource, .tick, .sessionStarted, .link: writing = false
    default: break
    }
    var writes = 0
    let due = machine.deadline
    let actions = machine.handle(input, now: now)
    trace("\(context()) at \(now) -> \(actions); deadline \(String(describing: machine.deadline))")
    if case .tick = input {
      // The driver sleeps until the deadline: a tick before it must change nothing, and one
      // after it must leave a later deadline (or none), or the driver would spin.
      if due.map({ now < $0 }) ?? true {
        require(actions.isEmpty, "\(context()): a tick before the deadline (\(String(describing: due))) acted")
        // Work that emits nothing (a recheck queued behind a command) would move it.
        require(machine.deadline == due, "\(context()): a tick before the deadline moved it")
      }
      if let after = machine.deadline { require(after > now, "\(context()): the deadline \(after) is not after it") }
    }
    // A Write Response to the sharing check that starts a new session (sharing came back
    // mid-session) ends the check: nothing of the old session is awaited any more.
    if case .written(nil) = input, actions.contains(where: { if case .resubscribe = $0 { true } else { false } }) {
      writing = false
    }
    for action in actions {
      switch action {
      case .write(let bytes):
        writes += 1
        require(!writing && writes == 1, "\(context()): a second command while one is unanswered")
        writing = true
        do {
          let command = try ControlPointCommand(decoding: bytes)
          require(command.encoded() == bytes, "\(context()): \(Hex.encode(bytes)) is not canonical")
          lastWrite = command
        } catch {
          require(false, "\(context()): wrote \(Hex.encode(bytes)): \(error)")
        }
        switch lastWrite {
        case .getNotificationAttributes(let get)?:
          let uid = get.notificationUID
          // UID 0xFFFFFFFF is the watch's check that the phone shares its notifications.
          require(
            uid == 0xFFFF_FFFF || machine.state.notification(uid) != nil,
            "\(context()): fetches UID \(uid), which it does not list")
        case .performNotificationAction(let action)?:
          let key = UInt64(action.notificationUID) << 8 | UInt64(action.actionID.rawValue)
          require(acted.contains(key), "\(context()): \(action) nobody asked for")
        default:
          break
        }
      case .emit(.added(let notification)):
        require(announced.insert(notification.uid).inserted, "\(context()): UID \(notification.uid) added twice")
      case .emit(.modified(let notification)):
        require(announced.contains(notification.uid), "\(context()): UID \(notification.uid) modified, never added")
      case .emit(.removed(let uid)):
        require(announced.remove(uid) != nil, "\(context()): UID \(uid) removed, never added")
      case .emit(.action(let uid, let action)):
        require(acted.contains(UInt64(uid) << 8 | UInt64(action.rawValue)), "\(context()): \(action) on UID \(uid)")
      default:
        break
      }
    }
    let listed = machine.state.notifications.map(\.uid)
    if case .notificationSource(let bytes) = input, let event = try? NotificationSourceEvent(decoding: bytes),
      event.eventID == .removed
    {
      require(!listed.contains(event.notificationUID), "\(context()): UID \(event.notificationUID) kept after Removed")
    }
    require(Set(listed).count == listed.count, "\(context()): a UID listed twice")
    require(announced.isSubset(of: listed), "\(context()): announced \(announced.subtracting(listed)) not listed")
  }
}
