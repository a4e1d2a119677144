import ATT
import Glibc
import Links
import Runtime
import Wire

/// The simulated link over TCP: a byte stream cut into frames of a 2-byte little-endian
/// length and a body (framing at the top of LinkFraming.swift), with TCP_NODELAY so every
/// PDU leaves at once. Loopback by default.
public enum TCPLink {
  public static let defaultHost = "127.0.0.1"

  /// Connects to a `TCPListener`, possibly in another process or on another machine; one
  /// of `loops` reads the link.
  public static func connect(
    host: String = defaultHost, port: UInt16, on loops: any EventLoopGroup,
    pairing: PairingPolicy = .accept(upTo: .authenticated), keyring: Keyring? = nil
  ) async throws(LinkError) -> SocketBearer {
    let address = "tcp:\(tcpHostText(host)):\(port)"
    let outcome = try await cancellable(address) { wake -> Result<Int32, LinkError> in
      let candidates: [SocketAddress]
      switch SocketAddress.resolveTCP(host: host, port: port, passive: false) {
      case .success(let found): candidates = found
      case .failure(let failure):
        return .failure(LinkError.hostNotFound(address: address, host: host, code: failure.code))
      }
      var lastError = LinkError(address: address, kind: .hostNotFound, detail: "no address for \(host)")
      for candidate in candidates {
        let fd: Int32
        switch makeSocket(family: candidate.family, type: Int32(SOCK_STREAM.rawValue)) {
        case .success(let made): fd = made
        case .failure(let failure):
          lastError = LinkError(address: address, kind: .system(errno: failure.code), detail: errnoText(failure.code))
          continue
        }
        let code = connectConnection(fd, to: candidate, wake: wake)
        if code == 0 { return .success(fd) }
        Glibc.close(fd)
        guard let code else { return .failure(LinkError.cancelled(address)) }
        lastError = LinkError.tcpConnect(address: address, errno: code)
      }
      return .failure(lastError)
    }
    let fd = try outcome.get()
    setNoDelay(fd)
    return try SocketCore.start(
      fd: fd, framing: .stream, name: address, pairing: pairing, keyring: keyring, on: loops.next())
  }
}

/// Listens for TCP connections on HOST:PORT. Port 0 picks a free port; `port` tells which.
public final class TCPListener: LinkListener {
  public let host: String
  /// The port actually listened on (the ephemeral one when 0 was asked for).
  public let port: UInt16
  public let pairing: PairingPolicy
  /// Where the links it accepts keep their bonds; nil pairs without bonds.
  public let keyring: Keyring?
  /// The loops that read the links it accepts, in turn.
  public let loops: any EventLoopGroup
  private let socket: OwnedFD
  private let closed = Locked(false)

  public var name: String { "tcp:\(tcpHostText(host)):\(port)" }

  public init(
    host: String = TCPLink.defaultHost, port: UInt16 = 0, on loops: any EventLoopGroup,
    pairing: PairingPolicy = .accept(upTo: .authenticated), keyring: Keyring? = nil
  ) throws(LinkError) {
    self.keyring = keyring
    self.loops = loops
    let address = "tcp:\(tcpHostText(host)):\(port)"
    let candidates: [SocketAddress]
    switch SocketAddress.resolveTCP(host: host, port: port, passive: true) {
    case .success(let found): candidates = found
    case .failure(let failure):
      let code = failure.code
      throw LinkError.hostNotFound(address: address, host: host, code: code)
    }
    var lastError = LinkError(address: address, kind: .hostNotFound, detail: "no address for \(host)")
    for candidate in candidates {
      let fd: Int32
      switch makeSocket(family: candidate.family, type: Int32(SOCK_STREAM.rawValue)) {
      case .success(let made): fd = made
      case .failure(let failure):
        let code = failure.code

        lastError = LinkError(address: address, kind: .system(errno: code), detail: errnoText(code))
        continue
      }
      let socket = OwnedFD(fd)
      var on: Int32 = 1
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
      if candidate.withSockaddr({ bind(fd, $0, $1) }) != 0 {
        lastError = LinkError.tcpBind(address: address, errno: errno)
        continue
      }
      if listen(fd, 16) != 0 {
        let code = errno
        lastError = LinkError(address: address, kind: .system(errno: code), detail: "listen: \(errnoText(code))")
        continue
      }
      setNonBlocking(fd)
      self.host = host
      self.port = SocketAddress.local(of: fd)?.port ?? port
      self.pairing = pairing
      self.socket = socket
      return
    }
    throw lastError
  }

