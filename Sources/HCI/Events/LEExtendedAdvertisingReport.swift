import Wire

/// HCI_LE_Extended_Advertising_Report (Vol 4 Part E 7.7.65.13), LE Meta subevent 0x0D. A
/// controller that supports extended advertising may send it even for legacy advertising PDUs
/// (Bumble's virtual controller sends nothing else), so a scanning host must read it.
/// `HCIEvent` keeps it as `.leUnknown(subevent: 0x0D, ...)`; decode it from there.
public struct LEExtendedAdvertisingReport: HCIPayload {
  public static let packetName = "HCI_LE_Extended_Advertising_Report event"
  public static let subevent: UInt8 = 0x0D

  public struct Report: Hashable, Sendable {
    /// Bit 0 connectable, 1 scannable, 2 directed, 3 scan response, 4 legacy PDU, 5-6 data
    /// status (0 complete).
    public var eventType: UInt16
    public var addressType: AddressType
    public var address: BDAddress
    public var primaryPHY: UInt8
    public var secondaryPHY: UInt8
    public var advertisingSID: UInt8
    public var txPower: Int8
    public var rssi: Int8
    public var periodicAdvertisingInterval: UInt16
    public var directAddressType: AddressType
    public var directAddress: BDAddress
    /// AD structures (up to 229 bytes in one report).
    public var data: [UInt8]

    public init(
      eventType: UInt16, addressType: AddressType, address: BDAddress, primaryPHY: UInt8 = 1,
      secondaryPHY: UInt8 = 0, advertisingSID: UInt8 = 0xFF, txPower: Int8 = 127, rssi: Int8,
      periodicAdvertisingInterval: UInt16 = 0, directAddressType: AddressType = .public,
      directAddress: BDAddress = .zero, data: [UInt8]
    ) {
      self.eventType = eventType
      self.addressType = addressType
      self.address = address
      self.primaryPHY = primaryPHY
      self.secondaryPHY = secondaryPHY
      self.advertisingSID = advertisingSID
      self.txPower = txPower
      self.rssi = rssi
      self.periodicAdvertisingInterval = periodicAdvertisingInterval
      self.directAddressType = directAddressType
      self.directAddress = directAddress
      self.data = data
    }
  }

  public var reports: [Report]

  public init(reports: [Report]) { self.reports = reports }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    let count = Int(try reader.u8("Num_Reports"))
    reports = []
    for index in 0..<count {
      let eventType = try reader.u16("Event_Type[\(index)]")
      let addressType = AddressType(rawValue: try reader.u8("Address_Type[\(index)]"))
      let address = try reader.address("Address[\(index)]")
      let primaryPHY = try reader.u8("Primary_PHY[\(index)]")
      let secondaryPHY = try reader.u8("Secondary_PHY[\(index)]")
      let sid = try reader.u8("Advertising_SID[\(index)]")
      let txPower = Int8(bitPattern: try reader.u8("TX_Power[\(index)]"))
      let rssi = Int8(bitPattern: try reader.u8("RSSI[\(index)]"))
      let interval = try reader.u16("Periodic_Advertising_Interval[\(index)]")
      let directType = AddressType(rawValue: try reader.u8("Direct_Address_Type[\(index)]"))
      let directAddress = try reader.address("Direct_Address[\(index)]")
      let length = Int(try reader.u8("Data_Length[\(index)]", atMost: 229))
      let data = try reader.bytes(length, "Data[\(index)]")
      reports.append(
        Report(
          eventType: eventType, addressType: addressType, address: address, primaryPHY: primaryPHY,
          secondaryPHY: secondaryPHY, advertisingSID: sid, txPower: txPower, rssi: rssi,
          periodicAdvertisingInterval: interval, directAddressType: directType, directAddress: directAddress,
          data: data))
    }
  }

  public func write(to writer: inout ByteWriter) {
    let reports = reports.prefix(255)
    writer.u8(UInt8(reports.count))
    for report in reports {
      writer.u16(report.eventType)
      writer.u8(report.addressType.rawValue)
      writer.address(report.address)
      writer.u8(report.primaryPHY)
      writer.u8(report.secondaryPHY)
      writer.u8(report.advertisingSID)
      writer.u8(UInt8(bitPattern: report.txPower))
      writer.u8(UInt8(bitPattern: report.rssi))
      writer.u16(report.periodicAdvertisingInterval)
      writer.u8(report.directAddressType.rawValue)
      writer.address(report.directAddress)
      let data = report.data.prefix(229)
      writer.u8(UInt8(data.count))
      writer.append(data)
    }
  }
}

/// One advertisement as a scanning host sees it, from a legacy or an extended report.
public struct ScanReport: Hashable, Sendable {
  public var addressType: AddressType
  public var address: BDAddress
  /// The advertiser accepts connections (ADV_IND, ADV_DIRECT_IND, or extended bit 0).
  public var isConnectable: Bool
  /// A scan response rather than advertising data.
  public var isScanResponse: Bool
  public var data: [UInt8]
  public var rssi: Int8

  public init(
    addressType: AddressType, address: BDAddress, isConnectable: Bool, isScanResponse: Bool, data: [UInt8],
    rssi: Int8
  ) {
    self.addressType = addressType
    self.address = address
    self.isConnectable = isConnectable
    self.isScanResponse = isScanResponse
    self.data = data
    self.rssi = rssi
  }

  /// The reports an advertising event carries, legacy or extended; nil for any other event.
  /// An extended report's data is taken only when complete (data status 0).
  public static func reports(in event: HCIEvent) throws(HCIDecodeError) -> [ScanReport]? {
    switch event {
    case .leAdvertisingReport(let event):
      return event.reports.map { report in
        ScanReport(
          addressType: report.addressType, address: report.address, isConnectable: report.eventType <= 0x01,
          isScanResponse: report.eventType == 0x04, data: report.data, rssi: report.rssi)
      }
    case .leUnknown(LEExtendedAdvertisingReport.subevent, let parameters):
      let event = try LEExtendedAdvertisingReport(decoding: parameters, base: 3)
      return event.reports.filter { $0.eventType >> 5 & 0b11 == 0 }.map { report in
        ScanReport(
          addressType: report.addressType, address: report.address, isConnectable: report.eventType & 0x01 != 0,
          isScanResponse: report.eventType & 0x08 != 0, data: report.data, rssi: report.rssi)
      }
    default:
      return nil
    }
  }
}
