import ATT
import Glibc
import Links
import Runtime
import Synchronization
import Wire

/// One end of a socket link (unix:PATH or tcp:HOST:PORT), framed as described at the top of
/// LinkFraming.swift.
///
/// The `EventLoop` the link was given reads the socket whenever it is readable, so the
/// peer's sends never wait for this end's engine and two busy ends cannot deadlock. It hands
/// each PDU in place to a connection that runs on that loop (`handOver(to:)`), and queues it
/// for `receive()` otherwise. Sends never block: what the socket cannot take waits in the
/// link's backlog, which only the loop touches and sends as the socket drains (a send from
/// another thread is taken to the loop when anything waits, or always on a byte stream,
/// whose frames could otherwise interleave). Pairing requests from the peer are
/// answered by the loop with this end's
/// `PairingPolicy`. When the peer closes, resets or breaks the framing, or this end closes,
/// `receive()` returns what was already queued and then nil, `send` throws `.disconnected`,
/// and a pending `pair` fails with `.disconnected`.
public final class SocketBearer: ATTBearer {
  let core: SocketCore

  init(core: SocketCore) {
    self.core = core
  }

  deinit {
    core.disconnect(fault: nil)
  }

  public var name: String { core.name }

  /// Frames the PDU and writes it to the socket; never suspends.
  public func send(_ pdu: [UInt8]) throws(BearerError) {
    guard pdu.count <= LinkFraming.maxPDUSize else {
      throw .tooLarge(size: pdu.count, limit: LinkFraming.maxPDUSize)
    }
    try core.sendFrame(channel: LinkFraming.attChannel, pdu)
  }

  nonisolated(nonsending) public func receive() async throws(BearerError) -> [UInt8]? {
    await core.inbox.next()
  }

  public func receiveIfReady() -> [UInt8]? { core.inbox.nextIfReady() }

  /// Hands each PDU over in place when `receiver` runs on the loop that reads this link (its
  /// executor is that loop) and this is called there; declines otherwise.
  public func handOver(to receiver: (any PDUReceiver)?) -> Bool { core.handOver(to: receiver) }

  public var securityLevel: SecurityLevel { core.securityLevel }
  /// The peer's address once it named itself in a bonded exchange.
  public var peerAddress: String? { core.peerAddress }

  public func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel {
    try await core.pair(level).get()
  }

  /// Closes the link (idempotent): the peer sees end of file, the event loop lets it go.
  public func close() {
    core.disconnect(fault: nil)
  }

  /// False once either end closed the link or it faulted.
  public var isConnected: Bool { !core.isClosed }

  /// Why the link went down on its own, if it did: the peer broke the framing, reset the
  /// connection, or an I/O error. Nil while connected and after a clean close by either end.
  public var lastError: LinkFault? { core.fault }

  /// What this end answers when the peer asks to pair.
  public var pairingPolicy: PairingPolicy { core.pairing }

  /// Takes over a connected SOCK_SEQPACKET socket that carries bare ATT PDUs (the Linux
  /// kernel's LE L2CAP socket on CID 4), whose security `kernel` reads and raises.
  package static func bareATT(
    fd: Int32, name: String, kernel: any KernelSecurity, on loop: EventLoop
  ) throws(LinkError) -> SocketBearer {
    try SocketCore.start(fd: fd, framing: .bareATT, name: name, pairing: .reject, kernel: kernel, on: loop)
  }
}

/// Security that a socket's kernel keeps and negotiates (Bluetooth's BT_SECURITY): what the
/// link has now, and how to ask for more.
package protocol KernelSecurity: Sendable {
  /// The link's level now.
  func level(of fd: Int32) -> SecurityLevel
  /// Asks the kernel for at least `level` (it pairs, or encrypts with a bond) and waits for
  /// the outcome: the level reached, or why not.
  func raise(_ fd: Int32, to level: SecurityLevel) async -> Result<SecurityLevel, BearerError>
}

/// The state a socket link's event loop shares with its users; it owns the descriptor
/// (`LoopDescriptor`, which also writes it).
final class SocketCore: LoopDescriptor, @unchecked Sendable {
  enum Framing: Sendable {
    /// One SOCK_SEQPACKET message per frame body.
    case messages
    /// A byte stream of length-prefixed frame bodies.
    case stream
    /// One SOCK_SEQPACKET message per ATT PDU, with no channel byte: the kernel's L2CAP
    /// socket on the ATT channel, whose security the kernel keeps (`KernelSecurity`).
    case bareATT
  }

  private typealias PairWaiter = CheckedContinuation<Result<SecurityLevel, BearerError>, Never>

