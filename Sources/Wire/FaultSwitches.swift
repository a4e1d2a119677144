/// One fault switch: a test-only flag that breaks exactly one rule on purpose, to prove a
/// conformance case can fail (Protocol/conformance.md, "Fault switches").
public struct FaultDefinition<Flag: Sendable>: Sendable {
  public var name: String
  public var fault: Flag
  /// The rule it breaks.
  public var rule: String

  public init(name: String, fault: Flag, rule: String) {
    self.name = name
    self.fault = fault
    self.rule = rule
  }
}

/// Why a fault name was refused.
public struct UnknownFault: Error, CustomStringConvertible {
  public var text: String
  public var known: [String]
  public var description: String { "unknown fault '\(text)'; known: " + known.joined(separator: ", ") }
}

/// A set of fault switches with a catalog of names.
public protocol FaultSwitches: OptionSet, Sendable where Element == Self {
  static var catalog: [FaultDefinition<Self>] { get }
}

extension FaultSwitches {
  /// Turns on the fault `name`.
  public mutating func enable(_ name: String) throws(UnknownFault) {
    guard let definition = Self.catalog.first(where: { $0.name == name }) else {
      throw UnknownFault(text: name, known: Self.catalog.map(\.name))
    }
    insert(definition.fault)
  }
}
