import ANCS
import Wire

/// The Data Source reassembler, fed fragment by fragment and finished when no fragment
/// completed it. It never holds more than its size cap and takes nothing after completing;
/// a response it returns encodes back to the bytes fed, answers the request and keeps the
/// policy's promises; a refusal points inside the bytes fed.
///
/// Layout: policy bits (`ReassemblyBits`), fragment capacity, maximum size (0: the default
/// 1 MiB), a mask of optional attribute IDs 0-7, the request as a chunk (a Control Point
/// command; anything else means "any response"), then the fragments as chunks.
func fuzz(_ bytes: [UInt8]) {
  var input = FuzzInput(bytes)
  let bits = input.byte()
  let capacity = Int(input.byte())
  let size = input.byte()
  let optional = input.byte()
  let policy = DataSourceReassembler.Policy(
    maximumSize: size == 0 ? 1 << 20 : Int(size), optionalAttributes: Set((0..<8).filter { optional >> $0 & 1 != 0 }),
    fragmentCapacity: bits & ReassemblyBits.fragmentCapacity != 0 ? capacity : nil,
    acceptPartial: bits & ReassemblyBits.acceptPartial != 0,
    unrequested: bits & ReassemblyBits.rejectUnrequested != 0 ? .reject : .keep,
    validateUTF8: bits & ReassemblyBits.skipUTF8Validation == 0,
    enforceMaximumLength: bits & ReassemblyBits.ignoreMaximumLength == 0)
  let expectation: DataSourceReassembler.Expectation
  switch try? ControlPointCommand(decoding: input.chunk()) {
  case .getNotificationAttributes(let command)?: expectation = .notificationAttributes(command)
  case .getAppAttributes(let command)?: expectation = .appAttributes(command)
  default: expectation = .anything
  }

  var reassembler = DataSourceReassembler(expecting: expectation, policy: policy)
  var fed: [UInt8] = []
  var outcome: Result<DataSourceResponse, ANCSError>?
  var byFeed = false
  while outcome == nil && !input.isAtEnd {
    let fragment = input.chunk()
    fed += fragment
    do {
      if let response = try reassembler.feed(fragment) {
        outcome = .success(response)
        byFeed = true
      }
    } catch {
      outcome = .failure(error)
    }
    require(reassembler.byteCount <= policy.maximumSize, "holds \(reassembler.byteCount) bytes over its cap")
  }
  let context = { "\(Hex.encode(bytes)) under \(policy)" }
  switch outcome ?? Result(catching: { () throws(ANCSError) in try reassembler.finish() }) {
  case .success(let response):
    require(response.encoded() == fed, "\(context()): \(response) does not encode back to the bytes fed")
    check(
      response, answers: expectation, policy: policy, completedByFeed: byFeed,
      fillKnown: reassembler.fillSize != nil, context)
    require((try? reassembler.feed([])) == .some(nil), "\(context()): an empty fragment after completion")
    do {
      _ = try reassembler.feed([0])
      require(false, "\(context()): a fragment accepted after completion")
    } catch {
      require(error.kind == "unexpectedFragment", "\(context()): after completion: \(error)")
    }
  case .failure(let error):
    requireOffset(error.offset, within: fed, error)
    require(error.kind != "invalidValue", "\(context()): \(error)")
  }
}

/// The response answers the request and keeps the policy: the right header, each attribute
/// once, within its maximum, requested or allowed, UTF-8 where checked; missing ones
/// listed, and only where the policy lets them be.
private func check(
  _ response: DataSourceResponse, answers expectation: DataSourceReassembler.Expectation,
  policy: DataSourceReassembler.Policy, completedByFeed: Bool, fillKnown: Bool, _ context: () -> String
) {
  var requested: [(id: UInt8, maximum: Int?)] = []
  let (tuples, missing) = (response.tuples, response.missingIDs)
  switch (response, expectation) {
  case (.notificationAttributes(let answer), .notificationAttributes(let command)):
    require(answer.notificationUID == command.notificationUID, "\(context()): answers UID \(answer.notificationUID)")
    requested = command.attributes.map { ($0.id.rawValue, $0.maxLength.map(Int.init)) }
  case (.appAttributes(let answer), .appAttributes(let command)):
    require(answer.appIdentifier == command.appIdentifier, "\(context()): answers app \(answer.appIdentifier)")
    requested = command.attributes.map { ($0.rawValue, nil) }
  case (_, .anything):
    break
  default:
    require(false, "\(context()): \(response) answers another command")
  }
  require(Set(tuples.map(\.id)).count == tuples.count, "\(context()): an attribute twice")
  if case .anything = expectation {
    require(missing.isEmpty, "\(context()): missing \(missing) with nothing requested")
    return
  }
  // A request naming an attribute twice counts the first.
  var maximum: [UInt8: Int?] = [:]
  for request in requested where maximum[request.id] == nil { maximum[request.id] = request.maximum }
  for tuple in tuples {
    if let limit = maximum[tuple.id] {
      if policy.enforceMaximumLength, let limit {
        require(tuple.value.count <= limit, "\(context()): attribute \(tuple.id) over its maximum \(limit)")
      }
    } else {
      require(policy.unrequested == .keep, "\(context()): attribute \(tuple.id) kept though not requested")
    }
    if policy.validateUTF8 {
      require(String(validatingUTF8Bytes: tuple.value) != nil, "\(context()): attribute \(tuple.id) not UTF-8")
    }
  }
  let absent = Set(maximum.keys).subtracting(tuples.map(\.id))
  require(Set(missing) == absent && missing.count == absent.count, "\(context()): missing \(missing), absent \(absent)")
  let optionalOnly = absent.isSubset(of: policy.optionalAttributes)
  if completedByFeed {
    // Optional ones left out only on a short fragment: short against the capacity, or
    // against an earlier fragment of the same answer.
    require(
      absent.isEmpty || (optionalOnly && (policy.fragmentCapacity != nil || fillKnown)),
      "\(context()): complete without \(absent)")
  } else {
    require(absent.isEmpty || policy.acceptPartial, "\(context()): finished without \(absent)")
  }
}
