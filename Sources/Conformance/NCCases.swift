import ANCS
import ATT
import GATT
import Runtime
import Wire

/// The NC cases: the harness plays the phone and judges the accessory. Each case's purpose,
/// steps and pass criteria are in Protocol/conformance.md, under the same ID.
enum NCCases {
  static let all: [ConformanceCase] =
    // The bond cases last: they leave the accessory's bonds changed (or, when it fails them,
    // broken), which must not decide the cases after them.
    discovery + security + notificationSource + controlPoint + dataSource + NCMediaCases.all + mitm + bonds

  static let accessoryRules = "Protocol/ANCS.md, What an accessory must do"

  /// A notification whose answer has multi-byte characters in both texts.
  static let international = HarnessNotification(title: "Über 🚀 Ada", message: "ça va? 日本 🙂")

  /// Posts `notification` and waits for the accessory to fetch it (answered as the session's
  /// responder says).
  @discardableResult
  static func postAndAwaitFetch(_ session: NCSession, _ notification: HarnessNotification = international)
    async throws(CaseOutcome) -> UInt32
  {
    let uid = try await session.post(notification)
    _ = try await session.awaitFetch(uid)
    return uid
  }

  /// The Data Source answer to a Get Notification Attributes, decoded; nil for other writes.
  static func decodedAnswer(_ write: ControlPointWrite, _ answer: [UInt8]?) -> NotificationAttributesResponse? {
    guard case .success(.getNotificationAttributes) = write.command, let answer,
      case .notificationAttributes(let response)? = try? DataSourceResponse(decoding: answer)
    else { return nil }
    return response
  }

  /// A responder that changes correct notification-attribute answers with `change` (the
  /// fragments to send) and answers everything else correctly.
  static func changingAnswers(_ change: @escaping @Sendable (NotificationAttributesResponse, [UInt8]) -> [[UInt8]])
    -> NCSession.Responder
  {
    { write, answer in
      guard let response = decodedAnswer(write, answer), let answer else { return .answer }
      return .send(change(response, answer))
    }
  }

  static func encoded(_ response: NotificationAttributesResponse) -> [UInt8] {
    DataSourceResponse.notificationAttributes(response).encoded()
  }

  // MARK: - DISC: discovery and subscription

