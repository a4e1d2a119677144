import ANCS
import Wire

// Scenario files (Protocol/scenario.md): apps, notification templates and timed steps,
// parsed from JSON and validated completely before anything runs.

/// An app the phone knows: its identifier (the ANCS AppIdentifier) and display name.
public struct ScenarioApp: Hashable, Sendable {
  public var id: String
  public var name: String

  public init(id: String, name: String) {
    self.id = id
    self.name = name
  }

  /// The app that incoming calls come from, declared implicitly when a scenario uses it.
  public static let phone = ScenarioApp(id: "com.apple.mobilephone", name: "Phone")
}

/// The Date attribute of a notification as a scenario or a command gives it.
public enum NotificationDate: Hashable, Sendable, CustomStringConvertible {
  /// The phone's local time at the moment of posting (or modifying): `"now"`, or no "date" key.
  case now
  /// An empty Date attribute (what iOS sends for incoming calls): `""`.
  case empty
  /// A fixed date and time: `"20261129T120000"`.
  case fixed(ANCSDate)

  /// The Date attribute's value on `phone`, now.
  public func value(on phone: Phone) -> String {
    switch self {
    case .now: return phone.dateNow()
    case .empty: return ""
    case .fixed(let date): return date.description
    }
  }

  /// As written in a scenario: "now", "" or the date.
  public var description: String {
    switch self {
    case .now: return "now"
    case .empty: return ""
    case .fixed(let date): return date.description
    }
  }
}

/// What a notification will look like when posted; a scenario keeps them by id, a console
/// `post` carries one.
public struct NotificationTemplate: Hashable, Sendable {
  /// The app identifier (a registered app's id, or for console commands a name to resolve).
  public var app: String
  public var category: CategoryID
  /// Silent and Important only; the action flags follow from the labels.
  public var flags: EventFlags
  public var title: String
  public var subtitle: String
  public var message: String
  public var date: NotificationDate
  public var positiveAction: String?
  public var negativeAction: String?

  public init(
    app: String, category: CategoryID = .other, flags: EventFlags = [], title: String = "", subtitle: String = "",
    message: String = "", date: NotificationDate = .now, positiveAction: String? = nil, negativeAction: String? = nil
  ) {
    self.app = app
    self.category = category
    self.flags = flags
    self.title = title
    self.subtitle = subtitle
    self.message = message
    self.date = date
    self.positiveAction = positiveAction
    self.negativeAction = negativeAction
  }

  /// An incoming call from `caller`: category incomingCall from com.apple.mobilephone,
  /// message "Incoming Call", no date, actions Answer and Decline.
  public static func incomingCall(from caller: String) -> NotificationTemplate {
    NotificationTemplate(
      app: ScenarioApp.phone.id, category: .incomingCall, title: caller, message: "Incoming Call", date: .empty,
      positiveAction: "Answer", negativeAction: "Decline")
  }

  /// The notification to post, with the Date attribute already resolved.
  public func notification(date: String) -> PhoneNotification {
    PhoneNotification(
      appIdentifier: app, category: category, flags: flags.intersection([.silent, .important]), title: title,
      subtitle: subtitle, message: message, date: date, positiveAction: positiveAction,
      negativeAction: negativeAction)
  }
}

/// A new action label, or none.
public enum ActionLabelChange: Hashable, Sendable {
  case set(String)
  case remove
}

/// The fields a `modify` changes; nil leaves a field as it is.
public struct NotificationChange: Hashable, Sendable {
  public var title: String?
  public var subtitle: String?
  public var message: String?
  public var date: NotificationDate?
  /// Replaces Silent and Important.
  public var flags: EventFlags?
  public var positiveAction: ActionLabelChange?
  public var negativeAction: ActionLabelChange?

  public init(
    title: String? = nil, subtitle: String? = nil, message: String? = nil, date: NotificationDate? = nil,
    flags: EventFlags? = nil, positiveAction: ActionLabelChange? = nil, negativeAction: ActionLabelChange? = nil
  ) {
    self.title = title
    self.subtitle = subtitle
    self.message = message
    self.date = date
    self.flags = flags
    self.positiveAction = positiveAction
    self.negativeAction = negativeAction
  }

  public var isEmpty: Bool { self == NotificationChange() }

