import ATT
import Glibc
import Runtime
import Synchronization
import TestSupport
import Testing

@testable import Links
@testable import Sockets

/// A socket link's write never blocks: what the socket's buffer cannot take waits in the
/// link's backlog and leaves, in order, as the peer reads.
@Suite("A link's writes never block", .timeLimit(scaledMinutes(1)))
struct BacklogTests {
  /// An ATT notification of `size` bytes carrying `index`.
  static func pdu(_ index: Int, size: Int = 20) -> [UInt8] {
    [0x1B, UInt8(index & 0xFF), UInt8(index >> 8)] + Array(repeating: 0x55, count: size - 3)
  }

  /// More than a socket's buffer holds (made small, `shrinkBuffers`), so the peer must read
  /// before the last can leave.
  static let count = 2_000

  /// Gives the link's socket a small send buffer, and the peer's (unless `tcp`) a small
  /// receive buffer, so a few kilobytes fill them. (A TCP receiver whose buffer is smaller
  /// than a segment never opens its window again.)
  static func shrinkBuffers(_ bearer: SocketBearer, _ raw: RawSocket, tcp: Bool = false) {
    // The kernel doubles it, and makes it at least its minimum (4608 bytes on Linux).
    var size: Int32 = 2048
    let length = socklen_t(MemoryLayout<Int32>.size)
    #expect(setsockopt(bearer.core.descriptor.fd, SOL_SOCKET, SO_SNDBUF, &size, length) == 0)
    if !tcp { #expect(setsockopt(raw.fd, SOL_SOCKET, SO_RCVBUF, &size, length) == 0) }
  }

  /// A message link with small buffers to a raw peer, sent `count` PDUs the peer has not
  /// read: they no longer fit, and some wait in the link's backlog. (Blocked in the kernel
  /// before the backlog: the tests ran into their time limits.)
  static func backloggedPair() async throws -> (SocketBearer, RawSocket) {
    let (bearer, raw) = try RawSocket.seqpacketPair()
    shrinkBuffers(bearer, raw)
    for index in 0..<count { try bearer.send(pdu(index)) }
    #expect(await bearer.core.backlogBytes > 0)
    return (bearer, raw)
  }

  @Test("a message link to a peer that does not read queues what the socket cannot take, then sends it in order")
  func messagesInOrder() async throws {
    let (bearer, raw) = try await Self.backloggedPair()
    defer { bearer.close() }
    let messages = await raw.readMessages(Self.count)
    #expect(messages == (0..<Self.count).map { [LinkFraming.attChannel] + Self.pdu($0) })
  }

  /// The two byte-stream links: TCP, and a Unix stream pair (whose writes the kernel cuts
  /// into pieces of half its buffer, so a frame may be written in part: `partialWrite`).
  enum Stream: String, CaseIterable, Sendable {
    case tcp
    case unix

    func open() async throws -> (SocketBearer, RawSocket, TCPListener?) {
      switch self {
      case .tcp:
        let listener = try TCPListener(on: testLoop)
        async let accepted = listener.accept()
        let raw = try await RawSocket.tcp(port: listener.port)
        return (try await accepted, raw, listener)
      case .unix:
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #expect(socketpair(AF_UNIX, type, 0, &fds) == 0)
        let bearer = try SocketCore.start(
          fd: fds[0], framing: .stream, name: "raw-stream", pairing: .accept(upTo: .authenticated), on: testLoop)
        return (bearer, RawSocket(fd: fds[1]), nil)
      }
    }
  }

  @Test(
    "a byte stream to a peer that does not read queues the rest of a frame and what follows, then sends it in order",
    arguments: Stream.allCases)
  func streamInOrder(stream: Stream) async throws {
    let (bearer, raw, listener) = try await stream.open()
    defer {
      bearer.close()
      listener?.close()
    }
    Self.shrinkBuffers(bearer, raw, tcp: stream == .tcp)
    // Frames larger than the pieces a Unix stream writes, read in smaller pieces still, so
    // that room comes piece by piece and a frame is sometimes written in part.
    let pdus = (0..<Self.count).map { Self.pdu($0, size: 4000) }
    for pdu in pdus { try bearer.send(pdu) }
    #expect(await bearer.core.backlogBytes > 0)
    let expected = pdus.flatMap { pdu in
      [UInt8(truncatingIfNeeded: pdu.count + 1), UInt8((pdu.count + 1) >> 8), LinkFraming.attChannel] + pdu
    }
    let bytes = await raw.readStream(expected.count, piece: 1000)
    #expect(bytes.count == expected.count)
    #expect(bytes == expected)
  }

  @Test(
    "a thread's writes leave in the order it made them while an earlier one is on its way to the loop, whichever thread makes the next"
  )
  func onTheWayKeepsOrder() async throws {
    // A loop of its own, held by a job while the writes are made, and shut down however
    // the test ends.
    let loop = EventLoop()
    let held = HeldLoop()
    do {
      try await Self.keepsOrder(on: loop, held: held)
    } catch {
      Issue.record(error)
    }
    held.release()
    try await loop.shutdown()
  }

  private static func keepsOrder(on loop: EventLoop, held: HeldLoop) async throws {
    var fds: [Int32] = [-1, -1]
    #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
    let bearer = try SocketCore.start(fd: fds[0], framing: .messages, name: "held", pairing: .reject, on: loop)
    defer { bearer.close() }
    let raw = RawSocket(fd: fds[1])
    shrinkBuffers(bearer, raw)
    loop.execute { held.hold() }
    defer { held.release() }
    // Written at once from this thread until the socket is full: that write goes to the loop.
    var sent = 0
    while bearer.core.writesOnTheWay == 0, !Task.isCancelled {
      try bearer.send(pdu(sent))
      sent += 1
    }
    // The peer takes everything the socket held: it has room again. The next write must
    // still follow the one on its way, not go ahead of it.
    var read: [[UInt8]] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(raw.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
      if count <= 0 { break }
      read.append(Array(buffer[0..<count]))
    }
    #expect(read.count == sent - 1)
    try bearer.send(pdu(sent))
    #expect(bearer.core.writesOnTheWay == 2)
    // Then the loop's own write, made in the job that held it (as an actor on the loop that
    // this thread called next would make it): still after the two on their way.
    let next = sent + 1
    held.release { _ = try? bearer.send(pdu(next)) }
    read += await raw.readMessages(3)
    #expect(read == (0...next).map { [LinkFraming.attChannel] + pdu($0) })
  }

  @Test("a close from another thread with nothing waiting is seen by the peer at once, however busy the loop")
  func closeWhileTheLoopIsBusy() async throws {
    let loop = EventLoop()
    let held = HeldLoop()
    var fds: [Int32] = [-1, -1]
    #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
    let raw = RawSocket(fd: fds[1])
    do {
      let bearer = try SocketCore.start(fd: fds[0], framing: .messages, name: "busy", pairing: .reject, on: loop)
      try bearer.send([0x1B, 0x01, 0x00])
      loop.execute { held.hold() }
      bearer.close()
      // The loop is held: the end came from this thread.
      let fd = raw.fd
      let ended = await runBlocking { () -> Bool in
        var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poll, 1, Int32(10_000 * testTimeScale)) == 1 else { return false }
        var buffer = [UInt8](repeating: 0, count: 64)
        let first = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        let second = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        // What was sent before the close, then the end.
        return first == 4 && second == 0
      }
      #expect(ended)
    } catch {
      Issue.record(error)
    }
    held.release()
    try await loop.shutdown()
  }