  static let discovery: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NC/DISC/BV-01", "Subscribes to the Notification Source and the Data Source",
      rule: "Protocol/ANCS.md, Session and security: a session starts when the watch enables the Notification Source"
    ) { ctx in
      _ = try await ctx.subscribed()
    },
    ConformanceCase(
      "ANCS/NC/DISC/BV-02", "Discovers characteristics and descriptors inside a service's handle range",
      rule: "\(accessoryRules), Discovery: inside the ANCS service's handle range"
    ) { ctx in
      let session = try await ctx.subscribed()
      let ranges = Array(session.server.database.serviceRanges.values)
      for pdu in session.received {
        let range: HandleRange
        let what: String
        switch pdu {
        case .readByTypeRequest(let request) where request.type == .characteristic:
          (range, what) = (request.range, "Discover Characteristics (Read By Type 0x2803)")
        case .findInformationRequest(let request):
          (range, what) = (request.range, "Discover Descriptors (Find Information)")
        default: continue
        }
        let inside = ranges.contains { range.start >= $0.start && range.end <= $0.end }
        try check(
          inside,
          "\(what) over \(range) is not inside one service's range (services: "
            + "\(ranges.sorted { $0.start < $1.start }.map(\.description).joined(separator: ", ")))")
      }
    },
    ConformanceCase(
      "ANCS/NC/DISC/BV-03", "Subscribes to Service Changed",
      rule: "\(accessoryRules), Discovery: subscribe to Service Changed"
    ) { ctx in
      let session = try await ctx.subscribed()
      // Once a notification is fetched, the accessory has finished setting up.
      try await postAndAwaitFetch(session)
      guard let changed = session.server.serviceChangedHandles, let gatt = session.server.sessions.first else {
        throw CaseOutcome.failed("the harness has no Service Changed characteristic")
      }
      try check(
        await gatt.cccd(for: changed.value).contains(.indications),
        "Service Changed indications are not enabled (its CCCD at \(changed.cccd.map { "\($0)" } ?? "?") was not written 02 00)"
      )
    },
    ConformanceCase(
      "ANCS/NC/DISC/BV-04", "Discovers ANCS again after Service Changed and uses the new handles",
      rule: "\(accessoryRules), Discovery: on Service Changed, discover again and subscribe at the new handles"
    ) { ctx in
      let session = try await ctx.subscribed()
      try await postAndAwaitFetch(session)
      try await session.moveANCS()
      try await session.awaitSubscribed()
      let uid = try await session.post(international)
      _ = try await session.awaitFetch(uid)
    },
    ConformanceCase(
      "ANCS/NC/DISC/BV-05", "Subscribes again when the phone silently drops the subscriptions",
      rule: "\(accessoryRules), Liveness: notice a phone that silently dropped the subscriptions",
      waitsOn: [.liveness]
    ) { ctx in
      let session = try await ctx.subscribed()
      try await postAndAwaitFetch(session)
      await session.dropSubscriptions()
      try await session.awaitSubscribed(
        " again" + ctx.within(.liveness, "its liveness check, after the phone dropped them silently"))
    },
    ConformanceCase(
      "ANCS/NC/DISC/BV-06", "Writes its subscriptions again when the Notification Source falls silent",
      rule: "\(accessoryRules), Liveness: write the CCCDs again after a long Notification Source silence",
      waitsOn: [.resubscribe]
    ) { ctx in
      try ctx.requireKnown(.resubscribe, "the accessory's silence before it writes its subscriptions again")
      let session = try await ctx.subscribed()
      try await postAndAwaitFetch(session)
      // The CCCD still reads enabled and the Control Point still answers; only events stop.
      session.silenceSource()
      try await session.post(international)
      try await session.awaitSubscribed(
        " again" + ctx.within(.resubscribe, "its rewrite after a silence, the CCCD still reading enabled"))
    },
    ConformanceCase(
      "ANCS/NC/DISC/BV-07", "Finds ANCS that the phone publishes only once the link is encrypted",
      rule: "Protocol/ANCS.md, Session and security: ANCS left out of discovery until the link is encrypted"
    ) { ctx in
      let session = try await ctx.accept(ancsAfterEncryption: true)
      try await session.awaitSubscribed(
        " (ANCS is discoverable only once the link is encrypted, and announced with Service Changed then)")
    },
    ConformanceCase(
      "ANCS/NC/DISC/BV-08", "Answers the phone's Exchange MTU and its read of the GAP Device Name",
      rule: "Protocol/iPhone.md, Behaviour on the link: the iPhone starts Exchange MTU and reads the Device Name; "
        + "Core Vol 3 Part C 12: every device has GAP's Device Name"
    ) { ctx in
      let session = try await ctx.accept()
      do { _ = try await session.connection.exchangeMTU() } catch {
        throw CaseOutcome.failed("the accessory did not answer the phone's Exchange MTU: \(error)")
      }
      do {
        let found = try await GATTClient(connection: session.connection).read(type: 0x2A00)
        try check(!found.isEmpty, "the accessory has no Device Name (0x2A00)")
      } catch let outcome as CaseOutcome {
        throw outcome
      } catch {
        throw CaseOutcome.failed("reading the accessory's Device Name failed: \(error)")
      }
      try await session.awaitSubscribed()
    },
  ]

  // MARK: - SEC: security

  static let security: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NC/SEC/BV-01", "Encrypts the link before it uses ANCS",
      rule: "\(accessoryRules), Security: use ANCS over an encrypted link"
    ) { ctx in
      let session = try await ctx.subscribed()
      let level = session.connection.securityLevel
      try check(level >= .encrypted, "the accessory subscribed on a link at security level \(level)")
    }
  ]

  // MARK: - NS: Notification Source

  static let notificationSource: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NC/NS/BV-01", "Fetches a new notification with a well-formed Get Notification Attributes",
      rule: "\(accessoryRules), Control Point: Title, Subtitle and Message with a 2-byte maximum"
    ) { ctx in
      let session = try await ctx.subscribed()
      let uid = try await session.post(international)
      let get = try await session.awaitFetch(uid)
      try check(!get.attributes.isEmpty, "the command asks for no attribute")
    },
    ConformanceCase(
      "ANCS/NC/NS/BV-02", "Survives a flood of pre-existing notifications and fetches a new one",
      rule: "\(accessoryRules), Notification Source: a burst of PreExisting events must not stall the accessory"
    ) { ctx in
      let session = try await ctx.subscribed()
      for index in 0..<150 {
        var old = HarnessNotification(title: "Old \(index)")
        old.category = .email
        try await session.post(old, flags: .preExisting)
      }
      let uid = try await session.post(international)
      _ = try await session.awaitFetch(uid)
    },
    ConformanceCase(
      "ANCS/NC/NS/BI-01", "Ignores malformed Notification Source values and goes on",
      rule: "\(accessoryRules), Notification Source: a value that is not 8 bytes is ignored; reserved IDs"
    ) { ctx in
      let session = try await ctx.subscribed()
      try await session.announce([0x00, 0x00, 0x04, 0x01, 0x01, 0x02, 0x03])
      try await session.announce([0x00, 0x00, 0x04, 0x01, 0x01, 0x02, 0x03, 0x04, 0x05])
      try await session.announce([0x07, 0x00, 0x04, 0x01, 0x10, 0x00, 0x00, 0x00])
      var odd = international
      odd.category = CategoryID(rawValue: 200)
      let reserved = try await session.post(odd)
      let uid = try await session.post(international)
      var fetched: Set<UInt32> = []
      while !fetched.isSuperset(of: [reserved, uid]) {
        let write = try await session.nextWrite()
        if let target = write.uid { fetched.insert(target) }
        try check(
          write.uid != 0x0403_0201,
          "the accessory fetched UID 0x04030201, which only a 7- or 9-byte event carried")
      }
    },
    ConformanceCase(
      "ANCS/NC/NS/BV-03", "Drops a notification when the phone reports Removed",
      rule: "\(accessoryRules), Notification Source: Removed ends the notification"
    ) { ctx in
      _ = try ctx.observer()
      let session = try await ctx.subscribed()
      let uid = try await postAndAwaitFetch(session)
      try await ctx.expectShown(uid, in: session)
      try await session.remove(uid)
      _ = try await ctx.report("removed", uid: uid)
    },
    ConformanceCase(
      "ANCS/NC/NS/BV-04", "Handles a removal while its fetch is in flight",
      rule: "\(accessoryRules), Notification Source: Removed wins over a fetch in flight"
    ) { ctx in
      let observer = try ctx.observer()
      let session = try await ctx.subscribed()
      session.respond { write, _ in write.command.isNotificationFetch ? .acceptSilently : .answer }
      let gone = try await session.post(international)
      let write = try await session.nextWrite()
      try check(write.uid == gone, "expected a fetch of UID \(gone) first")
      let late = session.answerBytes(write) ?? []
      try await session.remove(gone)
      try await session.sendData(dataSourceFragments(late, maximumSize: session.connection.mtu - 3).map(Array.init))
      session.respond { _, _ in .answer }
      let next = try await postAndAwaitFetch(session)
      // By the time the next one is reported, the removed one must not be shown.
      var shown = false
      while true {
        guard let json = await observer.events.next() else {
          throw CaseOutcome.failed("the accessory's event stream ended before it reported UID \(next)")
        }
        let (event, uid) = (json["event"]?.string, json["uid"]?.integer)
        if uid == Int(gone), event == "added" { shown = true }
        if uid == Int(gone), event == "removed" { shown = false }
        if uid == Int(next), event == "added" { break }
      }
      try check(!shown, "UID \(gone) is still shown after the phone removed it during its fetch")
    },
    ConformanceCase(
      "ANCS/NC/NS/BV-05", "Fetches a notification flagged PreExisting that comes after the session start",
      rule: "\(accessoryRules), Notification Source: PreExisting is honoured only at session start"
    ) { ctx in
      let session = try await ctx.subscribed()
      try await postAndAwaitFetch(session)
      // Well after the pre-existing burst (which iOS sends at once on subscription), as one
      // iOS release flagged new Mail.
      try? await ctx.clock.sleep(until: ctx.clock.now + .milliseconds(300))
      let uid = try await session.post(international, flags: .preExisting)
      _ = try await session.awaitFetch(uid)
    },
    ConformanceCase(
      "ANCS/NC/NS/BV-06", "Drops a ringing call whose Removed never comes",
      rule: "\(accessoryRules), Liveness: a call whose Removed never came does not ring forever",
      waitsOn: [.callRecheck]
    ) { ctx in
      let session = try await ctx.subscribed()
      var call = HarnessNotification(title: "Ada", message: "Incoming call")
      call.category = .incomingCall
      let uid = try await postAndAwaitFetch(session, call)
      if ctx.accessory.observer != nil { _ = try await ctx.report("added", uid: uid) }
      // The call ends on the phone, and the Removed event is lost.
      session.retract(uid)
      _ = try await session.awaitFetch(uid, ctx.within(.callRecheck, "its check that the ringing call still exists"))
      if ctx.accessory.observer != nil { _ = try await ctx.report("removed", uid: uid) }
    },
    ConformanceCase(
      "ANCS/NC/NS/BV-07", "Fetches a ringing call first when it comes back PreExisting under a new UID",
      rule: "\(accessoryRules), Notification Source: a ringing call is fetched first, PreExisting or not"
    ) { ctx in
      let session = try await ctx.subscribed()
      var call = HarnessNotification(title: "Ada", message: "Incoming call")
      call.category = .incomingCall
      call.app = "com.apple.mobilephone"
      call.positiveAction = "Answer"
      call.negativeAction = "Decline"
      try await postAndAwaitFetch(session, call)
      // The link drops and the accessory comes back and subscribes again: the phone reports
      // what it has as PreExisting, the call last and under a new UID, as iOS does.
      session.close()
      let next = try await ctx.subscribed()
      // The answer to the first command waits until every event is out, so that the
      // accessory has them all when it picks its next command, however fast it fetches.
      next.respond { _, answer in answer == nil ? .answer : .acceptSilently }
      var mails: Set<UInt32> = []
      for index in 0..<20 {
        var old = HarnessNotification(title: "Old \(index)")
        old.category = .email
        mails.insert(try await next.post(old, flags: .preExisting))
      }
      let again = try await next.post(call, flags: .preExisting)
      let first = try await next.nextWrite()
      next.respond { _, _ in .answer }
      if let held = next.answerBytes(first), !held.isEmpty {
        try await next.sendData(dataSourceFragments(held, maximumSize: next.connection.mtu - 3).map(Array.init))
      }
      // Only the fetch already under way may come before the call's.
      var before: Set<UInt32> = []
      var write = first
      while write.uid != again {
        if let uid = write.uid, mails.contains(uid) { before.insert(uid) }
        try check(
          before.count <= 1,
          "the accessory fetched \(before.count) pre-existing mails announced before the call (UID \(again)) "
            + "and not yet the call")
        write = try await next.nextWrite()
      }
      if ctx.accessory.observer != nil { try await ctx.expectShown(again, in: next) }
    },
    ConformanceCase(
      "ANCS/NC/NS/BV-08", "Takes an event whose EventFlags carry a reserved bit",
      rule: "\(accessoryRules), Notification Source: reserved EventFlags bits are ignored, not the event"
    ) { ctx in
      let session = try await ctx.subscribed()
      // Bit 5, as iPhones set on MMS.
      let uid = try await session.post(international, flags: EventFlags(rawValue: 1 << 5))
      _ = try await session.awaitFetch(uid)
      if ctx.accessory.observer != nil { try await ctx.expectShown(uid, in: session) }
    },
  ]

  // MARK: - CP: Control Point

  static let controlPoint: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NC/CP/BV-01", "Keeps one Control Point command in flight",
      rule: "\(accessoryRules), Control Point: one command at a time"
    ) { ctx in
      let session = try await ctx.subscribed()
      session.respond { _, answer in answer == nil ? .answer : .acceptSilently }
      var pending: Set<UInt32> = []
      for index in 0..<4 { pending.insert(try await session.post(HarnessNotification(title: "Queued \(index)"))) }
      while !pending.isEmpty {
        let write = try await session.nextWrite()
        if let uid = write.uid { pending.remove(uid) }
        guard let answer = session.answerBytes(write), !answer.isEmpty else { continue }
        // A slow phone: the answer comes 25 ms later. Another write meanwhile overlaps.
        try? await ctx.clock.sleep(until: ctx.clock.now + .milliseconds(25))
        try check(
          session.commands.count == 0,
          "a second Control Point command arrived before the answer to \(Hex.encode(write.bytes))")
        try await session.sendData(dataSourceFragments(answer, maximumSize: session.connection.mtu - 3).map(Array.init))
      }
    },
    ConformanceCase(
      "ANCS/NC/CP/BV-02", "Fetches an app's display name at most once per session",
      rule: "\(accessoryRules), Control Point: app display names cached for the session"
    ) { ctx in
      let session = try await ctx.subscribed()
      for index in 0..<3 { try await postAndAwaitFetch(session, HarnessNotification(title: "Same app \(index)")) }
      try await postAndAwaitFetch(session, HarnessNotification(title: "Other", app: "com.example.other"))
      let asked = session.writes.filter {
        if case .success(.getAppAttributes(let get)) = $0.command { return get.appIdentifier == "com.example.chat" }
        return false
      }
      try check(asked.count <= 1, "the accessory asked \(asked.count) times for com.example.chat's attributes")
    },
    ConformanceCase(
      "ANCS/NC/CP/BI-01", "Goes on after 0xA2 (Invalid Parameter) without dropping its queue",
      rule: "\(accessoryRules), Control Point: 0xA2 drops that notification only"
    ) { ctx in
      let session = try await ctx.subscribed()
      let retracted = try await session.post(HarnessNotification(title: "Retracted"))
      session.retract(retracted)
      let others = [
        try await session.post(HarnessNotification(title: "Kept 1")),
        try await session.post(HarnessNotification(title: "Kept 2")),
      ]
      var fetched: Set<UInt32> = []
      while !fetched.isSuperset(of: others) {
        if let uid = try await session.nextWrite().uid { fetched.insert(uid) }
      }
      try check(session.subscriptions.count == 0, "the accessory changed its subscriptions after 0xA2")
    },
    ConformanceCase(
      "ANCS/NC/CP/BI-02", "Gives up on a command the phone never answers and goes on",
      rule: "\(accessoryRules), Control Point: a bounded wait for an answer", waitsOn: [.commandTimeout]
    ) { ctx in
      let session = try await ctx.subscribed()
      let silent = try await session.post(HarnessNotification(title: "Never answered"))
      session.respond { write, _ in write.uid == silent ? .acceptSilently : .answer }
      _ = try await session.awaitFetch(silent)
      let uid = try await session.post(international)
      _ = try await session.awaitFetch(
        uid, ctx.within(.commandTimeout, "once it gives up on UID \(silent), which the phone never answers"))
    },
    ConformanceCase(
      "ANCS/NC/CP/BV-03", "Performs actions with well-formed commands",
      rule: "\(accessoryRules), Control Point: ActionID 0 positive, 1 negative"
    ) { ctx in
      let wearer = try ctx.wearer()
      let session = try await ctx.subscribed()
      var call = HarnessNotification(title: "Ada", message: "Incoming call")
      call.category = .incomingCall
      call.positiveAction = "Answer"
      call.negativeAction = "Decline"
      let uid = try await postAndAwaitFetch(session, call)
      if ctx.accessory.observer != nil { _ = try await ctx.report("added", uid: uid) }
      for action in [ActionID.positive, .negative] {
        do { try await wearer.perform(action, uid: uid) } catch {
          throw CaseOutcome.failed("could not make the wearer act: \(error)")
        }
        while true {
          let write = try await session.nextWrite()
          guard case .success(let command) = write.command else {
            throw CaseOutcome.failed("the accessory wrote \(Hex.encode(write.bytes)), not a valid command")
          }
          guard case .performNotificationAction(let perform) = command else { continue }
          try check(
            perform.notificationUID == uid && perform.actionID == action,
            "the wearer asked \(action) on UID \(uid); the accessory wrote \(Hex.encode(write.bytes))")
          break
        }
      }
    },
    ConformanceCase(
      "ANCS/NC/CP/BV-04", "Waits while the phone does not share its notifications, and fetches once it does",
      rule: "\(accessoryRules), Control Point: Write Not Permitted means not shared; ask again until it is",
      waitsOn: [.sharingRecheck]
    ) { ctx in
      let session = try await ctx.subscribed()
      // The user has not allowed this accessory: every Control Point write is refused 0x03.
      session.respond { _, _ in .refuse(0x03) }
      let uid = try await session.post(international)
      _ = try await session.nextWrite()
      if ctx.accessory.observer != nil {
        let observer = try ctx.observer()
        _ = try await ctx.log.awaiting("the accessory's event line reporting that the phone does not share") {
          () throws(CaseOutcome) in
          while let json = await observer.events.next() {
            if json["event"]?.string == "sharing", json["allowed"]?.bool == false { return }
          }
          throw .failed("the accessory's event stream ended before it reported that the phone does not share")
        }
      }
      // The user allows it.
      session.respond { _, _ in .answer }
      _ = try await session.awaitFetch(uid, ctx.within(.sharingRecheck, "its next check whether the phone shares"))
    },
  ]

  // MARK: - DS: Data Source

  static let dataSource: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NC/DS/BV-01", "Reassembles an answer split at every byte position",
      rule: "\(accessoryRules), Data Source: reassembled across notifications split anywhere"
    ) { ctx in
      _ = try ctx.observer()
      let session = try await ctx.subscribed()
      let split = Locked(1)
      session.respond(
        changingAnswers { _, answer in
          let at = split.withLock { position in
            defer { position += 1 }
            return min(position, answer.count - 1)
          }
          return [Array(answer[..<at]), Array(answer[at...])]
        })
      let first = try await postAndAwaitFetch(session)
      try await ctx.expectShown(first, in: session)
      let length = session.answerLength(first) ?? 0
      for _ in 1..<max(1, length - 1) {
        let uid = try await postAndAwaitFetch(session)
        try await ctx.expectShown(uid, in: session)
      }
    },
    ConformanceCase(
      "ANCS/NC/DS/BV-02", "Reassembles a long answer sent in 20-byte notifications whatever the MTU",
      rule: "\(accessoryRules), Data Source: reassembled by tuples, not by notification size"
    ) { ctx in
      _ = try ctx.observer()
      let session = try await ctx.subscribed()
      session.respond(
        changingAnswers { _, answer in dataSourceFragments(answer, maximumSize: 20).map(Array.init) })
      let long = String(repeating: "Long message, ünïcödé and 🚀 too. ", count: 12)
      let uid = try await postAndAwaitFetch(session, HarnessNotification(title: "Long", message: long))
      try await ctx.expectShown(uid, in: session)
    },
    ConformanceCase(
      "ANCS/NC/DS/BV-03", "Accepts tuples in another order than requested",
      rule: "\(accessoryRules), Data Source: tuples found by AttributeID whatever their order"
    ) { ctx in
      _ = try ctx.observer()
      let session = try await ctx.subscribed()
      session.respond(
        changingAnswers { response, _ in
          var reversed = response
          reversed.attributes.reverse()
          return [encoded(reversed)]
        })
      let uid = try await postAndAwaitFetch(session)
      try await ctx.expectShown(uid, in: session)
    },
    ConformanceCase(
      "ANCS/NC/DS/BI-01", "Skips a tuple it did not ask for",
      rule: "\(accessoryRules), Data Source: an unrequested tuple skipped"
    ) { ctx in
      _ = try ctx.observer()
      let session = try await ctx.subscribed()
      session.respond(
        changingAnswers { response, _ in
          var extra = response
          extra.attributes.insert(NotificationAttribute(NotificationAttributeID(rawValue: 0x2A), text: "extra"), at: 0)
          return [encoded(extra)]
        })
      let uid = try await postAndAwaitFetch(session)
      try await ctx.expectShown(uid, in: session)
    },
    ConformanceCase(
      "ANCS/NC/DS/BI-02", "Survives a value longer than the maximum it asked for",
      rule: "\(accessoryRules), Data Source: a value over the requested maximum survived"
    ) { ctx in
      let session = try await ctx.subscribed()
      // Only the long notification's answers are lengthened (it is posted first, so the first
      // UID answered); the one posted after it must arrive as it is.
      let lengthened = Locked<UInt32?>(nil)
      session.respond(
        changingAnswers { response, _ in
          let uid = response.notificationUID
          let isLong = lengthened.withLock { first -> Bool in
            if first == nil { first = uid }
            return first == uid
          }
          guard isLong, let index = response.attributes.firstIndex(where: { $0.id == .title }) else {
            return [encoded(response)]
          }
          var long = response
          long.attributes[index].value += Array(repeating: UInt8(ascii: "x"), count: 8)
          return [encoded(long)]
        })
      let uid = try await session.post(HarnessNotification(title: String(repeating: "T", count: 1000)))
      let get = try await session.awaitFetch(uid)
      guard let maximum = get.attributes.first(where: { $0.id == .title })?.maxLength, maximum < 1000 else {
        throw CaseOutcome.skipped("the accessory asks for titles of 1000 bytes or more; none is over its maximum")
      }
      let next = try await postAndAwaitFetch(session)
      if ctx.accessory.observer != nil { try await ctx.expectShown(next, in: session) }
    },
    ConformanceCase(
      "ANCS/NC/DS/BV-04", "Ignores an empty Data Source notification after an answer",
      rule: "\(accessoryRules), Data Source: an empty notification harmless"
    ) { ctx in
      let session = try await ctx.subscribed()
      session.respond(
        changingAnswers { _, answer in dataSourceFragments(answer, maximumSize: 20).map(Array.init) + [[]] })
      let first = try await postAndAwaitFetch(session)
      let second = try await postAndAwaitFetch(session)
      if ctx.accessory.observer != nil {
        try await ctx.expectShown(first, in: session)
        try await ctx.expectShown(second, in: session)
      }
    },
    ConformanceCase(
      "ANCS/NC/DS/BV-05", "Completes an answer that leaves out the last requested tuple",
      rule: "\(accessoryRules), Data Source: an answer without its last requested tuple completes"
    ) { ctx in
      _ = try ctx.observer()
      let session = try await ctx.subscribed()
      session.respond(
        changingAnswers { response, _ in
          var short = response
          short.attributes.removeLast()
          return [encoded(short)]
        })
      let uid = try await postAndAwaitFetch(session)
      try await ctx.expectShown(uid, in: session)
    },
  ]
}