  /// Names of the changed fields, in file order ("message", "flags").
  public var fieldNames: [String] {
    var names: [String] = []
    if title != nil { names.append("title") }
    if subtitle != nil { names.append("subtitle") }
    if message != nil { names.append("message") }
    if date != nil { names.append("date") }
    if flags != nil { names.append("flags") }
    if positiveAction != nil { names.append("positiveAction") }
    if negativeAction != nil { names.append("negativeAction") }
    return names
  }

  /// Applies the change; `now` is the Date value to use for `.now`.
  public func apply(to notification: inout PhoneNotification, now: String) {
    if let title { notification.title = title }
    if let subtitle { notification.subtitle = subtitle }
    if let message { notification.message = message }
    if let date {
      switch date {
      case .now: notification.date = now
      case .empty: notification.date = ""
      case .fixed(let fixed): notification.date = fixed.description
      }
    }
    if let flags { notification.flags = flags.intersection([.silent, .important]) }
    switch positiveAction {
    case .set(let label)?: notification.positiveAction = label
    case .remove?: notification.positiveAction = nil
    case nil: break
    }
    switch negativeAction {
    case .set(let label)?: notification.negativeAction = label
    case .remove?: notification.negativeAction = nil
    case nil: break
    }
  }
}

/// What one step does.
public enum ScenarioAction: Hashable, Sendable {
  /// Posts the template with this id (again: each post is a new notification).
  case post(String)
  /// Changes the latest notification posted under this id that is still on the phone.
  case modify(String, NotificationChange)
  /// Removes the latest notification posted under this id that is still on the phone.
  case remove(String)
  /// An incoming call from `caller`; `id`, when given, lets later steps modify or remove it.
  case call(caller: String, id: String?)
  case battery(UInt8)
  /// Sets the phone's local time.
  case time(ANCSDate)
  /// Closes every watch's link.
  case disconnect
  /// Changes the media player.
  case media(MediaCommand)
}

/// One timed step.
public struct ScenarioStep: Hashable, Sendable {
  /// Seconds after the start of the scenario.
  public var at: Double
  public var action: ScenarioAction
  /// Its position in the file's "steps" array (steps run sorted by `at`).
  public var index: Int

  public init(at: Double, action: ScenarioAction, index: Int = 0) {
    self.at = at
    self.action = action
    self.index = index
  }

  /// `at` as a Duration.
  public var time: Duration { .milliseconds(Int64((at * 1000).rounded())) }
}

/// A scenario file or text that is not valid: the file, where (JSON path, or line and column
/// for a syntax error) and why. Its description is one line:
/// `demo.json: $.steps[2].modify: unknown notification id "n9"`.
public struct ScenarioError: Error, Hashable, Sendable, CustomStringConvertible {
  public var file: String
  /// The JSON path in $-notation ("$.steps[2].modify"); nil for a syntax error.
  public var path: String?
  /// Line and column (from 1) of a syntax error.
  public var line: Int?
  public var column: Int?
  public var reason: String

  public init(file: String, path: String?, line: Int? = nil, column: Int? = nil, reason: String) {
    self.file = file
    self.path = path
    self.line = line
    self.column = column
    self.reason = reason
  }

  public var description: String {
    if let line, let column { return "\(file): line \(line), column \(column): \(reason)" }
    return "\(file): \(path ?? "$"): \(reason)"
  }
}

/// A validated scenario.
public struct Scenario: Hashable, Sendable {
  /// The scenario's name (top-level "name"), if it has one.
  public var name: String?
  /// Apps to register before the first step, in file order; com.apple.mobilephone ("Phone")
  /// is added at the end when calls or templates use it without declaring it.
  public var apps: [ScenarioApp]
  /// Notification templates by id.
  public var notifications: [String: NotificationTemplate]
  /// Steps sorted by `at`; steps at the same time keep their file order.
  public var steps: [ScenarioStep]
  /// Seconds the scenario lasts: "duration", or the last step's `at`. A looping player
  /// starts the next round then (and at least 1 s after the round began).
  public var duration: Double

  public init(
    name: String? = nil, apps: [ScenarioApp], notifications: [String: NotificationTemplate], steps: [ScenarioStep],
    duration: Double? = nil
  ) {
    self.name = name
    self.apps = apps
    self.notifications = notifications
    self.steps = steps.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
    self.duration = duration ?? self.steps.last?.at ?? 0
  }

