import Conformance
import Dispatch
import Foundation
import Runtime
import Sockets
import Wire

#if canImport(Glibc)
  import Glibc
#endif

/// A program started with `--spawn`: lines go to its standard input, each line of its
/// standard output goes to `onLine`, and `onEnd` runs when that output ends. Its standard
/// error passes through.
public final class SpawnedProcess: @unchecked Sendable {
  private let process = Process()
  private let input = Pipe()
  private let output = Pipe()
  private let exited = DispatchSemaphore(value: 0)
  private let quitLine: String

  public convenience init(
    command: String, quitLine: String, onLine: @escaping @Sendable (String) -> Void,
    onEnd: @escaping @Sendable () -> Void
  ) throws(UsageError) {
    try self.init(
      executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", Self.resolve(command)], quitLine: quitLine,
      failure: "--spawn: cannot start '\(command)'", onLine: onLine, onEnd: onEnd)
  }

  /// Starts `executable` itself (no shell in between, so `processIdentifier` is the program's).
  public init(
    executable: URL, arguments: [String], quitLine: String, failure: String,
    onLine: @escaping @Sendable (String) -> Void, onEnd: @escaping @Sendable () -> Void
  ) throws(UsageError) {
    // A program that exits makes writes to its input fail with EPIPE, not kill the harness.
    signal(SIGPIPE, SIG_IGN)
    self.quitLine = quitLine
    process.executableURL = executable
    process.arguments = arguments
    process.standardInput = input
    process.standardOutput = output
    let exited = exited
    process.terminationHandler = { _ in exited.signal() }
    do { try process.run() } catch {
      throw UsageError("\(failure): \(error.localizedDescription)")
    }
    // Foundation starts it as the leader of a process group of its own, so ending the group
    // ends what it started too (a shell's commands). However the harness ends, it ends too.
    Children.add(process.processIdentifier)
    onTerminationSignal {}
    readLines(from: output.fileHandleForReading, onLine: onLine, onEnd: onEnd)
  }

  public var processIdentifier: Int32 { process.processIdentifier }

  /// A command starting with `ancs ` runs this very binary, so `--spawn "ancs phone ..."`
  /// works without `ancs` on the PATH.
  public static func resolve(_ command: String) -> String {
    guard command.hasPrefix("ancs "),
      let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    else { return command }
    return "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'" + command.dropFirst(4)
  }

  public var isRunning: Bool { process.isRunning }

  public func send(_ line: String) throws(StimulusError) {
    guard process.isRunning else { throw StimulusError("the spawned program has exited") }
    do {
      try input.fileHandleForWriting.write(contentsOf: Array((line + "\n").utf8))
    } catch {
      throw StimulusError("cannot write to the spawned program: \(error.localizedDescription)")
    }
  }

  /// Asks the program to quit, then makes sure it does: SIGTERM to its process group after
  /// two seconds, SIGKILL two seconds later. The waiting happens on a thread of its own, not
  /// on the event loop that runs the caller.
  public func stop() async {
    await runBlocking { self.stopWaiting() }
  }

  private func stopWaiting() {
    EventLoop.refuseBlocking("stopping a spawned program")
    if process.isRunning {
      try? input.fileHandleForWriting.write(contentsOf: Array((quitLine + "\n").utf8))
      try? input.fileHandleForWriting.close()
    }
    let quit = exited.wait(timeout: .now() + 2) == .success
    if quit { exited.signal() }
    let pid = process.processIdentifier
    Children.remove(pid)
    // Also when it quit: what it left running in its group goes with it.
    Children.end(pid, grace: quit ? 0.2 : 2, exited: quit ? nil : exited)
  }
}

