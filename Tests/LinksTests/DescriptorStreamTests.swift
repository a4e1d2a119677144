import Glibc
import Runtime
import TestSupport
import Testing

@testable import Links
@testable import Sockets

/// A byte stream to a controller (`DescriptorStream`) is read and written by an event loop,
/// as socket links are: a serial port (here a pseudo-terminal, which read(2) reads and
/// recv(2) cannot), a socket byte stream (hci-tcp), and a packet socket (the HCI user
/// channel, one write one packet).
@Suite("A controller's byte stream on the event loop", .timeLimit(scaledMinutes(1)))
struct DescriptorStreamTests {
  enum Kind: String, CaseIterable, Sendable {
    case serial
    case stream
    case packets
  }

  /// What a stream's receiver was handed, for the test to await: each chunk, then nil
  /// at the end (whose fault is kept).
  final class Received: Sendable {
    let chunks = Inbox<[UInt8]>()
    let fault = Locked<LinkFault?>(nil)
    /// Each call's thread was the loop's.
    let onLoop = Locked(true)

    func take(_ event: DescriptorStream.Event) {
      onLoop.withLock { $0 = $0 && testLoop.inEventLoop }
      switch event {
      case .bytes(let chunk): chunks.push(chunk)
      case .ended(let fault):
        self.fault.withLock { $0 = fault }
        chunks.close()
      }
    }
  }

