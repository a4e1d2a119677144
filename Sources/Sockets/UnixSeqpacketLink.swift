import ATT
import Glibc
import Links
import Runtime
import Wire

/// The simulated link over Unix-domain SOCK_SEQPACKET sockets: one message is one frame, as
/// one L2CAP packet is one PDU. Framing at the top of LinkFraming.swift.
public enum UnixSeqpacketLink {
  /// A connected pair in one process (socketpair(2)): `central` (the phone, in ANCS) and
  /// `peripheral` (the watch). Both ends answer pairing requests with `pairing`, and keep
  /// bonds in their keyrings, if given.
  public static func pair(
    on loop: EventLoop, pairing: PairingPolicy = .accept(upTo: .authenticated),
    initialLevel: SecurityLevel = .unencrypted,
    keyrings: (central: Keyring?, peripheral: Keyring?) = (nil, nil)
  ) throws(LinkError) -> (central: SocketBearer, peripheral: SocketBearer) {
    var fds: [Int32] = [-1, -1]
    let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    guard socketpair(AF_UNIX, type, 0, &fds) == 0 else {
      let code = errno
      throw LinkError(address: "unix:socketpair", kind: .system(errno: code), detail: errnoText(code))
    }
    let central: SocketBearer
    do {
      central = try SocketCore.start(
        fd: fds[0], framing: .messages, name: "unix:socketpair(central)", pairing: pairing,
        keyring: keyrings.central, level: initialLevel, on: loop)
    } catch {
      Glibc.close(fds[1])
      throw error
    }
    let peripheral = try SocketCore.start(
      fd: fds[1], framing: .messages, name: "unix:socketpair(peripheral)", pairing: pairing,
      keyring: keyrings.peripheral, level: initialLevel, on: loop)
    return (central, peripheral)
  }

  /// Connects to a `UnixSeqpacketListener` at `path`, possibly in another process; one of
  /// `loops` reads the link.
  public static func connect(
    path: String, on loops: any EventLoopGroup, pairing: PairingPolicy = .accept(upTo: .authenticated),
    keyring: Keyring? = nil
  ) async throws(LinkError) -> SocketBearer {
    let address = "unix:\(path)"
    guard let socketAddress = SocketAddress(unixPath: path) else { throw LinkError.unixPathUnusable(path) }
    let outcome = await runBlocking { () -> Result<Int32, LinkError> in
      let fd: Int32

      switch makeSocket(family: AF_UNIX, type: Int32(SOCK_SEQPACKET.rawValue), for: address) {

      case .success(let made): fd = made

      case .failure(let failure): return .failure(failure)

      }
      let code = connectSocket(fd, to: socketAddress)
      if code == 0 { return .success(fd) }
      Glibc.close(fd)
      return .failure(LinkError.unixConnect(address: address, errno: code))
    }
    let fd = try outcome.get()
    return try SocketCore.start(
      fd: fd, framing: .messages, name: address, pairing: pairing, keyring: keyring, on: loops.next())
  }
}

/// Listens on a named SOCK_SEQPACKET socket, for a peer in another process.
///
/// The socket file is made with mode 0600 (only this user may connect) before anyone can
/// connect to it. An existing socket file nobody listens on (left by a process that died) is
/// removed and reused; one where someone is listening fails with `.addressInUse`; anything
/// that is not a socket is never deleted and fails with `.notASocket`. Closing the listener
/// removes its socket file, if it is still the one it made.
public final class UnixSeqpacketListener: LinkListener {
  public let path: String
  public var pairing: PairingPolicy { listening.pairing }
  /// Where the links it accepts keep their bonds; nil pairs without bonds.
  public var keyring: Keyring? { listening.keyring }
  /// The loops that read the links it accepts, in turn.
  public var loops: any EventLoopGroup { listening.loops }
  private let listening: ListeningSocket
  /// Device and inode of the socket file, to remove only our own on close.
  private let identity: (dev_t, ino_t)

  public var name: String { "unix:\(path)" }

  public init(
    path: String, on loops: any EventLoopGroup, pairing: PairingPolicy = .accept(upTo: .authenticated),
    keyring: Keyring? = nil
  ) throws(LinkError) {
    let address = "unix:\(path)"
    guard let socketAddress = SocketAddress(unixPath: path) else { throw LinkError.unixPathUnusable(path) }
    try Self.clearStalePath(path, socketAddress: socketAddress, address: address)

    let fd = try makeSocket(family: AF_UNIX, type: Int32(SOCK_SEQPACKET.rawValue), for: address).get()
    let socket = OwnedFD(fd)
    if socketAddress.withSockaddr({ bind(fd, $0, $1) }) != 0 {
      throw LinkError.unixBind(address: address, errno: errno)
    }
    // Nobody can connect before listen(2), so the file is never reachable with the
    // umask's wider mode.
    var info = stat()
    guard chmod(path, 0o600) == 0, lstat(path, &info) == 0 else {
      let code = errno
      unlink(path)
      throw LinkError(
        address: address, kind: .system(errno: code),
        detail: "cannot restrict the socket to mode 0600: \(errnoText(code))")
    }
    guard listen(fd, 16) == 0 else {
      let code = errno
      unlink(path)
      throw LinkError(address: address, kind: .system(errno: code), detail: "listen: \(errnoText(code))")
    }
    self.path = path
    listening = ListeningSocket(
      socket, address: address, framing: .messages, pairing: pairing, keyring: keyring, loops: loops)
    self.identity = (info.st_dev, info.st_ino)
  }

