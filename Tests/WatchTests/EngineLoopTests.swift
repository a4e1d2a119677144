import ANCS
import ATT
import GATT
import Links
import Testing

@testable import Watch

/// The rules of the watch engine's one loop (`WatchEngine.Core`), event by event: an event
/// that comes while another runs waits its turn, in order; an input from a session that is
/// over is dropped by the session's identity; a stopped loop takes no new event and lets its
/// last session go. No task, no clock: the loop's state is a value.
@Suite struct EngineLoopTests {
  typealias Event = WatchEngine.Event

  func core() -> WatchEngine.Core { WatchEngine.Core(machine: WatchMachine(options: WatchOptions())) }

  /// A session on a link already closed: the loop only compares its identity. Its
  /// connection has run to its end, so it keeps no handler (and no cycle through its client).
  func session() async -> WatchEngine.Session {
    let (_, watch) = MemoryLink.pair()
    let connection = ATTConnection(bearer: watch)
    let client = await GATTClient(connection: connection)
    watch.close()
    await connection.run()
    return WatchEngine.Session(client: client, controlPoint: 0x20, sourceCCCD: 0x1D, dataCCCD: 0x24, dataFirst: false)
  }

  func added(_ uid: UInt32) -> [UInt8] {
    NotificationSourceEvent(eventID: .added, categoryID: .social, categoryCount: 1, notificationUID: uid).encoded()
  }

  func writes(_ decision: WatchEngine.Decision?) -> Int {
    decision?.actions.count { if case .write = $0 { true } else { false } } ?? 0
  }

  @Test func anEventThatComesWhileOneRunsWaitsItsTurn() {
    var core = core()
    let first = core.begin(.input(.link(.connecting), from: nil), now: .zero)
    #expect(first != nil && core.running)
    // Two more while the first one's actions are being performed: queued, not run.
    #expect(core.begin(.input(.tick, from: nil), now: .zero) == nil)
    #expect(core.begin(.input(.link(.stopped), from: nil), now: .zero) == nil)
    #expect(core.machine.state.link == .connecting)
    // The one running takes them, oldest first, then stops running.
    #expect(core.next(now: .zero) != nil)
    #expect(core.machine.state.link == .connecting)
    #expect(core.next(now: .zero) != nil)
    #expect(core.machine.state.link == .stopped)
    #expect(core.next(now: .zero) == nil && !core.running)
    // Idle again: the next submitter runs its event itself.
    #expect(core.begin(.input(.tick, from: nil), now: .zero) != nil)
  }

  @Test func inputsFromASessionThatIsOverAreDropped() async {
    var core = core()
    let old = await session()
    let new = await session()
    let began = core.begin(.began(old), now: .zero)
    #expect(began?.session === old && core.machine.state.session == 1)
    _ = core.next(now: .zero)
    _ = core.decide(.input(.link(.connected("phone")), from: old.tag), now: .zero)
    // A notification of the session: fetched on its link.
    let fetch = core.decide(.input(.notificationSource(added(7)), from: old.tag), now: .zero)
    #expect(writes(fetch) == 1 && fetch.session === old)
    // Service Changed set ANCS up again: what was on its way from the old session is void.
    _ = core.decide(.began(new), now: .zero)
    #expect(core.machine.state.session == 2 && core.machine.state.notifications.isEmpty)
    let stale = core.decide(.input(.notificationSource(added(8)), from: old.tag), now: .zero)
    #expect(stale.actions.isEmpty && stale.session == nil)
    let staleAnswer = core.decide(.input(.writeFailed("late"), from: old.tag), now: .zero)
    #expect(staleAnswer.actions.isEmpty && core.machine.state.notifications.isEmpty)
    // The old session's end does not end the new one; the new one's does.
    _ = core.decide(.ended(old), now: .zero)
    #expect(core.session === new)
    let current = core.decide(.input(.notificationSource(added(9)), from: new.tag), now: .zero)
    #expect(writes(current) == 1 && current.session === new)
    _ = core.decide(.ended(new), now: .zero)
    #expect(core.session == nil)
  }

  @Test func aStoppedLoopTakesNoNewEventAndLetsItsSessionGo() async {
    var core = core()
    _ = core.begin(.began(await session()), now: .zero)
    core.finished = true
    // Still running its last event: the session stays until that is done.
    #expect(core.ended().isEmpty && core.session != nil)
    #expect(core.begin(.input(.tick, from: nil), now: .zero) == nil)
    #expect(core.next(now: .zero) == nil)
    _ = core.ended()
    #expect(core.session == nil)
  }

  /// A tick the timer fires while another event runs waits its turn, and the timer asks for
  /// no other until it has run: it would otherwise find the deadline still due and fire
  /// again 10 ms later, gathering a tick every 10 ms behind a busy loop. A tick that finds
  /// nothing due brings the timer back to the machine's deadline with its decision.
  @Test func aTickWaitingItsTurnHoldsTheTimer() {
    var core = core()
    _ = core.begin(.input(.sessionStarted(mtu: 23), from: nil), now: .zero)
    _ = core.next(now: .zero)
    _ = core.begin(.input(.link(.connected("phone")), from: nil), now: .zero)
    _ = core.next(now: .zero)
    // A quiet session's sharing check is due at 2 s.
    #expect(core.machine.deadline == .seconds(2))
    #expect(core.timerAsks(now: .zero, earliest: .zero) == .seconds(2))
    // An early tick (an old target's) waits behind the phone's battery level: the timer
    // parks, and the tick's decision wakes it for 2 s.
    #expect(core.begin(.input(.battery(80), from: nil), now: .seconds(1)) != nil)
    #expect(core.begin(.input(.battery(81), from: nil), now: .seconds(1)) == nil)
    #expect(core.begin(.input(.tick, from: nil), now: .seconds(1)) == nil)
    #expect(core.timerAsks(now: .seconds(1), earliest: .milliseconds(1010)) == nil)
    // An event ahead of the tick does not wake the parked timer (that would be a wake-up
    // per event queued ahead of it); the tick's decision does.
    #expect(core.next(now: .seconds(1))?.deadline == nil)
    #expect(core.next(now: .seconds(1))?.deadline == .seconds(2))
    #expect(core.next(now: .seconds(1)) == nil)
    #expect(core.timerAsks(now: .seconds(1), earliest: .milliseconds(1010)) == .seconds(2))
    // At 2 s, with the check due, the same: one tick at a time, and the check made once.
    let busy = core.begin(.input(.battery(79), from: nil), now: .seconds(2))
    #expect(core.begin(.input(.tick, from: nil), now: .seconds(2)) == nil)
    #expect(core.timerAsks(now: .seconds(2), earliest: .milliseconds(2010)) == nil)
    #expect(writes(busy) + writes(core.next(now: .seconds(2))) == 1, "the sharing check")
  }

  /// The engine's connections run on its loop's executor (and their GATT clients with
  /// them): a PDU goes from the link to the machine, and its actions back, on one executor.
  @Test func theEnginesConnectionRunsOnItsLoop() async throws {
    let rig = try Rig()
    try await rig.ready()
    let connection = try #require(rig.watch.shared.withLock { $0.connection })
    let executors = [
      connection.unownedExecutor, rig.watch.loop.unownedExecutor,
      ATTConnection(bearer: MemoryLink.pair().central).unownedExecutor,
    ]
    let words = executors.map { unsafeBitCast($0, to: (UInt, UInt).self) }
    #expect(words[0] == words[1])
    #expect(words[0] != words[2], "a connection of its own")
    await rig.stop()
  }
}
