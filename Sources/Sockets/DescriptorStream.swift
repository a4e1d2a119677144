import Glibc
import Links
import Runtime
import Wire

/// A byte stream over a file descriptor, for protocols that do their own framing: the H4
/// packets of a Bluetooth controller over TCP (a virtual controller such as Bumble's
/// `tcp-server`), over a serial port (a UART controller), or over the Linux HCI user channel
/// (a socket that delivers one packet per read). A reader thread waits in poll(2) and takes
/// what arrives; writes go out at once, whole, in order.
public final class DescriptorStream: Sendable {
  /// How the descriptor was opened, as the user named the transport
  /// ("hci-tcp:127.0.0.1:9001", "hci-uart:/dev/ttyACM0").
  public let name: String
  private let descriptor: OwnedFD
  private let isSocket: Bool
  private let wake: WakePipe
  private let chunks = Inbox<[UInt8]>()
  private let fault = Locked<LinkFault?>(nil)
  private let writing = Locked(())

  /// Takes over `fd` (closed when the stream is released) and starts its reader thread.
  /// Errors name the stream as `name`.
  public init(adopting fd: Int32, name: String) throws(LinkError) {
    descriptor = OwnedFD(fd)
    self.name = name
    var status = stat()
    isSocket = fstat(fd, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
    do {
      wake = try WakePipe()
    } catch {
      throw LinkError(address: name, kind: .system(errno: error.code), detail: "cannot make a pipe")
    }
    guard spawnThread({ [self] in readLoop() }) else {
      throw LinkError(address: name, kind: .system(errno: EAGAIN), detail: "cannot start the reader thread")
    }
  }

  /// Connects to HOST:PORT over TCP (TCP_NODELAY); `name` is used in errors and logs.
  public static func connect(host: String, port: UInt16, name: String) async throws(LinkError) -> DescriptorStream {
    let refused = LinkError(
      address: name, kind: .connectionRefused, detail: "connection refused",
      advice: "is the virtual controller (e.g. Bumble's tcp-server) running?")
    let fd = try await connectedTCPSocket(host: host, port: port, address: name, refused: refused)
    return try DescriptorStream(adopting: fd, name: name)
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
  public static func openSerial(path: String, baud: Int, name: String) throws(LinkError) -> DescriptorStream {
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
    // Blocking reads that return whatever has arrived (at least one byte).
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
    return try DescriptorStream(adopting: fd, name: name)
  }

  /// The next bytes received; nil at the end of the stream (or when the waiting task is
  /// cancelled). Throws the fault that ended the stream, once what came before is read.
  public func read() async throws(LinkFault) -> [UInt8]? {
    if let chunk = await chunks.next() { return chunk }
    if let fault = fault.withLock({ $0 }) { throw fault }
    return nil
  }

  /// Writes all of `bytes` (a socket with MSG_NOSIGNAL: a closed peer is EPIPE, not SIGPIPE).
  /// On the HCI user channel one write must be one whole packet, which this is when `bytes`
  /// is one packet.
  public func write(_ bytes: [UInt8]) async throws(LinkFault) {
    let fd = descriptor.fd
    let isSocket = isSocket
    let code = writing.withLock { _ in
      bytes.withUnsafeBytes { raw -> Int32 in
        var offset = 0
        while offset < raw.count {
          guard let base = raw.baseAddress else { return 0 }
          let written =
            isSocket
            ? Glibc.send(fd, base + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            : Glibc.write(fd, base + offset, raw.count - offset)
          if written < 0 {
            if errno == EINTR { continue }
            return errno
          }
          offset += written
        }
        return 0
      }
    }
    switch code {
    case 0: return
    case EPIPE, ECONNRESET: throw .connectionReset
    default: throw .io("write: \(errnoText(code))")
    }
  }

  /// Ends the stream: the reader thread stops, `read` then returns nil, and the descriptor is
  /// closed once nothing uses it.
  public func close() {
    if isSocket { descriptor.shutdown() }
    wake.wake()
  }

  private func readLoop() {
    var buffer = [UInt8](repeating: 0, count: 4096)
    let fd = descriptor.fd
    while true {
      switch wake.wait(for: fd, events: Int32(POLLIN)) {
      case .woken:
        chunks.close()
        return
      case .failed(let code):
        fault.withLock { $0 = .io("poll: \(errnoText(code))") }
        chunks.close()
        return
      case .ready: break
      }
      let count = buffer.withUnsafeMutableBytes { raw in Glibc.read(fd, raw.baseAddress, raw.count) }
      if count > 0 {
        chunks.push(Array(buffer[0..<count]))
        continue
      }
      if count < 0 {
        let code = errno
        if code == EINTR || code == EAGAIN { continue }
        fault.withLock {
          switch code {
          case ECONNRESET: $0 = .connectionReset
          // A serial device unplugged, or the far end of a pseudo-terminal closed.
          case EIO, ENODEV, ENXIO: $0 = .io("the device went away (\(errnoText(code)))")
          default: $0 = .io("read: \(errnoText(code))")
          }
        }
      }
      chunks.close()
      return
    }
  }
}
