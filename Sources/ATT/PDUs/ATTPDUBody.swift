import Wire

/// Why bytes are not a valid ATT PDU, and where. A server answers them with Invalid PDU (0x04).
public struct ATTDecodeError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Reason: Hashable, Sendable {
    case empty
    case truncated(needed: Int, available: Int)
    case trailingBytes(count: Int)
    case invalid(String)
  }
  public var opcode: ATTOpcode?
  public var field: String
  public var offset: Int
  public var reason: Reason

  public init(opcode: ATTOpcode?, field: String, offset: Int, reason: Reason) {
    self.opcode = opcode
    self.field = field
    self.offset = offset
    self.reason = reason
  }

  /// A short stable name for the reason, as Protocol/vectors spells expected errors.
  public var kind: String {
    switch reason {
    case .empty: return "empty"
    case .truncated: return "truncated"
    case .trailingBytes: return "trailingBytes"
    case .invalid: return "invalid"
    }
  }

  public var description: String {
    let what: String
    switch reason {
    case .empty: what = "no opcode"
    case .truncated(let needed, let available): what = "needs \(needed) byte(s), \(available) left"
    case .trailingBytes(let count): what = "\(count) unexpected byte(s) after the end"
    case .invalid(let detail): what = detail
    }
    return "\(opcode.map { "\($0) " } ?? "")\(field) at byte \(offset): \(what)"
  }
}

/// Thrown by a PDU body's decoder for a rule beyond the lengths the reader checks.
struct FormatError: Error {
  var field: String
  var offset: Int
  var detail: String
}

/// The parameters of one ATT PDU: decode and encode side by side, fields in wire order.
public protocol ATTPDUBody: Hashable, Sendable {
  static var opcode: ATTOpcode { get }
  /// Reads the parameters that follow the opcode. The reader's offsets count the opcode.
  init(parameters reader: inout ByteReader<[UInt8]>) throws
  func encode(to writer: inout ByteWriter)
  /// Room to reserve for the encoded PDU, opcode included: enough for most PDUs of the
  /// type, so encoding allocates once. The default is 8 bytes.
  var encodedCapacity: Int { get }
}

extension ATTPDUBody {
  public var encodedCapacity: Int { 8 }

  /// Opcode and parameters.
  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: encodedCapacity)
    writer.u8(Self.opcode.rawValue)
    encode(to: &writer)
    return writer.bytes
  }
}

/// A handle range, inclusive, as in the Find and Read By Type requests.
public struct HandleRange: Hashable, Sendable, CustomStringConvertible {
  public var start: UInt16
  public var end: UInt16

  public init(_ start: UInt16, _ end: UInt16) {
    self.start = start
    self.end = end
  }

  public static let all = HandleRange(0x0001, 0xFFFF)

  /// A request's range is valid when start is not 0 and start <= end (Vol 3 Part F 3.4.3.1).
  public var isValid: Bool { start != 0 && start <= end }

  public var description: String {
    "0x\(Hex.encode([UInt8(start >> 8), UInt8(start & 0xff)], separator: ""))-0x\(Hex.encode([UInt8(end >> 8), UInt8(end & 0xff)], separator: ""))"
  }

  static func read(_ reader: inout ByteReader<[UInt8]>) throws -> HandleRange {
    HandleRange(try reader.u16("StartingHandle"), try reader.u16("EndingHandle"))
  }

  func write(_ writer: inout ByteWriter) {
    writer.u16(start)
    writer.u16(end)
  }
}

extension ByteReader<[UInt8]> {
  /// A 2- or 16-byte UUID filling the rest of the PDU.
  mutating func uuidRest(_ field: String) throws -> BluetoothUUID {
    let at = offset
    let bytes = rest()
    guard let uuid = BluetoothUUID(littleEndian: bytes) else {
      throw FormatError(field: field, offset: at, detail: "a UUID is 2 or 16 bytes, not \(bytes.count)")
    }
    return uuid
  }

  /// Fails unless the PDU was read to the end.
  func end() throws {
    if !isAtEnd {
      throw ATTDecodeError(opcode: nil, field: "PDU", offset: offset, reason: .trailingBytes(count: remaining))
    }
  }

  /// A list of equal-sized entries filling the rest of the PDU, at least one.
  mutating func list<T>(_ field: String, entrySize: Int, _ entry: (inout Self) throws -> T) throws -> [T] {
    guard entrySize > 0 else { throw FormatError(field: field, offset: offset, detail: "entry size 0") }
    guard !isAtEnd else { throw FormatError(field: field, offset: offset, detail: "empty list") }
    guard remaining % entrySize == 0 else {
      throw FormatError(
        field: field, offset: offset, detail: "\(remaining) bytes is not a whole number of \(entrySize)-byte entries")
    }
    var items: [T] = []
    while !isAtEnd { items.append(try entry(&self)) }
    return items
  }
}
