import ANCS
import Links
import Phone
import TestSupport
import Testing
import Wire

/// The command a console line parses to, or its error line.
private func parse(_ line: String) -> Result<PhoneCommand?, ConsoleError> {
  Result { () throws(ConsoleError) in try PhoneCommand.parse(line) }
}

private func refusal(_ line: String) -> String {
  switch parse(line) {
  case .success(let command): return "accepted: \(String(describing: command))"
  case .failure(let error): return error.message
  }
}

private func jsonRefusal(_ line: String) -> String {
  do {
    return "accepted: \(String(describing: try PhoneCommand.parse(jsonLine: line)))"
  } catch {
    return error.message
  }
}

@Suite struct ConsoleParsingTests {
  @Test func postWithWordsAndPairs() throws {
    let command = try PhoneCommand.parse(
      #"post chat "Hello there" "How are you?" category=social flags=important positive=Reply negative=Dismiss"#)
    #expect(
      command
        == .post(
          NotificationTemplate(
            app: "chat", category: .social, flags: .important, title: "Hello there", message: "How are you?",
            positiveAction: "Reply", negativeAction: "Dismiss")))
  }

  @Test func postWithPairsOnly() throws {
    let command = try PhoneCommand.parse(
      #"post app=com.example.chat title="Hi" message="Line 1\nLine \"2\"" subtitle=sub category=email "#
        + #"flags=silent,important date=20261129T120000 positiveAction=Yes negativeAction="No way""#)
    #expect(
      command
        == .post(
          NotificationTemplate(
            app: "com.example.chat", category: .email, flags: [.silent, .important], title: "Hi", subtitle: "sub",
            message: "Line 1\nLine \"2\"", date: .fixed(ANCSDate(year: 2026, month: 11, day: 29, hour: 12)),
            positiveAction: "Yes", negativeAction: "No way")))
  }

  @Test func datesInPost() throws {
    #expect(
      try PhoneCommand.parse(#"post chat hi date="""#)
        == .post(NotificationTemplate(app: "chat", title: "hi", date: .empty)))
    #expect(try PhoneCommand.parse("post chat hi date=now") == .post(NotificationTemplate(app: "chat", title: "hi")))
  }

