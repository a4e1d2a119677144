import ATT
import Links
import Runtime
import Wire

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A case's verdict.
public enum Verdict: String, Hashable, Sendable {
  case passed = "PASS"
  case failed = "FAIL"
  case skipped = "SKIP"
}

/// What running one case gave.
public struct CaseResult: Hashable, Sendable {
  public var id: String
  public var title: String
  public var rule: String
  public var verdict: Verdict
  /// Why it failed or was skipped; empty on a pass.
  public var detail: String
  /// Wall time, on the runner's clock.
  public var duration: Duration
  /// The btsnoop capture of a failed case, when captures were asked for.
  public var capture: String?
  /// The whole btsnoop capture of the case, passed or failed, when the runner keeps them
  /// (`ConformanceRunner.keepsCaptures`: the HTML report draws its charts from them).
  public var trace: [UInt8]?

  public init(
    id: String, title: String, rule: String, verdict: Verdict, detail: String, duration: Duration,
    capture: String? = nil
  ) {
    self.id = id
    self.title = title
    self.rule = rule
    self.verdict = verdict
    self.detail = detail
    self.duration = duration
    self.capture = capture
  }
}

/// Runs cases one after the other against a phone or an accessory, each with its own links, a
/// timeout on the injected clock, and (optionally) a btsnoop capture kept only when the case
/// fails.
public struct ConformanceRunner: Sendable {
  /// The phone NP cases judge; NP cases are skipped without one.
  public var phone: PhoneUnderTest?
  /// The accessory NC cases judge; NC cases are skipped without one.
  public var accessory: AccessoryUnderTest?
  public var clock: any EngineClock
  /// Longest a case may take, on `clock`; also its ATT transaction timeout.
  public var timeout: Duration
  /// Where failing cases leave `<ID with '/' as '_'>.btsnoop`; nil for none.
  public var captureDirectory: String?
  /// How long the run's first connection may take (`judge`); nil: as long as a case may.
  public var contactWait: Duration?
  /// Every case's capture goes into its result's `trace`, passed or failed.
  public var keepsCaptures = false
  /// Cases (by ID) that get a time of their own in place of `timeout`. The project's tests
  /// give the cases a fault is expected to fail by silence a short one, so a sweep does not
  /// spend the whole of `timeout` waiting for what never comes.
  package var caseTimeouts: [String: Duration] = [:]

  public init(
    phone: PhoneUnderTest? = nil, accessory: AccessoryUnderTest? = nil, clock: any EngineClock = SystemClock(),
    timeout: Duration = .seconds(5), captureDirectory: String? = nil, contactWait: Duration? = nil
  ) {
    self.phone = phone
    self.accessory = accessory
    self.clock = clock
    self.timeout = timeout
    self.captureDirectory = captureDirectory
    self.contactWait = contactWait
  }

  /// Runs `cases` in order; `started` sees each case (its number from 1, and the count) as it
  /// begins, `progress` each result as it comes.
  public func run(
    _ cases: [ConformanceCase], started: @Sendable (Int, Int, ConformanceCase) -> Void = { _, _, _ in },
    progress: @Sendable (Int, Int, CaseResult) -> Void = { _, _, _ in }
  ) async -> [CaseResult] {
    await judge(cases, started: started, progress: progress).results
  }

  /// What a run gave: the results so far, and why it ended early when the implementation
  /// could not be reached before any case had reached it.
  public struct Judgement: Sendable {
    public var results: [CaseResult]
    public var unreachable: String?
  }

  /// Runs `cases` in order, as `run`; with `contactWait`, the first connection of the first
  /// case that needs one may take that long, and when it cannot be made the run ends there
  /// (with nothing there, every case would fail the same way, each after its whole time).
  public func judge(
    _ cases: [ConformanceCase], started: @Sendable (Int, Int, ConformanceCase) -> Void = { _, _, _ in },
    progress: @Sendable (Int, Int, CaseResult) -> Void = { _, _, _ in }
  ) async -> Judgement {
    var results: [CaseResult] = []
    var reached = false
    for (index, testCase) in cases.enumerated() {
      started(index + 1, cases.count, testCase)
      let (result, unreachable) = await run(testCase, contactWait: reached ? nil : contactWait)
      results.append(result)
      if unreachable && !reached && contactWait != nil {
        return Judgement(results: results, unreachable: result.detail)
      }
      progress(index + 1, cases.count, result)
      if result.verdict != .skipped && !unreachable { reached = true }
    }
    return Judgement(results: results, unreachable: nil)
  }

  /// Runs one case.
  public func run(_ testCase: ConformanceCase) async -> CaseResult { await run(testCase, contactWait: nil).0 }

