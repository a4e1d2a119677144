import ANCS
import ATT
import Wire

/// One command to the phone, typed at its console or sent as a JSON line.
public enum PhoneCommand: Hashable, Sendable {
  /// Posts a notification. The template's `app` may be an app id or a registered app's name.
  case post(NotificationTemplate)
  case modify(uid: UInt32, NotificationChange)
  case remove(uid: UInt32)
  /// An incoming call (Answer / Decline) from `caller`.
  case call(caller: String)
  case list
  case battery(UInt8)
  case time(ANCSDate)
  case disconnect
  /// Allows notification sharing for one watch (by its number), or every watch.
  case allow(watch: Int?)
  /// Revokes notification sharing for one watch, or every watch.
  case revoke(watch: Int?)
  /// Lists the accessories this phone has bonds with.
  case bonds
  /// Forgets the bond with one accessory (by its address), or every bond.
  case forget(peer: String?)
  /// Types the passkey an accessory shows, for the pairing that waits for it.
  case passkey(UInt32)
  /// Answers a numeric comparison: the accessory shows the same number, or not.
  case confirm(Bool)
  /// Changes the media player the Apple Media Service shows.
  case media(MediaCommand)
  case help
  case quit
}

/// Why a command line was refused: one line saying what to type instead.
public struct ConsoleError: Error, Hashable, Sendable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}

// MARK: - Console lines

extension PhoneCommand {
  /// The command words, in help order.
  public static let commandNames =
    [
      "post", "modify", "remove", "call", "list", "battery", "time", "disconnect", "allow", "revoke", "bonds", "forget",
      "passkey", "confirm",
    ] + MediaCommand.words + ["help", "quit"]

  /// Keys of `post` (positive and negative also as positiveAction and negativeAction).
  static let postKeys = ["app", "title", "subtitle", "message", "category", "flags", "date", "positive", "negative"]
  static let modifyKeys = ["title", "subtitle", "message", "flags", "date", "positive", "negative"]

  /// Parses one console line (syntax in `PhoneConsole.help`). Nil for a blank line or a
  /// comment starting with "#".
  public static func parse(_ line: String) throws(ConsoleError) -> PhoneCommand? {
    let tokens = try ConsoleToken.split(line)
    guard let first = tokens.first else { return nil }
    if first.key == nil && !first.wasQuoted && first.value.hasPrefix("#") { return nil }
    guard first.key == nil, !first.wasQuoted else {
      throw ConsoleError("a line starts with a command: " + commandNames.joined(separator: ", ") + " (try \"help\")")
    }
    let word = first.value.lowercased()
    let arguments = Array(tokens.dropFirst())
    let plain = arguments.filter { $0.key == nil }.map(\.value)
    let pairs = arguments.compactMap { token in token.key.map { ($0, token.value) } }

    func noArguments() throws(ConsoleError) {
      if let extra = arguments.first {
        throw ConsoleError("\(word) takes nothing after it (found \(extra.written)); type just \"\(word)\"")
      }
    }
    func noPairs(_ usage: String) throws(ConsoleError) {
      if let (key, _) = pairs.first { throw ConsoleError("\(word) takes no \(key)=...; usage: \(usage)") }
    }

    switch word {
    case "post":
      return .post(try post(plain: plain, pairs: pairs))
    case "modify":
      guard let uidText = plain.first else {
        throw ConsoleError("modify needs a UID: modify UID key=value ..., e.g. modify 3 message=\"Running late\"")
      }
      if plain.count > 1 {
        throw ConsoleError(
          "modify takes one UID then key=value pairs, found \(quoted(plain[1])); e.g. modify 3 title=\"New title\"")
      }
      return .modify(uid: try uid(uidText, command: "modify"), try change(pairs: pairs, uid: uidText))
    case "remove", "rm":
      try noPairs("remove UID")
      guard plain.count == 1 else {
        throw ConsoleError("remove takes one UID: remove UID, e.g. remove 3 (type \"list\" to see the UIDs)")
      }
      return .remove(uid: try uid(plain[0], command: "remove"))
    case "call":
      try noPairs("call \"NAME\"")
      let caller = plain.joined(separator: " ")
      guard !caller.isEmpty else { throw ConsoleError("call needs a caller's name: call \"Alice Martin\"") }
      return .call(caller: caller)
    case "list", "ls":
      try noArguments()
      return .list
    case "battery":
      try noPairs("battery LEVEL")
      guard plain.count == 1, let level = Int(plain[0]), (0...100).contains(level) else {
        throw ConsoleError("battery takes a level from 0 to 100: battery 42")
      }
      return .battery(UInt8(level))
    case "time":
      try noPairs("time yyyyMMddTHHmmss")
      guard plain.count == 1 else { throw ConsoleError("time takes one date: time 20261129T120000") }
      do {
        return .time(try ScenarioReader.fixedDate(plain[0], at: JSONPath()))
      } catch {
        throw ConsoleError(error.reason)
      }
    case "disconnect":
      try noArguments()
      return .disconnect
    case "allow", "revoke":
      try noPairs("\(word) [WATCH]")
      var watch: Int?
      if let text = plain.first {
        guard plain.count == 1, let number = Int(text), number > 0 else {
          throw ConsoleError("\(word) takes a watch's number or nothing (every watch): \(word) 1")
        }
        watch = number
      }
      return word == "allow" ? .allow(watch: watch) : .revoke(watch: watch)
    case "bonds":
      try noArguments()
      return .bonds
    case "forget":
      try noPairs("forget [ADDRESS]")
      guard plain.count <= 1 else {
        throw ConsoleError("forget takes one accessory's address or nothing (every bond): forget C3:1A:05:7E:22:90")
      }
      return .forget(peer: plain.first)
    case "passkey":
      try noPairs("passkey NNNNNN")
      guard plain.count == 1, let value = ATT.passkey(digits: plain[0]) else {
        throw ConsoleError("passkey takes the six digits the accessory shows: passkey 012345")
      }
      return .passkey(value)
    case "confirm":
      try noPairs("confirm yes|no")
      guard plain.count == 1, ["yes", "no"].contains(plain[0].lowercased()) else {
        throw ConsoleError("confirm takes yes (the accessory shows the same number) or no: confirm yes")
      }
      return .confirm(plain[0].lowercased() == "yes")
    case _ where MediaCommand.words.contains(word), "prev":
      return .media(try MediaCommand.parse(word: word == "prev" ? "previous" : word, plain: plain, pairs: pairs))
    case "help", "?":
      return .help
    case "quit", "exit", "q":
      try noArguments()
      return .quit
    default:
      var message = "unknown command \(quoted(first.value))"
      if let guess = commandNames.first(where: { editDistance($0, word) <= 2 }) {
        message += "; did you mean \"\(guess)\"?"
      } else {
        message += "; commands: " + commandNames.joined(separator: ", ")
      }
      throw ConsoleError(message + " (type \"help\" for the syntax)")
    }
  }