/// Reads `handle` on a thread of its own, line by line, until end of file.
public func readLines(
  from handle: FileHandle, follow: Bool = false, onLine: @escaping @Sendable (String) -> Void,
  onEnd: @escaping @Sendable () -> Void
) {
  detachThread {
    var buffer: [UInt8] = []
    while true {
      let data = handle.availableData
      if data.isEmpty {
        // A regular file being written: look again shortly, as `tail -f` does.
        guard follow else { break }
        usleep(20_000)
        continue
      }
      for byte in data {
        if byte == 0x0A {
          onLine(String(decoding: buffer, as: UTF8.self))
          buffer.removeAll(keepingCapacity: true)
        } else {
          buffer.append(byte)
        }
      }
    }
    if !buffer.isEmpty { onLine(String(decoding: buffer, as: UTF8.self)) }
    onEnd()
  }
}

/// A phone started with `--spawn`: JSON-line commands go to its standard input, and the lines
/// of its standard output that carry `"ok"` are the answers (a phone in jsonl mode also
/// prints its events there; those are skipped).
public final class SpawnedPhone: StimulusLineChannel, Sendable {
  private let process: SpawnedProcess
  private let lines = Inbox<String>()
  /// Sees every event line as it comes (the harness's PairingRelay).
  private let tap = Locked<(@Sendable (JSON) -> Void)?>(nil)
  /// One exchange at a time: the cases' commands and the relay's answers to the phone's
  /// pairing share its input and output.
  private let turn = Slots(1)

  public init(command: String) throws(UsageError) {
    let (lines, tap) = (lines, tap)
    process = try SpawnedProcess(command: command, quitLine: Self.quitLine) {
      Self.read($0, into: lines, tap: tap)
    } onEnd: {
      lines.close()
    }
  }

  /// `ancs ARGUMENTS` (this very binary) started directly, so `processIdentifier` is the phone's.
  public init(ancsArguments arguments: [String]) throws(UsageError) {
    let (lines, tap) = (lines, tap)
    process = try SpawnedProcess(
      executable: thisExecutable, arguments: arguments, quitLine: Self.quitLine,
      failure: "cannot start 'ancs \(arguments.joined(separator: " "))'"
    ) {
      Self.read($0, into: lines, tap: tap)
    } onEnd: {
      lines.close()
    }
  }

  private static func read(_ line: String, into lines: Inbox<String>, tap: Locked<(@Sendable (JSON) -> Void)?>) {
    if let body = tap.withLock({ $0 }), let json = try? JSON(parsing: line), json["event"]?.string != nil {
      body(json)
    }
    lines.push(line)
  }

  /// Shows every event line of the phone to `body` as well, as it comes.
  public func tap(_ body: @escaping @Sendable (JSON) -> Void) {
    tap.withLock { $0 = body }
  }

  private static let quitLine = #"{"cmd":"quit"}"#

  public var processIdentifier: Int32 { process.processIdentifier }

  public func exchange(_ line: String) async throws(StimulusError) -> String {
    // An answer naming another command is one an exchange cut short left behind.
    let sent = (try? JSON(parsing: line))?["cmd"]?.string
    let answer = try await turn.run { () throws(StimulusError) -> String in
      if Task.isCancelled { throw StimulusError("cancelled before it was sent: \(line)") }
      do { try process.send(line) } catch { throw StimulusError("the spawned phone: \(error)") }
      while let answer = await lines.next() {
        guard let json = try? JSON(parsing: answer), json["ok"] != nil else { continue }
        if let cmd = json["cmd"]?.string, let sent, cmd != sent { continue }
        return answer
      }
      throw StimulusError("the spawned phone closed its output (it exited?)")
    }
    guard let answer else { throw StimulusError("cancelled while another command waited for the phone: \(line)") }
    return answer
  }

  public func stop() async { await process.stop() }

  /// Runs `body` and returns the phone; stops it when `body` throws.
  public func stoppingOnFailure(of body: () async throws -> Void) async throws -> SpawnedPhone {
    do {
      try await body()
      return self
    } catch {
      await stop()
      throw error
    }
  }

  /// Runs `body`, then stops the phone, however `body` ends.
  public func stopping<T>(after body: () async throws -> T) async throws -> T {
    do {
      let result = try await body()
      await stop()
      return result
    } catch {
      await stop()
      throw error
    }
  }
}
