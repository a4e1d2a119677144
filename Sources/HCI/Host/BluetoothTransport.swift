import ATT
import CBluetooth
import Glibc
import Links
import Runtime
import Sockets
import Wire

/// A real-Bluetooth transport, chosen by name (DESIGN.md "Addresses and transports",
/// Protocol/HCI.md "Transports").
public enum BluetoothTransport: Hashable, Sendable, CustomStringConvertible {
  /// `hci-tcp:HOST:PORT`: H4 packets over TCP to a virtual controller (Bumble's tcp-server).
  case hciTCP(host: String, port: UInt16)
  /// `hci-uart:DEV[,BAUD]`: H4 packets over a serial port, to a controller running HCI-over-UART
  /// firmware (RTS/CTS flow control; default 1,000,000 baud, as Zephyr's hci_uart uses).
  case hciUART(path: String, baud: Int)
  /// `hci-user:N`: the Linux HCI user channel of controller hciN, through libbluetooth: this
  /// host has the controller to itself (BlueZ must leave it down).
  case hciUser(index: UInt16)
  /// `l2cap:hciN`: the Linux kernel's own Bluetooth host on controller hciN: an LE L2CAP socket
  /// on the ATT channel (CID 4); the kernel pairs (BT_SECURITY) and keeps the bonds.
  case l2cap(index: UInt16)

  /// Every name a user may write, for error messages.
  public static let forms = ["hci-tcp:HOST:PORT", "hci-uart:DEV[,BAUD]", "hci-user:N", "l2cap:hciN"]
  /// What works on a machine whose kernel has no Bluetooth.
  public static let formsWithoutKernelBluetooth =
    "hci-tcp:HOST:PORT with a virtual controller, or hci-uart:DEV[,BAUD] with a controller on a serial port"
  public static let defaultBaud = 1_000_000

  /// Parses a transport name; an unknown or malformed one fails with one line that says what
  /// to write.
  public init(parsing text: String) throws(LinkError) {
    let (scheme, rest) =
      text.firstIndex(of: ":").map { (String(text[..<$0]), String(text[text.index(after: $0)...])) } ?? (text, "")
    func invalid(_ detail: String, _ advice: String) -> LinkError {
      LinkError(address: text, kind: .invalidAddress, detail: detail, advice: advice)
    }
    switch scheme {
    case "hci-tcp":
      guard let colon = rest.lastIndex(of: ":") else { throw invalid("missing port", "write hci-tcp:HOST:PORT") }
      var host = String(rest[..<colon])
      if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
      guard let port = UInt16(rest[rest.index(after: colon)...]), port != 0 else {
        throw invalid("the port must be a number from 1 to 65535", "write hci-tcp:HOST:PORT")
      }
      self = .hciTCP(host: host.isEmpty ? "127.0.0.1" : host, port: port)
    case "hci-uart":
      let parts = rest.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
      guard let path = parts.first, !path.isEmpty, parts.count <= 2 else {
        throw invalid(
          "expected a device and an optional speed", "write hci-uart:/dev/ttyACM0 or hci-uart:/dev/ttyUSB0,115200")
      }
      var baud = Self.defaultBaud
      if parts.count == 2 {
        guard let speed = Int(parts[1]), DescriptorStream.serialSpeeds[speed] != nil else {
          let speeds = DescriptorStream.serialSpeeds.keys.sorted().map(String.init).joined(separator: ", ")
          throw invalid("unsupported speed '\(parts[1])'", "use one of \(speeds)")
        }
        baud = speed
      }
      self = .hciUART(path: path, baud: baud)
    case "hci-user":
      guard let index = Self.controllerIndex(rest) else {
        throw invalid("expected a controller number", "write hci-user:0 for hci0; btmgmt info lists the controllers")
      }
      self = .hciUser(index: index)
    case "l2cap":
      guard let index = Self.controllerIndex(rest) else {
        throw invalid("expected a controller name", "write l2cap:hci0; btmgmt info lists the controllers")
      }
      self = .l2cap(index: index)
    default:
      throw LinkError(
        address: text, kind: .unknownTransport, detail: "unknown Bluetooth transport",
        advice: "use one of \(Self.forms.joined(separator: ", "))")
    }
  }

  /// "0", "hci0" -> 0.
  private static func controllerIndex(_ text: String) -> UInt16? {
    let digits = text.hasPrefix("hci") ? String(text.dropFirst(3)) : text
    guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let index = UInt16(digits), index < 0xFFFF else { return nil }
    return index
  }

  public var description: String {
    switch self {
    case .hciTCP(let host, let port): return "hci-tcp:\(host.contains(":") ? "[\(host)]" : host):\(port)"
    case .hciUART(let path, let baud): return "hci-uart:\(path),\(baud)"
    case .hciUser(let index): return "hci-user:\(index)"
    case .l2cap(let index): return "l2cap:hci\(index)"
    }
  }