  static func post(plain: [String], pairs: [(String, String)]) throws(ConsoleError) -> NotificationTemplate {
    let usage = "post APP \"TITLE\" [\"MESSAGE\"] [key=value ...]"
    if plain.count > 3 {
      throw ConsoleError(
        "post takes at most APP, TITLE and MESSAGE before key=value pairs; put text with spaces in quotes: "
          + "post chat \"Hello there\" \"How are you?\"")
    }
    var values: [String: String] = [:]
    for (index, value) in plain.enumerated() { values[["app", "title", "message"][index]] = value }
    for (rawKey, value) in pairs {
      let key = canonical(rawKey)
      guard postKeys.contains(key) else {
        throw ConsoleError("post has no key \(quoted(rawKey)); keys: " + postKeys.joined(separator: ", "))
      }
      if values[key] != nil { throw ConsoleError("post: \(key) given twice") }
      values[key] = value
    }
    guard let app = values["app"], !app.isEmpty else {
      throw ConsoleError("post needs an app: \(usage), e.g. post chat \"Hello\" \"How are you?\"")
    }
    var template = NotificationTemplate(app: app)
    template.title = values["title"] ?? ""
    template.subtitle = values["subtitle"] ?? ""
    template.message = values["message"] ?? ""
    if let name = values["category"] {
      guard let category = CategoryID(name: name) else {
        throw ConsoleError("unknown category \(quoted(name)); \(ScenarioReader.validCategories)")
      }
      template.category = category
    }
    if let text = values["flags"] { template.flags = try flags(text) }
    if let text = values["date"] { template.date = try date(text) }
    if let label = values["positive"], !label.isEmpty { template.positiveAction = label }
    if let label = values["negative"], !label.isEmpty { template.negativeAction = label }
    for (key, value) in values where value.utf8.count > ScenarioReader.maximumTextBytes {
      throw ConsoleError("\(key) is longer than an ANCS attribute holds (65535 bytes of UTF-8)")
    }
    return template
  }

  static func change(pairs: [(String, String)], uid: String) throws(ConsoleError) -> NotificationChange {
    var change = NotificationChange()
    var seen: Set<String> = []
    for (rawKey, value) in pairs {
      let key = canonical(rawKey)
      guard modifyKeys.contains(key) else {
        throw ConsoleError("modify has no key \(quoted(rawKey)); keys: " + modifyKeys.joined(separator: ", "))
      }
      guard seen.insert(key).inserted else { throw ConsoleError("modify: \(key) given twice") }
      switch key {
      case "title": change.title = value
      case "subtitle": change.subtitle = value
      case "message": change.message = value
      case "flags": change.flags = try flags(value)
      case "date": change.date = try date(value)
      case "positive": change.positiveAction = value.isEmpty ? .remove : .set(value)
      default: change.negativeAction = value.isEmpty ? .remove : .set(value)
      }
      if value.utf8.count > ScenarioReader.maximumTextBytes {
        throw ConsoleError("\(key) is longer than an ANCS attribute holds (65535 bytes of UTF-8)")
      }
    }
    if change.isEmpty {
      throw ConsoleError(
        "modify needs key=value pairs to change (\(modifyKeys.joined(separator: ", "))), e.g. modify \(uid) message=\"Running late\""
      )
    }
    return change
  }

