import Wire

/// Any ATT PDU. Opcodes this project does not implement are kept as `.unknown` with their
/// parameters, so they survive a round trip and a server can refuse them properly.
public enum ATTPDU: Hashable, Sendable {
  case errorResponse(ErrorResponse)
  case exchangeMTURequest(ExchangeMTURequest)
  case exchangeMTUResponse(ExchangeMTUResponse)
  case findInformationRequest(FindInformationRequest)
  case findInformationResponse(FindInformationResponse)
  case findByTypeValueRequest(FindByTypeValueRequest)
  case findByTypeValueResponse(FindByTypeValueResponse)
  case readByTypeRequest(ReadByTypeRequest)
  case readByTypeResponse(ReadByTypeResponse)
  case readRequest(ReadRequest)
  case readResponse(ReadResponse)
  case readBlobRequest(ReadBlobRequest)
  case readBlobResponse(ReadBlobResponse)
  case readByGroupTypeRequest(ReadByGroupTypeRequest)
  case readByGroupTypeResponse(ReadByGroupTypeResponse)
  case writeRequest(WriteRequest)
  case writeResponse(WriteResponse)
  case writeCommand(WriteCommand)
  case prepareWriteRequest(PrepareWriteRequest)
  case prepareWriteResponse(PrepareWriteResponse)
  case executeWriteRequest(ExecuteWriteRequest)
  case executeWriteResponse(ExecuteWriteResponse)
  case handleValueNotification(HandleValueNotification)
  case handleValueIndication(HandleValueIndication)
  case handleValueConfirmation(HandleValueConfirmation)
  case unknown(opcode: ATTOpcode, parameters: [UInt8])

  public var body: (any ATTPDUBody)? {
    switch self {
    case .errorResponse(let pdu): return pdu
    case .exchangeMTURequest(let pdu): return pdu
    case .exchangeMTUResponse(let pdu): return pdu
    case .findInformationRequest(let pdu): return pdu
    case .findInformationResponse(let pdu): return pdu
    case .findByTypeValueRequest(let pdu): return pdu
    case .findByTypeValueResponse(let pdu): return pdu
    case .readByTypeRequest(let pdu): return pdu
    case .readByTypeResponse(let pdu): return pdu
    case .readRequest(let pdu): return pdu
    case .readResponse(let pdu): return pdu
    case .readBlobRequest(let pdu): return pdu
    case .readBlobResponse(let pdu): return pdu
    case .readByGroupTypeRequest(let pdu): return pdu
    case .readByGroupTypeResponse(let pdu): return pdu
    case .writeRequest(let pdu): return pdu
    case .writeResponse(let pdu): return pdu
    case .writeCommand(let pdu): return pdu
    case .prepareWriteRequest(let pdu): return pdu
    case .prepareWriteResponse(let pdu): return pdu
    case .executeWriteRequest(let pdu): return pdu
    case .executeWriteResponse(let pdu): return pdu
    case .handleValueNotification(let pdu): return pdu
    case .handleValueIndication(let pdu): return pdu
    case .handleValueConfirmation(let pdu): return pdu
    case .unknown: return nil
    }
  }

  /// The PDUs of every ANCS notification (values, Control Point writes and their answers)
  /// are handled directly below; `body` would box them in an existential first.
  public var opcode: ATTOpcode {
    switch self {
    case .handleValueNotification: return HandleValueNotification.opcode
    case .writeRequest: return WriteRequest.opcode
    case .writeResponse: return WriteResponse.opcode
    case .unknown(let opcode, _): return opcode
    default: return type(of: body!).opcode
    }
  }

  public func encoded() -> [UInt8] {
    switch self {
    case .handleValueNotification(let pdu): return pdu.encoded()
    case .writeRequest(let pdu): return pdu.encoded()
    case .writeResponse(let pdu): return pdu.encoded()
    case .unknown(let opcode, let parameters): return [opcode.rawValue] + parameters
    default: return body!.encoded()
    }
  }

