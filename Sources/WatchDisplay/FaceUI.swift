import AMS
import ANCS
import ATT
import Watch

/// What the face asks the outside world to do.
public enum FaceEffect: Hashable, Sendable {
  /// Ask the phone to perform an action (the engine's `perform`) on a notification of the
  /// session shown (`WatchState.session`): a UID means nothing in another.
  case perform(ActionID, uid: UInt32, session: Int)
  /// Get the wearer's attention: an Important notification or a call.
  case alert(AlertStyle)
  /// Send a remote command to the phone's media player (the engine's `media`).
  case media(RemoteCommandID)
  /// Answer the pairing that asks the wearer (the engine's `answerPairing`).
  case answerPairing(PairingAnswer)
  case quit
}

/// A pairing that asks the wearer, over every screen until it is answered or ends.
public enum PairingScreen: Hashable, Sendable {
  /// The watch shows a passkey for the wearer to type on the phone.
  case show(UInt32)
  /// Does the phone show this number? y or n.
  case compare(UInt32)
  /// The phone shows a passkey; the wearer types it here (the digits so far).
  case enter(typed: String)
}

/// A short message over the bottom of the face.
public struct Toast: Hashable, Sendable {
  public enum Kind: Hashable, Sendable {
    case info
    case important
    case error
  }
  public var text: String
  public var category: CategoryID?
  public var kind: Kind
  /// Shown until this time, on the clock the face is given.
  public var until: Duration
  /// Shown instead of `text` where that does not fit.
  public var short: String? = nil

  /// `text`, or `short` when only that fits in `width` columns.
  func fitting(_ width: Int, charset: Charset) -> String {
    guard let short, DisplayText.width(text, charset: charset) > width else { return text }
    return short
  }
}

/// Which screen the wearer is on.
public enum FacePage: Hashable, Sendable {
  case list
  case detail(UInt32)
  /// What the phone's media player plays (the Apple Media Service).
  case nowPlaying
}

/// The face's own state, next to the engine's `WatchState`: the page, the cursor, the
/// scroll positions, what was read, the toast, the settings. Keys and watch events change
/// it (`handle`, `observe`) and say what to do outside (`FaceEffect`); nothing here touches
/// a terminal, so all of it is tested with plain values.
public struct FaceUI: Hashable, Sendable {
  public var settings: FaceSettings
  /// The terminal's size and character set, as the renderer last reported them.
  public var size: Size
  public var charset: Charset
  public var page: FacePage = .list
  public var showingHelp = false
  /// Notifications announced by the engine (`added`), not yet `removed`. The engine's state
  /// also holds notifications whose attributes are still on the way; the face lists only these.
  public var listed: Set<UInt32> = []
  /// Opened at least once.
  public var seen: Set<UInt32> = []
  /// Calls the wearer sent to the background with Esc; they stay in the list.
  public var hiddenCalls: Set<UInt32> = []
  public var toast: Toast?
  /// The pairing that asks the wearer, if one does.
  public var pairing: PairingScreen?
  /// The cursor: a notification, and where it was in case that one leaves.
  public var selected: UInt32?
  var selectedIndex = 0
  var listTop = 0
  var detailTop = 0
  /// Labels of actions sent, for the confirmation toast, until the notification leaves.
  var pending: [UInt32: String] = [:]
  /// The link state last seen and since when, for "reconnecting in 3 s".
  public internal(set) var link: LinkState = .connecting
  var linkSince: Duration = .zero
  public internal(set) var everConnected = false

  public init(
    settings: FaceSettings = FaceSettings(), size: Size = Size(width: 80, height: 24), charset: Charset = .unicode
  ) {
    self.settings = settings
    self.size = size
    self.charset = charset
  }

  var layout: FaceLayout? { FaceLayout(size: size) }

  // MARK: - Derived views of the state

  /// The notifications the list shows, newest first.
  public func visible(_ state: WatchState) -> [WatchNotification] {
    state.notifications.reversed().filter { listed.contains($0.uid) }
  }

  /// The incoming call that takes over the screen, if one is ringing and not sent away.
  public func activeCall(_ state: WatchState) -> WatchNotification? {
    visible(state).first { $0.category == .incomingCall && !hiddenCalls.contains($0.uid) }
  }

  /// Whether the phone's clock is inside the quiet hours.
  public func isQuiet(_ state: WatchState, now: Duration) -> Bool {
    guard let window = settings.quietHours, let time = state.time?.current(at: now) else { return false }
    return window.contains(minuteOfDay: time.hour * 60 + time.minute)
  }

  /// The cursor's index in `visible`, or nil for an empty list.
  func selection(_ visible: [WatchNotification]) -> Int? {
    guard !visible.isEmpty else { return nil }
    if let selected, let index = visible.firstIndex(where: { $0.uid == selected }) { return index }
    return min(max(0, selectedIndex), visible.count - 1)
  }