  deinit {
    close()
  }

  /// Waits for the next peer to connect.
  public func accept() async throws(LinkError) -> SocketBearer {
    let address = name
    return try await listening.accept { _ in address }
  }

  /// Stops listening (idempotent), wakes a pending `accept`, and removes the socket file if it
  /// is still ours. Links already accepted stay up.
  public func close() {
    guard listening.close() else { return }
    var info = stat()
    if lstat(path, &info) == 0 && info.st_dev == identity.0 && info.st_ino == identity.1 {
      unlink(path)
    }
  }

  /// Makes `path` free for bind(2): nothing there, or a stale socket (removed). Never
  /// removes anything that is not a socket, nor a socket someone listens on.
  private static func clearStalePath(_ path: String, socketAddress: SocketAddress, address: String) throws(LinkError) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    guard info.st_mode & S_IFMT == S_IFSOCK else {
      throw LinkError(
        address: address, kind: .notASocket, detail: "exists and is not a socket",
        advice: "refusing to replace it; pick another path")
    }
    let probe = try makeSocket(family: AF_UNIX, type: Int32(SOCK_SEQPACKET.rawValue), for: address).get()
    let code = connectSocket(probe, to: socketAddress)
    Glibc.close(probe)
    switch code {
    case 0, EPROTOTYPE:
      throw LinkError.unixInUse(address)
    case ECONNREFUSED:
      // A socket file with no listener: what a process leaves when it dies.
      if unlink(path) != 0 && errno != ENOENT {
        let code = errno
        throw LinkError(
          address: address, kind: code == EACCES || code == EPERM ? .permissionDenied : .system(errno: code),
          detail: "cannot remove the stale socket: \(errnoText(code))")
      }
    case ENOENT:
      return
    default:
      throw LinkError.unixConnect(address: address, errno: code)
    }
  }
}

extension LinkError {
  static func listenerClosed(_ address: String) -> LinkError {
    LinkError(address: address, kind: .listenerClosed, detail: "the listener is closed")
  }

  static func unixInUse(_ address: String) -> LinkError {
    LinkError(
      address: address, kind: .addressInUse, detail: "address in use",
      advice: "another phone is listening there; pick another path")
  }

  static func unixPathUnusable(_ path: String) -> LinkError {
    let count = path.utf8.count
    if path.isEmpty {
      return LinkError(address: "unix:", kind: .invalidAddress, detail: "empty socket path", advice: "write unix:PATH")
    }
    if path.utf8.contains(0) {
      return LinkError(address: "unix:\(path)", kind: .invalidAddress, detail: "the path contains a NUL byte")
    }
    return LinkError(
      address: "unix:\(path)", kind: .invalidAddress,
      detail: "path of \(count) bytes is too long for a Unix socket (at most \(maxUnixPathBytes))",
      advice: "use a shorter or relative path")
  }

  static var maxUnixPathBytes: Int { MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1 }

  static func unixBind(address: String, errno code: Int32) -> LinkError {
    if code == EADDRINUSE { return unixInUse(address) }
    return LinkError(
      "bind", failedWith: code, at: address,
      meanings: [
        ErrnoMeaning([ENOENT, ENOTDIR], .noSuchPath, "no such directory", advice: "create the directory first"),
        ErrnoMeaning(
          [EACCES, EPERM, EROFS], .permissionDenied, "permission denied",
          advice: "pick a path in a directory you can write"),
      ])
  }

  static func unixConnect(address: String, errno code: Int32) -> LinkError {
    if code == ECONNREFUSED { return .refused(address) }
    return LinkError(
      "connect", failedWith: code, at: address,
      meanings: [
        ErrnoMeaning([ENOENT, ENOTDIR], .noSuchPath, "no such socket", advice: "is `ancs phone --listen` running?"),
        ErrnoMeaning(
          [EACCES, EPERM], .permissionDenied, "permission denied", advice: "the socket belongs to another user"),
        ErrnoMeaning(
          [EPROTOTYPE], .connectionRefused, "not a SOCK_SEQPACKET socket",
          advice: "something other than ancs is listening there"),
      ])
  }
}
