import ATT
import Testing

/// The ATT machine input by input: each row is an input at a time and the effects it must
/// return, in order. Waiters are numbers, so a row says whose transaction ended.
@Suite struct ATTMachineTests {
  typealias Machine = ATTMachine<Int>
  typealias Effect = Machine.Effect

  enum Input {
    case request(ATTPDU, Int)
    case indicate(UInt16, [UInt8], Int)
    case received([UInt8])
    case timer
    case sendFailed(indication: Bool, number: Int)
    case close(ATTError)
  }

  struct Row {
    var at: Duration
    var input: Input
    var effects: [Effect]
  }

  static let read = ATTPDU.readRequest(ReadRequest(handle: 3))
  static let readBytes: [UInt8] = [0x0A, 0x03, 0x00]
  static let write = ATTPDU.writeRequest(WriteRequest(handle: 5, value: [1]))
  static let writeBytes: [UInt8] = [0x12, 0x05, 0x00, 0x01]

  /// Runs the rows on one machine, checking each row's effects.
  func run(_ rows: [Row], on machine: inout Machine, sourceLocation: SourceLocation = #_sourceLocation) {
    for (index, row) in rows.enumerated() {
      let effects: Machine.Effects
      switch row.input {
      case .request(let pdu, let waiter): effects = machine.request(pdu, waiter: waiter, now: row.at)
      case .indicate(let handle, let value, let waiter):
        effects = machine.indicate(handle: handle, value: value, waiter: waiter, now: row.at)
      case .received(let bytes): effects = machine.received(bytes, now: { row.at })
      case .timer: effects = machine.timerFired(now: row.at)
      case .sendFailed(let indication, let number):
        effects = machine.sendFailed(indication: indication, number: number, now: row.at)
      case .close(let reason): effects = machine.close(reason)
      }
      #expect(Array(effects) == row.effects, "row \(index): \(row.input)", sourceLocation: sourceLocation)
    }
  }

  func run(_ rows: [Row], sourceLocation: SourceLocation = #_sourceLocation) {
    var machine = Machine()
    run(rows, on: &machine, sourceLocation: sourceLocation)
  }

  /// "A client shall not send a request until it has received the response to the previous
  /// one" (Vol 3 Part F 3.3.2): the second waits; the answer to the first starts it, with a
  /// timeout counted from then.
  @Test func oneRequestOutstandingTheRestInOrder() {
    run([
      Row(
        at: .seconds(1), input: .request(Self.read, 1),
        effects: [.start(Self.readBytes, indication: false, deadline: .seconds(31), number: 1)]),
      Row(at: .seconds(2), input: .request(Self.write, 2), effects: []),
      Row(at: .seconds(3), input: .request(Self.read, 3), effects: []),
      Row(
        at: .seconds(4), input: .received([0x0B, 0x2A]),
        effects: [
          .complete(1, .success(.readResponse(ReadResponse(value: [0x2A])))),
          .start(Self.writeBytes, indication: false, deadline: .seconds(34), number: 2),
        ]),
      Row(
        at: .seconds(5), input: .received([0x13]),
        effects: [
          .complete(2, .success(.writeResponse(WriteResponse()))),
          .start(Self.readBytes, indication: false, deadline: .seconds(35), number: 3),
        ]),
    ])
  }

  /// Requests and indications are separate transactions: neither waits for the other.
  @Test func anIndicationDoesNotWaitForARequest() {
    run([
      Row(
        at: .zero, input: .request(Self.read, 1),
        effects: [.start(Self.readBytes, indication: false, deadline: .seconds(30), number: 1)]),
      Row(
        at: .zero, input: .indicate(0x0020, [7], 2),
        effects: [.start([0x1D, 0x20, 0x00, 0x07], indication: true, deadline: .seconds(30), number: 2)]),
      Row(at: .zero, input: .indicate(0x0020, [8], 3), effects: []),
      Row(
        at: .seconds(1), input: .received([0x1E]),
        effects: [
          .complete(2, .success(.handleValueConfirmation(HandleValueConfirmation()))),
          .start([0x1D, 0x20, 0x00, 0x08], indication: true, deadline: .seconds(31), number: 3),
        ]),
      Row(
        at: .seconds(2), input: .received([0x0B]),
        effects: [.complete(1, .success(.readResponse(ReadResponse(value: []))))]),
    ])
  }