  static func canonical(_ key: String) -> String {
    switch key {
    case "positiveAction": return "positive"
    case "negativeAction": return "negative"
    default: return key
    }
  }

  /// "important", "silent,important" or "" (none).
  static func flags(_ text: String) throws(ConsoleError) -> EventFlags {
    var flags: EventFlags = []
    for name in text.split(separator: ",", omittingEmptySubsequences: true) {
      let name = String(name).trimmingSpaces
      do {
        flags.insert(try ScenarioReader.flag(name, at: JSONPath()))
      } catch {
        throw ConsoleError(error.reason + " (e.g. flags=important or flags=silent,important)")
      }
    }
    return flags
  }

  static func date(_ text: String) throws(ConsoleError) -> NotificationDate {
    do {
      return try ScenarioReader.date(.string(text), at: JSONPath())
    } catch {
      throw ConsoleError(error.reason + "; or date=now, or date=\"\" for none")
    }
  }

  static func uid(_ text: String, command: String) throws(ConsoleError) -> UInt32 {
    guard let uid = UInt32(text) else {
      throw ConsoleError(
        "\(quoted(text)) is not a UID; \(command) takes a number, e.g. \(command) 3 (type \"list\" to see them)")
    }
    return uid
  }

  /// Levenshtein distance, for "did you mean".
  static func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
    var row = Array(0...b.count)
    for i in 1...a.count {
      var previous = row[0]
      row[0] = i
      for j in 1...b.count {
        let saved = row[j]
        row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
        previous = saved
      }
    }
    return row[b.count]
  }
}

extension String {
  var trimmingSpaces: String {
    var text = Substring(self)
    while text.first?.isWhitespace == true { text.removeFirst() }
    while text.last?.isWhitespace == true { text.removeLast() }
    return String(text)
  }
}

/// A word of a console line: `post`, `"Hello there"`, `title="Hi"`.
struct ConsoleToken: Hashable {
  /// The key of key=value (an unquoted name before the first "=").
  var key: String?
  var value: String
  /// Whether any part of the value was in quotes (a quoted word is never a key or command).
  var wasQuoted: Bool

  /// As typed back in a message.
  var written: String {
    let shown = wasQuoted || value.contains(" ") ? quoted(value) : value
    return key.map { "\($0)=" + shown } ?? shown
  }

  /// Splits a line into words. Double quotes group text with spaces; inside them \" \\ \n
  /// and \t are escapes. `key=value` is a pair when key is a plain name.
  static func split(_ line: String) throws(ConsoleError) -> [ConsoleToken] {
    var tokens: [ConsoleToken] = []
    var characters = line[...]
    while true {
      while characters.first?.isWhitespace == true { characters.removeFirst() }
      guard !characters.isEmpty else { return tokens }
      var token = ConsoleToken(key: nil, value: "", wasQuoted: false)
      while let character = characters.first, !character.isWhitespace {
        characters.removeFirst()
        if character == "\"" {
          token.wasQuoted = true
          var closed = false
          while let inner = characters.popFirst() {
            if inner == "\"" {
              closed = true
              break
            }
            guard inner == "\\" else {
              token.value.append(inner)
              continue
            }
            guard let escaped = characters.popFirst() else { break }
            switch escaped {
            case "\"": token.value.append("\"")
            case "\\": token.value.append("\\")
            case "n": token.value.append("\n")
            case "t": token.value.append("\t")
            default:
              throw ConsoleError("unknown escape \\\(escaped) in quotes; use \\\" \\\\ \\n or \\t")
            }
          }
          if !closed { throw ConsoleError("missing closing quote (\") in: \(line)") }
        } else if character == "=" && token.key == nil && !token.wasQuoted && isName(token.value) {
          token.key = token.value
          token.value = ""
        } else {
          token.value.append(character)
        }
      }
      tokens.append(token)
    }
  }

  static func isName(_ text: String) -> Bool {
    guard let first = text.unicodeScalars.first, first.properties.isAlphabetic, first.isASCII else { return false }
    return text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
  }
}