  /// Parses and validates scenario text. `file` names it in errors.
  public init(parsing text: String, file: String) throws(ScenarioError) {
    let json: JSON
    do {
      json = try JSON(parsing: text)
    } catch {
      throw ScenarioError(file: file, path: nil, line: error.line, column: error.column, reason: error.reason)
    }
    try self.init(json: json, file: file)
  }

  /// Validates a parsed JSON document.
  public init(json: JSON, file: String) throws(ScenarioError) {
    do {
      self = try ScenarioReader.scenario(json)
    } catch {
      throw ScenarioError(file: file, path: error.path.description, reason: error.reason)
    }
  }

  /// Every key a scenario file may contain, by place, for documentation and errors.
  public static let topLevelKeys = ["name", "duration", "apps", "notifications", "steps", "comment"]
  public static let appKeys = ["id", "name", "comment"]
  public static let notificationKeys = [
    "id", "app", "category", "title", "subtitle", "message", "date", "positiveAction", "negativeAction", "flags",
    "comment",
  ]
  /// The fields a modify step (or command) may change.
  public static let changeKeys = [
    "title", "subtitle", "message", "date", "flags", "positiveAction", "negativeAction",
  ]
  public static let actionKeys =
    ["post", "modify", "remove", "call", "battery", "time", "disconnect"] + MediaCommand.words
  /// The largest `at` or duration accepted, in seconds (about 11.5 days).
  public static let maximumTime: Double = 1_000_000
}

// MARK: - Reading JSON with paths

/// A JSON path in $-notation: `$.steps[2].modify`, `$["odd key"]`.
struct JSONPath: CustomStringConvertible, Sendable {
  var description = "$"

  func key(_ key: String) -> JSONPath {
    var first = true
    let plain =
      !key.isEmpty
      && key.unicodeScalars.allSatisfy { scalar in
        defer { first = false }
        let letter = (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || scalar == "_"
        return letter || (!first && scalar >= "0" && scalar <= "9")
      }
    if plain { return JSONPath(description: description + "." + key) }
    var quoted = ""
    JSON.string(key).write(to: &quoted)
    return JSONPath(description: description + "[" + quoted + "]")
  }

  func index(_ index: Int) -> JSONPath { JSONPath(description: description + "[\(index)]") }
}

/// Where and why a JSON value is not valid.
struct ScenarioIssue: Error {
  var path: JSONPath
  var reason: String
}

/// Quotes a value for a message: "n9".
func quoted(_ text: String) -> String {
  var out = ""
  JSON.string(text).write(to: &out)
  return out
}

/// The pairs of a JSON object being validated, with its path.
struct ObjectFields {
  let pairs: [(String, JSON)]
  let path: JSONPath

  init(_ json: JSON, at path: JSONPath, what: String = "an object") throws(ScenarioIssue) {
    guard let pairs = json.object else {
      throw ScenarioIssue(path: path, reason: "expected \(what), found \(json.kind)")
    }
    self.pairs = pairs
    self.path = path
  }

  var keys: [String] { pairs.map(\.0) }

  subscript(key: String) -> JSON? { pairs.first { $0.0 == key }?.1 }

  func has(_ key: String) -> Bool { pairs.contains { $0.0 == key } }

  /// Rejects keys not in `allowed`; `context` explains the place ("in a post step").
  func only(_ allowed: [String], _ context: String = "here") throws(ScenarioIssue) {
    for (key, _) in pairs where !allowed.contains(key) {
      throw ScenarioIssue(
        path: path.key(key), reason: "unknown key; allowed \(context): " + allowed.joined(separator: ", "))
    }
  }

  func required(_ key: String, _ hint: String) throws(ScenarioIssue) -> JSON {
    guard let value = self[key] else {
      throw ScenarioIssue(path: path, reason: "missing key \(quoted(key)) (\(hint))")
    }
    return value
  }

