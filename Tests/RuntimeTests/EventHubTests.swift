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
}