extension PhoneCommand {
  /// The command in console syntax; `PhoneCommand.parse` reads it back to the same command.
  public var consoleLine: String {
    let text = consoleText
    func flags(_ flags: EventFlags) -> String {
      flags.intersection([.silent, .important]).flagNames.joined(separator: ",")
    }
    switch self {
    case .post(let template):
      var words = ["post", text(template.app), text(template.title), text(template.message)]
      if !template.subtitle.isEmpty { words.append("subtitle=" + text(template.subtitle)) }
      if template.category != .other { words.append("category=" + (template.category.name ?? "other")) }
      if !template.flags.intersection([.silent, .important]).isEmpty { words.append("flags=" + flags(template.flags)) }
      if template.date != .now { words.append("date=" + text(template.date.description)) }
      if let label = template.positiveAction { words.append("positive=" + text(label)) }
      if let label = template.negativeAction { words.append("negative=" + text(label)) }
      return words.joined(separator: " ")
    case .modify(let uid, let change):
      var words = ["modify", String(uid)]
      if let value = change.title { words.append("title=" + text(value)) }
      if let value = change.subtitle { words.append("subtitle=" + text(value)) }
      if let value = change.message { words.append("message=" + text(value)) }
      if let value = change.flags { words.append("flags=" + text(flags(value))) }
      if let value = change.date { words.append("date=" + text(value.description)) }
      for (key, label) in [("positive", change.positiveAction), ("negative", change.negativeAction)] {
        switch label {
        case .set(let value)?: words.append(key + "=" + text(value))
        case .remove?: words.append(key + "=\"\"")
        case nil: break
        }
      }
      return words.joined(separator: " ")
    case .remove(let uid): return "remove \(uid)"
    case .call(let caller): return "call " + text(caller)
    case .list: return "list"
    case .battery(let level): return "battery \(level)"
    case .time(let date): return "time \(date)"
    case .disconnect: return "disconnect"
    case .allow(let watch): return "allow" + (watch.map { " \($0)" } ?? "")
    case .revoke(let watch): return "revoke" + (watch.map { " \($0)" } ?? "")
    case .bonds: return "bonds"
    case .forget(let peer): return "forget" + (peer.map { " " + text($0) } ?? "")
    case .passkey(let value): return "passkey " + sixDigits(value)
    case .confirm(let yes): return "confirm " + (yes ? "yes" : "no")
    case .media(let command): return command.consoleWords.joined(separator: " ")
    case .help: return "help"
    case .quit: return "quit"
    }
  }
}

/// Text in double quotes as the console reads it back (`\"`, `\\`, `\n`, `\t` escaped).
func consoleText(_ value: String) -> String {
  var out = "\""
  for character in value {
    switch character {
    case "\"": out += "\\\""
    case "\\": out += "\\\\"
    case "\n": out += "\\n"
    case "\t": out += "\\t"
    default: out.append(character)
    }
  }
  return out + "\""
}

// MARK: - JSON lines

extension PhoneCommand {
  /// Parses one JSON command line: `{"cmd":"post","app":"com.example.chat","title":"Hi"}`.
  /// Post takes the fields of a scenario notification (without "id"); modify takes "uid"
  /// and the fields of a scenario modify step; remove "uid"; call "caller"; battery "level";
  /// time "date"; allow and revoke an optional "watch"; forget an optional "peer"; passkey
  /// "passkey" (six digits, a string); confirm "answer" (true or false); list, disconnect,
  /// bonds, help and quit nothing else. Nil for a blank line.
  public static func parse(jsonLine line: String) throws(ConsoleError) -> PhoneCommand? {
    if line.allSatisfy(\.isWhitespace) { return nil }
    let json: JSON
    do {
      json = try JSON(parsing: line)
    } catch {
      throw ConsoleError("invalid JSON at column \(error.column): \(error.reason)")
    }
    do {
      return try jsonCommand(json)
    } catch {
      throw ConsoleError("\(error.path): \(error.reason)")
    }
  }

  /// The field of each media command's JSON form that holds its value.
  static let mediaKeys = ["seek": "seconds", "volume": "level", "shuffle": "mode", "repeat": "mode", "player": "name"]