  private struct State {
    var closed = false
    var level: SecurityLevel
    var pendingPairs: [PairWaiter] = []
    var fault: LinkFault?
    /// This end's part in bonded security, when it keeps bonds.
    var exchange: BondExchange?
  }

  let framing: Framing
  let name: String
  let pairing: PairingPolicy
  /// Where this end keeps its bonds; nil pairs without bonds.
  let keyring: Keyring?
  /// Security kept by the kernel (`bareATT`); nil where this end's framing carries pairing.
  let kernel: (any KernelSecurity)?
  let inbox = PDUQueue()
  private let state: Locked<State>
  /// `state.closed`, readable without the lock: checked before every read, delivery and
  /// write.
  private let down = Atomic<Bool>(false)
  /// `state.level`, readable without the lock: the GATT server reads it for every request.
  /// Stored under the lock wherever the level changes.
  private let levelNow: Atomic<Int>
  /// The connection (or a wrapper's stage before it) PDUs go to in place (`handOver(to:)`);
  /// nil: they go to `inbox`.
  private let receiver: LoopBound<(any PDUReceiver)?>
  /// A byte stream's partial frame between reads.
  private let streamDecoder: LoopBound<StreamFrameDecoder>

  private init(
    fd: Int32, framing: Framing, name: String, pairing: PairingPolicy, keyring: Keyring?, level: SecurityLevel,
    kernel: (any KernelSecurity)?, loop: EventLoop
  ) {
    receiver = LoopBound(nil, on: loop)
    streamDecoder = LoopBound(StreamFrameDecoder(), on: loop)
    self.framing = framing
    self.name = name
    self.pairing = pairing
    self.keyring = keyring
    self.kernel = kernel
    self.state = Locked(
      State(level: level, exchange: keyring.map { BondExchange(keyring: $0, policy: pairing) }))
    levelNow = Atomic(level.rawValue)
    // A message (or a bare ATT PDU) is one write.
    super.init(fd: fd, wholeWrites: framing != .stream, loop: loop)
  }

  /// Takes over a connected socket and has `loop` read it (closing the socket if it cannot).
  static func start(
    fd: Int32, framing: Framing, name: String, pairing: PairingPolicy, keyring: Keyring? = nil,
    level: SecurityLevel = .unencrypted, kernel: (any KernelSecurity)? = nil, on loop: EventLoop
  ) throws(LinkError) -> SocketBearer {
    let core = SocketCore(
      fd: fd, framing: framing, name: name, pairing: pairing, keyring: keyring, level: level, kernel: kernel,
      loop: loop)
    guard loop.register(core) else {
      let code = errno
      throw LinkError(
        address: name, kind: .system(errno: code), detail: "cannot watch the socket: \(errnoText(code))")
    }
    return SocketBearer(core: core)
  }

  override package var isClosed: Bool { down.load(ordering: .acquiring) }
  var peerAddress: String? { state.withLock { $0.exchange?.peer } }
  var fault: LinkFault? { state.withLock { $0.fault } }
  var securityLevel: SecurityLevel {
    if let kernel { return kernel.level(of: descriptor.fd) }
    return SecurityLevel(rawValue: levelNow.load(ordering: .acquiring)) ?? .unencrypted
  }

  /// Ends the link once; later calls do nothing. Records `fault` as the reason, if any. What
  /// waits in the backlog is written once more, as far as the socket takes it without
  /// blocking, and the rest is dropped: a peer more than a socket's buffer behind loses the
  /// tail of what was sent before the close.
  override func disconnect(fault: LinkFault?) {
    let waiters = state.withLock { state -> [PairWaiter]? in
      if state.closed { return nil }
      state.closed = true
      down.store(true, ordering: .releasing)
      state.fault = fault
      defer { state.pendingPairs = [] }
      return state.pendingPairs
    }
    guard let waiters else { return }
    // The peer sees the end once what waits has gone (on the loop), or at once when nothing
    // does (`writeWaitingOnce`).
    writeWaitingOnce { [self] in descriptor.shutdown() }
    inbox.close()
    for waiter in waiters { waiter.resume(returning: .failure(.disconnected)) }
  }

  // MARK: Sending

  func sendFrame(channel: UInt8, _ payload: [UInt8]) throws(BearerError) {
    var frame: [UInt8] = []
    frame.reserveCapacity(payload.count + 3)
    if framing == .bareATT {
      // Only ATT travels on the kernel's channel; pairing goes through `kernel`.
      guard channel == LinkFraming.attChannel else { throw .disconnected }
      return try writeFrame(payload)
    }
    if framing == .stream {
      let length = payload.count + 1
      frame.append(UInt8(truncatingIfNeeded: length))
      frame.append(UInt8(truncatingIfNeeded: length >> 8))
    }
    frame.append(channel)
    frame.append(contentsOf: payload)
    try writeFrame(frame)
  }

