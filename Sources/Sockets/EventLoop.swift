import CEpoll
import CSwiftRuntime
import Dispatch
import Glibc
import Links
import Runtime
import Synchronization
import Wire

/// An event loop: one thread that reads the socket links and controller streams
/// (`DescriptorStream`) handed to it and, once `unsafeTakeOverGlobalExecutor(_:)` made it
/// the process's executor, also runs the tasks of Swift concurrency. There is no
/// process-wide loop: whoever opens a link says which loop (or group of loops,
/// `EventLoopGroup`) reads it, and a loop ends with `shutdown()`.
///
/// **Reading.** The loop waits on all its descriptors at once with epoll (level-triggered)
/// and, for each one that is readable, reads what is there without blocking: a link's PDUs
/// go to its connection in place when that runs on the loop, else into the link's queue. One
/// thread instead of one per link: a phone serving a thousand watches keeps one thread and
/// one stack, not a thousand, and a busy moment costs one wake-up for all the links that
/// have data rather than one each. The loop holds each `LoopDescriptor` (and so its
/// descriptor) from `register` until the link ends or is `unregister`ed; the descriptor is
/// then removed from epoll before it can be closed, so a recycled descriptor number never
/// reaches the wrong link.
///
/// **Writing.** A link's write never blocks either: what the socket's buffer cannot take
/// waits in the link's backlog, in order, and the loop sends it as the socket becomes
/// writable again (EPOLLOUT, watched only while something waits). So a peer that reads
/// slowly or not at all never stalls the loop and the other links on it; one that leaves
/// 64 MiB unread is given up (`LinkFault.peerNotReading`).
///
/// **Calls in place.** Code on the loop's thread may queue a call to run once the job, read
/// or call running now is over, before anything else (`runAfterCurrent`, `InPlaceExecutor`):
/// an in-memory link whose two ends' connections both run on the loop hands each PDU to the
/// other end that way, in a plain call, with no task, lock or wake-up. The loop runs such
/// calls, and those they queue, until none is left, as one job: two engines talking in
/// memory hold the loop until one of them waits.
///
/// **Timers.** Code on the loop's thread may have a call run at a time (`schedule`,
/// `TimerExecutor`): the loop keeps its timers in a heap and waits for the earliest in the
/// same epoll_wait that waits for its descriptors (to the millisecond), so a timer costs no
/// task and no thread of a timer service, and fires on the loop's thread. The timers of the
/// engines that run on the loop (`OwnedTimer`: the ATT transaction timeout, the watch's
/// ticks) sleep there. A loop that ends runs its timers early.
///
/// **Running tasks.** Swift's default executor runs tasks on a pool of threads. A PDU read
/// here for a task that waits for it then costs a second wake-up, of a pool thread; between
/// two processes, one Control Point round trip costs four (each side's reader, then its
/// worker). With `unsafeTakeOverGlobalExecutor(_:)` the loop is also the global executor: the
/// task runs on this thread right after the read that resumed it, and one round trip costs
/// one wake-up per process. Every task then runs on this one thread, one job at a time, so nothing in the
/// process may block inside a task: the project's blocking calls (terminal input, accept,
/// connect, a child's output) have threads of their own. The executor is the concurrency
/// runtime's `swift_task_enqueueGlobal_hook`. Tasks with an executor preference, actors with
/// executors of their own and the main actor keep theirs; work the runtime schedules for a
/// later time (`Task.sleep`) stays with the default executor's timers and may run on its
/// threads, as Swift code must expect anyway.
///
/// Between batches of jobs the loop looks at the sockets without blocking, so a busy task
/// cannot starve the links. Once no job is ready it keeps looking, yielding the core between
/// looks, for 50 µs after it last had work, and only then blocks in epoll: a peer's answer
/// usually comes within that window, so a conversation between two processes on two cores
/// costs no wake-ups at all. A job queued from another thread while it blocks wakes it
/// through an eventfd. Jobs the loop's own thread queues (most of them: whatever a read
/// wakes, and what those tasks wake in turn) go into a queue only that thread touches, with
/// no lock; jobs from other threads wait under a lock, which a turn takes only when a flag
/// says some came.
///
/// **Actors on the loop.** The loop is also a serial executor: an actor whose
/// `unownedExecutor` is the loop's runs each job on the loop's thread, between its reads,
/// and code on that thread (a read, a task that prefers the loop) enters it with
/// `assumeIsolated` in a plain call. After `shutdown()`, what is still queued for the loop
/// runs on one thread that stands in for it, one job at a time, so such an actor stays
/// isolated.
///
/// **Blocking calls.** Whatever blocks the loop's thread stalls every link (and, as the
/// executor, every task) it serves, so the project's blocking helpers refuse to run on any
/// loop's thread (`EventLoop.refuseBlocking`), as swift-nio refuses `wait()` on its loops.
public final class EventLoop: @unchecked Sendable {

