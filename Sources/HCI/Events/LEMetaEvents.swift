import Wire

// Subevents of HCI_LE_Meta (Vol 4 Part E 7.7.65), in wire order after the subevent code.

/// HCI_LE_Connection_Complete (7.7.65.1) and HCI_LE_Enhanced_Connection_Complete [v1]
/// (7.7.65.10): one shape, the enhanced event adding the two resolvable private addresses.
public struct LEConnectionComplete: Hashable, Sendable {
  public var status: HCIStatus
  public var connectionHandle: UInt16
  /// 0x00 central, 0x01 peripheral.
  public var role: UInt8
  public var peerAddressType: AddressType
  public var peerAddress: BDAddress
  /// Only in the enhanced event (zero when the controller resolved none).
  public var localResolvablePrivateAddress: BDAddress
  public var peerResolvablePrivateAddress: BDAddress
  /// In units of 1.25 ms.
  public var connectionInterval: UInt16
  public var peripheralLatency: UInt16
  /// In units of 10 ms.
  public var supervisionTimeout: UInt16
  public var centralClockAccuracy: UInt8

  public init(
    status: HCIStatus = .success, connectionHandle: UInt16, role: UInt8, peerAddressType: AddressType,
    peerAddress: BDAddress, localResolvablePrivateAddress: BDAddress = .zero,
    peerResolvablePrivateAddress: BDAddress = .zero, connectionInterval: UInt16, peripheralLatency: UInt16 = 0,
    supervisionTimeout: UInt16, centralClockAccuracy: UInt8 = 0
  ) {
    self.status = status
    self.connectionHandle = connectionHandle
    self.role = role
    self.peerAddressType = peerAddressType
    self.peerAddress = peerAddress
    self.localResolvablePrivateAddress = localResolvablePrivateAddress
    self.peerResolvablePrivateAddress = peerResolvablePrivateAddress
    self.connectionInterval = connectionInterval
    self.peripheralLatency = peripheralLatency
    self.supervisionTimeout = supervisionTimeout
    self.centralClockAccuracy = centralClockAccuracy
  }

  init(reading reader: inout ByteReader<[UInt8]>, enhanced: Bool) throws(ReadError) {
    status = HCIStatus(rawValue: try reader.u8("Status"))
    connectionHandle = try reader.u16("Connection_Handle")
    role = try reader.u8("Role")
    peerAddressType = AddressType(rawValue: try reader.u8("Peer_Address_Type"))
    peerAddress = try reader.address("Peer_Address")
    localResolvablePrivateAddress = enhanced ? try reader.address("Local_Resolvable_Private_Address") : .zero
    peerResolvablePrivateAddress = enhanced ? try reader.address("Peer_Resolvable_Private_Address") : .zero
    connectionInterval = try reader.u16("Connection_Interval")
    peripheralLatency = try reader.u16("Peripheral_Latency")
    supervisionTimeout = try reader.u16("Supervision_Timeout")
    centralClockAccuracy = try reader.u8("Central_Clock_Accuracy")
  }

  func write(to writer: inout ByteWriter, enhanced: Bool) {
    writer.u8(status.rawValue)
    writer.u16(connectionHandle)
    writer.u8(role)
    writer.u8(peerAddressType.rawValue)
    writer.address(peerAddress)
    if enhanced {
      writer.address(localResolvablePrivateAddress)
      writer.address(peerResolvablePrivateAddress)
    }
    writer.u16(connectionInterval)
    writer.u16(peripheralLatency)
    writer.u16(supervisionTimeout)
    writer.u8(centralClockAccuracy)
  }
}

/// HCI_LE_Advertising_Report (7.7.65.2). Each report's fields follow one another, as
/// controllers send them (and BlueZ, Zephyr and Bumble read them).
public struct LEAdvertisingReport: HCIPayload {
  public static let packetName = "HCI_LE_Advertising_Report event"