  @Test func quotingRules() throws {
    // A quoted word is never a key; an "=" after a quote or a non-name stays in the value.
    #expect(
      try PhoneCommand.parse(#"post chat "a=b" 2+2=4"#)
        == .post(NotificationTemplate(app: "chat", title: "a=b", message: "2+2=4")))
    // Quotes can start mid-word and adjoin: title=Hi" there" is one word.
    #expect(
      try PhoneCommand.parse(#"post chat title=Hi" there""#)
        == .post(NotificationTemplate(app: "chat", title: "Hi there")))
    #expect(
      try PhoneCommand.parse(#"post chat "tab\there" "back\\slash""#)
        == .post(NotificationTemplate(app: "chat", title: "tab\there", message: "back\\slash")))
    #expect(
      try PhoneCommand.parse(#"post chat "" "😀 日本 é""#) == .post(NotificationTemplate(app: "chat", message: "😀 日本 é")))
  }

  @Test func theOtherCommands() throws {
    #expect(
      try PhoneCommand.parse(#"modify 3 message="Running late" positive="" negative=OK flags="" date=now"#)
        == .modify(
          uid: 3,
          NotificationChange(
            message: "Running late", date: .now, flags: [], positiveAction: .remove, negativeAction: .set("OK"))))
    #expect(try PhoneCommand.parse("remove 42") == .remove(uid: 42))
    #expect(try PhoneCommand.parse("rm 42") == .remove(uid: 42))
    #expect(try PhoneCommand.parse(#"call "Alice Martin""#) == .call(caller: "Alice Martin"))
    #expect(try PhoneCommand.parse("call Alice Martin") == .call(caller: "Alice Martin"))
    #expect(try PhoneCommand.parse("  list  ") == .list)
    #expect(try PhoneCommand.parse("battery 0") == .battery(0))
    #expect(try PhoneCommand.parse("BATTERY 100") == .battery(100))
    #expect(try PhoneCommand.parse("time 20270101T000000") == .time(ANCSDate(year: 2027, month: 1, day: 1)))
    #expect(try PhoneCommand.parse("disconnect") == .disconnect)
    #expect(try PhoneCommand.parse("help") == .help)
    #expect(try PhoneCommand.parse("quit") == .quit)
    #expect(try PhoneCommand.parse("exit") == .quit)
    #expect(try PhoneCommand.parse("") == nil)
    #expect(try PhoneCommand.parse("   ") == nil)
    #expect(try PhoneCommand.parse("# a comment") == nil)
  }

  static let roundTrips: [PhoneCommand] = [
    .post(NotificationTemplate(app: "chat", title: "Hello")),
    .post(
      NotificationTemplate(
        app: "com.example.chat", category: .healthAndFitness, flags: [.silent, .important], title: "Quote \" and \\",
        subtitle: "tab\there", message: "Para 1\n\nPara 2 — 日本語 👩‍👩‍👧 é", date: .empty, positiveAction: "Yes please",
        negativeAction: "No")),
    .post(
      NotificationTemplate(app: "a.b", date: .fixed(ANCSDate(year: 2026, month: 2, day: 28, hour: 23, minute: 59)))),
    .modify(uid: 7, NotificationChange(title: "t", subtitle: "", message: "m\nm", date: .empty, flags: [])),
    .modify(uid: 7, NotificationChange(flags: [.important], positiveAction: .set("Go"), negativeAction: .remove)),
    .modify(uid: 4_294_967_295, NotificationChange(date: .now)),
    .remove(uid: 0), .call(caller: "Zoë \"Z\" Müller"), .list, .battery(42),
    .time(ANCSDate(year: 2027, month: 1, day: 1)),
    .disconnect, .bonds, .forget(peer: nil), .forget(peer: "C3:1A:05:7E:22:90"), .passkey(12345), .passkey(999_999),
    .confirm(true), .confirm(false), .help, .quit,
  ]

  @Test(arguments: roundTrips) func consoleLinesRoundTrip(command: PhoneCommand) throws {
    #expect(try PhoneCommand.parse(command.consoleLine) == command, "\(command.consoleLine)")
  }

  @Test func theConsoleLineReads() {
    #expect(
      PhoneCommand.post(NotificationTemplate(app: "chat", category: .social, title: "Hi", positiveAction: "Reply"))
        .consoleLine
        == #"post "chat" "Hi" "" category=social positive="Reply""#)
    #expect(
      PhoneCommand.modify(uid: 3, NotificationChange(negativeAction: .remove)).consoleLine == #"modify 3 negative="""#)
  }

  static let errors: [(String, String)] = [
    ("pots chat hi", #"unknown command "pots"; did you mean "post"? (type "help" for the syntax)"#),
    (
      "frobnicate",
      #"unknown command "frobnicate"; commands: post, modify, remove, call, list, battery, time, "#
        + #"disconnect, allow, revoke, bonds, forget, passkey, confirm, play, pause, next, previous, seek, volume, shuffle, repeat, player, help, quit (type "help" for the syntax)"#
    ),
    (
      #""post" chat"#,
      #"a line starts with a command: post, modify, remove, call, list, battery, time, disconnect, allow, revoke, bonds, forget, passkey, confirm, play, pause, next, previous, seek, volume, shuffle, repeat, player, help, quit (try "help")"#
    ),
    (#"post chat "Hello"#, #"missing closing quote (") in: post chat "Hello"#),
    (#"post chat "a\qb""#, #"unknown escape \q in quotes; use \" \\ \n or \t"#),
    (
      #"post title="Hi""#,
      #"post needs an app: post APP "TITLE" ["MESSAGE"] [key=value ...], e.g. post chat "Hello" "How are you?""#
    ),
    (
      "post chat Hello there how are you",
      #"post takes at most APP, TITLE and MESSAGE before key=value pairs; put text with spaces in quotes: post chat "Hello there" "How are you?""#
    ),
    (
      "post chat hi colour=red",
      #"post has no key "colour"; keys: app, title, subtitle, message, category, flags, date, positive, negative"#
    ),
    ("post chat hi title=again", "post: title given twice"),
    (
      "post chat hi category=chat",
      #"unknown category "chat"; valid: other, incomingCall, missedCall, voicemail, social, schedule, email, news, "#
        + "healthAndFitness, businessAndFinance, location, entertainment"
    ),
    (
      "post chat hi flags=loud",
      #"unknown flag "loud"; valid: silent, important (e.g. flags=important or flags=silent,important)"#
    ),
    (
      "post chat hi flags=positiveAction",
      #""positiveAction" follows from the "positiveAction" label, not from flags; valid: silent, important (e.g. flags=important or flags=silent,important)"#
    ),
    (
      "post chat hi date=tomorrow",
      #"invalid date "tomorrow": expected 15 characters yyyyMMdd'T'HHmmSS, got 8 (expected yyyyMMddTHHmmss, e.g. 20261129T120000); or date=now, or date="" for none"#
    ),
    ("modify", #"modify needs a UID: modify UID key=value ..., e.g. modify 3 message="Running late""#),
    (
      "modify 3",
      #"modify needs key=value pairs to change (title, subtitle, message, flags, date, positive, negative), e.g. modify 3 message="Running late""#
    ),
    ("modify 3 hello", #"modify takes one UID then key=value pairs, found "hello"; e.g. modify 3 title="New title""#),
    (
      "modify 3 category=news",
      #"modify has no key "category"; keys: title, subtitle, message, flags, date, positive, negative"#
    ),
    ("modify x title=a", #""x" is not a UID; modify takes a number, e.g. modify 3 (type "list" to see them)"#),
    ("remove", #"remove takes one UID: remove UID, e.g. remove 3 (type "list" to see the UIDs)"#),
    ("remove 1 2", #"remove takes one UID: remove UID, e.g. remove 3 (type "list" to see the UIDs)"#),
    ("remove -1", #""-1" is not a UID; remove takes a number, e.g. remove 3 (type "list" to see them)"#),
    (
      "remove 4294967296", #""4294967296" is not a UID; remove takes a number, e.g. remove 3 (type "list" to see them)"#
    ),
    ("remove uid=3", #"remove takes no uid=...; usage: remove UID"#),
    ("call", #"call needs a caller's name: call "Alice Martin""#),
    ("battery", "battery takes a level from 0 to 100: battery 42"),
    ("battery 101", "battery takes a level from 0 to 100: battery 42"),
    ("battery half", "battery takes a level from 0 to 100: battery 42"),
    ("time", "time takes one date: time 20261129T120000"),
    (
      "time 20261301T000000",
      #"invalid date "20261301T000000": month 13 out of range (expected yyyyMMddTHHmmss, e.g. 20261129T120000)"#
    ),
    ("list all", #"list takes nothing after it (found all); type just "list""#),
    ("quit now", #"quit takes nothing after it (found now); type just "quit""#),
  ]

  @Test(arguments: errors) func refusedLines(line: String, expected: String) {
    #expect(refusal(line) == expected)
  }
}

@Suite struct JSONCommandTests {
  @Test func everyCommand() throws {
    #expect(
      try PhoneCommand.parse(
        jsonLine: #"{"cmd":"post","app":"com.example.chat","title":"Hi","category":"social","flags":["important"],"#
          + #""date":"","positiveAction":"Reply"}"#)
        == .post(
          NotificationTemplate(
            app: "com.example.chat", category: .social, flags: .important, title: "Hi", date: .empty,
            positiveAction: "Reply")))
    #expect(
      try PhoneCommand.parse(jsonLine: #"{"cmd":"modify","uid":3,"message":"x","positiveAction":null}"#)
        == .modify(uid: 3, NotificationChange(message: "x", positiveAction: .remove)))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"remove","uid":4294967295}"#) == .remove(uid: 4_294_967_295))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"call","caller":"Alice"}"#) == .call(caller: "Alice"))
    #expect(try PhoneCommand.parse(jsonLine: #" {"cmd":"battery","level":42} "#) == .battery(42))
    #expect(
      try PhoneCommand.parse(jsonLine: #"{"cmd":"time","date":"20270101T000000"}"#)
        == .time(ANCSDate(year: 2027, month: 1, day: 1)))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"list"}"#) == .list)
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"disconnect"}"#) == .disconnect)
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"bonds"}"#) == .bonds)
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"forget"}"#) == .forget(peer: nil))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"forget","peer":"C3:1A"}"#) == .forget(peer: "C3:1A"))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"passkey","passkey":"012345"}"#) == .passkey(12345))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"confirm","answer":false}"#) == .confirm(false))
    #expect(throws: ConsoleError.self) { try PhoneCommand.parse(jsonLine: #"{"cmd":"passkey","passkey":12345}"#) }
    #expect(throws: ConsoleError.self) { try PhoneCommand.parse(jsonLine: #"{"cmd":"confirm","answer":"yes"}"#) }
    #expect(throws: ConsoleError.self) { try PhoneCommand.parse("passkey 12345") }
    #expect(throws: ConsoleError.self) { try PhoneCommand.parse("passkey +12345") }
    #expect(throws: ConsoleError.self) { try PhoneCommand.parse("confirm maybe") }
    #expect(try PhoneCommand.parse("confirm YES") == .confirm(true))
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"help"}"#) == .help)
    #expect(try PhoneCommand.parse(jsonLine: #"{"cmd":"quit"}"#) == .quit)
    #expect(try PhoneCommand.parse(jsonLine: "  ") == nil)
  }

  static let errors: [(String, String)] = [
    (#"{"cmd":"post","title":"x""#, "invalid JSON at column 26: unexpected end of input in an object"),
    ("[1]", #"$: expected an object like {"cmd":"list"}, found an array"#),
    (
      #"{"title":"x"}"#,
      #"$: missing key "cmd" (one of post, modify, remove, call, list, battery, time, disconnect, allow, revoke, bonds, forget, passkey, confirm, play, pause, next, previous, seek, volume, shuffle, repeat, player, help, quit)"#
    ),
    (
      #"{"cmd":"pots"}"#,
      #"$.cmd: unknown command "pots"; valid: post, modify, remove, call, list, battery, time, disconnect, allow, revoke, bonds, forget, passkey, confirm, play, pause, next, previous, seek, volume, shuffle, repeat, player, help, quit"#
    ),
    (
      #"{"cmd":"post","app":"a.b","id":"n1"}"#,
      "$.id: unknown key; allowed in a post command: cmd, app, category, title, subtitle, message, date, "
        + "positiveAction, negativeAction, flags, comment"
    ),
    (#"{"cmd":"post","title":"x"}"#, #"$: missing key "app" (the app's id, e.g. "com.example.chat")"#),
    (#"{"cmd":"post","app":"a.b","flags":["loud"]}"#, #"$.flags[0]: unknown flag "loud"; valid: silent, important"#),
    (
      #"{"cmd":"modify","uid":3}"#,
      "$: this modify command changes nothing; give at least one of title, subtitle, message, date, flags, positiveAction, negativeAction"
    ),
    (#"{"cmd":"modify","message":"x"}"#, #"$: missing key "uid" (the notification's UID, e.g. 3)"#),
    (#"{"cmd":"remove","uid":"3"}"#, #"$.uid: expected a UID (an integer 0-4294967295), found "3""#),
    (#"{"cmd":"remove","uid":-1}"#, "$.uid: expected a UID (an integer 0-4294967295), found -1"),
    (#"{"cmd":"remove","uid":1.5}"#, "$.uid: expected a UID (an integer 0-4294967295), found 1.5"),
    (#"{"cmd":"call"}"#, #"$: missing key "caller" (the caller's name, e.g. "Alice")"#),
    (#"{"cmd":"battery","level":200}"#, "$.level: battery level 200 is not an integer from 0 to 100"),
    (
      #"{"cmd":"time","date":"now"}"#,
      #"$.date: invalid date "now": expected 15 characters yyyyMMdd'T'HHmmSS, got 3 (expected yyyyMMddTHHmmss, e.g. 20261129T120000)"#
    ),
    (#"{"cmd":"list","all":true}"#, "$.all: unknown key; allowed in a list command: cmd"),
  ]

  @Test(arguments: errors) func refusedLines(line: String, expected: String) {
    #expect(jsonRefusal(line) == expected)
  }
}

@Suite(.timeLimit(scaledMinutes(2))) struct PhoneConsoleTests {
  func console() throws -> PhoneConsole {
    let phone = try Phone(
      wallClock: FixedWallClock(seconds: 1_796_040_000), apps: ["com.example.chat": "Chat", "com.example.mail": "Mail"])
    return PhoneConsole(phone: phone)
  }

  @Test func postModifyListRemove() async throws {
    let console = try console()
    let posted = try #require(
      await console.run(line: #"post chat "Hello there" "How are you?" category=social flags=important positive=Reply"#)
    )
    #expect(posted.ok)
    #expect(posted.lines == ["posted UID 1: Chat — Hello there"])
    #expect(posted.json.description == #"{"ok":true,"cmd":"post","uid":1}"#)
    let notification = try #require(await console.phone.notifications.first)
    #expect(notification.appIdentifier == "com.example.chat")
    #expect(notification.date == "20261130T120000")
    #expect(notification.eventFlags == [.important, .positiveAction])

    // By id, by name in any case, by the id's last part.
    _ = await console.run(line: #"post com.example.mail "Zoë" "日本語 😀""#)
    _ = await console.run(line: #"post MAIL "" "Only a message""#)
    #expect(
      await console.phone.notifications.map(\.appIdentifier) == [
        "com.example.chat", "com.example.mail", "com.example.mail",
      ])

    let modified = try #require(await console.run(line: #"modify 1 title="Hi" positive="""#))
    #expect(modified.lines == ["modified UID 1 (title, positiveAction): Chat — Hi"])
    #expect(await console.phone.notifications.first?.positiveAction == nil)

    let list = try #require(await console.run(line: "list"))
    #expect(
      list.lines == [
        "UID  APP   CATEGORY  FLAGS      ACTIONS  TITLE",
        "  1  Chat  social    important  -        Hi",
        "  2  Mail  other     -          -        Zoë",
        "  3  Mail  other     -          -        Only a message",
        "3 notifications; battery 80%, 0 watches connected, clock 2026-11-30 12:00:00",
      ])
    #expect(
      list.json.description.hasPrefix(
        #"{"ok":true,"cmd":"list","battery":80,"watches":0,"notifications":[{"uid":1,"app":"com.example.chat","#
          + #""appName":"Chat","category":"social","flags":["important"],"title":"Hi","#))

    let removed = try #require(await console.run(line: "remove 2"))
    #expect(removed.lines == ["removed UID 2: Mail — Zoë"])
    #expect(await console.phone.notifications.map(\.uid) == [1, 3])
  }

  @Test func wideCharactersKeepTheTableAligned() async throws {
    let console = try console()
    _ = await console.run(line: #"post chat "日本語" category=social"#)
    _ = await console.run(line: #"post chat "ab" category=social"#)
    let list = try #require(await console.run(line: "list"))
    #expect(list.lines[0] == "UID  APP   CATEGORY  FLAGS  ACTIONS  TITLE")
    #expect(list.lines[1] == "  1  Chat  social    -      -        日本語")
  }

  @Test func failuresSayWhatToDo() async throws {
    let console = try console()
    let unknownApp = try #require(await console.run(line: "post chta hi"))
    #expect(!unknownApp.ok)
    #expect(
      unknownApp.lines == [
        #"unknown app "chta"; registered: Chat (com.example.chat), Mail (com.example.mail); or give a full app id like com.example.chat"#
      ])
    #expect(
      unknownApp.json.description
        == #"{"ok":false,"cmd":"post","error":"unknown app \"chta\"; registered: Chat (com.example.chat), Mail (com.example.mail); or give a full app id like com.example.chat"}"#
    )
    #expect(await console.run(line: "remove 9")?.lines == [#"no notification with UID 9; type "list" to see them"#])
    #expect(
      await console.run(line: "modify 9 title=x")?.lines == [#"no notification with UID 9; type "list" to see them"#])
    let bad = try #require(await console.run(line: "battery 200"))
    #expect(bad.json.description == #"{"ok":false,"error":"battery takes a level from 0 to 100: battery 42"}"#)
    #expect(await console.run(line: "# nothing") == nil)
    #expect(await console.run(jsonLine: "") == nil)
    // An unregistered id with a dot is taken as it is.
    #expect(await console.run(line: "post org.other.app hi")?.ok == true)
    #expect(await console.phone.notifications.last?.appIdentifier == "org.other.app")
  }

  @Test func callBatteryTimeDisconnectHelpQuit() async throws {
    let console = try console()
    let call = try #require(await console.run(jsonLine: #"{"cmd":"call","caller":"Alice"}"#))
    #expect(call.lines == [#"incoming call from Alice: UID 1 (type "remove 1" to hang up)"#])
    #expect(call.json.description == #"{"ok":true,"cmd":"call","uid":1}"#)
    let ringing = try #require(await console.phone.notifications.first)
    #expect(ringing.category == .incomingCall && ringing.appIdentifier == "com.apple.mobilephone" && ringing.date == "")
    #expect(ringing.positiveAction == "Answer" && ringing.negativeAction == "Decline")
    #expect(await console.phone.apps["com.apple.mobilephone"] == "Phone")

    #expect(await console.run(line: "battery 42")?.lines == ["battery 42%"])
    #expect(await console.phone.battery == 42)
    #expect(await console.run(line: "time 20270101T000000")?.lines == ["clock set to 2027-01-01 00:00:00"])
    #expect(console.phone.dateNow() == "20270101T000000")
    #expect(await console.run(line: "disconnect")?.lines == ["disconnected 0 watches"])
    let help = try #require(await console.run(line: "help"))
    #expect(help.lines.joined(separator: "\n") == PhoneConsole.help)
    for name in PhoneCommand.commandNames { #expect(PhoneConsole.help.contains("\n  \(name) ")) }
    let quit = try #require(await console.run(jsonLine: #"{"cmd":"quit"}"#))
    #expect(quit.quit && quit.ok)
    #expect(await console.run(line: "list")?.quit == false)
  }

  @Test func bondsAndForget() async throws {
    let console = try console()
    #expect(await console.run(line: "bonds")?.lines.first?.hasPrefix("this phone keeps no bonds here") == true)
    #expect(await console.run(line: "forget")?.ok == false)
    let keyring = Keyring(address: "F0:00:00:00:00:01")
    console.phone.keepBonds(in: keyring)
    #expect(await console.run(line: "bonds")?.lines == ["no bonds"])
    keyring.keep(Keyring.Bond(key: 7, level: .encrypted), with: "C3:1A:05:7E:22:90")
    let listed = try #require(await console.run(jsonLine: #"{"cmd":"bonds"}"#))
    #expect(listed.json.description == #"{"ok":true,"cmd":"bonds","peers":["C3:1A:05:7E:22:90"]}"#)
    #expect(
      await console.run(line: "forget C0:00:00:00:00:00")?.lines == [
        "no bond with C0:00:00:00:00:00; bonded: C3:1A:05:7E:22:90"
      ])
    #expect(
      await console.run(line: "forget C3:1A:05:7E:22:90")?.lines == [
        "forgot C3:1A:05:7E:22:90: it must pair again (its link, if up, was dropped)"
      ])
    #expect(keyring.bondedPeers.isEmpty)
    #expect(await console.run(line: "forget")?.lines == ["no bonds to forget"])
    #expect(await console.run(line: "forget a b")?.ok == false)
    // Addresses are matched whatever the case typed.
    keyring.keep(Keyring.Bond(key: 8, level: .encrypted), with: "C3:1A:05:7E:22:90")
    #expect(await console.run(line: "forget c3:1a:05:7e:22:90")?.ok == true)
    #expect(keyring.bondedPeers.isEmpty)
    // No pairing over the simulated links asks its user.
    #expect(await console.run(line: "passkey 123456")?.lines == ["no pairing waits for a passkey"])
    #expect(await console.run(line: "confirm yes")?.lines == ["no pairing waits for a numeric comparison"])
  }

  @Test func theHelpExamplesParse() throws {
    // Every "e.g." in the help text is a valid command.
    for line in PhoneConsole.help.split(separator: "\n") {
      guard let range = line.firstRange(of: "e.g. ") else { continue }
      var example = String(line[range.upperBound...])
      if let comment = example.firstRange(of: "  (") { example = String(example[..<comment.lowerBound]) }
      #expect(throws: Never.self, "\(example)") { try PhoneCommand.parse(example) }
    }
  }
}
