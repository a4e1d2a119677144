import ANCS
import ATT
import Conformance
import Foundation
import Links
import Phone
import Processes
import Runtime
import Sockets
import Synchronization
import Watch
import Wire

/// End-to-end figures: notifications per second from a phone's notification center to a
/// watch's model, latency, and the phone's memory per watch session.
extension Bench {
  /// What the watch asks for in the benchmark: AppIdentifier, Title(64), Message(256), Date.
  static var benchWatchOptions: WatchOptions {
    var options = WatchOptions()
    options.attributes = [.appIdentifier, .title, .message, .date]
    options.titleMaximum = 64
    options.messageMaximum = 256
    options.mtu = 185
    options.reconnect = false
    return options
  }

  /// Counts the notifications a watch has fetched as it reports them (its observer, called
  /// in the step that fetched each, as `ancs watch` prints them): `seconds()` waits for the
  /// `count`th and returns the seconds from `given`, or else from the session's start (its
  /// `connected`), to it; infinity when the link went first.
  final class FetchCount: Sendable {
    private struct Ending {
      var start: ContinuousClock.Instant?
      var result: Double?
      var waiter: CheckedContinuation<Double, Never>?
    }
    let count: Int
    private let added = Atomic<Int>(0)
    private let counted = Atomic<Bool>(false)
    /// Touched at the start and the end only: not for each notification.
    private let ending: Mutex<Ending>

    /// Counts what `engine` reports from now on (it becomes the engine's observer).
    init(_ engine: WatchEngine, count: Int, since given: ContinuousClock.Instant? = nil) {
      self.count = count
      ending = Mutex(Ending(start: given))
      let observing = engine.observe { [self] event in take(event) }
      precondition(observing, "the engine has an observer already")
    }

    private func take(_ event: WatchEvent) {
      // Once counted, what follows (the latency samples) costs it nothing more.
      if counted.load(ordering: .relaxed) { return }
      switch event {
      case .connected: ending.withLock { if $0.start == nil { $0.start = .now } }
      case .added(let notification) where notification.fetched && !notification.message.isEmpty:
        if added.add(1, ordering: .relaxed).newValue == count {
          let start = ending.withLock { $0.start } ?? .now
          finish((ContinuousClock.now - start).seconds)
        }
      case .disconnected: finish(.infinity)
      default: break
      }
    }

    /// The watch's `run()` is over: nothing more will be counted (a watch that never
    /// reached the phone emits no `disconnected`).
    func runEnded() { finish(.infinity) }

    /// The first outcome holds.
    private func finish(_ seconds: Double) {
      counted.store(true, ordering: .relaxed)
      let waiter = ending.withLock { ending -> CheckedContinuation<Double, Never>? in
        if ending.result != nil { return nil }
        ending.result = seconds
        return ending.waiter.take()
      }
      waiter?.resume(returning: seconds)
    }

    func seconds() async -> Double {
      await withCheckedContinuation { continuation in
        let known = ending.withLock { ending -> Double? in
          if ending.result == nil { ending.waiter = continuation }
          return ending.result
        }
        if let known { continuation.resume(returning: known) }
      }
    }
  }

  /// Posts one notification at a time and waits for it on the watch: latency percentiles.
  static func latencies(phone: Phone, events: inout EventStream<WatchEvent>.Iterator, samples: Int) async -> [Double] {
    let clock = ContinuousClock()
    var result: [Double] = []
    for index in 0..<samples {
      let start = clock.now
      let posted = await phone.post(Phone.floodNotification(index))
      while let event = await events.next(isolation: nil) {
        if case .added(let n) = event, n.uid == posted.uid { break }
      }
      result.append((clock.now - start).seconds * 1e6)
    }
    return result.sorted()
  }

