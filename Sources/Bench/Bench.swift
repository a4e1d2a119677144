import ANCS
import ATT
import GATT
import Links
import Processes
import Sockets
import Wire

#if canImport(Glibc)
  import Glibc
#endif

/// `ancs bench`: throughput figures for BENCHMARKS.md. Each case runs for a fixed time
/// and reports operations per second; results print as a Markdown table.
public struct Bench {
  /// The loops that read the benches' socket links.
  public var loops: any EventLoopGroup
  /// How long each case runs.
  public var seconds: Double = 1.0
  /// Only the cases whose name contains it.
  public var filter: String?
  /// Notifications the end-to-end cases (`e2e-memory`, `e2e-unix`) run through.
  public var endToEndCount = 20_000

  public init(loops: any EventLoopGroup) { self.loops = loops }

  /// One figure.
  public struct Result {
    public var name: String
    public var value: Double
    public var unit: String
  }

  /// Runs `body` (which performs `batch` operations per call) until `seconds` have passed.
  func rate(_ batch: Int, _ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    // Warm up.
    try body()
    var operations = 0
    let start = clock.now
    var elapsed: Duration = .zero
    repeat {
      try body()
      operations += batch
      elapsed = clock.now - start
    } while elapsed < .milliseconds(Int(seconds * 1000))
    return Double(operations) / elapsed.seconds
  }

  func asyncRate(_ batch: Int, _ body: () async throws -> Void) async rethrows -> Double {
    let clock = ContinuousClock()
    try await body()
    var operations = 0
    let start = clock.now
    var elapsed: Duration = .zero
    repeat {
      try await body()
      operations += batch
      elapsed = clock.now - start
    } while elapsed < .milliseconds(Int(seconds * 1000))
    return Double(operations) / elapsed.seconds
  }

  let opaque = Opaque()

  /// True when the case `name` runs.
  public func wanted(_ name: String) -> Bool { filter.map { name.contains($0) } ?? true }

  // MARK: - Codec

  func codec() throws -> [Result] {
    var results: [Result] = []
    var sink = 0
    let event = NotificationSourceEvent(
      eventID: .added, eventFlags: [.important], categoryID: .social, categoryCount: 3, notificationUID: 0x1234_5678)
    let eventBytes = event.encoded()
    // 1024 distinct events so the decoder cannot be hoisted out of the loop.
    let events: [[UInt8]] = (0..<1024).map { uid in
      NotificationSourceEvent(
        eventID: .added, eventFlags: [], categoryID: .email, categoryCount: 1, notificationUID: UInt32(uid)
      ).encoded()
    }
    if wanted("ns-decode") {
      let value = try rate(events.count) {
        for bytes in events { opaque.take(try NotificationSourceEvent(decoding: bytes)) }
      }
      results.append(Result(name: "Notification Source decode", value: value, unit: "events/s"))
    }
    if wanted("ns-encode") {
      let value = rate(1024) {
        for uid in 0..<1024 {
          var e = event
          e.notificationUID = UInt32(uid)
          opaque.take(e.encoded())
        }
      }
      results.append(Result(name: "Notification Source encode", value: value, unit: "events/s"))
    }
    let commands: [(String, ControlPointCommand)] = [
      (
        "Get Notification Attributes",
        .getNotificationAttributes(
          .init(
            notificationUID: 42,
            attributes: [
              AttributeRequest(.appIdentifier), AttributeRequest(.title, maxLength: 64),
              AttributeRequest(.message, maxLength: 256), AttributeRequest(.date),
            ]))
      ),
      ("Get App Attributes", .getAppAttributes(.init(appIdentifier: "com.example.chat"))),
      ("Perform Notification Action", .performNotificationAction(.init(notificationUID: 42, actionID: .positive))),
    ]
    for (name, command) in commands where wanted("cp") {
      let bytes = command.encoded()
      let decode = try rate(1000) {
        for _ in 0..<1000 { sink &+= Int(try ControlPointCommand(decoding: bytes).commandID.rawValue) }
      }
      results.append(Result(name: "\(name) decode", value: decode, unit: "commands/s"))
      let encode = rate(1000) {
        for _ in 0..<1000 { sink &+= command.encoded().count }
      }
      results.append(Result(name: "\(name) encode", value: encode, unit: "commands/s"))
    }
    let response = DataSourceResponse.notificationAttributes(
      NotificationAttributesResponse(
        notificationUID: 42,
        attributes: [
          NotificationAttribute(.appIdentifier, text: "com.example.chat"),
          NotificationAttribute(.title, text: String(repeating: "T", count: 64)),
          NotificationAttribute(.message, text: String(repeating: "m", count: 256)),
          NotificationAttribute(.date, text: "20261129T120000"),
        ]))
    let responseBytes = response.encoded()
    if wanted("ds") {
      let encode = rate(1000) {
        for _ in 0..<1000 { sink &+= response.encoded().count }
      }
      results.append(Result(name: "Data Source response encode (363 B)", value: encode, unit: "responses/s"))
      let decode = try rate(1000) {
        for _ in 0..<1000 {
          if case .notificationAttributes(let r) = try DataSourceResponse(decoding: responseBytes) {
            sink &+= r.attributes.count
          }
        }
      }
      results.append(Result(name: "Data Source response decode (363 B)", value: decode, unit: "responses/s"))
    }
    _ = eventBytes
    if sink == 42 { print("") }
    return results
  }

