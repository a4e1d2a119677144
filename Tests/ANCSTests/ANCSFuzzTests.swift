import ANCS
import TestSupport
import Testing
import Wire

/// Random and mutated input for every ANCS decoder, from a fixed seed so a failure repeats.
/// Nothing may trap; every successful decode re-encodes to the exact input; every error
/// points inside the input.
@Suite struct ANCSFuzzTests {
  static let iterations = 20_000

  /// The input bytes of every vector for `decoder`, valid and invalid, as mutation seeds.
  static func seeds(_ decoder: String) throws -> [[UInt8]] {
    try VectorFiles.records().filter { $0.record.decoder == decoder }.map {
      let input = decoder == "reassembly" ? $0.record.columns[1].replacingSlashes : $0.record.columns[0]
      return try VectorNotation.bytes(input, line: $0.record.line)
    }
  }

  /// Mostly mutated vectors, sometimes plain random bytes.
  static func input(_ random: inout SplitMix64, seeds: [[UInt8]], maximumLength: Int = 40) -> [UInt8] {
    if Int.random(in: 0..<4, using: &random) == 0 {
      return random.bytes(Int.random(in: 0...maximumLength, using: &random))
    }
    return random.mutate(seeds.randomElement(using: &random)!)
  }

  static func checkError(_ error: ANCSError, _ input: [UInt8], _ issues: inout IssueLimit) {
    if !(0...input.count).contains(error.offset) || error.kind == "invalidValue" {
      issues.record("\(Hex.encode(input)): \(error)")
    }
  }

  @Test func notificationSourceEvent() throws {
    var issues = IssueLimit()
    var random = SplitMix64(seed: 0x4e53)
    let seeds = try Self.seeds("notification-source")
    var decoded = 0
    for _ in 0..<Self.iterations {
      let input = Self.input(&random, seeds: seeds, maximumLength: 12)
      do {
        let event = try NotificationSourceEvent(decoding: input)
        decoded += 1
        if event.encoded() != input || input.count != 8 { issues.record("\(Hex.encode(input)) -> \(event)") }
      } catch {
        Self.checkError(error, input, &issues)
        if input.count == 8 { issues.record("8 bytes refused: \(Hex.encode(input)): \(error)") }
      }
    }
    #expect(decoded > Self.iterations / 10, "the fuzzer should reach valid events")
  }

  @Test func controlPointCommand() throws {
    var issues = IssueLimit()
    var random = SplitMix64(seed: 0x4350)
    let seeds = try Self.seeds("control-point")
    var decoded = 0
    for _ in 0..<Self.iterations {
      let input = Self.input(&random, seeds: seeds)
      do {
        let command = try ControlPointCommand(decoding: input)
        decoded += 1
        if command.encoded() != input { issues.record("\(Hex.encode(input)) -> \(command)") }
      } catch {
        Self.checkError(error, input, &issues)
        let code = error.controlPointErrorCode
        if code != (error.kind == "unknownCommand" ? .unknownCommand : .invalidCommand) {
          issues.record("\(error) maps to \(code)")
        }
      }
    }
    #expect(decoded > Self.iterations / 10, "the fuzzer should reach valid commands")
  }

  @Test func dataSourceResponse() throws {
    var issues = IssueLimit()
    var random = SplitMix64(seed: 0x4453)
    let seeds = try Self.seeds("data-source") + Self.seeds("reassembly")
    var decoded = 0
    for _ in 0..<Self.iterations {
      let input = Self.input(&random, seeds: seeds)
      do {
        let response = try DataSourceResponse(decoding: input)
        decoded += 1
        if response.encoded() != input { issues.record("\(Hex.encode(input)) -> \(response)") }
      } catch {
        Self.checkError(error, input, &issues)
      }
    }
    #expect(decoded > Self.iterations / 20, "the fuzzer should reach valid responses")
  }

