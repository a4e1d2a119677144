import ATT
import Wire

/// Characteristic properties (Vol 3 Part G 3.3.1.1).
public struct CharacteristicProperties: OptionSet, Hashable, Sendable {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }
  public static let broadcast = CharacteristicProperties(rawValue: 0x01)
  public static let read = CharacteristicProperties(rawValue: 0x02)
  public static let writeWithoutResponse = CharacteristicProperties(rawValue: 0x04)
  public static let write = CharacteristicProperties(rawValue: 0x08)
  public static let notify = CharacteristicProperties(rawValue: 0x10)
  public static let indicate = CharacteristicProperties(rawValue: 0x20)
  public static let authenticatedSignedWrites = CharacteristicProperties(rawValue: 0x40)
  public static let extendedProperties = CharacteristicProperties(rawValue: 0x80)
}

/// Client Characteristic Configuration bits (Vol 3 Part G 3.3.3.3).
public struct CCCDValue: OptionSet, Hashable, Sendable {
  public var rawValue: UInt16
  public init(rawValue: UInt16) { self.rawValue = rawValue }
  public static let notifications = CCCDValue(rawValue: 0x0001)
  public static let indications = CCCDValue(rawValue: 0x0002)
  /// The descriptor's value as written: two bytes, little-endian.
  public var bytes: [UInt8] { [UInt8(truncatingIfNeeded: rawValue), UInt8(truncatingIfNeeded: rawValue >> 8)] }
}

/// What a server tells the writer of a characteristic value.
public enum WriteOutcome: Sendable {
  /// Accepted; `then` runs after the Write Response has been put on the link, in the same
  /// step, on the connection's executor, which is the session's (what it sends goes after
  /// the response). It is the reply's `afterResponse` as it is: one closure a write.
  case accepted(then: (@Sendable (isolated ATTConnection) -> Void)?)
  /// Refused with this ATT error code (for ANCS, 0xA0-0xA3).
  case refused(ATTErrorCode)

  public static let accepted = WriteOutcome.accepted(then: nil)
}

/// One characteristic of a service definition.
public struct CharacteristicDefinition: Sendable {
  public var uuid: BluetoothUUID
  public var properties: CharacteristicProperties
  /// The least security level for reading or writing the value and its CCCD. Below it the
  /// server answers Insufficient Encryption (0x0F) or Insufficient Authentication (0x05).
  public var security: SecurityLevel
  /// The error a link below `security` gets, when not the one the level implies
  /// (an iPhone answers Insufficient Authentication, 0x05, on an unpaired link where only
  /// encryption is wanted).
  public var refusal: ATTErrorCode?
  /// The Characteristic Extended Properties descriptor's value (bit 0 Reliable Write, bit 1
  /// Writable Auxiliaries, Vol 3 Part G 3.3.3.1); when set, the declaration carries the
  /// Extended Properties bit and the descriptor follows the value, before any CCCD.
  public var extendedProperties: UInt16?
  /// The value for reads; called on every read with the session that reads.
  public var read: (@Sendable (isolated GATTSession) -> [UInt8])?
  /// Called on every write (request or command), on the link's executor, to decide the
  /// answer at once: what must follow the answer goes in the outcome's `then`, run in the
  /// same step.
  public var write: (@Sendable (isolated GATTSession, [UInt8]) -> WriteOutcome)?
  /// Called after a client changes its CCCD for this characteristic, once the Write
  /// Response is on the link, in the same step.
  public var subscribed: (@Sendable (isolated GATTSession, CCCDValue) -> Void)?

  public init(
    uuid: BluetoothUUID, properties: CharacteristicProperties, security: SecurityLevel = .unencrypted,
    refusal: ATTErrorCode? = nil, extendedProperties: UInt16? = nil,
    read: (@Sendable (isolated GATTSession) -> [UInt8])? = nil,
    write: (@Sendable (isolated GATTSession, [UInt8]) -> WriteOutcome)? = nil,
    subscribed: (@Sendable (isolated GATTSession, CCCDValue) -> Void)? = nil
  ) {
    self.uuid = uuid
    self.properties = properties
    self.security = security
    self.refusal = refusal
    self.extendedProperties = extendedProperties
    self.read = read
    self.write = write
    self.subscribed = subscribed
  }

  /// A read-only characteristic with a fixed value.
  public static func constant(
    _ uuid: BluetoothUUID, _ value: [UInt8], security: SecurityLevel = .unencrypted, refusal: ATTErrorCode? = nil
  ) -> CharacteristicDefinition {
    CharacteristicDefinition(uuid: uuid, properties: .read, security: security, refusal: refusal, read: { _ in value })
  }

  /// The properties as declared: with the Extended Properties bit when the descriptor is there.
  var declaredProperties: CharacteristicProperties {
    extendedProperties == nil ? properties : properties.union(.extendedProperties)
  }
}

/// A service to publish.
public struct ServiceDefinition: Sendable {
  public var uuid: BluetoothUUID
  public var isPrimary: Bool
  public var characteristics: [CharacteristicDefinition]
  /// The security level from which a client's link sees the service: below it the service is
  /// left out of discovery, and once the link gets there the client is told with Service
  /// Changed (as an iPhone publishes ANCS only on an encrypted link).
  public var shownFrom: SecurityLevel

  public init(
    uuid: BluetoothUUID, isPrimary: Bool = true, characteristics: [CharacteristicDefinition],
    shownFrom: SecurityLevel = .unencrypted
  ) {
    self.uuid = uuid
    self.isPrimary = isPrimary
    self.characteristics = characteristics
    self.shownFrom = shownFrom
  }
}