  public struct Report: Hashable, Sendable {
    /// 0x00 ADV_IND, 0x01 ADV_DIRECT_IND, 0x02 ADV_SCAN_IND, 0x03 ADV_NONCONN_IND, 0x04 SCAN_RSP.
    public var eventType: UInt8
    public var addressType: AddressType
    public var address: BDAddress
    /// AD structures (0 to 31 bytes), see `AdvertisingData`.
    public var data: [UInt8]
    /// dBm; 127 when not available.
    public var rssi: Int8

    public init(eventType: UInt8, addressType: AddressType, address: BDAddress, data: [UInt8], rssi: Int8) {
      self.eventType = eventType
      self.addressType = addressType
      self.address = address
      self.data = data
      self.rssi = rssi
    }
  }

  public var reports: [Report]

  public init(reports: [Report]) { self.reports = reports }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    let count = Int(try reader.u8("Num_Reports"))
    reports = []
    for index in 0..<count {
      let eventType = try reader.u8("Event_Type[\(index)]")
      let addressType = AddressType(rawValue: try reader.u8("Address_Type[\(index)]"))
      let address = try reader.address("Address[\(index)]")
      let length = Int(try reader.u8("Data_Length[\(index)]", atMost: 31))
      let data = try reader.bytes(length, "Data[\(index)]")
      let rssi = Int8(bitPattern: try reader.u8("RSSI[\(index)]"))
      reports.append(Report(eventType: eventType, addressType: addressType, address: address, data: data, rssi: rssi))
    }
  }

  public func write(to writer: inout ByteWriter) {
    let reports = reports.prefix(255)
    writer.u8(UInt8(reports.count))
    for report in reports {
      writer.u8(report.eventType)
      writer.u8(report.addressType.rawValue)
      writer.address(report.address)
      let data = report.data.prefix(31)
      writer.u8(UInt8(data.count))
      writer.append(data)
      writer.u8(UInt8(bitPattern: report.rssi))
    }
  }
}

/// HCI_LE_Connection_Update_Complete (7.7.65.3).
public struct LEConnectionUpdateComplete: HCIPayload {
  public static let packetName = "HCI_LE_Connection_Update_Complete event"
  public var status: HCIStatus
  public var connectionHandle: UInt16
  public var connectionInterval: UInt16
  public var peripheralLatency: UInt16
  public var supervisionTimeout: UInt16

  public init(
    status: HCIStatus = .success, connectionHandle: UInt16, connectionInterval: UInt16, peripheralLatency: UInt16,
    supervisionTimeout: UInt16
  ) {
    self.status = status
    self.connectionHandle = connectionHandle
    self.connectionInterval = connectionInterval
    self.peripheralLatency = peripheralLatency
    self.supervisionTimeout = supervisionTimeout
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    status = HCIStatus(rawValue: try reader.u8("Status"))
    connectionHandle = try reader.u16("Connection_Handle")
    connectionInterval = try reader.u16("Connection_Interval")
    peripheralLatency = try reader.u16("Peripheral_Latency")
    supervisionTimeout = try reader.u16("Supervision_Timeout")
  }

  public func write(to writer: inout ByteWriter) {
    writer.u8(status.rawValue)
    writer.u16(connectionHandle)
    writer.u16(connectionInterval)
    writer.u16(peripheralLatency)
    writer.u16(supervisionTimeout)
  }
}

/// HCI_LE_Long_Term_Key_Request (7.7.65.5): the central started encryption; the peripheral
/// answers with the key for this Rand and EDIV (both 0 for an LE Secure Connections key).
public struct LELongTermKeyRequest: HCIPayload {
  public static let packetName = "HCI_LE_Long_Term_Key_Request event"
  public var connectionHandle: UInt16
  public var randomNumber: UInt64
  public var encryptedDiversifier: UInt16

  public init(connectionHandle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16) {
    self.connectionHandle = connectionHandle
    self.randomNumber = randomNumber
    self.encryptedDiversifier = encryptedDiversifier
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    connectionHandle = try reader.u16("Connection_Handle")
    randomNumber = try reader.u64("Random_Number")
    encryptedDiversifier = try reader.u16("Encrypted_Diversifier")
  }

  public func write(to writer: inout ByteWriter) {
    writer.u16(connectionHandle)
    writer.u64(randomNumber)
    writer.u16(encryptedDiversifier)
  }
}
