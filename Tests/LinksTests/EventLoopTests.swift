import CSwiftRuntime
import Dispatch
import Glibc
import Runtime
import TestSupport
import Testing
import Wire

@testable import Links
@testable import Sockets

/// The event loop as an executor. The tests cannot make it the process's global executor
/// (every other test would then run on it), so their tasks prefer it instead: the same queue
/// and the same loop run them.
@Suite("Event loop", .timeLimit(scaledMinutes(1)))
struct EventLoopTests {
  @Test("tasks that prefer the loop all run on its one thread, in the order they were queued")
  func oneThreadInOrder() async {
    let loop = EventLoop()
    let ran = Locked<[(index: Int, thread: pthread_t)]>([])
    let done = Inbox<Void>()
    for index in 0..<200 {
      Task(executorPreference: loop) {
        ran.withLock { $0.append((index, pthread_self())) }
        done.push(())
      }
    }
    for _ in 0..<200 where await done.next() == nil {
      Issue.record("the loop did not run every task")
      return
    }
    let record = ran.withLock { $0 }
    #expect(record.map(\.index) == Array(0..<200))
    let threads = Set(record.map { UInt($0.thread) })
    #expect(threads.count == 1)
  }

  /// The take-over's compare-and-swap, on a slot of the test's own (the runtime's would take
  /// over every test's tasks): the hook goes in once, a second install finds it there and
  /// changes nothing, a slot that holds another executor's hook is left to it, and another
  /// loop is refused. The loop the hook serves then refuses to be shut down.
  @Test("the take-over installs its hook once, never over another executor's, for one loop only")
  func hookInstalledOnceNeverOverAnother() async {
    let loop = EventLoop()
    func install(_ slot: inout ancs_global_enqueue_hook?, for loop: EventLoop) -> EventLoop.TakeOverRefusal? {
      withUnsafeMutablePointer(to: &slot) { EventLoop.installHook(in: $0, for: loop) }
    }
    var slot: ancs_global_enqueue_hook? = nil
    #expect(install(&slot, for: loop) == nil)
    let installed = unsafeBitCast(slot, to: Int.self)
    #expect(installed != 0)
    #expect(install(&slot, for: loop) == nil)
    #expect(unsafeBitCast(slot, to: Int.self) == installed)
    var another: ancs_global_enqueue_hook? = nil
    #expect(install(&another, for: EventLoop()) == .anotherLoopInstalled)
    #expect(another == nil)

    let foreign: ancs_global_enqueue_hook = { _, _ in }
    var taken: ancs_global_enqueue_hook? = foreign
    #expect(install(&taken, for: loop) == .anotherHookInstalled)
    #expect(unsafeBitCast(taken, to: Int.self) == unsafeBitCast(foreign, to: Int.self))

    await #expect(throws: EventLoop.ShutdownRefusal.globalExecutor) { try await loop.shutdown() }
  }

  @Test("a loop knows its own thread, and blocking calls are refused there and only there")
  func currentLoopAndBlockingRefusal() async {
    let loop = EventLoop()
    defer { Task { try? await loop.shutdown() } }
    #expect(EventLoop.current == nil && !loop.inEventLoop)
    #expect(EventLoop.blockingRefusal("a wait") == nil)
    let seen = await Task(executorPreference: loop) {
      (EventLoop.current === loop, loop.inEventLoop, EventLoop.blockingRefusal("a wait"))
    }.value
    #expect(seen.0 && seen.1)
    #expect(seen.2?.hasPrefix("a wait blocks, and was called on an event loop's thread") == true)
  }

  @Test("shutting a loop down ends its links, refuses new ones, and still runs tasks that prefer it")
  func shutdownEndsLinksAndRefusesNewOnes() async throws {
    let loop = EventLoop()
    let (central, peripheral) = try UnixSeqpacketLink.pair(on: loop)
    try central.send([0x0A, 0x03, 0x00])
    #expect(try await peripheral.receive() == [0x0A, 0x03, 0x00])
    try await loop.shutdown()
    // Both ends were read by the loop: both see the end.
    #expect(try await central.receive() == nil)
    #expect(try await peripheral.receive() == nil)
    #expect(!central.isConnected && !peripheral.isConnected)
    let error = #expect(throws: LinkError.self) { _ = try UnixSeqpacketLink.pair(on: loop) }
    #expect(error?.kind == .system(errno: ESHUTDOWN), "\(String(describing: error))")
    try await loop.shutdown()  // a second time: nothing left to do
    // A task that prefers the ended loop runs on a thread of its own instead of never.
    #expect(await Task(executorPreference: loop) { 42 }.value == 42)
  }

