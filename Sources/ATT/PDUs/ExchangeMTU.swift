import Wire

/// Exchange MTU Request: ClientRxMTU(2).
public struct ExchangeMTURequest: ATTPDUBody {
  public static let opcode = ATTOpcode.exchangeMTURequest
  public var clientRxMTU: UInt16

  public init(clientRxMTU: UInt16) { self.clientRxMTU = clientRxMTU }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    clientRxMTU = try reader.u16("ClientRxMTU")
    try reader.end()
  }

  public func encode(to writer: inout ByteWriter) { writer.u16(clientRxMTU) }
}

/// Exchange MTU Response: ServerRxMTU(2).
public struct ExchangeMTUResponse: ATTPDUBody {
  public static let opcode = ATTOpcode.exchangeMTUResponse
  public var serverRxMTU: UInt16

  public init(serverRxMTU: UInt16) { self.serverRxMTU = serverRxMTU }

  public init(parameters reader: inout ByteReader<[UInt8]>) throws {
    serverRxMTU = try reader.u16("ServerRxMTU")
    try reader.end()
  }

  public func encode(to writer: inout ByteWriter) { writer.u16(serverRxMTU) }
}
