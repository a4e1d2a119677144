import Foundation
import TestSupport
import Testing

@Suite(.enabled(if: ancsBuilt, "the ancs binary is not built (run swift build first)"), .timeLimit(scaledMinutes(1)))
struct CLITests {
  @Test func helpAndVersion() async throws {
    let (status, out, _) = try await runAncs(["--help"])
    #expect(status == 0 && out.contains("usage: ancs"))
    let (vStatus, version, _) = try await runAncs(["--version"])
    #expect(vStatus == 0 && version.hasPrefix("ancs "))
    for command in ["phone", "watch", "demo", "bench", "inspect"] {
      let (code, text, _) = try await runAncs([command, "--help"])
      #expect(code == 0, "\(command) --help")
      #expect(text.contains("example"), "\(command) --help shows an example")
    }
  }

  /// Bad input: one line on stderr naming the problem, exit code 2, nothing left behind.
  @Test(
    arguments: [
      (["frobnicate"], "unknown subcommand"),
      (["watch"], "needs --connect"),
      (["watch", "--connect", "bogus:thing"], "unknown transport bogus: (use unix:PATH or tcp:HOST:PORT)"),
      (["watch", "--connect", "unix:/tmp/x.sock", "--preexisting", "some"], "--preexisting"),
      (["watch", "--connect", "memory"], "ancs demo"),
      (["phone"], "needs --listen"),
      (["phone", "--listen", "hci-uart:/dev/ttyUSB0"], "hci-uart"),
      (["phone", "--listen", "unix:/tmp/never.sock", "--quirk", "nonsense"], "unknown quirk"),
      (["phone", "--listen", "unix:/tmp/never.sock", "--scenario", "/nonexistent.json"], "/nonexistent.json"),
      (["phone", "--listen", "unix:/tmp/never.sock", "--commands", "xml"], "--commands"),
      (["phone", "--listen", "unix:/tmp/never.sock", "--bogus"], "unknown argument '--bogus'"),
      (["demo", "--duration", "-1"], "--duration"),
      (["bench", "--seconds", "x"], "--seconds"),
      (["watch", "--bluetooth", "l2cap:hci0"], "use hci-tcp:HOST:PORT"),
      (["watch", "--bluetooth", "hci-uart:/nonexistent/ttyACM0"], "no serial device /nonexistent/ttyACM0"),
      (["watch", "--bluetooth", "hci-uart:/dev/ttyACM0,12"], "unsupported speed '12'"),
      (["watch", "--bluetooth", "l2cap:hci0", "--bonds", "/tmp/b.json"], "the kernel keeps the bonds"),
      (["phone", "--bluetooth", "l2cap:hci0", "--capture", "/tmp/c.btsnoop"], "btmon -w FILE"),
      (["watch", "--bluetooth", "bogus:1"], "unknown Bluetooth transport"),
      (["watch", "--bluetooth", "hci-tcp:127.0.0.1:x"], "the port must be a number"),
      (["watch", "--connect", "unix:/tmp/x.sock", "--bluetooth", "hci-tcp:127.0.0.1:1"], "not both"),
      (["watch", "--connect", "unix:/tmp/x.sock", "--bonds", "/tmp/b.json"], "--bonds goes with --bluetooth"),
      (["watch", "--connect", "unix:/tmp/x.sock", "--name", String(repeating: "W", count: 249)], "at most 248 bytes"),
      (["phone", "--listen", "unix:/tmp/never.sock", "--ios", "7"], "unknown iOS profile '7'; known: 8, 9, 12, 18"),
      (["phone", "--listen", "unix:/tmp/never.sock", "--gatt-layout", "big"], "--gatt-layout takes iphone or minimal"),
      (["phone", "--listen", "unix:/tmp/never.sock", "--quirk", "omit-tuple=300"], "omit-tuple =ID, 0-255"),
      (["phone", "--bluetooth", "hci-tcp:127.0.0.1:1", "--peer", "nope"], "--peer takes a Bluetooth address"),
      (["phone", "--listen", "unix:/tmp/x.sock", "--peer", "C0:11:22:33:44:55"], "--peer goes with --bluetooth"),
      (["phone", "--bluetooth", "hci-tcp:127.0.0.1:1"], "hci-tcp:127.0.0.1:1"),
      (["phone", "--listen", "unix:/tmp/x.sock", "--passkey", "123456"], "--passkey goes with --bluetooth hci-*"),
      (["phone", "--bluetooth", "l2cap:hci0", "--confirm", "yes"], "--confirm goes with --bluetooth hci-*"),
      (["phone", "--bluetooth", "hci-tcp:127.0.0.1:1", "--passkey", "12345"], "--passkey takes the six digits"),
      (["phone", "--bluetooth", "hci-tcp:127.0.0.1:1", "--passkey", "+12345"], "--passkey takes the six digits"),
      (["phone", "--bluetooth", "hci-tcp:127.0.0.1:1", "--confirm", "maybe"], "--confirm takes yes or no"),
      (["watch", "--connect", "unix:/tmp/x.sock", "--io", "display-only"], "--io goes with --bluetooth hci-*"),
      (["watch", "--bluetooth", "l2cap:hci0", "--security", "mitm"], "--security goes with --bluetooth hci-*"),
      (["watch", "--bluetooth", "hci-tcp:127.0.0.1:1", "--io", "screen"], "--io takes display-only, display-yesno"),
      (["watch", "--bluetooth", "hci-tcp:127.0.0.1:1", "--security", "high"], "--security takes just-works or mitm"),
      (["conform", "phone", "--bluetooth", "hci-tcp:127.0.0.1:1", "--passkey", "123456"], "are for conform accessory"),
      (
        ["conform", "phone", "--connect", "unix:/tmp/x.sock", "--io", "display-yesno"],
        "--io is for conform phone --bluetooth"
      ),
      (["conform", "accessory", "--listen", "unix:/tmp/x.sock", "--io", "display-yesno"], "--io is for conform phone"),
      (
        ["conform", "phone", "--bluetooth", "hci-tcp:127.0.0.1:1", "--io", "keyboard-only"],
        "--io takes display-only or"
      ),
      (
        ["conform", "phone", "--connect", "unix:/tmp/x.sock", "--requires-mitm"],
        "--requires-mitm is for conform accessory"
      ),
      (["watch", "--connect", "unix:/tmp/x.sock", "--security", "high"], "--security takes just-works or mitm"),
      (["bench", "--fleet", "0"], "--fleet needs a whole number from 1"),
      (["bench", "--fleet", "many"], "--fleet"),
      (["bench", "--fleet", "10", "--air", "2m,30ms,185,251"], "--fleet goes alone"),
      (["bench", "--filter", "cp", "--notifications", "10"], "--notifications goes with --fleet N or the end-to-end"),
      (["bench", "--air", "2m,30ms,185,251", "--notifications", "10"], "--notifications goes with --fleet N or"),
      (["bench", "--fleet", "10", "--notifications", "-5"], "--notifications"),
      // A report that cannot be written is said before any case runs.
      (
        ["conform", "phone", "--connect", "unix:/tmp/never.sock", "--junit", "/nonexistent/r.xml"],
        "--junit /nonexistent/r.xml: the directory /nonexistent does not exist"
      ),
      (["conform", "phone", "--connect", "unix:/tmp/never.sock", "--html", "/tmp"], "--html /tmp: is a directory"),
    ] as [([String], String)])
  func badUsage(_ arguments: [String], _ expected: String) async throws {
    let (status, out, err) = try await runAncs(arguments)
    #expect(status == 2, "\(arguments): exit \(status), stderr \(err)")
    #expect(err.contains(expected), "\(arguments): \(err)")
    #expect(err.split(separator: "\n").count == 1, "one line: \(err)")
    #expect(out.isEmpty)
    #expect(!FileManager.default.fileExists(atPath: "/tmp/never.sock"))
  }

