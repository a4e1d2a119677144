import Wire

// Connections (Vol 4 Part E 7.1.6, 7.8.12, 7.8.13, 7.8.18) and encryption (7.8.24 to 7.8.26).

/// The connection parameters that LE Create Connection and LE Connection Update share, in
/// wire order.
public struct ConnectionParameters: Hashable, Sendable {
  /// In units of 1.25 ms (0x0018 = 30 ms).
  public var intervalMin: UInt16
  public var intervalMax: UInt16
  /// Peripheral latency, in connection events.
  public var maxLatency: UInt16
  /// In units of 10 ms (0x01F4 = 5 s).
  public var supervisionTimeout: UInt16
  /// In units of 0.625 ms.
  public var minCELength: UInt16
  public var maxCELength: UInt16

  public init(
    intervalMin: UInt16 = 0x0018, intervalMax: UInt16 = 0x0028, maxLatency: UInt16 = 0,
    supervisionTimeout: UInt16 = 0x01F4, minCELength: UInt16 = 0, maxCELength: UInt16 = 0
  ) {
    self.intervalMin = intervalMin
    self.intervalMax = intervalMax
    self.maxLatency = maxLatency
    self.supervisionTimeout = supervisionTimeout
    self.minCELength = minCELength
    self.maxCELength = maxCELength
  }

  init(reading reader: inout ByteReader<[UInt8]>) throws(ReadError) {
    intervalMin = try reader.u16("Connection_Interval_Min")
    intervalMax = try reader.u16("Connection_Interval_Max")
    maxLatency = try reader.u16("Max_Latency")
    supervisionTimeout = try reader.u16("Supervision_Timeout")
    minCELength = try reader.u16("Min_CE_Length")
    maxCELength = try reader.u16("Max_CE_Length")
  }

  func write(to writer: inout ByteWriter) {
    for value in [intervalMin, intervalMax, maxLatency, supervisionTimeout, minCELength, maxCELength] {
      writer.u16(value)
    }
  }
}

/// HCI_LE_Create_Connection (7.8.12).
public struct LECreateConnection: HCICommand {
  public static let opcode = HCIOpcode.le(0x000D)
  public static let packetName = "HCI_LE_Create_Connection"
  /// In units of 0.625 ms.
  public var scanInterval: UInt16
  public var scanWindow: UInt16
  /// 0x00: connect to `peerAddress`; 0x01: to any device on the Filter Accept List.
  public var initiatorFilterPolicy: UInt8
  public var peerAddressType: AddressType
  public var peerAddress: BDAddress
  public var ownAddressType: AddressType
  public var connection: ConnectionParameters

  public init(
    scanInterval: UInt16 = 0x0010, scanWindow: UInt16 = 0x0010, initiatorFilterPolicy: UInt8 = 0x00,
    peerAddressType: AddressType, peerAddress: BDAddress, ownAddressType: AddressType = .random,
    connection: ConnectionParameters = ConnectionParameters()
  ) {
    self.scanInterval = scanInterval
    self.scanWindow = scanWindow
    self.initiatorFilterPolicy = initiatorFilterPolicy
    self.peerAddressType = peerAddressType
    self.peerAddress = peerAddress
    self.ownAddressType = ownAddressType
    self.connection = connection
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    scanInterval = try reader.u16("LE_Scan_Interval")
    scanWindow = try reader.u16("LE_Scan_Window")
    initiatorFilterPolicy = try reader.u8("Initiator_Filter_Policy")
    peerAddressType = AddressType(rawValue: try reader.u8("Peer_Address_Type"))
    peerAddress = try reader.address("Peer_Address")
    ownAddressType = AddressType(rawValue: try reader.u8("Own_Address_Type"))
    connection = try ConnectionParameters(reading: &reader)
  }

  public func write(to writer: inout ByteWriter) {
    writer.u16(scanInterval)
    writer.u16(scanWindow)
    writer.u8(initiatorFilterPolicy)
    writer.u8(peerAddressType.rawValue)
    writer.address(peerAddress)
    writer.u8(ownAddressType.rawValue)
    connection.write(to: &writer)
  }
}

/// HCI_LE_Create_Connection_Cancel (7.8.13).
public struct LECreateConnectionCancel: HCIEmptyCommand {
  public static let opcode = HCIOpcode.le(0x000E)
  public static let packetName = "HCI_LE_Create_Connection_Cancel"
  public init() {}
}