  /// At most this many reads for one link per wake-up, so a link that never runs dry
  /// cannot starve the others (level-triggered epoll brings the loop back to it).
  static let readsPerTurn = 64
  /// At most this many jobs between two looks at the sockets.
  static let jobsPerTurn = 64
  /// How long the loop keeps looking for work without blocking after it last had some.
  /// An answer from a peer process often comes within it, and then neither process sleeps:
  /// on this project's two-core VM, waking a thread that sleeps on the other core costs
  /// more than a round trip's whole work (BENCHMARKS.md, "The event loop as the executor").
  static let spinNanoseconds: UInt64 = 50_000
  /// The loop thread's stack: it runs every task's synchronous code (scenario parsing,
  /// rendering), as the default executor's threads, whose stacks are this size, did.
  static let stackSize = 8 * 1024 * 1024

  private enum Job {
    /// A job of Swift concurrency; `preferred`: queued as the loop's own, through
    /// `enqueue(_:)` (a task that prefers this loop, an actor on it), rather than as a global
    /// job.
    case task(UnownedJob, preferred: Bool)
    /// A plain call, from `execute(_:)`.
    case call(@Sendable () -> Void)
  }

  /// What other threads hand the loop, under its lock.
  private struct Queue {
    /// Jobs queued from other threads (the loop's own go to `local`).
    var jobs = FIFO<Job>()
    /// The loop is blocked in epoll, or about to be: a job queued now must wake it.
    var asleep = false
    /// The loop's thread has ended and its descriptors are closed: jobs queued now run on
    /// threads of their own, and nothing writes to the eventfd any more.
    var ended = false
    /// `shutdown()` calls waiting for the end.
    var endWaiters: [CheckedContinuation<Void, Never>] = []
    /// Descriptors to stop watching (`unregister`), for the loop's thread to take out.
    var leaving: [LoopDescriptor] = []
  }

  /// The epoll instance; -1 when it could not be made (every `register` then fails).
  private let epoll: Int32
  /// The eventfd that wakes the loop from epoll; -1 when there is none.
  private let wake: Int32
  /// False when the loop's thread could not be started. Set once, in `init`.
  private var running = false
  /// Links being read, by descriptor: they hold each `LoopDescriptor` while epoll names it (by
  /// address, in its event's data), so the loop finds a readable link with no look-up.
  /// Touched by `register` (any thread) and the loop. Nil once the loop has ended: nothing
  /// more can be registered.
  private let links = Locked<[Int32: LoopDescriptor]?>([:])
  private let queue = Locked(Queue())
  /// `queue.jobs` holds something: readable without the lock, so a turn with no job from
  /// another thread takes no lock. Set under the lock.
  private let remoteJobs = Atomic<Bool>(false)
  /// `shutdown()` was called: the loop ends after its current turn.
  private let stopping = Atomic<Bool>(false)
  /// Jobs queued on the loop's own thread while it runs (a task resumed by a read or by
  /// another task, an actor's job, `execute` there): touched only on that thread, so queuing
  /// and running them takes no lock. Most jobs come this way: whatever a PDU read on the
  /// loop wakes is queued by the loop.
  nonisolated(unsafe) private var local = FIFO<Job>()
  /// The loop's thread runs its turns and takes `local` jobs; false from the start of its
  /// end (jobs then go through `queue`, and from its end to the orphan thread). Touched only
  /// on the loop's thread.
  nonisolated(unsafe) private var takesLocal = false
  /// Timers: each one's call by number, and their deadlines, earliest first (a cancelled
  /// timer's entry stays until it comes up, and is skipped). Loop's thread only.
  nonisolated(unsafe) private var timerCalls: [UInt64: () -> Void] = [:]
  nonisolated(unsafe) private var timerHeap = TimerHeap()
  nonisolated(unsafe) private var lastTimer: UInt64 = 0
  /// Jobs queued after the loop's end, waiting for the orphan thread, and whether it runs.
  private let orphans = Locked((jobs: FIFO<Job>(), running: false))
  /// Calls queued on the loop's thread to run once the job, read or call running now is
  /// over (`runAfterCurrent`): touched only on that thread (or, after the end, the one
  /// standing in for it).
  nonisolated(unsafe) private var calls = FIFO<() -> Void>()