  /// The first entry the list shows: `listTop`, moved just enough to show the cursor.
  func top(_ visible: [WatchNotification], capacity: Int) -> Int {
    guard let index = selection(visible) else { return 0 }
    let lowest = max(0, index - capacity + 1)
    let highest = min(index, max(0, visible.count - capacity))
    return min(max(listTop, lowest), max(lowest, highest))
  }

  public func unreadCount(_ state: WatchState) -> Int { visible(state).filter { !seen.contains($0.uid) }.count }

  // MARK: - Keys

  /// A key while a pairing asks the wearer: digits, Backspace and Enter for a passkey, y or n
  /// for a compared number (never Enter: a stray one must not agree), Esc to put the question away (the pairing then times out on
  /// the phone's side). Nil when no pairing asks, or the key means what it always does (a
  /// shown passkey leaves the face usable).
  public mutating func pairingKey(_ key: Key, now: Duration) -> [FaceEffect]? {
    guard let pairing else { return nil }
    switch (pairing, key) {
    case (_, .character("q")), (_, .character("Q")):
      return [.quit]
    case (.enter(let typed), .character(let character)) where ("0"..."9").contains(character):
      if typed.count < 6 { self.pairing = .enter(typed: typed + String(character)) }
    case (.enter(let typed), .backspace):
      self.pairing = .enter(typed: String(typed.dropLast()))
    case (.enter(let typed), .enter), (.enter(let typed), .character("\n")), (.enter(let typed), .character("\r")):
      guard let value = passkey(digits: typed) else {
        say("The passkey has six digits", now: now)
        return []
      }
      self.pairing = nil
      say("Passkey sent", now: now)
      return [.answerPairing(.passkey(value))]
    case (.compare, .character("y")), (.compare, .character("Y")):
      self.pairing = nil
      return [.answerPairing(.confirm(true))]
    case (.compare, .character("n")), (.compare, .character("N")):
      self.pairing = nil
      return [.answerPairing(.confirm(false))]
    case (_, .escape):
      self.pairing = nil
    case (.show, _), (_, .resize):
      return nil
    default:
      break
    }
    return []
  }

  /// Carries out the wearer's intent.
  public mutating func handle(_ intent: FaceIntent, state: WatchState, now: Duration) -> [FaceEffect] {
    sync(state, now: now)
    if showingHelp {
      if intent == .quit { return [.quit] }
      showingHelp = false
      return []
    }
    switch intent {
    case .quit: return [.quit]
    case .help:
      showingHelp = true
      return []
    case .nowPlaying:
      page = page == .nowPlaying ? .list : .nowPlaying
      return []
    case .nextTrack: return remote(.nextTrack, "Next track", state, now: now)
    case .previousTrack: return remote(.previousTrack, "Previous track", state, now: now)
    case .volumeUp: return remote(.volumeUp, "Volume up", state, now: now)
    case .volumeDown: return remote(.volumeDown, "Volume down", state, now: now)
    default: break
    }
    let visible = visible(state)
    if let call = activeCall(state) {
      switch intent {
      case .positive: return perform(.positive, on: call, session: state.session, now: now)
      case .negative: return perform(.negative, on: call, session: state.session, now: now)
      case .back: hiddenCalls.insert(call.uid)
      case .mute: toggleMute(call.category, now: now)
      default: break
      }
      return []
    }
    switch page {
    case .list:
      guard let index = selection(visible) else {
        if intent == .positive || intent == .negative || intent == .mute || intent == .open {
          say("No notifications", now: now)
        }
        return []
      }
      let capacity = layout?.listCapacity ?? 1
      switch intent {
      case .up: select(index - 1, in: visible)
      case .down: select(index + 1, in: visible)
      case .pageUp: select(index - capacity, in: visible)
      case .pageDown: select(index + capacity, in: visible)
      case .top: select(0, in: visible)
      case .bottom: select(visible.count - 1, in: visible)
      case .open:
        page = .detail(visible[index].uid)
        seen.insert(visible[index].uid)
        detailTop = 0
      case .back: toast = nil
      case .positive: return perform(.positive, on: visible[index], session: state.session, now: now)
      case .negative: return perform(.negative, on: visible[index], session: state.session, now: now)
      case .mute: toggleMute(visible[index].category, now: now)
      case .help, .quit, .nowPlaying, .nextTrack, .previousTrack, .volumeUp, .volumeDown: break
      }
    case .detail(let uid):
      guard let notification = visible.first(where: { $0.uid == uid }) else {
        page = .list
        return []
      }
      let detail = layout.map { DetailLayout(notification, layout: $0, charset: charset) }
      let viewport = detail?.viewport ?? 1
      let bottom = detail?.maximumTop ?? 0
      switch intent {
      case .up: detailTop -= 1
      case .down: detailTop += 1
      case .pageUp: detailTop -= max(1, viewport - 1)
      case .pageDown: detailTop += max(1, viewport - 1)
      case .top: detailTop = 0
      case .bottom: detailTop = bottom
      case .open: break
      case .back:
        page = .list
        selected = uid
      case .positive: return perform(.positive, on: notification, session: state.session, now: now)
      case .negative: return perform(.negative, on: notification, session: state.session, now: now)
      case .mute: toggleMute(notification.category, now: now)
      case .help, .quit, .nowPlaying, .nextTrack, .previousTrack, .volumeUp, .volumeDown: break
      }
      detailTop = min(max(0, detailTop), bottom)
    case .nowPlaying:
      switch intent {
      case .open, .pageDown: return playPause(state, now: now)
      case .up: return remote(.volumeUp, "Volume up", state, now: now)
      case .down: return remote(.volumeDown, "Volume down", state, now: now)
      case .back: page = .list
      case .positive, .negative, .mute: say("No notification here: esc for the list", now: now)
      default: break
      }
    }
    return []
  }

