import ATT
import GATT
import Links
import Testing
import Wire

/// One step of a scripted ATT exchange, from the point of view of the test, which plays the
/// peer of the engine under test: `.send` puts bytes on the wire to it, `.expect` requires
/// the next PDU it sends to be exactly these bytes, `.silence` requires it to have sent
/// nothing more at the end, `.run` triggers something on the engine side by name.
enum Step: Sendable {
  case send(String, String)
  case expect(String, String)
  case trigger(String, @Sendable () async throws -> Void)

  var name: String {
    switch self {
    case .send(let name, _), .expect(let name, _), .trigger(let name, _): return name
    }
  }
}

/// A named scripted exchange, with conformance-style ID.
struct Script: Sendable, CustomStringConvertible {
  var id: String
  var steps: [Step]
  var description: String { id }

  init(_ id: String, _ steps: [Step]...) {
    self.id = id
    self.steps = steps.flatMap { $0 }
  }
}

/// Composable prefixes.
enum Prefix {
  /// Exchange MTU to `mtu` (the server offers 517, so the result is `mtu`).
  static func mtu(_ mtu: UInt16) -> [Step] {
    [
      .send("exchange MTU", "02 " + Hex.encode([UInt8(mtu & 0xff), UInt8(mtu >> 8)])),
      .expect("MTU response", "03 05 02"),
    ]
  }
}

/// Runs a script against `bearer` (the engine is on the other end) and records a test
/// failure naming the step index, its name, and both byte strings on any mismatch.
func play(_ script: Script, on bearer: any ATTBearer, sourceLocation: SourceLocation = #_sourceLocation) async throws {
  for (index, step) in script.steps.enumerated() {
    let label = "\(script.id) step \(index) (\(step.name))"
    switch step {
    case .send(_, let hex):
      let bytes = try #require(Hex.decode(hex), "\(label): bad hex in script", sourceLocation: sourceLocation)
      try bearer.send(bytes)
    case .expect(_, let hex):
      let wanted = try #require(Hex.decode(hex), "\(label): bad hex in script", sourceLocation: sourceLocation)
      let got = try await bearer.receive()
      guard let got else {
        Issue.record("\(label): link closed, expected \(hex)", sourceLocation: sourceLocation)
        return
      }
      if got != wanted {
        Issue.record(
          "\(label):\n  expected \(Hex.encode(wanted))\n  received \(Hex.encode(got))", sourceLocation: sourceLocation)
        return
      }
    case .trigger(_, let action):
      try await action()
    }
  }
}
