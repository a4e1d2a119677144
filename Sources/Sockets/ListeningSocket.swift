import Glibc
import Links
import Runtime

/// A listening socket, TCP or Unix: what both listeners do once bound and listening. It
/// accepts one peer at a time (waiting in poll(2), woken by `close` or the caller's
/// cancellation), hands each accepted socket to the next of its loops, and closes once.
final class ListeningSocket: Sendable {
  let socket: OwnedFD
  let address: String
  let framing: SocketCore.Framing
  let pairing: PairingPolicy
  let keyring: Keyring?
  let loops: any EventLoopGroup
  private let closed = Locked(false)

  init(
    _ socket: OwnedFD, address: String, framing: SocketCore.Framing, pairing: PairingPolicy, keyring: Keyring?,
    loops: any EventLoopGroup
  ) {
    setNonBlocking(socket.fd)
    self.socket = socket
    self.address = address
    self.framing = framing
    self.pairing = pairing
    self.keyring = keyring
    self.loops = loops
  }

  /// Waits for the next peer to connect; `naming` names its link from the peer's address.
  func accept(naming: @Sendable (SocketAddress) -> String) async throws(LinkError) -> SocketBearer {
    let (socket, address) = (self.socket, self.address)
    if closed.withLock({ $0 }) { throw LinkError.listenerClosed(address) }
    let outcome = try await cancellable(address) { wake -> Result<(Int32, SocketAddress), LinkError> in
      switch acceptConnection(socket.fd, wake: wake) {
      case .accepted(let fd, let peer): return .success((fd, peer))
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
    if framing == .stream { setNoDelay(fd) }
    return try SocketCore.start(
      fd: fd, framing: framing, name: naming(peer), pairing: pairing, keyring: keyring, on: loops.next())
  }

  /// Stops listening and wakes a pending `accept`; true the first time only.
  func close() -> Bool {
    let first = closed.withLock { closed -> Bool in
      defer { closed = true }
      return !closed
    }
    if first { socket.shutdown() }
    return first
  }
}
