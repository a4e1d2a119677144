import Dispatch
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Runs `cleanUp` and exits with 0 on SIGINT or SIGTERM (closing a listener removes its
/// socket file, so nothing is left half-made).
func onTerminationSignal(_ cleanUp: @escaping @Sendable () -> Void) {
  for number in [SIGINT, SIGTERM] {
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler {
      cleanUp()
      exit(0)
    }
    source.resume()
    signalSources.append(source)
  }
}

/// Keeps the signal sources alive for the life of the process; written only at start-up.
nonisolated(unsafe) private var signalSources: [any DispatchSourceSignal] = []

/// The contents of a UTF-8 text file; errors say what went wrong in a few words.
func readTextFile(_ path: String) throws -> String {
  guard let data = FileManager.default.contents(atPath: path) else {
    var isDirectory: ObjCBool = false
    if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
      throw FileProblem("no such file")
    }
    throw FileProblem(isDirectory.boolValue ? "is a directory" : "cannot be read (permissions?)")
  }
  guard let text = String(data: data, encoding: .utf8) else { throw FileProblem("is not UTF-8 text") }
  return text
}

struct FileProblem: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Runs `action` once when the reader of standard output goes away, if standard output is a
/// pipe or a socket (a terminal or a file has no such end). A thread of its own waits in
/// poll(2), which reports POLLERR or POLLHUP on the write end when the read end closes.
func whenStandardOutputCloses(_ action: @escaping @Sendable () -> Void) {
  var info = stat()
  guard fstat(1, &info) == 0 else { return }
  let type = info.st_mode & S_IFMT
  guard type == S_IFIFO || type == S_IFSOCK else { return }
  Thread.detachNewThread {
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
let thisExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()

/// Raises this process's soft limit on open files (RLIMIT_NOFILE) to its hard limit when
/// the soft one is below `needed`. Returns the limits then in force: a caller that needs
/// more than `soft` cannot have it (only root may raise the hard limit).
@discardableResult
func raiseOpenFileLimit(toAtLeast needed: Int) -> (soft: Int, hard: Int) {
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
struct ProcessFigures {
  var residentKiB = 0
  var threads = 0
  var openFiles = 0
  var cpuSeconds = 0.0

  init() {}

  init(of pid: Int32) {
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
  static func openFiles(of pid: Int32) -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
  }
}
