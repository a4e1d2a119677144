import Wire

/// Why ANCS bytes could not be decoded or reassembled, and at which byte offset.
///
/// Offsets count from the first byte of the PDU (for a Data Source response, from the first
/// byte of its first fragment).
public struct ANCSError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Reason: Hashable, Sendable {
    case truncated(needed: Int, available: Int)
    case trailingBytes(count: Int)
    case unknownCommand(CommandID)
    case missingMaximumLength(NotificationAttributeID)
    case noAttributes
    case missingTerminator
    case invalidUTF8
    /// A value longer than the maximum the request asked for.
    case valueTooLong(attribute: UInt8, length: Int, maximum: Int)
    /// A Data Source response that answers some other command, UID or app.
    case unexpectedResponse(String)
    /// The same attribute twice in one response.
    case duplicateAttribute(UInt8)
    /// A tuple that was not requested, with the reassembler set to refuse them.
    case unrequestedAttribute(UInt8)
    /// The response grew past the reassembler's size cap.
    case tooLarge(limit: Int)
    /// Requested tuples that never arrived, when the response was ended.
    case missingAttributes([UInt8])
    /// A fragment arrived while no response was expected.
    case unexpectedFragment
    /// Bad text in a helper (date, length).
    case invalidValue(String)
  }

  /// The field concerned, in the spec's words.
  public var field: String
  public var offset: Int
  public var reason: Reason

  public init(field: String, offset: Int, reason: Reason) {
    self.field = field
    self.offset = offset
    self.reason = reason
  }

  init(_ error: ReadError, base: Int = 0) {
    field = error.field
    offset = error.offset + base
    switch error.reason {
    case .truncated(let needed, let available): reason = .truncated(needed: needed, available: available)
    case .missingTerminator: reason = .missingTerminator
    case .invalidUTF8: reason = .invalidUTF8
    }
  }

  /// The ANCS error code a phone answers a Control Point write with, for this decode error.
  public var controlPointErrorCode: ANCSErrorCode {
    if case .unknownCommand = reason { return .unknownCommand }
    return .invalidCommand
  }

  /// A short stable name for the reason, as Protocol/vectors spells expected errors.
  public var kind: String {
    switch reason {
    case .truncated: return "truncated"
    case .trailingBytes: return "trailingBytes"
    case .unknownCommand: return "unknownCommand"
    case .missingMaximumLength: return "missingMaximumLength"
    case .noAttributes: return "noAttributes"
    case .missingTerminator: return "missingTerminator"
    case .invalidUTF8: return "invalidUTF8"
    case .valueTooLong: return "valueTooLong"
    case .unexpectedResponse: return "unexpectedResponse"
    case .duplicateAttribute: return "duplicateAttribute"
    case .unrequestedAttribute: return "unrequestedAttribute"
    case .tooLarge: return "tooLarge"
    case .missingAttributes: return "missingAttributes"
    case .unexpectedFragment: return "unexpectedFragment"
    case .invalidValue: return "invalidValue"
    }
  }

  public var description: String {
    let what: String
    switch reason {
    case .truncated(let needed, let available): what = "needs \(needed) byte(s), \(available) left"
    case .trailingBytes(let count): what = "\(count) unexpected byte(s) after the end"
    case .unknownCommand(let id): what = "unknown CommandID \(id.rawValue)"
    case .missingMaximumLength(let id): what = "\(id) must be followed by a 2-byte maximum length"
    case .noAttributes: what = "no attribute IDs requested"
    case .missingTerminator: what = "no NUL terminator"
    case .invalidUTF8: what = "not valid UTF-8"
    case .valueTooLong(let id, let length, let maximum):
      what = "attribute \(id) is \(length) bytes, over the requested maximum \(maximum)"
    case .unexpectedResponse(let detail): what = "unexpected response: \(detail)"
    case .duplicateAttribute(let id): what = "attribute \(id) appears twice"
    case .unrequestedAttribute(let id): what = "attribute \(id) was not requested"
    case .tooLarge(let limit): what = "response exceeds the \(limit)-byte cap"
    case .missingAttributes(let ids): what = "requested attribute(s) \(ids) never arrived"
    case .unexpectedFragment: what = "fragment while no response was expected"
    case .invalidValue(let detail): what = detail
    }
    return "\(field) at byte \(offset): \(what)"
  }
}

extension ByteReader {
  /// Fails unless every byte was consumed.
  func expectEnd(_ field: String) throws(ANCSError) {
    if !isAtEnd {
      throw ANCSError(field: field, offset: offset, reason: .trailingBytes(count: remaining))
    }
  }
}

/// Runs a decoder body written with the Wire reader and reports any failure as an ANCSError.
func decodingANCS<T>(_ body: () throws -> T) throws(ANCSError) -> T {
  do {
    return try body()
  } catch let error as ANCSError {
    throw error
  } catch let error as ReadError {
    throw ANCSError(error)
  } catch {
    throw ANCSError(field: "PDU", offset: 0, reason: .invalidValue(String(describing: error)))
  }
}
