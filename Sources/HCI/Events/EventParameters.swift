import Wire

// The parameters of the events an LE host handles (Vol 4 Part E 7.7), in wire order.

/// HCI_Command_Complete (7.7.14).
public struct CommandComplete: HCIPayload {
  public static let packetName = "HCI_Command_Complete event"
  /// How many more commands the controller accepts now (command flow control).
  public var numHCICommandPackets: UInt8
  public var commandOpcode: HCIOpcode
  /// The command's return parameters, undecoded: decode them with its `ReturnParameters`.
  public var returnParameters: [UInt8]

  public init(numHCICommandPackets: UInt8, commandOpcode: HCIOpcode, returnParameters: [UInt8]) {
    self.numHCICommandPackets = numHCICommandPackets
    self.commandOpcode = commandOpcode
    self.returnParameters = returnParameters
  }

  /// The first return parameter, which is the status for every command this host sends; nil
  /// when there are none (the opcode 0x0000 that only returns credits).
  public var status: HCIStatus? { returnParameters.first.map(HCIStatus.init(rawValue:)) }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    numHCICommandPackets = try reader.u8("Num_HCI_Command_Packets")
    commandOpcode = HCIOpcode(rawValue: try reader.u16("Command_Opcode"))
    returnParameters = reader.rest()
  }

  public func write(to writer: inout ByteWriter) {
    writer.u8(numHCICommandPackets)
    writer.u16(commandOpcode.rawValue)
    writer.append(returnParameters)
  }
}

/// HCI_Command_Status (7.7.15).
public struct CommandStatus: HCIPayload {
  public static let packetName = "HCI_Command_Status event"
  public var status: HCIStatus
  public var numHCICommandPackets: UInt8
  public var commandOpcode: HCIOpcode

  public init(status: HCIStatus, numHCICommandPackets: UInt8, commandOpcode: HCIOpcode) {
    self.status = status
    self.numHCICommandPackets = numHCICommandPackets
    self.commandOpcode = commandOpcode
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    status = HCIStatus(rawValue: try reader.u8("Status"))
    numHCICommandPackets = try reader.u8("Num_HCI_Command_Packets")
    commandOpcode = HCIOpcode(rawValue: try reader.u16("Command_Opcode"))
  }

  public func write(to writer: inout ByteWriter) {
    writer.u8(status.rawValue)
    writer.u8(numHCICommandPackets)
    writer.u16(commandOpcode.rawValue)
  }
}

/// HCI_Disconnection_Complete (7.7.5).
public struct DisconnectionComplete: HCIPayload {
  public static let packetName = "HCI_Disconnection_Complete event"
  public var status: HCIStatus
  public var connectionHandle: UInt16
  public var reason: HCIStatus

  public init(status: HCIStatus = .success, connectionHandle: UInt16, reason: HCIStatus) {
    self.status = status
    self.connectionHandle = connectionHandle
    self.reason = reason
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    status = HCIStatus(rawValue: try reader.u8("Status"))
    connectionHandle = try reader.u16("Connection_Handle")
    reason = HCIStatus(rawValue: try reader.u8("Reason"))
  }

  public func write(to writer: inout ByteWriter) {
    writer.u8(status.rawValue)
    writer.u16(connectionHandle)
    writer.u8(reason.rawValue)
  }
}

/// HCI_Encryption_Change [v1] (7.7.8).
public struct EncryptionChange: HCIPayload {
  public static let packetName = "HCI_Encryption_Change event"
  public var status: HCIStatus
  public var connectionHandle: UInt16
  /// 0x00 off; 0x01 on (AES-CCM on LE).
  public var encryptionEnabled: UInt8

  public init(status: HCIStatus = .success, connectionHandle: UInt16, encryptionEnabled: UInt8) {
    self.status = status
    self.connectionHandle = connectionHandle
    self.encryptionEnabled = encryptionEnabled
  }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    status = HCIStatus(rawValue: try reader.u8("Status"))
    connectionHandle = try reader.u16("Connection_Handle")
    encryptionEnabled = try reader.u8("Encryption_Enabled")
  }

  public func write(to writer: inout ByteWriter) {
    writer.u8(status.rawValue)
    writer.u16(connectionHandle)
    writer.u8(encryptionEnabled)
  }
}

/// HCI_Encryption_Key_Refresh_Complete (7.7.39): a bonded link re-encrypted with its key.
public struct EncryptionKeyRefreshComplete: StatusAndHandleParameters {
  public static let packetName = "HCI_Encryption_Key_Refresh_Complete event"
  public var status: HCIStatus
  public var connectionHandle: UInt16

  public init(status: HCIStatus = .success, connectionHandle: UInt16) {
    self.status = status
    self.connectionHandle = connectionHandle
  }
}

/// HCI_Number_Of_Completed_Packets (7.7.19): ACL buffers the controller has freed. Each handle
/// is followed by its count, as controllers send it (and BlueZ, Zephyr and Bumble read it).
public struct NumberOfCompletedPackets: HCIPayload {
  public static let packetName = "HCI_Number_Of_Completed_Packets event"

  public struct Entry: Hashable, Sendable {
    public var connectionHandle: UInt16
    public var numCompletedPackets: UInt16

    public init(connectionHandle: UInt16, numCompletedPackets: UInt16) {
      self.connectionHandle = connectionHandle
      self.numCompletedPackets = numCompletedPackets
    }
  }

  /// At most 255.
  public var entries: [Entry]

  public init(entries: [Entry]) { self.entries = entries }

  public init(reading reader: inout ByteReader<[UInt8]>) throws {
    let count = Int(try reader.u8("Num_Handles"))
    entries = []
    for index in 0..<count {
      entries.append(
        Entry(
          connectionHandle: try reader.u16("Connection_Handle[\(index)]"),
          numCompletedPackets: try reader.u16("Num_Completed_Packets[\(index)]")))
    }
  }

  public func write(to writer: inout ByteWriter) {
    let entries = entries.prefix(255)
    writer.u8(UInt8(entries.count))
    for entry in entries {
      writer.u16(entry.connectionHandle)
      writer.u16(entry.numCompletedPackets)
    }
  }
}
