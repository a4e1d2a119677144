import AMS
import Testing

/// What the vectors cannot show: cutting a value to a notification, the elapsed time an
/// accessory works out, and the numbers the project writes.
@Suite struct AMSCodecTests {
  @Test func aValueThatFitsGoesWhole() {
    let update = EntityUpdate(.title, text: "Tall Bird", capacity: 20)
    #expect(update.flags == [] && update.text == "Tall Bird")
    #expect(update.encoded() == [2, 2, 0] + Array("Tall Bird".utf8))
  }

  @Test func aLongValueIsCutToTheNotificationAndMarkedTruncated() {
    // ATT_MTU 23: 20 bytes a notification, 17 of them for the value.
    let title = String(repeating: "x", count: 40)
    let update = EntityUpdate(.title, text: title, capacity: 20)
    #expect(update.flags == .truncated)
    #expect(update.encoded().count == 20 && update.value == Array(title.utf8.prefix(17)))
  }

  @Test(arguments: 3...30) func aCutNeverSplitsACharacter(capacity: Int) throws {
    let title = "Für Élise – ♪ 🎵 and more"
    let update = EntityUpdate(.title, text: title, capacity: capacity)
    #expect(update.encoded().count <= capacity)
    #expect(String(validating: update.value, as: UTF8.self) != nil, "cut inside a character at \(capacity)")
    #expect(title.utf8.starts(with: update.value))
    #expect(update.flags.contains(.truncated) == (update.value.count < title.utf8.count))
  }

  @Test func theElapsedTimeMovesWithTheRate() throws {
    let playing = try PlaybackInfo(text: "1,1.0,71.147")
    #expect(playing.elapsed(after: 10) == 81.147)
    let paused = try PlaybackInfo(text: "0,0.0,71.147")
    #expect(paused.elapsed(after: 10) == 71.147)
    let rewinding = try PlaybackInfo(text: "2,-2.0,30.0")
    #expect(rewinding.elapsed(after: 5) == 20)
  }

  @Test(arguments: [
    (0.0, "0.0"), (1.0, "1.0"), (0.4, "0.4"), (71.147, "71.147"), (71.14749, "71.147"), (215.0, "215.0"),
    (-2.0, "-2.0"), (0.0005, "0.001"), (-0.25, "-0.25"), (Double.nan, "0.0"), (Double.infinity, "0.0"),
  ])
  func numbersAreWrittenWithOneToThreeDecimals(value: Double, text: String) {
    #expect(AMSNumber.text(value) == text)
  }

  @Test func everyDefinedAttributeHasItsName() {
    #expect(EntityAttribute.all.count == 11)
    #expect(Set(EntityAttribute.all.compactMap(\.name)).count == 11)
    #expect(EntityAttribute.title.description == "track.title")
    #expect(EntityAttribute(.track, 9).name == nil)
  }
}
