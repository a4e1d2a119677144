#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A value behind a lock: `withLock` gives exclusive access to it.
///
/// The project's lock, instead of `Synchronization.Mutex`: on Linux that one locks with
/// atomics and futex calls inside the (uninstrumented) standard library, which
/// ThreadSanitizer cannot see, so every access it protects is reported as a race and a
/// real race would drown among them. This one is a pthread mutex, which ThreadSanitizer
/// understands; uncontended it costs about the same.
///
/// The value lives behind a pointer rather than in a stored `var`: the lock already makes
/// every access exclusive, and a class's stored `var` passed `inout` would also be checked
/// at run time (a `swift_beginAccess`/`swift_endAccess` pair, thread-local bookkeeping) on
/// every `withLock`, several times per PDU.
public final class Locked<Value>: @unchecked Sendable {
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private let value: UnsafeMutablePointer<Value>

  public init(_ value: Value) {
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
    self.value = .allocate(capacity: 1)
    self.value.initialize(to: value)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
    value.deinitialize(count: 1)
    value.deallocate()
  }

  /// Runs `body` with the value, holding the lock. Never call `withLock` on the same lock
  /// from inside `body` (it is not recursive).
  public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
    -> Result
  {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value.pointee)
  }
}