extension Result where Success == ControlPointCommand {
  /// A valid Get Notification Attributes.
  var isNotificationFetch: Bool {
    if case .success(.getNotificationAttributes) = self { return true }
    return false
  }
}

extension NCCases {
  // MARK: - SEC: MITM protection
  //
  // For an accessory that requires a passkey or a compared number. Near the end: the
  // second leaves a bond made without MITM protection on an accessory that takes one
  // wrongly. Each begins on the accessory's first live link: during SEC/BI-01 a good
  // accessory keeps trying, and the links it dropped may still wait to be taken.

  static let mitmRule = "Protocol/HCI.md, Pairing: an accessory that requires MITM protection"

  /// How the accessory answered the pairing with a wrong passkey (SEC/BI-02). It checks the
  /// harness's confirm value before the harness can check its own (the responder's check
  /// comes first in every round), so it is the one to end the pairing: with Pairing Failed,
  /// Confirm Value Failed (0x04), or Numeric Comparison Failed (0x0C) when its user refuses
  /// a comparison. When the harness itself refused because its user said the numbers differ
  /// (0x0C), there is nothing of the accessory's to judge; when the harness found the
  /// confirm values differ (0x04), the accessory did not check them.
  static func checkWrongPasskeyAnswer(_ end: SpoiledPairingEnd?) throws(CaseOutcome) {
    switch end {
    case .peerFailed(let reason, let text)?:
      try check(
        reason == 0x04 || reason == 0x0C,
        "the accessory answered the wrong passkey with Pairing Failed, reason \(hex(reason)) (\(text)); a confirm "
          + "value that does not match is Confirm Value Failed (0x04)")
    case .unfinished(let why)?:
      throw .failed(
        "the pairing with the wrong passkey ended without Pairing Failed (\(why)); the accessory must answer a "
          + "confirm value that does not match with Pairing Failed, Confirm Value Failed (0x04)")
    case nil:
      throw .failed(
        "the pairing with the wrong passkey never failed: the accessory completed it, or its link ended first "
          + "without Pairing Failed")
    case .refused(let reason, let text)?:
      // The harness's user said the numbers differ: the accessory had nothing to find.
      try check(
        reason == 0x0C,
        "the harness, not the accessory, ended the pairing with the wrong passkey (\(text)): the accessory, which "
          + "checks the harness's confirm value first, did not find that it does not match")
    }
  }

