import Wire

/// Why bytes from the controller or the peer are not a valid packet, and where. Every decoder
/// in this target throws it (H4 framing aside): HCI commands and events, ACL and L2CAP
/// headers, advertising data and SMP PDUs.
public struct HCIDecodeError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Reason: Hashable, Sendable {
    /// The bytes ended before `field` was complete.
    case truncated(needed: Int, available: Int)
    /// Bytes left over after the last field.
    case trailingBytes(count: Int)
    /// A code this decoder does not know where it must (an SMP command code, for example).
    case unknownCode(UInt8)
    /// A value that breaks a rule beyond the lengths.
    case invalid(String)
  }
  /// The packet, in the spec's words ("LE Connection Complete event", "SMP Pairing Request").
  public var packet: String
  /// The field, in the spec's words ("Connection_Handle").
  public var field: String
  /// Byte offset of the field from the start of the packet.
  public var offset: Int
  public var reason: Reason

  public init(packet: String, field: String, offset: Int, reason: Reason) {
    self.packet = packet
    self.field = field
    self.offset = offset
    self.reason = reason
  }

  public var description: String {
    let what: String
    switch reason {
    case .truncated(let needed, let available): what = "needs \(needed) byte(s), \(available) left"
    case .trailingBytes(let count): what = "\(count) unexpected byte(s) after the end"
    case .unknownCode(let code): what = "unknown code 0x\(Hex.encode([code]))"
    case .invalid(let detail): what = detail
    }
    return "\(packet): \(field) at byte \(offset): \(what)"
  }
}

/// Thrown inside a decoder for a rule beyond the lengths the reader checks; the decoding entry
/// point names the packet.
struct FieldError: Error {
  var field: String
  var offset: Int
  var reason: HCIDecodeError.Reason
}

/// Fixed-layout parameters of one packet: decode and encode side by side, fields in wire order.
public protocol HCIPayload: Hashable, Sendable {
  /// The packet's name in the spec's words, for error messages.
  static var packetName: String { get }
  /// Reads the fields; throws `ReadError` for a short input and `FieldError` for a bad value.
  init(reading reader: inout ByteReader<[UInt8]>) throws
  func write(to writer: inout ByteWriter)
}

extension HCIPayload {
  /// Decodes exactly `bytes`: a short input, a bad value or a byte left over is an error.
  /// `base` is added to every offset reported (the length of the header before the bytes).
  public init(decoding bytes: [UInt8], base: Int = 0) throws(HCIDecodeError) {
    self = try decodeWhole(bytes, packet: Self.packetName, base: base) { reader in try Self(reading: &reader) }
  }

  /// The encoded fields.
  public var encoded: [UInt8] {
    var writer = ByteWriter()
    write(to: &writer)
    return writer.bytes
  }
}

/// Runs `body` over all of `bytes` and turns what it throws into an `HCIDecodeError` for
/// `packet`; bytes left over are an error too.
func decodeWhole<T>(
  _ bytes: [UInt8], packet: String, base: Int = 0, _ body: (inout ByteReader<[UInt8]>) throws -> T
) throws(HCIDecodeError) -> T {
  var reader = ByteReader(bytes)
  let value: T
  do {
    value = try body(&reader)
  } catch {
    throw HCIDecodeError(wrapping: error, packet: packet, base: base)
  }
  if !reader.isAtEnd {
    throw HCIDecodeError(
      packet: packet, field: "end", offset: base + reader.offset, reason: .trailingBytes(count: reader.remaining))
  }
  return value
}

extension HCIDecodeError {
  /// Names `packet` in what a field decoder threw.
  init(wrapping error: any Error, packet: String, base: Int) {
    switch error {
    case let error as ReadError:
      let reason: Reason
      switch error.reason {
      case .truncated(let needed, let available): reason = .truncated(needed: needed, available: available)
      case .missingTerminator: reason = .invalid("no NUL terminator")
      case .invalidUTF8: reason = .invalid("not valid UTF-8")
      }
      self.init(packet: packet, field: error.field, offset: base + error.offset, reason: reason)
    case let error as FieldError:
      self.init(packet: packet, field: error.field, offset: base + error.offset, reason: error.reason)
    case var error as HCIDecodeError:
      error.offset += base
      self = error
    default:
      self.init(packet: packet, field: "packet", offset: base, reason: .invalid("\(error)"))
    }
  }
}
