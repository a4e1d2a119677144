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
public final class Locked<Value>: @unchecked Sendable {
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private var value: Value

  public init(_ value: Value) {
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
    self.value = value
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with the value, holding the lock. Never call `withLock` on the same lock
  /// from inside `body` (it is not recursive).
  public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
    -> Result
  {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}
