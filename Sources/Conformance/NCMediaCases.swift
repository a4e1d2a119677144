import AMS
import ATT
import GATT
import Wire

/// The NC cases of the Apple Media Service: the harness phone publishes AMS beside ANCS, as
/// every iPhone does, and judges the accessory's media remote (Protocol/AMS.md, What an
/// accessory must do; Protocol/conformance.md, AMS/NC). An accessory without AMS fails them:
/// leave them out with `--case ANCS/`.
enum NCMediaCases {
  static let rules = "Protocol/AMS.md, What an accessory must do"

  /// A title that no Entity Update at `mtu` holds whole, with multi-byte characters, and
  /// no longer than an attribute value can be (512 bytes, Core Vol 3 Part F 3.2.9).
  static func longTitle(mtu: Int) -> String {
    let length = min(512, mtu - 3 - EntityUpdate.headerSize + 24)
    let phrase = "Für Élise ♪ 日本 "
    var title = ""
    while title.utf8.count + phrase.utf8.count <= length { title += phrase }
    return title + String(repeating: ".", count: length - title.utf8.count)
  }

  /// A link on which the accessory has registered for the track's attributes.
  static func registered(_ ctx: NCContext) async throws(CaseOutcome) -> NCSession {
    let session = try await ctx.accept()
    try await session.awaitRegistration(.track)
    return session
  }

  /// Whether `json` is the accessory's report of `attribute`, whole or (`cut`) as the phone
  /// cut it (Protocol/events.md).
  static func isReport(_ json: JSON, of attribute: EntityAttribute, cut: Bool = false) -> Bool {
    json["event"]?.string == "media" && json["entity"]?.string == attribute.entity.name
      && json["attribute"]?.string == attribute.name && json["truncated"]?.bool == cut
  }

  /// Requires the accessory's first reports of `attributes`, whole, to show what the phone
  /// told; skipped without the accessory's event lines.
  static func expectShown(_ ctx: NCContext, _ session: NCSession, _ attributes: [EntityAttribute])
    async throws(CaseOutcome)
  {
    var waiting = attributes
    while !waiting.isEmpty {
      let names = waiting.map(\.description).joined(separator: ", ")
      let shown = try await ctx.report("media \(names)") { json in waiting.contains { isReport(json, of: $0) } }
      guard let attribute = waiting.first(where: { isReport(shown, of: $0) }) else { continue }
      waiting.removeAll { $0 == attribute }
      try compare(shown, attribute, told: session.mediaValue(attribute) ?? "")
    }
  }

  /// Requires the accessory's next whole report of `attribute` that differs from `old` to
  /// show `value`.
  static func expectChange(_ ctx: NCContext, _ attribute: EntityAttribute, from old: String, to value: String)
    async throws(CaseOutcome)
  {
    let shown = try await ctx.report("media \(attribute) \(quoted(value))") {
      isReport($0, of: attribute) && $0["value"]?.string != old
    }
    try compare(shown, attribute, told: value)
  }

  /// Requires the accessory to report `attribute` cut, then whole as `value`.
  static func expectReadWhole(_ ctx: NCContext, _ attribute: EntityAttribute, _ value: String)
    async throws(CaseOutcome)
  {
    _ = try await ctx.report("media \(attribute) as the phone cut it") { isReport($0, of: attribute, cut: true) }
    let shown = try await ctx.report("media \(attribute) read whole") { isReport($0, of: attribute) }
    try compare(shown, attribute, told: value)
  }

  private static func compare(_ shown: JSON, _ attribute: EntityAttribute, told: String) throws(CaseOutcome) {
    let text = shown["value"]?.string ?? ""
    try check(text == told, "the accessory shows \(attribute) \(quoted(text)); the phone told \(quoted(told))")
  }

  static func quoted(_ text: String) -> String {
    "\"\(text.unicodeScalars.map { $0.value < 0x20 ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined())\""
  }

  /// Makes the wearer ask for `command` and returns the accessory's next Remote Command
  /// write, which must be one valid byte.
  static func remoteCommand(
    _ command: RemoteCommandID, from wearer: any WearerStimulus, on session: NCSession
  ) async throws(CaseOutcome) -> RemoteCommandID {
    let name = command.name ?? "\(command.rawValue)"
    do { try await wearer.media(command) } catch {
      throw .failed("could not make the wearer ask for \(name): \(error)")
    }
    return try await session.caseLog.awaiting("a Remote Command write after the wearer asked for \(name)") {
      () throws(CaseOutcome) -> RemoteCommandID in
      while true {
        guard case .wrote(.remoteCommand, let bytes, _) = try await session.nextMediaActivity() else { continue }
        do { return try RemoteCommand(decoding: bytes).command } catch {
          throw .failed(
            "the accessory wrote \(Hex.encode(bytes)) to Remote Command: \(error) (a remote command is one "
              + "RemoteCommandID byte; an iPhone answers Invalid Command, 0xA1)")
        }
      }
    }
  }

  /// Waits until the accessory knows the commands the player takes: its report of them when
  /// it reports (otherwise the registration that follows its subscription is taken as the sign).
  static func awaitCommandsKnown(_ ctx: NCContext, _ commands: [RemoteCommandID]) async throws(CaseOutcome) {
    guard ctx.accessory.observer != nil else { return }
    let names = commands.compactMap(\.name)
    _ = try await ctx.report("the commands \(names.joined(separator: ", "))") {
      $0["event"]?.string == "mediaCommands" && ($0["commands"]?.array ?? []).compactMap(\.string) == names
    }
  }

