import Runtime
import TestSupport
import Testing

@Suite(.timeLimit(scaledMinutes(1))) struct EventHubTests {
  /// Every listener gets every event from the moment it listens, in order; `finish()` ends
  /// each stream after what it has not yet read.
  @Test func eachListenerGetsEveryLaterEventInOrderThenTheEnd() async {
    let hub = EventHub<Int>()
    hub.yield(0)  // nobody listens yet: dropped
    let first = hub.stream()
    hub.yield(1)
    let second = hub.stream()
    for value in 2...4 { hub.yield(value) }
    hub.finish()
    var got: [[Int]] = []
    for stream in [first, second] {
      var events: [Int] = []
      for await event in stream { events.append(event) }
      got.append(events)
    }
    #expect(got == [[1, 2, 3, 4], [2, 3, 4]])
  }

  /// A read cancelled while it waits ends the iteration for good: the hub forgets the
  /// listener, so what is yielded later neither piles up for it nor reaches a later read.
  @Test func aCancelledReadEndsTheIterationAndTheHubForgetsTheListener() async {
    let hub = EventHub<Int>()
    let stream = hub.stream()
    let reader = Task {
      var iterator = stream.makeAsyncIterator()
      let first = await iterator.next()  // waits: nothing yielded yet
      hub.yield(7)
      let second = await iterator.next()
      return (first, second)
    }
    reader.cancel()
    let (first, second) = await reader.value
    #expect(first == nil)
    #expect(second == nil)
    #expect(hub.listenerCount == 0)
  }

  /// A stream and its iterator released: the hub forgets the listener.
  @Test func aReleasedStreamIsForgotten() {
    let hub = EventHub<Int>()
    do {
      let stream = hub.stream()
      withExtendedLifetime(stream) { #expect(hub.listenerCount == 1) }
    }
    #expect(hub.listenerCount == 0)
  }

  /// The observer gets each event in the yield itself, before it returns, with streams
  /// listening or not, and every stream still gets its own copy in order.
  @Test func theObserverIsCalledInTheYieldAlongsideTheStreams() async {
    let hub = EventHub<Int>()
    let seen = Locked<[Int]>([])
    #expect(hub.observe { event in seen.withLock { $0.append(event) } })
    hub.yield(1)
    #expect(seen.withLock { $0 } == [1])
    let stream = hub.stream()
    hub.yield(2)
    #expect(seen.withLock { $0 } == [1, 2])
    hub.finish()
    // After the end the streams are gone; the observer, the hub's for its life, still hears.
    hub.yield(3)
    #expect(seen.withLock { $0 } == [1, 2, 3])
    var streamed: [Int] = []
    for await event in stream { streamed.append(event) }
    #expect(streamed == [2])
  }

  /// One observer per hub: a second is refused and never called, the first keeps hearing.
  @Test func aSecondObserverIsRefused() {
    let hub = EventHub<Int>()
    let first = Locked<[Int]>([])
    let second = Locked<[Int]>([])
    #expect(hub.observe { event in first.withLock { $0.append(event) } })
    #expect(!hub.observe { event in second.withLock { $0.append(event) } })
    hub.yield(5)
    #expect(first.withLock { $0 } == [5])
    #expect(second.withLock { $0 }.isEmpty)
  }
}
