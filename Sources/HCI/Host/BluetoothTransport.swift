import ATT
import Links
import Wire

/// A real-Bluetooth transport, chosen by name (DESIGN.md "Addresses and transports").
public enum BluetoothTransport: Hashable, Sendable, CustomStringConvertible {
  /// `hci-tcp:HOST:PORT`: H4 packets over TCP to a virtual controller (Bumble's tcp-server).
  case hciTCP(host: String, port: UInt16)

  /// Every name a user may write, for error messages.
  public static let forms = ["hci-tcp:HOST:PORT", "hci-uart:DEV[,BAUD]", "hci-user:N", "l2cap:hciN"]

  /// Parses a transport name. Names of transports not built yet, and unknown names, fail with
  /// one line that names what works.
  public init(parsing text: String) throws(LinkError) {
    let (scheme, rest) =
      text.firstIndex(of: ":").map { (String(text[..<$0]), String(text[text.index(after: $0)...])) } ?? (text, "")
    switch scheme {
    case "hci-tcp":
      guard let colon = rest.lastIndex(of: ":") else {
        throw LinkError(
          address: text, kind: .invalidAddress, detail: "missing port", advice: "write hci-tcp:HOST:PORT")
      }
      var host = String(rest[..<colon])
      if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
      guard let port = UInt16(rest[rest.index(after: colon)...]), port != 0 else {
        throw LinkError(
          address: text, kind: .invalidAddress, detail: "the port must be a number from 1 to 65535",
          advice: "write hci-tcp:HOST:PORT")
      }
      self = .hciTCP(host: host.isEmpty ? "127.0.0.1" : host, port: port)
    case "hci-uart", "hci-user", "l2cap":
      throw LinkError(
        address: text, kind: .unavailableTransport, detail: "\(scheme) is not available in this build yet",
        advice: "use hci-tcp:HOST:PORT with a virtual controller")
    default:
      throw LinkError(
        address: text, kind: .unknownTransport, detail: "unknown Bluetooth transport",
        advice: "use one of \(Self.forms.joined(separator: ", "))")
    }
  }

  public var description: String {
    switch self {
    case .hciTCP(let host, let port): return "hci-tcp:\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }
  }
}

extension HCIHost {
  /// Opens `transport`, starts a host on it and sets the controller up (`setUp()`); what the
  /// CLI's `--bluetooth TRANSPORT` calls. With `capturePath`, every HCI packet is recorded in a
  /// btsnoop file (H4 datalink) that Wireshark and btmon read. `randomAddress` keeps the address
  /// of an earlier run, so a peer finds its bond again (default: a fresh one).
  public static func open(
    transport: BluetoothTransport, clock: any EngineClock = SystemClock(), options: Options = Options(),
    logger: Logger = .none, capturePath: String? = nil, security: any HCISecurityManager = PairingNotSupported(),
    randomAddress: BDAddress? = nil
  ) async throws(HCIHostError) -> (HCIHost, ControllerSetup) {
    let stream: any HCIByteStream
    let capture: BtsnoopWriter?
    do {
      capture = try capturePath.map { path throws(LinkError) in try BtsnoopWriter(path: path, connection: nil) }
      switch transport {
      case .hciTCP(let host, let port):
        stream = try await TCPByteStream.connect(host: host, port: port, name: transport.description)
      }
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