  static let all: [ConformanceCase] = [
    ConformanceCase(
      "AMS/NC/DISC/BV-01", "Subscribes to Entity Update before it registers for entity updates",
      rule: "\(rules): subscribe to Entity Update, then write it (AMS spec: Invalid State otherwise)"
    ) { ctx in
      let session = try await ctx.accept()
      try await session.awaitRegistration(.track, strict: true)
    },
    ConformanceCase(
      "AMS/NC/DISC/BV-02", "Subscribes and registers again when AMS moves (Service Changed)",
      rule: "\(rules): on Service Changed, find AMS again and set it up at its new handles"
    ) { ctx in
      let session = try await registered(ctx)
      await session.forgetMediaActivity()
      try await session.moveAMS()
      try await session.awaitRegistration(
        .track, strict: true, " again, at the new handles (AMS moved, announced with Service Changed)")
    },
    ConformanceCase(
      "AMS/NC/EU/BV-01", "Shows the track the phone tells, and its change",
      rule: "Protocol/AMS.md, Entity Update: the value follows EntityID, AttributeID and EntityUpdateFlags"
    ) { ctx in
      _ = try ctx.observer()
      let session = try await registered(ctx)
      try await expectShown(ctx, session, [.title, .artist, .album])
      let old = session.mediaValue(.title) ?? ""
      let next = "Clair de Lune ☾"
      await session.tellMedia(.title, next)
      try await expectChange(ctx, .title, from: old, to: next)
    },
    ConformanceCase(
      "AMS/NC/EA/BV-01", "Reads a title the phone cut whole through Entity Attribute",
      rule: "\(rules): a cut value it shows is read whole (select it on Entity Attribute, then read)"
    ) { ctx in
      let session = try await registered(ctx)
      // The registration's own notification of the title goes first: a long title told
      // before it is sent could be overtaken by it, and the accessory would rightly show the
      // old title after the cut one (a harness race seen once under ThreadSanitizer).
      try await session.awaitValuesTold(.track)
      await session.forgetMediaActivity()
      let title = longTitle(mtu: session.connection.mtu)
      await session.tellMedia(.title, title)
      try await session.caseLog.awaiting(
        "the accessory to select the title (02 02) on Entity Attribute and read it, the phone having cut it"
      ) { () throws(CaseOutcome) in
        var selected = false
        while true {
          switch try await session.nextMediaActivity() {
          case .wrote(.entityAttribute, let bytes, let refused):
            try check(refused == nil, "the phone refused the Entity Attribute write \(Hex.encode(bytes))")
            selected = bytes == EntityAttributeSelection(.title).encoded()
          case .read(let attribute):
            try check(
              selected && attribute == .title,
              "the accessory read Entity Attribute with \(attribute.map { "\($0)" } ?? "nothing") selected, "
                + "not the title")
            if ctx.accessory.observer != nil { try await expectReadWhole(ctx, .title, title) }
            return
          default: continue
          }
        }
      }
    },
    ConformanceCase(
      "AMS/NC/RC/BV-01", "Sends the wearer's remote commands, one byte each",
      rule: "Protocol/AMS.md, Remote Command: one byte, a RemoteCommandID"
    ) { ctx in
      let wearer = try ctx.mediaWearer()
      let session = try await registered(ctx)
      try await awaitCommandsKnown(ctx, NCMedia.musicCommands)
      let paused = try await remoteCommand(.pause, from: wearer, on: session)
      try check(
        [.pause, .togglePlayPause].contains(paused),
        "the wearer asked to pause; the accessory sent \(paused.name ?? "\(paused.rawValue)")")
      let next = try await remoteCommand(.nextTrack, from: wearer, on: session)
      try check(next == .nextTrack, "the wearer asked for the next track; the accessory sent \(next.name ?? "?")")
    },
    ConformanceCase(
      "AMS/NC/RC/BV-02", "Sends only the commands the player takes now, and follows their changes",
      rule: "\(rules): write only the commands the player lists now (Remote Command notifications)"
    ) { ctx in
      let wearer = try ctx.mediaWearer()
      // Without its reports, nothing says when the accessory has taken a new list in.
      _ = try ctx.observer()
      let session = try await registered(ctx)
      let withoutNext: [RemoteCommandID] = [.play, .pause, .togglePlayPause]
      await session.tellCommands(withoutNext)
      try await awaitCommandsKnown(ctx, withoutNext)
      // Next is not listed: the next write must be the pause asked after it.
      do { try await wearer.media(.nextTrack) } catch {
        throw CaseOutcome.failed("could not make the wearer ask for the next track: \(error)")
      }
      let first = try await remoteCommand(.pause, from: wearer, on: session)
      try check(
        first != .nextTrack,
        "the accessory sent NextTrack, which the player did not list (it lists play, pause, togglePlayPause)")
      await session.tellCommands(NCMedia.musicCommands)
      try await awaitCommandsKnown(ctx, NCMedia.musicCommands)
      let next = try await remoteCommand(.nextTrack, from: wearer, on: session)
      try check(next == .nextTrack, "the player lists NextTrack again; the accessory sent \(next.name ?? "?")")
    },
  ]
}