  static func jsonCommand(_ json: JSON) throws(ScenarioIssue) -> PhoneCommand {
    let root = JSONPath()
    let fields = try ObjectFields(json, at: root, what: "an object like {\"cmd\":\"list\"}")
    let cmd = try ScenarioReader.string(
      try fields.required("cmd", "one of " + commandNames.joined(separator: ", ")), at: root.key("cmd"))
    func uid() throws(ScenarioIssue) -> UInt32 {
      let value = try fields.required("uid", "the notification's UID, e.g. 3")
      guard let number = value.integer, let uid = UInt32(exactly: number) else {
        throw ScenarioIssue(path: root.key("uid"), reason: "expected a UID (an integer 0-4294967295), found \(value)")
      }
      return uid
    }
    switch cmd {
    case "post":
      try fields.only(["cmd"] + Scenario.notificationKeys.filter { $0 != "id" }, "in a post command")
      return .post(try ScenarioReader.template(fields))
    case "modify":
      try fields.only(["cmd", "uid"] + Scenario.changeKeys, "in a modify command")
      return .modify(uid: try uid(), try ScenarioReader.change(fields, what: "this modify command"))
    case "remove":
      try fields.only(["cmd", "uid"], "in a remove command")
      return .remove(uid: try uid())
    case "call":
      try fields.only(["cmd", "caller"], "in a call command")
      let caller = try fields.required("caller", "the caller's name, e.g. \"Alice\"")
      return .call(caller: try ScenarioReader.string(caller, at: root.key("caller"), nonEmpty: true))
    case "battery":
      try fields.only(["cmd", "level"], "in a battery command")
      return .battery(try ScenarioReader.battery(try fields.required("level", "0 to 100"), at: root.key("level")))
    case "time":
      try fields.only(["cmd", "date"], "in a time command")
      let date = try fields.required("date", "yyyyMMddTHHmmss")
      return .time(
        try ScenarioReader.fixedDate(try ScenarioReader.string(date, at: root.key("date")), at: root.key("date")))
    case "allow", "revoke":
      try fields.only(["cmd", "watch"], "in \(cmd == "allow" ? "an" : "a") \(cmd) command")
      var watch: Int?
      if let value = fields["watch"] {
        guard let number = value.integer, number > 0, number <= Int(Int32.max) else {
          throw ScenarioIssue(path: root.key("watch"), reason: "expected a watch's number (1 or more), found \(value)")
        }
        watch = Int(number)
      }
      return cmd == "allow" ? .allow(watch: watch) : .revoke(watch: watch)
    case "passkey":
      try fields.only(["cmd", "passkey"], "in a passkey command")
      guard case .string(let text)? = fields["passkey"], let value = ATT.passkey(digits: text) else {
        throw ScenarioIssue(
          path: root.key("passkey"), reason: "expected the six digits the accessory shows, as a string")
      }
      return .passkey(value)
    case "confirm":
      try fields.only(["cmd", "answer"], "in a confirm command")
      guard case .bool(let yes)? = fields["answer"] else {
        throw ScenarioIssue(path: root.key("answer"), reason: "expected true (the same number) or false")
      }
      return .confirm(yes)
    case "forget":
      try fields.only(["cmd", "peer"], "in a forget command")
      return .forget(
        peer: try fields["peer"].map { value throws(ScenarioIssue) in
          try ScenarioReader.string(value, at: root.key("peer"), nonEmpty: true)
        })
    case _ where MediaCommand.words.contains(cmd):
      let key = mediaKeys[cmd]
      if cmd == "play" {
        try fields.only(["cmd"] + MediaCommand.trackKeys, "in a play command")
        let track = fields.pairs.filter { $0.0 != "cmd" }
        return .media(try MediaCommand.read(word: cmd, value: track.isEmpty ? nil : .object(track), at: root))
      }
      try fields.only(["cmd"] + (key.map { [$0] } ?? []), "in a \(cmd) command")
      return .media(try MediaCommand.read(word: cmd, value: key.flatMap { fields[$0] }, at: root.key(key ?? cmd)))
    case "list", "disconnect", "bonds", "help", "quit":
      try fields.only(["cmd"], "in a \(cmd) command")
      return ["list": .list, "disconnect": .disconnect, "bonds": .bonds, "help": .help, "quit": .quit][cmd]!
    default:
      throw ScenarioIssue(
        path: root.key("cmd"), reason: "unknown command \(quoted(cmd)); valid: " + commandNames.joined(separator: ", "))
    }
  }
}

// MARK: - Executing

/// What a command did: lines for a person, a JSON object for scripts.
public struct ConsoleOutput: Hashable, Sendable {
  public var ok: Bool
  public var lines: [String]
  /// `{"ok":true,"cmd":"post","uid":3}`, `{"ok":false,"error":"..."}`.
  public var json: JSON
  /// The command was quit.
  public var quit: Bool

  public init(ok: Bool, lines: [String], json: JSON, quit: Bool = false) {
    self.ok = ok
    self.lines = lines
    self.json = json
    self.quit = quit
  }

  /// A refused command line, as output.
  public static func failure(_ error: ConsoleError) -> ConsoleOutput {
    ConsoleOutput(
      ok: false, lines: [error.message], json: .object([("ok", .bool(false)), ("error", .string(error.message))]))
  }
}

/// Applies console commands to a phone and says what happened.
public struct PhoneConsole: Sendable {
  public let phone: Phone

  public init(phone: Phone) { self.phone = phone }

  /// Parses a console line and executes it; nil for a blank or comment line.
  public func run(line: String) async -> ConsoleOutput? {
    do {
      guard let command = try PhoneCommand.parse(line) else { return nil }
      return await execute(command)
    } catch {
      return .failure(error)
    }
  }

  /// Parses a JSON command line and executes it; nil for a blank line.
  public func run(jsonLine line: String) async -> ConsoleOutput? {
    do {
      guard let command = try PhoneCommand.parse(jsonLine: line) else { return nil }
      return await execute(command)
    } catch {
      return .failure(error)
    }
  }

