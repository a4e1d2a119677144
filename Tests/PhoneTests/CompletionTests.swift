import Phone
import Testing
import Wire

/// Tab at the console (the line editor asks `PhoneCommand.completion`): the word before the
/// cursor and what it could become.
@Suite struct ConsoleCompletionTests {
  static let apps = ["com.example.chat": "Chat", "com.apple.MobileSMS": "Messages", "com.example.news": "Daily Planet"]

  /// The candidates and the replacement for `line` with the cursor at its end, or at `|`.
  func complete(_ line: String, uids: [UInt32] = []) -> (candidates: [String], replacement: String?) {
    let cursor = line.firstIndex(of: "|").map { line.unicodeScalars.distance(from: line.startIndex, to: $0) }
    let text = String(line.filter { $0 != "|" })
    let completion = PhoneCommand.completion(
      of: text, cursor: cursor ?? text.unicodeScalars.count, apps: Self.apps, uids: uids)
    return (completion.candidates, completion.replacement)
  }

  @Test func theFirstWordIsACommand() {
    #expect(complete("po") == (["post"], "post "))
    #expect(complete("  MO") == (["modify"], "modify "))
    #expect(complete("") == (PhoneCommand.commandNames, nil))
    // "disconnect" alone starts with d; battery and time share nothing.
    #expect(complete("d").replacement == "disconnect ")
    #expect(complete("b").candidates == ["battery", "bonds"])
    #expect(complete("bo") == (["bonds"], "bonds "))
    #expect(complete("x") == ([], nil))
    #expect(complete("# a comment") == ([], nil))
  }

  @Test func whereTheWordStarts() {
    let completion = PhoneCommand.completion(of: "post ch", cursor: 7, apps: Self.apps)
    #expect(completion.start == 5 && completion.typed == "ch")
    // The cursor inside a word: only what is before it counts.
    #expect(complete("po|st chat") == (["post"], "post "))
    #expect(PhoneCommand.completion(of: "po", cursor: 99, apps: [:]).candidates == ["post"])
    #expect(PhoneCommand.completion(of: "po", cursor: -3, apps: [:]).candidates == PhoneCommand.commandNames)
    // After a multi-scalar word, offsets are in Unicode scalars.
    let emoji = PhoneCommand.completion(of: "post \"👩‍👩‍👧\" cat", cursor: 16, apps: [:])
    #expect(emoji.start == 13 && emoji.candidates == ["category="])
  }

  @Test func postTakesAnAppNameOrId() {
    #expect(complete("post ch") == (["chat"], "chat "))
    #expect(complete("post Mes") == (["messages"], "messages "))
    #expect(complete("post com.example.") == (["com.example.chat", "com.example.news"], nil))
    #expect(complete("post com.example.c") == (["com.example.chat"], "com.example.chat "))
    // "c" fits chat and both ids; their shared start is no longer than "c".
    #expect(complete("post c") == (["chat", "com.apple.MobileSMS", "com.example.chat", "com.example.news"], nil))
    #expect(complete("post com") == (["com.apple.MobileSMS", "com.example.chat", "com.example.news"], "com."))
    // A name with a space would need quotes: its id is offered instead.
    #expect(complete("post da") == ([], nil))
    #expect(complete("post app=ch") == (["app=chat"], "app=chat "))
  }

  @Test func keysAndValues() {
    #expect(complete("post chat \"Hi\" cat") == (["category="], "category="))
    #expect(complete("post chat \"Hi\" category=so") == (["category=social"], "category=social "))
    #expect(complete("post chat \"Hi\" category=").candidates.count == 12)
    #expect(complete("post chat \"Hi\" flags=silent,imp") == (["flags=silent,important"], "flags=silent,important "))
    #expect(complete("post chat \"Hi\" positiveAction=") == ([], nil))
    #expect(complete("post chat \"Hi\" s") == (["subtitle="], "subtitle="))
    #expect(complete("post chat \"Hi\" bogus=") == ([], nil))
    #expect(complete("modify 3 me") == (["message="], "message="))
    #expect(complete("modify 3 category=") == ([], nil), "modify has no category")
  }

  @Test func uidsOfTheNotifications() {
    #expect(complete("remove ", uids: [12, 3, 7]) == (["3", "7", "12"], nil))
    #expect(complete("rm 1", uids: [12, 3]) == (["12"], "12 "))
    #expect(complete("modify 7", uids: [7, 70]) == (["7", "70"], nil))
    #expect(complete("remove 3 ", uids: [3]) == ([], nil))
  }

  @Test func nothingInsideQuotesOrAfterOtherCommands() {
    #expect(complete("post \"ch") == ([], nil))
    #expect(complete("post chat \"Hello wor") == ([], nil))
    #expect(complete("post chat \"a \\\" b") == ([], nil))
    #expect(complete("battery 4") == ([], nil))
    #expect(complete("list ") == ([], nil))
    #expect(complete("help p") == ([], nil))
  }

  @Test func mediaCommandsCompleteTheirModesAndDuration() {
    #expect(complete("pla").candidates == ["play", "player"])
    #expect(complete("shuffle o") == (["off", "one"], nil))
    #expect(complete("repeat a") == (["all"], "all "))
    #expect(complete("shuffle all o") == ([], nil))
    #expect(complete(#"play "Tall Bird" d"#) == (["duration="], "duration="))
    #expect(complete("play d") == ([], nil), "the title comes first")
    #expect(complete("play ") == ([], nil))
  }

  /// Any line, the cursor anywhere: the word ends at the cursor, and every candidate (and
  /// the replacement) starts as it does.
  @Test func anyLineAnyCursor() {
    var random = SplitMix64(seed: 13)
    let pieces = [
      "post", "modify", "rm", " ", "  ", "\"", "\\", "=", ",", "c", "C", "category=", "flags=", "app=", "é", "👩‍👩‍👧", "\t",
      "1",
    ]
    for _ in 0..<2000 {
      let line = (0..<Int.random(in: 0...8, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
      let scalars = Array(line.unicodeScalars)
      for cursor in -1...scalars.count + 1 {
        let completion = PhoneCommand.completion(of: line, cursor: cursor, apps: Self.apps, uids: [1, 12])
        let end = min(max(cursor, 0), scalars.count)
        #expect(completion.start >= 0 && completion.start <= end, "\(line) at \(cursor)")
        var word = ""
        word.unicodeScalars.append(contentsOf: scalars[min(completion.start, end)..<end])
        #expect(completion.typed == word, "\(line) at \(cursor)")
        for candidate in completion.candidates + [completion.replacement].compactMap({ $0 }) {
          #expect(candidate.lowercased().hasPrefix(word.lowercased()), "\(line) at \(cursor): \(candidate)")
        }
      }
    }
  }

  @Test func theConsoleUsesItsPhone() async throws {
    let phone = try Phone(wallClock: FixedWallClock(seconds: 1_796_040_000), apps: ["com.example.weather": "Weather"])
    let console = PhoneConsole(phone: phone)
    #expect(await console.completion(of: "post we", cursor: 7).candidates == ["weather"])
    #expect(await console.completion(of: "remove ", cursor: 7).candidates == [])
  }
}
