import AMS
import ANCS
import ATT
import Conformance
import Foundation
import Links
import Runtime
import TestSupport
import Testing
import Watch
import Wire

/// The project's watch, in process: it connects over memory links, and each connection it
/// makes is what the harness accepts next. Its events are the observed stream, its
/// `perform` the wearer.
func ownWatch(_ configure: (inout WatchOptions) -> Void = { _ in }) -> (WatchEngine, AccessoryUnderTest) {
  var options = WatchOptions()
  // Fast enough for the harness's 10 s per case: reconnect at once, give up on a silent
  // phone after 0.3 s, and ask for titles short enough to be exceeded (ANCS/NC/DS/BI-02).
  options.reconnectDelay = .milliseconds(1)
  options.maximumReconnectDelay = .milliseconds(1)
  options.commandTimeout = scaled(.milliseconds(300))
  // Check a silent phone's subscriptions and a ringing call soon (DISC/BV-05, NS/BV-06).
  options.livenessInterval = scaled(.milliseconds(200))
  options.callRecheckInterval = scaled(.milliseconds(200))
  // Write the subscriptions again after 8 s without an event (DISC/BV-06): longer than any
  // other case stays quiet, and than the fault sweep's 6 s per case, so that remedy never
  // rescues a case that checks another (a dropped subscription, a lost Removed). Ask again
  // 0.3 s after the phone said it does not share (CP/BV-04).
  options.resubscribeAfterSilence = scaled(.seconds(8))
  options.sharingRecheckInterval = scaled(.milliseconds(300))
  options.titleMaximum = 64
  // It requires MITM protection, and its maker says so (SEC/BV-02, SEC/BI-01).
  options.security = .authenticated
  configure(&options)
  let connections = Inbox<any ATTBearer>()
  // Both keep bonds, as a watch and an iPhone do (the SEC bond cases need them).
  let watchKeys = Keyring(
    behaviour: .init(
      acceptRepairing: !options.faults.contains(.refuseRepairing),
      wrongPasskeyReason: options.faults.contains(.wrongPasskeyMisreported)
        ? LinkFraming.RejectReason.unspecifiedReason : LinkFraming.RejectReason.confirmValueFailed))
  let harnessKeys = Keyring()
  let engine = WatchEngine(options: options) {
    // The engine's end is the one named central here; roles follow who asks for security.
    let (central, peripheral) = MemoryLink.pair(keyrings: (watchKeys, harnessKeys))
    connections.push(peripheral)
    return central
  }
  engine.keepBonds(in: watchKeys)
  let observer = AccessoryObserver()
  let events = engine.events()
  Task {
    for await event in events { observer.push(line: event.json.description) }
  }
  // Its timers, stated once, as a maker states a real accessory's.
  var timers = AccessoryTimers()
  timers.liveness = options.livenessInterval
  timers.callRecheck = options.callRecheckInterval
  timers.commandTimeout = options.commandTimeout
  timers.resubscribe = options.resubscribeAfterSilence
  timers.sharingRecheck = options.sharingRecheckInterval
  let accessory = AccessoryUnderTest(
    accept: {
      guard let bearer = await connections.next() else { throw StimulusError("the watch stopped connecting") }
      return bearer
    }, observer: observer, wearer: EngineWearer(engine: engine), timers: timers, bonds: harnessKeys,
    requiresMITM: true)
  Task { await engine.run() }
  return (engine, accessory)
}

struct EngineWearer: WearerStimulus {
  let engine: WatchEngine
  func perform(_ action: ActionID, uid: UInt32) async throws(StimulusError) { engine.perform(action, on: uid) }
  var asksRemoteCommands: Bool { true }
  func media(_ command: RemoteCommandID) async throws(StimulusError) { engine.media(command) }
}