  public func execute(_ command: PhoneCommand) async -> ConsoleOutput {
    func done(_ cmd: String, _ lines: [String], _ fields: [(String, JSON)] = []) -> ConsoleOutput {
      ConsoleOutput(ok: true, lines: lines, json: .object([("ok", .bool(true)), ("cmd", .string(cmd))] + fields))
    }
    func failed(_ cmd: String, _ message: String) -> ConsoleOutput {
      ConsoleOutput(
        ok: false, lines: [message],
        json: .object([("ok", .bool(false)), ("cmd", .string(cmd)), ("error", .string(message))]))
    }
    switch command {
    case .post(var template):
      switch await resolveApp(template.app) {
      case .failure(let error): return failed("post", error.message)
      case .success(let app): template.app = app
      }
      let posted = await phone.post(template.notification(date: template.date.value(on: phone)))
      return done(
        "post", ["posted UID \(posted.uid): " + (await Self.summary(of: posted, on: phone))],
        [("uid", .number(Double(posted.uid)))])
    case .modify(let uid, let change):
      let now = phone.dateNow()
      guard let changed = await phone.modify(uid, { change.apply(to: &$0, now: now) }) else {
        return failed("modify", "no notification with UID \(uid); type \"list\" to see them")
      }
      return done(
        "modify",
        [
          "modified UID \(uid) (\(change.fieldNames.joined(separator: ", "))): "
            + (await Self.summary(of: changed, on: phone))
        ],
        [("uid", .number(Double(uid)))])
    case .remove(let uid):
      guard let notification = await phone.notifications.first(where: { $0.uid == uid }), await phone.remove(uid) else {
        return failed("remove", "no notification with UID \(uid); type \"list\" to see them")
      }
      return done(
        "remove", ["removed UID \(uid): " + (await Self.summary(of: notification, on: phone))],
        [("uid", .number(Double(uid)))])
    case .call(let caller):
      await phone.register(app: ScenarioApp.phone.id, name: ScenarioApp.phone.name, unlessKnown: true)
      let template = NotificationTemplate.incomingCall(from: caller)
      let posted = await phone.post(template.notification(date: ""))
      return done(
        "call", ["incoming call from \(caller): UID \(posted.uid) (type \"remove \(posted.uid)\" to hang up)"],
        [("uid", .number(Double(posted.uid)))])
    case .list:
      let apps = await phone.apps
      return done(
        "list", await listLines(),
        [
          ("battery", .number(Double(await phone.battery))), ("watches", .number(Double(await phone.connectionCount))),
          ("notifications", .array(await phone.notifications.map { json(of: $0, apps: apps) })),
          ("media", await phone.mediaJSON),
        ])
    case .battery(let level):
      await phone.setBattery(level)
      return done("battery", ["battery \(level)%"], [("level", .number(Double(level)))])
    case .time(let date):
      await phone.setTime(localSecondsSinceEpoch: date.secondsSinceEpoch)
      return done("time", ["clock set to " + Self.readable(date)], [("date", .string(date.description))])
    case .disconnect:
      let count = await phone.connectionCount
      phone.disconnectAll()
      return done(
        "disconnect", ["disconnected \(count) watch" + (count == 1 ? "" : "es")], [("watches", .number(Double(count)))])
    case .allow(let watch), .revoke(let watch):
      let allow: Bool
      if case .allow = command { allow = true } else { allow = false }
      let cmd = allow ? "allow" : "revoke"
      if let watch, await phone.sharing[watch] == nil {
        return failed(cmd, "no watch \(watch) is connected; the phone's events name them (watch 1 connected ...)")
      }
      let changed = allow ? await phone.allowSharing(session: watch) : await phone.revokeSharing(session: watch)
      let what = allow ? "may receive notifications" : "may no longer receive notifications"
      let lines =
        changed.isEmpty
        ? [
          (watch.map { "nothing to \(cmd): watch \($0)" } ?? "no watch changed; every watch that comes")
            + (allow ? " may receive notifications" : " may not receive notifications")
        ]
        : changed.map { "watch \($0) \(what)" }
      return done(cmd, lines, [("watches", .array(changed.map { .number(Double($0)) }))])
    case .bonds:
      guard let book = phone.bonds else { return failed("bonds", Self.noBonds) }
      let peers = book.bondedPeers
      return done(
        "bonds", peers.isEmpty ? ["no bonds"] : peers.map { "bonded with \($0)" },
        [("peers", .array(peers.map(JSON.string)))])
    case .passkey(let value):
      guard phone.bonds?.answer(.passkey(value), for: nil) == true else {
        return failed("passkey", "no pairing waits for a passkey")
      }
      return done("passkey", ["typed \(sixDigits(value))"], [])
    case .confirm(let yes):
      guard phone.bonds?.answer(.confirm(yes), for: nil) == true else {
        return failed("confirm", "no pairing waits for a numeric comparison")
      }
      return done("confirm", [yes ? "confirmed: the numbers match" : "refused: the numbers differ"], [])
    case .forget(let peer):
      let forgotten: [String]?
      do { forgotten = try phone.forget(peer) } catch { return failed("forget", "\(error)") }
      guard let forgotten else { return failed("forget", Self.noBonds) }
      if let peer, forgotten.isEmpty {
        let known = phone.bonds?.bondedPeers ?? []
        return failed(
          "forget",
          "no bond with \(peer); " + (known.isEmpty ? "the phone has none" : "bonded: " + known.joined(separator: ", "))
        )
      }
      return done(
        "forget",
        forgotten.isEmpty
          ? ["no bonds to forget"]
          : forgotten.map { "forgot \($0): it must pair again (its link, if up, was dropped)" },
        [("peers", .array(forgotten.map(JSON.string)))])
    case .media(let media):
      switch await phone.media(media) {
      case .success(let line): return done(media.word, [line], [("media", await phone.mediaJSON)])
      case .failure(let error): return failed(media.word, error.message)
      }
    case .help:
      return done("help", Self.help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
    case .quit:
      var output = done("quit", ["bye"])
      output.quit = true
      return output
    }
  }

  /// An app id from what was typed: a registered id, a registered app's name or the last
  /// part of its id (any case), or any other id with a dot in it.
  func resolveApp(_ text: String) async -> Result<String, ConsoleError> {
    let apps = await phone.apps
    if apps[text] != nil { return .success(text) }
    let lower = text.lowercased()
    let matches = apps.filter { id, name in
      name.lowercased() == lower || id.split(separator: ".").last.map { $0.lowercased() == lower } == true
    }.keys.sorted()
    if matches.count == 1 { return .success(matches[0]) }
    if matches.count > 1 {
      return .failure(
        ConsoleError("\(quoted(text)) could be " + matches.joined(separator: " or ") + "; give the full id"))
    }
    if text.contains(".") && !text.utf8.contains(0) { return .success(text) }
    let known = apps.sorted { $0.key < $1.key }.map { "\($0.value) (\($0.key))" }
    return .failure(
      ConsoleError(
        "unknown app \(quoted(text)); "
          + (known.isEmpty ? "no apps are registered" : "registered: " + known.joined(separator: ", "))
          + "; or give a full app id like com.example.chat"))
  }

  func listLines() async -> [String] {
    let notifications = await phone.notifications
    let watches = await phone.connectionCount
    let status =
      "battery \(await phone.battery)%, \(watches) watch\(watches == 1 ? "" : "es") connected, clock "
      + (ANCSDate.parseOrNil(phone.dateNow()).map(Self.readable) ?? phone.dateNow())
    // What plays, when something does.
    let media = await phone.mediaPlayer.track == nil ? [] : ["media: " + (await phone.mediaSummary)]
    guard !notifications.isEmpty else { return ["no notifications (\(status))"] + media }
    let apps = await phone.apps
    var rows = [["UID", "APP", "CATEGORY", "FLAGS", "ACTIONS", "TITLE"]]
    for notification in notifications {
      let flags = notification.flags.intersection([.silent, .important]).flagNames.joined(separator: ",")
      let actions = [notification.positiveAction, notification.negativeAction].compactMap { $0 }.joined(separator: "/")
      rows.append([
        String(notification.uid), Self.oneLine(apps[notification.appIdentifier] ?? notification.appIdentifier, 16),
        notification.category.name ?? String(notification.category.rawValue), flags.isEmpty ? "-" : flags,
        actions.isEmpty ? "-" : Self.oneLine(actions, 20), Self.oneLine(Self.headline(of: notification), 40),
      ])
    }
    var widths = [Int](repeating: 0, count: 6)
    for row in rows {
      for (column, cell) in row.enumerated() { widths[column] = max(widths[column], Self.width(cell)) }
    }
    var lines = rows.map { row in
      row.enumerated().map { column, cell in
        let pad = String(repeating: " ", count: widths[column] - Self.width(cell))
        if column == 0 { return pad + cell }
        return column == row.count - 1 ? cell : cell + pad
      }.joined(separator: "  ")
    }
    let count = notifications.count
    lines.append("\(count) notification\(count == 1 ? "" : "s"); \(status)")
    return lines + media
  }

  func json(of notification: PhoneNotification, apps: [String: String]) -> JSON {
    var pairs: [(String, JSON)] = [
      ("uid", .number(Double(notification.uid))), ("app", .string(notification.appIdentifier)),
      ("appName", .string(apps[notification.appIdentifier] ?? "")),
      ("category", .string(notification.category.name ?? String(notification.category.rawValue))),
      ("flags", .array(notification.eventFlags.flagNames.map(JSON.string))),
      ("title", .string(notification.title)), ("subtitle", .string(notification.subtitle)),
      ("message", .string(notification.message)), ("date", .string(notification.date)),
    ]
    if let label = notification.positiveAction { pairs.append(("positiveAction", .string(label))) }
    if let label = notification.negativeAction { pairs.append(("negativeAction", .string(label))) }
    return .object(pairs)
  }

  static let noBonds =
    "this phone keeps no bonds here (over l2cap:hciN the kernel keeps them: bluetoothctl remove ADDRESS)"

  // MARK: Text helpers

  /// "Chat — Hello there": the app's name and the title (or the message's start).
  public static func summary(of notification: PhoneNotification, on phone: Phone) async -> String {
    let app = await phone.apps[notification.appIdentifier] ?? notification.appIdentifier
    return app + " — " + oneLine(headline(of: notification), 60)
  }

  static func headline(of notification: PhoneNotification) -> String {
    notification.title.isEmpty ? notification.message : notification.title
  }

  /// "2026-11-29 12:00:00".
  public static func readable(_ date: ANCSDate) -> String {
    let text = date.description
    let c = Array(text)
    guard c.count == 15 else { return text }
    return String(c[0..<4]) + "-" + String(c[4..<6]) + "-" + String(c[6..<8]) + " " + String(c[9..<11]) + ":"
      + String(c[11..<13]) + ":" + String(c[13..<15])
  }

  /// The text on one line (line breaks as spaces), cut to `limit` characters with "…".
  static func oneLine(_ text: String, _ limit: Int) -> String {
    let flat = String(text.map { $0.isNewline || $0 == "\t" ? " " : $0 })
    return flat.count <= limit ? flat : String(flat.prefix(limit - 1)) + "…"
  }

  /// Terminal columns: East Asian wide characters and emoji take two.
  static func width(_ text: String) -> Int {
    text.reduce(0) { total, character in
      let wide = character.unicodeScalars.contains { scalar in
        let v = scalar.value
        return (0x1100...0x115F).contains(v) || (0x2E80...0xA4CF).contains(v) || (0xAC00...0xD7A3).contains(v)
          || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v) || (0xFF00...0xFF60).contains(v)
          || (0xFFE0...0xFFE6).contains(v) || (0x1F300...0x1F64F).contains(v) || (0x1F900...0x1F9FF).contains(v)
          || (0x20000...0x3FFFD).contains(v)
      }
      return total + (wide ? 2 : 1)
    }
  }

