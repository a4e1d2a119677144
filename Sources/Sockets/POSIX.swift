import Glibc
import Links
import Runtime

/// A file descriptor closed when the last owner lets go. Threads that block on the
/// descriptor hold it, so it is never closed (and its number never reused) under them; to
/// wake them, shut the socket down instead.
package final class OwnedFD: Sendable {
  package let fd: Int32

  package init(_ fd: Int32) {
    self.fd = fd
  }

  deinit {
    _ = Glibc.close(fd)
  }

  /// Ends both directions: blocked reads and accepts return, the peer sees end of file.
  package func shutdown() {
    _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
  }
}

/// An errno value, as the failure of a `Result`.
package struct Errno: Error, Hashable {
  package let code: Int32
  package init(_ code: Int32) { self.code = code }
}

/// A socket address of any family, as bind, connect and getsockname take it.
package struct SocketAddress: Sendable {
  package var storage: [UInt8]
  package var family: Int32

  package init(storage: [UInt8], family: Int32) {
    self.storage = storage
    self.family = family
  }

  /// A Unix-domain address, or nil if the path does not fit sun_path with its NUL.
  init?(unixPath path: String) {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard bytes.count < capacity, !bytes.contains(0) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: bytes)
    }
    storage = withUnsafeBytes(of: &address) { Array($0) }
    family = AF_UNIX
  }

  package func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    storage.withUnsafeBytes { raw in
      body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
    }
  }

  /// "127.0.0.1:5000", "[::1]:5000" for IP addresses.
  var ipDescription: String {
    var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
    var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
    let result = withSockaddr { pointer, length in
      getnameinfo(
        pointer, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
        NI_NUMERICHOST | NI_NUMERICSERV)
    }
    guard result == 0 else { return "?" }
    let hostText = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let serviceText = String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return family == AF_INET6 ? "[\(hostText)]:\(serviceText)" : "\(hostText):\(serviceText)"
  }

  /// The port of an IPv4 or IPv6 address.
  var port: UInt16 {
    storage.withUnsafeBytes { raw -> UInt16 in
      switch family {
      case AF_INET: return UInt16(bigEndian: raw.loadUnaligned(as: sockaddr_in.self).sin_port)
      case AF_INET6: return UInt16(bigEndian: raw.loadUnaligned(as: sockaddr_in6.self).sin6_port)
      default: return 0
      }
    }
  }

  /// The local address a socket is bound to.
  static func local(of fd: Int32) -> SocketAddress? {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let result = withUnsafeMutablePointer(to: &storage) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard result == 0 else { return nil }
    let bytes = withUnsafeBytes(of: &storage) { Array($0.prefix(Int(length))) }
    return SocketAddress(storage: bytes, family: Int32(storage.ss_family))
  }

  /// Resolves a host and port for TCP. Numeric hosts never touch the resolver.
  static func resolveTCP(host: String, port: UInt16, passive: Bool) -> Result<[SocketAddress], Errno> {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
    var list: UnsafeMutablePointer<addrinfo>?
    let result = getaddrinfo(host, String(port), &hints, &list)
    guard result == 0 else { return .failure(Errno(result)) }
    defer { freeaddrinfo(list) }
    var addresses: [SocketAddress] = []
    var node = list
    while let entry = node {
      if let address = entry.pointee.ai_addr {
        let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen)))
        addresses.append(SocketAddress(storage: bytes, family: entry.pointee.ai_family))
      }
      node = entry.pointee.ai_next
    }
    return .success(addresses)
  }
}

/// connect(2), retried on EINTR; 0 or the errno.
func connectSocket(_ fd: Int32, to address: SocketAddress) -> Int32 {
  let result = address.withSockaddr { Glibc.connect(fd, $0, $1) }
  if result == 0 { return 0 }
  var code = errno
  if code == EINTR {
    // The connection proceeds in the background after an interrupted connect; wait for it.
    var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
    while poll(&poller, 1, -1) < 0 && errno == EINTR {}
    var error: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
    code = error
  }
  return code
}

/// A new socket with close-on-exec set, or the errno.
func makeSocket(family: Int32, type: Int32, for address: String = "") -> Result<Int32, LinkError> {
  let fd = socket(family, type | Int32(SOCK_CLOEXEC.rawValue), 0)
  if fd >= 0 { return .success(fd) }
  let code = errno
  return .failure(LinkError(address: address, kind: .system(errno: code), detail: errnoText(code)))
}

