import Runtime
import Wire

/// ATT on one bearer, both roles, as a plain value: what is outstanding, what waits behind
/// it, the MTU, and when each operation times out. It does no I/O and reads no clock: every
/// input (a PDU received, a request to send, the time) returns the effects to perform, so
/// every ordering and timeout is a table test. `ATTConnection` is the shell that performs
/// them. The fields follow BlueZ's `src/shared/att.c`: a pending request and a pending
/// indication, a queue for each, one timeout per operation.
///
/// - "A client shall not send a request until it has received the response to the previous
///   one" (Vol 3 Part F 3.3.2): one request outstanding, later ones queued in order; the
///   same for indications, which "shall not be sent until the confirmation of the previous
///   one" (3.4.7.2). The two kinds do not wait for each other.
/// - "A transaction not completed within 30 seconds shall time out ... No more attribute
///   protocol requests, commands, indications or notifications shall be sent" (3.3.3): a
///   timeout fails everything and closes the bearer.
/// - Every PDU sent is checked against the ATT_MTU in force.
///
/// `Waiter` is whatever the shell needs to hand an answer back (a callback); the machine
/// only carries it from `request` to `.complete`.
public struct ATTMachine<Waiter> {
  public typealias Options = ATTOptions

  public enum Effect {
    /// Put these bytes on the bearer.
    case send([UInt8])
    /// Put the outstanding request (or indication) on the bearer; it times out at
    /// `deadline`. A failed send is reported with `sendFailed`, naming the transaction by
    /// `number` (the machine's count of transactions started, from 1).
    case start([UInt8], indication: Bool, deadline: Duration, number: Int)
    /// The transaction of `Waiter` ended: the peer's answer, or why there is none.
    case complete(Waiter, Result<ATTPDU, ATTError>)
    /// A request or command for this side's server. A request must be answered (`reply`)
    /// before the next PDU is taken.
    case serve(ATTPDU)
    /// A notification or indication from the peer's server. An indication's confirmation is
    /// the `.send` that follows, after the value has been handled.
    case deliver(ATTValueEvent)
    /// The bearer must be closed (a transaction timed out).
    case close(ATTError)
    /// The Exchange MTU Response just before this is out: set ATT_MTU from the peer's offer
    /// (`adopt(peer:)`).
    case adoptMTU(peer: UInt16)
    /// Something from the peer was ignored or answered with an error; for the log.
    case note(String)
  }

  /// What one input returns, in order: nearly always one or two effects, kept inline so
  /// that a PDU costs no allocation for them.
  public struct Effects: Sequence, ExpressibleByArrayLiteral {
    var first: Effect?
    var second: Effect?
    var rest: [Effect] = []

    public init() {}

    public init(arrayLiteral elements: Effect...) {
      for element in elements { append(element) }
    }

    public var isEmpty: Bool { first == nil }

    mutating func append(_ effect: consuming Effect) {
      if first == nil {
        first = effect
      } else if second == nil {
        second = effect
      } else {
        rest.append(effect)
      }
    }

    public struct Iterator: IteratorProtocol {
      let effects: Effects
      var index = 0

      public mutating func next() -> Effect? {
        defer { index += 1 }
        switch index {
        case 0: return effects.first
        case 1: return effects.second
        default: return index - 2 < effects.rest.count ? effects.rest[index - 2] : nil
        }
      }
    }

    public func makeIterator() -> Iterator { Iterator(effects: self) }
  }

  /// A request or indication waiting for its turn.
  struct Queued {
    var opcode: ATTOpcode
    /// Encoded and checked against ATT_MTU when asked for (the MTU only grows).
    var bytes: [UInt8]
    var waiter: Waiter
  }

  /// The request or indication on the wire, awaiting its answer.
  struct Outstanding {
    var opcode: ATTOpcode
    var deadline: Duration
    var waiter: Waiter
    /// Which start this was (`Effect.start`).
    var number: Int
  }

  public let options: Options
  /// The ATT_MTU in force.
  public private(set) var mtu = Int(ATTOptions.defaultMTU)
  /// Whether an Exchange MTU has set `mtu`.
  public private(set) var mtuExchanged = false
  /// Nil while the bearer is up; otherwise why it ended.
  public private(set) var closed: ATTError?
  /// Transactions started so far: the last one's number.
  var started = 0
  var pendingRequest: Outstanding?
  var pendingIndication: Outstanding?
  var requestQueue = FIFO<Queued>()
  var indicationQueue = FIFO<Queued>()

