/// A first-in first-out queue of notification UIDs with constant-time membership, append,
/// removal and pop, so a flood of thousands of notifications costs nothing per step.
/// Removal is lazy: a removed UID is skipped when it reaches the front.
struct UIDQueue: Sendable {
  private var items: [UInt32] = []
  private var head = 0
  private var members: Set<UInt32> = []

  var isEmpty: Bool { members.isEmpty }
  var count: Int { members.count }

  func contains(_ uid: UInt32) -> Bool { members.contains(uid) }

  mutating func append(_ uid: UInt32) {
    guard members.insert(uid).inserted else { return }
    items.append(uid)
  }

  /// Puts `uid` at the front (an incoming call jumps the queue).
  mutating func prepend(_ uid: UInt32) {
    // Already queued further back: that entry is popped as a duplicate and skipped.
    members.insert(uid)
    compact()
    items.insert(uid, at: head)
  }

  mutating func remove(_ uid: UInt32) { members.remove(uid) }

  mutating func removeAll() {
    items = []
    head = 0
    members = []
  }

  mutating func popFirst() -> UInt32? {
    while head < items.count {
      let uid = items[head]
      head += 1
      if members.remove(uid) != nil {
        compact()
        return uid
      }
    }
    compact()
    return nil
  }

  /// Drops the consumed front once it is most of the storage.
  private mutating func compact() {
    if head >= 64 && head * 2 >= items.count {
      items.removeFirst(head)
      head = 0
    }
  }
}