/// A pipe whose only job is to wake a thread blocked in poll(2), when the task that waits
/// for that thread is cancelled.
package final class WakePipe: Sendable {
  private let readEnd: OwnedFD
  private let writeEnd: OwnedFD

  package init() throws(Errno) {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { throw Errno(errno) }
    for end in ends {
      _ = fcntl(end, F_SETFD, FD_CLOEXEC)
      _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
    }
    readEnd = OwnedFD(ends[0])
    writeEnd = OwnedFD(ends[1])
  }

  package func wake() {
    var byte: UInt8 = 1
    _ = write(writeEnd.fd, &byte, 1)
  }

  package enum Wait {
    case ready
    case woken
    case failed(Int32)
  }

  /// Waits until `fd` reports one of `events` (or an error or hang-up), or the pipe is woken.
  package func wait(for fd: Int32, events: Int32) -> Wait {
    var fds = [
      pollfd(fd: fd, events: Int16(events), revents: 0),
      pollfd(fd: readEnd.fd, events: Int16(POLLIN), revents: 0),
    ]
    while true {
      if poll(&fds, 2, -1) >= 0 { break }
      let code = errno
      if code != EINTR { return .failed(code) }
    }
    return fds[1].revents != 0 ? .woken : .ready
  }
}

/// Runs a blocking call on its own thread; cancelling the awaiting task wakes the pipe the
/// call waits on, and the call then returns early (with whatever it returns when woken).
package func runCancellable<T: Sendable>(_ body: @escaping @Sendable (WakePipe) -> T) async throws(Errno) -> T {
  let pipe = try WakePipe()
  return await withTaskCancellationHandler {
    await runBlocking { body(pipe) }
  } onCancel: {
    pipe.wake()
  }
}

package enum AcceptOutcome {
  case accepted(Int32, SocketAddress)
  /// The listening socket was shut down.
  case closed
  case cancelled
  case failed(Int32)
}

/// Accepts one connection on a non-blocking listening socket, waiting in poll(2) so that
/// cancellation (the pipe) and `shutdown` (EINVAL) both end the wait. The new socket is
/// blocking (Linux does not pass O_NONBLOCK on) and close-on-exec.
package func acceptConnection(_ listener: Int32, wake: WakePipe) -> AcceptOutcome {
  while true {
    switch wake.wait(for: listener, events: Int32(POLLIN)) {
    case .woken: return .cancelled
    case .failed(let code): return .failed(code)
    case .ready: break
    }
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let fd = withUnsafeMutablePointer(to: &storage) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &length) }
    }
    if fd >= 0 {
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      let bytes = withUnsafeBytes(of: &storage) { Array($0.prefix(Int(length))) }
      return .accepted(fd, SocketAddress(storage: bytes, family: Int32(storage.ss_family)))
    }
    let code = errno
    switch code {
    // Another accept took the connection, or it went away before we took it.
    case EAGAIN, EWOULDBLOCK, EINTR, ECONNABORTED: continue
    case EINVAL: return .closed
    default: return .failed(code)
    }
  }
}

/// connect(2) that the pipe can interrupt: non-blocking connect, then poll(2) for the result.
/// 0, the errno, or nil when woken. The socket is left blocking.
package func connectConnection(_ fd: Int32, to address: SocketAddress, wake: WakePipe) -> Int32? {
  let flags = fcntl(fd, F_GETFL)
  _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
  defer { _ = fcntl(fd, F_SETFL, flags) }
  if address.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 { return 0 }
  let code = errno
  guard code == EINPROGRESS || code == EINTR else { return code }
  switch wake.wait(for: fd, events: Int32(POLLOUT)) {
  case .woken: return nil
  case .failed(let code): return code
  case .ready: break
  }
  var error: Int32 = 0
  var length = socklen_t(MemoryLayout<Int32>.size)
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
  return error
}

/// Makes a listening socket non-blocking, for `acceptConnection`.
package func setNonBlocking(_ fd: Int32) {
  _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
}

func setNoDelay(_ fd: Int32) {
  var on: Int32 = 1
  setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
}
