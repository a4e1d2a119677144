import ANCS
import ATT
import Links
import Phone
import Runtime
import Testing
import Watch
import Wire

/// A phone and a watch joined by memory links (a new link per connection, as a reconnecting
/// radio would give), with the watch's events collected for awaiting.
final class Rig {
  final class Links: Sendable {
    let all = Locked<[MemoryBearer]>([])
    func closeAll() { for link in all.withLock({ $0 }) { link.close() } }
  }
  let phone: Phone
  let watch: WatchEngine
  let links = Links()
  private var events: EventStream<WatchEvent>.Iterator
  /// Every event read so far.
  private(set) var history: [WatchEvent] = []
  let task: Task<Void, Never>

  /// With `keyrings`, the phone and the watch keep bonds (Links' Keyring.swift).
  init(
    phone: Phone, options: WatchOptions = WatchOptions(), clock: any EngineClock = SystemClock(),
    keyrings: (phone: Keyring, watch: Keyring)? = nil
  ) {
    self.phone = phone
    let links = self.links
    var options = options
    options.reconnectDelay = .zero
    // A test that moves a manual clock by hours would time out the AMS requests still on
    // their way after `ready()` (AMS is set up last, and sends no event when done): those
    // tests judge ANCS, and AMS has tests of its own on the system clock.
    if clock is ManualClock { options.usesMedia = false }
    watch = WatchEngine(options: options, clock: clock) {
      let (central, peripheral) = MemoryLink.pair(keyrings: (keyrings?.phone, keyrings?.watch))
      links.all.withLock { $0.append(central) }
      Task { await phone.serve(central) }
      return peripheral
    }
    events = watch.events().makeAsyncIterator()
    if let keyrings {
      phone.keepBonds(in: keyrings.phone)
      watch.keepBonds(in: keyrings.watch)
    }
    let watch = self.watch
    task = Task { await watch.run() }
  }

  convenience init(quirks: [String] = [], options: WatchOptions = WatchOptions()) throws {
    var q = Quirks()
    for name in quirks { try q.enable(name) }
    let phone = try Phone(
      quirks: q, wallClock: FixedWallClock(seconds: 1_796_040_000), apps: ["com.example.chat": "Chat"])
    self.init(phone: phone, options: options)
  }

  /// The next watch event; nil when the watch stopped.
  func next() async -> WatchEvent? {
    let event = await events.next(isolation: nil)
    if let event { history.append(event) }
    return event
  }

  var disconnects: Int { history.filter { if case .disconnected = $0 { return true } else { return false } }.count }

  /// Events until `predicate` matches; returns the match and everything before it.
  @discardableResult
  func until(_ what: String, _ predicate: (WatchEvent) -> Bool) async throws -> (WatchEvent, [WatchEvent]) {
    var seen: [WatchEvent] = []
    while let event = await next() {
      if predicate(event) { return (event, seen) }
      seen.append(event)
    }
    Issue.record("the watch stopped before \(what); saw \(seen)")
    throw CancellationError()
  }

  func connected() async throws {
    try await until("connected") { if case .connected = $0 { return true } else { return false } }
  }

  /// Connected, and done reading the phone's time and battery (the last of the set-up).
  func ready() async throws {
    try await connected()
    try await until("battery") { if case .battery = $0 { return true } else { return false } }
  }

  func added(_ title: String) async throws -> WatchNotification {
    let (event, _) = try await until("added \(title)") {
      if case .added(let n) = $0, n.title == title { return true } else { return false }
    }
    guard case .added(let notification) = event else { throw CancellationError() }
    return notification
  }

  func removed(_ uid: UInt32) async throws {
    try await until("removed \(uid)") { $0 == .removed(uid: uid) }
  }

  func stop() async {
    watch.stop()
    await task.value
    links.closeAll()
  }
}

func chat(_ title: String, message: String = "", category: CategoryID = .social) -> PhoneNotification {
  PhoneNotification(
    appIdentifier: "com.example.chat", category: category, title: title, subtitle: "sub \(title)", message: message,
    date: "20261129T120000", positiveAction: "Reply", negativeAction: "Dismiss")
}
