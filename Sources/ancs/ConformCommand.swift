import ATT
import Conformance
import Dispatch
import Foundation
import Links
import Wire

/// `ancs conform`: runs the conformance catalog (Protocol/conformance.md) against a phone.
enum ConformCommand {
  static let usage = """
    usage: ancs conform phone --connect ADDRESS [--spawn COMMAND] [options]
           ancs conform --list

    Judges a phone (ANCS Notification Provider): the harness plays the accessory, connects
    to ADDRESS once per case, and checks the phone's answers against Protocol/conformance.md.
    Cases that need the phone to post notifications use a control channel: with --spawn the
    harness starts COMMAND, writes JSON-line commands ({"cmd":"post",...}) to its standard
    input and reads one JSON answer per command from its standard output (the protocol of
    `ancs phone --commands jsonl`). Without it those cases are reported SKIP, never PASS.
    The accessory role (NC) is not implemented yet.

    options:
      --connect ADDRESS   unix:PATH or tcp:HOST:PORT where the phone listens
      --spawn COMMAND     start the phone with this shell command (a leading `ancs` is this
                          binary); it is stopped when the run ends
      --case ID           run only cases whose ID starts with ID (repeatable)
      --list              list the selected cases and exit
      --timeout S         longest a case may take, in seconds (default 5)
      --junit FILE        write a JUnit XML report
      --tap               print a TAP report on standard output (the table goes to stderr)
      --json FILE         write a JSON report
      --capture-dir DIR   where failing cases leave ID.btsnoop, '/' as '_'
                          (default ./conform-captures, created only when a case fails)

    example:
      ancs conform phone --connect unix:/tmp/phone.sock \\
        --spawn "ancs phone --listen unix:/tmp/phone.sock --commands jsonl" --junit report.xml

    exit codes: 0 every case passed (or skipped), 1 a case failed, 2 bad usage
    """

  static func run(_ arguments: [String]) async throws -> Int32 {
    var args = Arguments(arguments, command: "conform")
    if args.flag("--help", "-h") {
      printLine(usage)
      return 0
    }
    let list = args.flag("--list")
    let prefixes = args.values("--case")
    let role = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 }
    if let role {
      _ = args.flag(role)
      guard role == "phone" else {
        if role == "accessory" {
          throw UsageError("conform accessory (the NC role) is not implemented yet; try 'ancs conform phone --help'")
        }
        throw UsageError("conform takes phone or --list, not '\(role)'; try 'ancs conform --help'")
      }
    }
    let connect = try args.value("--connect")
    let spawn = try args.value("--spawn")
    let timeout = try args.seconds("--timeout", in: 0.1...600) ?? 5
    let junit = try args.value("--junit")
    let tap = args.flag("--tap")
    let json = try args.value("--json")
    let captureDirectory = try args.value("--capture-dir") ?? "conform-captures"
    try args.finish()

    let (cases, unmatched) = ConformanceCatalog.select(ConformanceCatalog.np, prefixes: prefixes)
    if let prefix = unmatched.first {
      throw UsageError("no case ID starts with '\(prefix)'; 'ancs conform --list' shows them")
    }
    if list {
      printLine(ConformanceReport.list(cases))
      return 0
    }
    guard role == "phone" else { throw UsageError("conform needs a role: ancs conform phone --connect ADDRESS") }
    guard let connect else {
      throw UsageError("conform phone needs --connect unix:PATH or tcp:HOST:PORT; try 'ancs conform --help'")
    }
    let address = try twoProcessAddress(connect)
    let capturePath = try prepareCaptureDirectory(captureDirectory)

    var process: SpawnedPhone?
    var stimulus: JSONLineStimulus?
    if let spawn {
      let spawned = try SpawnedPhone(command: spawn)
      process = spawned
      let channel = JSONLineStimulus(channel: spawned)
      // The phone answers once it listens: then connecting cannot race its start-up.
      let ready = await withDeadline(seconds: timeout) { () async -> StimulusError?? in
        do {
          try await channel.ready()
          return .some(nil)
        } catch {
          return .some(error as? StimulusError ?? StimulusError("\(error)"))
        }
      }
      switch ready {
      case .some(.some(let error)):
        spawned.stop()
        printError("ancs: the spawned phone did not answer: \(error)")
        return 1
      case .none:
        spawned.stop()
        printError("ancs: the spawned phone did not answer within \(timeout) s")
        return 1
      case .some(.none): break
      }
      stimulus = channel
    }