  /// Decodes one PDU. Every failure says which field, at which byte offset, and why.
  public init(decoding bytes: [UInt8]) throws(ATTDecodeError) {
    guard let first = bytes.first else {
      throw ATTDecodeError(opcode: nil, field: "Opcode", offset: 0, reason: .empty)
    }
    let opcode = ATTOpcode(rawValue: first)
    guard let make = Self.decoders[first] else {
      self = .unknown(opcode: opcode, parameters: Array(bytes.dropFirst()))
      return
    }
    var reader = ByteReader(bytes)
    reader.offset = 1
    do {
      self = try make(&reader)
    } catch let error as ReadError {
      guard case .truncated(let needed, let available) = error.reason else {
        throw ATTDecodeError(opcode: opcode, field: error.field, offset: error.offset, reason: .invalid("\(error)"))
      }
      throw ATTDecodeError(
        opcode: opcode, field: error.field, offset: error.offset,
        reason: .truncated(needed: needed, available: available))
    } catch let error as FormatError {
      throw ATTDecodeError(opcode: opcode, field: error.field, offset: error.offset, reason: .invalid(error.detail))
    } catch var error as ATTDecodeError {
      error.opcode = opcode
      throw error
    } catch {
      throw ATTDecodeError(opcode: opcode, field: "PDU", offset: 0, reason: .invalid("\(error)"))
    }
  }

  private typealias Decoder = @Sendable (inout ByteReader<[UInt8]>) throws -> ATTPDU

  private static func entry<Body: ATTPDUBody>(_ type: Body.Type, _ wrap: @escaping @Sendable (Body) -> ATTPDU)
    -> (UInt8, Decoder)
  {
    (Body.opcode.rawValue, { reader in wrap(try Body(parameters: &reader)) })
  }

  private static let decoders: [UInt8: Decoder] = Dictionary(
    uniqueKeysWithValues: [
      entry(ErrorResponse.self, ATTPDU.errorResponse),
      entry(ExchangeMTURequest.self, ATTPDU.exchangeMTURequest),
      entry(ExchangeMTUResponse.self, ATTPDU.exchangeMTUResponse),
      entry(FindInformationRequest.self, ATTPDU.findInformationRequest),
      entry(FindInformationResponse.self, ATTPDU.findInformationResponse),
      entry(FindByTypeValueRequest.self, ATTPDU.findByTypeValueRequest),
      entry(FindByTypeValueResponse.self, ATTPDU.findByTypeValueResponse),
      entry(ReadByTypeRequest.self, ATTPDU.readByTypeRequest),
      entry(ReadByTypeResponse.self, ATTPDU.readByTypeResponse),
      entry(ReadRequest.self, ATTPDU.readRequest),
      entry(ReadResponse.self, ATTPDU.readResponse),
      entry(ReadBlobRequest.self, ATTPDU.readBlobRequest),
      entry(ReadBlobResponse.self, ATTPDU.readBlobResponse),
      entry(ReadByGroupTypeRequest.self, ATTPDU.readByGroupTypeRequest),
      entry(ReadByGroupTypeResponse.self, ATTPDU.readByGroupTypeResponse),
      entry(WriteRequest.self, ATTPDU.writeRequest),
      entry(WriteResponse.self, ATTPDU.writeResponse),
      entry(WriteCommand.self, ATTPDU.writeCommand),
      entry(PrepareWriteRequest.self, ATTPDU.prepareWriteRequest),
      entry(PrepareWriteResponse.self, ATTPDU.prepareWriteResponse),
      entry(ExecuteWriteRequest.self, ATTPDU.executeWriteRequest),
      entry(ExecuteWriteResponse.self, ATTPDU.executeWriteResponse),
      entry(HandleValueNotification.self, ATTPDU.handleValueNotification),
      entry(HandleValueIndication.self, ATTPDU.handleValueIndication),
      entry(HandleValueConfirmation.self, ATTPDU.handleValueConfirmation),
    ])
}
