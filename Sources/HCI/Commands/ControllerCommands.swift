import Wire

// Set-up commands (Vol 4 Part E 7.3, 7.4, 7.8). Parameters in wire order, little-endian.

/// HCI_Reset (7.3.2).
public struct Reset: HCIEmptyCommand {
  public static let opcode = HCIOpcode.controller(0x0003)
  public static let packetName = "HCI_Reset"
  public init() {}
}

/// HCI_Set_Event_Mask (7.3.1).
public struct SetEventMask: HCICommand {
  public static let opcode = HCIOpcode.controller(0x0001)
  public static let packetName = "HCI_Set_Event_Mask"
  public var eventMask: UInt64

  /// Disconnection Complete (bit 4), Encryption Change (7), Hardware Error (15), Data Buffer
  /// Overflow (25), Encryption Key Refresh Complete (47) and LE Meta (61): what an LE host needs.
  public static let leHost: UInt64 = 1 << 4 | 1 << 7 | 1 << 15 | 1 << 25 | 1 << 47 | 1 << 61

  public init(eventMask: UInt64) { self.eventMask = eventMask }
  public init(reading reader: inout ByteReader<[UInt8]>) throws { eventMask = try reader.u64("Event_Mask") }
  public func write(to writer: inout ByteWriter) { writer.u64(eventMask) }
}

/// HCI_LE_Set_Event_Mask (7.8.1).
public struct LESetEventMask: HCICommand {
  public static let opcode = HCIOpcode.le(0x0001)
  public static let packetName = "HCI_LE_Set_Event_Mask"
  public var leEventMask: UInt64

  /// Connection Complete (bit 0), Advertising Report (1), Connection Update Complete (2),
  /// Long Term Key Request (4) and Enhanced Connection Complete (9).
  public static let leHost: UInt64 = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 4 | 1 << 9

  public init(leEventMask: UInt64) { self.leEventMask = leEventMask }
  public init(reading reader: inout ByteReader<[UInt8]>) throws { leEventMask = try reader.u64("LE_Event_Mask") }
  public func write(to writer: inout ByteWriter) { writer.u64(leEventMask) }
}

/// HCI_Read_BD_ADDR (7.4.6).
public struct ReadBDADDR: HCIEmptyCommand {
  public static let opcode = HCIOpcode.informational(0x0009)
  public static let packetName = "HCI_Read_BD_ADDR"
  public init() {}

  /// The Command Complete return parameters.
  public struct ReturnParameters: HCIPayload {
    public static let packetName = "HCI_Read_BD_ADDR return parameters"
    public var status: HCIStatus
    public var address: BDAddress

    public init(status: HCIStatus, address: BDAddress) {
      self.status = status
      self.address = address
    }

    public init(reading reader: inout ByteReader<[UInt8]>) throws {
      status = HCIStatus(rawValue: try reader.u8("Status"))
      address = try reader.address("BD_ADDR")
    }

    public func write(to writer: inout ByteWriter) {
      writer.u8(status.rawValue)
      writer.address(address)
    }
  }
}

/// HCI_LE_Read_Buffer_Size [v1] (7.8.2).
public struct LEReadBufferSize: HCIEmptyCommand {
  public static let opcode = HCIOpcode.le(0x0002)
  public static let packetName = "HCI_LE_Read_Buffer_Size"
  public init() {}

  /// The Command Complete return parameters. A length of 0 means the controller shares the
  /// BR/EDR buffers (HCI_Read_Buffer_Size tells their size).
  public struct ReturnParameters: HCIPayload {
    public static let packetName = "HCI_LE_Read_Buffer_Size return parameters"
    public var status: HCIStatus
    public var leACLDataPacketLength: UInt16
    public var totalNumLEACLDataPackets: UInt8

    public init(status: HCIStatus, leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8) {
      self.status = status
      self.leACLDataPacketLength = leACLDataPacketLength
      self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
    }

    public init(reading reader: inout ByteReader<[UInt8]>) throws {
      status = HCIStatus(rawValue: try reader.u8("Status"))
      leACLDataPacketLength = try reader.u16("LE_ACL_Data_Packet_Length")
      totalNumLEACLDataPackets = try reader.u8("Total_Num_LE_ACL_Data_Packets")
    }

    public func write(to writer: inout ByteWriter) {
      writer.u8(status.rawValue)
      writer.u16(leACLDataPacketLength)
      writer.u8(totalNumLEACLDataPackets)
    }
  }
}

/// HCI_LE_Set_Random_Address (7.8.4).
public struct LESetRandomAddress: HCICommand {
  public static let opcode = HCIOpcode.le(0x0005)
  public static let packetName = "HCI_LE_Set_Random_Address"
  public var randomAddress: BDAddress

  public init(randomAddress: BDAddress) { self.randomAddress = randomAddress }
  public init(reading reader: inout ByteReader<[UInt8]>) throws { randomAddress = try reader.address("Random_Address") }
  public func write(to writer: inout ByteWriter) { writer.address(randomAddress) }
}

/// Parameters that are a status and a connection handle, nothing else: the return parameters
/// of the LE Long Term Key Request replies, and the Encryption Key Refresh Complete event.
public protocol StatusAndHandleParameters: HCIPayload {
  var status: HCIStatus { get }
  var connectionHandle: UInt16 { get }
  init(status: HCIStatus, connectionHandle: UInt16)
}

extension StatusAndHandleParameters {
  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    let status = HCIStatus(rawValue: try reader.u8("Status"))
    self.init(status: status, connectionHandle: try reader.u16("Connection_Handle"))
  }

  public func write(to writer: inout ByteWriter) {
    writer.u8(status.rawValue)
    writer.u16(connectionHandle)
  }
}

/// The return parameters of HCI_LE_Long_Term_Key_Request_Reply and its negative reply.
public struct LongTermKeyRequestReplyReturn: StatusAndHandleParameters {
  public static let packetName = "HCI_LE_Long_Term_Key_Request_Reply return parameters"
  public var status: HCIStatus
  public var connectionHandle: UInt16

  public init(status: HCIStatus, connectionHandle: UInt16) {
    self.status = status
    self.connectionHandle = connectionHandle
  }
}
