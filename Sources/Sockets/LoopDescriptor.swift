import Glibc
import Links
import Runtime
import Synchronization

/// A descriptor an `EventLoop` watches, and what it does with it: a socket link
/// (`SocketCore`) or a byte stream to a Bluetooth controller (`DescriptorStream`). The loop
/// calls `readAvailable` whenever the descriptor is readable, and `flush` whenever it is
/// writable again while something waits. Writes never block: what the descriptor cannot take
/// waits in the backlog, in order, and the loop sends it on (watching for room to write only
/// while something waits). A subclass reads, and says how its link ends (`disconnect`).
public class LoopDescriptor: @unchecked Sendable {
  let descriptor: OwnedFD
  /// The loop that reads the descriptor.
  package let loop: EventLoop
  /// Sockets are written with send(2) (MSG_NOSIGNAL: a peer that went away is EPIPE, not
  /// SIGPIPE); anything else (a serial port) with write(2), and must be non-blocking.
  let isSocket: Bool
  /// Each write is one message, written whole or not at all (SOCK_SEQPACKET, the HCI user
  /// channel): while nothing waits or is on its way to the loop, any thread writes it at
  /// once. Otherwise (a byte stream) only the loop writes, so that frames never interleave.
  let wholeWrites: Bool
  /// What the peer has not taken yet: writes the descriptor could not take without
  /// blocking, in order, sent as the loop sees it writable again. Only the loop's thread
  /// touches it: a write from another thread is taken there (`send`), as are the last
  /// writes at the end (`writeWaitingOnce`).
  private let backlog: LoopBound<Backlog>
  /// The backlog's size (`Backlog.Amount`, packed) as the loop last left it: readable from
  /// any thread.
  private let waiting = Atomic<Int>(0)
  /// Writes from other threads on their way to the loop (`Backlog.Amount`, packed): while any
  /// is, later writes from other threads follow it there, so that one thread's writes
  /// leave in the order it made them.
  private let onTheWay = Atomic<Int>(0)
  /// How much memory what the peer leaves unread beyond the descriptor's own buffer may
  /// hold (`Backlog.Amount.cost`: its bytes and a per-write overhead) before the link is
  /// given up (`LinkFault.peerNotReading`): far beyond any flood a scenario sends, only a
  /// bound on the memory a peer that stopped reading can hold. Writes on their way to the
  /// loop count too.
  static let backlogLimit = 64 << 20