  /// Runs one case; true when the implementation could not be reached.
  func run(_ testCase: ConformanceCase, contactWait: Duration?) async -> (CaseResult, Bool) {
    switch testCase.body {
    case .phone where phone == nil:
      return (skipped(testCase, "no phone to judge (NP cases run with `conform phone`)"), false)
    case .accessory where accessory == nil:
      return (skipped(testCase, "no accessory to judge (NC cases run with `conform accessory`)"), false)
    default: break
    }
    let started = clock.now
    let timeout = caseTimeouts[testCase.id] ?? timeout
    var capturePath: String?
    var writer: BtsnoopWriter?
    var captureProblem = ""
    if let captureDirectory {
      let path = captureDirectory + "/" + testCase.fileName + ".btsnoop"
      do {
        writer = try BtsnoopWriter(path: path, keepsCopy: keepsCaptures)
        capturePath = path
      } catch {
        captureProblem = " (no capture: \(error))"
      }
    }
    if writer == nil && keepsCaptures { writer = try? BtsnoopWriter(inMemoryWith: BtsnoopWriter.systemClock) }
    let context: any CaseContext
    let run: @Sendable () async throws -> Void
    switch testCase.body {
    case .phone(let body):
      let np = NPContext(phone: phone!, clock: clock, timeout: timeout, capture: writer, contactWait: contactWait)
      (context, run) = (np, { try await body(np) })
    case .accessory(let body):
      await accessory?.observer?.drain()
      let nc = NCContext(
        accessory: accessory!, clock: clock, timeout: timeout, capture: writer, contactWait: contactWait)
      (context, run) = (nc, { try await body(nc) })
    }
    let body: @Sendable () async -> CaseOutcome? = {
      do {
        try await run()
        return nil
      } catch let outcome as CaseOutcome {
        return outcome
      } catch {
        return .failed("\(error)")
      }
    }
    // A case that waits on the accessory's own timers has them on top of its own time.
    // The first connection of a run may take its own wait on top.
    let budget = testCase.waitsOn.reduce(timeout + (contactWait ?? .zero)) { $0 + (accessory?.timers[$1] ?? .zero) }
    let peer = testCase.role == .nc ? "accessory" : "phone"
    // Taken before the links close: closing ends the waits the summary names.
    let atTimeout = Locked<String>("")
    let race = await Self.race(
      clock: clock, until: started + budget,
      onTimeout: {
        atTimeout.withLock { $0 = context.log.summary(peer: peer) }
        context.closeLinks()
      }, body)
    context.closeLinks()
    // Clean-up talks to the phone's control channel, which may hang too: bounded the same way.
    let cleanUp: @Sendable () async -> CaseOutcome? = {
      await context.cleanUp()
      return nil
    }
    _ = await Self.race(clock: clock, until: clock.now + timeout, onTimeout: {}, cleanUp)
    writer?.close()

    var verdict: Verdict
    var detail: String
    var unreachable = false
    switch race {
    case .finished(nil): (verdict, detail) = (.passed, "")
    case .finished(.failed(let why)): (verdict, detail) = (.failed, why)
    case .finished(.skipped(let why)): (verdict, detail) = (.skipped, why)
    case .finished(.unreachable(let why)):
      (verdict, detail) = (.failed, why)
      unreachable = true
    case .timedOut:
      (verdict, detail) = (
        .failed, "timed out after \(CaseLog.seconds(budget)) waiting for the \(peer): \(atTimeout.withLock { $0 })"
      )
    }
    if verdict == .failed && !unreachable {
      detail += captureProblem
    } else if let path = capturePath {
      // A case that passed, or never reached the implementation (an empty capture).
      unlink(path)
      capturePath = nil
    }
    var result = CaseResult(
      id: testCase.id, title: testCase.title, rule: testCase.rule, verdict: verdict, detail: detail,
      duration: clock.now - started, capture: capturePath)
    if keepsCaptures { result.trace = writer?.bytes }
    return (result, unreachable)
  }

  private func skipped(_ testCase: ConformanceCase, _ why: String) -> CaseResult {
    CaseResult(
      id: testCase.id, title: testCase.title, rule: testCase.rule, verdict: .skipped, detail: why, duration: .zero)
  }

  enum RaceResult: Sendable {
    case finished(CaseOutcome?)
    case timedOut
  }

  /// Runs `body` against a deadline on `clock`. When the deadline comes first, `onTimeout`
  /// runs (closing the links, which ends any ATT request the body waits for) and the body's
  /// task is cancelled (which ends any wait on an inbox).
  static func race(
    clock: any EngineClock, until deadline: Duration, onTimeout: @escaping @Sendable () -> Void,
    _ body: @escaping @Sendable () async -> CaseOutcome?
  ) async -> RaceResult {
    await withTaskGroup(of: RaceResult?.self) { group in
      group.addTask { .finished(await body()) }
      group.addTask {
        do { try await clock.sleep(until: deadline) } catch { return nil }
        return .timedOut
      }
      var result: RaceResult = .timedOut
      while let next = await group.next() {
        if let next {
          result = next
          break
        }
      }
      if case .timedOut = result { onTimeout() }
      group.cancelAll()
      return result
    }
  }
}

/// `body`'s result, or nil when `limit` passes first on `clock`. The body is not waited for
/// after that (it may not heed cancellation, as an accept on a listener does not): a result
/// it gives later goes to `late`, to close a link nobody took.
func firstWithin<T: Sendable>(
  _ limit: Duration, clock: any EngineClock, late: @escaping @Sendable (T) -> Void,
  _ body: @escaping @Sendable () async throws -> T
) async throws -> T? {
  let decided = Locked<Bool>(false)
  func decide() -> Bool {
    decided.withLock { done in
      defer { done = true }
      return !done
    }
  }
  let result: Result<T, any Error>? = await withCheckedContinuation { continuation in
    let timer = Task {
      try? await clock.sleep(until: clock.now + limit)
      if !Task.isCancelled, decide() { continuation.resume(returning: nil) }
    }
    Task {
      let outcome: Result<T, any Error>
      do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
      if decide() {
        timer.cancel()
        continuation.resume(returning: outcome)
      } else if case .success(let value) = outcome {
        late(value)
      }
    }
  }
  return try result?.get()
}
