/// A first-in first-out queue over one array: taking advances a head index, and the taken
/// front is dropped once the queue is empty or the front is most of the storage, so both
/// ends cost amortised constant time. Elements are moved in and out, never copied: a copy
/// would retain every reference an element holds and release them again later.
public struct FIFO<Element> {
  @usableFromInline var items: [Element?] = []
  @usableFromInline var head = 0

  public init() {}

  @inlinable public var isEmpty: Bool { head == items.count }
  @inlinable public var count: Int { items.count - head }

  @inlinable public mutating func append(_ element: consuming Element) {
    items.append(Optional(element))
  }

  /// The oldest element, taken out; nil when the queue is empty.
  @inlinable public mutating func popFirst() -> Element? {
    guard head < items.count else { return nil }
    let element = items[head].take()
    head += 1
    if head == items.count {
      items.removeAll(keepingCapacity: true)
      head = 0
    } else if head >= 64 && head * 2 >= items.count {
      items.removeFirst(head)
      head = 0
    }
    return element
  }
}

extension FIFO: Sendable where Element: Sendable {}