  func string(_ key: String, nonEmpty: Bool = false) throws(ScenarioIssue) -> String? {
    guard let value = self[key] else { return nil }
    return try ScenarioReader.string(value, at: path.key(key), nonEmpty: nonEmpty)
  }
}

/// The validation rules, shared by scenario files and JSONL commands.
enum ScenarioReader {
  static let categoryNames = (0...11).compactMap { CategoryID.names[UInt8($0)] }
  static let validCategories = "valid: " + categoryNames.joined(separator: ", ")
  /// An ANCS attribute's length field is 2 bytes.
  static let maximumTextBytes = 65_535

  static func string(_ value: JSON, at path: JSONPath, nonEmpty: Bool = false) throws(ScenarioIssue) -> String {
    guard let text = value.string else {
      throw ScenarioIssue(path: path, reason: "expected a string, found \(value.kind)")
    }
    if nonEmpty && text.isEmpty { throw ScenarioIssue(path: path, reason: "must not be empty") }
    if text.utf8.count > maximumTextBytes {
      throw ScenarioIssue(
        path: path, reason: "\(text.utf8.count) bytes of UTF-8, more than an ANCS attribute holds (65535)")
    }
    return text
  }

  static func category(_ value: JSON, at path: JSONPath) throws(ScenarioIssue) -> CategoryID {
    let name = try string(value, at: path)
    guard let category = CategoryID(name: name) else {
      throw ScenarioIssue(path: path, reason: "unknown category \(quoted(name)); \(validCategories)")
    }
    return category
  }

  /// A flag name: "silent" or "important".
  static func flag(_ name: String, at path: JSONPath) throws(ScenarioIssue) -> EventFlags {
    switch name {
    case "silent": return .silent
    case "important": return .important
    case "positiveAction", "negativeAction":
      throw ScenarioIssue(
        path: path,
        reason: "\(quoted(name)) follows from the \(quoted(name)) label, not from flags; valid: silent, important")
    case "preExisting":
      throw ScenarioIssue(
        path: path, reason: "\"preExisting\" is set by the phone at session start; valid: silent, important")
    default:
      throw ScenarioIssue(path: path, reason: "unknown flag \(quoted(name)); valid: silent, important")
    }
  }

  static func flags(_ value: JSON, at path: JSONPath) throws(ScenarioIssue) -> EventFlags {
    guard let items = value.array else {
      throw ScenarioIssue(
        path: path, reason: "expected an array of flag names like [\"important\"], found \(value.kind)")
    }
    var flags: EventFlags = []
    for (index, item) in items.enumerated() {
      let name = try string(item, at: path.index(index))
      let flag = try flag(name, at: path.index(index))
      if flags.contains(flag) {
        throw ScenarioIssue(path: path.index(index), reason: "\(quoted(name)) is listed twice")
      }
      flags.insert(flag)
    }
    return flags
  }

  /// "now", "" (no date) or yyyyMMddTHHmmss.
  static func date(_ value: JSON, at path: JSONPath) throws(ScenarioIssue) -> NotificationDate {
    let text = try string(value, at: path)
    if text == "now" { return .now }
    if text.isEmpty { return .empty }
    return .fixed(try fixedDate(text, at: path))
  }

  static func fixedDate(_ text: String, at path: JSONPath) throws(ScenarioIssue) -> ANCSDate {
    do {
      if let date = try ANCSDate.parse(text) { return date }
    } catch {
      var why = "\(error)"
      if case .invalidValue(let reason) = error.reason { why = reason }
      throw ScenarioIssue(
        path: path, reason: "invalid date \(quoted(text)): \(why) (expected yyyyMMddTHHmmss, e.g. 20261129T120000)")
    }
    throw ScenarioIssue(path: path, reason: "expected a date yyyyMMddTHHmmss, e.g. 20261129T120000")
  }

  /// An action label: a non-empty string (leave the key out for no action).
  static func label(_ value: JSON, at path: JSONPath) throws(ScenarioIssue) -> String {
    guard let text = value.string else {
      throw ScenarioIssue(path: path, reason: "expected a string (the button's label), found \(value.kind)")
    }
    if text.isEmpty { throw ScenarioIssue(path: path, reason: "must not be empty; leave the key out for no action") }
    return try string(value, at: path)
  }

