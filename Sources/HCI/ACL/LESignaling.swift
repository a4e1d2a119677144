import Wire

/// An LE signalling command code (Vol 3 Part A 4). Open.
public struct LESignalingCode: OpenByteID {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let commandReject: LESignalingCode = 0x01
  public static let disconnectionRequest: LESignalingCode = 0x06
  public static let disconnectionResponse: LESignalingCode = 0x07
  public static let connectionParameterUpdateRequest: LESignalingCode = 0x12
  public static let connectionParameterUpdateResponse: LESignalingCode = 0x13
  public static let leCreditBasedConnectionRequest: LESignalingCode = 0x14
  public static let leCreditBasedConnectionResponse: LESignalingCode = 0x15
  public static let flowControlCreditIndication: LESignalingCode = 0x16
  public static let creditBasedConnectionRequest: LESignalingCode = 0x17
  public static let creditBasedConnectionResponse: LESignalingCode = 0x18
  public static let creditBasedReconfigureRequest: LESignalingCode = 0x19
  public static let creditBasedReconfigureResponse: LESignalingCode = 0x1A

  public static let names: [UInt8: String] = [
    0x01: "commandReject", 0x06: "disconnectionRequest", 0x07: "disconnectionResponse",
    0x12: "connectionParameterUpdateRequest", 0x13: "connectionParameterUpdateResponse",
    0x14: "leCreditBasedConnectionRequest", 0x15: "leCreditBasedConnectionResponse",
    0x16: "flowControlCreditIndication", 0x17: "creditBasedConnectionRequest", 0x18: "creditBasedConnectionResponse",
    0x19: "creditBasedReconfigureRequest", 0x1A: "creditBasedReconfigureResponse",
  ]

  /// Responses and indications: never answered, not even with a Command Reject.
  public var isResponse: Bool {
    [
      .commandReject, .disconnectionResponse, .connectionParameterUpdateResponse, .leCreditBasedConnectionResponse,
      .flowControlCreditIndication, .creditBasedConnectionResponse, .creditBasedReconfigureResponse,
    ]
    .contains(self)
  }
}

/// One command on the LE signalling channel (CID 0x0005), Vol 3 Part A 4: Code(1)
/// Identifier(1) Length(2) Data. "Only one command per C-frame shall be sent over the LE
/// signaling channel" (4), so a frame's payload is exactly one command.
public struct LESignalingCommand: Hashable, Sendable {
  public var code: LESignalingCode
  public var identifier: UInt8
  public var data: [UInt8]

  public init(code: LESignalingCode, identifier: UInt8, data: [UInt8]) {
    self.code = code
    self.identifier = identifier
    self.data = data
  }

  public init(decoding bytes: [UInt8]) throws(HCIDecodeError) {
    self = try decodeWhole(bytes, packet: "LE signalling command") { reader in
      let code = LESignalingCode(rawValue: try reader.u8("Code"))
      let identifier = try reader.u8("Identifier")
      let length = Int(try reader.u16("Length"))
      return LESignalingCommand(code: code, identifier: identifier, data: try reader.bytes(length, "Data"))
    }
  }

  public var encoded: [UInt8] {
    var writer = ByteWriter(capacity: 4 + data.count)
    writer.u8(code.rawValue)
    writer.u8(identifier)
    writer.u16(UInt16(data.count))
    writer.append(data)
    return writer.bytes
  }

  /// L2CAP_COMMAND_REJECT_RSP with reason 0x0000, Command not understood (4.1).
  public static func reject(identifier: UInt8) -> LESignalingCommand {
    LESignalingCommand(code: .commandReject, identifier: identifier, data: [0x00, 0x00])
  }

  /// L2CAP_CONNECTION_PARAMETER_UPDATE_RSP (4.21): result 0x0000 accepted, 0x0001 rejected.
  public static func parameterUpdateResponse(identifier: UInt8, accepted: Bool) -> LESignalingCommand {
    LESignalingCommand(
      code: .connectionParameterUpdateResponse, identifier: identifier, data: [accepted ? 0x00 : 0x01, 0x00])
  }
}

/// What the host does with one frame of the LE signalling channel. Pure.
public struct LESignalingOutcome: Hashable, Sendable {
  /// The answer to send back on CID 0x0005, if any.
  public var reply: LESignalingCommand?
  /// Parameters to apply with HCI_LE_Connection_Update (the central accepted a request).
  public var connectionUpdate: ConnectionParameters?
  /// What was wrong with the frame, for the log.
  public var problem: String?
  /// A Connection Parameter Update Request the central judged.
  public var request: JudgedRequest?