  static let mitm: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NC/SEC/BV-02", "Requires MITM protection: uses ANCS over an authenticated link, again with its bond",
      rule: "\(mitmRule) subscribes over a link encrypted with an authenticated key, and encrypts with that bond "
        + "at the same level on its next connection"
    ) { ctx in
      try ctx.requireStatedMITM()
      let bonds = try ctx.bonds()
      let first = try await ctx.subscribedOnALiveLink(" (links the accessory dropped before are passed over)")
      let level = first.connection.securityLevel
      try check(level == .authenticated, "the accessory subscribed on a link at security level \(level)")
      let peer = try ctx.bondedPeer(first, in: bonds)
      first.close()
      let second = try await ctx.accept()
      try await second.awaitSubscribed(" (on its next connection, encrypted with the bond)")
      let again = second.connection.securityLevel
      try check(again == .authenticated, "on its next connection the accessory subscribed at security level \(again)")
      try check(bonds.bondedPeers.contains(peer), "the harness no longer holds the bond with \(peer)")
    },
    ConformanceCase(
      "ANCS/NC/SEC/BI-01", "Requires MITM protection: uses no ANCS on a link paired without it",
      rule: "\(mitmRule) refuses Just Works, or uses no link encrypted with its key"
    ) { ctx in
      try ctx.requireStatedMITM()
      let bonds = try ctx.bonds()
      // Asked before anything changes, so that a skip leaves the bonds as they were.
      guard bonds.limitPairing(to: nil) else {
        throw CaseOutcome.skipped("the harness cannot pair without MITM protection on these links")
      }
      let first = try await ctx.subscribedOnALiveLink(" (links the accessory dropped before are passed over)")
      // Then a phone that can neither show nor type a number: it forgets the accessory and
      // can only pair again by Just Works.
      _ = try bonds.forget(nil)
      bonds.limitPairing(to: .encrypted)
      defer {
        bonds.limitPairing(to: nil)
        // A bond made without MITM protection is not kept for the cases after this one.
        _ = try? bonds.forget(nil)
      }
      first.close()
      let session = try await ctx.accept()
      // Two thirds of the case's time to subscribe, which it must not do; a link it drops
      // counts as not subscribing.
      let subscribed = try? await firstWithin(ctx.timeout * 2 / 3, clock: ctx.clock, late: { _ in }) {
        try await session.awaitSubscribed(" (it must not: the link has no MITM protection)")
        return true
      }
      let level = session.connection.securityLevel
      try check(subscribed != true, "the accessory subscribed on a link at security level \(level)")
      ctx.log.peerDid("used no ANCS on the link paired without MITM protection")
    },
    ConformanceCase(
      "ANCS/NC/SEC/BI-02", "Requires MITM protection: recovers from a pairing with a wrong passkey",
      rule: "\(mitmRule) answers a wrong passkey with Pairing Failed, Confirm Value Failed (0x04; Core Vol 3 "
        + "Part H 2.3.5.5, 2.3.5.6.3), pairs afresh on its next try, and uses no ANCS before"
    ) { ctx in
      try ctx.requireStatedMITM()
      let bonds = try ctx.bonds()
      // Asked before anything changes, so that a skip leaves the bonds as they were.
      guard bonds.spoilNextPairing(false) else {
        throw CaseOutcome.skipped("the harness cannot spoil a pairing on these links")
      }
      let first = try await ctx.subscribedOnALiveLink(" (links the accessory dropped before are passed over)")
      // The phone's user forgets the accessory, then mistypes the passkey (or says the
      // numbers differ) when it pairs again.
      _ = try bonds.forget(nil)
      bonds.spoilNextPairing(true)
      // However the case ends, no later pairing is spoiled.
      defer { bonds.spoilNextPairing(false) }
      first.close()
      let session = try await ctx.subscribedOnALiveLink(
        " (after a pairing that failed on a wrong passkey, the accessory must try again)")
      try check(
        !bonds.nextPairingSpoiled,
        "the accessory subscribed without pairing: the harness, which had forgotten it, never paired")
      try checkWrongPasskeyAnswer(bonds.spoiledPairingEnd)
      let level = session.connection.securityLevel
      try check(level == .authenticated, "the accessory subscribed on a link at security level \(level)")
    },
  ]

  // MARK: - BOND: bond trouble
  //
  // Last in the catalog: an accessory that fails one of these may be unable to pair with
  // the harness again, which would fail every case after it.

  static let bonds: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NC/BOND/BV-01", "Pairs again with a phone that has forgotten the bond",
      rule: "Protocol/iPhone.md, Pairing and bonds: after \"Forget This Device\" the iPhone pairs afresh"
    ) { ctx in
      let bonds = try ctx.bonds()
      let first = try await ctx.subscribed()
      let peer = try ctx.bondedPeer(first, in: bonds)
      // The phone's user forgets the accessory; the accessory still holds its bond.
      _ = try bonds.forget(peer)
      first.close()
      let second = try await ctx.accept()
      try await second.awaitSubscribed(" (the phone forgot the bond and pairs afresh; the accessory must pair again)")
      let level = second.connection.securityLevel
      try check(level >= .encrypted, "the accessory subscribed on a link at security level \(level)")
      try check(bonds.bondedPeers.contains(peer), "the accessory subscribed without bonding again")
    },
    ConformanceCase(
      "ANCS/NC/BOND/BV-02", "Comes back once the phone's user forgets a bond the accessory lost",
      rule: "Protocol/iPhone.md, Pairing and bonds: an iPhone whose key the accessory lacks disconnects "
        + "and keeps its bond until its user forgets the accessory"
    ) { ctx in
      let bonds = try ctx.bonds()
      let first = try await ctx.subscribed()
      let peer = try ctx.bondedPeer(first, in: bonds)
      // From the accessory's side, a phone key it does not hold is a bond it lost.
      try check(try bonds.spoil(peer), "the phone lost its bond with \(peer)")
      first.close()
      // The accessory asks for security, the phone encrypts with its key, and that fails:
      // the key missing (the phone, as an iPhone, then drops the link), or, from an
      // accessory that answers with the key of its own bond, a MIC failure.
      let second = try await ctx.accept()
      var subscribed = true
      do { try await second.awaitSubscribed(" (it must not: the phone's key is one it does not hold)") } catch {
        if await second.connection.closedReason == nil { throw error }
        subscribed = false
      }
      try check(!subscribed, "the accessory subscribed although the phone encrypted with a key it does not hold")
      ctx.log.peerDid("lost the link on which the phone encrypted with the key it lacks")
      // The phone's user forgets the accessory.
      _ = try bonds.forget(peer)
      let third = try await ctx.subscribedOnALiveLink(" (the phone's user forgot the accessory; it must pair afresh)")
      let level = third.connection.securityLevel
      try check(level >= .encrypted, "the accessory subscribed on a link at security level \(level)")
    },
  ]
}