  /// Random requests and policies; responses built to match them more or less, mutated,
  /// and cut into random fragments (empty ones included).
  @Test func dataSourceReassembler() throws {
    var issues = IssueLimit()
    var random = SplitMix64(seed: 0x5241)
    let seeds = try Self.seeds("reassembly") + Self.seeds("data-source")
    var completed = 0
    for _ in 0..<Self.iterations / 2 {
      let (expectation, requested) = Self.randomExpectation(&random)
      let policy = Self.randomPolicy(&random)
      let bytes: [UInt8]
      switch Int.random(in: 0..<4, using: &random) {
      case 0: bytes = Self.input(&random, seeds: seeds, maximumLength: 60)
      case 1: bytes = random.mutate(Self.response(&random, to: expectation))
      default: bytes = Self.response(&random, to: expectation)
      }
      var fragments: [ArraySlice<UInt8>] = []
      var start = 0
      while start < bytes.count {
        let end = min(bytes.count, start + Int.random(in: 0...24, using: &random))
        fragments.append(bytes[start..<end])
        start = end
      }

      var reassembler = DataSourceReassembler(expecting: expectation, policy: policy)
      var fed = 0
      var outcome: Result<DataSourceResponse, ANCSError>?
      for fragment in fragments {
        if outcome != nil { break }
        do {
          if let response = try reassembler.feed(fragment) { outcome = .success(response) }
          fed += fragment.count
        } catch {
          outcome = .failure(error)
        }
      }
      if outcome == nil {
        outcome = Result { () throws(ANCSError) in try reassembler.finish() }
      }
      switch outcome! {
      case .success(let response):
        completed += 1
        let input = Array(bytes.prefix(fed))
        if response.encoded() != input { issues.record("\(Hex.encode(input)) -> \(response)") }
        Self.checkInvariants(response, expectation: expectation, requested: requested, policy: policy, &issues)
      case .failure(let error):
        if !(0...bytes.count).contains(error.offset) { issues.record("\(Hex.encode(bytes)): \(error)") }
      }
    }
    #expect(completed > Self.iterations / 20, "the fuzzer should reach complete responses")
  }

  static func checkInvariants(
    _ response: DataSourceResponse, expectation: DataSourceReassembler.Expectation,
    requested: [UInt8: UInt16?], policy: DataSourceReassembler.Policy, _ issues: inout IssueLimit
  ) {
    let tuples: [(id: UInt8, value: [UInt8])]
    let missing: [UInt8]
    switch response {
    case .notificationAttributes(let response):
      tuples = response.attributes.map { ($0.id.rawValue, $0.value) }
      missing = response.missing.map(\.rawValue)
      if case .notificationAttributes(let command) = expectation, command.notificationUID != response.notificationUID {
        issues.record("UID \(response.notificationUID) answers \(command.notificationUID)")
      }
      if case .appAttributes = expectation { issues.record("notification response to an app request") }
    case .appAttributes(let response):
      tuples = response.attributes.map { ($0.id.rawValue, $0.value) }
      missing = response.missing.map(\.rawValue)
      if case .appAttributes(let command) = expectation, command.appIdentifier != response.appIdentifier {
        issues.record("app \(response.appIdentifier) answers \(command.appIdentifier)")
      }
      if case .notificationAttributes = expectation { issues.record("app response to a notification request") }
    }
    if Set(tuples.map(\.id)).count != tuples.count { issues.record("duplicate tuples in \(response)") }
    if expectation == .anything { return }
    for tuple in tuples {
      if let maximum = requested[tuple.id], let maximum, policy.enforceMaximumLength, tuple.value.count > maximum {
        issues.record("tuple \(tuple.id) over its maximum \(maximum) in \(response)")
      }
      if requested[tuple.id] == nil && policy.unrequested == .reject { issues.record("unrequested kept: \(response)") }
      if policy.validateUTF8 && String(validatingUTF8Bytes: tuple.value) == nil { issues.record("bad UTF-8 kept") }
    }
    let expectedMissing = requested.keys.filter { id in !tuples.contains { $0.id == id } }
    if Set(missing) != Set(expectedMissing) { issues.record("missing \(missing), expected \(expectedMissing)") }
    if !missing.isEmpty && !policy.acceptPartial && !Set(missing).isSubset(of: policy.optionalAttributes) {
      issues.record("incomplete response \(response) under \(policy)")
    }
  }

