import CEpoll
import Glibc
import Wire

/// The one thread of this process that reads every socket link: it waits on all of them at
/// once with epoll (level-triggered) and, for each one that is readable, reads what is
/// there without blocking (`MSG_DONTWAIT`) into the link's queue.
///
/// One thread instead of one per link: a phone serving a thousand watches keeps one thread
/// and one stack, not a thousand, and a busy moment costs one wake-up for all the links that
/// have data rather than one each. The reactor holds each link's `SocketCore` (and so its
/// descriptor) from `register` until the link ends; the descriptor is then removed from epoll
/// before it can be closed, so a recycled descriptor number never reaches the wrong link.
final class SocketReactor: @unchecked Sendable {
  static let shared = SocketReactor()

  /// The epoll instance; -1 when it could not be made (every `register` then fails).
  private let epoll: Int32
  /// Links being read, by descriptor. Touched by `register` (any thread) and the reactor
  /// thread.
  private let links = Locked<[Int32: SocketCore]>([:])
  /// At most this many reads for one link per wake-up, so a link that never runs dry
  /// cannot starve the others (level-triggered epoll brings the reactor back to it).
  static let readsPerTurn = 64

  private init() {
    epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
    guard epoll >= 0 else { return }
    let epoll = epoll
    let links = links
    if !spawnThread({ Self.run(epoll: epoll, links: links) }) {
      _ = close(epoll)
    }
  }

  /// Starts reading `core`'s socket; false (errno set) when it cannot be watched.
  func register(_ core: SocketCore) -> Bool {
    guard epoll >= 0 else {
      errno = EMFILE
      return false
    }
    let fd = core.socket.fd
    links.withLock { $0[fd] = core }
    var event = epoll_event()
    event.events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
    event.data.fd = fd
    if epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0 {
      let code = errno
      links.withLock { $0[fd] = nil }
      errno = code
      return false
    }
    return true
  }

  private static func run(epoll: Int32, links: Locked<[Int32: SocketCore]>) {
    let capacity = 128
    let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
    defer { events.deallocate() }
    var buffer = [UInt8](repeating: 0, count: LinkFraming.maxFrameBody + 1)
    while true {
      let count = epoll_wait(epoll, events, Int32(capacity), -1)
      if count < 0 {
        if errno == EINTR { continue }
        return
      }
      for index in 0..<Int(count) {
        let fd = events[index].data.fd
        guard let core = links.withLock({ $0[fd] }) else { continue }
        if !core.readAvailable(into: &buffer, turns: readsPerTurn) {
          // Out of epoll first, then let go: the descriptor closes with the last owner.
          _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
          links.withLock { $0[fd] = nil }
        }
      }
    }
  }
}
