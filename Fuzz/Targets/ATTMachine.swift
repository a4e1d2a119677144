import ATT
import Wire

/// ATT's transaction machine, fed requests and indications to send, PDUs from the peer
/// (answers among them), the time, failed sends and the link's end, in any order. It keeps
/// one request and one indication on the wire at most; it answers each transaction exactly
/// once, requests in the order they were asked (and indications likewise); it sends nothing
/// over ATT_MTU and nothing after the end; and once the link is gone nothing stays waiting.
///
/// Layout: operations, each a byte (its low 3 bits: request, indication, PDU from the peer,
/// time passing, failed send, the end) and its arguments.
func fuzz(_ bytes: [UInt8]) {
  var input = FuzzInput(bytes)
  var machine = ATTMachine<Int>(options: ATTOptions(localMTU: 23 + UInt16(input.byte())))
  var now = Duration.zero
  var next = 0
  // By kind (true: indications): the waiters accepted and not yet on the wire, in the order
  // asked; the one on the wire.
  var queued: [Bool: [Int]] = [false: [], true: []]
  var wire: [Bool: Int] = [:]
  // By kind: the number of the start on the wire, and of every start so far.
  var wireNumber: [Bool: Int] = [:]
  var starts = 0
  var answered: Set<Int> = []

  func check(_ effects: ATTMachine<Int>.Effects, _ context: String) {
    for effect in effects {
      switch effect {
      case .start(let bytes, let indication, let deadline, let number):
        starts += 1
        require(number == starts, "\(context): start number \(number), the \(starts)th start")
        wireNumber[indication] = number
        require(machine.closed == nil, "\(context): started \(Hex.encode(bytes)) after the end")
        require(wire[indication] == nil, "\(context): a second \(indication ? "indication" : "request") on the wire")
        require(bytes.count <= machine.mtu, "\(context): \(bytes.count) bytes over ATT_MTU \(machine.mtu)")
        require(deadline > now, "\(context): a deadline that has passed")
        // The oldest one waiting goes first.
        require(!queued[indication]!.isEmpty, "\(context): started with nothing asked")
        wire[indication] = queued[indication]!.removeFirst()
      case .send(let bytes):
        require(bytes.count <= machine.mtu, "\(context): \(bytes.count) bytes over ATT_MTU \(machine.mtu)")
      case .complete(let waiter, _):
        let indication = waiter % 2 == 1
        require(answered.insert(waiter).inserted, "\(context): waiter \(waiter) answered twice")
        if wire[indication] == waiter {
          wire[indication] = nil
        } else {
          // Refused when asked, or failed with the link while it waited its turn.
          require(queued[indication]!.contains(waiter), "\(context): waiter \(waiter) answered but never asked")
          queued[indication]!.removeAll { $0 == waiter }
        }
      case .adoptMTU(let peer):
        // As the shell does once the Exchange MTU Response is out.
        machine.adopt(peer: peer)
      case .serve, .deliver, .note, .close:
        break
      }
    }
  }

  while !input.isAtEnd {
    let operation = input.byte()
    let context = "operation \(operation & 7) at \(now)"
    switch operation & 7 {
    case 0, 1:
      // A request: a read, or a write whose value may not fit.
      let waiter = next * 2
      next += 1
      queued[false]!.append(waiter)
      let pdu: ATTPDU =
        operation & 8 == 0
        ? .readRequest(ReadRequest(handle: input.u16()))
        : .writeRequest(WriteRequest(handle: input.u16(), value: Array(repeating: 0, count: Int(input.byte()))))
      check(machine.request(pdu, waiter: waiter, now: now), context)
    case 2:
      let waiter = next * 2 + 1
      next += 1
      queued[true]!.append(waiter)
      let value = Array(repeating: UInt8(1), count: Int(input.byte()))
      check(machine.indicate(handle: input.u16(), value: value, waiter: waiter, now: now), context)
    case 3:
      check(machine.received(input.chunk(), now: { now }), context)
    case 4:
      now += .seconds(Int(input.byte()))
      check(machine.timerFired(now: now), context)
    case 5:
      // Only a start the shell performed can fail.
      let indication = operation & 8 != 0
      if let number = wireNumber[indication], wire[indication] != nil {
        check(machine.sendFailed(indication: indication, number: number, now: now), context)
      } else {
        // A failure told late, for a start that has ended (or none): nothing happens.
        let late = machine.sendFailed(indication: indication, number: Int(input.byte()) % (starts + 1), now: now)
        require(late.isEmpty || wire[indication] != nil, "\(context): a late failure did something: \(Array(late))")
      }
    case 6:
      check(machine.close(.disconnected), context)
    default:
      // The peer's well-formed answers, most likely to move things on.
      let answers: [[UInt8]] = [[0x0B, 0x01], [0x13], [0x1E], [0x01, 0x0A, 0x00, 0x00, 0x0A], [0x03, 0x00, 0x02]]
      check(machine.received(answers[Int(input.byte()) % answers.count], now: { now }), "\(context) (an answer)")
    }
  }
  check(machine.close(.disconnected), "the end")
  require(answered.count == next, "\(next - answered.count) waiter(s) never answered")
}