  /// A random request, and its attribute IDs with their maximum lengths.
  static func randomExpectation(_ random: inout SplitMix64) -> (DataSourceReassembler.Expectation, [UInt8: UInt16?]) {
    switch Int.random(in: 0..<5, using: &random) {
    case 0: return (.anything, [:])
    case 1:
      let app = ["com.example", "a", "", "com.example.café"].randomElement(using: &random)!
      let ids = Array(
        Set((0..<Int.random(in: 1...2, using: &random)).map { _ in UInt8.random(in: 0...2, using: &random) }))
      return (
        .appAttributes(.init(appIdentifier: app, attributes: ids.map(AppAttributeID.init(rawValue:)))),
        Dictionary(uniqueKeysWithValues: ids.map { ($0, nil) })
      )
    default:
      var attributes: [AttributeRequest] = []
      for id in (0...9).map(UInt8.init).shuffled(using: &random).prefix(Int.random(in: 1...6, using: &random)) {
        let attribute = NotificationAttributeID(rawValue: id)
        let maximum = attribute.takesMaximumLength ? [0, 1, 4, 16, 65535].randomElement(using: &random)! : nil
        attributes.append(AttributeRequest(attribute, maxLength: maximum.map(UInt16.init)))
      }
      let uid = [0x1a, 0, 0xffff_ffff, UInt32.random(in: 0...UInt32.max, using: &random)].randomElement(using: &random)!
      return (
        .notificationAttributes(.init(notificationUID: uid, attributes: attributes)),
        Dictionary(uniqueKeysWithValues: attributes.map { ($0.id.rawValue, $0.maxLength) })
      )
    }
  }

  /// A response more or less answering `expectation`: requested tuples in random order, some
  /// omitted, some extra, values of random length and sometimes not UTF-8.
  static func response(_ random: inout SplitMix64, to expectation: DataSourceReassembler.Expectation) -> [UInt8] {
    var writer = ByteWriter()
    var ids: [UInt8]
    switch expectation {
    case .notificationAttributes(let command):
      writer.u8(0)
      writer.u32(Int.random(in: 0..<10, using: &random) == 0 ? 0xdead : command.notificationUID)
      ids = command.attributes.map(\.id.rawValue)
    case .appAttributes(let command):
      writer.u8(1)
      writer.cString(Int.random(in: 0..<10, using: &random) == 0 ? "other" : command.appIdentifier)
      ids = command.attributes.map(\.rawValue)
    case .anything:
      writer.u8(UInt8.random(in: 0...1, using: &random))
      if writer.bytes[0] == 0 { writer.u32(7) } else { writer.cString("x") }
      ids = [0, 1, 2, 3]
    }
    ids.shuffle(using: &random)
    if Int.random(in: 0..<4, using: &random) == 0 { ids.removeLast() }
    if Int.random(in: 0..<4, using: &random) == 0 { ids.append(UInt8.random(in: 0...12, using: &random)) }
    let texts = ["", "a", "Hi there", "Grüße € 👋", String(repeating: "x", count: 20)]
    for id in ids {
      var value = Array(texts.randomElement(using: &random)!.utf8)
      if Int.random(in: 0..<10, using: &random) == 0 { value += [0xc3] }
      writer.u8(id)
      writer.u16(UInt16(value.count))
      writer.append(value)
    }
    return writer.bytes
  }

  static func randomPolicy(_ random: inout SplitMix64) -> DataSourceReassembler.Policy {
    DataSourceReassembler.Policy(
      maximumSize: [1 << 20, 64, 20].randomElement(using: &random)!,
      optionalAttributes: Set(
        (0..<Int.random(in: 0...2, using: &random)).map { _ in UInt8.random(in: 0...9, using: &random) }),
      fragmentCapacity: [nil, 20, 24].randomElement(using: &random)!, acceptPartial: Bool.random(using: &random),
      unrequested: Bool.random(using: &random) ? .keep : .reject,
      validateUTF8: Int.random(in: 0..<4, using: &random) != 0,
      enforceMaximumLength: Int.random(in: 0..<4, using: &random) != 0)
  }
}

extension String {
  /// Fragments column to one hex string: the fragments joined.
  var replacingSlashes: String { String(map { $0 == "/" ? " " : $0 }) }
}