  /// An Error Response for the request fails it with its code; one for another opcode, or an
  /// answer of the wrong kind, is an invalid response. Either way the next request goes.
  @Test func errorAndWrongAnswers() {
    let expected = ErrorResponse(requestOpcode: .readRequest, handle: 3, errorCode: .insufficientEncryption)
    var machine = Machine()
    run(
      [
        Row(
          at: .zero, input: .request(Self.read, 1),
          effects: [.start(Self.readBytes, indication: false, deadline: .seconds(30), number: 1)]),
        Row(at: .zero, input: .request(Self.read, 2), effects: []),
        Row(at: .zero, input: .request(Self.read, 3), effects: []),
        Row(
          at: .zero, input: .received([0x01, 0x0A, 0x03, 0x00, 0x0F]),
          effects: [
            .complete(1, .failure(.errorResponse(expected))),
            .start(Self.readBytes, indication: false, deadline: .seconds(30), number: 2),
          ]),
        Row(
          at: .zero, input: .received([0x13]),
          effects: [
            .complete(2, .failure(.invalidResponse("writeResponse(19) in answer to readRequest(10)"))),
            .start(Self.readBytes, indication: false, deadline: .seconds(30), number: 3),
          ]),
      ], on: &machine)
    // A malformed answer fails the request too.
    let effects = machine.received([0x01, 0x0A], now: { .zero })
    guard case .complete(3, .failure(.invalidResponse))? = Array(effects).last else {
      Issue.record("a malformed Error Response must fail the request: \(effects)")
      return
    }
    // An answer with nothing outstanding changes nothing.
    #expect(
      machine.received([0x0B, 0x01], now: { .zero }) == [
        .note("unexpected readResponse(11) with nothing outstanding; ignored")
      ])
  }

  /// "A transaction not completed within 30 seconds shall time out ... No more attribute
  /// protocol requests, commands, indications or notifications shall be sent" (Vol 3 Part F
  /// 3.3.3): everything fails with `.timeout` and the bearer is closed; later sends fail.
  @Test func aTimeoutEndsEverything() {
    var machine = Machine()
    run(
      [
        Row(
          at: .zero, input: .request(Self.read, 1),
          effects: [.start(Self.readBytes, indication: false, deadline: .seconds(30), number: 1)]),
        Row(at: .seconds(1), input: .request(Self.write, 2), effects: []),
        Row(
          at: .seconds(5), input: .indicate(9, [1], 3),
          effects: [.start([0x1D, 0x09, 0x00, 0x01], indication: true, deadline: .seconds(35), number: 2)]),
        Row(at: .seconds(29), input: .timer, effects: []),
        Row(
          at: .seconds(30), input: .timer,
          effects: [
            .close(.timeout), .complete(1, .failure(.timeout)), .complete(3, .failure(.timeout)),
            .complete(2, .failure(.timeout)),
          ]),
        Row(at: .seconds(31), input: .request(Self.read, 4), effects: [.complete(4, .failure(.timeout))]),
        Row(at: .seconds(31), input: .received([0x0B]), effects: []),
      ], on: &machine)
    #expect(machine.closed == .timeout)
    #expect(machine.notification(handle: 1, value: []) == .failure(.timeout))
  }

  /// The deadline is the earliest of what is outstanding; none when nothing is.
  @Test func theDeadlineFollowsWhatIsOutstanding() {
    var machine = Machine()
    #expect(machine.deadline == nil)
    _ = machine.request(Self.read, waiter: 1, now: .seconds(10))
    _ = machine.indicate(handle: 1, value: [], waiter: 2, now: .seconds(4))
    #expect(machine.deadline == .seconds(34))
    _ = machine.received([0x1E], now: { .seconds(5) })
    #expect(machine.deadline == .seconds(40))
    _ = machine.received([0x0B], now: { .seconds(6) })
    #expect(machine.deadline == nil)
  }

  /// The link going down fails what is outstanding, then what is queued, in order.
  @Test func closingFailsEverythingInOrder() {
    run([
      Row(
        at: .zero, input: .request(Self.read, 1),
        effects: [.start(Self.readBytes, indication: false, deadline: .seconds(30), number: 1)]),
      Row(at: .zero, input: .request(Self.read, 2), effects: []),
      Row(
        at: .zero, input: .indicate(1, [], 3),
        effects: [.start([0x1D, 0x01, 0x00], indication: true, deadline: .seconds(30), number: 2)]),
      Row(at: .zero, input: .indicate(1, [], 4), effects: []),
      Row(
        at: .zero, input: .close(.disconnected),
        effects: [
          .complete(1, .failure(.disconnected)), .complete(3, .failure(.disconnected)),
          .complete(2, .failure(.disconnected)), .complete(4, .failure(.disconnected)),
        ]),
      Row(at: .zero, input: .close(.disconnected), effects: []),
    ])
  }

  /// A request whose send failed fails alone; the next one goes. A failure told once its
  /// request has ended (here answered by a stray answer before its send failed) fails
  /// nothing: not the request outstanding now.
  @Test func aFailedSendFailsItsRequestOnly() {
    run([
      Row(
        at: .zero, input: .request(Self.read, 1),
        effects: [.start(Self.readBytes, indication: false, deadline: .seconds(30), number: 1)]),
      Row(at: .zero, input: .request(Self.write, 2), effects: []),
      Row(at: .zero, input: .request(Self.read, 3), effects: []),
      Row(
        at: .seconds(1), input: .sendFailed(indication: false, number: 1),
        effects: [
          .complete(1, .failure(.disconnected)),
          .start(Self.writeBytes, indication: false, deadline: .seconds(31), number: 2),
        ]),
      Row(
        at: .seconds(2), input: .received([0x13]),
        effects: [
          .complete(2, .success(.writeResponse(WriteResponse()))),
          .start(Self.readBytes, indication: false, deadline: .seconds(32), number: 3),
        ]),
      Row(at: .seconds(3), input: .sendFailed(indication: false, number: 2), effects: []),
      Row(
        at: .seconds(4), input: .sendFailed(indication: false, number: 3),
        effects: [.complete(3, .failure(.disconnected))]),
    ])
  }

  /// ATT_MTU = min(client Rx MTU, server Rx MTU), never below 23 (Vol 3 Part F 3.4.2.2),
  /// both when this side asks and when the peer does (answered with this side's, at the old
  /// MTU); every PDU sent is checked against it.
  @Test func mtuExchangeBothWays() {
    var client = Machine(options: .init(localMTU: 185))
    let tooLong = ATTPDU.writeRequest(WriteRequest(handle: 5, value: Array(repeating: 0, count: 21)))
    #expect(client.request(tooLong, waiter: 9, now: .zero) == [.complete(9, .failure(.pduTooLarge(size: 24, mtu: 23)))])
    _ = client.request(.exchangeMTURequest(ExchangeMTURequest(clientRxMTU: 185)), waiter: 1, now: .zero)
    _ = client.received([0x03, 0xF7, 0x00], now: { .zero })
    #expect(client.mtu == 185 && client.mtuExchanged)
    #expect(Array(client.request(tooLong, waiter: 2, now: .zero)).count == 1)
    // A value longer than ATT_MTU - 3 is cut in a notification.
    #expect(
      client.notification(handle: 1, value: Array(repeating: 7, count: 300))
        == .success([0x1B, 0x01, 0x00] + Array(repeating: 7, count: 182)))

    // The server answers with the old MTU and takes the new one once the answer is out.
    var server = Machine(options: .init(localMTU: 158))
    #expect(server.received([0x02, 0x64, 0x00], now: { .zero }) == [.send([0x03, 0x9E, 0x00]), .adoptMTU(peer: 100)])
    #expect(server.mtu == 23)
    server.adopt(peer: 100)
    #expect(server.mtu == 100)
  }

  /// A request queued behind an Exchange MTU is measured against the MTU it goes out
  /// with; an answer this side cannot decode still answers its request.
  @Test func queuedRequestsMeetTheMTUOfTheirTime() {
    let long = ATTPDU.writeRequest(WriteRequest(handle: 5, value: Array(repeating: 0, count: 40)))
    var machine = Machine(options: .init(localMTU: 185))
    run(
      [
        Row(
          at: .zero, input: .request(.exchangeMTURequest(ExchangeMTURequest(clientRxMTU: 185)), 1),
          effects: [.start([0x02, 0xB9, 0x00], indication: false, deadline: .seconds(30), number: 1)]),
        Row(at: .zero, input: .request(long, 2), effects: []),
        Row(
          at: .seconds(1), input: .received([0x03, 0xF7, 0x00]),
          effects: [
            .complete(1, .success(.exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: 247)))),
            .start(long.encoded(), indication: false, deadline: .seconds(31), number: 2),
          ]),
        Row(
          at: .seconds(2), input: .received([0x13]),
          effects: [.complete(2, .success(.writeResponse(WriteResponse())))]),
        Row(
          at: .seconds(3), input: .request(.unknown(opcode: 0x0E, parameters: [3, 0, 4, 0]), 3),
          effects: [.start([0x0E, 3, 0, 4, 0], indication: false, deadline: .seconds(33), number: 3)]),
        Row(
          at: .seconds(4), input: .received([0x0F, 0xAA]),
          effects: [.complete(3, .success(.unknown(opcode: 0x0F, parameters: [0xAA])))]),
      ], on: &machine)
  }

  /// The peer's requests and commands go to the server; an indication is delivered and then
  /// confirmed; unknown and malformed requests are answered with an error, commands never.
  @Test func whatThePeerSends() {
    var machine = Machine()
    #expect(machine.received([0x12, 0x05, 0x00, 0x01], now: { .zero }) == [.serve(Self.write)])
    #expect(machine.answer(to: .writeRequest, with: nil) == [.send([0x01, 0x12, 0x00, 0x00, 0x0E])])
    #expect(machine.answer(to: .writeCommand, with: nil) == [])
    #expect(
      machine.received([0x1D, 0x20, 0x00, 0x05], now: { .zero }) == [
        .deliver(ATTValueEvent(handle: 0x20, value: [5], isIndication: true)), .send([0x1E]),
      ])
    #expect(
      machine.received([0x1B, 0x20, 0x00, 0x06], now: { .zero }) == [
        .deliver(ATTValueEvent(handle: 0x20, value: [6], isIndication: false))
      ])
    // An unknown request: Request Not Supported (Vol 3 Part F 3.4.9); an unknown command:
    // nothing on the wire.
    #expect(machine.received([0x30, 0x01], now: { .zero }).contains(.send([0x01, 0x30, 0x00, 0x00, 0x06])))
    #expect(!machine.received([0x70, 0x01], now: { .zero }).contains { if case .send = $0 { true } else { false } })
    // A malformed request: Invalid PDU.
    #expect(machine.received([0x0A, 0x03], now: { .zero }).contains(.send([0x01, 0x0A, 0x00, 0x00, 0x04])))
    #expect(machine.received([], now: { .zero }) == [.note("empty PDU ignored")])
  }
}
