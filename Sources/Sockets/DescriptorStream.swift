import Glibc
import Links
import Runtime
import Synchronization
import Wire

/// A byte stream over a file descriptor, for protocols that do their own framing: the H4
/// packets of a Bluetooth controller over TCP (a virtual controller such as Bumble's
/// `tcp-server`), over a serial port (a UART controller), or over the Linux HCI user channel
/// (a socket that delivers one packet per read). Once started, the `EventLoop` it was given
/// reads it whenever it is readable, as it reads socket links, and hands what it read to the
/// stream's receiver in place, on the loop's thread. Writes never block (`LoopDescriptor`):
/// what the descriptor cannot take waits, in order, and the loop sends it on.
public final class DescriptorStream: LoopDescriptor, @unchecked Sendable {
  /// What the receiver is handed: bytes as they arrived (with no relation to packet
  /// boundaries, except on the HCI user channel), then the end, once.
  public enum Event: Sendable {
    case bytes([UInt8])
    /// The stream ended: closed by either side (nil), or broken.
    case ended(LinkFault?)
  }

  /// How the descriptor was opened, as the user named the transport
  /// ("hci-tcp:127.0.0.1:9001", "hci-uart:/dev/ttyACM0").
  public let name: String
  /// Set once by `start` before the loop watches the descriptor, then called and finally let
  /// go on the loop's thread only.
  nonisolated(unsafe) private var receiver: (@Sendable (Event) -> Void)?
  private let state = Locked<(closed: Bool, fault: LinkFault?)>((false, nil))
  /// `state.closed`, readable without the lock.
  private let down = Atomic<Bool>(false)

  /// Takes over `fd` (closed when the stream ends and is released) and makes it
  /// non-blocking; `start` has the loop read it. Errors and logs name the stream `name`.
  /// - Parameter wholeWrites: each write is one packet, which the descriptor takes whole
  ///   (the HCI user channel).
  public init(adopting fd: Int32, name: String, wholeWrites: Bool = false, on loop: EventLoop) {
    self.name = name
    let flags = fcntl(fd, F_GETFL)
    if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    super.init(fd: fd, wholeWrites: wholeWrites, loop: loop)
  }

  /// Has the loop read the descriptor from now on: `receiver` gets what arrives, in order, on
  /// the loop's thread, one call at a time, and then the end, once (`Event.ended`); it is let
  /// go after that. Call it once. Fails when the loop cannot watch the descriptor (ESHUTDOWN
  /// once the loop has been shut down).
  public func start(_ receiver: @escaping @Sendable (Event) -> Void) throws(LinkError) {
    precondition(self.receiver == nil, "DescriptorStream.start was called twice")
    if isClosed {
      throw LinkError(address: name, kind: .system(errno: EBADF), detail: "the stream was closed before it started")
    }
    self.receiver = receiver
    guard loop.register(self) else {
      let code = errno
      self.receiver = nil
      throw LinkError(
        address: name, kind: .system(errno: code), detail: "cannot watch the descriptor: \(errnoText(code))")
    }
  }

  /// Connects to HOST:PORT over TCP (TCP_NODELAY); `name` is used in errors and logs.
  public static func connect(
    host: String, port: UInt16, name: String, on loop: EventLoop
  ) async throws(LinkError) -> DescriptorStream {
    let refused = LinkError(
      address: name, kind: .connectionRefused, detail: "connection refused",
      advice: "is the virtual controller (e.g. Bumble's tcp-server) running?")
    let fd = try await connectedTCPSocket(host: host, port: port, address: name, refused: refused)
    return DescriptorStream(adopting: fd, name: name, on: loop)
  }

  /// The speeds a serial port can be set to, in bits per second.
  public static let serialSpeeds: [Int: speed_t] = [
    9600: speed_t(B9600), 19200: speed_t(B19200), 38400: speed_t(B38400), 57600: speed_t(B57600),
    115200: speed_t(B115200), 230400: speed_t(B230400), 460800: speed_t(B460800), 500000: speed_t(B500000),
    921600: speed_t(B921600), 1_000_000: speed_t(B1000000), 1_500_000: speed_t(B1500000),
    2_000_000: speed_t(B2000000), 3_000_000: speed_t(B3000000), 4_000_000: speed_t(B4000000),
  ]

