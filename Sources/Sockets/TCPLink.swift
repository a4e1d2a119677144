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
    let fd = try await connectedTCPSocket(host: host, port: port, address: address)
    return try SocketCore.start(
      fd: fd, framing: .stream, name: address, pairing: pairing, keyring: keyring, on: loops.next())
  }
}

/// Listens for TCP connections on HOST:PORT. Port 0 picks a free port; `port` tells which.
public final class TCPListener: LinkListener {
  public let host: String
  /// The port actually listened on (the ephemeral one when 0 was asked for).
  public let port: UInt16
  public var pairing: PairingPolicy { listening.pairing }
  /// Where the links it accepts keep their bonds; nil pairs without bonds.
  public var keyring: Keyring? { listening.keyring }
  /// The loops that read the links it accepts, in turn.
  public var loops: any EventLoopGroup { listening.loops }
  private let listening: ListeningSocket

  public var name: String { "tcp:\(tcpHostText(host)):\(port)" }

  public init(
    host: String = TCPLink.defaultHost, port: UInt16 = 0, on loops: any EventLoopGroup,
    pairing: PairingPolicy = .accept(upTo: .authenticated), keyring: Keyring? = nil
  ) throws(LinkError) {
    let address = "tcp:\(tcpHostText(host)):\(port)"
    let fd = try firstTCPSocket(host: host, port: port, passive: true, address: address) { fd, candidate in
      var on: Int32 = 1
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
      if candidate.withSockaddr({ bind(fd, $0, $1) }) != 0 { return LinkError.tcpBind(address: address, errno: errno) }
      if listen(fd, 16) != 0 {
        let code = errno
        return LinkError(address: address, kind: .system(errno: code), detail: "listen: \(errnoText(code))")
      }
      return nil
    }.get()
    self.host = host
    let port = SocketAddress.local(of: fd)?.port ?? port
    self.port = port
    listening = ListeningSocket(
      OwnedFD(fd), address: "tcp:\(tcpHostText(host)):\(port)", framing: .stream, pairing: pairing,
      keyring: keyring, loops: loops)
  }

  deinit {
    close()
  }

  /// Waits for the next peer to connect.
  public func accept() async throws(LinkError) -> SocketBearer {
    let address = name
    return try await listening.accept { "\(address) (from \($0.ipDescription))" }
  }

  /// Stops listening (idempotent) and wakes a pending `accept`. Links already accepted stay up.
  public func close() { _ = listening.close() }
}

/// A TCP socket connected to HOST:PORT (TCP_NODELAY): the first of its addresses that
/// answers. `refused` replaces the usual advice when nobody listens.
func connectedTCPSocket(
  host: String, port: UInt16, address: String, refused: LinkError? = nil
) async throws(LinkError) -> Int32 {
  let outcome = try await cancellable(address) { wake -> Result<Int32, LinkError> in
    firstTCPSocket(host: host, port: port, passive: false, address: address) { fd, candidate in
      guard let code = connectConnection(fd, to: candidate, wake: wake) else { return LinkError.cancelled(address) }
      if code == 0 { return nil }
      return code == ECONNREFUSED ? refused ?? .refused(address) : LinkError.tcpConnect(address: address, errno: code)
    }
  }
  let fd = try outcome.get()
  setNoDelay(fd)
  return fd
}

/// A TCP socket for the first address `host` resolves to on which `attempt` succeeds (nil);
/// a failed attempt's socket is closed and the next address tried. The last error if none
/// works (a host that resolves to nothing: host not found); a cancelled attempt ends the
/// search.
func firstTCPSocket(
  host: String, port: UInt16, passive: Bool, address: String, _ attempt: (Int32, SocketAddress) -> LinkError?
) -> Result<Int32, LinkError> {
  let candidates: [SocketAddress]
  switch SocketAddress.resolveTCP(host: host, port: port, passive: passive) {
  case .success(let found): candidates = found
  case .failure(let failure): return .failure(LinkError.hostNotFound(address: address, host: host, code: failure.code))
  }
  var lastError = LinkError(address: address, kind: .hostNotFound, detail: "no address for \(host)")
  for candidate in candidates {
    switch makeSocket(family: candidate.family, type: Int32(SOCK_STREAM.rawValue), for: address) {
    case .success(let fd):
      guard let failure = attempt(fd, candidate) else { return .success(fd) }
      Glibc.close(fd)
      if failure.kind == .cancelled { return .failure(failure) }
      lastError = failure
    case .failure(let failure): lastError = failure
    }
  }
  return .failure(lastError)
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
    LinkError(
      "bind", failedWith: code, at: address,
      meanings: [
        ErrnoMeaning(
          [EADDRINUSE], .addressInUse, "address in use",
          advice: "another phone is listening there; pick another port, or port 0 for any free one"),
        ErrnoMeaning(
          [EACCES, EPERM], .permissionDenied, "permission denied",
          advice: "ports below 1024 need privileges; pick a higher port"),
        ErrnoMeaning(
          [EADDRNOTAVAIL], nil, "address not available on this machine",
          advice: "use 127.0.0.1 or an address of this machine"),
      ])
  }

  static func tcpConnect(address: String, errno code: Int32) -> LinkError {
    if code == ECONNREFUSED { return .refused(address) }
    return LinkError(
      "connect", failedWith: code, at: address,
      meanings: [
        ErrnoMeaning([ETIMEDOUT], nil, "connection timed out", advice: "check the host and any firewall"),
        ErrnoMeaning([EHOSTUNREACH, ENETUNREACH], nil, errnoText(code), advice: "check the host address"),
      ])
  }
}
