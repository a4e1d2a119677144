/// A usage error: one line on stderr, exit code 2.
public struct UsageError: Error {
  public var message: String
  public init(_ message: String) { self.message = message }
}
