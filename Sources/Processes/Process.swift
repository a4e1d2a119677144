import Dispatch
import Foundation
import Links
import Runtime
import Sockets
import Wire

#if canImport(Glibc)
  import Glibc
#endif

/// Runs `cleanUp` and exits with 0 on SIGINT, SIGTERM or SIGHUP (closing a listener removes
/// its socket file, so nothing is left half-made). Every process this one started is ended
/// too (`Children`). Clean-up gets two seconds: one that hangs (a controller that stopped
/// answering) cannot keep the process alive, and a second signal ends it at once.
public func onTerminationSignal(_ cleanUp: @escaping @Sendable () -> Void) {
  let first = terminationCleanUps.withLock { list in
    list.append(cleanUp)
    return list.count == 1
  }
  guard first else { return }
  for number in [SIGINT, SIGTERM, SIGHUP] {
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler {
      if terminating.withLock({ ending in
        defer { ending = true }
        return ending
      }) {
        Children.endAll(grace: 0)
        _exit(1)
      }
      let done = DispatchSemaphore(value: 0)
      detachThread {
        for cleanUp in terminationCleanUps.withLock({ $0 }) { cleanUp() }
        done.signal()
      }
      _ = done.wait(timeout: .now() + 2)
      Children.endAll()
      exit(0)
    }
    source.resume()
    signalSources.append(source)
  }
}

private let terminationCleanUps = Locked<[@Sendable () -> Void]>([])
private let terminating = Locked(false)

/// Keeps the signal sources alive for the life of the process; written only at start-up.
nonisolated(unsafe) private var signalSources: [any DispatchSourceSignal] = []

/// Runs `body` to its end from a thread that may block (a signal handler's), waiting at most
/// two seconds for it.
public func blocking(_ body: @escaping @Sendable () async -> Void) {
  EventLoop.refuseBlocking("running a clean-up to its end")
  let done = DispatchSemaphore(value: 0)
  Task {
    await body()
    done.signal()
  }
  _ = done.wait(timeout: .now() + 2)
}

/// The processes this one started and still owns, each the leader of a process group of its
/// own (as Foundation's `Process` starts them on Linux: the group's ID is the child's process
/// ID), so that ending one ends whatever it started in turn (a shell's children).
/// However this process ends (its work done, an error, a signal), they end first: SIGTERM,
/// then SIGKILL after a grace period.
public enum Children {
  private static let groups = Locked<Set<pid_t>>([])

  public static func add(_ group: pid_t) { _ = groups.withLock { $0.insert(group) } }
  public static func remove(_ group: pid_t) { _ = groups.withLock { $0.remove(group) } }

  /// SIGTERM to every group, SIGKILL to those still there after `grace` seconds.
  public static func endAll(grace: Double = 2) {
    let all = groups.withLock { groups in
      defer { groups = [] }
      return groups
    }
    for group in all { end(group, grace: grace, exited: nil) }
  }

  /// Ends one process group: SIGTERM, then SIGKILL after `grace` seconds unless `exited`
  /// (the leader's end) is signalled first, or the group is gone.
  public static func end(_ group: pid_t, grace: Double, exited: DispatchSemaphore?) {
    EventLoop.refuseBlocking("ending a child process")
    guard group > 0 else { return }
    kill(-group, SIGTERM)
    let deadline = DispatchTime.now() + grace
    if let exited, exited.wait(timeout: deadline) == .success {
      exited.signal()
    } else {
      while DispatchTime.now() < deadline, kill(-group, 0) == 0 { usleep(20_000) }
    }
    // Whatever is left of the group (the leader, or what it started and left behind).
    kill(-group, SIGKILL)
  }
}

/// Runs `action` once when the reader of standard output goes away, if standard output is a
/// pipe or a socket (a terminal or a file has no such end). A thread of its own waits in
/// poll(2), which reports POLLERR or POLLHUP on the write end when the read end closes.
public func whenStandardOutputCloses(_ action: @escaping @Sendable () -> Void) {
  var info = stat()
  guard fstat(1, &info) == 0 else { return }
  let type = info.st_mode & S_IFMT
  guard type == S_IFIFO || type == S_IFSOCK else { return }
  detachThread {
    var watched = pollfd(fd: 1, events: 0, revents: 0)
    while true {
      let ready = poll(&watched, 1, -1)
      if ready < 0 && errno == EINTR { continue }
      if ready > 0 && watched.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { action() }
      return
    }
  }
}

/// This very binary, for starting `ancs phone` as a child.
public let thisExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()

/// Raises this process's soft limit on open files (RLIMIT_NOFILE) to its hard limit when
/// the soft one is below `needed`. Returns the limits then in force: a caller that needs
/// more than `soft` cannot have it (only root may raise the hard limit).
@discardableResult
public func raiseOpenFileLimit(toAtLeast needed: Int) -> (soft: Int, hard: Int) {
  var limit = rlimit()
  guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (0, 0) }
  if limit.rlim_cur < rlim_t(clamping: needed) && limit.rlim_cur < limit.rlim_max {
    var raised = limit
    raised.rlim_cur = limit.rlim_max
    if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
  }
  return (Int(clamping: limit.rlim_cur), Int(clamping: limit.rlim_max))
}

/// What Linux says about a running process in /proc: resident memory, threads, open file
/// descriptors and CPU time. Zero for what cannot be read (the process is gone).
public struct ProcessFigures {
  public var residentKiB = 0
  public var threads = 0
  public var openFiles = 0
  public var cpuSeconds = 0.0

  public init() {}

  public init(of pid: Int32) {
    if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) {
      for line in status.split(separator: "\n") {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 2, let value = Int(fields[1]) else { continue }
        switch fields[0] {
        case "VmRSS:": residentKiB = value
        case "Threads:": threads = value
        default: break
        }
      }
    }
    openFiles = Self.openFiles(of: pid)
    // stat: utime and stime are the 14th and 15th fields; the 2nd (the name) may hold spaces.
    if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let end = stat.lastIndex(of: ")")
    {
      let fields = stat[stat.index(after: end)...].split(separator: " ")
      if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) {
        cpuSeconds = (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
      }
    }
  }

  /// Entries of /proc/PID/fd (for this process, the directory being listed counts as one).
  public static func openFiles(of pid: Int32) -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
  }
}

/// Runs `body` on a thread of its own (`spawnThread`); a process that cannot start one any
/// more says so and exits 1.
public func detachThread(stackSize: Int = 1 << 20, _ body: @escaping @Sendable () -> Void) {
  guard spawnThread(stackSize: stackSize, body) else {
    writeAll("ancs: cannot start a thread (the process is out of threads or memory)\n", to: 2)
    exit(1)
  }
}

/// Writes all of `text` to `fd`, unbuffered.
public func writeAll(_ text: String, to fd: Int32) {
  var text = text
  text.withUTF8 { buffer in
    guard var pointer = buffer.baseAddress else { return }
    var left = buffer.count
    while left > 0 {
      let written = write(fd, pointer, left)
      if written < 0 && errno == EINTR { continue }
      if written <= 0 { return }
      pointer += written
      left -= written
    }
  }
}