  /// The fields of a notification template, without "id" (checked by the caller).
  static func template(_ fields: ObjectFields) throws(ScenarioIssue) -> NotificationTemplate {
    let app = try string(
      try fields.required("app", "the app's id, e.g. \"com.example.chat\""), at: fields.path.key("app"), nonEmpty: true)
    if app.utf8.contains(0) {
      throw ScenarioIssue(path: fields.path.key("app"), reason: "an app id cannot contain NUL")
    }
    var template = NotificationTemplate(app: app)
    if let value = fields["category"] { template.category = try category(value, at: fields.path.key("category")) }
    if let value = fields["flags"] { template.flags = try flags(value, at: fields.path.key("flags")) }
    template.title = try fields.string("title") ?? ""
    template.subtitle = try fields.string("subtitle") ?? ""
    template.message = try fields.string("message") ?? ""
    if let value = fields["date"] { template.date = try date(value, at: fields.path.key("date")) }
    if let value = fields["positiveAction"] {
      template.positiveAction = try label(value, at: fields.path.key("positiveAction"))
    }
    if let value = fields["negativeAction"] {
      template.negativeAction = try label(value, at: fields.path.key("negativeAction"))
    }
    return template
  }

  /// The change fields of a modify step or command; at least one must be present.
  static func change(_ fields: ObjectFields, what: String) throws(ScenarioIssue) -> NotificationChange {
    var change = NotificationChange()
    change.title = try fields.string("title")
    change.subtitle = try fields.string("subtitle")
    change.message = try fields.string("message")
    if let value = fields["date"] { change.date = try date(value, at: fields.path.key("date")) }
    if let value = fields["flags"] { change.flags = try flags(value, at: fields.path.key("flags")) }
    for key in ["positiveAction", "negativeAction"] {
      guard let value = fields[key] else { continue }
      let label: ActionLabelChange = value == .null ? .remove : .set(try Self.label(value, at: fields.path.key(key)))
      if key == "positiveAction" { change.positiveAction = label } else { change.negativeAction = label }
    }
    if change.isEmpty {
      throw ScenarioIssue(
        path: fields.path,
        reason: "\(what) changes nothing; give at least one of " + Scenario.changeKeys.joined(separator: ", "))
    }
    return change
  }

  /// A time in seconds: a finite number from 0 to Scenario.maximumTime.
  static func seconds(_ value: JSON, at path: JSONPath) throws(ScenarioIssue) -> Double {
    guard let seconds = value.number else {
      throw ScenarioIssue(path: path, reason: "expected a number of seconds, found \(value.kind)")
    }
    guard seconds.isFinite, seconds >= 0, seconds <= Scenario.maximumTime else {
      throw ScenarioIssue(path: path, reason: "must be a number of seconds from 0 to 1000000")
    }
    return seconds
  }

  static func battery(_ value: JSON, at path: JSONPath) throws(ScenarioIssue) -> UInt8 {
    guard let number = value.number else {
      throw ScenarioIssue(path: path, reason: "expected a battery level from 0 to 100, found \(value.kind)")
    }
    guard let level = value.integer, (0...100).contains(level) else {
      throw ScenarioIssue(path: path, reason: "battery level \(JSON.number(number)) is not an integer from 0 to 100")
    }
    return UInt8(level)
  }

  // MARK: The file

