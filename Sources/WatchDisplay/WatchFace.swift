import Dispatch
import Runtime
import Watch
import Wire

#if canImport(Glibc)
  import Glibc
#endif

/// The terminal watch face: runs a `WatchEngine` and shows it until the wearer quits.
///
/// The engine runs on Swift concurrency; the face runs on a thread of its own that owns the
/// terminal. Engine events reach the face through an unbounded queue and the face reads the
/// engine's state as snapshots, so the engine never waits on the face; the face asks the
/// engine for actions with `perform`, which never blocks.
public enum WatchFace {
  /// How the face ended.
  public struct Exit: Sendable {
    /// 0: the wearer quit, a signal, or the deadline; 1: the engine stopped by itself (the
    /// link was lost and it does not reconnect).
    public var code: Int32
    /// One line for standard error once the terminal is back, or nil.
    public var message: String?
  }

  /// Takes the terminal and runs the engine until `q`, SIGINT/SIGTERM/SIGHUP, `deadline`
  /// (from now) or the engine's end. The terminal is restored in every case. Throws before
  /// starting anything when the terminal cannot be used.
  public static func run(engine: WatchEngine, settings: FaceSettings, until deadline: Duration? = nil)
    async throws(WatchFaceError) -> Exit
  {
    let inbox = Inbox()
    let signals = [SIGINT, SIGTERM, SIGHUP].map { number -> any DispatchSourceSignal in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { inbox.requestStop() }
      source.resume()
      return source
    }
    defer {
      for (source, number) in zip(signals, [SIGINT, SIGTERM, SIGHUP]) {
        source.cancel()
        signal(number, SIG_DFL)
      }
    }
    let terminal = try Terminal(color: settings.color)
    let events = engine.events()
    let running = Task { await engine.run() }
    let forwarding = Task {
      for await event in events { inbox.push(event) }
      inbox.finish()
    }
    let loop = Loop(engine: engine, terminal: terminal, inbox: inbox, settings: settings, deadline: deadline)
    let exit = await withCheckedContinuation { (continuation: CheckedContinuation<Exit, Never>) in
      startThread {
        let exit = loop.run()
        terminal.close()
        continuation.resume(returning: exit)
      }
    }
    engine.stop()
    await running.value
    forwarding.cancel()
    return exit
  }
}

/// Engine events waiting for the face, and the stop request of a signal.
private final class Inbox: Sendable {
  private struct Contents {
    var events: [WatchEvent] = []
    var finished = false
    var stopRequested = false
  }
  private let contents = Locked(Contents())

  func push(_ event: WatchEvent) { contents.withLock { $0.events.append(event) } }
  func finish() { contents.withLock { $0.finished = true } }
  func requestStop() { contents.withLock { $0.stopRequested = true } }

  /// The events so far, whether the engine has ended, whether a signal asked to stop.
  func take() -> (events: [WatchEvent], finished: Bool, stop: Bool) {
    contents.withLock { contents in
      defer { contents.events = [] }
      return (contents.events, contents.finished, contents.stopRequested)
    }
  }
}

/// The face's thread: events and keys in, screens out.
private final class Loop: @unchecked Sendable {
  let engine: WatchEngine
  let terminal: Terminal
  let inbox: Inbox
  let settings: FaceSettings
  let deadline: Duration?

  init(engine: WatchEngine, terminal: Terminal, inbox: Inbox, settings: FaceSettings, deadline: Duration?) {
    self.engine = engine
    self.terminal = terminal
    self.inbox = inbox
    self.settings = settings
    self.deadline = deadline
  }

  /// Wakes at least this often to move the clock, the spinner and the toasts along.
  static let tick: Int32 = 100

  func run() -> WatchFace.Exit {
    let clock = ContinuousClock()
    let end = deadline.map { clock.now + $0 }
    var ui = FaceUI(settings: settings, size: terminal.size(), charset: terminal.charset)
    var lastReason: String?
    while true {
      let (events, finished, stop) = inbox.take()
      if stop { return WatchFace.Exit(code: 0) }
      if let end, clock.now >= end { return WatchFace.Exit(code: 0) }
      let state = engineState()
      let now = engine.now
      for event in events {
        if case .disconnected(let reason) = event { lastReason = reason }
        if apply(ui.observe(event, state: state, now: now)) { return WatchFace.Exit(code: 0) }
      }
      if finished {
        let why =
          lastReason.map {
            $0 == "stopped" ? "the link to the phone was lost" : "the link to the phone was lost: \($0)"
          } ?? "the watch stopped"
        return WatchFace.Exit(code: 1, message: why)
      }
      ui.sync(state, now: now)
      terminal.draw(FaceModel.screen(state, ui, now: now))
      guard let key = terminal.key(within: Self.tick) else { continue }
      if let effects = ui.pairingKey(key, now: engine.now) {
        if apply(effects) { return WatchFace.Exit(code: 0) }
      } else if key == .resize {
        ui.size = terminal.size()
      } else if let intent = KeyMap.intent(for: key) {
        if apply(ui.handle(intent, state: engineState(), now: engine.now)) { return WatchFace.Exit(code: 0) }
      }
    }
  }

  /// The engine's state, read on the engine's loop while this thread (the face's own, never
  /// one a task runs on) waits for it: once per frame and per key.
  private func engineState() -> WatchState {
    waitOnThread { [engine] in await engine.state }
  }

  /// Carries out effects; true when one of them is quitting.
  private func apply(_ effects: [FaceEffect]) -> Bool {
    for effect in effects {
      switch effect {
      case .perform(let action, let uid, let session): engine.perform(action, on: uid, session: session)
      case .alert(let style): terminal.alert(style)
      case .media(let command): engine.media(command)
      case .answerPairing(let answer): _ = engine.answerPairing(answer)
      case .quit: return true
      }
    }
    return false
  }
}

extension WatchFace.Exit {
  init(code: Int32) { self.init(code: code, message: nil) }
}

/// Runs `body` on a new thread, not one of Swift concurrency's few: the face blocks in
/// ncurses waiting for keys. With the stack a thread gets by default (ncurses and the
/// renderer run on it); on the caller's thread if none can be made.
private func startThread(_ body: @escaping @Sendable () -> Void) {
  if !spawnThread(stackSize: 8 << 20, body) { body() }
}