  @Test("a peer that does not read never stalls the loop: its other links go on")
  func theLoopGoesOn() async throws {
    let (stuck, raw) = try RawSocket.seqpacketPair()
    defer { stuck.close() }
    Self.shrinkBuffers(stuck, raw)
    let ends = try await LinkKind.unixPair.open()
    defer { ends.close() }
    // On the loop's thread: a blocking write there would stall every link on the loop.
    let sent = try await Task(executorPreference: testLoop) {
      #expect(testLoop.inEventLoop)
      for index in 0..<Self.count { try stuck.send(Self.pdu(index)) }
      return await stuck.core.backlogBytes
    }.value
    #expect(sent > 0)
    // The loop still reads the other link.
    try ends.a.send([0x0A, 0x03, 0x00])
    #expect(try await ends.b.receive() == [0x0A, 0x03, 0x00])
    withExtendedLifetime(raw) {}
  }

  @Test("the backlog gives back what a socket did not take, from where a partial write stopped")
  func backlogParts() {
    var backlog = Backlog()
    #expect(backlog.isEmpty)
    backlog.append([1, 2, 3, 4][2...])
    backlog.append([5, 6, 7])
    backlog.append([8])
    #expect(backlog.bytes == 6)
    #expect(backlog.first.map(Array.init) == [3, 4])
    // The socket took one byte of the first, then the rest of it, then two of the next.
    backlog.removeFirst(1)
    #expect(backlog.first.map(Array.init) == [4])
    backlog.removeFirst(1)
    #expect(backlog.first.map(Array.init) == [5, 6, 7])
    backlog.removeFirst(2)
    #expect(backlog.first.map(Array.init) == [7])
    #expect(backlog.bytes == 2)
    backlog.removeFirst(1)
    backlog.removeFirst(1)
    #expect(backlog.isEmpty)
    #expect(backlog.bytes == 0)
  }