  /// The console's help text.
  public static let help = """
    Commands (put text with spaces in double quotes; inside quotes \\" \\\\ \\n \\t are escapes):
      post APP "TITLE" ["MESSAGE"] [key=value ...]
                       post a notification; APP is an app id (com.example.chat) or a
                       registered app's name (chat). keys: subtitle, message, category,
                       flags, date, positive, negative (and app, title instead of the
                       words before them)
                       e.g. post chat "Maya" "Lunch at 12?" category=social flags=important positive=Reply negative=Dismiss
      modify UID key=value ...
                       change title, subtitle, message, flags, date, positive, negative
                       e.g. modify 3 message="Running late, sorry"  (positive="" drops the action)
      remove UID       remove a notification, e.g. remove 3
      call "NAME"      an incoming call with Answer and Decline, e.g. call "Alice Martin"
      list             the notifications on the phone, with their UIDs
      battery LEVEL    set the battery level, 0-100, e.g. battery 42
      time DATE        set the phone's clock, e.g. time 20261129T120000
      disconnect       drop every watch's link (the watch reconnects)
      allow [WATCH]    let a watch (by its number; without one every watch, those that
                       come later too) receive notifications, as "Allow" in iOS's
                       prompt does, e.g. allow 1
      revoke [WATCH]   stop sharing notifications with a watch (without a number: every
                       watch, now and later), the link staying up
      bonds            the accessories this phone has bonds with, by address
      forget [ADDRESS] forget an accessory's bond (without an address: every bond), as
                       iOS's "Forget This Device": its link drops and it must pair again
      passkey NNNNNN   type the passkey an accessory shows while it pairs, e.g. passkey 012345
      confirm yes|no   answer "does the accessory show this number?" while it pairs
      play ["TITLE" ["ARTIST" ["ALBUM"]]] [duration=M:SS]
                       play a track now (it goes after the current one in the queue);
                       without one, resume, e.g. play "Tall Bird" "Bartlebeats" "Frequency" duration=3:35
      pause            pause the track
      next             the next track (under repeat all, the first after the last)
      previous         the track before, or this one's start after its first 3 s (or prev)
      seek TIME        move within the track (M:SS or seconds), e.g. seek 1:20
      volume LEVEL     0 to 1, or 0% to 100%, e.g. volume 0.4
      shuffle MODE     off, one or all, e.g. shuffle all
      repeat MODE      off, one or all, e.g. repeat one
      player "NAME"    the media app's name the watch sees (Music); player "" for none
      help             this text
      quit             stop the phone
    Categories: other, incomingCall, missedCall, voicemail, social, schedule, email, news,
      healthAndFitness, businessAndFinance, location, entertainment (default other).
    Flags: silent, important, comma-separated (flags=silent,important).
    Dates: yyyyMMddTHHmmss, now (the default) or "" for no date.
    """
}

extension ANCSDate {
  static func parseOrNil(_ text: String) -> ANCSDate? { (try? ANCSDate.parse(text)) ?? nil }
}
