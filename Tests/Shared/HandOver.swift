import ATT
import Runtime
import Sockets

// What the tests of handing PDUs over in place (`ATTBearer.handOver(to:)`) share: a
// connection on a loop that records where and how each request reached its server.

/// Whether a sender's step runs now.
package final class StepFlag: Sendable {
  private let running = Locked(false)
  package init() {}
  package func set(_ value: Bool) { running.withLock { $0 = value } }
  package var isSet: Bool { running.withLock { $0 } }
}

/// An actor on a loop, lending its executor to a connection.
package actor OnLoop {
  package let loop: EventLoop
  package init(_ loop: EventLoop) { self.loop = loop }
  package nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
}

/// What a server saw of each write: its value, whether a task ran it, and on which thread.
package final class ServedLog: Sendable {
  package struct Entry: Sendable {
    package var value: UInt8
    package var inTask: Bool
    package var onLoop: Bool
    /// A sender's step (`LoopSender`) was still running.
    package var inSendersStep = false
  }
  private let log = Locked<[Entry]>([])
  package init() {}
  package func add(_ entry: Entry) { log.withLock { $0.append(entry) } }
  package var entries: [Entry] { log.withLock { $0 } }
}

/// Answers every write, noting it in `log`; closes the link when it serves `closesOn`.
package struct RecordingServer: ATTServerHandler {
  package let log: ServedLog
  package var closesOn: UInt8?
  package var step: StepFlag?

  package init(log: ServedLog, closesOn: UInt8? = nil, step: StepFlag? = nil) {
    self.log = log
    self.closesOn = closesOn
    self.step = step
  }

  package func handle(_ pdu: ATTPDU, on connection: isolated ATTConnection) -> ATTServerReply {
    guard case .writeRequest(let write) = pdu, let value = write.value.first else { return ATTServerReply(nil) }
    log.add(
      .init(
        value: value, inTask: withUnsafeCurrentTask { $0 != nil }, onLoop: testLoop.inEventLoop,
        inSendersStep: step?.isSet ?? false))
    if value == closesOn { connection.bearer.close() }
    return ATTServerReply(.writeResponse(WriteResponse()))
  }
}