  init(fd: Int32, wholeWrites: Bool, loop: EventLoop) {
    descriptor = OwnedFD(fd)
    self.loop = loop
    self.wholeWrites = wholeWrites
    backlog = LoopBound(Backlog(), on: loop)
    var status = stat()
    isSocket = fstat(fd, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
  }

  // MARK: For the subclass

  /// Reads what the descriptor holds, at most `turns` reads, without blocking; false once
  /// the link is down: the loop then stops watching it. On the loop's thread.
  func readAvailable(into buffer: inout [UInt8], turns: Int) -> Bool {
    preconditionFailure("\(Self.self) must read")
  }

  /// Ends the link once (later calls do nothing), `fault` its reason if any. A subclass
  /// calls `writeWaitingOnce(then:)` there.
  func disconnect(fault: LinkFault?) {
    preconditionFailure("\(Self.self) must say how it ends")
  }

  /// True once the link is down.
  package var isClosed: Bool { preconditionFailure("\(Self.self) must say when it is down") }

  /// The loop has stopped watching the descriptor and let go of it (its link ended, was
  /// `unregister`ed, or the loop was shut down): called once, on the loop's thread, after
  /// the last `readAvailable`.
  func didLeave() {}

  // MARK: Writing

  /// Writes `bytes` without blocking, or queues them behind what the peer has not taken yet:
  /// a peer that reads slowly, or not at all, never stalls the writer (the event loop, with
  /// every other link on it). Writes leave in order. False when the link is down, or went
  /// down here (a write failed, or what waits passed its limit: `disconnect` was called).
  ///
  /// On the loop's thread the write is made, or queued, in place, with no lock, unless writes
  /// from other threads are on their way to the loop: it goes behind them, through the
  /// loop's queue (a task that sent one, then entered an actor on the loop, keeps its order).
  /// From another thread, a whole message is written at once while nothing waits or is on
  /// its way; anything else is taken to the loop (`EventLoop.execute`), in order, and true
  /// means only that it is on its way: a failure there ends the link (as a read's would).
  final func send(_ bytes: [UInt8]) -> Bool {
    if isClosed { return false }
    // `onTheWay` before `waiting`: a write that left the way is in the backlog by then.
    let clear = onTheWay.load(ordering: .acquiring) == 0
    let onLoop = loop.inEventLoop
    if onLoop && clear { return sendOnLoop(bytes) }
    if !onLoop && clear && wholeWrites && waiting.load(ordering: .acquiring) == 0 {
      switch write(bytes[...]) {
      case .written: return true
      case .failed(let code):
        disconnect(fault: Self.writeFault(code))
        return false
      case .blocked: break
      }
    }
    precondition(bytes.count < 1 << 32, "a write of 4 GiB or more")
    let amount = Backlog.Amount(bytes: bytes.count, writes: 1)
    let ahead = Backlog.Amount(packed: onTheWay.add(amount.packed, ordering: .acquiringAndReleasing).newValue)
    let total = ahead + Backlog.Amount(packed: waiting.load(ordering: .acquiring))
    if total.cost > Self.backlogLimit {
      onTheWay.subtract(amount.packed, ordering: .releasing)
      disconnect(fault: .peerNotReading(bytes: total.bytes))
      return false
    }
    loop.execute { [self] in
      _ = sendOnLoop(bytes)
      // After the write: a later write from another thread may go at once only when this
      // one has gone, or waits in the backlog.
      onTheWay.subtract(amount.packed, ordering: .releasing)
    }
    return true
  }

  /// `send` on the loop's thread: a write made there (the link is up), or one that was on its
  /// way when the link went down, which still goes before the end's last writes.
  private func sendOnLoop(_ bytes: [UInt8]) -> Bool {
    let fault = backlog.modify { backlog -> LinkFault?? in
      // After the end's last writes: dropped with the link.
      if backlog.ended { return .some(nil) }
      var rest = bytes[...]
      if backlog.isEmpty {
        switch write(rest) {
        case .written: return .none
        case .failed(let code): return .some(Self.writeFault(code))
        case .blocked(let written): rest = rest.dropFirst(written)
        }
        loop.watchWritable(self, true)
      }
      backlog.append(rest)
      publish(backlog)
      let ahead = Backlog.Amount(packed: onTheWay.load(ordering: .acquiring))
      if (backlog.amount + ahead).cost > Self.backlogLimit {
        return .some(.peerNotReading(bytes: backlog.amount.bytes + ahead.bytes))
      }
      return .none
    }
    guard case .some(let fault) = fault else { return true }
    disconnect(fault: fault)
    return false
  }

  /// Tells other threads how much waits now.
  private func publish(_ backlog: borrowing Backlog) {
    waiting.store(backlog.amount.packed, ordering: .releasing)
  }

  /// Sends what waits in the backlog, as far as the descriptor takes it; on the loop, when
  /// it is writable again. Once it is all gone, the loop stops watching for room.
  final func flush() {
    let fault = backlog.modify { backlog -> LinkFault?? in
      defer { publish(backlog) }
      while let next = backlog.first {
        switch write(next) {
        case .written: backlog.removeFirst(next.count)
        case .blocked(let written):
          backlog.removeFirst(written)
          return .none
        case .failed(let code): return .some(Self.writeFault(code))
        }
      }
      // Closed too: until the end's last writes, the loop would otherwise come back to an
      // empty backlog on every turn.
      loop.watchWritable(self, false)
      return .none
    }
    // A peer that went away (EPIPE) ends the link too, with no fault: otherwise the
    // descriptor would stay writable-but-failing and the loop would come back to it forever.
    if case .some(let fault) = fault { disconnect(fault: fault) }
  }

  /// For `disconnect`, once: on the loop's thread, what waits is written once more, as far
  /// as the descriptor takes it without blocking, and the rest is dropped, then `then` runs:
  /// a peer more than a buffer behind loses the tail of what was written before the end.
  /// In place when called on the loop with nothing on its way there; from another thread
  /// with nothing waiting nor on its way, `then` runs at once there (the peer sees the end
  /// now, however busy the loop is); otherwise through the loop's queue, behind the writes
  /// on their way (sent before the close, they still go). Writes that reach the loop after
  /// it are dropped.
  final func writeWaitingOnce(then: @escaping @Sendable () -> Void) {
    let clear = onTheWay.load(ordering: .acquiring) == 0
    let onLoop = loop.inEventLoop
    if onLoop && clear { return end(writing: true, then: then) }
    if !onLoop && clear && waiting.load(ordering: .acquiring) == 0 {
      // The loop drops what a write it was making meanwhile left (the end has come).
      loop.execute { [self] in end(writing: false) {} }
      return finishEnd(then)
    }
    loop.execute { [self] in end(writing: true, then: then) }
  }

  /// The end on the loop: what waits is written once more (when `writing`), as far as the
  /// descriptor takes it, and the rest dropped; nothing is written after, and the loop no
  /// longer watches for room.
  private func end(writing: Bool, then: () -> Void) {
    backlog.modify { backlog in
      while writing, let next = backlog.first, case .written = write(next) { backlog.removeFirst(next.count) }
      backlog = Backlog()
      backlog.ended = true
      publish(backlog)
    }
    loop.watchWritable(self, false)
    finishEnd(then)
  }

  private func finishEnd(_ then: () -> Void) {
    // A serial port's close(2) waits for its output to drain (up to 30 s by default, and
    // for good when RTS/CTS holds it), whatever O_NONBLOCK says: what it holds is dropped
    // too, so that letting go of the descriptor, on the loop, never stalls it.
    if !isSocket { tcflush(descriptor.fd, TCOFLUSH) }
    then()
  }

  /// Writes from other threads on their way to the loop now (for tests).
  package var writesOnTheWay: Int { Backlog.Amount(packed: onTheWay.load(ordering: .acquiring)).writes }

  /// Bytes written but not yet taken by the descriptor, once the writes made before have
  /// reached the loop (for tests).
  package var backlogBytes: Int {
    get async { await loop.submit { [self] in backlog.value.bytes } }
  }

  private enum Write {
    case written
    /// The descriptor's buffer is full: only the first `written` bytes went.
    case blocked(written: Int)
    case failed(Int32)
  }

  /// Writes `bytes` without blocking: retries on EINTR and continues after a partial write
  /// (a byte stream).
  private func write(_ bytes: ArraySlice<UInt8>) -> Write {
    let fd = descriptor.fd
    let isSocket = isSocket
    return bytes.withUnsafeBytes { raw -> Write in
      var offset = 0
      while offset < raw.count {
        let written =
          isSocket
          ? Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
          : Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
        if written < 0 {
          let code = errno
          if code == EINTR { continue }
          if code == EAGAIN || code == EWOULDBLOCK { return .blocked(written: offset) }
          return .failed(code)
        }
        // Nothing taken, and no error: as full (the loop comes back when it has room).
        if written == 0 { return .blocked(written: offset) }
        offset += written
      }
      return .written
    }
  }

  /// Why a write failed: nil when the peer just went away.
  private static func writeFault(_ code: Int32) -> LinkFault? {
    switch code {
    case EPIPE, ENOTCONN, ESHUTDOWN: return nil
    case ECONNRESET: return .connectionReset
    default: return .io("write: \(errnoText(code))")
    }
  }
}

/// Writes a descriptor could not take yet (`LoopDescriptor.send`), in order; the first may
/// be partly written (a byte stream).
struct Backlog {
  /// The first write's unwritten part; nil when nothing waits.
  private(set) var first: ArraySlice<UInt8>?
  private var rest = FIFO<ArraySlice<UInt8>>()
  /// The bytes waiting.
  private(set) var bytes = 0
  /// The writes waiting.
  private(set) var frames = 0
  /// The link's end wrote what waited for the last time: nothing more is written.
  var ended = false
  /// The bytes and writes waiting.
  var amount: Amount { Amount(bytes: bytes, writes: frames) }