/// HCI_Disconnect (7.1.6).
public struct Disconnect: HCICommand {
  public static let opcode = HCIOpcode.linkControl(0x0006)
  public static let packetName = "HCI_Disconnect"
  public var connectionHandle: UInt16
  /// One of 0x05, 0x13 to 0x15, 0x1A, 0x29, 0x3B (7.1.6); usually remoteUserTerminatedConnection.
  public var reason: HCIStatus

  public init(connectionHandle: UInt16, reason: HCIStatus = .remoteUserTerminatedConnection) {
    self.connectionHandle = connectionHandle
    self.reason = reason
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    connectionHandle = try reader.u16("Connection_Handle")
    reason = HCIStatus(rawValue: try reader.u8("Reason"))
  }

  public func write(to writer: inout ByteWriter) {
    writer.u16(connectionHandle)
    writer.u8(reason.rawValue)
  }
}

/// HCI_LE_Connection_Update (7.8.18).
public struct LEConnectionUpdate: HCICommand {
  public static let opcode = HCIOpcode.le(0x0013)
  public static let packetName = "HCI_LE_Connection_Update"
  public var connectionHandle: UInt16
  public var connection: ConnectionParameters

  public init(connectionHandle: UInt16, connection: ConnectionParameters) {
    self.connectionHandle = connectionHandle
    self.connection = connection
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    connectionHandle = try reader.u16("Connection_Handle")
    connection = try ConnectionParameters(reading: &reader)
  }

  public func write(to writer: inout ByteWriter) {
    writer.u16(connectionHandle)
    connection.write(to: &writer)
  }
}

/// HCI_LE_Enable_Encryption, "LE Start Encryption" (7.8.24): the central starts encryption
/// with a key it holds. For a key from LE Secure Connections, Rand and EDIV are 0.
public struct LEStartEncryption: HCICommand {
  public static let opcode = HCIOpcode.le(0x0019)
  public static let packetName = "HCI_LE_Enable_Encryption"
  public var connectionHandle: UInt16
  public var randomNumber: UInt64
  public var encryptedDiversifier: UInt16
  public var longTermKey: UInt128

  public init(
    connectionHandle: UInt16, randomNumber: UInt64 = 0, encryptedDiversifier: UInt16 = 0, longTermKey: UInt128
  ) {
    self.connectionHandle = connectionHandle
    self.randomNumber = randomNumber
    self.encryptedDiversifier = encryptedDiversifier
    self.longTermKey = longTermKey
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    connectionHandle = try reader.u16("Connection_Handle")
    randomNumber = try reader.u64("Random_Number")
    encryptedDiversifier = try reader.u16("Encrypted_Diversifier")
    longTermKey = try reader.u128("Long_Term_Key")
  }

  public func write(to writer: inout ByteWriter) {
    writer.u16(connectionHandle)
    writer.u64(randomNumber)
    writer.u16(encryptedDiversifier)
    writer.u128(longTermKey)
  }
}

/// HCI_LE_Long_Term_Key_Request_Reply (7.8.25): the peripheral's answer with the key.
public struct LELongTermKeyRequestReply: HCICommand {
  public static let opcode = HCIOpcode.le(0x001A)
  public static let packetName = "HCI_LE_Long_Term_Key_Request_Reply"
  public var connectionHandle: UInt16
  public var longTermKey: UInt128

  public init(connectionHandle: UInt16, longTermKey: UInt128) {
    self.connectionHandle = connectionHandle
    self.longTermKey = longTermKey
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    connectionHandle = try reader.u16("Connection_Handle")
    longTermKey = try reader.u128("Long_Term_Key")
  }

  public func write(to writer: inout ByteWriter) {
    writer.u16(connectionHandle)
    writer.u128(longTermKey)
  }
}

/// HCI_LE_Long_Term_Key_Request_Negative_Reply (7.8.26): the peripheral has no key.
public struct LELongTermKeyRequestNegativeReply: HCICommand {
  public static let opcode = HCIOpcode.le(0x001B)
  public static let packetName = "HCI_LE_Long_Term_Key_Request_Negative_Reply"
  public var connectionHandle: UInt16

  public init(connectionHandle: UInt16) { self.connectionHandle = connectionHandle }
  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    connectionHandle = try reader.u16("Connection_Handle")
  }
  public func write(to writer: inout ByteWriter) { writer.u16(connectionHandle) }
}
