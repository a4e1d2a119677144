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