  /// Starts a loop and its thread.
  public init() {
    let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
    var wake: Int32 = -1
    if epoll >= 0 {
      wake = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
      var event = epoll_event()
      event.events = EPOLLIN.rawValue
      // No link's address: the wake-up.
      event.data.ptr = nil
      if wake >= 0 && epoll_ctl(epoll, EPOLL_CTL_ADD, wake, &event) != 0 {
        _ = close(wake)
        wake = -1
      }
    }
    self.epoll = epoll
    self.wake = wake
    guard epoll >= 0, wake >= 0 else {
      if epoll >= 0 { _ = close(epoll) }
      return
    }
    // The thread holds the loop until it is shut down.
    running = spawnThread(stackSize: Self.stackSize) { [self] in run() }
    if !running { Self.closeDescriptors(epoll, wake) }
  }

  private static func closeDescriptors(_ epoll: Int32, _ wake: Int32) {
    _ = close(wake)
    _ = close(epoll)
  }

  // MARK: Threads

  /// The loop whose thread this is, if any.
  public static var current: EventLoop? {
    guard let raw = pthread_getspecific(currentKey) else { return nil }
    return Unmanaged<EventLoop>.fromOpaque(raw).takeUnretainedValue()
  }

  /// True on this loop's own thread.
  public var inEventLoop: Bool { Self.current === self }