  static func scenario(_ json: JSON) throws(ScenarioIssue) -> Scenario {
    let root = JSONPath()
    let top = try ObjectFields(json, at: root, what: "an object with \"apps\", \"notifications\" and \"steps\"")
    try top.only(Scenario.topLevelKeys, "at the top level")
    _ = try top.string("comment")
    let name = try top.string("name")
    let duration = try top["duration"].map { (value) throws(ScenarioIssue) in
      try seconds(value, at: root.key("duration"))
    }

    // Apps.
    var apps: [ScenarioApp] = []
    if let value = top["apps"] {
      guard let items = value.array else {
        throw ScenarioIssue(path: root.key("apps"), reason: "expected an array of apps, found \(value.kind)")
      }
      for (index, item) in items.enumerated() {
        let path = root.key("apps").index(index)
        let fields = try ObjectFields(item, at: path, what: "an app {\"id\": ..., \"name\": ...}")
        try fields.only(Scenario.appKeys, "in an app")
        _ = try fields.string("comment")
        let id = try string(
          try fields.required("id", "the app identifier, e.g. \"com.example.chat\""), at: path.key("id"), nonEmpty: true
        )
        if id.utf8.contains(0) { throw ScenarioIssue(path: path.key("id"), reason: "an app id cannot contain NUL") }
        let name = try string(
          try fields.required("name", "the display name, e.g. \"Chat\""), at: path.key("name"), nonEmpty: true)
        if apps.contains(where: { $0.id == id }) {
          throw ScenarioIssue(path: path.key("id"), reason: "duplicate app id \(quoted(id))")
        }
        apps.append(ScenarioApp(id: id, name: name))
      }
    }
    var usesPhoneApp = false
    func checkApp(_ app: String, at path: JSONPath) throws(ScenarioIssue) {
      if apps.contains(where: { $0.id == app }) { return }
      if app == ScenarioApp.phone.id {
        usesPhoneApp = true
        return
      }
      let declared =
        apps.isEmpty ? "none are declared in \"apps\"" : "declared: " + apps.map(\.id).joined(separator: ", ")
      throw ScenarioIssue(path: path, reason: "unknown app \(quoted(app)); \(declared)")
    }

    // Notification templates.
    var templates: [String: NotificationTemplate] = [:]
    if let value = top["notifications"] {
      guard let items = value.array else {
        throw ScenarioIssue(
          path: root.key("notifications"), reason: "expected an array of notifications, found \(value.kind)")
      }
      for (index, item) in items.enumerated() {
        let path = root.key("notifications").index(index)
        let fields = try ObjectFields(item, at: path, what: "a notification object")
        try fields.only(Scenario.notificationKeys, "in a notification")
        _ = try fields.string("comment")
        let id = try string(
          try fields.required("id", "a name for steps to refer to, e.g. \"n1\""), at: path.key("id"), nonEmpty: true)
        if templates[id] != nil {
          throw ScenarioIssue(path: path.key("id"), reason: "duplicate notification id \(quoted(id))")
        }
        let template = try template(fields)
        try checkApp(template.app, at: path.key("app"))
        templates[id] = template
      }
    }

    // Steps.
    guard let stepsValue = top["steps"] else {
      throw ScenarioIssue(
        path: root, reason: "missing key \"steps\" (the timed steps, e.g. [{\"at\": 0, \"post\": \"n1\"}])")
    }
    guard let items = stepsValue.array else {
      throw ScenarioIssue(path: root.key("steps"), reason: "expected an array of steps, found \(stepsValue.kind)")
    }
    if items.isEmpty { throw ScenarioIssue(path: root.key("steps"), reason: "a scenario needs at least one step") }
    var steps: [ScenarioStep] = []
    var callIDs: Set<String> = []
    for (index, item) in items.enumerated() {
      let step = try self.step(item, at: root.key("steps").index(index), index: index, templates: templates)
      if case .call(_, let id?) = step.action {
        usesPhoneApp = true
        callIDs.insert(id)
      } else if case .call = step.action {
        usesPhoneApp = true
      }
      steps.append(step)
    }
    let scenario = Scenario(name: name, apps: apps, notifications: templates, steps: steps, duration: duration)

    // References, in playing order: modify and remove need something posted under that id.
    var active: [String: Int] = [:]
    for step in scenario.steps {
      let path = root.key("steps").index(step.index)
      switch step.action {
      case .post(let id): active[id, default: 0] += 1
      case .call(_, let id?): active[id, default: 0] += 1
      case .modify(let id, _), .remove(let id):
        let key = step.action.kind
        guard templates[id] != nil || callIDs.contains(id) else {
          throw ScenarioIssue(path: path.key(key), reason: "unknown notification id \(quoted(id))")
        }
        guard active[id, default: 0] > 0 else {
          throw ScenarioIssue(
            path: path.key(key),
            reason: "\(quoted(id)) is not on the phone at \(format(seconds: step.at)) (no earlier step posts it)")
        }
        if case .remove = step.action { active[id, default: 0] -= 1 }
      default: break
      }
    }
    if let duration, let last = scenario.steps.last, duration < last.at {
      throw ScenarioIssue(
        path: root.key("duration"),
        reason: "\(format(seconds: duration)) ends before the last step (at \(format(seconds: last.at)))")
    }
    var result = scenario
    if usesPhoneApp && !apps.contains(where: { $0.id == ScenarioApp.phone.id }) { result.apps.append(.phone) }
    return result
  }

