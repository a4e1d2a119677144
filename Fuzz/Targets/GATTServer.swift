import ANCS
import ATT
import GATT
import Runtime
import Wire

/// A GATT server on an ATT connection, fed scripted PDUs. It answers every request exactly
/// once (a decodable indication with its confirmation, nothing else at all), with the
/// request's response or an Error Response naming it (Invalid PDU when it does not decode,
/// Request Not Supported when it is unknown); every answer fits the ATT_MTU in force,
/// encodes canonically, and lists handles in the requested range in ascending order.
///
/// Layout: the link's security level (byte modulo 3: unencrypted, encrypted,
/// authenticated), then PDUs as chunks.
func fuzz(_ bytes: [UInt8]) {
  var input = FuzzInput(bytes)
  let level = SecurityLevel.allCases[Int(input.byte()) % SecurityLevel.allCases.count]
  var script: [[UInt8]] = []
  while !input.isAtEnd { script.append(input.chunk()) }
  let bearer = ScriptedBearer(script: script, securityLevel: level)
  runBlocking {
    let server = makeServer()
    let connection = ATTConnection(bearer: bearer)
    await server.attach(connection)
    await connection.run()
    server.detach(connection)
  }
  var mtu = Int(ATTConnection.defaultMTU)
  for (pdu, answers) in zip(script, bearer.answers()) {
    check(answers, to: pdu, mtu: mtu)
    if case .exchangeMTURequest(let request)? = try? ATTPDU(decoding: pdu) {
      mtu = Int(max(ATTConnection.defaultMTU, min(ATTConnection.Options().localMTU, request.clientRxMTU)))
    }
  }
}

private func check(_ answers: [[UInt8]], to pdu: [UInt8], mtu: Int) {
  let context = { "\(Hex.encode(pdu)) answered \(answers.map { Hex.encode($0) })" }
  guard let first = pdu.first else {
    require(answers.isEmpty, context())
    return
  }
  let opcode = ATTOpcode(rawValue: first)
  let request = try? ATTPDU(decoding: pdu)
  if opcode == .handleValueIndication {
    require(answers == (request == nil ? [] : [[ATTOpcode.handleValueConfirmation.rawValue]]), context())
    return
  }
  guard opcode.needsResponse else {
    require(answers.isEmpty, context())
    return
  }
  require(answers.count == 1, context())
  let answer = answers[0]
  require(answer.count <= mtu, "\(context()): over ATT_MTU \(mtu)")
  guard let decoded = try? ATTPDU(decoding: answer), decoded.encoded() == answer else {
    require(false, "\(context()): the answer is not a canonical PDU")
    return
  }
  if case .errorResponse(let error) = decoded {
    require(error.requestOpcode == opcode, "\(context()): the Error Response names another request")
    if request == nil { require(error.errorCode == .invalidPDU, "\(context()): undecodable but not Invalid PDU") }
    if case .unknown? = request {
      require(error.errorCode == .requestNotSupported, "\(context()): unknown but not Request Not Supported")
    }
    return
  }
  require(decoded.opcode.rawValue == first + 1, "\(context()): answered by another response")
  let handles: [UInt16]
  let range: HandleRange
  switch (request, decoded) {
  case (.findInformationRequest(let request)?, .findInformationResponse(let response)):
    (range, handles) = (request.range, response.entries.map(\.handle))
  case (.findByTypeValueRequest(let request)?, .findByTypeValueResponse(let response)):
    (range, handles) = (request.range, response.ranges.map(\.start))
  case (.readByTypeRequest(let request)?, .readByTypeResponse(let response)):
    (range, handles) = (request.range, response.entries.map(\.handle))
  case (.readByGroupTypeRequest(let request)?, .readByGroupTypeResponse(let response)):
    (range, handles) = (request.range, response.entries.map(\.handle))
  default:
    return
  }
  require(handles.allSatisfy { range.start <= $0 && $0 <= range.end }, "\(context()): a handle outside \(range)")
  require(zip(handles, handles.dropFirst()).allSatisfy { $0 < $1 }, "\(context()): handles out of order")
}

/// Services of every shape the server handles: 16- and 128-bit UUIDs, a secondary
/// service, values longer than any read, every property, each security level, a write
/// that can be refused, and the Service Changed characteristic the server adds itself.
private func makeServer() -> GATTServer {
  // Written to the writable characteristic, read back by its reads.
  let stored = Locked<[UInt8]>([0x55])
  let long = (0..<600).map { UInt8(truncatingIfNeeded: $0) }
  let writable = CharacteristicDefinition(
    uuid: 0xFFF1, properties: [.read, .write, .writeWithoutResponse], read: { _ in stored.withLock { $0 } },
    write: { _, value in
      if value.first == 0xEE { return .refused(ATTErrorCode(rawValue: 0x80)) }
      stored.withLock { $0 = value }
      return .accepted
    })
  return try! GATTServer(services: [
    ServiceDefinition(
      uuid: 0x180F,
      characteristics: [
        .constant(0x2A19, [42]), writable, CharacteristicDefinition(uuid: 0xFFF2, properties: [.notify, .indicate]),
      ]),
    ServiceDefinition(
      uuid: BluetoothUUID(ANCSUUID.service)!,
      characteristics: [
        CharacteristicDefinition(
          uuid: BluetoothUUID(ANCSUUID.notificationSource)!, properties: [.read, .notify], security: .encrypted,
          read: { _ in long }),
        CharacteristicDefinition(
          uuid: BluetoothUUID(ANCSUUID.controlPoint)!, properties: .write, security: .authenticated,
          write: { _, _ in .accepted }),
        .constant(BluetoothUUID(ANCSUUID.dataSource)!, Array(long.prefix(20)), security: .encrypted),
      ]),
    ServiceDefinition(uuid: 0xFFF0, isPrimary: false, characteristics: [.constant(0xFFF3, [1, 2, 3])]),
  ])
}
