import Wire

// Legacy advertising and scanning (Vol 4 Part E 7.8.5 to 7.8.11).

/// HCI_LE_Set_Advertising_Parameters (7.8.5).
public struct LESetAdvertisingParameters: HCICommand {
  public static let opcode = HCIOpcode.le(0x0006)
  public static let packetName = "HCI_LE_Set_Advertising_Parameters"
  /// In units of 0.625 ms (0x0020 = 20 ms).
  public var advertisingIntervalMin: UInt16
  public var advertisingIntervalMax: UInt16
  /// 0x00 ADV_IND (connectable, scannable, undirected), 0x03 ADV_NONCONN_IND, ...
  public var advertisingType: UInt8
  public var ownAddressType: AddressType
  public var peerAddressType: AddressType
  public var peerAddress: BDAddress
  /// Bits 0-2: channels 37, 38, 39.
  public var advertisingChannelMap: UInt8
  public var advertisingFilterPolicy: UInt8

  public init(
    advertisingIntervalMin: UInt16 = 0x0020, advertisingIntervalMax: UInt16 = 0x0020, advertisingType: UInt8 = 0x00,
    ownAddressType: AddressType = .random, peerAddressType: AddressType = .public, peerAddress: BDAddress = .zero,
    advertisingChannelMap: UInt8 = 0x07, advertisingFilterPolicy: UInt8 = 0x00
  ) {
    self.advertisingIntervalMin = advertisingIntervalMin
    self.advertisingIntervalMax = advertisingIntervalMax
    self.advertisingType = advertisingType
    self.ownAddressType = ownAddressType
    self.peerAddressType = peerAddressType
    self.peerAddress = peerAddress
    self.advertisingChannelMap = advertisingChannelMap
    self.advertisingFilterPolicy = advertisingFilterPolicy
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    advertisingIntervalMin = try reader.u16("Advertising_Interval_Min")
    advertisingIntervalMax = try reader.u16("Advertising_Interval_Max")
    advertisingType = try reader.u8("Advertising_Type")
    ownAddressType = AddressType(rawValue: try reader.u8("Own_Address_Type"))
    peerAddressType = AddressType(rawValue: try reader.u8("Peer_Address_Type"))
    peerAddress = try reader.address("Peer_Address")
    advertisingChannelMap = try reader.u8("Advertising_Channel_Map")
    advertisingFilterPolicy = try reader.u8("Advertising_Filter_Policy")
  }

  public func write(to writer: inout ByteWriter) {
    writer.u16(advertisingIntervalMin)
    writer.u16(advertisingIntervalMax)
    writer.u8(advertisingType)
    writer.u8(ownAddressType.rawValue)
    writer.u8(peerAddressType.rawValue)
    writer.address(peerAddress)
    writer.u8(advertisingChannelMap)
    writer.u8(advertisingFilterPolicy)
  }
}

/// Legacy advertising and scan response data: a length (0 to 31), then 31 bytes, zero-padded.
private func readLegacyData(_ reader: inout ByteReader<[UInt8]>, _ field: String) throws -> [UInt8] {
  let length = Int(try reader.u8("\(field)_Length", atMost: 31))
  let data = try reader.bytes(31, field)
  return Array(data[0..<length])
}

/// Writes at most 31 bytes of `data` (longer data cannot be sent; `AdvertisingData` never
/// builds it), zero-padded to 31.
private func writeLegacyData(_ data: [UInt8], _ writer: inout ByteWriter) {
  let data = data.prefix(31)
  writer.u8(UInt8(data.count))
  writer.append(data)
  writer.append(repeatElement(0, count: 31 - data.count))
}

/// HCI_LE_Set_Advertising_Data (7.8.7).
public struct LESetAdvertisingData: HCICommand {
  public static let opcode = HCIOpcode.le(0x0008)
  public static let packetName = "HCI_LE_Set_Advertising_Data"
  /// The significant part (up to 31 bytes): AD structures, see `AdvertisingData`.
  public var advertisingData: [UInt8]