  /// A stream of `kind` read by the test loop, and the descriptor of its far end (the
  /// controller's side), left blocking for the test to read.
  static func open(_ kind: Kind) throws -> (DescriptorStream, Int32) {
    switch kind {
    case .serial:
      // posix_openpt and ptsname are not in Swift's Glibc module; these are what they do
      // (TIOCSPTLCK and TIOCGPTN, _IOW('T', 0x31, int) and _IOR('T', 0x30, unsigned int)).
      let master = Glibc.open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
      var unlock: Int32 = 0
      var number: UInt32 = 0
      #expect(master >= 0 && ioctl(master, 0x4004_5431, &unlock) == 0 && ioctl(master, 0x8004_5430, &number) == 0)
      let path = "/dev/pts/\(number)"
      // As `hci-uart:` opens it: raw, 115200 baud, RTS/CTS (which a pseudo-terminal ignores).
      return (try DescriptorStream.openSerial(path: path, baud: 115_200, name: "pty", on: testLoop), master)
    case .stream, .packets:
      var fds: [Int32] = [-1, -1]
      let type = Int32(kind == .stream ? SOCK_STREAM.rawValue : SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
      #expect(socketpair(AF_UNIX, type, 0, &fds) == 0)
      // A small send buffer (the kernel makes it at least its minimum), so a few kilobytes
      // fill it whatever the machine's default.
      var size: Int32 = 2048
      #expect(setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) == 0)
      let stream = DescriptorStream(
        adopting: fds[0], name: kind.rawValue, wholeWrites: kind == .packets, on: testLoop)
      return (stream, fds[1])
    }
  }

  /// One read(2) of the far end, off the shared threads: [] at its end (or an error).
  static func readFar(_ fd: Int32) async -> [UInt8] {
    await runBlocking {
      var buffer = [UInt8](repeating: 0, count: 65536)
      let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      return count > 0 ? Array(buffer[0..<count]) : []
    }
  }

  /// The packet `index` of `size` bytes.
  static func packet(_ index: Int, size: Int = 1000) -> [UInt8] {
    [UInt8(index & 0xFF), UInt8(index >> 8)] + Array(repeating: 0xA5, count: size - 2)
  }

  @Test(
    "what the controller sends reaches read(), and writes to a controller that does not read never block",
    arguments: Kind.allCases)
  func bothWays(_ kind: Kind) async throws {
    let (stream, far) = try Self.open(kind)
    let received = Received()
    try stream.start(received.take)
    defer {
      stream.close()
      Glibc.close(far)
    }
    _ = ([0x04, 0x0E, 0x01] as [UInt8]).withUnsafeBytes { Glibc.write(far, $0.baseAddress, $0.count) }
    #expect(await received.chunks.next() == [0x04, 0x0E, 0x01])
    #expect(received.onLoop.withLock { $0 })
    // Far more than the descriptor's buffer takes, while nobody reads: before the loop wrote
    // it, the write blocked its thread (into the time limit).
    // Written on a thread of their own, so that a write that blocks fails the test by its
    // time limit instead of holding one of the few shared threads.
    let count = 600
    let written = await runBlocking { () -> Bool in
      (0..<count).allSatisfy { (try? stream.write(Self.packet($0))) != nil }
    }
    #expect(written)
    #expect(await stream.backlogBytes > 0)
    var taken: [UInt8] = []
    while taken.count < count * 1000 {
      let more = await Self.readFar(far)
      if more.isEmpty { break }
      // One read, one packet, on the packet socket: each write went whole.
      if kind == .packets { #expect(more.count == 1000) }
      taken += more
    }
    #expect(taken == (0..<count).flatMap { Self.packet($0) })
    #expect(await stream.backlogBytes == 0)
  }

  @Test(
    "closing the stream takes its descriptor out of the loop, and the controller's side sees it closed",
    arguments: Kind.allCases)
  func closeReleasesTheDescriptor(_ kind: Kind) async throws {
    let far: Int32
    weak var watched: DescriptorStream?
    let received = Received()
    do {
      let (stream, other) = try Self.open(kind)
      (far, watched) = (other, stream)
      try stream.start(received.take)
      stream.close()
    }
    defer { Glibc.close(far) }
    // The loop held it: a serial port closed by this side never reads as ended, so the loop
    // lets go when told (`unregister`), and only then does the descriptor close.
    let hungUp = await runBlocking { () -> Bool in
      var poll = pollfd(fd: far, events: Int16(POLLIN), revents: 0)
      return Glibc.poll(&poll, 1, 10_000) == 1 && poll.revents & Int16(POLLHUP) != 0
    }
    #expect(hungUp)
    // The serial port's hang-up means its descriptor closed: the stream is gone. (A socket
    // is shut down on the loop before it lets go, so its peer may see the end first.)
    if kind == .serial { #expect(watched == nil) }
    // The receiver was told, on the loop, of a clean end.
    #expect(await received.chunks.next() == nil)
    #expect(received.fault.withLock { $0 } == nil)
    #expect(received.onLoop.withLock { $0 })
  }

  @Test("a serial device that goes away ends the stream, and a write then fails")
  func deviceGoneAway() async throws {
    let (stream, far) = try Self.open(.serial)
    let received = Received()
    try stream.start(received.take)
    defer { stream.close() }
    // The terminal hangs up, as an unplugged USB serial device does: a read then returns 0
    // (the end), or EIO if the loop reads in the moment before the hang-up.
    Glibc.close(far)
    #expect(await received.chunks.next() == nil)
    let gone = LinkFault.io("the device went away (Input/output error)")
    let fault = received.fault.withLock { $0 }
    #expect(fault == nil || fault == gone)
    #expect(throws: fault ?? .io("the stream has ended")) { try stream.write([0x01]) }
  }

  @Test("a loop that is shut down ends the streams it reads, telling each receiver on its thread")
  func loopShutDown() async throws {
    let loop = EventLoop()
    var fds: [Int32] = [-1, -1]
    #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
    defer { Glibc.close(fds[1]) }
    let stream = DescriptorStream(adopting: fds[0], name: "shut", on: loop)
    let ended = Locked<(fault: LinkFault?, onLoop: Bool)?>(nil)
    try stream.start { event in
      if case .ended(let fault) = event { ended.withLock { $0 = (fault, loop.inEventLoop) } }
    }
    try await loop.shutdown()
    let told = ended.withLock { $0 }
    #expect(told?.fault == .io("its event loop was shut down"))
    #expect(told?.onLoop == true)
    #expect(throws: LinkFault.io("its event loop was shut down")) { try stream.write([0x01]) }
  }
}