  private static let currentKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
  }()

  /// Refuses a call that blocks its thread when made on any loop's thread (see the type's
  /// description): a bug of the program, so it stops the program, as swift-nio does, naming
  /// the call. `blockingRefusal` is the test's view of the same rule.
  package static func refuseBlocking(_ call: String, file: StaticString = #fileID, line: UInt = #line) {
    if let refusal = blockingRefusal(call) { preconditionFailure(refusal, file: file, line: line) }
  }

  /// Why `call` may not block here (nil: it may).
  package static func blockingRefusal(_ call: String) -> String? {
    guard current != nil else { return nil }
    return "\(call) blocks, and was called on an event loop's thread, which it would stall"
  }

  // MARK: Shutting down

  /// Why a loop was not shut down.
  public enum ShutdownRefusal: Error, Equatable, CustomStringConvertible {
    /// The loop runs the process's tasks (`unsafeTakeOverGlobalExecutor(_:)`): it ends with
    /// the process.
    case globalExecutor

    public var description: String { "the event loop runs the process's tasks; it ends with the process" }
  }

  /// Ends the loop: every link it reads is disconnected (their receivers see the end), its
  /// thread ends, and links opened on it afterwards fail with ESHUTDOWN. Returns once the
  /// thread has ended (it waits without blocking); a second call returns at once. Refused
  /// for the process's executor loop.
  public func shutdown() async throws(ShutdownRefusal) {
    if Self.executorLock.withLock({ _ in Self.executorLoop === self }) { throw .globalExecutor }
    guard running else { return }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let waiting = queue.withLock { queue -> Bool in
        if queue.ended { return false }
        stopping.store(true, ordering: .releasing)
        queue.endWaiters.append(continuation)
        // Under the lock that the loop's end takes to close the eventfd.
        wakeLocked()
        return true
      }
      if !waiting { continuation.resume() }
    }
  }

  /// Wakes the loop from epoll; called with `queue`'s lock held, before the loop has ended
  /// (so the eventfd is still open and still ours).
  private func wakeLocked() {
    var one: UInt64 = 1
    _ = write(wake, &one, MemoryLayout<UInt64>.size)
  }

  // MARK: Sockets

  /// Starts reading `core`'s descriptor; false (errno set) when it cannot be watched:
  /// ESHUTDOWN once the loop has been shut down, EMFILE when its thread never started.
  func register(_ core: LoopDescriptor) -> Bool {
    guard running else {
      errno = EMFILE
      return false
    }
    let fd = core.descriptor.fd
    // Added under the lock that the loop's end takes, so a link is either ended with the
    // loop or refused, never left unread.
    let code = links.withLock { links -> Int32 in
      guard links != nil else { return ESHUTDOWN }
      var event = epoll_event()
      event.events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
      // Unretained: `links` holds the core until the loop has taken it out of epoll.
      event.data.ptr = Unmanaged.passUnretained(core).toOpaque()
      if epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0 { return errno }
      links?[fd] = core
      return 0
    }
    errno = code
    return code == 0
  }

  /// Stops watching `core` and lets go of it, from any thread: for a descriptor whose end
  /// the loop would not see by itself (a serial port closed by this side stays silent, where
  /// a socket shut down reads as its end). The loop's thread takes it out, so no event for it
  /// is being handled meanwhile.
  func unregister(_ core: LoopDescriptor) {
    // A loop whose thread never started watches nothing (and its eventfd is closed).
    guard running else { return }
    queue.withLock { queue in
      if queue.ended { return }
      queue.leaving.append(core)
      wakeLocked()
    }
  }

  /// Takes out the descriptors `unregister` named; on the loop's thread.
  private func takeOutLeaving() {
    let leaving = queue.withLock { queue -> [LoopDescriptor] in
      defer { queue.leaving = [] }
      return queue.leaving
    }
    for core in leaving { forget(core) }
    // What the ends they told of queued.
    runCalls()
  }

  /// Takes `core` out of epoll, tells it, then lets go of it (its descriptor closes with its
  /// last owner); on the loop's thread, after its last event.
  private func forget(_ core: LoopDescriptor) {
    let fd = core.descriptor.fd
    let removed = links.withLock { links -> Bool in
      guard links?[fd] === core else { return false }
      _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
      links?[fd] = nil
      return true
    }
    if removed { core.didLeave() }
  }

  /// Watches `core`'s descriptor for room to write too (`on`: its backlog waits), or no
  /// longer; on the loop's thread, which alone changes the backlog.
  func watchWritable(_ core: LoopDescriptor, _ on: Bool) {
    var event = epoll_event()
    event.events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (on ? EPOLLOUT.rawValue : 0)
    event.data.ptr = Unmanaged.passUnretained(core).toOpaque()
    // Fails harmlessly (ENOENT) once the loop has taken the socket out of epoll.
    _ = epoll_ctl(epoll, EPOLL_CTL_MOD, core.descriptor.fd, &event)
  }

  // MARK: Timers

  /// Runs `call` on the loop's thread once `deadline` has come (or sooner, at the loop's
  /// end); the loop waits for its earliest timer in the same epoll_wait that waits for its
  /// descriptors (to the millisecond, rounded up). Only on the loop's thread while it runs:
  /// nil otherwise.
  public func schedule(at deadline: ContinuousClock.Instant, _ call: @escaping () -> Void) -> UInt64? {
    guard inEventLoop && takesLocal else { return nil }
    lastTimer += 1
    timerCalls[lastTimer] = call
    timerHeap.push(deadline, lastTimer)
    // Cancelled timers wait in the heap until they come up: not more than the live ones.
    if timerHeap.count > 64 && timerHeap.count > 2 * timerCalls.count {
      timerHeap = TimerHeap(timerHeap.entries.filter { timerCalls[$0.id] != nil })
    }
    return lastTimer
  }

  /// Timers scheduled and not yet run or cancelled; on the loop's thread (for tests).
  package var pendingTimers: Int { inEventLoop ? timerCalls.count : -1 }

  /// Cancels a timer that has not run: true when it had not (it never will now). On the
  /// loop's thread.
  public func cancel(_ timer: UInt64) -> Bool {
    precondition(inEventLoop, "a timer was cancelled off its event loop's thread")
    return timerCalls.removeValue(forKey: timer) != nil
  }

  /// Runs the timers that are due, each followed by the calls it queued; returns the time
  /// until the next one, if any. Timers set while it runs wait for the next turn.
  private func runTimers() -> Duration? {
    if timerHeap.count == 0 { return nil }
    let now = ContinuousClock.now
    let last = lastTimer
    while let first = timerHeap.first {
      guard timerCalls[first.id] != nil else {
        timerHeap.pop()
        continue
      }
      // One set since this turn began waits for the next (a call that sets itself again
      // for a time past cannot hold the loop here).
      if first.deadline > now || first.id > last { return max(.zero, first.deadline - now) }
      timerHeap.pop()
      timerCalls.removeValue(forKey: first.id)?()
      runCalls()
    }
    return nil
  }

  /// `duration` in whole milliseconds for epoll_wait, rounded up (a timer never fires
  /// early), at most a day.
  private static func milliseconds(_ duration: Duration) -> Int32 {
    let (seconds, attoseconds) = duration.components
    if seconds >= 86_400 { return 86_400_000 }
    return Int32(max(0, seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000))
  }

  // MARK: Jobs

  /// Why the loop did not become Swift's global executor.
  package enum TakeOverRefusal: Error, Equatable, CustomStringConvertible {
    /// The loop's thread could not be started.
    case loopNotRunning
    /// The runtime's hook already holds another executor's (a library, a debugger).
    case anotherHookInstalled
    /// This compiler's runtime is not one the take-over was checked against.
    case uncheckedCompiler
    /// Another loop already runs the process's tasks.
    case anotherLoopInstalled

    package var description: String {
      switch self {
      case .loopNotRunning: return "the event loop's thread could not be started"
      case .anotherHookInstalled: return "another global executor hook is already installed"
      case .uncheckedCompiler: return "the take-over is checked on Swift 6.3 only"
      case .anotherLoopInstalled: return "another event loop already runs the process's tasks"
      }
    }
  }

  /// Makes `loop` Swift's global executor for the rest of the process (see the
  /// type's description). Unsafe, as swift-nio names its own take-over: it replaces the
  /// runtime's executor through a hook that is no public API, so every task then runs on
  /// one thread, where a blocking call stalls them all. Call it once, first thing in `main`,
  /// before tasks exist. It installs the hook with a compare-and-swap, so it happens at most
  /// once and never over another hook; it refuses on a compiler it was not checked with
  /// (the hook's signature is the runtime's, ConcurrencyHooks.def). A second call is
  /// harmless; one with another loop is refused. Returns why it refused (nil: done); on
  /// refusal nothing changes, tasks stay on Swift's own pool. The loop then refuses
  /// `shutdown()`: it ends with the process.
  package static func unsafeTakeOverGlobalExecutor(_ loop: EventLoop) -> TakeOverRefusal? {
    #if compiler(>=6.3) && !compiler(>=6.4)
      guard loop.running else { return .loopNotRunning }
      return installHook(in: ancs_global_enqueue_hook_slot(), for: loop)
    #else
      return .uncheckedCompiler
    #endif
  }

  /// The loop the hook hands every global job to. Written once, before the hook is installed
  /// (the install's compare-and-swap orders the write before any read), never changed.
  nonisolated(unsafe) private static var executorLoop: EventLoop?
  private static let executorLock = Locked(())

  /// The loop's hook: each global job goes to the executor loop's queue.
  private static let hook: ancs_global_enqueue_hook = { job, _ in
    EventLoop.executorLoop.unsafelyUnwrapped.enqueue(.task(unsafeBitCast(job, to: UnownedJob.self), preferred: false))
  }

  /// Puts the hook for `loop` in `slot` (the runtime's, or a test's); nil when it is there now.
  package static func installHook(
    in slot: UnsafeMutablePointer<ancs_global_enqueue_hook?>, for loop: EventLoop
  ) -> TakeOverRefusal? {
    executorLock.withLock { _ -> TakeOverRefusal? in
      let before = executorLoop
      if let before, before !== loop { return .anotherLoopInstalled }
      executorLoop = loop
      if ancs_install_hook(slot, hook) { return nil }
      // Refused: nothing changes.
      executorLoop = before
      return .anotherHookInstalled
    }
  }

  /// Queues a job to run on the loop's thread, waking the loop if it sleeps. Once the loop
  /// has ended (a task that prefers it, or an actor on it, outlived it), the job runs on the
  /// loop's orphan thread.
  private func enqueue(_ job: Job) {
    // A loop whose thread never started runs nothing: its jobs go where an ended loop's go.
    guard running else { return orphan([job]) }
    // On the loop's thread, which is running: no lock, and nothing to wake. (Only that
    // thread reads `takesLocal`.) Jobs other threads queued before go first.
    if inEventLoop && takesLocal {
      if remoteJobs.load(ordering: .acquiring) { takeRemoteJobs() }
      local.append(job)
      return
    }
    let queued = queue.withLock { queue -> Bool in
      if queue.ended { return false }
      queue.jobs.append(job)
      remoteJobs.store(true, ordering: .releasing)
      // Under the lock that the loop's end takes to close the eventfd.
      if queue.asleep { wakeLocked() }
      queue.asleep = false
      return true
    }
    if !queued { orphan([job]) }
  }

  /// Moves the jobs other threads queued behind the loop's own; on the loop's thread.
  private func takeRemoteJobs() {
    queue.withLock { queue in
      while let job = queue.jobs.popFirst() { local.append(job) }
      remoteJobs.store(false, ordering: .releasing)
    }
  }

  /// Runs `call` on the loop's thread, after the jobs and calls queued before it, from any
  /// thread: how code off the loop reaches state the loop owns (`LoopBound`), as swift-nio's
  /// `execute`. On the loop's thread itself it is queued too, never run in place. Once the
  /// loop has ended, it runs on the thread that stands in for the loop (as a task's job does),
  /// still one at a time with the rest, so loop-bound state stays the loop's.
  public func execute(_ call: @escaping @Sendable () -> Void) {
    enqueue(.call(call))
  }

  /// Runs `body` on the loop's thread and returns its result: in place when called there,
  /// otherwise through `execute(_:)`, awaiting it without blocking. It runs on its caller's
  /// executor (`nonisolated(nonsending)`), so a caller on the loop does not hop first.
  nonisolated(nonsending) public func submit<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    if inEventLoop { return body() }
    return await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
      execute { continuation.resume(returning: body()) }
    }
  }

  /// Runs `body` on the loop's thread and returns its result, for synchronous code that must
  /// reach loop-bound state (a user's answer to a pairing prompt): in place when called
  /// there; from another thread, through `execute(_:)`, blocking that thread until it has
  /// run. Refused on another loop's thread, which must not block.
  package func runAndWait<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
    if inEventLoop { return body() }
    Self.refuseBlocking("EventLoop.runAndWait")
    let result = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    execute {
      let value = body()
      result.withLock { $0 = value }
      done.signal()
    }
    done.wait()
    return result.withLock { $0 }!
  }

  /// Jobs for a loop that has ended (or never started): run after the orphans before them,
  /// one at a time, on a thread that stands in for the loop's (with its stack size, and
  /// taken for the loop's, `inEventLoop`) while there are any, so an actor on the loop
  /// keeps running one job at a time.
  private func orphan(_ jobs: [Job]) {
    if adoptOrphans(jobs) { startOrphanThread() }
  }

  /// Queues `jobs` for the orphan thread; true when that thread must be started.
  private func adoptOrphans(_ jobs: [Job]) -> Bool {
    orphans.withLock { orphans -> Bool in
      for job in jobs { orphans.jobs.append(job) }
      if orphans.running || orphans.jobs.isEmpty { return false }
      orphans.running = true
      return true
    }
  }

  private func startOrphanThread() {
    let drain: @Sendable () -> Void = { [self] in
      let before = pthread_getspecific(Self.currentKey)
      pthread_setspecific(Self.currentKey, Unmanaged.passUnretained(self).toOpaque())
      while let next = orphans.withLock({ orphans -> Job? in
        if let next = orphans.jobs.popFirst() { return next }
        orphans.running = false
        return nil
      }) {
        Self.run(next, on: self)
        runCalls()
      }
      pthread_setspecific(Self.currentKey, before)
    }
    if !spawnThread(stackSize: Self.stackSize, drain) { drain() }
  }

  /// Runs up to `jobsPerTurn` ready jobs, each followed by the calls it queued; returns how
  /// many it ran.
  private func runJobs() -> Int {
    // Those from other threads join the loop's own, in one take of the lock.
    if remoteJobs.load(ordering: .acquiring) { takeRemoteJobs() }
    for ran in 0..<Self.jobsPerTurn {
      guard let next = local.popFirst() else { return ran }
      Self.run(next, on: self)
      runCalls()
    }
    return Self.jobsPerTurn
  }

  /// Runs the calls queued on the loop's thread, and those they queue, in order, until none
  /// is left.
  private func runCalls() {
    while let call = calls.popFirst() { call() }
  }

  /// A job queued as the loop's own (a task that prefers it, an actor on it) runs on the
  /// loop's serial executor; a global job as the default executor runs it. Run isolated to
  /// the loop with the loop also as its task executor (as swift-nio's loops run theirs),
  /// an actor's job sometimes awaited a continuation only after another job of the actor
  /// had run (`ancs watch`'s timer then parked after it was stopped, and the watch never
  /// ended: about one run in ten under load, with the process's tasks on the loop).
  private static func run(_ job: Job, on loop: EventLoop) {
    switch job {
    case .task(let job, preferred: true): job.runSynchronously(on: loop.asUnownedSerialExecutor())
    case .task(let job, preferred: false): job.runSynchronously(on: genericExecutor)
    case .call(let call): call()
    }
  }

  private static func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
  }

  /// True while the loop is blocked in epoll (or about to be), so that only the eventfd
  /// can bring it back. For tests.
  package var isAsleep: Bool { queue.withLock { $0.asleep } }

  /// The "generic" executor (no actor, no preference), as the default global executor runs
  /// its jobs: the runtime's SerialExecutorRef::generic(), two null words.
  private static let genericExecutor = unsafeBitCast((0, 0) as (Int, Int), to: UnownedSerialExecutor.self)

  // MARK: The loop

  private func run() {
    pthread_setspecific(Self.currentKey, Unmanaged.passUnretained(self).toOpaque())
    let capacity = 128
    let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
    defer { events.deallocate() }
    var buffer = [UInt8](repeating: 0, count: LinkFraming.maxFrameBody + 1)
    var lastBusy = Self.monotonicNanoseconds()
    takesLocal = true
    while !stopping.load(ordering: .acquiring) {
      let untilTimer = runTimers()
      let ran = runJobs()
      var wait: Int32 = 0
      if ran < Self.jobsPerTurn {
        let now = Self.monotonicNanoseconds()
        if ran > 0 { lastBusy = now }
        if now &- lastBusy >= Self.spinNanoseconds {
          // Idle for the whole window: block until the next timer, unless a job came
          // meanwhile. The flag is set under the lock that queuing takes.
          let limit = untilTimer.map(Self.milliseconds) ?? -1
          wait = queue.withLock { queue -> Int32 in
            if !queue.jobs.isEmpty || !local.isEmpty { return 0 }
            queue.asleep = true
            return limit
          }
        } else if ran == 0 {
          // Within the window: another look soon, letting whatever else is runnable on
          // this core (the peer process, on one core) go first.
          sched_yield()
        }
      }
      let count = epoll_wait(epoll, events, Int32(capacity), wait)
      if wait != 0 { queue.withLock { $0.asleep = false } }
      if count > 0 { lastBusy = Self.monotonicNanoseconds() }
      if count < 0 { continue }  // EINTR; nothing else can fail with these arguments
      var woken = false
      for index in 0..<Int(count) {
        guard let named = events[index].data.ptr else {
          var value: UInt64 = 0
          _ = read(wake, &value, MemoryLayout<UInt64>.size)
          woken = true
          continue
        }
        // Still in `links`: only this thread takes a core out, right after its last event.
        let core = Unmanaged<LoopDescriptor>.fromOpaque(named).takeUnretainedValue()
        let ready = events[index].events
        if ready & EPOLLOUT.rawValue != 0 {
          core.flush()
          // Room to write and nothing else: the socket has nothing to read.
          if ready == EPOLLOUT.rawValue { continue }
        }
        let open = core.readAvailable(into: &buffer, turns: Self.readsPerTurn)
        if !open { forget(core) }
        runCalls()
      }
      // After the batch: an event later in it may name a descriptor that is leaving.
      if woken { takeOutLeaving() }
    }
    end()
  }

  /// The end of the loop's thread: its links are disconnected (and let go, so their
  /// descriptors can close), the jobs still queued and any queued later run on threads of
  /// their own, and `shutdown()` returns.
  private func end() {
    // From here every job goes through `queue`, which the end empties below.
    takesLocal = false
    // Timers run now, early: whoever sleeps on one looks at the time and sleeps elsewhere.
    let timers = timerCalls.sorted { $0.key < $1.key }
    (timerCalls, timerHeap) = ([:], TimerHeap())
    for (_, call) in timers { call() }
    let cores = links.withLock { links -> [LoopDescriptor] in
      defer { links = nil }
      return Array((links ?? [:]).values)
    }
    for core in cores {
      _ = epoll_ctl(epoll, EPOLL_CTL_DEL, core.descriptor.fd, nil)
      core.disconnect(fault: .io("its event loop was shut down"))
      core.didLeave()
    }
    runCalls()
    // Let go of outside the lock: the last owner of a descriptor closes it.
    var leaving: [LoopDescriptor] = []
    let (startOrphans, waiters) = queue.withLock { queue -> (Bool, [CheckedContinuation<Void, Never>]) in
      // Closed under the lock every write to the eventfd takes, and marked ended with it.
      Self.closeDescriptors(epoll, wake)
      queue.ended = true
      swap(&leaving, &queue.leaving)
      var left: [Job] = []
      // The loop's own first: queued before the end took the rest.
      while let job = local.popFirst() { left.append(job) }
      while let job = queue.jobs.popFirst() { left.append(job) }
      defer { queue.endWaiters = [] }
      // Handed over under this lock, so that a job queued from now on (which finds the loop
      // ended) goes after them.
      return (adoptOrphans(left), queue.endWaiters)
    }
    leaving = []
    // No longer the loop's thread before the one standing in for it starts.
    pthread_setspecific(Self.currentKey, nil)
    if startOrphans { startOrphanThread() }
    for waiter in waiters { waiter.resume() }
  }
}