  /// Opens the byte stream to the controller, read by `loop`.
  func openStream(on loop: EventLoop) async throws(LinkError) -> DescriptorStream {
    switch self {
    case .hciTCP(let host, let port):
      return try await DescriptorStream.connect(host: host, port: port, name: description, on: loop)
    case .hciUART(let path, let baud):
      return try DescriptorStream.openSerial(path: path, baud: baud, name: description, on: loop)
    case .hciUser(let index):
      // One write, one packet.
      return try DescriptorStream(
        adopting: try Self.openUserChannel(index), name: description, wholeWrites: true, on: loop)
    case .l2cap:
      throw LinkError(
        address: description, kind: .invalidAddress, detail: "the kernel is the host here, not this program",
        advice: "open it with KernelL2CAP")
    }
  }

  /// A socket on the HCI user channel of hciN (Linux 3.19+, CAP_NET_ADMIN): every read is one
  /// H4 packet from the controller, every write one to it, and nothing else uses the controller.
  static func openUserChannel(_ index: UInt16) throws(LinkError) -> Int32 {
    let name = "hci-user:\(index)"
    let fd = try bluetoothSocket(type: Int32(SOCK_RAW.rawValue), protocol: BTPROTO_HCI, name: name)
    var address = sockaddr_hci()
    address.hci_family = sa_family_t(AF_BLUETOOTH)
    address.hci_dev = index
    address.hci_channel = UInt16(HCI_CHANNEL_USER)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
      }
    }
    guard bound == 0 else {
      let code = errno
      Glibc.close(fd)
      throw LinkError(
        "cannot bind the HCI user channel", failedWith: code, at: name,
        meanings: [
          ErrnoMeaning([ENODEV], .noSuchPath, "no controller hci\(index)", advice: "btmgmt info lists the controllers"),
          ErrnoMeaning(
            [EBUSY, EALREADY], .addressInUse, "hci\(index) is up and in use by the kernel's host",
            advice: "power it down first: sudo btmgmt --index \(index) power off"),
          ErrnoMeaning(
            [EPERM, EACCES], .permissionDenied, "the HCI user channel needs CAP_NET_ADMIN",
            advice: "run as root, or once: sudo setcap cap_net_admin+ep \"$(command -v ancs)\""),
        ])
    }
    return fd
  }

  /// socket(AF_BLUETOOTH, type, protocol), close-on-exec. A kernel without Bluetooth (no
  /// AF_BLUETOOTH: EAFNOSUPPORT, as in most containers and virtual machines) fails with one
  /// line that names the transports that need no kernel support.
  static func bluetoothSocket(type: Int32, protocol: Int32, name: String) throws(LinkError) -> Int32 {
    let fd = socket(AF_BLUETOOTH, type | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
    if fd >= 0 { return fd }
    let code = errno
    switch code {
    case EAFNOSUPPORT, EPROTONOSUPPORT, ESOCKTNOSUPPORT:
      throw LinkError(
        address: name, kind: .unavailableTransport,
        detail: "this machine's kernel has no Bluetooth sockets: \(errnoText(code))",
        advice: "use \(formsWithoutKernelBluetooth); hci-user and l2cap need a kernel with Bluetooth")
    case EPERM, EACCES:
      throw LinkError(
        address: name, kind: .permissionDenied, detail: "Bluetooth sockets are not allowed here: \(errnoText(code))",
        advice: "run as root, or grant CAP_NET_RAW and CAP_NET_ADMIN")
    default:
      throw LinkError(
        address: name, kind: .system(errno: code), detail: "cannot open a Bluetooth socket: \(errnoText(code))")
    }
  }
}

extension HCIHost {
  /// Opens `transport`, starts a host on it and sets the controller up (`setUp()`); what the
  /// CLI's `--bluetooth TRANSPORT` calls for a controller. With `capturePath`, every HCI packet
  /// is recorded in a btsnoop file (H4 datalink) that Wireshark and btmon read.
  /// `randomAddress` keeps the address of an earlier run, so a peer finds its bond again
  /// (default: a fresh one). `loop` reads (and writes) the controller's descriptor.
  public static func open(
    transport: BluetoothTransport, on loop: EventLoop, clock: any EngineClock = SystemClock(),
    options: Options = Options(),
    logger: Logger = .none, capturePath: String? = nil, security: any HCISecurityManager = PairingNotSupported(),
    randomAddress: BDAddress? = nil
  ) async throws(HCIHostError) -> (HCIHost, ControllerSetup) {
    let stream: DescriptorStream
    let capture: BtsnoopWriter?
    do {
      // Written record by record, so `ancs inspect --follow` and btmon can read it as it grows.
      capture = try capturePath.map { path throws(LinkError) in try BtsnoopWriter(path: path, live: true) }
      stream = try await transport.openStream(on: loop)
    } catch {
      throw .transport(error)
    }
    let host = HCIHost(
      stream: stream, clock: clock, options: options, logger: logger, capture: capture, security: security)
    do {
      return (host, try await host.setUp(randomAddress: randomAddress))
    } catch {
      host.close()
      throw error
    }
  }
}