  /// A remote command, when the phone's player takes it now; otherwise the wearer is told.
  private mutating func remote(
    _ command: RemoteCommandID, _ label: String, _ state: WatchState, now: Duration
  ) -> [FaceEffect] {
    let playing = state.nowPlaying
    guard playing.available else {
      say("The phone shares no media player", now: now)
      return []
    }
    guard playing.commands.contains(command) else {
      say("\(label): not available now", now: now)
      return []
    }
    return [.media(command)]
  }

  /// Play or pause: the toggle when the player takes it, else whichever fits.
  private mutating func playPause(_ state: WatchState, now: Duration) -> [FaceEffect] {
    let commands = state.nowPlaying.commands
    if commands.contains(.togglePlayPause) { return remote(.togglePlayPause, "Play / pause", state, now: now) }
    let playing = state.nowPlaying.isPlaying
    return remote(playing ? .pause : .play, playing ? "Pause" : "Play", state, now: now)
  }

  private mutating func select(_ index: Int, in visible: [WatchNotification]) {
    guard !visible.isEmpty else { return }
    let clamped = min(max(0, index), visible.count - 1)
    selected = visible[clamped].uid
    selectedIndex = clamped
    listTop = top(visible, capacity: layout?.listCapacity ?? 1)
  }

  private mutating func perform(
    _ action: ActionID, on notification: WatchNotification, session: Int, now: Duration
  ) -> [FaceEffect] {
    let positive = action == .positive
    guard positive ? notification.hasPositiveAction : notification.hasNegativeAction else {
      let name = notification.appName.isEmpty ? "This notification" : notification.appName
      say("\(name) offers no \(positive ? "positive" : "negative") action", now: now)
      return []
    }
    var label = positive ? notification.positiveActionLabel : notification.negativeActionLabel
    if label.isEmpty { label = positive ? "Accept" : "Decline" }
    pending[notification.uid] = label
    say("\(label)…", category: notification.category, now: now)
    return [.perform(action, uid: notification.uid, session: session)]
  }

  private mutating func toggleMute(_ category: CategoryID, now: Duration) {
    let name = Symbols.name(category)
    if settings.muted.remove(category) != nil {
      say("\(name) unmuted", category: category, now: now)
    } else {
      settings.muted.insert(category)
      say("\(name) muted: listed, never rung", short: "\(name) muted", category: category, now: now)
    }
  }

  /// What the wearer learns of bond trouble; routine encryption with the bond says nothing.
  private mutating func sayBond(_ change: BondEvent, now: Duration) {
    switch change {
    case .keyMissing:
      say(
        "The phone keeps a bond this watch lost: forget the watch in the phone's Bluetooth settings",
        short: "Forget the watch on the phone", kind: .error, now: now)
    case .repairingRefused:
      say("Refused to pair again with the phone", kind: .error, now: now)
    case .pairingRefused:
      say("The phone refused to pair", kind: .error, now: now)
    case .bonded(_, _, let again):
      say(again ? "Paired again with the phone" : "Paired with the phone", now: now)
    case .forgotten:
      say("Bond forgotten", now: now)
    case .pairing(_, .showPasskey(let value)):
      say("Type \(sixDigits(value)) on the phone", short: sixDigits(value), now: now)
    case .pairing(_, .compare(let value)):
      say("Does the phone show \(sixDigits(value))?", short: sixDigits(value), now: now)
    case .pairing(_, .enterPasskey):
      say("Type the passkey the phone shows", short: "Type the passkey", now: now)
    case .encrypted, .peerLostKey:
      break
    }
    // The question stays up until the pairing ends, one way or another.
    switch change {
    case .pairing(_, .showPasskey(let value)): pairing = .show(value)
    case .pairing(_, .compare(let value)): pairing = .compare(value)
    case .pairing(_, .enterPasskey): pairing = .enter(typed: "")
    case .forgotten: break
    default: pairing = nil
    }
  }