@Suite(.timeLimit(scaledMinutes(2))) struct OwnWatchTests {
  /// The whole NC suite against the project's watch over memory links: every case passes.
  @Test func wholeSuitePassesOverMemory() async throws {
    let (engine, accessory) = ownWatch()
    defer { engine.stop() }
    // The first case also waits for the watch to connect, discover and subscribe: on two
    // cores beside the fault sweeps and the Bumble suites that once took over 10 s.
    let results = await ConformanceRunner(
      accessory: accessory, timeout: scaled(.seconds(10)), contactWait: scaled(.seconds(30))
    )
    .run(ConformanceCatalog.nc)
    #expect(ids(results, .failed) == [], "\(results.filter { $0.verdict == .failed }.map { "\($0.id): \($0.detail)" })")
    #expect(ids(results, .skipped) == [])
    #expect(results.count == ConformanceCatalog.nc.count)
  }
}

/// The accessory role through the binary, over a Unix socket, with `ancs watch` as the
/// accessory.
@Suite(.enabled(if: ancsBuilt, "needs the ancs binary: swift build --build-tests first"), .timeLimit(scaledMinutes(2)))
struct AccessoryBinaryTests {
  /// The watch's timers, stated to the harness with the same options.
  static let timers =
    "--command-timeout \(scaledSeconds(0.3)) --liveness \(scaledSeconds(0.2)) --call-recheck \(scaledSeconds(0.2)) "
    + "--resubscribe-after \(scaledSeconds(8)) --sharing-recheck \(scaledSeconds(0.3))"
  /// It requires MITM protection (on the simulated links, an authenticated link).
  static let watch = "ancs watch --headless --security mitm \(timers) --title-max 64 --reconnect-delay 0.01"
  /// What the harness is told about the watch: its timers, and that it requires MITM.
  static let stated = timers + " --requires-mitm"

  /// `--spawn`: the harness starts the watch, observes its output and is its wearer.
  @Test func wholeSuitePassesWithASpawnedWatch() async throws {
    let directory = try temporaryDirectory("nc")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let socket = "unix:\(directory)/harness.sock"
    let (status, table, log) = try await runAncs(
      [
        "conform", "accessory", "--listen", socket, "--spawn", "\(Self.watch) --connect \(socket)", "--junit",
        "\(directory)/report.xml", "--capture-dir", "\(directory)/captures", "--timeout", scaledSeconds(5),
      ] + Self.stated.split(separator: " ").map(String.init))
    let count = ConformanceCatalog.nc.count
    #expect(status == 0, "\(log.split(separator: "\n").filter { $0.contains("FAIL") })")
    #expect(table.contains("\(count) cases: \(count) passed, 0 failed, 0 skipped"), "\(table)\(log)")
    let xml = try String(contentsOfFile: "\(directory)/report.xml", encoding: .utf8)
    let (reader, parsed, _) = JUnitReader.read(xml)
    #expect(parsed && reader.testcases.count == count && reader.failedNames == [])
    #expect(!FileManager.default.fileExists(atPath: "\(directory)/captures"), "no capture is kept for passes")
  }

  /// `--observe -`: the watch runs on its own, its events piped into the harness. Without a
  /// wearer channel the action case and the two remote command cases are skipped, never
  /// passed; the others pass.
  @Test func observedFromStandardInput() async throws {
    let directory = try temporaryDirectory("observe")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let socket = "unix:\(directory)/harness.sock"
    let binary = "'\(ancsPath)'"
    let watch = Self.watch.replacingOccurrences(of: "ancs ", with: "\(binary) ")
    // The harness listens first; the watch retries until it can connect (started a moment later).
    let script = """
      (for i in $(seq 200); do [ -S '\(directory)/harness.sock' ] && break; sleep 0.05; done; \
      \(watch) --connect \(socket)) | \
      \(binary) conform accessory --listen \(socket) --observe - --json '\(directory)/report.json' \
      --timeout \(scaledSeconds(5)) \(Self.stated)
      """
    // In a process group of its own, so a time-out kills the watch too.
    let (status, out, err) = try await runProgram("/usr/bin/setsid", ["/bin/sh", "-c", script])
    #expect(status == 0, "\(out)\(err)")
    let json = try JSON(parsing: String(contentsOfFile: "\(directory)/report.json", encoding: .utf8))
    #expect(json["passed"]?.integer == ConformanceCatalog.nc.count - 3, "\(out)")
    #expect(json["skipped"]?.integer == 3)
    for id in ["ANCS/NC/CP/BV-03", "AMS/NC/RC/BV-01", "AMS/NC/RC/BV-02"] {
      #expect(err.contains("SKIP \(id)"), "\(err)")
    }
  }

