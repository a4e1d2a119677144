import Glibc
import Wire

/// A plain TCP byte stream, for protocols that do their own framing: the H4 packets of a
/// virtual Bluetooth controller (Bumble's `tcp-server` transport). A reader thread takes what
/// arrives; writes go out at once (TCP_NODELAY).
public final class TCPByteStream: Sendable {
  /// "hci-tcp:127.0.0.1:9001", as the user named the transport.
  public let name: String
  private let socket: OwnedFD
  private let chunks = Inbox<[UInt8]>()
  private let fault = Locked<LinkFault?>(nil)
  private let writing = Locked(())

  private init(fd: Int32, name: String) {
    socket = OwnedFD(fd)
    self.name = name
  }

  /// Connects to HOST:PORT; `name` is used in errors and logs.
  public static func connect(host: String, port: UInt16, name: String) async throws(LinkError) -> TCPByteStream {
    let outcome = try await cancellable(name) { wake -> Result<Int32, LinkError> in
      let candidates: [SocketAddress]
      switch SocketAddress.resolveTCP(host: host, port: port, passive: false) {
      case .success(let found): candidates = found
      case .failure(let failure): return .failure(LinkError.hostNotFound(address: name, host: host, code: failure.code))
      }
      var lastError = LinkError(address: name, kind: .hostNotFound, detail: "no address for \(host)")
      for candidate in candidates {
        guard case .success(let fd) = makeSocket(family: candidate.family, type: Int32(SOCK_STREAM.rawValue)) else {
          continue
        }
        let code = connectConnection(fd, to: candidate, wake: wake)
        if code == 0 { return .success(fd) }
        Glibc.close(fd)
        guard let code else { return .failure(LinkError.cancelled(name)) }
        lastError =
          code == ECONNREFUSED
          ? LinkError(
            address: name, kind: .connectionRefused, detail: "connection refused",
            advice: "is the virtual controller (e.g. Bumble's tcp-server) running?")
          : LinkError.tcpConnect(address: name, errno: code)
      }
      return .failure(lastError)
    }
    let fd = try outcome.get()
    setNoDelay(fd)
    let stream = TCPByteStream(fd: fd, name: name)
    guard spawnThread({ stream.readLoop() }) else {
      throw LinkError(address: name, kind: .system(errno: EAGAIN), detail: "cannot start the reader thread")
    }
    return stream
  }

  /// The next bytes received; nil at the end of the stream (or when the waiting task is
  /// cancelled). Throws the fault that ended the stream, once what came before is read.
  public func read() async throws(LinkFault) -> [UInt8]? {
    if let chunk = await chunks.next() { return chunk }
    if let fault = fault.withLock({ $0 }) { throw fault }
    return nil
  }

  /// Writes all of `bytes` (MSG_NOSIGNAL: a closed peer is EPIPE, not SIGPIPE).
  public func write(_ bytes: [UInt8]) async throws(LinkFault) {
    let fd = socket.fd
    let code = writing.withLock { _ in
      bytes.withUnsafeBytes { raw -> Int32 in
        var offset = 0
        while offset < raw.count {
          guard let base = raw.baseAddress else { return 0 }
          let written = Glibc.send(fd, base + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
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

  /// Shuts the socket down; `read` then returns nil.
  public func close() {
    socket.shutdown()
  }

  private func readLoop() {
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = buffer.withUnsafeMutableBytes { raw in recv(socket.fd, raw.baseAddress, raw.count, 0) }
      if count > 0 {
        chunks.push(Array(buffer[0..<count]))
        continue
      }
      if count < 0 {
        let code = errno
        if code == EINTR { continue }
        fault.withLock { $0 = code == ECONNRESET ? .connectionReset : .io("read: \(errnoText(code))") }
      }
      chunks.close()
      return
    }
  }
}