  private mutating func say(
    _ text: String, short: String? = nil, category: CategoryID? = nil, kind: Toast.Kind = .info, now: Duration
  ) {
    toast = Toast(text: text, category: category, kind: kind, until: now + settings.messageTime, short: short)
  }

  // MARK: - Watch events

  /// Follows what the engine reports: new notifications toast and ring, removed ones leave
  /// every screen, actions are confirmed.
  public mutating func observe(_ event: WatchEvent, state: WatchState, now: Duration) -> [FaceEffect] {
    var effects: [FaceEffect] = []
    switch event {
    case .added(let notification):
      let before = visible(state)
      let wasAtTop = page == .list && (selection(before) ?? 0) == 0
      listed.insert(notification.uid)
      let after = visible(state)
      if wasAtTop, after.first?.uid == notification.uid {
        selected = notification.uid
        selectedIndex = 0
      }
      effects += announce(notification, state: state, now: now)
    case .removed(let uid):
      let before = visible(state)
      if selected == uid || selected == nil, let index = before.firstIndex(where: { $0.uid == uid }) {
        selectedIndex = index
        let remaining = before.filter { $0.uid != uid }
        selected = remaining.isEmpty ? nil : remaining[min(index, remaining.count - 1)].uid
      }
      if page == .detail(uid) {
        page = .list
        if pending[uid] == nil { say("Removed on the phone", now: now) }
      }
      listed.remove(uid)
      seen.remove(uid)
      hiddenCalls.remove(uid)
      pending[uid] = nil
    case .action(let uid, let action):
      // The label stays until the notification leaves: its removal is the action's doing.
      let label = pending[uid] ?? (action == .positive ? "Positive action" : "Negative action")
      say("\(Symbols.of(charset).check) \(label)", now: now)
    case .error(let message):
      say(message, kind: .error, now: now)
    case .connected:
      everConnected = true
    case .sharing(let allowed):
      if allowed { say("The phone shares its notifications again", short: "Notifications shared", now: now) }
    case .bond(let change):
      sayBond(change, now: now)
    case .disconnected:
      pairing = nil
    case .modified, .time, .battery, .media, .mediaCommands, .remoteCommand:
      break
    }
    sync(state, now: now)
    return effects
  }

  /// A new notification: a toast, and the alert for an Important one or a call, unless its
  /// category is muted or it is quiet hours. Pre-existing notifications are old news.
  private mutating func announce(_ notification: WatchNotification, state: WatchState, now: Duration) -> [FaceEffect] {
    guard !notification.flags.contains(.preExisting) else { return [] }
    if settings.muted.contains(notification.category) || isQuiet(state, now: now) { return [] }
    let isCall = notification.category == .incomingCall
    let important = notification.flags.contains(.important)
    if !isCall {
      let name = notification.appName.isEmpty ? notification.appIdentifier : notification.appName
      let title = notification.title.isEmpty ? DisplayText.paragraphs(notification.message)[0] : notification.title
      let text = [name, title].filter { !$0.isEmpty }.joined(separator: ": ")
      toast = Toast(
        text: text, category: notification.category, kind: important ? .important : .info,
        until: now + settings.messageTime)
    }
    let rings = (isCall || important) && !notification.flags.contains(.silent) && settings.alert != .off
    return rings ? [.alert(settings.alert)] : []
  }

  /// Brings the face up to date with the engine's state: link changes, notifications gone
  /// (also when their `removed` event is still on the way), an expired toast, the cursor.
  public mutating func sync(_ state: WatchState, now: Duration) {
    if state.link != link {
      link = state.link
      linkSince = now
    }
    if case .connected = state.link { everConnected = true }
    let present = Set(state.notifications.map(\.uid))
    listed.formIntersection(present)
    seen.formIntersection(present)
    hiddenCalls.formIntersection(present)
    if case .detail(let uid) = page, !listed.contains(uid) { page = .list }
    if let toast, toast.until <= now { self.toast = nil }
    let visible = visible(state)
    if let index = selection(visible) {
      selected = visible[index].uid
      selectedIndex = index
      listTop = top(visible, capacity: layout?.listCapacity ?? 1)
    } else {
      selected = nil
      selectedIndex = 0
      listTop = 0
    }
  }
}