  /// Issue #13 (11): with nothing there the run stops at once, one line, exit 2, and leaves
  /// no empty capture behind.
  @Test func nothingToJudgeEndsTheRun() async throws {
    let directory = try temporaryDirectory("nothing")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let (phoneStatus, _, phoneLog) = try await runAncs([
      "conform", "phone", "--connect", "unix:\(directory)/nobody.sock", "--capture-dir", "\(directory)/captures",
    ])
    #expect(phoneStatus == 2)
    #expect(
      phoneLog.trimmingCharacters(in: .whitespacesAndNewlines)
        == "ancs: nothing to judge: cannot connect to the phone: unix:\(directory)/nobody.sock: no such socket "
        + "(is `ancs phone --listen` running?)", "\(phoneLog)")
    let (status, _, log) = try await runAncs([
      "conform", "accessory", "--listen", "unix:\(directory)/harness.sock", "--wait-for-accessory", "0.2",
      "--capture-dir", "\(directory)/captures",
    ])
    #expect(status == 2)
    #expect(log.contains("ancs: nothing to judge: no accessory connected within 0.2 s"), "\(log)")
    #expect(!log.contains("FAIL"), "\(log)")
    #expect(!FileManager.default.fileExists(atPath: "\(directory)/captures"), "no empty capture is kept")
  }

  /// Issue #13 (6): the accessory example of `ancs conform --help` passes as written (its
  /// socket moved to a temporary directory, `ancs` this binary).
  @Test func helpAccessoryExamplePassesAsWritten() async throws {
    let (_, help, _) = try await runAncs(["conform", "--help"])
    let lines = help.split(separator: "\n").map(String.init)
    let start = try #require(lines.firstIndex { $0.contains("ancs conform accessory --listen unix:/tmp/h.sock --") })
    var command = ""
    for line in lines[start...] {
      let text = line.trimmingCharacters(in: .whitespaces)
      command += text.hasSuffix("\\") ? String(text.dropLast()) : text
      if !text.hasSuffix("\\") { break }
    }
    let directory = try temporaryDirectory("example")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    command = command.replacingOccurrences(of: "/tmp/h.sock", with: "\(directory)/h.sock")
      .replacingOccurrences(of: "ancs ", with: "'\(ancsPath)' ")
    let (status, out, err) = try await runProgram(
      "/usr/bin/setsid", ["/bin/sh", "-c", "cd '\(directory)' && \(command)"])
    #expect(status == 0, "\(command)\n\(out)\(err)")
    #expect(out.contains("0 failed"), "\(out)")
  }

  /// Issue #13 (10): a spawned accessory that ignores SIGTERM and never connects is ended
  /// when the harness ends, however it ends: at the end of its run and on a signal.
  @Test(arguments: [false, true])
  func aSpawnedAccessoryNeverOutlivesTheHarness(signalled: Bool) async throws {
    let directory = try temporaryDirectory("spawned")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let pidFile = "\(directory)/pid"
    // A shell that ignores SIGTERM, says its process ID and becomes a sleep (still ignoring it).
    let stubborn = "trap '' TERM; echo $$ > \(pidFile); exec sleep 300"
    let harness = Process()
    harness.executableURL = URL(fileURLWithPath: ancsPath)
    harness.arguments = [
      "conform", "accessory", "--listen", "unix:\(directory)/h.sock", "--spawn", stubborn,
      "--wait-for-accessory", signalled ? "60" : "0.5",
    ]
    harness.standardOutput = FileHandle.nullDevice
    harness.standardError = FileHandle.nullDevice
    try harness.run()
    defer { if harness.isRunning { harness.terminate() } }
    let pid = try await offThread { () -> Int32 in
      for _ in 0..<500 {
        if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
          let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
        {
          return pid
        }
        usleep(10_000)
      }
      return 0
    }
    try #require(pid > 0, "the spawned program never started")
    if signalled { kill(harness.processIdentifier, SIGTERM) }
    try await offThread { harness.waitUntilExit() }
    #expect(harness.terminationStatus == (signalled ? 0 : 2))
    // Gone within the grace period and a little more (it is reaped once it dies).
    let gone = try await offThread { () -> Bool in
      for _ in 0..<600 {
        if kill(pid, 0) != 0 && errno == ESRCH { return true }
        usleep(10_000)
      }
      return false
    }
    if !gone { kill(pid, SIGKILL) }
    #expect(gone, "the spawned program (pid \(pid)) outlived the harness")
  }

  @Test func usageErrors() async throws {
    for (arguments, expected) in [
      (["conform", "accessory"], "needs --listen"),
      (["conform", "accessory", "--listen", "memory"], "memory"),
      (["conform", "accessory", "--listen", "unix:/tmp/x.sock", "--connect", "unix:/tmp/y.sock"], "--connect"),
      (["conform", "accessory", "--listen", "unix:/tmp/x.sock", "--spawn", "true", "--observe", "-"], "not both"),
      (["conform", "accessory", "--listen", "unix:/tmp/x.sock", "--observe", "/nonexistent/events"], "/nonexistent"),
      (["conform", "phone", "--connect", "unix:/tmp/x.sock", "--observe", "-"], "conform accessory"),
      (["conform", "watch"], "not 'watch'"),
      (["conform", "accessory", "--listen", "unix:/tmp/x.sock", "--bluetooth", "hci-tcp:127.0.0.1:1"], "not both"),
      (["conform", "accessory", "--listen", "unix:/tmp/x.sock", "--peer", "C0:11:22:33:44:55"], "go with --bluetooth"),
      (["conform", "phone", "--bluetooth", "hci-tcp:127.0.0.1:1", "--peer", "C0:11:22:33:44:55"], "conform accessory"),
      (["conform", "accessory", "--bluetooth", "hci-tcp:127.0.0.1:1", "--name", "N"], "conform phone"),
      (["conform", "accessory", "--bluetooth", "hci-tcp:127.0.0.1:1", "--peer", "nope"], "--peer takes"),
      (["conform", "phone", "--connect", "unix:/tmp/x.sock", "--capture", "/tmp/c.btsnoop"], "go with --bluetooth"),
      (["conform", "accessory", "--bluetooth", "bogus:1"], "unknown Bluetooth transport"),
      // Nobody serves a controller there: the harness stops before it starts anything.
      (["conform", "phone", "--bluetooth", "hci-tcp:127.0.0.1:1", "--spawn", "true"], "hci-tcp:127.0.0.1:1"),
    ] {
      let (status, out, err) = try await runAncs(arguments)
      #expect(status == 2, "\(arguments): \(status) \(err)")
      #expect(err.contains(expected) && err.split(separator: "\n").count == 1, "\(arguments): \(err)")
      #expect(out.isEmpty)
    }
  }

  @Test func listShowsEitherRole() async throws {
    let (_, accessory, _) = try await runAncs(["conform", "--list", "accessory"])
    #expect(accessory.contains("ANCS/NC/DS/BV-01") && !accessory.contains("ANCS/NP/"))
    let (_, both, _) = try await runAncs(["conform", "--list"])
    #expect(both.contains("ANCS/NC/DS/BV-01") && both.contains("ANCS/NP/SVC/BV-01"))
  }
}
