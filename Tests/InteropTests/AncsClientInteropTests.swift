import Foundation
import TestSupport
import Testing

/// Bumble's own ANCS client (`AncsClient` of bumble.profiles.ancs, a widely used
/// implementation written without this project) against `ancs phone --bluetooth`: the phone
/// scans for the Bumble device's ANCS solicitation, connects and pairs on its Security
/// Request; Bumble subscribes, fetches every attribute kind and the app names, and performs
/// both actions.
@Suite(
  "Bumble's AncsClient against ancs phone over the air", .serialized,
  .enabled(if: bumblePython != nil, "needs python3 -m venv and PyPI to install bumble (scripts/bumble-venv.sh)"),
  .enabled(if: FileManager.default.isExecutableFile(atPath: ancsPath), "needs the ancs binary: swift build first"),
  .timeLimit(scaledMinutes(2)))
struct AncsClientInteropTests {
  /// What the test posts, as jsonl commands; Bumble asks for at most 64 bytes of Message.
  static let posts: [[String: String]] = [
    [
      "app": "com.apple.MobileSMS", "category": "social", "title": "Maya Ørsted", "subtitle": "Lunch 🍜",
      "message": "Are we still on? Ça va — 京都 🚄", "date": "20261129T120000", "positiveAction": "Reply",
      "negativeAction": "Dismiss",
    ],
    [
      "app": "com.apple.mobilemail", "category": "email", "title": "Quarterly report", "subtitle": "Re: Zahlen für Q3",
      "message": "Siehe Anhang.\nGrüße, Jürgen", "date": "20251231T235959", "positiveAction": "Archive",
      "negativeAction": "Delete",
    ],
    // 102 bytes of text whose 64-byte cut falls inside a 4-byte character; no actions.
    [
      "app": "com.example.chat", "title": "Long", "message": String(repeating: "Ünïcødé 🚄 ", count: 6),
      "date": "20240229T083000",
    ],
  ]
  static let appNames = ["com.apple.MobileSMS": "Messages", "com.apple.mobilemail": "Mail", "com.example.chat": "Chat"]

