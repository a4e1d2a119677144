import ANCS
import Foundation
import TestSupport
import Testing

@testable import WatchDisplay

@Suite struct SettingsTests {
  @Test func quietHours() throws {
    let night = try QuietHours(parsing: "22:00-07:30")
    #expect(night.description == "22:00-07:30")
    #expect(night.contains(minuteOfDay: 23 * 60))
    #expect(night.contains(minuteOfDay: 0))
    #expect(night.contains(minuteOfDay: 7 * 60 + 29))
    #expect(!night.contains(minuteOfDay: 7 * 60 + 30))
    #expect(!night.contains(minuteOfDay: 12 * 60))
    let lunch = try QuietHours(parsing: "12:00 - 13:00")
    #expect(lunch.contains(minuteOfDay: 12 * 60 + 30) && !lunch.contains(minuteOfDay: 13 * 60))
    #expect(try QuietHours(parsing: "7:05-8:00").start == 7 * 60 + 5)
  }

  @Test(arguments: ["", "22:00", "24:00-07:00", "22:60-07:00", "22-07", "10:00-10:00", "a:b-c:d", "22:00-07:00-08:00"])
  func badQuietHours(_ text: String) {
    #expect(throws: SettingsError.self) { try QuietHours(parsing: text) }
  }

  @Test func configFile() throws {
    var settings = FaceSettings()
    try settings.apply(
      config: """
        # my watch
        mute = social, news
        mute = email   # more
        quiet-hours = 22:00-07:00

        color = off
        alert = flash
        message-seconds = 10
        """, file: "watch.conf")
    #expect(settings.muted == [.social, .news, .email])
    #expect(settings.quietHours == QuietHours(start: 22 * 60, end: 7 * 60))
    #expect(!settings.color)
    #expect(settings.alert == .flash)
    #expect(settings.messageTime == .seconds(10))
  }

  @Test(
    arguments: [
      ("mute = chat", "watch.conf: line 1: unknown category 'chat'; valid: other, incomingCall"),
      (
        "\nvolume = 3",
        "watch.conf: line 2: unknown setting 'volume'; known: mute, quiet-hours, color, alert, message-seconds"
      ),
      ("quiet-hours = late", "watch.conf: line 1: quiet hours take HH:MM-HH:MM"),
      ("color = purple", "watch.conf: line 1: color takes on or off, not 'purple'"),
      ("mute social", "watch.conf: line 1: expected key = value"),
      ("alert = siren", "watch.conf: line 1: alert takes bell, flash or off"),
      ("message-seconds = 0", "watch.conf: line 1: message-seconds takes a whole number of seconds from 1 to 600"),
      ("message-seconds = 601", "watch.conf: line 1: message-seconds takes a whole number of seconds from 1 to 600"),
      ("message-seconds = 2.5", "watch.conf: line 1: message-seconds takes a whole number of seconds from 1 to 600"),
    ] as [(String, String)])
  func badConfigFiles(_ text: String, _ message: String) {
    var settings = FaceSettings()
    do {
      try settings.apply(config: text, file: "watch.conf")
      Issue.record("accepted \(text)")
    } catch {
      #expect(error.description.hasPrefix(message), "\(error)")
    }
  }

  /// The README's example configuration file is one the face reads.
  @Test func theReadmeExampleIsAConfigFile() throws {
    let readme = try repositoryText("README.md")
    let blocks = readme.components(separatedBy: "```").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
    let example = try #require(blocks.first { $0.contains("quiet-hours = ") })
    var settings = FaceSettings()
    try settings.apply(config: example, file: "README.md")
    #expect(settings.quietHours != nil && !settings.muted.isEmpty && settings.messageTime != FaceSettings().messageTime)
  }

  @Test func categoriesByTheirANCSNames() throws {
    #expect(try FaceSettings.category(named: "healthAndFitness") == .healthAndFitness)
    #expect(throws: SettingsError.self) { try FaceSettings.category(named: "Social") }
  }
}
