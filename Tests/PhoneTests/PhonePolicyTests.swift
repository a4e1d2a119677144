import ANCS
import Testing

@testable import Phone

/// The phone's fault switches as one policy value: without faults it reports every event as
/// the rules say, and each event fault changes exactly the field it names.
@Suite struct PhonePolicyTests {
  /// Every EventID with every combination of Silent, Important and PreExisting.
  static let events: [NotificationSourceEvent] = [EventID.added, .modified, .removed].flatMap { id in
    (0..<8).map { bits in
      NotificationSourceEvent(
        eventID: id, eventFlags: EventFlags(rawValue: UInt8(bits)), categoryID: .email, categoryCount: 5,
        notificationUID: 42)
    }
  }

  @Test func withoutFaultsEveryLiveEventGoesOutUnchanged() {
    let policy = PhonePolicy([], settings: PhoneSettings())
    for event in Self.events { #expect(policy.live(event) == event) }
    #expect(policy.exchangesMTU && policy.readsDeviceName && policy.disconnectsOnKeyMissing)
    #expect(policy.preExistingFlag == .preExisting && !policy.reusesRemovedUIDs && policy.honoursRevocation)
  }

  @Test func eachEventFaultChangesWhatItNames() {
    let before = PhonePolicy(.categoryCountBeforeEvent, settings: PhoneSettings())
    let asAdded = PhonePolicy(.modifiedAsAdded, settings: PhoneSettings())
    let asModified = PhonePolicy(.removedAsModified, settings: PhoneSettings())
    let plain = PhonePolicy(.noImportanceFlags, settings: PhoneSettings())
    for event in Self.events {
      var expected = event
      if event.eventID == .added { expected.categoryCount = 4 }
      if event.eventID == .removed { expected.categoryCount = 6 }
      #expect(before.live(event) == expected)
      expected = event
      if event.eventID == .modified { expected.eventID = .added }
      #expect(asAdded.live(event) == expected)
      expected = event
      if event.eventID == .removed { expected.eventID = .modified }
      #expect(asModified.live(event) == expected)
      expected = event
      expected.eventFlags.subtract([.silent, .important])
      #expect(plain.live(event) == expected)
    }
  }

  @Test func ancsIsShownBeforeEncryptionOnlyWhenAFaultSaysSo() {
    var settings = PhoneSettings()
    settings.ancsAfterEncryption = true
    #expect(PhonePolicy([], settings: settings).ancsHiddenUntilEncrypted)
    for fault: PhoneFaults in [
      .ancsAlwaysPublished, .notificationSourceUnencrypted, .dataSourceUnencrypted, .controlPointUnencrypted,
    ] {
      #expect(!PhonePolicy(fault, settings: settings).ancsHiddenUntilEncrypted)
    }
  }
}