  static func step(_ json: JSON, at path: JSONPath, index: Int, templates: [String: NotificationTemplate])
    throws(ScenarioIssue) -> ScenarioStep
  {
    let fields = try ObjectFields(json, at: path, what: "a step like {\"at\": 1, \"post\": \"n1\"}")
    let actions = fields.keys.filter { Scenario.actionKeys.contains($0) }
    guard let kind = actions.first else {
      let known = fields.keys.filter { $0 != "at" && $0 != "comment" }
      if let key = known.first, !Scenario.changeKeys.contains(key) && key != "id" {
        throw ScenarioIssue(
          path: path.key(key),
          reason: "unknown key; a step has \"at\" and one action: " + Scenario.actionKeys.joined(separator: ", "))
      }
      throw ScenarioIssue(
        path: path, reason: "a step needs one action: " + Scenario.actionKeys.joined(separator: ", "))
    }
    if actions.count > 1 {
      throw ScenarioIssue(
        path: path.key(actions[1]),
        reason:
          "a step has one action, this one has \(actions.count): \(actions.joined(separator: ", ")); split it into steps"
      )
    }
    var allowed = ["at", kind, "comment"]
    if kind == "modify" { allowed += Scenario.changeKeys }
    if kind == "call" { allowed.append("id") }
    try fields.only(allowed, "in a \(kind) step")
    _ = try fields.string("comment")
    let at = try seconds(try fields.required("at", "seconds from the start, e.g. 1.5"), at: path.key("at"))
    let value = fields[kind]!
    let valuePath = path.key(kind)

    func reference() throws(ScenarioIssue) -> String {
      let id = try string(value, at: valuePath, nonEmpty: true)
      return id
    }

    let action: ScenarioAction
    switch kind {
    case "post":
      let id = try reference()
      guard templates[id] != nil else {
        throw ScenarioIssue(path: valuePath, reason: "unknown notification id \(quoted(id))")
      }
      action = .post(id)
    case "modify":
      action = .modify(try reference(), try change(fields, what: "this modify step"))
    case "remove":
      action = .remove(try reference())
    case "call":
      let caller = try string(value, at: valuePath, nonEmpty: true)
      let id = try fields.string("id", nonEmpty: true)
      if let id, templates[id] != nil {
        throw ScenarioIssue(path: path.key("id"), reason: "\(quoted(id)) is already a notification id; choose another")
      }
      action = .call(caller: caller, id: id)
    case "battery":
      action = .battery(try battery(value, at: valuePath))
    case "time":
      let text = try string(value, at: valuePath)
      if text.isEmpty || text == "now" {
        throw ScenarioIssue(path: valuePath, reason: "expected a date yyyyMMddTHHmmss, e.g. 20261129T120000")
      }
      action = .time(try fixedDate(text, at: valuePath))
    case _ where MediaCommand.words.contains(kind):
      action = .media(try MediaCommand.read(word: kind, value: value, at: valuePath))
    default:  // "disconnect"
      guard value == .bool(true) else {
        throw ScenarioIssue(
          path: valuePath,
          reason:
            "expected true ({\"at\": 5, \"disconnect\": true}), found \(value.kind == "a boolean" ? "false" : value.kind)"
        )
      }
      action = .disconnect
    }
    return ScenarioStep(at: at, action: action, index: index)
  }

  /// "1.5s" (always one decimal).
  static func format(tenths seconds: Double) -> String {
    let tenths = Int64((seconds * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)s"
  }

  /// "1.5s", "12s".
  static func format(seconds: Double) -> String {
    let tenths = (seconds * 10).rounded()
    if tenths.truncatingRemainder(dividingBy: 10) == 0 { return "\(Int64(tenths / 10))s" }
    return "\(Int64(tenths) / 10).\(Int64(tenths) % 10)s"
  }
}

extension ScenarioAction {
  /// The step key of this action ("post", "modify", ...).
  public var kind: String {
    switch self {
    case .post: return "post"
    case .modify: return "modify"
    case .remove: return "remove"
    case .call: return "call"
    case .battery: return "battery"
    case .time: return "time"
    case .disconnect: return "disconnect"
    case .media(let command): return command.word
    }
  }
}