  deinit {
    close()
  }

  /// Waits for the next peer to connect.
  public func accept() async throws(LinkError) -> SocketBearer {
    let socket = self.socket
    let address = name
    if closed.withLock({ $0 }) { throw LinkError.listenerClosed(address) }
    let outcome = try await cancellable(address) { wake -> Result<(Int32, String), LinkError> in
      switch acceptConnection(socket.fd, wake: wake) {
      case .accepted(let fd, let peer): return .success((fd, peer.ipDescription))
      case .closed: return .failure(LinkError.listenerClosed(address))
      case .cancelled: return .failure(LinkError.cancelled(address))
      case .failed(let code):
        return .failure(LinkError(address: address, kind: .system(errno: code), detail: "accept: \(errnoText(code))"))
      }
    }
    let (fd, peer) = try outcome.get()
    if closed.withLock({ $0 }) {
      Glibc.close(fd)
      throw LinkError.listenerClosed(address)
    }
    setNoDelay(fd)
    return try SocketCore.start(
      fd: fd, framing: .stream, name: "\(address) (from \(peer))", pairing: pairing, keyring: keyring,
      on: loops.next())
  }

  /// Stops listening (idempotent) and wakes a pending `accept`. Links already accepted stay up.
  public func close() {
    let first = closed.withLock { closed -> Bool in
      defer { closed = true }
      return !closed
    }
    if first { socket.shutdown() }
  }
}

/// An IPv6 literal goes in brackets so the port stays readable: "[::1]".
func tcpHostText(_ host: String) -> String {
  host.contains(":") ? "[\(host)]" : host
}

/// Runs a blocking call that a cancelled task can interrupt; failing to make the wake pipe is
/// reported against `address`.
func cancellable<T: Sendable>(
  _ address: String, _ body: @escaping @Sendable (WakePipe) -> Result<T, LinkError>
) async throws(LinkError) -> Result<T, LinkError> {
  do {
    return try await runCancellable(body)
  } catch {
    throw LinkError(address: address, kind: .system(errno: error.code), detail: errnoText(error.code))
  }
}

extension LinkError {
  static func cancelled(_ address: String) -> LinkError {
    LinkError(address: address, kind: .cancelled, detail: "cancelled")
  }

  static func hostNotFound(address: String, host: String, code: Int32) -> LinkError {
    let why = String(cString: gai_strerror(code))
    return LinkError(
      address: address, kind: .hostNotFound, detail: "cannot resolve host \(host): \(why)",
      advice: "use an IP address such as 127.0.0.1")
  }

  static func tcpBind(address: String, errno code: Int32) -> LinkError {
    switch code {
    case EADDRINUSE:
      return LinkError(
        address: address, kind: .addressInUse, detail: "address in use",
        advice: "another phone is listening there; pick another port, or port 0 for any free one")
    case EACCES, EPERM:
      return LinkError(
        address: address, kind: .permissionDenied, detail: "permission denied",
        advice: "ports below 1024 need privileges; pick a higher port")
    case EADDRNOTAVAIL:
      return LinkError(
        address: address, kind: .system(errno: code), detail: "address not available on this machine",
        advice: "use 127.0.0.1 or an address of this machine")
    default:
      return LinkError(address: address, kind: .system(errno: code), detail: "bind: \(errnoText(code))")
    }
  }

  static func tcpConnect(address: String, errno code: Int32) -> LinkError {
    switch code {
    case ECONNREFUSED:
      return .refused(address)
    case ETIMEDOUT:
      return LinkError(
        address: address, kind: .system(errno: code), detail: "connection timed out",
        advice: "check the host and any firewall")
    case EHOSTUNREACH, ENETUNREACH:
      return LinkError(
        address: address, kind: .system(errno: code), detail: errnoText(code), advice: "check the host address")
    default:
      return LinkError(address: address, kind: .system(errno: code), detail: "connect: \(errnoText(code))")
    }
  }
}