  public init(advertisingData: [UInt8]) { self.advertisingData = advertisingData }
  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    advertisingData = try readLegacyData(&reader, "Advertising_Data")
  }
  public func write(to writer: inout ByteWriter) { writeLegacyData(advertisingData, &writer) }
}

/// HCI_LE_Set_Scan_Response_Data (7.8.8).
public struct LESetScanResponseData: HCICommand {
  public static let opcode = HCIOpcode.le(0x0009)
  public static let packetName = "HCI_LE_Set_Scan_Response_Data"
  public var scanResponseData: [UInt8]

  public init(scanResponseData: [UInt8]) { self.scanResponseData = scanResponseData }
  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    scanResponseData = try readLegacyData(&reader, "Scan_Response_Data")
  }
  public func write(to writer: inout ByteWriter) { writeLegacyData(scanResponseData, &writer) }
}

/// HCI_LE_Set_Advertising_Enable (7.8.9).
public struct LESetAdvertisingEnable: HCICommand {
  public static let opcode = HCIOpcode.le(0x000A)
  public static let packetName = "HCI_LE_Set_Advertising_Enable"
  public var advertisingEnable: Bool

  public init(advertisingEnable: Bool) { self.advertisingEnable = advertisingEnable }
  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    advertisingEnable = try reader.u8("Advertising_Enable", atMost: 1) == 1
  }
  public func write(to writer: inout ByteWriter) { writer.u8(advertisingEnable ? 1 : 0) }
}

/// HCI_LE_Set_Scan_Parameters (7.8.10).
public struct LESetScanParameters: HCICommand {
  public static let opcode = HCIOpcode.le(0x000B)
  public static let packetName = "HCI_LE_Set_Scan_Parameters"
  /// 0x00 passive, 0x01 active (sends scan requests).
  public var scanType: UInt8
  /// In units of 0.625 ms.
  public var scanInterval: UInt16
  public var scanWindow: UInt16
  public var ownAddressType: AddressType
  public var scanningFilterPolicy: UInt8

  public init(
    scanType: UInt8 = 0x01, scanInterval: UInt16 = 0x0010, scanWindow: UInt16 = 0x0010,
    ownAddressType: AddressType = .random, scanningFilterPolicy: UInt8 = 0x00
  ) {
    self.scanType = scanType
    self.scanInterval = scanInterval
    self.scanWindow = scanWindow
    self.ownAddressType = ownAddressType
    self.scanningFilterPolicy = scanningFilterPolicy
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    scanType = try reader.u8("LE_Scan_Type")
    scanInterval = try reader.u16("LE_Scan_Interval")
    scanWindow = try reader.u16("LE_Scan_Window")
    ownAddressType = AddressType(rawValue: try reader.u8("Own_Address_Type"))
    scanningFilterPolicy = try reader.u8("Scanning_Filter_Policy")
  }

  public func write(to writer: inout ByteWriter) {
    writer.u8(scanType)
    writer.u16(scanInterval)
    writer.u16(scanWindow)
    writer.u8(ownAddressType.rawValue)
    writer.u8(scanningFilterPolicy)
  }
}

/// HCI_LE_Set_Scan_Enable (7.8.11).
public struct LESetScanEnable: HCICommand {
  public static let opcode = HCIOpcode.le(0x000C)
  public static let packetName = "HCI_LE_Set_Scan_Enable"
  public var scanEnable: Bool
  public var filterDuplicates: Bool

  public init(scanEnable: Bool, filterDuplicates: Bool = true) {
    self.scanEnable = scanEnable
    self.filterDuplicates = filterDuplicates
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    scanEnable = try reader.u8("LE_Scan_Enable", atMost: 1) == 1
    filterDuplicates = try reader.u8("Filter_Duplicates", atMost: 1) == 1
  }

  public func write(to writer: inout ByteWriter) {
    writer.u8(scanEnable ? 1 : 0)
    writer.u8(filterDuplicates ? 1 : 0)
  }
}
