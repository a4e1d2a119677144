/// Why AMS bytes could not be decoded, and at which byte offset of the PDU.
public struct AMSError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Reason: Hashable, Sendable {
    case truncated(needed: Int, available: Int)
    case trailingBytes(count: Int)
    /// Text that is not what its attribute holds (PlaybackInfo, a number).
    case invalidValue(String)
  }

  /// The field concerned, in the specification's words.
  public var field: String
  public var offset: Int
  public var reason: Reason

  public init(field: String, offset: Int, reason: Reason) {
    self.field = field
    self.offset = offset
    self.reason = reason
  }

  /// A short stable name for the reason, as Protocol/vectors spells expected errors.
  public var kind: String {
    switch reason {
    case .truncated: return "truncated"
    case .trailingBytes: return "trailingBytes"
    case .invalidValue: return "invalidValue"
    }
  }

  /// The code a phone answers a malformed write with: Invalid Command.
  public var errorCode: AMSErrorCode { .invalidCommand }

  public var description: String {
    switch reason {
    case .truncated(let needed, let available):
      return "\(field) at byte \(offset): needs \(needed) byte(s), \(available) left"
    case .trailingBytes(let count): return "\(count) byte(s) after \(field) at byte \(offset)"
    case .invalidValue(let why): return "\(field) at byte \(offset): \(why)"
    }
  }

  static func truncated(_ field: String, at offset: Int, needed: Int = 1, in count: Int) -> AMSError {
    AMSError(field: field, offset: offset, reason: .truncated(needed: needed, available: max(0, count - offset)))
  }

  static func trailing(_ field: String, at offset: Int, in count: Int) -> AMSError {
    AMSError(field: field, offset: offset, reason: .trailingBytes(count: count - offset))
  }
}
