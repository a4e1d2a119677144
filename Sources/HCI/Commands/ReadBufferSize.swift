import Wire

/// HCI_Read_Buffer_Size (Vol 4 Part E 7.4.5): the shared ACL buffers, which an LE host uses when
/// HCI_LE_Read_Buffer_Size reports a length of 0.
public struct ReadBufferSize: HCIEmptyCommand {
  public static let opcode = HCIOpcode.informational(0x0005)
  public static let packetName = "HCI_Read_Buffer_Size"
  public init() {}

  /// The Command Complete return parameters.
  public struct ReturnParameters: HCIPayload {
    public static let packetName = "HCI_Read_Buffer_Size return parameters"
    public var status: HCIStatus
    public var aclDataPacketLength: UInt16
    public var synchronousDataPacketLength: UInt8
    public var totalNumACLDataPackets: UInt16
    public var totalNumSynchronousDataPackets: UInt16

    public init(
      status: HCIStatus, aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8 = 0,
      totalNumACLDataPackets: UInt16, totalNumSynchronousDataPackets: UInt16 = 0
    ) {
      self.status = status
      self.aclDataPacketLength = aclDataPacketLength
      self.synchronousDataPacketLength = synchronousDataPacketLength
      self.totalNumACLDataPackets = totalNumACLDataPackets
      self.totalNumSynchronousDataPackets = totalNumSynchronousDataPackets
    }

    public init(reading reader: inout ByteReader<[UInt8]>) throws {
      status = HCIStatus(rawValue: try reader.u8("Status"))
      aclDataPacketLength = try reader.u16("ACL_Data_Packet_Length")
      synchronousDataPacketLength = try reader.u8("Synchronous_Data_Packet_Length")
      totalNumACLDataPackets = try reader.u16("Total_Num_ACL_Data_Packets")
      totalNumSynchronousDataPackets = try reader.u16("Total_Num_Synchronous_Data_Packets")
    }

    public func write(to writer: inout ByteWriter) {
      writer.u8(status.rawValue)
      writer.u16(aclDataPacketLength)
      writer.u8(synchronousDataPacketLength)
      writer.u16(totalNumACLDataPackets)
      writer.u16(totalNumSynchronousDataPackets)
    }
  }
}
