/// Where a library's diagnostics go. Libraries take one from their caller and never print;
/// the executable decides what reaches stderr (-v, -vv).
public struct Logger: Sendable {
  public enum Level: Int, Comparable, Sendable {
    case error = 0
    case info = 1
    case debug = 2
    case trace = 3
    public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
  }

  public let level: Level
  private let sink: (@Sendable (Level, String) -> Void)?

  public init(level: Level, sink: @escaping @Sendable (Level, String) -> Void) {
    self.level = level
    self.sink = sink
  }

  /// Drops everything.
  public static let none = Logger()
  private init() {
    level = .error
    sink = nil
  }

  @inlinable public func enabled(_ at: Level) -> Bool { at <= level && hasSink }
  public var hasSink: Bool { sink != nil }

  public func log(_ at: Level, _ message: @autoclosure () -> String) {
    guard let sink, at <= level else { return }
    sink(at, message())
  }

  public func error(_ message: @autoclosure () -> String) { log(.error, message()) }
  public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
  public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
  public func trace(_ message: @autoclosure () -> String) { log(.trace, message()) }
}
