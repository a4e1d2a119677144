import ATT
import Wire

/// An AD type (Core Specification Supplement Part A 1; Assigned Numbers 2.3). Open.
public struct ADType: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let flags: ADType = 0x01
  public static let incompleteServiceUUIDs16: ADType = 0x02
  public static let completeServiceUUIDs16: ADType = 0x03
  public static let incompleteServiceUUIDs128: ADType = 0x06
  public static let completeServiceUUIDs128: ADType = 0x07
  public static let shortenedLocalName: ADType = 0x08
  public static let completeLocalName: ADType = 0x09
  public static let txPowerLevel: ADType = 0x0A
  public static let serviceSolicitationUUIDs16: ADType = 0x14
  public static let serviceSolicitationUUIDs128: ADType = 0x15
  public static let appearance: ADType = 0x19
  public static let manufacturerSpecificData: ADType = 0xFF

  public static let names: [UInt8: String] = [
    0x01: "flags", 0x02: "incompleteServiceUUIDs16", 0x03: "completeServiceUUIDs16",
    0x06: "incompleteServiceUUIDs128", 0x07: "completeServiceUUIDs128", 0x08: "shortenedLocalName",
    0x09: "completeLocalName", 0x0A: "txPowerLevel", 0x14: "serviceSolicitationUUIDs16",
    0x15: "serviceSolicitationUUIDs128", 0x19: "appearance", 0xFF: "manufacturerSpecificData",
  ]
}

/// One AD structure: Length(1) AD type(1) AD data(Length - 1).
public struct ADStructure: Hashable, Sendable {
  public var type: ADType
  public var data: [UInt8]

  public init(type: ADType, data: [UInt8]) {
    self.type = type
    self.data = data
  }

  /// Flags (CSS Part A 1.3): LE General Discoverable (0x02) and BR/EDR Not Supported (0x04)
  /// by default, what an LE-only peripheral that wants to be found sends.
  public static func flags(_ value: UInt8 = 0x06) -> ADStructure { ADStructure(type: .flags, data: [value]) }

  public static func completeLocalName(_ name: String) -> ADStructure {
    ADStructure(type: .completeLocalName, data: Array(name.utf8))
  }

  /// Solicited 128-bit service UUIDs (CSS Part A 1.10), each little-endian on the air.
  public static func serviceSolicitation128(_ uuids: [BluetoothUUID]) -> ADStructure {
    ADStructure(type: .serviceSolicitationUUIDs128, data: uuids.flatMap(\.littleEndian128))
  }

  var encodedLength: Int { 2 + data.count }
}

/// Advertising or scan response data: a sequence of AD structures (Vol 3 Part C 11). Legacy
/// advertising carries at most 31 bytes.
public struct AdvertisingData: Hashable, Sendable {
  public static let legacyMaximum = 31

  public var structures: [ADStructure]

  public init(_ structures: [ADStructure]) { self.structures = structures }

  /// Parses AD structures. A length of 0 ends the significant part (the rest is padding); a
  /// structure that runs past the end is an error.
  public init(decoding bytes: [UInt8]) throws(HCIDecodeError) {
    structures = try decodeWhole(bytes, packet: "advertising data") { reader in
      var structures: [ADStructure] = []
      while !reader.isAtEnd {
        let length = Int(try reader.u8("Length"))
        if length == 0 {
          _ = reader.rest()
          break
        }
        let type = ADType(rawValue: try reader.u8("AD type"))
        structures.append(ADStructure(type: type, data: try reader.bytes(length - 1, "AD data")))
      }
      return structures
    }
  }

  public var encoded: [UInt8] {
    var writer = ByteWriter()
    for structure in structures {
      let data = structure.data.prefix(254)
      writer.u8(UInt8(data.count + 1))
      writer.u8(structure.type.rawValue)
      writer.append(data)
    }
    return writer.bytes
  }

  /// What a peripheral advertises: flags, the solicited 128-bit services, then its name,
  /// complete if it fits in `maximum` bytes, otherwise as a Shortened Local Name cut at a
  /// character boundary (and left out when not one byte of it fits). The complete name can go
  /// in the scan response.
  public static func peripheral(
    name: String, solicitedServices: [BluetoothUUID] = [], flags: UInt8 = 0x06, maximum: Int = legacyMaximum
  ) -> AdvertisingData {
    var structures = [ADStructure.flags(flags)]
    if !solicitedServices.isEmpty { structures.append(.serviceSolicitation128(solicitedServices)) }
    let room = maximum - structures.reduce(0) { $0 + $1.encodedLength } - 2
    let utf8 = Array(name.utf8)
    if utf8.count <= room {
      structures.append(.completeLocalName(name))
    } else if room > 0 {
      var cut = room
      // Back off to the start of a UTF-8 character (continuation bytes are 0b10xxxxxx).
      while cut > 0 && utf8[cut] & 0xC0 == 0x80 { cut -= 1 }
      if cut > 0 { structures.append(ADStructure(type: .shortenedLocalName, data: Array(utf8[0..<cut]))) }
    }
    return AdvertisingData(structures)
  }

  /// The data of the first structure of `type`.
  public func first(_ type: ADType) -> [UInt8]? { structures.first { $0.type == type }?.data }

  /// The Flags value, if present and one byte long.
  public var flags: UInt8? {
    guard let data = first(.flags), data.count == 1 else { return nil }
    return data[0]
  }

  /// The complete local name, else the shortened one, when valid UTF-8.
  public var localName: (name: String, isComplete: Bool)? {
    if let data = first(.completeLocalName), let name = String(validatingUTF8Bytes: data) { return (name, true) }
    if let data = first(.shortenedLocalName), let name = String(validatingUTF8Bytes: data) { return (name, false) }
    return nil
  }

  /// Every solicited 128-bit service UUID. A structure whose length is not a multiple of 16 is
  /// an error.
  public func solicitedServices128() throws(HCIDecodeError) -> [BluetoothUUID] {
    var uuids: [BluetoothUUID] = []
    var offset = 0
    for structure in structures {
      defer { offset += structure.encodedLength }
      guard structure.type == .serviceSolicitationUUIDs128 else { continue }
      guard structure.data.count % 16 == 0 else {
        throw HCIDecodeError(
          packet: "advertising data", field: "Service Solicitation (128-bit)", offset: offset + 2,
          reason: .invalid("\(structure.data.count) bytes is not a whole number of UUIDs"))
      }
      for start in stride(from: 0, to: structure.data.count, by: 16) {
        if let uuid = BluetoothUUID(littleEndian: structure.data[start..<start + 16]) { uuids.append(uuid) }
      }
    }
    return uuids
  }

  /// True when the data solicits `service` (what a central scanning for ANCS consumers looks
  /// for). Malformed solicitation structures count as not soliciting.
  public func solicits(_ service: BluetoothUUID) -> Bool {
    (try? solicitedServices128().contains(service)) ?? false
  }
}
