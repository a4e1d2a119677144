/// A one-byte identifier from an open value set: values this project does not know (a newer
/// phone's, or a reserved one) are kept as they are and survive a round trip.
public protocol OpenByteID: RawRepresentable<UInt8>, Hashable, Sendable, CustomStringConvertible,
  ExpressibleByIntegerLiteral
{
  init(rawValue: UInt8)
  /// The spec's names in lowerCamelCase, by value.
  static var names: [UInt8: String] { get }
}

extension OpenByteID {
  public init(integerLiteral value: UInt8) { self.init(rawValue: value) }

  /// The value named `name` (lowerCamelCase, as in `names`), or nil.
  public init?(name: String) {
    guard let entry = Self.names.first(where: { $0.value == name }) else { return nil }
    self.init(rawValue: entry.key)
  }

  /// The spec's name, or nil for a reserved value.
  public var name: String? { Self.names[rawValue] }
  public var isKnown: Bool { Self.names[rawValue] != nil }
  public var description: String { "\(name ?? "reserved")(\(rawValue))" }
}
