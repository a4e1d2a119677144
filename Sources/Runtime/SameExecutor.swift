extension Actor {
  /// Runs `body` isolated to this actor, from synchronous code that runs on the actor's
  /// executor but is isolated to another actor sharing it (an engine's loop, its ATT
  /// connection and its GATT client share one serial executor). The standard
  /// `assumeIsolated` does the same, but its closure is made escaping for the cast, which
  /// costs two heap allocations and about 130 ns a call on this project's machine; here the
  /// closure is escaping from the start and takes what it needs as `argument`, so a closure
  /// that captures nothing is a plain function pointer, and the call allocates nothing.
  ///
  /// Checked with `preconditionIsolated()`: called off the actor's executor, it stops the
  /// program, as `assumeIsolated` does, in every build this project makes (an `-Ounchecked`
  /// build would skip the check).
  /// Inlinable, so that it is specialized where it is called: a generic call would box the
  /// argument and allocate again.
  @inlinable @inline(__always)
  package nonisolated func assumeIsolated<Argument, T>(
    passing argument: Argument, _ body: @escaping (isolated Self, Argument) -> T,
    file: StaticString = #fileID, line: UInt = #line
  ) -> T {
    preconditionIsolated("expected to run on \(Self.self)'s executor", file: file, line: line)
    // An `isolated` parameter is passed as any other: only the type checker tells the two
    // function types apart.
    return unsafeBitCast(body, to: ((Self, Argument) -> T).self)(self, argument)
  }
}
