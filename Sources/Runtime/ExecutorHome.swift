/// Where an actor that can be given an executor runs (SE-0392): on the serial executor it
/// was given (an event loop, so that the loop's reads enter it in place), or else on one of
/// its own, as a default actor would. It keeps that executor alive as long as the actor.
public struct ExecutorHome: Sendable {
  /// What keeps the executor alive: the given one, or the actor lent for its own.
  private let keeper: any Sendable
  /// The executor, taken once: the runtime asks for it on every call into the actor.
  public let executor: UnownedSerialExecutor
  /// The executor's own timers, when it keeps them (an event loop): code isolated to the
  /// actor runs on its thread, where they are set.
  public let timers: (any TimerExecutor)?

  /// On `given`, or on an executor of its own when nil.
  public init(_ given: (any SerialExecutor)?) {
    if let given {
      keeper = given
      executor = given.asUnownedSerialExecutor()
      timers = given as? any TimerExecutor
    } else {
      let own = OwnExecutor()
      keeper = own
      executor = own.unownedExecutor
      timers = nil
    }
  }

  /// On `owner`'s executor (an engine and the connections it owns share one), with its
  /// timers when it says where it runs.
  public init(sharing owner: any Actor) {
    keeper = owner
    executor = owner.unownedExecutor
    timers = (owner as? any HomedActor)?.executorHome.timers
  }
}

/// An actor kept only for its executor: the one an actor given none runs on.
private actor OwnExecutor {}