  static func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
  }

  func latencyResults(_ sorted: [Double], _ label: String) -> [Result] {
    [0.5, 0.9, 0.99].map { p in
      Result(
        name: "\(label) latency p\(Int(p * 100)), post to watch model", value: Self.percentile(sorted, p), unit: "µs")
    }
  }

  /// The bound the codecs alone set on the end-to-end rate: per notification, the encoding
  /// and decoding the in-memory end-to-end run does (the phone's Notification Source event,
  /// the watch's Get Notification Attributes command, the phone's answer cut to the lengths
  /// asked, in ATT_MTU 185 fragments, reassembled by the watch), with no link, engine or task.
  func codecBound() throws -> Result {
    let options = Self.benchWatchOptions
    let notifications = (0..<1000).map(Phone.floodNotification)
    let fragmentSize = Int(options.mtu) - 3
    var sink = 0
    let rate = try rate(notifications.count) {
      for (index, notification) in notifications.enumerated() {
        let uid = UInt32(index)
        // The phone announces it; the watch decodes the event and asks for its attributes.
        let eventBytes = NotificationSourceEvent(
          eventID: .added, eventFlags: .preExisting, categoryID: notification.category, categoryCount: 1,
          notificationUID: uid
        ).encoded()
        let event = try NotificationSourceEvent(decoding: eventBytes)
        let get = GetNotificationAttributesCommand(
          notificationUID: event.notificationUID, attributes: options.attributeRequests(for: event.eventFlags))
        let commandBytes = ControlPointCommand.getNotificationAttributes(get).encoded()
        // The phone decodes the command and answers, each value cut to its maximum.
        guard case .getNotificationAttributes(let asked) = try ControlPointCommand(decoding: commandBytes) else {
          continue
        }
        let tuples = asked.attributes.map { request -> NotificationAttribute in
          let text: String
          switch request.id {
          case .appIdentifier: text = notification.appIdentifier
          case .title: text = notification.title
          case .message: text = notification.message
          default: text = notification.date
          }
          let value = request.maxLength.map { ANCSText.truncate(text, toBytes: Int($0)) } ?? Array(text.utf8)
          return NotificationAttribute(request.id, value)
        }
        let answer = DataSourceResponse.notificationAttributes(
          NotificationAttributesResponse(notificationUID: asked.notificationUID, attributes: tuples)
        ).encoded()
        // The watch reassembles it from Data Source notifications.
        var reassembler = DataSourceReassembler(expecting: .notificationAttributes(get))
        for fragment in dataSourceFragments(answer, maximumSize: fragmentSize) {
          if case .notificationAttributes(let done)? = try reassembler.feed(Array(fragment)) {
            sink &+= done.attributes.count
          }
        }
      }
    }
    if sink == 42 { print("") }
    return Result(
      name: "codecs alone, the end-to-end work per notification (MTU 185)", value: rate, unit: "notifications/s")
  }

  /// Phone and watch in this process over the in-memory link.
  func endToEndMemory(count: Int) async throws -> [Result] {
    var quirks = Quirks()
    quirks.flood = count
    // Both on the process's one loop (the default), which hands each PDU from one to the
    // other in place; otherwise each on an executor of its own, the link queueing.
    let loop = loops as? EventLoop
    let phone = try Phone(quirks: quirks, wallClock: FixedWallClock(seconds: 1_796_040_000), executor: loop)
    let (central, peripheral) = MemoryLink.pair(on: loop)
    let serving = Task { await phone.serve(central) }
    let engine = WatchEngine(options: Self.benchWatchOptions, executor: loop) { peripheral }
    // From before the watch runs: on one loop, the whole exchange may be over before this
    // task runs again, so the clock starts here rather than at the watch's `connected`.
    let fetched = FetchCount(engine, count: count, since: .now)
    let running = Task {
      await engine.run()
      fetched.runEnded()
    }
    let seconds = await fetched.seconds()
    // Only now a stream too, for one notification at a time.
    var iterator = engine.events().makeAsyncIterator()
    let latencies = await Self.latencies(phone: phone, events: &iterator, samples: 2000)
    engine.stop()
    await running.value
    central.close()
    await serving.value
    return [
      Result(
        name: "end to end, in-memory link, \(count) notifications (MTU 185)", value: Double(count) / seconds,
        unit: "notifications/s")
    ] + latencyResults(latencies, "in-memory")
  }

  /// A phone in another process (`ancs phone`, found as this executable) over a Unix socket.
  func endToEndProcesses(count: Int) async throws -> [Result] {
    let path = "/tmp/ancs-bench-\(getpid()).sock"
    let phone = try await startPhoneProcess(["--listen", "unix:\(path)", "--quirk", "flood=\(count)"])
    return try await phone.stopping {
      // The engine runs on the loop that reads its link, which hands it each PDU in place.
      let loop = loops.next()
      let bearer = try await LinkAddress.unix(path: path).connect(on: loop)
      let engine = WatchEngine(options: Self.benchWatchOptions, executor: loop) { bearer }
      let fetched = FetchCount(engine, count: count)
      let running = Task {
        await engine.run()
        fetched.runEnded()
      }
      let seconds = await fetched.seconds()
      engine.stop()
      await running.value
      return [
        Result(
          name: "end to end, two processes over a Unix socket, \(count) notifications (MTU 185)",
          value: Double(count) / seconds, unit: "notifications/s")
      ]
    }
  }

  /// The phone process's resident memory growth per watch session, with `sessions` watches
  /// connected, subscribed and holding 10 notifications each.
  func memoryPerSession(sessions: Int) async throws -> [Result] {
    let path = "/tmp/ancs-bench-mem-\(getpid()).sock"
    let phone = try await startPhoneProcess(["--listen", "unix:\(path)", "--quirk", "flood=10"])
    return try await phone.stopping {
      _ = try await LinkAddress.unix(path: path).connect(on: loops).close()
      try await Task.sleep(for: .milliseconds(200))
      let before = ProcessFigures(of: phone.processIdentifier).residentKiB
      var engines: [WatchEngine] = []
      var tasks: [Task<Void, Never>] = []
      var options = Self.benchWatchOptions
      options.reconnect = false
      for _ in 0..<sessions {
        let bearer = try await LinkAddress.unix(path: path).connect(on: loops)
        let engine = WatchEngine(options: options) { bearer }
        let fetched = FetchCount(engine, count: 10)
        tasks.append(
          Task {
            await engine.run()
            fetched.runEnded()
          })
        _ = await fetched.seconds()
        engines.append(engine)
      }
      let after = ProcessFigures(of: phone.processIdentifier).residentKiB
      for engine in engines { engine.stop() }
      for task in tasks { await task.value }
      let perSession = Double(after - before) / Double(sessions)
      return [
        Result(
          name: "phone memory per watch session, \(sessions) sessions in one phone process (RSS growth)",
          value: perSession, unit: "KiB")
      ]
    }
  }

  /// `ancs phone` as a child driven by JSON lines: nobody is asked to share notifications,
  /// and it ends with the bench however the bench ends (a signal included). Returns once
  /// it answers its first command, which it reads only once it listens: connecting then
  /// cannot race its start-up, however slow the machine.
  func startPhoneProcess(_ arguments: [String]) async throws -> SpawnedPhone {
    let phone = try SpawnedPhone(ancsArguments: ["phone", "--commands", "jsonl", "--no-events"] + arguments)
    return try await phone.stoppingOnFailure(of: {
      let stimulus = JSONLineStimulus(channel: phone)
      try await within(FleetBench.patience, "answer from the phone") { try await stimulus.ready() }
    })
  }

  func endToEnd() async throws -> [Result] {
    var results: [Result] = []
    if wanted("e2e-memory") {
      // In the same run: the codecs' bound, and how much of it the whole path keeps.
      let bound = try codecBound()
      let memory = try await endToEndMemory(count: endToEndCount)
      results += [bound] + memory
      if let rate = memory.first?.value {
        results.append(
          Result(
            name: "end to end, in-memory link, as a share of the codecs' bound", value: 100 * rate / bound.value,
            unit: "%"))
      }
    }
    if wanted("e2e-unix") { results += try await endToEndProcesses(count: endToEndCount) }
    if wanted("e2e-sessions") { results += try await memoryPerSession(sessions: 1000) }
    return results
  }
}