  /// Bytes and writes, packed into one word for an atomic (writes in the high half): for
  /// the figures other threads read.
  struct Amount: Equatable {
    var bytes: Int
    var writes: Int

    init(bytes: Int, writes: Int) {
      self.bytes = bytes
      self.writes = writes
    }

    init(packed: Int) {
      bytes = packed & 0xFFFF_FFFF
      writes = packed >> 32
    }

    /// Within the limit, each half is far from full: 64 MiB and a million writes.
    var packed: Int { writes << 32 | bytes }

    /// What the writes hold in memory, about: their bytes and, per write, its array's
    /// header and its slot in the queue.
    var cost: Int { bytes + writes * 64 }

    static func + (left: Amount, right: Amount) -> Amount {
      Amount(bytes: left.bytes + right.bytes, writes: left.writes + right.writes)
    }
  }

  var isEmpty: Bool { first == nil }

  mutating func append(_ frame: ArraySlice<UInt8>) {
    if first == nil { first = frame } else { rest.append(frame) }
    bytes += frame.count
    frames += 1
  }

  /// Drops the first `count` bytes of the first write, which the descriptor took.
  mutating func removeFirst(_ count: Int) {
    guard let head = first else { return }
    bytes -= count
    if count < head.count {
      first = head.dropFirst(count)
      return
    }
    frames -= 1
    first = rest.popFirst()
    // Drained: let go of the queue's room too, which a burst may have made large.
    if first == nil { rest = FIFO() }
  }
}
