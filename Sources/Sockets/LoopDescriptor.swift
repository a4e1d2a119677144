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
  /// channel): while nothing waits, a write takes no lock. Otherwise (a byte stream) writes
  /// are serialised by the backlog's lock, so that their bytes never interleave.
  let wholeWrites: Bool
  /// What the peer has not taken yet: writes the descriptor could not take without
  /// blocking, in order, sent as the loop sees it writable again.
  private let backlog = Locked(Backlog())
  /// The backlog holds something: readable without its lock.
  private let backlogged = Atomic<Bool>(false)
  /// How much memory what the peer leaves unread beyond the descriptor's own buffer may
  /// hold (`Backlog.cost`: its bytes and a per-write overhead) before the link is given up
  /// (`LinkFault.peerNotReading`): far beyond any flood a scenario sends, only a bound on
  /// the memory a peer that stopped reading can hold.
  static let backlogLimit = 64 << 20

  init(fd: Int32, wholeWrites: Bool, loop: EventLoop) {
    descriptor = OwnedFD(fd)
    self.loop = loop
    self.wholeWrites = wholeWrites
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
  /// calls `writeWaitingOnce()` there.
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
  /// down here (a write failed, or the backlog passed its limit: `disconnect` was called).
  final func send(_ bytes: [UInt8]) -> Bool {
    if isClosed { return false }
    if wholeWrites && !backlogged.load(ordering: .acquiring) {
      // Nothing waits: a message goes whole or not at all, with no lock.
      switch write(bytes[...]) {
      case .written: return true
      case .failed(let code):
        disconnect(fault: Self.writeFault(code))
        return false
      case .blocked: break
      }
    }
    let outcome = backlog.withLock { backlog -> Queueing in
      var rest = bytes[...]
      if backlog.isEmpty {
        switch write(rest) {
        case .written: return .done
        case .failed(let code): return .ends(Self.writeFault(code))
        case .blocked(let written): rest = rest.dropFirst(written)
        }
        backlogged.store(true, ordering: .releasing)
        loop.watchWritable(self, true)
      }
      backlog.append(rest)
      if backlog.cost > Self.backlogLimit { return .ends(.peerNotReading(bytes: backlog.bytes)) }
      return .done
    }
    if case .ends(let fault) = outcome {
      disconnect(fault: fault)
      return false
    }
    return true
  }

  private enum Queueing {
    /// Written, or queued behind the backlog.
    case done
    /// The link ends, for this reason (nil: the peer went away).
    case ends(LinkFault?)
  }

  /// Sends what waits in the backlog, as far as the descriptor takes it; on the loop, when
  /// it is writable again. Once it is all gone, the loop stops watching for room.
  final func flush() {
    let outcome = backlog.withLock { backlog -> Queueing in
      while let next = backlog.first {
        switch write(next) {
        case .written: backlog.removeFirst(next.count)
        case .blocked(let written):
          backlog.removeFirst(written)
          return .done
        case .failed(let code): return .ends(Self.writeFault(code))
        }
      }
      backlogged.store(false, ordering: .releasing)
      if !isClosed { loop.watchWritable(self, false) }
      return .done
    }
    // A peer that went away (EPIPE) ends the link too, with no fault: otherwise the
    // descriptor would stay writable-but-failing and the loop would come back to it forever.
    if case .ends(let fault) = outcome { disconnect(fault: fault) }
  }

  /// For `disconnect`: what waits is written once more, as far as the descriptor takes it
  /// without blocking, and the rest is dropped: a peer more than a buffer behind loses the
  /// tail of what was written before the end.
  final func writeWaitingOnce() {
    backlog.withLock { backlog in
      while let next = backlog.first, case .written = write(next) { backlog.removeFirst(next.count) }
      backlog = Backlog()
    }
    // A serial port's close(2) waits for its output to drain (up to 30 s by default, and
    // for good when RTS/CTS holds it), whatever O_NONBLOCK says: what it holds is dropped
    // too, so that letting go of the descriptor, on the loop, never stalls it.
    if !isSocket { tcflush(descriptor.fd, TCOFLUSH) }
  }

  /// Bytes written but not yet taken by the descriptor (for tests).
  package var backlogBytes: Int { backlog.withLock { $0.bytes } }

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
  /// What the writes waiting hold in memory, about: their bytes and, per write, its array's
  /// header and its slot in the queue.
  var cost: Int { bytes + frames * 64 }

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