  // MARK: - Reassembly

  /// Throughput of `DataSourceReassembler` on a response of about 4 KB (title, subtitle,
  /// a 4,000-byte message, date), fed in fragments of ATT_MTU - 3.
  func reassembly() throws -> [Result] {
    var results: [Result] = []
    let message = String(repeating: "Lorem ipsum dolor sit amet, ", count: 143)
    let command = GetNotificationAttributesCommand(
      notificationUID: 7,
      attributes: [
        AttributeRequest(.appIdentifier), AttributeRequest(.title, maxLength: 65535),
        AttributeRequest(.subtitle, maxLength: 65535), AttributeRequest(.message, maxLength: 65535),
        AttributeRequest(.date),
      ])
    let bytes = DataSourceResponse.notificationAttributes(
      NotificationAttributesResponse(
        notificationUID: 7,
        attributes: [
          NotificationAttribute(.appIdentifier, text: "com.apple.mobilemail"),
          NotificationAttribute(.title, text: "A title of some length"),
          NotificationAttribute(.subtitle, text: "Subtitle"),
          NotificationAttribute(.message, text: message),
          NotificationAttribute(.date, text: "20261129T120000"),
        ])
    ).encoded()
    for mtu in [23, 185] {
      let fragments = dataSourceFragments(bytes, maximumSize: mtu - 3).map(Array.init)
      var sink = 0
      for (label, validate) in [("", true), (", no UTF-8 check", false)] where wanted("reassembly") {
        let policy = DataSourceReassembler.Policy(validateUTF8: validate)
        let responses = try rate(100) {
          for _ in 0..<100 {
            var reassembler = DataSourceReassembler(expecting: .notificationAttributes(command), policy: policy)
            for fragment in fragments {
              if let done = try reassembler.feed(fragment), case .notificationAttributes(let r) = done {
                sink &+= r.attributes.count
              }
            }
          }
        }
        results.append(
          Result(
            name: "Data Source reassembly, MTU \(mtu)\(label) (\(bytes.count) B in \(fragments.count) fragments)",
            value: responses * Double(bytes.count) / 1_000_000, unit: "MB/s"))
      }
      if sink == 42 { print("") }
    }
    return results
  }

  // MARK: - GATT round trips

  /// Write Request / Write Response round trips from a GATT client to a server over `pair`.
  func roundTrips(name: String, central: any ATTBearer, peripheral: any ATTBearer) async throws -> Result {
    let server = try GATTServer(services: [
      ServiceDefinition(
        uuid: 0x1234,
        characteristics: [
          CharacteristicDefinition(uuid: 0x5678, properties: .write, write: { _, _ in .accepted })
        ])
    ])
    let serverConnection = ATTConnection(bearer: peripheral)
    await server.attach(serverConnection)
    let serverTask = Task { await serverConnection.run() }
    let clientConnection = ATTConnection(bearer: central)
    let client = await GATTClient(connection: clientConnection)
    let clientTask = Task { await clientConnection.run() }
    let handle = server.handles(of: 0x1234)![0].value
    let value = try await asyncRate(1000) {
      for _ in 0..<1000 { try await client.write(handle, [1, 2, 3, 4]) }
    }
    clientConnection.close()
    await clientTask.value
    await serverTask.value
    return Result(name: "GATT write-with-response round trips, \(name)", value: value, unit: "round trips/s")
  }

  func gatt() async throws -> [Result] {
    var results: [Result] = []
    if wanted("gatt-memory") {
      let (a, b) = MemoryLink.pair()
      results.append(try await roundTrips(name: "in-memory link", central: a, peripheral: b))
    }
    if wanted("gatt-unix") {
      let (a, b) = try UnixSeqpacketLink.pair(on: loops.next())
      results.append(try await roundTrips(name: "Unix SEQPACKET link", central: a, peripheral: b))
    }
    return results
  }

  public func run() async throws {
    var results = try codec()
    results += try reassembly()
    results += try await gatt()
    results += try await endToEnd()
    printTable(results)
  }

  public func printTable(_ results: [Result]) {
    print("| benchmark | result |")
    print("|---|---|")
    for result in results {
      print("| \(result.name) | \(format(result.value)) \(result.unit) |")
    }
  }

  func format(_ value: Double) -> String {
    if value.isNaN || value.isInfinite { return "n/a" }
    if value >= 1_000_000 { return String(format1: value / 1_000_000) + " M" }
    if value >= 10_000 { return String(format1: value / 1_000) + " k" }
    return String(format1: value)
  }
}

/// Takes benchmark results through calls the optimizer cannot see into, so the work that
/// produced them cannot be removed.
final class Opaque: @unchecked Sendable {
  private var total = 0

  @inline(never) func take(_ bytes: [UInt8]) { total &+= bytes.count &+ Int(bytes[bytes.count - 1]) }
  @inline(never) func take(_ event: NotificationSourceEvent) {
    total &+= Int(event.notificationUID) &+ Int(event.eventFlags.rawValue) &+ Int(event.categoryCount)
  }
}
