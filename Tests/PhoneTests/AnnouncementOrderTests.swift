import ANCS
import Phone
import Testing

/// The phone announces its changes in the order it made them, whoever makes them and from
/// whichever task: while notifications are only posted, the CategoryCount and the UIDs an
/// accessory sees only rise; while they are only removed, the count only falls.
@Suite(.timeLimit(.minutes(1))) struct AnnouncementOrderTests {
  static let count = 200

  /// The first `count` events the watch is told.
  static func told(_ watch: SharingTests.Subscribed) async throws -> [NotificationSourceEvent] {
    var events = watch.events.makeAsyncIterator()
    var seen: [NotificationSourceEvent] = []
    while seen.count < count, let bytes = await events.next() {
      seen.append(try NotificationSourceEvent(decoding: bytes))
    }
    return seen
  }

  /// Where `values` first breaks the order `inOrder` asks for; nil when it never does.
  static func firstBreak(_ values: [Int], _ inOrder: (Int, Int) -> Bool) -> String? {
    guard let index = values.indices.dropFirst().first(where: { !inOrder(values[$0 - 1], values[$0]) }) else {
      return nil
    }
    return "\(values[index - 1]) then \(values[index]) at event \(index)"
  }

  @Test func postsFromManyTasksAreAnnouncedInTheOrderMade() async throws {
    let phone = try SharingTests.phone(.allow)
    let watch = try await SharingTests.Subscribed(phone)
    await withTaskGroup(of: Void.self) { group in
      for index in 0..<Self.count { group.addTask { await phone.post(SharingTests.note("\(index)")) } }
    }
    let seen = try await Self.told(watch)
    #expect(seen.map(\.eventID) == Array(repeating: .added, count: Self.count))
    #expect(Self.firstBreak(seen.map { Int($0.categoryCount) }, <) == nil, "CategoryCount")
    #expect(Self.firstBreak(seen.map { Int($0.notificationUID) }, <) == nil, "UIDs")
  }

  @Test func removalsFromManyTasksAreAnnouncedInTheOrderMade() async throws {
    let phone = try SharingTests.phone(.allow)
    var uids: [UInt32] = []
    for index in 0..<Self.count { uids.append(await phone.post(SharingTests.note("\(index)")).uid) }
    let watch = try await SharingTests.Subscribed(phone)
    let report = try await Self.told(watch)
    #expect(report.allSatisfy { $0.eventFlags.contains(.preExisting) })
    await withTaskGroup(of: Void.self) { group in
      for uid in uids { group.addTask { await phone.remove(uid) } }
    }
    let seen = try await Self.told(watch)
    #expect(seen.map(\.eventID) == Array(repeating: .removed, count: Self.count))
    #expect(Self.firstBreak(seen.map { Int($0.categoryCount) }, >) == nil, "CategoryCount")
    #expect(seen.last?.categoryCount == 0)
  }
}