  @Test("a frame the socket takes in part is finished from where it stopped, before what follows")
  func partialWrite() async throws {
    let (bearer, raw, _) = try await Stream.unix.open()
    defer { bearer.close() }
    Self.shrinkBuffers(bearer, raw)
    // On Linux a Unix stream with the smallest send buffer (4608 bytes) writes in pieces of
    // 2240 and takes a piece while less than the buffer is in flight: the first frame goes
    // whole (two pieces); once the peer has read one piece, the second frame gets one piece
    // in and the rest waits.
    let frames = (1...2).map { Self.pdu($0, size: 4000) }
    try bearer.send(frames[0])
    #expect(await bearer.core.backlogBytes == 0)
    let framed = frames.map { pdu in
      [UInt8(truncatingIfNeeded: pdu.count + 1), UInt8((pdu.count + 1) >> 8), LinkFraming.attChannel] + pdu
    }
    let first = await raw.readStream(2240, piece: 2240)
    try bearer.send(frames[1])
    let waiting = await bearer.core.backlogBytes
    #expect(waiting > 0 && waiting < framed[1].count, "the second frame was written in part")
    let rest = await raw.readStream(framed[0].count + framed[1].count - first.count, piece: 1000)
    #expect(first + rest == framed[0] + framed[1])
  }

  @Test("a peer that stops reading ends the link once the socket refuses what waits")
  func peerShutsReading() async throws {
    let (bearer, raw) = try await Self.backloggedPair()
    defer { bearer.close() }
    // The peer will read no more and drops what it holds: the socket turns writable, and
    // each write fails (EPIPE). Before, the loop kept coming back to it, and the link stayed.
    #expect(shutdown(raw.fd, Int32(SHUT_RD)) == 0)
    var buffer = [UInt8](repeating: 0, count: 4096)
    while buffer.withUnsafeMutableBytes({ recv(raw.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
    #expect(try await bearer.receive() == nil)
    #expect(!bearer.isConnected)
  }

  @Test("a peer that leaves more than the limit unread is given up")
  func peerNotReading() async throws {
    let (bearer, raw) = try RawSocket.seqpacketPair()
    defer { bearer.close() }
    let pdu = Self.pdu(0, size: 512)
    var sent = 0
    do {
      while sent <= SocketCore.backlogLimit / pdu.count + 1 {
        try bearer.send(pdu)
        sent += 1
      }
      Issue.record("the link took \(sent) PDUs the peer never read")
    } catch {
      #expect(error == .disconnected)
    }
    guard case .peerNotReading(let bytes) = bearer.lastError else {
      Issue.record("fault: \(String(describing: bearer.lastError))")
      return
    }
    #expect(bytes > SocketCore.backlogLimit / 2)
    #expect(!bearer.isConnected)
    // What was queued is dropped with the link.
    #expect(await bearer.core.backlogBytes == 0)
    withExtendedLifetime(raw) {}
  }
}

extension RawSocket {
  /// `count` bytes from a stream, read `piece` bytes at a time on one thread of their own
  /// (fewer only at end of file).
  func readStream(_ count: Int, piece: Int) async -> [UInt8] {
    let fd = self.fd
    return await runBlocking {
      var buffer = [UInt8](repeating: 0, count: piece)
      var bytes: [UInt8] = []
      while bytes.count < count {
        let read = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if read <= 0 { break }
        bytes += buffer[0..<read]
      }
      return bytes
    }
  }

  /// `count` messages from a seqpacket socket, read on one thread of their own.
  func readMessages(_ count: Int) async -> [[UInt8]] {
    let fd = self.fd
    return await runBlocking {
      var buffer = [UInt8](repeating: 0, count: 65536)
      var messages: [[UInt8]] = []
      while messages.count < count {
        let read = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if read <= 0 { break }
        messages.append(Array(buffer[0..<read]))
      }
      return messages
    }
  }
}

/// Holds an event loop's thread in a job until released, then runs what the release gave,
/// in the same job.
final class HeldLoop: Sendable {
  private let held = Atomic<Bool>(true)
  private let then = Mutex<(@Sendable () -> Void)?>(nil)

  func hold() {
    while held.load(ordering: .acquiring) { sched_yield() }
    then.withLock { $0 }?()
  }

  func release(then: (@Sendable () -> Void)? = nil) {
    if let then { self.then.withLock { $0 = then } }
    held.store(false, ordering: .releasing)
  }
}
