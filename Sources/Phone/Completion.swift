import AMS
import ANCS

/// What Tab completes at the console: the word before the cursor and the words it could
/// become, from the console's own tables (its command names and keys, the phone's apps and
/// notifications).
public struct ConsoleCompletion: Hashable, Sendable {
  /// Where the word being completed starts, in Unicode scalars from the start of the line.
  public var start: Int
  /// The word so far: from `start` to the cursor.
  public var typed: String
  /// What the word could become, in order; empty when nothing fits.
  public var candidates: [String]

  public init(start: Int, typed: String, candidates: [String]) {
    self.start = start
    self.typed = typed
    self.candidates = candidates
  }

  /// What to put in place of `typed`: the one candidate and a space (no space after an "=",
  /// a value follows), or the longer start all candidates share. Nil when that would change
  /// nothing: then the candidates are the thing to show.
  public var replacement: String? {
    if candidates.count == 1, let only = candidates.first { return only.hasSuffix("=") ? only : only + " " }
    guard var shared = candidates.first else { return nil }
    for candidate in candidates.dropFirst() {
      shared = String(zip(shared, candidate).prefix { $0 == $1 }.map(\.0))
    }
    guard shared.count > typed.count, shared.lowercased().hasPrefix(typed.lowercased()) else { return nil }
    return shared
  }
}

extension PhoneConsole {
  /// Tab completion for `line` with the cursor `cursor` Unicode scalars from its start: the
  /// phone's registered apps and its notifications' UIDs as they are now.
  public func completion(of line: String, cursor: Int) async -> ConsoleCompletion {
    PhoneCommand.completion(
      of: line, cursor: cursor, apps: await phone.apps, uids: await phone.notifications.map(\.uid))
  }
}

extension PhoneCommand {
  /// Tab completion for `line` with the cursor `cursor` Unicode scalars from its start. The
  /// first word is a command (`commandNames`); after `post`, the app (a registered app's
  /// name in lower case, or its id), then keys (`subtitle=`) and the values of `category=`,
  /// `flags=` and `app=`; after `modify` a UID then its keys; after `remove` a UID; after
  /// `shuffle` and `repeat` their modes; after `play` and its title, `duration=`.
  /// Matching ignores case. Text in quotes is not completed.
  public static func completion(
    of line: String, cursor: Int, apps: [String: String], uids: [UInt32] = []
  ) -> ConsoleCompletion {
    let scalars = Array(line.unicodeScalars.prefix(max(0, cursor)))
    var words: [String] = []
    var word = ""
    var start = 0
    var quoted = false
    var inQuotes = false
    var escaped = false
    for (index, scalar) in scalars.enumerated() {
      if inQuotes {
        if escaped {
          escaped = false
        } else if scalar == "\\" {
          escaped = true
        } else if scalar == "\"" {
          inQuotes = false
        }
        word.unicodeScalars.append(scalar)
      } else if scalar.properties.isWhitespace {
        if !word.isEmpty { words.append(word) }
        word = ""
        quoted = false
        start = index + 1
      } else {
        if scalar == "\"" {
          inQuotes = true
          quoted = true
        }
        word.unicodeScalars.append(scalar)
      }
    }
    func matching(_ names: [String]) -> ConsoleCompletion {
      let typed = word.lowercased()
      var seen: Set<String> = []
      let fits = names.filter { $0.lowercased().hasPrefix(typed) && seen.insert($0).inserted }
      return ConsoleCompletion(start: start, typed: word, candidates: fits)
    }
    guard !quoted else { return matching([]) }
    guard let command = words.first?.lowercased() else {
      return word.hasPrefix("#") ? matching([]) : matching(commandNames)
    }
    let appWords =
      apps.values.map { $0.lowercased() }.filter { name in !name.contains { $0.isWhitespace || $0 == "\"" } }.sorted()
      + apps.keys.sorted()
    let uidWords = uids.sorted().map(String.init)
    let position = words.count
    if let equals = word.firstIndex(of: "=") {
      let key = canonical(String(word[..<equals]))
      let allowed = command == "post" ? postKeys : command == "modify" ? modifyKeys : []
      guard allowed.contains(key) else { return matching([]) }
      let prefix = String(word[...equals])
      switch key {
      case "category" where command == "post":
        return matching(ScenarioReader.categoryNames.map { prefix + $0 })
      case "app" where command == "post":
        return matching(appWords.map { prefix + $0 })
      case "flags":
        // The last name of a comma-separated list.
        let value = word[word.index(after: equals)...]
        let before = value.lastIndex(of: ",").map { String(word[...$0]) } ?? prefix
        return matching(EventFlags([.silent, .important]).flagNames.map { before + $0 })
      default:
        return matching([])
      }
    }
    switch command {
    case "post":
      if position == 1 { return matching(appWords) }
      return matching(postKeys.filter { $0 != "app" && $0 != "title" }.map { $0 + "=" })
    case "modify":
      if position == 1 { return matching(uidWords) }
      return matching(modifyKeys.map { $0 + "=" })
    case "remove", "rm":
      return matching(position == 1 ? uidWords : [])
    case "shuffle", "repeat":
      return matching(position == 1 ? ShuffleMode.names.sorted { $0.key < $1.key }.map(\.value) : [])
    case "play":
      // The title comes first (`play` alone resumes): a key only after it.
      return matching(position >= 2 ? ["duration="] : [])
    default:
      return matching([])
    }
  }
}