/// Tasks that prefer the loop (`Task(executorPreference:)`) run on its thread: for tests,
/// which cannot make the process's global executor their own. And the loop is a serial
/// executor: an actor whose `unownedExecutor` is the loop's runs every job on the loop's
/// thread, one at a time with the loop's own work (its reads), so code on the loop enters
/// it with `assumeIsolated` in a plain call, as swift-nio's loops let actors run on them.
extension EventLoop: TaskExecutor, SerialExecutor, InPlaceExecutor, TimerExecutor {
  public func enqueue(_ job: consuming ExecutorJob) {
    enqueue(.task(UnownedJob(job), preferred: true))
  }

  public func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

  /// On the loop's thread, whatever runs there is isolated to the loop (one thing at a
  /// time); elsewhere it is not.
  public func isIsolatingCurrentContext() -> Bool? { inEventLoop }

  public func checkIsolated() {
    precondition(inEventLoop, "expected to run on the event loop's thread")
  }

  public var isCurrent: Bool { inEventLoop }

  public func runAfterCurrent(_ call: @escaping () -> Void) {
    precondition(inEventLoop, "a call was queued for after the current one off the event loop's thread")
    calls.append(call)
  }
}

/// Where links are read: one event loop, or a group that hands out its loops in turn, as
/// swift-nio's groups do (a loop is a group of one).
public protocol EventLoopGroup: Sendable {
  /// The loop the next link goes to.
  func next() -> EventLoop
}