    let phone = PhoneUnderTest(
      connect: { try await address.connect() }, stimulus: stimulus)
    let runner = ConformanceRunner(
      phone: phone, timeout: .milliseconds(Int64(timeout * 1000)), captureDirectory: capturePath)
    let results = await runner.run(cases) { index, total, result in
      printError(ConformanceReport.progressLine(index, total, result))
    }
    process?.stop()
    removeIfEmpty(capturePath)

    let summary = ConformanceReport.summary(results)
    if tap {
      printLine(ConformanceReport.tap(results))
      printError(summary)
    } else {
      printLine(summary)
    }
    if let junit { try write(ConformanceReport.junit(results), to: junit) }
    if let json { try write(ConformanceReport.json(results) + "\n", to: json) }
    return results.contains { $0.verdict == .failed } ? 1 : 0
  }

  /// The directory, created if needed; a path that cannot be one is a usage error.
  static func prepareCaptureDirectory(_ path: String) throws(UsageError) -> String {
    do {
      try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    } catch {
      throw UsageError("--capture-dir \(path): cannot create the directory (\(error.localizedDescription))")
    }
    return path
  }

  /// Leaves no empty capture directory behind when every case passed.
  static func removeIfEmpty(_ path: String) {
    if let entries = try? FileManager.default.contentsOfDirectory(atPath: path), entries.isEmpty {
      try? FileManager.default.removeItem(atPath: path)
    }
  }

  static func write(_ text: String, to path: String) throws {
    do {
      try text.write(toFile: path, atomically: true, encoding: .utf8)
    } catch {
      throw FileProblem("\(path): cannot write the report (\(error.localizedDescription))")
    }
  }

  /// `body`'s value, or nil after `seconds` of wall time.
  static func withDeadline<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async -> T?) async -> T? {
    let clock = SystemClock()
    let deadline = clock.now + .milliseconds(Int64(seconds * 1000))
    return await withTaskGroup(of: T?.self) { group in
      group.addTask { await body() }
      group.addTask {
        try? await clock.sleep(until: deadline)
        return nil
      }
      let first = await group.next() ?? nil
      group.cancelAll()
      return first
    }
  }
}

/// A phone started with `--spawn`: JSON-line commands go to its standard input, and the lines
/// of its standard output that carry `"ok"` are the answers (a phone in jsonl mode also
/// prints its events there; those are skipped). Its standard error passes through.
final class SpawnedPhone: StimulusLineChannel, @unchecked Sendable {
  private let process = Process()
  private let input = Pipe()
  private let output = Pipe()
  private let lines = Inbox<String>()
  private let exited = DispatchSemaphore(value: 0)

  init(command: String) throws(UsageError) {
    // A phone that exits makes writes to its input fail with EPIPE, not kill the harness.
    signal(SIGPIPE, SIG_IGN)
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", Self.resolve(command)]
    process.standardInput = input
    process.standardOutput = output
    let exited = exited
    process.terminationHandler = { _ in exited.signal() }
    do { try process.run() } catch {
      throw UsageError("--spawn: cannot start '\(command)': \(error.localizedDescription)")
    }
    let handle = output.fileHandleForReading
    let lines = lines
    Thread.detachNewThread {
      var buffer: [UInt8] = []
      while true {
        let data = handle.availableData
        if data.isEmpty { break }
        for byte in data {
          if byte == 0x0A {
            lines.push(String(decoding: buffer, as: UTF8.self))
            buffer.removeAll(keepingCapacity: true)
          } else {
            buffer.append(byte)
          }
        }
      }
      lines.close()
    }
  }

  /// A command starting with `ancs ` runs this very binary, so `--spawn "ancs phone ..."`
  /// works without `ancs` on the PATH.
  static func resolve(_ command: String) -> String {
    guard command.hasPrefix("ancs "),
      let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    else { return command }
    return "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'" + command.dropFirst(4)
  }

  func exchange(_ line: String) async throws(StimulusError) -> String {
    guard process.isRunning else { throw StimulusError("the spawned phone has exited") }
    do {
      try input.fileHandleForWriting.write(contentsOf: Array((line + "\n").utf8))
    } catch {
      throw StimulusError("cannot write to the spawned phone: \(error.localizedDescription)")
    }
    while let answer = await lines.next() {
      guard let json = try? JSON(parsing: answer), json["ok"] != nil else { continue }
      return answer
    }
    throw StimulusError("the spawned phone closed its output (it exited?)")
  }

  /// Asks the phone to quit, then makes sure it does.
  func stop() {
    if process.isRunning {
      try? input.fileHandleForWriting.write(contentsOf: Array("{\"cmd\":\"quit\"}\n".utf8))
      try? input.fileHandleForWriting.close()
    }
    if exited.wait(timeout: .now() + 2) == .timedOut {
      process.terminate()
      _ = exited.wait(timeout: .now() + 2)
    }
  }
}