  /// Opens a serial port for H4 (Vol 4 Part A): raw mode, 8 data bits, no parity, one stop
  /// bit, `baud` bits per second, and RTS/CTS hardware flow control, which the UART transport
  /// requires. `baud` must be a key of `serialSpeeds`.
  public static func openSerial(
    path: String, baud: Int, name: String, on loop: EventLoop
  ) throws(LinkError) -> DescriptorStream {
    let fd = Glibc.open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard fd >= 0 else {
      let code = errno
      throw LinkError(
        "cannot open \(path)", failedWith: code, at: name,
        meanings: [
          ErrnoMeaning(
            [ENOENT, ENODEV, ENXIO], .noSuchPath, "no serial device \(path)",
            advice: "plug the controller in and check its name: ls /dev/ttyACM* /dev/ttyUSB*"),
          ErrnoMeaning(
            [EACCES, EPERM], .permissionDenied, "permission denied on \(path)",
            advice: "add yourself to its group, usually dialout: sudo adduser $USER dialout, and log in again"),
          ErrnoMeaning(
            [EBUSY], .addressInUse, "\(path) is in use",
            advice: "stop what holds it: btattach, hciattach or a serial console"),
        ])
    }
    var settings = termios()
    guard isatty(fd) == 1, tcgetattr(fd, &settings) == 0 else {
      Glibc.close(fd)
      throw LinkError(
        address: name, kind: .notASocket, detail: "\(path) is not a serial device",
        advice: "name the controller's tty, e.g. hci-uart:/dev/ttyACM0")
    }
    guard let speed = serialSpeeds[baud] else {
      Glibc.close(fd)
      throw LinkError(address: name, kind: .invalidAddress, detail: "unsupported speed \(baud)")
    }
    cfmakeraw(&settings)
    settings.c_cflag |= tcflag_t(CLOCAL | CREAD) | tcflag_t(CRTSCTS)
    settings.c_cflag &= ~tcflag_t(CSTOPB | PARENB)
    // Reads that return whatever has arrived: with VMIN 0, a read of a quiet port returns
    // 0, which would read as its end.
    withUnsafeMutableBytes(of: &settings.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }
    cfsetispeed(&settings, speed)
    cfsetospeed(&settings, speed)
    guard tcsetattr(fd, TCSANOW, &settings) == 0 else {
      let code = errno
      Glibc.close(fd)
      throw LinkError(
        address: name, kind: .system(errno: code), detail: "cannot set \(path) to \(baud) baud: \(errnoText(code))")
    }
    // Whatever the controller sent before we opened it is not ours.
    tcflush(fd, TCIOFLUSH)
    return DescriptorStream(adopting: fd, name: name, on: loop)
  }

  /// Writes all of `bytes` after earlier writes, without blocking (the loop sends what the
  /// descriptor cannot take yet). On the HCI user channel one write must be one whole packet,
  /// which this is when `bytes` is one packet. Throws what ended the stream.
  public func write(_ bytes: [UInt8]) throws(LinkFault) {
    if send(bytes) { return }
    throw state.withLock { $0.fault } ?? .io("the stream has ended")
  }

  /// Ends the stream: the loop stops watching the descriptor (the receiver is told, on the
  /// loop's thread, never inside this call), and it is closed once nothing uses it.
  public func close() { disconnect(fault: nil) }

  override package var isClosed: Bool { down.load(ordering: .acquiring) }

  override func disconnect(fault: LinkFault?) {
    let first = state.withLock { state -> Bool in
      if state.closed { return false }
      state.closed = true
      state.fault = fault
      down.store(true, ordering: .releasing)
      return true
    }
    guard first else { return }
    writeWaitingOnce { [self] in
      // A socket's peer sees the end now, not when the descriptor is released.
      if isSocket { descriptor.shutdown() }
      // Taken out by the loop, which then tells the receiver: a serial port closed by this
      // side never reads as ended, and the receiver is never called inside a write or a
      // close (its caller may hold a lock that the receiver takes).
      loop.unregister(self)
    }
  }

  override func didLeave() {
    let receiver = self.receiver.take()
    receiver?(.ended(state.withLock { $0.fault }))
  }

  override func readAvailable(into buffer: inout [UInt8], turns: Int) -> Bool {
    let fd = descriptor.fd
    for _ in 0..<turns {
      if isClosed { return false }
      let count = buffer.withUnsafeMutableBytes { raw in Glibc.read(fd, raw.baseAddress, raw.count) }
      if count > 0 {
        receiver?(.bytes(Array(buffer[0..<count])))
        continue
      }
      if count == 0 {
        disconnect(fault: nil)
        return false
      }
      let code = errno
      if code == EINTR { continue }
      if code == EAGAIN || code == EWOULDBLOCK { return true }
      switch code {
      case ECONNRESET: disconnect(fault: .connectionReset)
      // A serial device unplugged, or the far end of a pseudo-terminal closed.
      case EIO, ENODEV, ENXIO: disconnect(fault: .io("the device went away (\(errnoText(code)))"))
      default: disconnect(fault: .io("read: \(errnoText(code))"))
      }
      return false
    }
    return true
  }
}