  /// Writes the frame without blocking, or queues it behind what the peer has not taken
  /// yet (`LoopDescriptor.send`).
  private func writeFrame(_ frame: [UInt8]) throws(BearerError) {
    if !send(frame) { throw .disconnected }
  }

  // MARK: Pairing

  func pair(_ wanted: SecurityLevel) async -> Result<SecurityLevel, BearerError> {
    if let kernel {
      if isClosed { return .failure(.disconnected) }
      return await kernel.raise(descriptor.fd, to: wanted)
    }
    return await withCheckedContinuation { (waiter: PairWaiter) in
      let request = state.withLock { state -> ControlMessage? in
        if state.closed { return nil }
        state.pendingPairs.append(waiter)
        return state.exchange?.request(wanted) ?? .pairRequest(wanted: UInt8(wanted.rawValue))
      }
      guard let request else {
        waiter.resume(returning: .failure(.disconnected))
        return
      }
      // A failed send disconnects (or found the link already closed, which disconnected it),
      // and disconnecting fails every pending request, this one included.
      try? sendFrame(channel: LinkFraming.controlChannel, request.encoded)
    }
  }

  // MARK: Reading (on the event loop thread)

  /// Starts (or, with nil, stops) handing PDUs to `connection` in place; see
  /// `SocketBearer.handOver(to:)`. Only on the loop's thread, where the reads are, so no
  /// read runs meanwhile and what was queued before stays first.
  func handOver(to receiver: (any PDUReceiver)?) -> Bool { self.receiver.handOver(to: receiver) }

  /// One ATT PDU read: to the connection in place, or queued. False once the link is down
  /// (it may close in the connection's hands).
  private func deliver(_ pdu: [UInt8]) -> Bool {
    if isClosed { return false }
    if let receiver = receiver.value {
      receiver.take(pdu)
    } else {
      inbox.push(pdu)
    }
    return true
  }

  /// Reads what the socket holds, at most `turns` reads, without blocking. False once the
  /// link is down (the peer closed, reset or broke the framing, or this end closed): the
  /// event loop then stops watching it.
  override func readAvailable(into buffer: inout [UInt8], turns: Int) -> Bool {
    for _ in 0..<turns {
      if isClosed { return false }
      // MSG_TRUNC makes a SEQPACKET recv return the message's real length, so an oversized
      // one shows; a stream reads what fits.
      let flags = Int32(MSG_DONTWAIT) | (framing != .stream ? Int32(MSG_TRUNC) : 0)
      let count = buffer.withUnsafeMutableBytes { raw in recv(descriptor.fd, raw.baseAddress, raw.count, flags) }
      if count < 0 {
        let code = errno
        if code == EINTR { continue }
        if code == EAGAIN || code == EWOULDBLOCK { return true }
        disconnect(fault: Self.readFault(code))
        return false
      }
      if !(framing != .stream ? message(buffer, count) : stream(buffer, count)) { return false }
    }
    return true
  }

  private func message(_ buffer: [UInt8], _ count: Int) -> Bool {
    let limit = LinkFraming.maxFrameBody
    if count == 0 {
      disconnect(fault: nil)
      return false
    }
    if count > limit {
      disconnect(fault: .frameTooLong(length: count, limit: limit))
      return false
    }
    if framing == .bareATT { return deliver(Array(buffer[0..<count])) }
    return handle(buffer[0..<count])
  }

  private func stream(_ buffer: [UInt8], _ count: Int) -> Bool {
    if count == 0 {
      let buffered = streamDecoder.value.bufferedCount
      disconnect(fault: buffered > 0 ? .truncatedFrame(bufferedBytes: buffered) : nil)
      return false
    }
    // The frames before a broken one are delivered, then the link ends.
    let (bodies, broken) = streamDecoder.modify { decoder -> ([[UInt8]], LinkFault?) in
      decoder.append(buffer[0..<count])
      var bodies: [[UInt8]] = []
      do throws(LinkFault) {
        while let body = try decoder.next() { bodies.append(body) }
      } catch {
        return (bodies, error)
      }
      return (bodies, nil)
    }
    for body in bodies where !handle(body[...]) { return false }
    if let broken {
      disconnect(fault: broken)
      return false
    }
    return true
  }

