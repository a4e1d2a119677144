import Phone
import Wire

/// The scenario reader, on any text. A JSON syntax error gets a line and column inside the
/// text; a parsed document prints as JSON that parses back to the same document (numbers
/// beyond a Double's range print as null and are left out); the scenario, or the validation
/// error, does not depend on how the document was laid out; a valid scenario has its steps
/// in time order, every time and the duration within 0...`Scenario.maximumTime`, and every
/// post naming a template it holds.
func fuzz(_ bytes: [UInt8]) {
  let text = String(decoding: bytes, as: UTF8.self)
  let json: JSON
  do {
    json = try JSON(parsing: text)
  } catch {
    let lines = text.utf8.count { $0 == UInt8(ascii: "\n") } + 1
    require((1...lines).contains(error.line) && error.column >= 1, "\(error) outside \(lines) lines")
    return
  }
  let printed = json.description
  let original = Result { () throws(ScenarioError) in try Scenario(parsing: text, file: "fuzz") }
  if case .success(let scenario) = original { check(scenario, printed) }
  guard isFinite(json) else { return }
  require((try? JSON(parsing: printed)) == json, "\(printed) does not parse back to the same document")
  let reprinted = Result { () throws(ScenarioError) in try Scenario(parsing: printed, file: "fuzz") }
  switch (original, reprinted) {
  case (.success(let scenario), .success(let again)):
    require(scenario == again, "the scenario depends on the layout: \(printed)")
  case (.failure(let error), .failure(let again)):
    require(error.path != nil && error.path == again.path && error.reason == again.reason, "\(error) / \(again)")
  default:
    require(false, "valid in one layout only: \(original) / \(reprinted)")
  }
}

private func check(_ scenario: Scenario, _ printed: @autoclosure () -> String) {
  let times = scenario.steps.map(\.at)
  require(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 }, "steps out of order: \(printed())")
  require(
    (times + [scenario.duration]).allSatisfy { (0...Scenario.maximumTime).contains($0) },
    "a time out of range: \(printed())")
  for step in scenario.steps {
    _ = step.time
    if case .post(let id) = step.action {
      require(scenario.notifications[id] != nil, "post of unknown \(id): \(printed())")
    }
  }
}

/// Whether every number in the document is finite.
private func isFinite(_ json: JSON) -> Bool {
  switch json {
  case .number(let value): return value.isFinite
  case .array(let values): return values.allSatisfy(isFinite)
  case .object(let pairs): return pairs.allSatisfy { isFinite($0.1) }
  default: return true
  }
}
