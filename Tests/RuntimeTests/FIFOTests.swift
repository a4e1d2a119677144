import Runtime
import Testing

struct FIFOTests {
  /// Appends and pops interleaved so the taken front is dropped many times (both when the
  /// queue runs empty and when the front is most of the storage): order and count hold.
  @Test func orderAndCountSurviveTheFrontBeingDropped() {
    var queue = FIFO<[Int]>()
    var expected: [[Int]] = []
    var next = 0
    for round in 0..<50 {
      for _ in 0..<(round % 7 + 60) {
        queue.append([next])
        expected.append([next])
        next += 1
      }
      for _ in 0..<(round % 5 + 50) {
        #expect(queue.popFirst() == expected.removeFirst())
      }
      #expect(queue.count == expected.count)
      if round % 10 == 9 {
        while let element = queue.popFirst() { #expect(element == expected.removeFirst()) }
        #expect(queue.isEmpty && expected.isEmpty)
      }
    }
    while let element = queue.popFirst() { #expect(element == expected.removeFirst()) }
    #expect(expected.isEmpty && queue.count == 0)
  }
}