/// Where a published characteristic's attributes ended up.
public struct CharacteristicHandles: Hashable, Sendable {
  public var declaration: UInt16
  public var value: UInt16
  /// The Client Characteristic Configuration descriptor, for notify or indicate properties.
  public var cccd: UInt16?
}

/// One attribute of the database.
public struct Attribute: Sendable {
  public enum Role: Sendable {
    case serviceDeclaration(endGroup: UInt16)
    case characteristicDeclaration
    case value(CharacteristicDefinition)
    case cccd(valueHandle: UInt16, CharacteristicDefinition)
    /// A descriptor with a fixed, read-only value (Characteristic Extended Properties).
    case constantDescriptor
  }
  public var handle: UInt16
  public var type: BluetoothUUID
  /// The stored value of declarations; values and CCCDs are answered by their role.
  public var storedValue: [UInt8]
  public var role: Role
}

/// Why a database could not be built.
public enum DatabaseError: Error, Hashable, Sendable, CustomStringConvertible {
  case outOfHandles
  public var description: String { "the database needs more than 65535 handles" }
}

/// An ordered attribute database with handles from 1, built from service definitions. It is
/// a plain value; the server swaps it whole when services change.
public struct GATTDatabase: Sendable {
  public private(set) var attributes: [Attribute] = []
  /// Handles per characteristic, in definition order, per service UUID.
  public private(set) var handles: [BluetoothUUID: [CharacteristicHandles]] = [:]
  /// Handle ranges per service UUID.
  public private(set) var serviceRanges: [BluetoothUUID: HandleRange] = [:]
  /// The services seen only from a security level above unencrypted, with that level.
  public private(set) var shownFrom: [BluetoothUUID: SecurityLevel] = [:]

  public init() {}

  /// Appends a service after the last handle; returns its characteristics' handles.
  @discardableResult
  public mutating func add(_ service: ServiceDefinition, startingAt first: UInt16? = nil) throws(DatabaseError)
    -> [CharacteristicHandles]
  {
    var next = Int(first ?? ((attributes.last?.handle ?? 0) + 1))
    let start = next
    func take() throws(DatabaseError) -> UInt16 {
      guard next <= 0xFFFF else { throw .outOfHandles }
      defer { next += 1 }
      return UInt16(next)
    }
    var added: [Attribute] = []
    added.append(
      Attribute(
        handle: try take(), type: service.isPrimary ? .primaryService : .secondaryService,
        storedValue: service.uuid.littleEndian, role: .serviceDeclaration(endGroup: 0)))
    var result: [CharacteristicHandles] = []
    for characteristic in service.characteristics {
      let declaration = try take()
      let value = try take()
      let declared =
        [
          characteristic.declaredProperties.rawValue, UInt8(truncatingIfNeeded: value),
          UInt8(truncatingIfNeeded: value >> 8),
        ]
        + characteristic.uuid.littleEndian
      added.append(
        Attribute(
          handle: declaration, type: .characteristic, storedValue: declared, role: .characteristicDeclaration))
      added.append(Attribute(handle: value, type: characteristic.uuid, storedValue: [], role: .value(characteristic)))
      if let extended = characteristic.extendedProperties {
        added.append(
          Attribute(
            handle: try take(), type: .characteristicExtendedProperties,
            storedValue: [UInt8(truncatingIfNeeded: extended), UInt8(truncatingIfNeeded: extended >> 8)],
            role: .constantDescriptor))
      }
      var cccd: UInt16?
      if !characteristic.properties.isDisjoint(with: [.notify, .indicate]) {
        let handle = try take()
        cccd = handle
        added.append(
          Attribute(
            handle: handle, type: .clientCharacteristicConfiguration, storedValue: [],
            role: .cccd(valueHandle: value, characteristic)))
      }
      result.append(CharacteristicHandles(declaration: declaration, value: value, cccd: cccd))
    }
    let end = UInt16(next - 1)
    added[0].role = .serviceDeclaration(endGroup: end)
    attributes.append(contentsOf: added)
    attributes.sort { $0.handle < $1.handle }
    handles[service.uuid] = result
    serviceRanges[service.uuid] = HandleRange(UInt16(start), end)
    shownFrom[service.uuid] = service.shownFrom > .unencrypted ? service.shownFrom : nil
    return result
  }

  /// Removes a service; returns the handle range it occupied.
  @discardableResult
  public mutating func remove(_ uuid: BluetoothUUID) -> HandleRange? {
    guard let range = serviceRanges.removeValue(forKey: uuid) else { return nil }
    attributes.removeAll { $0.handle >= range.start && $0.handle <= range.end }
    handles[uuid] = nil
    shownFrom[uuid] = nil
    return range
  }

  /// The ranges of the services a link at `level` does not see, each with the level it needs.
  public func hidden(below level: SecurityLevel) -> [(range: HandleRange, shownFrom: SecurityLevel)] {
    shownFrom.compactMap { uuid, needed in
      guard needed > level, let range = serviceRanges[uuid] else { return nil }
      return (range, needed)
    }.sorted { $0.range.start < $1.range.start }
  }

  /// The index of the attribute with this handle, by binary search.
  public func index(of handle: UInt16) -> Int? { attributes.binarySearch(handle) { $0.handle } }

  /// Indices of the attributes whose handles fall in `range`.
  public func indices(in range: HandleRange) -> Range<Int> {
    var low = 0
    var high = attributes.count
    while low < high {
      let mid = (low + high) / 2
      if attributes[mid].handle < range.start { low = mid + 1 } else { high = mid }
    }
    var end = low
    while end < attributes.count && attributes[end].handle <= range.end { end += 1 }
    return low..<end
  }
}