  /// Issue #13 (12): the project's docs and the texts the program prints stand alone:
  /// nothing cites notes that are not in the repository.
  @Test func docsCiteOnlyWhatTheRepositoryHolds() throws {
    var files = ["README.md", "Makefile"]
    for folder in ["Protocol", "Sources"] {
      let enumerator = FileManager.default.enumerator(atPath: repositoryFile(folder).path)
      while let path = enumerator?.nextObject() as? String {
        if path.hasSuffix(".md") || path.hasSuffix(".swift") { files.append("\(folder)/\(path)") }
      }
    }
    #expect(files.count > 50)
    for file in files {
      let text = try repositoryText(file)
      for stale in ["../shared", "ancs-facts", "iphone-facts", "not implemented yet", "once the real-Bluetooth"] {
        #expect(!text.contains(stale), "\(file) mentions \(stale)")
      }
    }
  }

  @Test func listEndsWithBothRolesCounted() async throws {
    let (status, out, _) = try await runAncs(["conform", "--list"])
    #expect(status == 0)
    let last = out.split(separator: "\n").last.map(String.init) ?? ""
    #expect(
      last.firstMatch(of: /^\d+ cases: \d+ NP \(a phone under test\), \d+ NC \(an accessory under test\)$/) != nil,
      "\(last)")
  }

  @Test func badExecutorSetting() async throws {
    let (status, out, err) = try await runAncs(["--version"], environment: ["ANCS_EXECUTOR": "threads"])
    #expect(status == 2)
    #expect(err == "ancs: ANCS_EXECUTOR=threads: expected loop or dispatch\n", "\(err)")
    #expect(out.isEmpty)
  }

  @Test func badScenarioNamesFileAndPath() async throws {
    let path = temporaryPath("bad.json")
    try #"{"apps":[],"notifications":[],"steps":[{"at":1,"remove":"n9"}]}"#.write(
      toFile: path, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let (status, _, err) = try await runAncs(["demo", "--scenario", path, "--headless"])
    #expect(status == 2)
    #expect(err.contains(path) && err.contains("$.steps[0]"), "\(err)")
  }

  @Test func addressInUse() async throws {
    let path = temporaryPath("busy.sock")
    let first = try Command(["phone", "--listen", "unix:\(path)"])
    await first.line(containing: "listening")
    let (status, _, err) = try await runAncs(["phone", "--listen", "unix:\(path)"])
    #expect(status == 2)
    #expect(err.contains("in use"), "\(err)")
    first.send("quit")
    #expect(try await first.exitCode() == 0)
    #expect(!FileManager.default.fileExists(atPath: path), "the socket file is removed on quit")
  }

  /// Two real processes over a Unix socket: post, act from the watch, remove; with the tasks
  /// on each process's event loop (the default) and on Swift's pool.
  @Test(arguments: [[:], ["ANCS_EXECUTOR": "dispatch"]])
  func phoneAndWatchInTwoProcesses(environment: [String: String]) async throws {
    let path = temporaryPath("phone.sock")
    let phone = try Command(["phone", "--listen", "unix:\(path)", "--commands", "jsonl"], environment: environment)
    defer { phone.terminate() }
    // The phone prints nothing before its first event in jsonl mode; wait for the socket.
    try await offThread {
      for _ in 0..<200 where !FileManager.default.fileExists(atPath: path) { usleep(10_000) }
    }
    let watch = try Command(["watch", "--connect", "unix:\(path)", "--headless"], environment: environment)
    defer { watch.terminate() }
    await watch.line(containing: #""event":"connected""#)
    await phone.line(containing: #""event":"sessionStarted""#)
    phone.send(
      #"{"cmd":"post","app":"com.example.chat","title":"Über 🚀","message":"ça va? 日本","category":"social","positiveAction":"Reply","negativeAction":"Dismiss"}"#
    )
    let added = await watch.line(containing: #""event":"added""#) ?? ""
    #expect(added.contains(#""title":"Über 🚀""#) && added.contains(#""message":"ça va? 日本""#), "\(added)")
    #expect(added.contains(#""positiveAction":"Reply""#))
    let uid = try #require(added.firstMatch(of: /"uid":(\d+)/).map { String($0.1) })
    watch.send("positive \(uid)")
    await watch.line(containing: #""event":"action""#)
    await phone.line(containing: #""event":"action""#)
    await watch.line(containing: #""event":"removed","uid":\#(uid)"#)
    phone.send(#"{"cmd":"post","app":"com.example.chat","title":"second"}"#)
    let second = await watch.line(containing: #""title":"second""#) ?? ""
    let secondUID = try #require(second.firstMatch(of: /"uid":(\d+)/).map { String($0.1) })
    phone.send(#"{"cmd":"remove","uid":\#(secondUID)}"#)
    await watch.line(containing: #""event":"removed","uid":\#(secondUID)"#)
    watch.send("quit")
    #expect(try await watch.exitCode() == 0)
    phone.send(#"{"cmd":"quit"}"#)
    #expect(try await phone.exitCode() == 0)
  }

  /// Issue #14: `ancs phone` with its defaults is a current iPhone: it starts the MTU
  /// exchange (185), reads the watch's name and asks its user before sharing notifications;
  /// the watch says it is not shared until the user types `allow 1`.
  @Test func theDefaultPhoneAsksBeforeSharing() async throws {
    let path = temporaryPath("phone.sock")
    let phone = try Command(["phone", "--listen", "unix:\(path)"])
    defer { phone.terminate() }
    await phone.line(containing: "listening on")
    let watch = try Command(["watch", "--connect", "unix:\(path)", "--headless", "--name", "Test Ring"])
    defer { watch.terminate() }
    #expect(await phone.line(containing: "watch 1 is") == #"phone: watch 1 is "Test Ring", ATT MTU 185"#)
    await phone.line(containing: #"watch 1 ("Test Ring") would like to receive your notifications: type "allow 1""#)
    phone.send(#"post chat "Held back""#)
    await watch.line(containing: #"{"event":"sharing","allowed":false}"#)
    phone.send("allow 1")
    await phone.line(containing: "watch 1 may receive notifications")
    await watch.line(containing: #"{"event":"sharing","allowed":true}"#)
    let added = await watch.line(containing: #""event":"added""#) ?? ""
    #expect(added.contains(#""title":"Held back""#) && added.contains("preExisting"), "\(added)")
    watch.send("quit")
    #expect(try await watch.exitCode() == 0)
    phone.send("quit")
    #expect(try await phone.exitCode() == 0)
  }

  /// Issue #17: music played at the phone's console is on the headless watch's events, and
  /// the watch's `media pause` pauses it on the phone.
  @Test func theWatchSeesWhatThePhonePlaysAndPausesIt() async throws {
    let path = temporaryPath("phone.sock")
    let phone = try Command(["phone", "--listen", "unix:\(path)", "--share-notifications", "allow"])
    defer { phone.terminate() }
    await phone.line(containing: "listening on")
    phone.send(#"play "Tall Bird" "Bartlebeats" "Frequency" duration=3:35"#)
    await phone.line(containing: #"playing "Tall Bird" by Bartlebeats (Frequency), 0:00 of 3:35"#)
    let watch = try Command(["watch", "--connect", "unix:\(path)", "--headless"])
    defer { watch.terminate() }
    await watch.line(
      containing: #"{"event":"media","entity":"track","attribute":"title","value":"Tall Bird","truncated":false}"#)
    watch.send("media pause")
    await watch.line(containing: #"{"event":"remoteCommand","command":"pause"}"#)
    let told = await phone.line(containing: "remote command") ?? ""
    #expect(told.contains(#"watch 1 sent the remote command pause: paused at "Tall Bird" by Bartlebeats"#), "\(told)")
    await watch.line(containing: #""attribute":"playbackInfo","value":"0,0.0,"#)
    watch.send("quit")
    #expect(try await watch.exitCode() == 0)
    phone.send("quit")
    #expect(try await phone.exitCode() == 0)
  }

  /// Bond trouble between two processes (README, Bond trouble): the watch forgets its bond,
  /// the phone finds its key missing and drops the link at every try, keeping its bond,
  /// until its user types `forget ADDRESS`; then they pair afresh.
  @Test func aWatchThatLostItsBondComesBackOnceThePhoneForgetsIt() async throws {
    let path = temporaryPath("phone.sock")
    let phone = try Command(["phone", "--listen", "unix:\(path)", "--share-notifications", "allow"])
    defer { phone.terminate() }
    await phone.line(containing: "listening on")
    let watch = try Command(["watch", "--connect", "unix:\(path)", "--headless", "--reconnect-delay", "0.05"])
    defer { watch.terminate() }
    let bonded = await phone.line(containing: "paired with") ?? ""
    let address = try #require(bonded.firstMatch(of: /paired with ([0-9A-F:]{17}) and bonded/).map { String($0.1) })
    await watch.line(containing: #""event":"connected""#)
    phone.send("bonds")
    await phone.line(containing: "bonded with \(address)")
    watch.send("forget")
    await watch.line(containing: #""change":"forgotten""#)
    await watch.line(containing: #""change":"keyMissing""#)
    await phone.line(
      containing: "\(address) has lost its bond with this phone (iOS: \"Peer removed pairing information\")")
    phone.send("forget \(address)")
    await phone.line(containing: "forgot \(address): it must pair again")
    let again = await watch.line(containing: #""change":"bonded""#) ?? ""
    #expect(again.contains(#""again":false"#), "\(again)")
    await watch.line(containing: #""event":"connected""#)
    watch.send("quit")
    #expect(try await watch.exitCode() == 0)
    phone.send("quit")
    #expect(try await phone.exitCode() == 0)
  }

  @Test func theIOSProfilesAreListed() async throws {
    let (status, out, err) = try await runAncs(["phone", "--ios", "list"])
    #expect(status == 0 && err.isEmpty)
    let names = out.split(separator: "\n").filter { $0.hasPrefix("iOS ") }.map { $0.split(separator: " ")[1] }
    #expect(names == ["8", "9", "12", "18"])
    #expect(out.contains("ATT MTU 158") && out.contains("(the default)"))
  }

  /// Issue #13 (3): two watches in one phone capture are two links, each with its own
  /// handle, connected when it connects and disconnected when it goes.
  @Test func phoneCaptureKeepsEachWatchApart() async throws {
    let (phone, path, capture) = try await capturingPhone("phone")
    defer {
      phone.terminate()
      try? FileManager.default.removeItem(atPath: capture)
    }
    for _ in 0..<2 {
      let watch = try Command(["watch", "--connect", "unix:\(path)", "--headless"])
      defer { watch.terminate() }
      await watch.line(containing: #""event":"connected""#)
      await phone.line(containing: #""event":"sessionStarted""#)
      watch.send("quit")
      #expect(try await watch.exitCode() == 0)
      await phone.line(containing: #""event":"disconnected""#)
    }
    phone.send(#"{"cmd":"quit"}"#)
    #expect(try await phone.exitCode() == 0)
    let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: capture)))
    // Walk the records: H4 events (type 4) and ACL packets (type 2) with their handles.
    var offset = 16
    var events: [String] = []
    var aclHandles: Set<Int> = []
    while offset + 24 <= bytes.count {
      let length = bytes[(offset + 4)..<(offset + 8)].reduce(0) { $0 << 8 | Int($1) }
      let packet = Array(bytes[(offset + 24)..<(offset + 24 + length)])
      if packet[0] == 0x04 && packet[1] == 0x3E {
        events.append("connected \(Int(packet[5]) | Int(packet[6]) << 8)")
      } else if packet[0] == 0x04 && packet[1] == 0x05 {
        events.append("disconnected \(Int(packet[4]) | Int(packet[5]) << 8)")
      } else if packet[0] == 0x02 {
        let handle = (Int(packet[1]) | Int(packet[2]) << 8) & 0x0FFF
        aclHandles.insert(handle)
        if events.last != "data \(handle)" { events.append("data \(handle)") }
      }
      offset += 24 + length
    }
    #expect(events == ["connected 64", "data 64", "disconnected 64", "connected 65", "data 65", "disconnected 65"])
    #expect(aclHandles == [64, 65])
  }

  /// Issue #13 (4, 5): a watch started before its phone waits for it, says so once, and
  /// connects when the phone comes up; end of input stops it with exit 0.
  @Test func watchWaitsForItsPhoneAndEndsAtEndOfInput() async throws {
    let path = temporaryPath("late.sock")
    let watch = try Command(["watch", "--connect", "unix:\(path)", "--headless", "--reconnect-delay", "0.05"])
    defer { watch.terminate() }
    try await offThread {
      for _ in 0..<500 where !watch.stderr.contains("waiting for the phone") { usleep(10_000) }
    }
    #expect(watch.stderr.contains("ancs: waiting for the phone: unix:\(path)"), "\(watch.stderr)")
    let phone = try Command(["phone", "--listen", "unix:\(path)", "--commands", "jsonl"])
    defer { phone.terminate() }
    await watch.line(containing: #""event":"connected""#)
    await phone.line(containing: #""event":"sessionStarted""#)
    watch.closeInput()
    #expect(try await watch.exitCode() == 0)
    let stderr = await watch.wholeStderr()
    #expect(stderr.components(separatedBy: "waiting for the phone").count == 2, "said once: \(stderr)")
    phone.send(#"{"cmd":"quit"}"#)
    #expect(try await phone.exitCode() == 0)
  }

  /// With --no-reconnect a phone that cannot be reached is a lost link: exit 1, one line.
  @Test(arguments: ["unix:/nonexistent/dir/phone.sock", "tcp:127.0.0.1:9"])
  func unreachablePhoneWithoutReconnecting(address: String) async throws {
    // Input stays open: only the failed connection may end it.
    let watch = try Command(["watch", "--connect", address, "--headless", "--no-reconnect"])
    defer { watch.terminate() }
    #expect(try await watch.exitCode() == 1)
    let stderr = await watch.wholeStderr()
    #expect(stderr.contains("waiting for the phone: \(address)"), "\(stderr)")
    #expect(await watch.nextLine() == nil, "no event: the phone was never reached")
  }

  /// Issue #13 (9): a phone whose controller refuses to scan (LE Set Scan Parameters:
  /// Command Disallowed) is of no use; it says so in one line and exits 1 instead of
  /// running on.
  @Test func aPhoneWhoseControllerRefusesToScanStops() async throws {
    let controller = try RefusingController(refused: [0x200B])
    let bonds = temporaryPath("bonds.json")
    defer { try? FileManager.default.removeItem(atPath: bonds) }
    // Input stays open: only the failure may end it.
    let phone = try Command(["phone", "--bluetooth", "hci-tcp:127.0.0.1:\(controller.port)", "--bonds", bonds])
    defer { phone.terminate() }
    #expect(try await phone.exitCode() == 1)
    let stderr = await phone.wholeStderr()
    let lines = stderr.split(separator: "\n")
    #expect(lines.count == 1, "\(stderr)")
    #expect(stderr.contains("HCI_LE_Set_Scan_Parameters") && stderr.contains("commandDisallowed"), "\(stderr)")
  }

  @Test func headlessDemoPlaysAScenario() async throws {
    let path = temporaryPath("demo.json")
    try #"""
    {"apps":[{"id":"com.example.chat","name":"Chat"}],
     "notifications":[{"id":"n1","app":"com.example.chat","category":"social","title":"Hi","message":"there"}],
     "steps":[{"at":0.2,"post":"n1"},{"at":0.6,"remove":"n1"},{"at":0.8,"battery":42}]}
    """#.write(toFile: path, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(atPath: path) }
    // No --duration: the scenario starts when the watch has subscribed, and the demo ends
    // 2 s after its last step, however long the start took (under a sanitizer, seconds).
    let (status, out, err) = try await runAncs(["demo", "--scenario", path, "--headless"])
    #expect(status == 0, "\(err)")
    let events = out.split(separator: "\n").map(String.init)
    #expect(events.first?.contains(#""event":"connected""#) == true)
    #expect(events.contains { $0.contains(#""event":"added""#) && $0.contains(#""appName":"Chat""#) })
    #expect(events.contains { $0.contains(#""event":"removed""#) })
    #expect(events.contains { $0.contains(#""level":42"#) })
  }
}

/// Issue #18 (1): `ancs inspect` tells the story of a session the phone captured: ANCS and
/// AMS found by discovery, the notification added and fetched, the remote command.
@Suite(.enabled(if: ancsBuilt, "the ancs binary is not built (run swift build first)"), .timeLimit(scaledMinutes(2)))
struct InspectCommandTests {
  @Test func inspectTellsACapturedSession() async throws {
    let (phone, path, capture) = try await capturingPhone("inspect")
    defer {
      phone.terminate()
      try? FileManager.default.removeItem(atPath: capture)
    }
    let watch = try Command(["watch", "--connect", "unix:\(path)", "--headless"])
    defer { watch.terminate() }
    await phone.line(containing: #""event":"sessionStarted""#)
    phone.send(#"{"cmd":"post","app":"com.example.chat","title":"Hello Ada","message":"Über 🚀 ça va"}"#)
    phone.send(#"{"cmd":"play","title":"Clair de Lune","artist":"Debussy","duration":300}"#)
    await watch.eachLine(containingAll: [#""title":"Hello Ada""#, #""attribute":"title","value":"Clair de Lune""#])
    watch.send("media pause")
    await phone.line(containing: #""event":"remoteCommand""#)
    try await quitBoth(watch, phone)

    let (status, out, err) = try await runAncs(["inspect", capture])
    #expect(status == 0, "\(err)")
    for expected in [
      "btsnoop, H4", "connected to", "ANCS found by discovery", "AMS found by discovery",
      "Notification Source: notifications",
      "Added UID 1", #"title="Hello Ada""#, #"message="Über 🚀 ça va""#, #"track.title = "Clair de Lune""#,
      "remote command pause", "disconnected",
    ] {
      #expect(out.contains(expected), "\(expected) in \(out)")
    }
    #expect(!out.contains("no ANCS traffic found"))
    #expect(out.hasSuffix("no rule broken\n"), "\(out)")
    let (jsonStatus, json, _) = try await runAncs(["inspect", "--json", capture])
    #expect(jsonStatus == 0)
    let lines = try json.split(separator: "\n").map {
      try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
    }
    let answer = try #require(lines.first { $0["event"] as? String == "answer" })
    #expect(answer["title"] as? String == "Hello Ada" && answer["uid"] as? Int == 1)

    // Issue #18 (3): the capture becomes a scenario that makes ancs phone do it again.
    let replay = temporaryPath("replay.json")
    defer { try? FileManager.default.removeItem(atPath: replay) }
    let (scenarioStatus, _, scenarioErr) = try await runAncs(["inspect", capture, "--scenario", replay])
    #expect(scenarioStatus == 0 && scenarioErr.contains("1 notifications, 2 steps"), "\(scenarioErr)")
    let replayPhone = try Command(["phone", "--listen", "unix:\(path)-2", "--commands", "jsonl", "--scenario", replay])
    defer { replayPhone.terminate() }
    try await offThread {
      for _ in 0..<200 where !FileManager.default.fileExists(atPath: "\(path)-2") { usleep(10_000) }
    }
    let replayWatch = try Command(["watch", "--connect", "unix:\(path)-2", "--headless"])
    defer { replayWatch.terminate() }
    await replayWatch.eachLine(containingAll: [
      #""title":"Hello Ada""#, #""message":"Über 🚀 ça va""#, #""attribute":"title","value":"Clair de Lune""#,
      #""attribute":"artist","value":"Debussy""#,
    ])
    try await quitBoth(replayWatch, replayPhone)
  }

  /// Issue #18 (2): the capture of a watch with a fault switch is judged with the broken
  /// rule named, and exit code 1.
  @Test func aFaultyWatchsCaptureNamesTheRule() async throws {
    let (phone, path, capture) = try await capturingPhone("faulty")
    defer {
      phone.terminate()
      try? FileManager.default.removeItem(atPath: capture)
    }
    // Something plays, so that the watch reports the commands once AMS is set up.
    phone.send(#"{"cmd":"play","title":"Clair de Lune","duration":300}"#)
    await phone.line(containing: #""cmd":"play""#)
    let watch = try Command([
      "watch", "--connect", "unix:\(path)", "--headless", "--fault", "media-register-before-subscribe",
    ])
    defer { watch.terminate() }
    await watch.line(containing: #""event":"mediaCommands""#)
    try await quitBoth(watch, phone)
    let (status, out, err) = try await runAncs(["inspect", capture])
    #expect(status == 1, "\(err)")
    #expect(
      out.contains(
        "✗ accessory broke a rule: wrote Entity Update before subscribing to it (AMS.md, What an accessory must do, "
          + "1: subscribe to Entity Update before writing it)"), "\(out)")
    #expect(out.contains("rules broken (the lines marked ✗ above)") || out.contains("rule broken (the lines"))
  }

  /// Issue #18 (1): `--follow` tells a live capture's events as they happen.
  @Test func followTellsALiveCapture() async throws {
    let (phone, path, capture) = try await capturingPhone("follow")
    defer {
      phone.terminate()
      try? FileManager.default.removeItem(atPath: capture)
    }
    let inspect = try Command(["inspect", "--follow", capture])
    defer { inspect.terminate() }
    await inspect.line(containing: "btsnoop, H4, followed as it grows")
    let watch = try Command(["watch", "--connect", "unix:\(path)", "--headless"])
    defer { watch.terminate() }
    await inspect.line(containing: "ANCS found by discovery")
    await phone.line(containing: #""event":"sessionStarted""#)
    phone.send(#"{"cmd":"post","app":"com.example.chat","title":"Live","message":"as it happens"}"#)
    await inspect.line(containing: "Added UID 1")
    await inspect.line(containing: #"title="Live""#)
    try await quitBoth(watch, phone)
    await inspect.line(containing: "disconnected")
  }

  /// `--follow` starts the story again when another file takes the capture's place, even a
  /// longer one: the part read before no longer begins it.
  @Test func followStartsAgainWhenTheFileIsReplaced() async throws {
    let vector = try Data(contentsOf: VectorFiles.directory.appendingPathComponent("sniffer-session.pcap"))
    let capture = temporaryPath("replaced.pcap")
    defer { try? FileManager.default.removeItem(atPath: capture) }
    try vector.prefix(2000).write(to: URL(fileURLWithPath: capture))
    let inspect = try Command(["inspect", "--follow", capture])
    defer { inspect.terminate() }
    await inspect.line(containing: "CONNECT_IND from C0:00:00:00:00:01")
    // The whole capture, its first record a second later, renamed into place.
    var other = vector
    other[24] &+= 1
    let next = temporaryPath("replacement.pcap")
    try other.write(to: URL(fileURLWithPath: next))
    #expect(rename(next, capture) == 0)
    await inspect.line(containing: "started again")
    await inspect.line(containing: "CONNECT_IND from C0:00:00:00:00:01")
    await inspect.line(containing: "give its LTK (--ltk) to read the rest")
  }

  /// What is not a capture ends in one line and exit code 2.
  /// Issue #18 (1): the example of `ancs inspect --help`: an LE sniffer's capture, opened
  /// with its LTK, tells the session; without it, the story stops where the link is
  /// encrypted and says what to give; a key that is not 32 hex digits is a usage error.
  @Test func inspectOpensASniffersCaptureWithItsLTK() async throws {
    let file = VectorFiles.directory.appendingPathComponent("sniffer-session.pcap").path
    let (status, out, err) = try await runAncs(["inspect", file, "--ltk", "4C68384139F574D836BCF34E9DFB01BF"])
    #expect(status == 0, "\(err)")
    for expected in [
      "pcap, LE link layer from a sniffer, told as the peripheral's host",
      "CONNECT_IND from C0:00:00:00:00:01 random (central) to D0:11:22:33:44:55 random (peripheral)",
      "link encrypted", "Added UID 42", "no rule broken",
    ] {
      #expect(out.contains(expected), "\(expected): \(out)")
    }
    let (_, plain, _) = try await runAncs(["inspect", file])
    #expect(plain.contains("give its LTK (--ltk) to read the rest") && !plain.contains("Added UID"), "\(plain)")
    for key in ["12", "0x4C68384139F574D836BCF34E9DFB01BG"] {
      let (badStatus, badOut, badErr) = try await runAncs(["inspect", file, "--ltk", key])
      #expect(badStatus == 2 && badOut.isEmpty, "\(key)")
      #expect(badErr.split(separator: "\n").count == 1 && badErr.contains("a long-term key is 32 hex digits"))
    }
  }

  @Test func notACaptureIsOneLineAndExit2() async throws {
    let garbage = temporaryPath("garbage.bin")
    defer { try? FileManager.default.removeItem(atPath: garbage) }
    try Data("hello, this is not a capture".utf8).write(to: URL(fileURLWithPath: garbage))
    for (arguments, message) in [
      (["inspect", garbage], "not a capture this tool reads"),
      (["inspect", "/nonexistent/x.btsnoop"], "cannot read it"),
      (["inspect"], "inspect needs a capture FILE"),
    ] {
      let (status, out, err) = try await runAncs(arguments)
      #expect(status == 2 && out.isEmpty, "\(arguments)")
      #expect(err.split(separator: "\n").count == 1 && err.contains(message), "\(err)")
    }
  }
}

/// `ancs phone` listening on a fresh Unix socket (NAME.sock) with `--capture NAME.btsnoop`
/// and JSON-line commands, once its socket is there: the phone, the socket's path and the
/// capture's.
func capturingPhone(_ name: String) async throws -> (Command, String, String) {
  let path = temporaryPath("\(name).sock")
  let capture = temporaryPath("\(name).btsnoop")
  let phone = try Command(["phone", "--listen", "unix:\(path)", "--commands", "jsonl", "--capture", capture])
  try await offThread {
    for _ in 0..<200 where !FileManager.default.fileExists(atPath: path) { usleep(10_000) }
  }
  return (phone, path, capture)
}

/// Ends a headless watch and then its phone (`quit` each), both with exit code 0, the
/// phone having seen the watch go: the phone's capture is then whole.
func quitBoth(_ watch: Command, _ phone: Command, sourceLocation: SourceLocation = #_sourceLocation) async throws {
  watch.send("quit")
  #expect(try await watch.exitCode() == 0, sourceLocation: sourceLocation)
  await phone.line(containing: #""event":"disconnected""#, sourceLocation: sourceLocation)
  phone.send(#"{"cmd":"quit"}"#)
  #expect(try await phone.exitCode() == 0, sourceLocation: sourceLocation)
}

/// The maps of the modules, in Package.swift's header and in the README's "Architecture",
/// name every target the package builds (C shims and test targets aside), and nothing else.
@Test func theModuleMapsNameEveryTarget() throws {
  let manifest = try repositoryText("Package.swift")
  let targets = Set(manifest.matches(of: /\.(?:target|executableTarget)\(\s*name: "(\w+)"/).map { String($0.output.1) })
  #expect(targets.contains("ATT") && targets.contains("ancs") && targets.contains("TestSupport"))
  let header = manifest.split(separator: "\n").prefix { $0.hasPrefix("//") }.filter { $0.hasPrefix("//   ") }
    .map { $0.dropFirst(5) }
  let readme = try repositoryText("README.md")
  let section = try #require(readme.components(separatedBy: "## Architecture").dropFirst().first)
  let block = section.components(separatedBy: "```").dropFirst().first ?? ""
  for (name, lines) in [("Package.swift", header), ("README.md", block.split(separator: "\n").map { $0[...] })] {
    // Each line's first column: names joined by ", " or " -> ", up to two spaces or " (".
    let named = lines.flatMap { line -> [String] in
      let column = line.prefix { $0 != "(" }.components(separatedBy: "  ").first ?? ""
      return column.components(separatedBy: ", ").flatMap { $0.components(separatedBy: " -> ") }
        .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
    #expect(
      Set(named) == targets,
      "\(name) names \(Set(named).subtracting(targets).sorted()) that are no target, and misses \(targets.subtracting(named).sorted())"
    )
  }
}