  @Test("Bumble's AncsClient pairs, fetches every attribute kind and the app names, and performs both actions")
  func bumbleAncsClient() async throws {
    try await withBumblePeer(role: "ancs-client \(Self.posts.count)") { peer in
      let port = try #require(await peer.readyPort())
      let bonds = NSTemporaryDirectory() + "ancs-client-interop-\(getpid()).json"
      defer { unlink(bonds) }
      let phone = try AncsProcess([
        "phone", "--bluetooth", "hci-tcp:127.0.0.1:\(port)", "--bonds", bonds, "--commands", "jsonl",
      ])
      defer { phone.kill() }

      // Bumble asked for pairing and subscribed: the session is on.
      #expect(await peer.line(startingWith: "paired") == "paired ltk")
      #expect(await peer.line(startingWith: "subscribed") != nil)
      #expect(await phone.line(containing: #""event":"sessionStarted""#) != nil, "\(phone.stderr)")
      var posted: [Int: [String: String]] = [:]
      for post in Self.posts {
        var command: [String: Any] = post
        command["cmd"] = "post"
        phone.send(String(decoding: try JSONSerialization.data(withJSONObject: command), as: UTF8.self))
        let answer = try #require(await phone.line(containing: #""cmd":"post""#), "\(phone.stderr)")
        posted[try #require(try jsonObject(answer)["uid"] as? Int)] = post
      }
      try #require(await peer.line(startingWith: "done") != nil)
      let uids = try peer.transcript.compactMap { line in try payload(of: line, kind: "attributes")?["uid"] as? Int }
      #expect(Set(uids) == Set(posted.keys))

      // Each announced with its category and action flags (PositiveAction 8, NegativeAction 16).
      let events = try peer.transcript.compactMap { try payload(of: $0, kind: "notification") }
      for event in events where event["event"] as? String == "NOTIFICATION_ADDED" {
        let post = try #require(posted[event["uid"] as? Int ?? -1])
        #expect(event["category"] as? String == (post["category"] ?? "other").uppercased())
        #expect((event["flags"] as? Int ?? 0) & 0x18 == (post["positiveAction"] == nil ? 0 : 0x18))
      }
      // Every attribute kind, byte for byte; the long message cut at a character boundary.
      for attributes in try peer.transcript.compactMap({ try payload(of: $0, kind: "attributes") }) {
        let post = try #require(posted[attributes["uid"] as? Int ?? -1])
        let message = post["message"] ?? ""
        #expect(attributes["APP_IDENTIFIER"] as? String == post["app"])
        #expect(attributes["TITLE"] as? String == post["title"])
        #expect(attributes["SUBTITLE"] as? String == post["subtitle"] ?? "")
        #expect(attributes["MESSAGE"] as? String == prefix(of: message, bytes: 64))
        #expect(attributes["MESSAGE_SIZE"] as? Int == message.utf8.count)
        #expect(attributes["DATE"] as? String == post["date"])
        #expect(attributes["POSITIVE_ACTION_LABEL"] as? String == post["positiveAction"] ?? "")
        #expect(attributes["NEGATIVE_ACTION_LABEL"] as? String == post["negativeAction"] ?? "")
      }
      // App names as in the phone's registry.
      let names = try peer.transcript.compactMap { try payload(of: $0, kind: "app") }
      #expect(names.count == Self.posts.count)
      for name in names {
        let app = try #require(name["app"] as? String)
        #expect(name["DISPLAY_NAME"] as? String == Self.appNames[app], "\(app)")
      }

      // Both actions reached the phone, and each notification was removed.
      let actions = try peer.transcript.compactMap { try payload(of: $0, kind: "action") }
      #expect(actions.map { $0["action"] as? String } == ["POSITIVE", "NEGATIVE"])
      for action in actions {
        let uid = try #require(action["uid"] as? Int)
        let performed = try #require(await phone.line(containing: #""event":"action""#), "\(phone.stderr)")
        let event = try jsonObject(performed)
        #expect(event["uid"] as? Int == uid)
        #expect((event["action"] as? String)?.uppercased() == action["action"] as? String)
        #expect(
          events.contains { $0["event"] as? String == "NOTIFICATION_REMOVED" && $0["uid"] as? Int == uid },
          "no Removed event for \(uid)")
      }
      // The removed notification's attributes are refused with 0xA2 (Invalid Parameter).
      let refused = try peer.transcript.compactMap { try payload(of: $0, kind: "refused") }
      #expect(refused.first?["error"] as? String == "INVALID_PARAMETER")
      #expect(refused.first?["uid"] as? Int == uids.first)
      // Only the notification without actions is left on the phone.
      phone.send(#"{"cmd":"list"}"#)
      let list = try jsonObject(try #require(await phone.line(containing: #""cmd":"list""#)))
      #expect((list["notifications"] as? [[String: Any]])?.compactMap { $0["uid"] as? Int } == uids.last.map { [$0] })
      #expect(!peer.transcript.contains { $0.hasPrefix("error") || $0.hasPrefix("pairing-failed") })
      #expect(try await peer.exitCode() == 0, "\(peer.stderr.suffix(2000))")
      phone.send(#"{"cmd":"quit"}"#)
    }
  }
}

private func jsonObject(_ text: some StringProtocol) throws -> [String: Any] {
  try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
}

/// The JSON object of a Bumble peer line "KIND {...}"; nil for a line of another kind.
private func payload(of line: String, kind: String) throws -> [String: Any]? {
  guard line.hasPrefix(kind + " {") else { return nil }
  return try jsonObject(line.dropFirst(kind.count + 1))
}

/// The longest prefix of `text` within `bytes` UTF-8 bytes that ends at a character boundary.
private func prefix(of text: String, bytes: Int) -> String {
  var used = 0
  return String(
    text.unicodeScalars.prefix { scalar in
      used += String(scalar).utf8.count
      return used <= bytes
    })
}
