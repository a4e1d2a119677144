#if canImport(Glibc)
  import Glibc
#endif

/// Wall-clock time for the Current Time Service and notification dates: seconds since the
/// Unix epoch and the local offset from UTC. Injected so tests choose the time.
public protocol WallClock: Sendable {
  func now() -> (secondsSinceEpoch: Int64, utcOffsetSeconds: Int)
}

/// The machine's clock and time zone.
public struct SystemWallClock: WallClock {
  public init() {}
  public func now() -> (secondsSinceEpoch: Int64, utcOffsetSeconds: Int) {
    var seconds = time(nil)
    var local = tm()
    localtime_r(&seconds, &local)
    return (Int64(seconds), Int(local.tm_gmtoff))
  }
}

/// A wall clock fixed at a given time (tests, reproducible demos).
public struct FixedWallClock: WallClock {
  public var seconds: Int64
  public var utcOffsetSeconds: Int
  public init(seconds: Int64, utcOffsetSeconds: Int = 0) {
    self.seconds = seconds
    self.utcOffsetSeconds = utcOffsetSeconds
  }
  public func now() -> (secondsSinceEpoch: Int64, utcOffsetSeconds: Int) { (seconds, utcOffsetSeconds) }
}