  /// EPIPE on a read is a reset that came after the peer's FIN: the peer closed, with data of
  /// ours unread. That is an ordinary close.
  private static func readFault(_ code: Int32) -> LinkFault? {
    switch code {
    case EPIPE: return nil
    case ECONNRESET: return .connectionReset
    default: return .io("recv: \(errnoText(code))")
    }
  }

  /// Dispatches one frame body; false once the link is down.
  private func handle(_ body: ArraySlice<UInt8>) -> Bool {
    guard let channel = body.first else {
      disconnect(fault: .emptyFrame)
      return false
    }
    let payload = body.dropFirst()
    switch channel {
    case LinkFraming.attChannel:
      return deliver(Array(payload))
    case LinkFraming.controlChannel:
      return handleControl(payload)
    default:
      disconnect(fault: .unknownChannel(channel))
      return false
    }
  }

  private func handleControl(_ payload: ArraySlice<UInt8>) -> Bool {
    let message: ControlMessage
    do {
      message = try ControlMessage.decode(payload)
    } catch {
      disconnect(fault: error)
      return false
    }
    if let effects = bonded(message) { return perform(effects) }
    switch message {
    case .pairRequest(let wanted), .securityRequest(let wanted, _):
      // The level rises before the Accept leaves, so nothing this end sends afterwards
      // can reach the initiator before the initiator knows the link is protected.
      let answer = state.withLock { state -> ControlMessage in
        let answer = pairing.answer(wanted: wanted, current: state.level)
        if case .pairAccept(let granted) = answer { setLevel(&state, granted) }
        return answer
      }
      do {
        try sendFrame(channel: LinkFraming.controlChannel, answer.encoded)
      } catch {
        return false
      }
      return true
    case .pairAccept(let granted):
      let taken = state.withLock { state -> (PairWaiter, SecurityLevel)? in
        guard !state.pendingPairs.isEmpty else { return nil }
        setLevel(&state, max(state.level, granted))
        return (state.pendingPairs.removeFirst(), state.level)
      }
      guard let (waiter, level) = taken else {
        disconnect(fault: .unexpectedPairResponse)
        return false
      }
      waiter.resume(returning: .success(level))
      return true
    case .pairReject(let reason, let text):
      let waiter = state.withLock { state -> PairWaiter? in
        state.pendingPairs.isEmpty ? nil : state.pendingPairs.removeFirst()
      }
      guard let waiter else {
        disconnect(fault: .unexpectedPairResponse)
        return false
      }
      let why = LinkFraming.rejection(reason: reason, text: text)
      waiter.resume(returning: .failure(.pairingFailed(why)))
      return true
    case .encrypt, .encryptAccept, .keyMissing, .bondRequest:
      // Only an end that keeps bonds asks for these.
      disconnect(fault: .unexpectedPairResponse)
      return false
    }
  }

  /// Sets the link's level, under the state's lock.
  private func setLevel(_ state: inout State, _ level: SecurityLevel) {
    state.level = level
    levelNow.store(level.rawValue, ordering: .releasing)
  }

  /// Runs `message` through this end's bonded exchange, if it has one and the message is
  /// its: the effects, with the level raised and the pending `pair` taken under the lock.
  private func bonded(_ message: ControlMessage) -> [(BondExchange.Effect, PairWaiter?)]? {
    state.withLock { state -> [(BondExchange.Effect, PairWaiter?)]? in
      guard var exchange = state.exchange, exchange.handles(message) else { return nil }
      let effects = exchange.received(message, level: state.level)
      state.exchange = exchange
      return effects.map { effect in
        switch effect {
        case .raise(let level):
          setLevel(&state, max(state.level, level))
          return (effect, nil)
        case .finish:
          return (effect, state.pendingPairs.isEmpty ? nil : state.pendingPairs.removeFirst())
        case .send, .disconnect:
          return (effect, nil)
        }
      }
    }
  }

  private func perform(_ effects: [(BondExchange.Effect, PairWaiter?)]) -> Bool {
    for (index, (effect, waiter)) in effects.enumerated() {
      switch effect {
      case .raise: continue
      case .send(let message):
        do { try sendFrame(channel: LinkFraming.controlChannel, message.encoded) } catch {
          // The link is down; the waiters taken out for this message are resumed here, since
          // disconnecting resumes only those still pending.
          for (_, later) in effects[(index + 1)...] { later?.resume(returning: .failure(.disconnected)) }
          return false
        }
      case .finish(let result): waiter?.resume(returning: result)
      case .disconnect:
        disconnect(fault: nil)
        return false
      }
    }
    return true
  }
}
