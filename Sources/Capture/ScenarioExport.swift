import Wire

/// A scenario (Protocol/scenario.md) that makes `ancs phone` do what the phone in a capture
/// did: its apps, its notifications with the attributes the accessory fetched, posted,
/// modified and removed at the times they were, and the tracks its media player played.
/// Built from the timeline (`CaptureInspector.timeline`).
public struct CapturedScenario: Sendable {
  /// The scenario file's JSON.
  public var json: JSON
  /// Notifications whose attributes the capture never showed (posted with what is known).
  public var unfetched: Int
  public var notifications: Int

  struct Notification {
    var id: String
    var category = "other"
    var flags: [String] = []
    var attributes: [String: String] = [:]
  }

  /// The steps begin at the first Notification Source event or media update (time 0);
  /// notifications that were on the phone before the first connection (PreExisting) are
  /// posted at 0.
  public init(_ timeline: [CaptureEvent], name: String) {
    let relevant: Set<String> = ["added", "modified", "removed", "media"]
    let start = timeline.first { relevant.contains($0.event) }?.time ?? 0
    var apps: [String: String] = [:]
    var templates: [UInt32: Notification] = [:]
    var order: [UInt32] = []
    var steps: [(at: Double, fields: [(String, JSON)])] = []
    var live: Set<UInt32> = []
    var posted: Set<UInt32> = []
    var pendingModify: [UInt32: Int] = [:]
    var track: [String: String] = [:]
    var trackStep: Int?
    func at(_ event: CaptureEvent) -> Double { max(0, ((event.time - start) * 1000).rounded() / 1000) }

    for event in timeline {
      let uid = event.json["uid"]?.integer.flatMap { UInt32(exactly: $0) }
      switch event.event {
      case "appName":
        if let app = event.json["app"]?.string, let name = event.json["name"]?.string, !name.isEmpty {
          apps[app] = name
        }
      case "added":
        guard let uid else { continue }
        let flags = event.json["flags"]?.array?.compactMap(\.string) ?? []
        if live.contains(uid) { continue }  // announced again on a new connection
        live.insert(uid)
        if !posted.contains(uid) {
          posted.insert(uid)
          order.append(uid)
          var template = Notification(id: "n\(uid)")
          template.category = event.json["category"]?.string ?? "other"
          template.flags = flags.filter { $0 == "silent" || $0 == "important" }
          templates[uid] = template
          steps.append((flags.contains("preExisting") ? 0 : at(event), [("post", .string("n\(uid)"))]))
        }
      case "modified":
        guard let uid, posted.contains(uid) else { continue }
        pendingModify[uid] = steps.count
        steps.append((at(event), [("modify", .string("n\(uid)"))]))
      case "removed":
        guard let uid, live.remove(uid) != nil else { continue }
        steps.append((at(event), [("remove", .string("n\(uid)"))]))
      case "answer":
        guard let uid, var template = templates[uid] else { continue }
        let keys = [
          "appIdentifier", "title", "subtitle", "message", "date", "positiveActionLabel", "negativeActionLabel",
        ]
        var values: [String: String] = [:]
        for key in keys { if let value = event.json[key]?.string { values[key] = value } }
        if let index = pendingModify.removeValue(forKey: uid) {
          // The answer after a Modified says what changed.
          var changes: [(String, JSON)] = []
          for key in ["title", "subtitle", "message"]
          where values[key] != nil && values[key] != template.attributes[key] {
            changes.append((key, .string(values[key] ?? "")))
          }
          if changes.isEmpty { changes.append(("message", .string(template.attributes["message"] ?? ""))) }
          steps[index].fields += changes
        }
        template.attributes.merge(values) { _, new in new }
        templates[uid] = template
      case "media":
        guard let attribute = event.json["attribute"]?.string, attribute.hasPrefix("track."),
          let value = event.json["value"]?.string, event.json["truncated"]?.bool != true
        else { continue }
        let key = String(attribute.dropFirst("track.".count))
        let newTrack = key == "title" && value != track["title"] && !value.isEmpty
        track[key] = value
        if newTrack {
          trackStep = steps.count
          steps.append((at(event), []))
        }
        // The phone tells a track's attributes one by one, in either order around its title.
        if let index = trackStep, ["title", "artist", "album", "duration"].contains(key) {
          steps[index].fields = [("play", Self.track(track))]
        }
      default:
        continue
      }
    }
    // Modified events with no answer after them still need a change to be valid.
    for index in pendingModify.values { steps[index].fields.append(("message", .string(""))) }

    let unknownApp = "com.example.captured"
    var notifications: [JSON] = []
    var unfetched = 0
    var usedApps: Set<String> = []
    for uid in order {
      guard let template = templates[uid] else { continue }
      let attributes = template.attributes
      if attributes.isEmpty { unfetched += 1 }
      let app = attributes["appIdentifier"].flatMap { $0.isEmpty ? nil : $0 } ?? unknownApp
      usedApps.insert(app)
      var fields: [(String, JSON)] = [
        ("id", .string(template.id)), ("app", .string(app)), ("category", .string(template.category)),
      ]
      for key in ["title", "subtitle", "message"] {
        if let value = attributes[key], !value.isEmpty { fields.append((key, .string(value))) }
      }
      let date = attributes["date"] ?? ""
      fields.append(("date", .string(Self.isDate(date) ? date : "")))
      for (key, label) in [("positiveAction", "positiveActionLabel"), ("negativeAction", "negativeActionLabel")] {
        if let value = attributes[label], !value.isEmpty { fields.append((key, .string(value))) }
      }
      if !template.flags.isEmpty { fields.append(("flags", .array(template.flags.map { .string($0) }))) }
      notifications.append(.object(fields))
    }
    let appList = usedApps.filter { $0 != "com.apple.mobilephone" || apps[$0] != nil }.sorted().map { id in
      JSON.object([("id", .string(id)), ("name", .string(apps[id] ?? (id == unknownApp ? "Captured" : id)))])
    }
    let ordered = steps.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
    let stepList = ordered.map { JSON.object([("at", .number($0.at))] + $0.fields) }
    var top: [(String, JSON)] = [("name", .string(name))]
    if unfetched > 0 {
      top.append(
        ("comment", .string("\(unfetched) notification(s) were never fetched in the capture: their text is unknown")))
    }
    top += [("apps", .array(appList)), ("notifications", .array(notifications))]
    // A scenario has at least one step: with nothing captured, one that sets the battery.
    top.append(
      ("steps", .array(stepList.isEmpty ? [.object([("at", .number(0)), ("battery", .number(100))])] : stepList)))
    json = .object(top)
    self.unfetched = unfetched
    self.notifications = notifications.count
  }

  /// A `play` step's track from what the phone told of it.
  static func track(_ told: [String: String]) -> JSON {
    var fields: [(String, JSON)] = [("title", .string(told["title"] ?? ""))]
    for name in ["artist", "album"] { if let text = told[name], !text.isEmpty { fields.append((name, .string(text))) } }
    if let duration = told["duration"].flatMap(Double.init), duration > 0 {
      fields.append(("duration", .number(duration)))
    }
    return .object(fields)
  }

  /// `yyyyMMddTHHmmss`, as a scenario's Date takes it (checked again when it is loaded).
  static func isDate(_ text: String) -> Bool {
    let characters = Array(text)
    return characters.count == 15 && characters[8] == "T"
      && characters.enumerated().allSatisfy { $0.offset == 8 || $0.element.isASCII && $0.element.isNumber }
  }
}
