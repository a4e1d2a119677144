extension RandomAccessCollection where Index == Int {
  /// The index of the element whose `key` equals `target`, in a collection sorted by that
  /// key (ascending), or nil. O(log n).
  @inlinable
  public func binarySearch<Key: Comparable>(_ target: Key, by key: (Element) -> Key) -> Int? {
    var low = startIndex
    var high = endIndex - 1
    while low <= high {
      let mid = low + (high - low) / 2
      let found = key(self[mid])
      if found == target { return mid }
      if found < target { low = mid + 1 } else { high = mid - 1 }
    }
    return nil
  }
}
