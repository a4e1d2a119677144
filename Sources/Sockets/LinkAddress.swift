import ATT
import Links

/// Something that waits for a peer and hands out one bearer per connection.
public protocol LinkListener: AnyObject, Sendable {
  /// The address as it can be given to the peer's `--connect` ("unix:phone.sock",
  /// "tcp:127.0.0.1:50123", with the actual port).
  var name: String { get }
  /// Waits for the next peer; throws `.listenerClosed` once `close()` was called.
  func accept() async throws(LinkError) -> SocketBearer
  /// Stops listening (idempotent). Links already accepted stay up.
  func close()
}

/// A simulated-link address, as written on the command line:
/// `memory`, `unix:PATH`, `tcp:HOST:PORT` (`tcp::PORT` and `tcp:PORT` mean 127.0.0.1, an
/// IPv6 host goes in brackets: `tcp:[::1]:5000`).
public enum LinkAddress: Hashable, Sendable, CustomStringConvertible {
  /// Both ends in this process (`MemoryLink`).
  case memory
  /// A named SOCK_SEQPACKET socket.
  case unix(path: String)
  /// TCP with length framing.
  case tcp(host: String, port: UInt16)

  /// The transports this build can open, for error messages.
  public static let alternatives = "memory, unix:PATH or tcp:HOST:PORT"

  /// Real-Bluetooth transport names: they go to --bluetooth, not to a simulated link.
  static let bluetoothSchemes = ["hci-tcp", "hci-uart", "hci-user", "l2cap"]

  /// The transports a command between two processes can use, for its error messages.
  public static let socketAlternatives = "unix:PATH or tcp:HOST:PORT"

  /// Parses an address; with `allowingMemory` false (a phone and a watch in two processes),
  /// `memory` is refused and left out of the advice.
  public init(parsing text: String, allowingMemory: Bool = true) throws(LinkError) {
    let alternatives = allowingMemory ? Self.alternatives : Self.socketAlternatives
    if text == "memory" {
      guard allowingMemory else {
        throw LinkError(
          address: text, kind: .unavailableTransport,
          detail: "memory joins a phone and a watch in one process",
          advice: "use 'ancs demo', or \(alternatives) here")
      }
      self = .memory
      return
    }
    if text.isEmpty {
      throw LinkError(
        address: "", kind: .invalidAddress, detail: "no link address given", advice: "use \(alternatives)")
    }
    guard let colon = text.firstIndex(of: ":") else {
      throw LinkError(
        address: text, kind: .unknownTransport, detail: "unknown transport", advice: "use \(alternatives)")
    }
    let scheme = String(text[..<colon])
    let rest = String(text[text.index(after: colon)...])
    switch scheme {
    case "unix":
      if rest.isEmpty || rest.utf8.contains(0) || rest.utf8.count > LinkError.maxUnixPathBytes {
        throw LinkError.unixPathUnusable(rest)
      }
      self = .unix(path: rest)
    case "tcp":
      self = try Self.parseTCP(rest, text: text)
    case "memory":
      throw LinkError(
        address: text, kind: .invalidAddress, detail: "memory takes no argument", advice: "write just memory")
    default:
      if Self.bluetoothSchemes.contains(scheme) {
        throw LinkError(
          address: text, kind: .unavailableTransport,
          detail: "\(scheme): is a Bluetooth transport, not a simulated link",
          advice: "give it to --bluetooth, or use \(alternatives) here")
      }
      throw LinkError(
        address: text, kind: .unknownTransport, detail: "unknown transport \(scheme):",
        advice: "use \(alternatives)")
    }
  }

  private static func parseTCP(_ rest: String, text: String) throws(LinkError) -> LinkAddress {
    let host: String
    let portText: String
    if rest.hasPrefix("[") {
      guard let close = rest.firstIndex(of: "]"), rest[rest.index(after: close)...].hasPrefix(":") else {
        throw LinkError(
          address: text, kind: .invalidAddress, detail: "bad IPv6 host", advice: "write tcp:[ADDRESS]:PORT")
      }
      host = String(rest[rest.index(after: rest.startIndex)..<close])
      portText = String(rest[rest.index(close, offsetBy: 2)...])
    } else if let colon = rest.lastIndex(of: ":") {
      host = String(rest[..<colon])
      portText = String(rest[rest.index(after: colon)...])
      if host.contains(":") {
        throw LinkError(
          address: text, kind: .invalidAddress, detail: "an IPv6 host needs brackets",
          advice: "write tcp:[ADDRESS]:PORT")
      }
    } else {
      host = ""
      portText = rest
    }
    guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = UInt16(portText) else {
      throw LinkError(
        address: text, kind: .invalidAddress,
        detail: portText.isEmpty ? "missing port" : "bad port \"\(portText)\" (0...65535)",
        advice: "write tcp:HOST:PORT or tcp:PORT")
    }
    return .tcp(host: host.isEmpty ? TCPLink.defaultHost : host, port: port)
  }

  public var description: String {
    switch self {
    case .memory: return "memory"
    case .unix(let path): return "unix:\(path)"
    case .tcp(let host, let port): return "tcp:\(tcpHostText(host)):\(port)"
    }
  }

  /// Listens at this address; `loops` read the links it accepts. `memory` has nothing to
  /// listen on.
  public func listen(
    on loops: any EventLoopGroup, pairing: PairingPolicy = .accept(upTo: .authenticated), keyring: Keyring? = nil
  ) throws(LinkError) -> any LinkListener {
    switch self {
    case .memory: throw Self.memoryIsInProcess
    case .unix(let path): return try UnixSeqpacketListener(path: path, on: loops, pairing: pairing, keyring: keyring)
    case .tcp(let host, let port):
      return try TCPListener(host: host, port: port, on: loops, pairing: pairing, keyring: keyring)
    }
  }

  /// Connects to a listener at this address; one of `loops` reads the link. `memory` has
  /// nothing to connect to.
  public func connect(
    on loops: any EventLoopGroup, pairing: PairingPolicy = .accept(upTo: .authenticated), keyring: Keyring? = nil
  ) async throws(LinkError) -> SocketBearer {
    switch self {
    case .memory: throw Self.memoryIsInProcess
    case .unix(let path):
      return try await UnixSeqpacketLink.connect(path: path, on: loops, pairing: pairing, keyring: keyring)
    case .tcp(let host, let port):
      return try await TCPLink.connect(host: host, port: port, on: loops, pairing: pairing, keyring: keyring)
    }
  }

  private static let memoryIsInProcess = LinkError(
    address: "memory", kind: .invalidAddress, detail: "an in-process link has no listener",
    advice: "use unix:PATH or tcp:HOST:PORT between two processes")
}
