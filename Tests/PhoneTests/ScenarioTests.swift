import ANCS
import ATT
import Phone
import Runtime
import TestSupport
import Testing
import Wire

/// The issue's example, as a base for the invalid cases.
private let example = """
  {"apps":[{"id":"com.example.chat","name":"Chat"}],
   "notifications":[{"id":"n1","app":"com.example.chat","category":"social","title":"Hello","subtitle":"sub",
     "message":"How are you?","date":"20261129T120000","positiveAction":"Reply","negativeAction":"Dismiss",
     "flags":["important"]}],
   "steps":[{"at":0.5,"post":"n1"},{"at":2,"modify":"n1","message":"Changed"},{"at":3,"remove":"n1"},
     {"at":4,"battery":42}]}
  """

/// The error a scenario text is refused with, as one line.
private func refusal(_ text: String, file: String = "s.json") -> String {
  do {
    let scenario = try Scenario(parsing: text, file: file)
    return "accepted: \(scenario.steps.count) steps"
  } catch {
    return error.description
  }
}

/// A scenario with these notifications and steps (JSON fragments) and the app com.example.chat.
private func scenario(notifications: String = #"{"id":"n1","app":"com.example.chat","title":"Hi"}"#, steps: String)
  -> String
{
  #"{"apps":[{"id":"com.example.chat","name":"Chat"}],"notifications":["# + notifications + #"],"steps":["# + steps
    + "]}"
}

@Suite struct ScenarioParsingTests {
  @Test func theIssueExampleParses() throws {
    let parsed = try Scenario(parsing: example, file: "example.json")
    #expect(parsed.apps == [ScenarioApp(id: "com.example.chat", name: "Chat")])
    let template = try #require(parsed.notifications["n1"])
    #expect(template.app == "com.example.chat")
    #expect(template.category == .social)
    #expect(template.flags == .important)
    #expect(template.title == "Hello")
    #expect(template.subtitle == "sub")
    #expect(template.message == "How are you?")
    #expect(template.date == .fixed(ANCSDate(year: 2026, month: 11, day: 29, hour: 12)))
    #expect(template.positiveAction == "Reply")
    #expect(template.negativeAction == "Dismiss")
    #expect(parsed.steps.map(\.at) == [0.5, 2, 3, 4])
    #expect(
      parsed.steps.map(\.action) == [
        .post("n1"), .modify("n1", NotificationChange(message: "Changed")), .remove("n1"), .battery(42),
      ])
    #expect(parsed.duration == 4)
    #expect(parsed.name == nil)
  }

  @Test func stepsAreSortedByTimeKeepingFileOrderForTies() throws {
    let parsed = try Scenario(
      parsing: scenario(
        steps: #"{"at":3,"battery":3},{"at":1,"post":"n1"},{"at":3,"battery":4},{"at":0,"battery":1}"#),
      file: "f")
    #expect(parsed.steps.map(\.index) == [3, 1, 0, 2])
    #expect(parsed.steps.map(\.action) == [.battery(1), .post("n1"), .battery(3), .battery(4)])
  }

  @Test func defaultsAndSpecialDates() throws {
    let parsed = try Scenario(
      parsing: scenario(
        notifications: #"""
          {"id":"a","app":"com.example.chat"},{"id":"b","app":"com.example.chat","date":""},
          {"id":"c","app":"com.example.chat","date":"now"}
          """#,
        steps: #"{"at":0,"post":"a"},{"at":0,"call":"Bob"},{"at":1,"disconnect":true},"#
          + #"{"at":2,"time":"20270101T000000"}"#),
      file: "f")
    let a = try #require(parsed.notifications["a"])
    #expect(a == NotificationTemplate(app: "com.example.chat"))
    #expect(a.category == .other && a.date == .now && a.positiveAction == nil && a.flags == [])
    #expect(parsed.notifications["b"]?.date == NotificationDate.empty)
    #expect(parsed.notifications["c"]?.date == .now)
    #expect(
      parsed.steps.map(\.action) == [
        .post("a"), .call(caller: "Bob", id: nil), .disconnect, .time(ANCSDate(year: 2027, month: 1, day: 1)),
      ])
    // A call makes the phone app known, after the declared ones.
    #expect(parsed.apps.map(\.id) == ["com.example.chat", "com.apple.mobilephone"])
    #expect(parsed.apps.last?.name == "Phone")
  }

  @Test func aModifyCanDropAnActionWithNull() throws {
    let parsed = try Scenario(
      parsing: scenario(
        steps: #"{"at":0,"post":"n1"},{"at":1,"modify":"n1","positiveAction":null,"negativeAction":"No","flags":[]}"#
      ), file: "f")
    #expect(
      parsed.steps[1].action
        == .modify("n1", NotificationChange(flags: [], positiveAction: .remove, negativeAction: .set("No"))))
  }

  @Test func callsCanBeRemovedByTheirID() throws {
    let parsed = try Scenario(
      parsing: scenario(steps: #"{"at":1,"call":"Alice","id":"c1"},{"at":5,"remove":"c1"}"#), file: "f")
    #expect(parsed.steps.map(\.action) == [.call(caller: "Alice", id: "c1"), .remove("c1")])
  }

  @Test func syntaxErrorsGiveLineAndColumn() {
    #expect(refusal("{\n  \"apps\": [,]\n}", file: "bad.json") == "bad.json: line 2, column 12: unexpected character")
    #expect(refusal("", file: "empty.json") == "empty.json: line 1, column 1: unexpected end of input")
    #expect(
      refusal(#"{"steps":[], "steps":[]}"#, file: "dup.json") == #"dup.json: line 1, column 14: duplicate key "steps""#)
  }

  static let invalid: [(String, String)] = [
    ("[]", #"$: expected an object with "apps", "notifications" and "steps", found an array"#),
    (#"{"apps":[]}"#, #"$: missing key "steps" (the timed steps, e.g. [{"at": 0, "post": "n1"}])"#),
    (#"{"steps":[]}"#, "$.steps: a scenario needs at least one step"),
    (#"{"steps":{}}"#, "$.steps: expected an array of steps, found an object"),
    (
      #"{"step":[]}"#,
      "$.step: unknown key; allowed at the top level: name, duration, apps, notifications, steps, comment"
    ),
    (#"{"apps":[{"id":"x"}],"steps":[]}"#, #"$.apps[0]: missing key "name" (the display name, e.g. "Chat")"#),
    (
      #"{"apps":[{"id":"x","name":"X"},{"id":"x","name":"Y"}],"steps":[{"at":0,"battery":1}]}"#,
      #"$.apps[1].id: duplicate app id "x""#
    ),
    (#"{"apps":[{"id":"","name":"X"}],"steps":[]}"#, "$.apps[0].id: must not be empty"),
    (
      #"{"apps":[{"id":"x","name":"X","icon":1}],"steps":[]}"#,
      "$.apps[0].icon: unknown key; allowed in an app: id, name, comment"
    ),
    (#"{"duration":-1,"steps":[]}"#, "$.duration: must be a number of seconds from 0 to 1000000"),
    (
      #"{"duration":1,"steps":[{"at":2,"battery":1}]}"#,
      "$.duration: 1s ends before the last step (at 2s)"
    ),
    (#"{"name":7,"steps":[]}"#, "$.name: expected a string, found a number"),
  ]

  @Test(arguments: invalid) func topLevelErrors(text: String, expected: String) {
    #expect(refusal(text) == "s.json: " + expected)
  }

  static let invalidNotifications: [(String, String)] = [
    (
      #"{"id":"n1","app":"com.example.chat","titel":"x"}"#,
      "$.notifications[0].titel: unknown key; allowed in a notification: id, app, category, title, subtitle, message, "
        + "date, positiveAction, negativeAction, flags, comment"
    ),
    (
      #"{"id":"n1","app":"com.example.chat","category":"chat"}"#,
      #"$.notifications[0].category: unknown category "chat"; valid: other, incomingCall, missedCall, voicemail, "#
        + "social, schedule, email, news, healthAndFitness, businessAndFinance, location, entertainment"
    ),
    (
      #"{"id":"n1","app":"com.example.chat","flags":["loud"]}"#,
      #"$.notifications[0].flags[0]: unknown flag "loud"; valid: silent, important"#
    ),
    (
      #"{"id":"n1","app":"com.example.chat","flags":["silent","positiveAction"]}"#,
      #"$.notifications[0].flags[1]: "positiveAction" follows from the "positiveAction" label, not from flags; valid: silent, important"#
    ),
    (
      #"{"id":"n1","app":"com.example.chat","flags":["preExisting"]}"#,
      #"$.notifications[0].flags[0]: "preExisting" is set by the phone at session start; valid: silent, important"#
    ),
    (
      #"{"id":"n1","app":"com.example.chat","flags":["silent","silent"]}"#,
      #"$.notifications[0].flags[1]: "silent" is listed twice"#
    ),
    (
      #"{"id":"n1","app":"com.example.chat","flags":"important"}"#,
      #"$.notifications[0].flags: expected an array of flag names like ["important"], found a string"#
    ),
    (
      #"{"id":"n1","app":"com.example.chat","date":"2026-11-29"}"#,
      #"$.notifications[0].date: invalid date "2026-11-29": expected 15 characters yyyyMMdd'T'HHmmSS, got 10 "#
        + "(expected yyyyMMddTHHmmss, e.g. 20261129T120000)"
    ),
    (
      #"{"id":"n1","app":"com.example.chat","date":"20261329T120000"}"#,
      #"$.notifications[0].date: invalid date "20261329T120000": month 13 out of range "#
        + "(expected yyyyMMddTHHmmss, e.g. 20261129T120000)"
    ),
    (
      #"{"id":"n1","app":"com.example.chta"}"#,
      #"$.notifications[0].app: unknown app "com.example.chta"; declared: com.example.chat"#
    ),
    (
      #"{"app":"com.example.chat"}"#, #"$.notifications[0]: missing key "id" (a name for steps to refer to, e.g. "n1")"#
    ),
    (#"{"id":"n1"}"#, #"$.notifications[0]: missing key "app" (the app's id, e.g. "com.example.chat")"#),
    (#"{"id":"n1","app":"com.example.chat","title":5}"#, "$.notifications[0].title: expected a string, found a number"),
    (
      #"{"id":"n1","app":"com.example.chat","positiveAction":""}"#,
      "$.notifications[0].positiveAction: must not be empty; leave the key out for no action"
    ),
    (
      #"{"id":"n1","app":"com.example.chat"},{"id":"n1","app":"com.example.chat"}"#,
      #"$.notifications[1].id: duplicate notification id "n1""#
    ),
    ("[]", "$.notifications[0]: expected a notification object, found an array"),
  ]

  @Test(arguments: invalidNotifications) func notificationErrors(notification: String, expected: String) {
    #expect(refusal(scenario(notifications: notification, steps: #"{"at":0,"battery":1}"#)) == "s.json: " + expected)
  }

  static let invalidSteps: [(String, String)] = [
    (
      #"{"at":0,"post":"n1"},{"at":1,"post":"n1"},{"at":2,"modify":"n9","title":"x"}"#,
      #"$.steps[2].modify: unknown notification id "n9""#
    ),
    (#"{"at":0,"post":"n9"}"#, #"$.steps[0].post: unknown notification id "n9""#),
    (#"{"at":0,"remove":"n9"}"#, #"$.steps[0].remove: unknown notification id "n9""#),
    (
      #"{"at":2,"post":"n1"},{"at":1,"remove":"n1"}"#,
      #"$.steps[1].remove: "n1" is not on the phone at 1s (no earlier step posts it)"#
    ),
    (
      #"{"at":0,"post":"n1"},{"at":1,"remove":"n1"},{"at":1.5,"modify":"n1","title":"x"}"#,
      #"$.steps[2].modify: "n1" is not on the phone at 1.5s (no earlier step posts it)"#
    ),
    (
      #"{"at":1}"#,
      "$.steps[0]: a step needs one action: post, modify, remove, call, battery, time, disconnect, play, pause, next, previous, seek, volume, shuffle, repeat, player"
    ),
    (
      #"{"at":1,"pots":"n1"}"#,
      #"$.steps[0].pots: unknown key; a step has "at" and one action: post, modify, remove, call, battery, time, disconnect, play, pause, next, previous, seek, volume, shuffle, repeat, player"#
    ),
    (
      #"{"at":1,"post":"n1","remove":"n1"}"#,
      "$.steps[0].remove: a step has one action, this one has 2: post, remove; split it into steps"
    ),
    (
      #"{"at":1,"post":"n1","message":"x"}"#,
      "$.steps[0].message: unknown key; allowed in a post step: at, post, comment"
    ),
    (#"{"post":"n1"}"#, #"$.steps[0]: missing key "at" (seconds from the start, e.g. 1.5)"#),
    (#"{"at":-0.5,"post":"n1"}"#, "$.steps[0].at: must be a number of seconds from 0 to 1000000"),
    (#"{"at":1e999,"post":"n1"}"#, "$.steps[0].at: must be a number of seconds from 0 to 1000000"),
    (#"{"at":"1","post":"n1"}"#, "$.steps[0].at: expected a number of seconds, found a string"),
    (#"{"at":0,"battery":101}"#, "$.steps[0].battery: battery level 101 is not an integer from 0 to 100"),
    (#"{"at":0,"battery":-1}"#, "$.steps[0].battery: battery level -1 is not an integer from 0 to 100"),
    (#"{"at":0,"battery":42.5}"#, "$.steps[0].battery: battery level 42.5 is not an integer from 0 to 100"),
    (#"{"at":0,"battery":"42"}"#, "$.steps[0].battery: expected a battery level from 0 to 100, found a string"),
    (
      #"{"at":0,"post":"n1"},{"at":1,"modify":"n1"}"#,
      "$.steps[1]: this modify step changes nothing; give at least one of title, subtitle, message, date, flags, "
        + "positiveAction, negativeAction"
    ),
    (
      #"{"at":0,"post":"n1"},{"at":1,"modify":"n1","category":"news"}"#,
      "$.steps[1].category: unknown key; allowed in a modify step: at, modify, comment, title, subtitle, message, "
        + "date, flags, positiveAction, negativeAction"
    ),
    (
      #"{"at":0,"post":"n1"},{"at":1,"modify":"n1","flags":["negativeAction"]}"#,
      #"$.steps[1].flags[0]: "negativeAction" follows from the "negativeAction" label, not from flags; valid: silent, important"#
    ),
    (#"{"at":0,"call":""}"#, "$.steps[0].call: must not be empty"),
    (#"{"at":0,"call":"Bob","id":"n1"}"#, #"$.steps[0].id: "n1" is already a notification id; choose another"#),
    (
      #"{"at":0,"call":"Bob","ringtone":"x"}"#,
      "$.steps[0].ringtone: unknown key; allowed in a call step: at, call, comment, id"
    ),
    (#"{"at":0,"time":""}"#, "$.steps[0].time: expected a date yyyyMMddTHHmmss, e.g. 20261129T120000"),
    (
      #"{"at":0,"time":"20260230T000000"}"#,
      #"$.steps[0].time: invalid date "20260230T000000": day 30 out of range (expected yyyyMMddTHHmmss, e.g. 20261129T120000)"#
    ),
    (
      #"{"at":0,"disconnect":false}"#,
      #"$.steps[0].disconnect: expected true ({"at": 5, "disconnect": true}), found false"#
    ),
    (
      #"{"at":0,"disconnect":1}"#,
      #"$.steps[0].disconnect: expected true ({"at": 5, "disconnect": true}), found a number"#
    ),
    ("3", #"$.steps[0]: expected a step like {"at": 1, "post": "n1"}, found a number"#),
    (
      #"{"at":0,"post":"n1","odd key":1}"#,
      #"$.steps[0]["odd key"]: unknown key; allowed in a post step: at, post, comment"#
    ),
  ]

  @Test(arguments: invalidSteps) func stepErrors(steps: String, expected: String) {
    #expect(refusal(scenario(steps: steps)) == "s.json: " + expected)
  }

  @Test func anAttributeLongerThanANCSHoldsIsRefused() {
    let long = String(repeating: "é", count: 40_000)
    #expect(
      refusal(
        scenario(
          notifications: #"{"id":"n1","app":"com.example.chat","message":"\#(long)"}"#, steps: #"{"at":0,"post":"n1"}"#)
      )
        == "s.json: $.notifications[0].message: 80000 bytes of UTF-8, more than an ANCS attribute holds (65535)")
  }

  @Test func theErrorIsTyped() {
    #expect(throws: ScenarioError(file: "f", path: "$.steps", reason: "a scenario needs at least one step")) {
      try Scenario(parsing: #"{"steps":[]}"#, file: "f")
    }
  }
}

@Suite struct BuiltInScenarioTests {
  @Test func theDemoIsValidAndShowsEverything() throws {
    let demo = try #require(try BuiltInScenarios.named("demo"))
    #expect(demo == BuiltInScenarios.demo)
    #expect(try BuiltInScenarios.named("nope") == nil)
    #expect((60...90).contains(demo.duration))
    // Every category, the call included.
    var categories = Set(
      demo.steps.compactMap { step -> CategoryID? in
        if case .post(let id) = step.action { return demo.notifications[id]?.category }
        return nil
      })
    if demo.steps.contains(where: { if case .call = $0.action { true } else { false } }) {
      categories.insert(.incomingCall)
    }
    #expect(categories == Set((0...11).map { CategoryID(rawValue: $0) }))
    let kinds = Set(demo.steps.map(\.action.kind))
    #expect(kinds.isSuperset(of: ["post", "modify", "remove", "call", "battery", "time"]))
    // The call rings and stops.
    #expect(demo.steps.contains { $0.action == .call(caller: "Alice Martin", id: "alice") })
    #expect(demo.steps.contains { $0.action == .remove("alice") })
    // A multi-paragraph message with accents, CJK and emoji.
    #expect(
      demo.notifications.values.contains {
        $0.message.contains("\n\n") && $0.message.contains("é") && $0.message.contains("京都")
          && $0.message.unicodeScalars.contains { $0.properties.isEmojiPresentation }
      })
    // Every posted template is used, and every app is used.
    let posted = Set(
      demo.steps.compactMap { step -> String? in
        if case .post(let id) = step.action { return id }
        return nil
      })
    #expect(posted == Set(demo.notifications.keys))
    #expect(Set(demo.apps.map(\.id)) == Set(demo.notifications.values.map(\.app)))
  }
}

/// A phone, a manual clock and a player running in a task, with the reports collected.
private final class PlayerRig: Sendable {
  let phone: Phone
  let clock = ManualClock()
  final class Reports: Sendable {
    let lines = Locked<[String]>([])
  }
  let reports = Reports()
  let task: Task<Void, any Error>

  init(_ scenario: Scenario, loop: Bool = false) throws {
    let clock = clock
    let phone = try Phone(wallClock: ManualWallClock(clock: clock, base: 1_796_040_000))
    self.phone = phone
    let reports = reports
    task = Task {
      try await ScenarioPlayer(scenario, loop: loop).play(on: phone, clock: clock) { report in
        reports.lines.withLock { $0.append(report.description) }
      }
    }
  }

  /// Moves the clock on by `seconds` and waits until the player sleeps again (or ends).
  func advance(_ seconds: Double) async {
    clock.advance(by: .milliseconds(Int64(seconds * 1000)))
    await settle()
  }

  /// Waits until the player sleeps on the clock.
  func settle() async { await clock.waitForSleepers(1) }

  var titles: [String] { get async { await phone.notifications.map(\.title) } }
  var log: [String] { reports.lines.withLock { $0 } }
}

@Suite(.timeLimit(scaledMinutes(1))) struct ScenarioPlayerTests {
  @Test func stepsRunInOrderAtTheirTimes() async throws {
    let rig = try PlayerRig(try Scenario(parsing: example, file: "example.json"))
    await rig.settle()
    #expect(await rig.phone.apps == ["com.example.chat": "Chat"])
    #expect(await rig.phone.notifications.isEmpty)
    await rig.advance(0.499)
    #expect(await rig.phone.notifications.isEmpty)
    await rig.advance(0.001)
    let posted = try #require(await rig.phone.notifications.first)
    #expect(
      posted
        == PhoneNotification(
          uid: posted.uid, appIdentifier: "com.example.chat", category: .social, flags: .important, title: "Hello",
          subtitle: "sub", message: "How are you?", date: "20261129T120000", positiveAction: "Reply",
          negativeAction: "Dismiss"))
    await rig.advance(1.4)
    #expect(await rig.phone.notifications.first?.message == "How are you?")
    await rig.advance(0.1)
    #expect(await rig.phone.notifications.first?.message == "Changed")
    #expect(await rig.phone.notifications.first?.uid == posted.uid)
    #expect(await rig.phone.battery == 80)
    await rig.advance(1)
    #expect(await rig.phone.notifications.isEmpty)
    #expect(await rig.phone.battery == 80)
    rig.clock.advance(by: .seconds(1))
    try await rig.task.value
    #expect(await rig.phone.battery == 42)
    #expect(
      rig.log == [
        "[   0.0s] apps: Chat (com.example.chat)",
        "[   0.5s] posted n1 as UID 1: Chat — Hello",
        "[   2.0s] modified n1 (UID 1, message): Chat — Hello",
        "[   3.0s] removed n1 (UID 1)",
        "[   4.0s] battery 42%",
      ])
  }

  @Test func callsTimeDisconnectAndNowDates() async throws {
    let text = scenario(
      notifications:
        #"{"id":"n1","app":"com.example.chat","title":"Hi"},{"id":"n2","app":"com.example.chat","date":""}"#,
      steps: #"""
        {"at":0,"post":"n1"},{"at":0,"post":"n2"},{"at":1,"call":"Alice","id":"c"},{"at":2,"time":"20270101T000000"},
        {"at":3,"post":"n1"},{"at":4,"remove":"c"},{"at":5,"disconnect":true}
        """#)
    let rig = try PlayerRig(try Scenario(parsing: text, file: "f"))
    await rig.settle()
    // "now" is the phone's clock: 1_796_040_000 is 2026-11-30 12:00:00 UTC.
    #expect(await rig.phone.notifications.map(\.date) == ["20261130T120000", ""])
    await rig.advance(1)
    let call = try #require(await rig.phone.notifications.last)
    #expect(call.category == .incomingCall)
    #expect(call.appIdentifier == "com.apple.mobilephone")
    #expect(call.title == "Alice")
    #expect(call.date == "")
    #expect(call.positiveAction == "Answer" && call.negativeAction == "Decline")
    #expect(await rig.phone.apps["com.apple.mobilephone"] == "Phone")
    await rig.advance(1)
    #expect(rig.phone.dateNow() == "20270101T000000")
    await rig.advance(1)
    #expect(await rig.phone.notifications.last?.date == "20270101T000001")
    #expect(rig.phone.dateNow() == "20270101T000001")
    await rig.advance(1)
    #expect(await !rig.phone.notifications.contains { $0.category == .incomingCall })
    rig.clock.advance(by: .seconds(1))
    try await rig.task.value
    #expect(
      rig.log == [
        "[   0.0s] apps: Chat (com.example.chat), Phone (com.apple.mobilephone)",
        "[   0.0s] posted n1 as UID 1: Chat — Hi",
        "[   0.0s] posted n2 as UID 2: Chat — ",
        "[   1.0s] incoming call from Alice: UID 3 (c)",
        "[   2.0s] clock set to 2027-01-01 00:00:00",
        "[   3.0s] posted n1 as UID 4: Chat — Hi",
        "[   4.0s] removed c (UID 3)",
        "[   5.0s] disconnected 0 watches",
      ])
  }

  @Test func modifyAndRemoveActOnTheLatestPostStillOnThePhone() async throws {
    let text = scenario(
      steps: #"""
        {"at":0,"post":"n1"},{"at":0,"post":"n1"},{"at":1,"modify":"n1","title":"second"},{"at":2,"remove":"n1"},
        {"at":3,"modify":"n1","title":"first"},{"at":4,"remove":"n1"}
        """#)
    let rig = try PlayerRig(try Scenario(parsing: text, file: "f"))
    await rig.settle()
    #expect(await rig.phone.notifications.map(\.uid) == [1, 2])
    await rig.advance(1)
    #expect(await rig.titles == ["Hi", "second"])
    await rig.advance(1)
    #expect(await rig.phone.notifications.map(\.uid) == [1])
    await rig.advance(1)
    #expect(await rig.titles == ["first"])
    rig.clock.advance(by: .seconds(1))
    try await rig.task.value
    #expect(await rig.phone.notifications.isEmpty)
  }

  @Test func aNotificationRemovedMeanwhileIsReported() async throws {
    let text = scenario(steps: #"{"at":0,"post":"n1"},{"at":1,"modify":"n1","title":"x"},{"at":2,"remove":"n1"}"#)
    let rig = try PlayerRig(try Scenario(parsing: text, file: "f"))
    await rig.settle()
    await rig.phone.remove(1)  // as a watch action would
    await rig.advance(1)
    rig.clock.advance(by: .seconds(1))
    try await rig.task.value
    #expect(
      Array(rig.log.suffix(2)) == [
        "[   1.0s] modify n1: not on the phone any more (the watch may have removed it)",
        "[   2.0s] remove n1: not on the phone any more (the watch may have removed it)",
      ])
  }

  @Test func loopingRemovesWhatItPostedAndStartsAgain() async throws {
    let text = #"""
      {"duration":10,"apps":[{"id":"com.example.chat","name":"Chat"}],
       "notifications":[{"id":"n1","app":"com.example.chat","title":"A"},{"id":"n2","app":"com.example.chat","title":"B"}],
       "steps":[{"at":1,"post":"n1"},{"at":2,"post":"n2"},{"at":3,"remove":"n1"},{"at":4,"battery":10}]}
      """#
    let rig = try PlayerRig(try Scenario(parsing: text, file: "f"), loop: true)
    await rig.settle()
    // Someone else's notification survives the cleanup.
    let other = await rig.phone.post(PhoneNotification(appIdentifier: "com.example.chat", title: "mine"))
    await rig.advance(4)
    #expect(await rig.titles == ["mine", "B"])
    await rig.advance(5.999)
    #expect(await rig.titles == ["mine", "B"])
    await rig.advance(0.001)
    #expect(await rig.titles == ["mine"])
    await rig.advance(1)
    #expect(await rig.titles == ["mine", "A"])
    await rig.advance(1)
    #expect(await rig.titles == ["mine", "A", "B"])
    rig.task.cancel()
    await #expect(throws: CancellationError.self) { try await rig.task.value }
    #expect(await rig.phone.notifications.first?.uid == other.uid)
    #expect(
      Array(rig.log.suffix(3)) == [
        "[  10.0s] round over: removed 1 notification",
        "[round 2    1.0s] posted n1 as UID 4: Chat — A",
        "[round 2    2.0s] posted n2 as UID 5: Chat — B",
      ])
  }

  @Test func theDemoPlaysToTheEnd() async throws {
    let rig = try PlayerRig(BuiltInScenarios.demo)
    await rig.settle()
    #expect(await rig.phone.battery == 87)
    for _ in 0..<85 { await rig.advance(1) }
    #expect(await rig.phone.battery == 22)
    #expect(await rig.phone.notifications.contains { $0.title == "Maya" && $0.date == "20270101T000000" })
    #expect(await !rig.phone.notifications.contains { $0.category == .incomingCall })
    #expect(
      await rig.phone.notifications.first { $0.title == "Maya" }?.message.hasSuffix("ten minutes late, sorry!") == true)
    let update = try #require(await rig.phone.notifications.first { $0.title == "Software Update" })
    #expect(update.positiveAction == nil && update.negativeAction == "Cancel" && update.flags == .silent)
    rig.clock.advance(by: .seconds(1))
    try await rig.task.value
    #expect(rig.log.count == BuiltInScenarios.demo.steps.count + 1)
    #expect(!rig.log.contains { $0.contains("not on the phone") })
  }
}

/// A wall clock that moves with a manual clock: `base` seconds at its origin, UTC.
private struct ManualWallClock: WallClock {
  let clock: ManualClock
  let base: Int64
  func now() -> (secondsSinceEpoch: Int64, utcOffsetSeconds: Int) { (base + clock.now.components.seconds, 0) }
}