  @Test("an actor on a loop runs every call on its thread, one at a time, and code there enters it in place")
  func anActorOnTheLoop() async throws {
    let loop = EventLoop()
    let counter = LoopCounter(loop)
    // Many callers at once: every call runs on the loop's thread, none beside another.
    await withTaskGroup(of: Bool.self) { group in
      for _ in 0..<200 { group.addTask { await counter.bump() } }
      for await onLoop in group { #expect(onLoop, "a call ran off the loop's thread") }
    }
    #expect(await counter.count == 200)
    #expect(await counter.overlaps == 0)
    // Code on the loop that is no job of the actor's (a task that prefers the loop) takes
    // it as isolated, as the loop's own reads will.
    let seen = await Task(executorPreference: loop) { counter.countInPlace() }.value
    #expect(seen == 200)
    // Off the loop, the loop says it does not isolate this code.
    #expect(loop.isIsolatingCurrentContext() == false)
    // After the loop's end, calls still run, one at a time, on the thread standing in for it.
    try await loop.shutdown()
    await withTaskGroup(of: Bool.self) { group in
      for _ in 0..<50 { group.addTask { await counter.bump() } }
      for await onLoop in group { #expect(onLoop, "a call after the end ran off the orphan thread") }
    }
    #expect(await counter.count == 250)
    #expect(await counter.overlaps == 0)
  }

  @Test("callers shutting a loop down together all return once it has ended")
  func concurrentShutdownsAllReturn() async throws {
    let loop = EventLoop()
    let (_, peripheral) = try UnixSeqpacketLink.pair(on: loop)
    try await withThrowingTaskGroup(of: Void.self) { group in
      for _ in 0..<8 { group.addTask { try await loop.shutdown() } }
      try await group.waitForAll()
    }
    #expect(!peripheral.isConnected)
  }

  @Test("a group hands out its loops in turn, each with a thread of its own")
  func groupHandsOutLoopsInTurn() async throws {
    let group = ThreadedEventLoopGroup(count: 3)
    #expect(group.loops.count == 3)
    let handed = (0..<6).map { _ in group.next() }
    #expect(handed.map { ObjectIdentifier($0) } == (group.loops + group.loops).map { ObjectIdentifier($0) })
    var threads: Set<UInt> = []
    for loop in group.loops {
      threads.insert(UInt(await Task(executorPreference: loop) { pthread_self() }.value))
    }
    #expect(threads.count == 3)
    #expect(ThreadedEventLoopGroup(count: 0).loops.count == 1)
    try await group.shutdown()
  }

  @Test("calls executed from other threads run on the loop's thread, each thread's in order, and after its end too")
  func executeRunsCallsOnTheLoop() async throws {
    let loop = EventLoop()
    let loopThread = await Task(executorPreference: loop) { pthread_self() }.value
    let ran = Locked<[(caller: Int, index: Int, onLoop: Bool, thread: pthread_t)]>([])
    let done = Inbox<Void>()
    // Two plain threads execute 100 calls each: all run on the loop, each thread's in the order it made them.
    for caller in 0..<2 {
      #expect(
        spawnThread {
          for index in 0..<100 {
            loop.execute {
              ran.withLock { $0.append((caller, index, loop.inEventLoop, pthread_self())) }
              if index == 99 { done.push(()) }
            }
          }
        })
    }
    for _ in 0..<2 where await done.next() == nil {
      Issue.record("the loop did not run every call")
      return
    }
    let record = ran.withLock { $0 }
    #expect(record.count == 200 && record.allSatisfy { $0.onLoop && pthread_equal($0.thread, loopThread) != 0 })
    for caller in 0..<2 {
      #expect(record.filter { $0.caller == caller }.map(\.index) == Array(0..<100))
    }
    // `submit` answers with what the call returned; on the loop it runs in place.
    #expect(await loop.submit { loop.inEventLoop ? 7 : -1 } == 7)
    let order = Locked<[String]>([])
    await Task(executorPreference: loop) {
      // Queued first, but run only after this job: the submitted call goes before it.
      loop.execute { order.withLock { $0.append("executed") } }
      await loop.submit { order.withLock { $0.append("submitted") } }
    }.value
    _ = await loop.submit {}
    #expect(order.withLock { $0 } == ["submitted", "executed"])
    // Once the loop has ended, a call still runs, on the thread standing in for the loop.
    try await loop.shutdown()
    #expect(await loop.submit { loop.inEventLoop } == true)
  }

  @Test("a call executed on the loop runs after one another thread executed before it")
  func executeKeepsOrderAcrossThreads() async throws {
    let loop = EventLoop()
    let order = Locked<[String]>([])
    await loop.submit {
      // Another thread executes first (its call waits: the loop is busy with this one), then
      // the loop does, once it knows.
      let executed = DispatchSemaphore(value: 0)
      let started = spawnThread {
        loop.execute { order.withLock { $0.append("from the other thread") } }
        executed.signal()
      }
      guard started else { return }
      executed.wait()
      loop.execute { order.withLock { $0.append("from the loop") } }
    }
    _ = await loop.submit {}
    #expect(order.withLock { $0 } == ["from the other thread", "from the loop"])
    try await loop.shutdown()
  }

  @Test("a job queued from another thread wakes the loop from its wait for the sockets")
  func wokenFromAnotherThread() async {
    let loop = EventLoop()
    for round in 0..<50 {
      // The task parks on the loop; with nothing else queued the loop goes back to epoll,
      // and only the eventfd can bring it back for the resumption queued from a plain thread.
      let parked = Inbox<CheckedContinuation<Int, Never>>()
      let resumed = Inbox<(Int, pthread_t, pthread_t)>()
      Task(executorPreference: loop) {
        let before = pthread_self()
        let value = await withCheckedContinuation { parked.push($0) }
        resumed.push((value, before, pthread_self()))
      }
      guard let continuation = await parked.next() else {
        Issue.record("the task never parked")
        return
      }
      // After its last job the loop keeps looking for work for a moment (it spins before
      // it sleeps): resume only once it sleeps, so that only the eventfd can wake it.
      while !loop.isAsleep && !Task.isCancelled { await Task.yield() }
      #expect(spawnThread { continuation.resume(returning: round) })
      guard let (value, before, after) = await resumed.next() else {
        Issue.record("round \(round): the loop slept through the resumption")
        return
      }
      #expect(value == round)
      #expect(pthread_equal(before, after) != 0)
    }
  }

  @Test("a loop kept busy by its tasks still reads the sockets between them", arguments: LinkKind.allCases)
  func busyLoopStillReads(kind: LinkKind) async throws {
    let ends = try await kind.open()
    defer { ends.close() }
    // This task never lets the shared loop's queue run dry (each yield queues it again), so
    // the loop never blocks in epoll; the PDU, sent once the task spins, arrives only if
    // the loop looks at the sockets between jobs.
    let spinning = Inbox<Void>()
    let received = Inbox<[UInt8]>()
    Task(executorPreference: testLoop) {
      spinning.push(())
      while !received.isClosed {
        if let pdu = ends.b.receiveIfReady() {
          received.push(pdu)
          return
        }
        await Task.yield()
      }
    }
    _ = await spinning.next()
    try ends.a.send([0x1B, 0x2A, 0x00, 0x07])
    #expect(await received.next() == [0x1B, 0x2A, 0x00, 0x07])
    received.close()  // ends the spinning if the PDU never came
  }
}

/// An actor whose executor is an event loop: it counts its calls, and any two that overlap.
private actor LoopCounter {
  let loop: EventLoop
  var count = 0
  var overlaps = 0
  private var inside = false
  init(_ loop: EventLoop) { self.loop = loop }

  nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

  /// The count, read from synchronous code on the loop, which is this actor's executor.
  nonisolated func countInPlace() -> Int { assumeIsolated { $0.count } }

  /// Counts one call; true when it ran on the loop's thread (or the one standing in for it).
  func bump() -> Bool {
    if inside { overlaps += 1 }
    inside = true
    defer { inside = false }
    count += 1
    return loop.inEventLoop
  }
}