  /// The parameters asked for, and the rules they broke (empty: accepted).
  public struct JudgedRequest: Hashable, Sendable {
    public var parameters: ConnectionParameters
    public var broken: [String]
  }

  public init(reply: LESignalingCommand? = nil, connectionUpdate: ConnectionParameters? = nil, problem: String? = nil) {
    self.reply = reply
    self.connectionUpdate = connectionUpdate
    self.problem = problem
  }

  /// The answer to one signalling frame, for a host in the central role or not:
  /// - Connection Parameter Update Request: only a peripheral sends it. A central accepts
  ///   parameters within the ranges of Vol 6 Part B 4.5.1 (and 4.5.2: the supervision timeout
  ///   must exceed (1 + latency) x interval x 2) that break none of `rules` (a phone's own,
  ///   each broken rule in words), and asks for them with LE Connection Update; otherwise it
  ///   answers "rejected". "If a Peripheral's Host receives an
  ///   L2CAP_CONNECTION_PARAMETER_UPDATE_REQ packet it shall respond with an
  ///   L2CAP_COMMAND_REJECT_RSP packet with reason 0x0000" (Vol 3 Part A 4.20).
  /// - Responses and indications are ignored; every other command is rejected with Command
  ///   not understood (this host offers no credit-based channels).
  /// - A frame that is not one well-formed command is rejected when its header can be read,
  ///   else dropped; identifier 0 "shall never be used" (4), so such a command is dropped.
  public static func answer(
    _ payload: [UInt8], isCentral: Bool, rules: (ConnectionParameters) -> [String] = { _ in [] }
  ) -> LESignalingOutcome {
    let command: LESignalingCommand
    do {
      command = try LESignalingCommand(decoding: payload)
    } catch {
      guard payload.count >= 4, payload[1] != 0, !LESignalingCode(rawValue: payload[0]).isResponse else {
        return LESignalingOutcome(problem: "\(error)")
      }
      return LESignalingOutcome(reply: .reject(identifier: payload[1]), problem: "\(error)")
    }
    guard command.identifier != 0 else {
      return LESignalingOutcome(problem: "LE signalling \(command.code): identifier 0 is invalid")
    }
    if command.code.isResponse { return LESignalingOutcome() }
    guard command.code == .connectionParameterUpdateRequest, isCentral else {
      return LESignalingOutcome(reply: .reject(identifier: command.identifier))
    }
    guard let parameters = Self.parameters(command.data) else {
      return LESignalingOutcome(
        reply: .reject(identifier: command.identifier),
        problem: "LE signalling: Connection Parameter Update Request of \(command.data.count) bytes (8 expected)")
    }
    let broken =
      Self.acceptable(parameters)
      ? rules(parameters) : ["outside the ranges of the Core specification (Vol 6 Part B 4.5)"]
    var outcome = LESignalingOutcome(
      reply: .parameterUpdateResponse(identifier: command.identifier, accepted: broken.isEmpty),
      connectionUpdate: broken.isEmpty ? parameters : nil)
    outcome.request = JudgedRequest(parameters: parameters, broken: broken)
    return outcome
  }

  /// Interval Min(2) Interval Max(2) Latency(2) Timeout(2) (4.20).
  private static func parameters(_ data: [UInt8]) -> ConnectionParameters? {
    guard data.count == 8 else { return nil }
    let values = stride(from: 0, to: 8, by: 2).map { UInt16(data[$0]) | UInt16(data[$0 + 1]) << 8 }
    return ConnectionParameters(
      intervalMin: values[0], intervalMax: values[1], maxLatency: values[2], supervisionTimeout: values[3])
  }

  private static func acceptable(_ parameters: ConnectionParameters) -> Bool {
    let intervals: ClosedRange<UInt16> = 6...3200
    guard intervals.contains(parameters.intervalMin), intervals.contains(parameters.intervalMax),
      parameters.intervalMin <= parameters.intervalMax, parameters.maxLatency <= 499,
      (10...3200).contains(parameters.supervisionTimeout)
    else { return false }
    // Timeout (10 ms units) > (1 + latency) x interval (1.25 ms units) x 2, in 2.5 ms units.
    return Int(parameters.supervisionTimeout) * 4 > (1 + Int(parameters.maxLatency)) * Int(parameters.intervalMax)
  }
}
