import Runtime
import TestSupport
import Testing

@Suite(.timeLimit(scaledMinutes(1))) struct InboxTests {
  @Test func elementsComeOutInOrderThenNilOnceClosed() async {
    let inbox = Inbox<Int>()
    for value in 0..<200 { #expect(inbox.push(value)) }
    #expect(inbox.count == 200)
    inbox.close()
    #expect(!inbox.push(999), "a closed inbox drops what is pushed")
    var taken: [Int] = []
    while let value = await inbox.next() { taken.append(value) }
    #expect(taken == Array(0..<200))
    #expect(inbox.count == 0)
  }

  @Test func nextIfReadyTakesWhatIsQueuedWithoutWaiting() async {
    let inbox = Inbox<Int>()
    #expect(inbox.nextIfReady() == nil, "an empty inbox has nothing ready")
    for value in 0..<3 { inbox.push(value) }
    #expect(inbox.nextIfReady() == 0)
    #expect(await inbox.next() == 1, "the two ways share one queue, in order")
    #expect(inbox.nextIfReady() == 2)
    #expect(inbox.nextIfReady() == nil)
    inbox.push(3)
    inbox.close()
    #expect(inbox.nextIfReady() == 3, "what was queued before closing is still handed over")
    #expect(inbox.nextIfReady() == nil)
    #expect(await inbox.next() == nil)
  }

  @Test func aConsumerGetsWhatIsPushedFromElsewhereThenNilOnClose() async {
    let inbox = Inbox<String>()
    let consumer = Task {
      var seen: [String] = []
      while let line = await inbox.next() { seen.append(line) }
      return seen
    }
    for line in ["a", "b", "c"] { inbox.push(line) }
    inbox.close()
    #expect(await consumer.value == ["a", "b", "c"])
  }

  @Test func cancellingTheWaiterReturnsNilAndKeepsLaterElements() async {
    let inbox = Inbox<Int>()
    let waiter = Task { await inbox.next() }
    waiter.cancel()
    #expect(await waiter.value == nil, "a cancelled wait ends without an element")
    #expect(!inbox.isClosed, "cancelling a wait does not close the inbox")
    inbox.push(7)
    #expect(await inbox.next() == 7, "what arrives after the cancelled wait is kept")
  }
}
