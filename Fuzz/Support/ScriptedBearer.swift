import ATT
import Runtime
import Wire

/// A link whose peer is a script: `receive` hands out the scripted PDUs one at a time, then
/// reports the link closed. Everything sent is recorded with the number of scripted PDUs
/// received before it, so `answers()` gives what the engine sent in reply to each one
/// (an ATT connection handles a PDU completely before it receives the next).
final class ScriptedBearer: ATTBearer {
  let securityLevel: SecurityLevel
  let name = "fuzz"
  private let script: [[UInt8]]
  /// Called before the engine receives scripted PDU `index`, when it has finished with the
  /// previous one: the place to look at the engine's state.
  private let willReceive: @Sendable (_ index: Int) async -> Void

  private struct State {
    var received = 0
    var closed = false
    var sent: [(received: Int, pdu: [UInt8])] = []
  }
  private let state = Locked(State())

  init(
    script: [[UInt8]], securityLevel: SecurityLevel, willReceive: @escaping @Sendable (Int) async -> Void = { _ in }
  ) {
    self.script = script
    self.securityLevel = securityLevel
    self.willReceive = willReceive
  }

  /// Records the PDU at once, against the scripted PDUs received so far.
  func send(_ pdu: [UInt8]) throws(BearerError) {
    try state.withLock { (state) throws(BearerError) in
      if state.closed { throw .disconnected }
      state.sent.append((state.received, pdu))
    }
  }

  nonisolated(nonsending) func receive() async throws(BearerError) -> [UInt8]? {
    let index = state.withLock { $0.closed ? script.count : $0.received }
    guard index < script.count else { return nil }
    await willReceive(index)
    state.withLock { $0.received += 1 }
    return script[index]
  }

  func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel { securityLevel }

  func close() { state.withLock { $0.closed = true } }

  /// For each scripted PDU, what was sent after the engine received it and before it
  /// received the next one; `[0]` answers the first.
  func answers() -> [[[UInt8]]] {
    var answers = [[[UInt8]]](repeating: [], count: script.count)
    for (received, pdu) in state.withLock({ $0.sent }) where received > 0 { answers[received - 1].append(pdu) }
    return answers
  }
}