  public init(options: Options = Options()) {
    self.options = options
  }

  /// The earliest deadline of what is outstanding; nil when nothing is.
  public var deadline: Duration? {
    switch (pendingRequest?.deadline, pendingIndication?.deadline) {
    case (let a?, let b?): return min(a, b)
    case (let a, let b): return a ?? b
    }
  }

  // MARK: - Sending

  /// Sends `pdu` as a request now, or once the requests before it are answered. Its answer,
  /// or its failure, comes back as `.complete(waiter, _)`.
  public mutating func request(_ pdu: ATTPDU, waiter: consuming Waiter, now: Duration) -> Effects {
    ask(pdu, waiter, indication: false, now)
  }

  /// Sends a Handle Value Indication now, or once the one before it is confirmed; completes
  /// with the confirmation. The value is cut to ATT_MTU - 3 bytes.
  public mutating func indicate(handle: UInt16, value: [UInt8], waiter: consuming Waiter, now: Duration) -> Effects {
    let pdu = ATTPDU.handleValueIndication(HandleValueIndication(handle: handle, value: fitted(value)))
    return ask(pdu, waiter, indication: true, now)
  }

  /// A transaction asked for: refused at once when the link is gone, otherwise started, or
  /// queued behind the one of its kind on the wire. Its size is checked against the ATT_MTU
  /// in force when it goes (an Exchange MTU may be under way when it is asked).
  private mutating func ask(_ pdu: ATTPDU, _ waiter: consuming Waiter, indication: Bool, _ now: Duration) -> Effects {
    var out = Effects()
    if let closed {
      out.append(.complete(waiter, .failure(closed)))
      return out
    }
    let queued = Queued(opcode: pdu.opcode, bytes: pdu.encoded(), waiter: waiter)
    if indication ? pendingIndication == nil : pendingRequest == nil {
      start(queued, now, &out)
    } else if indication {
      indicationQueue.append(queued)
    } else {
      requestQueue.append(queued)
    }
    return out
  }

  /// The bytes of a PDU that is no transaction (a notification, a command, an answer to the
  /// peer), checked against the state and ATT_MTU.
  public func encode(_ pdu: ATTPDU) -> Result<[UInt8], ATTError> {
    if let closed { return .failure(closed) }
    let bytes = pdu.encoded()
    if bytes.count > mtu { return .failure(.pduTooLarge(size: bytes.count, mtu: mtu)) }
    return .success(bytes)
  }

  /// A Handle Value Notification's bytes, the value cut to ATT_MTU - 3 ("If the attribute
  /// value is longer than (ATT_MTU-3) octets, then only the first (ATT_MTU-3) octets of this
  /// attributes value can be sent in a notification", Vol 3 Part F 3.4.7.1).
  public func notification(handle: UInt16, value: [UInt8]) -> Result<[UInt8], ATTError> {
    encode(.handleValueNotification(HandleValueNotification(handle: handle, value: fitted(value))))
  }

  private func fitted(_ value: [UInt8]) -> [UInt8] {
    let room = mtu - 3
    return value.count > room ? Array(value[..<room]) : value
  }

  /// Puts `operation` on the wire as the outstanding one of its kind, or fails it when it
  /// does not fit ATT_MTU; false then.
  @discardableResult
  private mutating func start(_ operation: consuming Queued, _ now: Duration, _ out: inout Effects) -> Bool {
    let bytes = operation.bytes
    if bytes.count > mtu {
      out.append(.complete(operation.waiter, .failure(.pduTooLarge(size: bytes.count, mtu: mtu))))
      return false
    }
    let deadline = now + options.transactionTimeout
    started += 1
    let outstanding = Outstanding(
      opcode: operation.opcode, deadline: deadline, waiter: operation.waiter, number: started)
    let indication = outstanding.opcode == .handleValueIndication
    if indication {
      pendingIndication = outstanding
    } else {
      pendingRequest = outstanding
    }
    out.append(.start(bytes, indication: indication, deadline: deadline, number: started))
    return true
  }