extension EventLoop: EventLoopGroup {
  public func next() -> EventLoop { self }
}

/// Several loops, one thread each, handed out in turn: a process with many connections
/// spreads their reading over the cores (one loop per core by default).
public final class ThreadedEventLoopGroup: EventLoopGroup {
  public let loops: [EventLoop]
  private let turn = Locked(0)

  /// `count` loops (at least one); by default one per online core.
  public init(count: Int = ThreadedEventLoopGroup.onlineCores) {
    loops = (0..<max(1, count)).map { _ in EventLoop() }
  }

  /// The cores online now (at least one).
  public static var onlineCores: Int { max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

  public func next() -> EventLoop {
    loops[
      turn.withLock { turn in
        defer { turn = (turn + 1) % loops.count }
        return turn
      }]
  }

  /// Shuts every loop down (`EventLoop.shutdown()`).
  public func shutdown() async throws(EventLoop.ShutdownRefusal) {
    for loop in loops { try await loop.shutdown() }
  }
}

/// Deadlines, earliest first (then by number): a binary min-heap.
struct TimerHeap {
  private(set) var entries: [(deadline: ContinuousClock.Instant, id: UInt64)] = []

  init() {}

  init(_ entries: [(deadline: ContinuousClock.Instant, id: UInt64)]) {
    for entry in entries { push(entry.deadline, entry.id) }
  }

  var count: Int { entries.count }
  var first: (deadline: ContinuousClock.Instant, id: UInt64)? { entries.first }

  private func before(_ a: Int, _ b: Int) -> Bool {
    (entries[a].deadline, entries[a].id) < (entries[b].deadline, entries[b].id)
  }

  mutating func push(_ deadline: ContinuousClock.Instant, _ id: UInt64) {
    entries.append((deadline, id))
    var child = entries.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard before(child, parent) else { break }
      entries.swapAt(child, parent)
      child = parent
    }
  }

  @discardableResult
  mutating func pop() -> (deadline: ContinuousClock.Instant, id: UInt64)? {
    guard !entries.isEmpty else { return nil }
    entries.swapAt(0, entries.count - 1)
    let top = entries.removeLast()
    var parent = 0
    while true {
      let (left, right) = (2 * parent + 1, 2 * parent + 2)
      var smallest = parent
      if left < entries.count && before(left, smallest) { smallest = left }
      if right < entries.count && before(right, smallest) { smallest = right }
      if smallest == parent { break }
      entries.swapAt(parent, smallest)
      parent = smallest
    }
    return top
  }
}
