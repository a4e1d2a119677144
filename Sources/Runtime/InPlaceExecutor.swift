/// A serial executor whose thread also runs calls queued on it between its jobs: an event
/// loop. A link in memory whose two ends' connections run on one such executor hands each
/// PDU to the other end this way, right after the step that sent it, in a plain call with
/// no task, no lock and no wake-up (not inside that step: the other end may answer, and the
/// answer must not reach the sender while it is still in the middle of its step).
public protocol InPlaceExecutor: SerialExecutor {
  /// True on the executor's own thread (or the one standing in for it after its end).
  var isCurrent: Bool { get }
  /// Runs `call` on the executor's thread once the job or call running now is over, before
  /// the next job; calls run in the order they were queued. Only from the executor's own
  /// thread (`isCurrent`).
  func runAfterCurrent(_ call: @escaping () -> Void)
}
