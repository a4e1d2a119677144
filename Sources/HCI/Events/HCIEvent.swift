import Wire

/// An HCI event packet (Vol 4 Part E 5.4.4): Event_Code(1) Parameter_Total_Length(1)
/// parameters. Events this host does not decode are kept whole, never an error.
public enum HCIEvent: Hashable, Sendable {
  case commandComplete(CommandComplete)
  case commandStatus(CommandStatus)
  case disconnectionComplete(DisconnectionComplete)
  case encryptionChange(EncryptionChange)
  case encryptionKeyRefreshComplete(EncryptionKeyRefreshComplete)
  case numberOfCompletedPackets(NumberOfCompletedPackets)
  case leConnectionComplete(LEConnectionComplete)
  case leEnhancedConnectionComplete(LEConnectionComplete)
  case leAdvertisingReport(LEAdvertisingReport)
  case leConnectionUpdateComplete(LEConnectionUpdateComplete)
  case leLongTermKeyRequest(LELongTermKeyRequest)
  /// Another event, as it came.
  case unknown(code: UInt8, parameters: [UInt8])
  /// Another LE Meta subevent, as it came (parameters after the subevent code).
  case leUnknown(subevent: UInt8, parameters: [UInt8])

  /// Event codes (7.7) and LE Meta subevent codes (7.7.65).
  public enum Code {
    public static let disconnectionComplete: UInt8 = 0x05
    public static let encryptionChange: UInt8 = 0x08
    public static let commandComplete: UInt8 = 0x0E
    public static let commandStatus: UInt8 = 0x0F
    public static let numberOfCompletedPackets: UInt8 = 0x13
    public static let encryptionKeyRefreshComplete: UInt8 = 0x30
    public static let leMeta: UInt8 = 0x3E

    public static let leConnectionComplete: UInt8 = 0x01
    public static let leAdvertisingReport: UInt8 = 0x02
    public static let leConnectionUpdateComplete: UInt8 = 0x03
    public static let leLongTermKeyRequest: UInt8 = 0x05
    public static let leEnhancedConnectionComplete: UInt8 = 0x0A
  }

  /// Decodes an event packet (without the H4 indicator). The length byte must match the
  /// parameters exactly, and a known event's parameters must have exactly its fields; offsets
  /// in errors count from the event code.
  public init(decoding bytes: [UInt8]) throws(HCIDecodeError) {
    let (code, parameters) = try decodeWhole(bytes, packet: "HCI event") { reader in
      let code = try reader.u8("Event_Code")
      let length = Int(try reader.u8("Parameter_Total_Length"))
      return (code, try reader.bytes(length, "Parameters"))
    }
    switch code {
    case Code.commandComplete: self = .commandComplete(try CommandComplete(decoding: parameters, base: 2))
    case Code.commandStatus: self = .commandStatus(try CommandStatus(decoding: parameters, base: 2))
    case Code.disconnectionComplete:
      self = .disconnectionComplete(try DisconnectionComplete(decoding: parameters, base: 2))
    case Code.encryptionChange: self = .encryptionChange(try EncryptionChange(decoding: parameters, base: 2))
    case Code.encryptionKeyRefreshComplete:
      self = .encryptionKeyRefreshComplete(try EncryptionKeyRefreshComplete(decoding: parameters, base: 2))
    case Code.numberOfCompletedPackets:
      self = .numberOfCompletedPackets(try NumberOfCompletedPackets(decoding: parameters, base: 2))
    case Code.leMeta:
      self = try Self.leMeta(parameters)
    default: self = .unknown(code: code, parameters: parameters)
    }
  }

  private static func leMeta(_ parameters: [UInt8]) throws(HCIDecodeError) -> HCIEvent {
    guard let subevent = parameters.first else {
      throw HCIDecodeError(
        packet: "HCI_LE_Meta event", field: "Subevent_Code", offset: 2, reason: .truncated(needed: 1, available: 0))
    }
    let rest = Array(parameters.dropFirst())
    switch subevent {
    case Code.leConnectionComplete, Code.leEnhancedConnectionComplete:
      let enhanced = subevent == Code.leEnhancedConnectionComplete
      let name = enhanced ? "HCI_LE_Enhanced_Connection_Complete event" : "HCI_LE_Connection_Complete event"
      let event = try decodeWhole(rest, packet: name, base: 3) { reader in
        try LEConnectionComplete(reading: &reader, enhanced: enhanced)
      }
      return enhanced ? .leEnhancedConnectionComplete(event) : .leConnectionComplete(event)
    case Code.leAdvertisingReport: return .leAdvertisingReport(try LEAdvertisingReport(decoding: rest, base: 3))
    case Code.leConnectionUpdateComplete:
      return .leConnectionUpdateComplete(try LEConnectionUpdateComplete(decoding: rest, base: 3))
    case Code.leLongTermKeyRequest: return .leLongTermKeyRequest(try LELongTermKeyRequest(decoding: rest, base: 3))
    default: return .leUnknown(subevent: subevent, parameters: rest)
    }
  }

  /// The event packet: code, length, parameters (cut at 255 bytes, the most HCI can carry).
  public var encoded: [UInt8] {
    let (code, parameters) = codeAndParameters
    var writer = ByteWriter(capacity: 2 + parameters.count)
    writer.u8(code)
    let carried = parameters.prefix(255)
    writer.u8(UInt8(carried.count))
    writer.append(carried)
    return writer.bytes
  }

  private var codeAndParameters: (UInt8, [UInt8]) {
    switch self {
    case .commandComplete(let event): return (Code.commandComplete, event.encoded)
    case .commandStatus(let event): return (Code.commandStatus, event.encoded)
    case .disconnectionComplete(let event): return (Code.disconnectionComplete, event.encoded)
    case .encryptionChange(let event): return (Code.encryptionChange, event.encoded)
    case .encryptionKeyRefreshComplete(let event): return (Code.encryptionKeyRefreshComplete, event.encoded)
    case .numberOfCompletedPackets(let event): return (Code.numberOfCompletedPackets, event.encoded)
    case .leConnectionComplete(let event), .leEnhancedConnectionComplete(let event):
      let enhanced = if case .leEnhancedConnectionComplete = self { true } else { false }
      var writer = ByteWriter()
      writer.u8(enhanced ? Code.leEnhancedConnectionComplete : Code.leConnectionComplete)
      event.write(to: &writer, enhanced: enhanced)
      return (Code.leMeta, writer.bytes)
    case .leAdvertisingReport(let event): return (Code.leMeta, [Code.leAdvertisingReport] + event.encoded)
    case .leConnectionUpdateComplete(let event): return (Code.leMeta, [Code.leConnectionUpdateComplete] + event.encoded)
    case .leLongTermKeyRequest(let event): return (Code.leMeta, [Code.leLongTermKeyRequest] + event.encoded)
    case .unknown(let code, let parameters): return (code, parameters)
    case .leUnknown(let subevent, let parameters): return (Code.leMeta, [subevent] + parameters)
    }
  }
}