  /// The next queued request (or indication), once its kind has nothing outstanding.
  private mutating func startNext(indication: Bool, _ now: () -> Duration, _ out: inout Effects) {
    guard closed == nil, indication ? pendingIndication == nil : pendingRequest == nil else { return }
    while let next = indication ? indicationQueue.popFirst() : requestQueue.popFirst() {
      if start(next, now(), &out) { return }
    }
  }

  /// The send of transaction `number` (its `.start`) failed: the link is gone for it. A
  /// failure told late, once that transaction has ended (a stray answer, the end of the
  /// link), changes nothing: it never fails the one outstanding now.
  public mutating func sendFailed(indication: Bool, number: Int, now: Duration) -> Effects {
    var out = Effects()
    guard (indication ? pendingIndication?.number : pendingRequest?.number) == number else { return out }
    let failed = indication ? pendingIndication.take() : pendingRequest.take()
    if let failed { out.append(.complete(failed.waiter, .failure(.disconnected))) }
    startNext(indication: indication, { now }, &out)
    return out
  }

  // MARK: - Receiving

  /// One PDU from the peer.
  public mutating func received(_ bytes: [UInt8], now: () -> Duration) -> Effects {
    var out = Effects()
    guard closed == nil else { return out }
    guard let first = bytes.first else {
      out.append(.note("empty PDU ignored"))
      return out
    }
    let opcode = ATTOpcode(rawValue: first)
    let pdu: ATTPDU
    do {
      pdu = try ATTPDU(decoding: bytes)
    } catch {
      out.append(.note("\(error)"))
      if opcode.needsResponse {
        reply(.errorResponse(ErrorResponse(requestOpcode: opcode, handle: 0, errorCode: .invalidPDU)), &out)
      } else if opcode == .errorResponse || ATTOpcode.answers.contains(first) {
        answer(.failure(.invalidResponse("\(error)")), indication: false, now, &out)
      }
      return out
    }
    switch pdu {
    case .handleValueNotification(let notification):
      out.append(.deliver(ATTValueEvent(handle: notification.handle, value: notification.value, isIndication: false)))
    case .handleValueIndication(let indication):
      out.append(.deliver(ATTValueEvent(handle: indication.handle, value: indication.value, isIndication: true)))
      reply(.handleValueConfirmation(HandleValueConfirmation()), &out)
    case .handleValueConfirmation:
      answer(.success(pdu), indication: true, now, &out)
    case .exchangeMTURequest(let request):
      // "The server shall respond ... The server and client shall set ATT_MTU to the
      // minimum ... after ... sending the response" (Vol 3 Part F 3.4.2.2): answered with
      // the old MTU; the shell adopts the new one once the answer is out.
      reply(.exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: options.localMTU)), &out)
      out.append(.adoptMTU(peer: request.clientRxMTU))
    case .unknown:
      if opcode.needsResponse {
        reply(.errorResponse(ErrorResponse(requestOpcode: opcode, handle: 0, errorCode: .requestNotSupported)), &out)
      } else if ATTOpcode.answers.contains(first) {
        // The answer to a request this side sent but cannot decode (Read Multiple, say).
        answer(.success(pdu), indication: false, now, &out)
      } else {
        out.append(.note("unknown \(opcode) ignored"))
      }
    default:
      if opcode.needsResponse || opcode.isCommand {
        out.append(.serve(pdu))
      } else {
        if case .exchangeMTUResponse(let response) = pdu, pendingRequest?.opcode == .exchangeMTURequest {
          adopt(peer: response.serverRxMTU)
        }
        answer(.success(pdu), indication: false, now, &out)
      }
    }
    return out
  }

  /// This side's answer to the peer's request (or a confirmation), as bytes to send.
  private func reply(_ pdu: ATTPDU, _ out: inout Effects) {
    switch encode(pdu) {
    case .success(let bytes): out.append(.send(bytes))
    case .failure(let error): out.append(.note("could not answer \(pdu.opcode): \(error)"))
    }
  }

  /// The server's answer to a request `.serve` handed it; nil when it has none (an Error
  /// Response "Unlikely Error" goes instead: a request is always answered).
  public func answer(to request: ATTOpcode, with response: ATTPDU?) -> Effects {
    var out = Effects()
    guard request.needsResponse else { return out }
    reply(response ?? .errorResponse(ErrorResponse(requestOpcode: request, handle: 0, errorCode: .unlikelyError)), &out)
    return out
  }

  /// Ends the outstanding transaction of a kind with the peer's answer, and starts the next.
  private mutating func answer(
    _ result: Result<ATTPDU, ATTError>, indication: Bool, _ now: () -> Duration, _ out: inout Effects
  ) {
    guard let outstanding = indication ? pendingIndication.take() : pendingRequest.take() else {
      let what = (try? result.get()).map { "\($0.opcode)" } ?? "answer"
      out.append(.note("unexpected \(what) with nothing outstanding; ignored"))
      return
    }
    out.append(.complete(outstanding.waiter, result.flatMap { Self.match($0, to: outstanding.opcode) }))
    startNext(indication: indication, now, &out)
  }

  /// The answer as the request expects it: its response, the Error Response for it, or an
  /// invalid response.
  static func match(_ answer: ATTPDU, to request: ATTOpcode) -> Result<ATTPDU, ATTError> {
    if case .errorResponse(let error) = answer {
      if error.requestOpcode == request { return .failure(.errorResponse(error)) }
      return .failure(.invalidResponse("Error Response for \(error.requestOpcode), expected one for \(request)"))
    }
    let expected: UInt8 =
      request == .handleValueIndication ? ATTOpcode.handleValueConfirmation.rawValue : request.rawValue + 1
    if answer.opcode.rawValue == expected { return .success(answer) }
    return .failure(.invalidResponse("\(answer.opcode) in answer to \(request)"))
  }

  /// ATT_MTU = min(client Rx MTU, server Rx MTU), never below 23 (Vol 3 Part F 3.4.2.2).
  public mutating func adopt(peer: UInt16) {
    mtu = Int(max(ATTOptions.defaultMTU, min(options.localMTU, peer)))
    mtuExchanged = true
  }

  // MARK: - Time and the end

  /// The time is `now`: a transaction past its deadline fails everything and closes the
  /// bearer.
  public mutating func timerFired(now: Duration) -> Effects {
    guard closed == nil, let deadline, deadline <= now else { return Effects() }
    // The bearer first: nothing more may go on it, whatever the waiters then do.
    var out: Effects = [.close(.timeout)]
    for effect in close(.timeout) { out.append(effect) }
    return out
  }

  /// The bearer is gone (or closed by this side): everything outstanding or queued fails
  /// with `reason`, and so does everything sent from now on.
  public mutating func close(_ reason: ATTError) -> Effects {
    var out = Effects()
    if closed == nil { closed = reason }
    let reason = closed ?? reason
    for outstanding in [pendingRequest.take(), pendingIndication.take()] {
      if let outstanding { out.append(.complete(outstanding.waiter, .failure(reason))) }
    }
    while let queued = requestQueue.popFirst() { out.append(.complete(queued.waiter, .failure(reason))) }
    while let queued = indicationQueue.popFirst() { out.append(.complete(queued.waiter, .failure(reason))) }
    return out
  }
}

extension ATTMachine: Sendable where Waiter: Sendable {}
extension ATTMachine.Effect: Sendable where Waiter: Sendable {}
extension ATTMachine.Effect: Equatable where Waiter: Equatable {}
extension ATTMachine.Effects: Sendable where Waiter: Sendable {}
extension ATTMachine.Effects: Equatable where Waiter: Equatable {
  public static func == (a: Self, b: Self) -> Bool { Array(a) == Array(b) }
}
extension ATTMachine.Queued: Sendable where Waiter: Sendable {}
extension ATTMachine.Outstanding: Sendable where Waiter: Sendable {}

/// What an ATT bearer is set up with.
public struct ATTOptions: Sendable {
  /// ATT_MTU before any exchange (LE).
  public static let defaultMTU: UInt16 = 23

  /// The largest PDU this side can receive, offered in Exchange MTU (23...517).
  public var localMTU: UInt16
  public var transactionTimeout: Duration

  public init(localMTU: UInt16 = 517, transactionTimeout: Duration = .seconds(30)) {
    self.localMTU = max(Self.defaultMTU, localMTU)
    self.transactionTimeout = transactionTimeout
  }
}
