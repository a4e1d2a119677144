import ANCS
import ATT
import GATT
import Runtime
import Wire

/// The NP cases: the harness plays the accessory and judges the phone. Each case's purpose,
/// steps and pass criteria are in Protocol/conformance.md, under the same ID.
enum NPCases {
  static let all: [ConformanceCase] =
    service + security + notificationSource + preExisting + attributes
    + fragmentation + appAttributes + actions + errors + dataSource + uids + iPhone + bonds + NPMediaCases.all
    + mitm

  // MARK: - Helpers

  static let ancsTable = "Protocol/ANCS.md, Service and characteristics"
  static let errorsTable = "Protocol/ANCS.md, Errors"

  /// A session with one fresh notification, its Added event already taken.
  static func withNotification(
    _ ctx: NPContext, _ notification: StimulusNotification = StimulusNotification(title: "Conformance"),
    mtu: UInt16? = nil
  ) async throws(CaseOutcome) -> (NPSession, ANCSHandles, UInt32, NotificationSourceEvent) {
    _ = try ctx.stimulus()
    let (session, handles) = try await ctx.openSubscribed(mtu: mtu)
    let uid = try await ctx.post(notification)
    let added = try await session.awaitAdded(uid)
    return (session, handles, uid, added)
  }

  static func getAttributes(_ uid: UInt32, _ attributes: [AttributeRequest]) -> ControlPointCommand {
    .getNotificationAttributes(GetNotificationAttributesCommand(notificationUID: uid, attributes: attributes))
  }

  static func notificationAnswer(_ answer: NPSession.Answer) throws(CaseOutcome) -> NotificationAttributesResponse {
    guard case .notificationAttributes(let response) = answer.response else {
      throw CaseOutcome.failed("expected a Get Notification Attributes answer")
    }
    return response
  }

  static func text(_ response: NotificationAttributesResponse, _ id: NotificationAttributeID) throws(CaseOutcome)
    -> String
  {
    guard let tuple = response[id] else { throw CaseOutcome.failed("the answer lacks the \(id) tuple") }
    return tuple.text
  }

  /// The longest prefix of `text` of at most `bytes` UTF-8 bytes that ends on a scalar
  /// boundary ("never inside a multi-byte character", Protocol/ANCS.md, Text).
  static func cut(_ text: String, toBytes bytes: Int) -> String {
    var result = ""
    var used = 0
    for scalar in text.unicodeScalars {
      let size = String(scalar).utf8.count
      if used + size > bytes { break }
      used += size
      result.unicodeScalars.append(scalar)
    }
    return result
  }

  /// A value cut to `maximum` bytes: exactly the longest whole-scalar prefix, or (phones that
  /// mark cuts, as Mail does) a shorter prefix ending in "…" inside the budget.
  static func checkCut(_ value: String, of original: String, maximum: Int, _ what: String) throws(CaseOutcome) {
    let bytes = value.utf8.count
    try check(bytes <= maximum, "\(what): \(bytes) bytes for a maximum of \(maximum)")
    let expected = cut(original, toBytes: maximum)
    if value == expected { return }
    if value.hasSuffix("…"), original.hasPrefix(String(value.dropLast())) { return }
    throw CaseOutcome.failed(
      "\(what): expected \"\(expected)\" (cut at the last whole character within \(maximum) bytes), got \"\(value)\"")
  }

  static func checkSecurityRefusal(_ code: ATTErrorCode?, _ what: String) throws(CaseOutcome) {
    guard let code else { throw CaseOutcome.failed("\(what) on an unencrypted link was accepted") }
    try check(
      code == .insufficientEncryption || code == .insufficientAuthentication,
      "\(what) on an unencrypted link answered \(hex(code.rawValue)), expected 0x0F (or 0x05)")
  }

  // MARK: - SVC: service and characteristic shape

  static let service: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NP/SVC/BV-01", "One primary ANCS service with its three characteristics",
      rule: "\(ancsTable): service 7905F431-…, Notification Source 9FBF120D-…, Control Point 69D1D8F3-…, "
        + "Data Source 22EAC6E9-…; \"At most one ANCS service\"", needsStimulus: false
    ) { ctx in
      let session = try await ctx.open()
      let handles = try await session.discover()
      try check(handles.controlPoint != nil, "no Control Point (\(ANCSUUID.controlPoint)) in the ANCS service")
      try check(handles.dataSource != nil, "no Data Source (\(ANCSUUID.dataSource)) in the ANCS service")
      for characteristic in [handles.notificationSource, handles.controlPoint!, handles.dataSource!] {
        try check(
          handles.service.range.start < characteristic.declarationHandle
            && characteristic.endHandle <= handles.service.range.end,
          "characteristic \(characteristic.uuid) lies outside the service range \(handles.service.range)")
      }
    },
    ConformanceCase(
      "ANCS/NP/SVC/BV-02", "Notification Source notifies and has a CCCD",
      rule: "\(ancsTable): Notification Source | notify", needsStimulus: false
    ) { ctx in
      let handles = try await ctx.open().discover()
      try check(
        handles.notificationSource.properties.contains(.notify),
        "Notification Source properties \(hex(handles.notificationSource.properties.rawValue)) lack notify (0x10)")
      try check(handles.notificationSourceCCCD != nil, "Notification Source has no CCCD (0x2902)")
    },
    ConformanceCase(
      "ANCS/NP/SVC/BV-03", "Control Point takes writes with response",
      rule: "\(ancsTable): Control Point | write (with response)", needsStimulus: false
    ) { ctx in
      let handles = try await ctx.open().discover()
      guard let controlPoint = handles.controlPoint else { throw CaseOutcome.failed("no Control Point") }
      try check(
        controlPoint.properties.contains(.write),
        "Control Point properties \(hex(controlPoint.properties.rawValue)) lack write (0x08)")
    },
    ConformanceCase(
      "ANCS/NP/SVC/BV-04", "Data Source notifies and has a CCCD",
      rule: "\(ancsTable): Data Source | notify", needsStimulus: false
    ) { ctx in
      let handles = try await ctx.open().discover()
      guard let dataSource = handles.dataSource else { throw CaseOutcome.failed("no Data Source") }
      try check(
        dataSource.properties.contains(.notify),
        "Data Source properties \(hex(dataSource.properties.rawValue)) lack notify (0x10)")
      try check(handles.dataSourceCCCD != nil, "Data Source has no CCCD (0x2902)")
    },
  ]

  // MARK: - SEC: encryption

  static let securityRule =
    "Protocol/ANCS.md, Session and security: \"The three characteristics and their CCCDs need an encrypted link: "
    + "below it the server answers Insufficient Encryption (0x0F)\""

  /// Handles found on an encrypted link (a phone may hide ANCS before encryption), then,
  /// that link closed, a new unencrypted link to the same phone (over the air a phone keeps
  /// one connection to an accessory, so the first must end before the second).
  static func unencryptedLink(_ ctx: NPContext) async throws(CaseOutcome) -> (NPSession, ANCSHandles) {
    let first = try await ctx.open()
    let handles = try await first.discover()
    first.close()
    return (try await ctx.open(encrypt: false), handles)
  }

  static let security: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NP/SEC/BI-01", "Notification Source subscription refused before encryption", rule: securityRule,
      needsStimulus: false
    ) { ctx in
      let (plain, handles) = try await unencryptedLink(ctx)
      guard let cccd = handles.notificationSourceCCCD else {
        throw CaseOutcome.failed("Notification Source has no CCCD")
      }
      var code: ATTErrorCode?
      do { try await plain.client.configure(cccd: cccd, .notifications) } catch {
        code = (error as? ATTError)?.errorCode
      }
      try checkSecurityRefusal(code, "enabling Notification Source notifications")
    },
    ConformanceCase(
      "ANCS/NP/SEC/BI-02", "Data Source subscription refused before encryption", rule: securityRule,
      needsStimulus: false
    ) { ctx in
      let (plain, handles) = try await unencryptedLink(ctx)
      guard let cccd = handles.dataSourceCCCD else { throw CaseOutcome.failed("Data Source has no CCCD") }
      var code: ATTErrorCode?
      do { try await plain.client.configure(cccd: cccd, .notifications) } catch {
        code = (error as? ATTError)?.errorCode
      }
      try checkSecurityRefusal(code, "enabling Data Source notifications")
    },
    ConformanceCase(
      "ANCS/NP/SEC/BI-03", "Control Point write refused before encryption", rule: securityRule, needsStimulus: false
    ) { ctx in
      let (plain, handles) = try await unencryptedLink(ctx)
      let code = try await plain.write(handles, [0x01] + Array("com.example.chat".utf8) + [0, 0])
      try checkSecurityRefusal(code, "a Control Point write")
    },
    ConformanceCase(
      "ANCS/NP/SEC/BV-04", "Subscriptions accepted once the link is encrypted", rule: securityRule,
      needsStimulus: false
    ) { ctx in
      _ = try await ctx.openSubscribed()
    },
  ]

  // MARK: - NS: Notification Source events

  static let nsRule = "Protocol/ANCS.md, Notification Source: EventID, EventFlags, CategoryID, CategoryCount, UID"

  static let notificationSource: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NP/NS/BV-01", "Added: a new notification is announced with its category",
      rule: "\(nsRule); new notifications are not PreExisting"
    ) { ctx in
      let (_, _, _, added) = try await withNotification(ctx, StimulusNotification(category: .email))
      try check(added.categoryID == .email, "Added has category \(added.categoryID), expected email (6)")
      try check(!added.eventFlags.contains(.preExisting), "a new notification's Added has the PreExisting flag")
      try check(added.categoryCount >= 1, "Added has CategoryCount 0; the notification itself is active")
    },
    ConformanceCase(
      "ANCS/NP/NS/BV-02", "Modified: a changed notification is announced under the same UID",
      rule: "\(nsRule): 1 Modified"
    ) { ctx in
      let (session, _, uid, added) = try await withNotification(ctx, StimulusNotification(category: .news))
      try await ctx.modify(uid, message: "changed")
      let event = try await session.nextEvent(uid: uid)
      try check(event.eventID == .modified, "expected Modified for UID \(uid), got \(event.eventID)")
      try check(event.categoryID == added.categoryID, "Modified changed the category to \(event.categoryID)")
    },
    ConformanceCase(
      "ANCS/NP/NS/BV-03", "Removed: a removed notification is announced", rule: "\(nsRule): 2 Removed"
    ) { ctx in
      let (session, _, uid, _) = try await withNotification(ctx)
      try await ctx.remove(uid)
      let event = try await session.nextEvent(uid: uid)
      try check(event.eventID == .removed, "expected Removed for UID \(uid), got \(event.eventID)")
    },
    ConformanceCase(
      "ANCS/NP/NS/BV-04", "EventFlags: Silent, Important and the action flags",
      rule: "\(nsRule): bit 0 Silent, 1 Important, 3 PositiveAction, 4 NegativeAction"
    ) { ctx in
      let (session, _) = try await ctx.openSubscribed()
      let loud = try await ctx.post(
        StimulusNotification(positiveAction: "Reply", negativeAction: "Dismiss", flags: [.important]))
      let flags = try await session.awaitAdded(loud).eventFlags
      try check(flags.contains(.important), "Important notification announced with flags \(flags)")
      try check(!flags.contains(.silent), "an Important notification announced as Silent: \(flags)")
      try check(
        flags.contains(.positiveAction) && flags.contains(.negativeAction), "both actions offered, flags \(flags)")
      let quiet = try await ctx.post(StimulusNotification(flags: [.silent]))
      let quietFlags = try await session.awaitAdded(quiet).eventFlags
      try check(quietFlags.contains(.silent), "Silent notification announced with flags \(quietFlags)")
      try check(
        !quietFlags.contains(.positiveAction) && !quietFlags.contains(.negativeAction),
        "a notification without actions announced with action flags \(quietFlags)")
    },
    ConformanceCase(
      "ANCS/NP/NS/BV-05", "CategoryCount counts the category's active notifications",
      rule: "\(nsRule): \"CategoryCount: active notifications of that category, after this event\""
    ) { ctx in
      let (session, _) = try await ctx.openSubscribed()
      let first = try await ctx.post(StimulusNotification(category: .healthAndFitness))
      let one = try await session.awaitAdded(first).categoryCount
      let second = try await ctx.post(StimulusNotification(category: .healthAndFitness))
      let two = try await session.awaitAdded(second).categoryCount
      try check(two == one &+ 1, "second Added in the category counts \(two), expected \(one) + 1")
      try await ctx.remove(second)
      let removed = try await session.nextEvent(uid: second)
      try check(removed.eventID == .removed, "expected Removed, got \(removed.eventID)")
      try check(removed.categoryCount == one, "Removed counts \(removed.categoryCount), expected \(one)")
    },
  ]

  // MARK: - PRE: pre-existing notifications

  static let preRule =
    "Protocol/ANCS.md, Session and security: \"At session start the phone reports every existing notification as "
    + "Added with the PreExisting flag\""

  static let preExisting: [ConformanceCase] = [
    ConformanceCase("ANCS/NP/PRE/BV-01", "Notifications present at subscription come as PreExisting", rule: preRule) {
      ctx in
      _ = try ctx.stimulus()
      let uid = try await ctx.post(StimulusNotification(category: .schedule))
      let (session, _) = try await ctx.openSubscribed()
      let event = try await session.awaitAdded(uid)
      try check(event.eventFlags.contains(.preExisting), "UID \(uid) reported with flags \(event.eventFlags)")
      try check(event.categoryID == .schedule, "UID \(uid) reported in category \(event.categoryID)")
    },
    ConformanceCase(
      "ANCS/NP/PRE/BV-02", "A new subscription is a new session: existing notifications again as PreExisting",
      rule: "\(preRule); \"A session starts when the watch enables notifications on Notification Source, and ends "
        + "when it disables them\""
    ) { ctx in
      let (session, handles, uid, _) = try await withNotification(ctx)
      guard let cccd = handles.notificationSourceCCCD else { throw CaseOutcome.failed("no Notification Source CCCD") }
      do { try await session.client.configure(cccd: cccd, []) } catch {
        throw CaseOutcome.failed("disabling Notification Source notifications failed: \(error)")
      }
      try await session.subscribeNotificationSource(handles)
      let event = try await session.awaitAdded(uid)
      try check(event.eventFlags.contains(.preExisting), "UID \(uid) reported again with flags \(event.eventFlags)")
    },
  ]

  // MARK: - GNA: Get Notification Attributes

  static let gnaRule = "Protocol/ANCS.md, Control Point commands and Data Source responses"

  static let fullNotification = StimulusNotification(
    category: .social, title: "Maya", subtitle: "Lunch", message: "Are we still on? 🍜", date: "20261129T120000",
    positiveAction: "Reply", negativeAction: "Dismiss")

  static let attributes: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NP/GNA/BV-01", "Every notification attribute, with the posted values",
      rule: "\(gnaRule): AttributeIDs 0-7; MessageSize \"decimal digits of the message's full length in bytes\"; "
        + "Date `yyyyMMdd'T'HHmmSS`"
    ) { ctx in
      let posted = fullNotification
      let (session, handles, uid, _) = try await withNotification(ctx, posted)
      let answer = try await session.fetch(
        handles,
        getAttributes(
          uid,
          [
            AttributeRequest(.appIdentifier), AttributeRequest(.title, maxLength: 64),
            AttributeRequest(.subtitle, maxLength: 64), AttributeRequest(.message, maxLength: 256),
            AttributeRequest(.messageSize), AttributeRequest(.date), AttributeRequest(.positiveActionLabel),
            AttributeRequest(.negativeActionLabel),
          ]))
      let response = try notificationAnswer(answer)
      try check(response.notificationUID == uid, "answer for UID \(response.notificationUID), asked \(uid)")
      let expected: [(NotificationAttributeID, String)] = [
        (.appIdentifier, posted.app), (.title, posted.title), (.subtitle, posted.subtitle),
        (.message, posted.message), (.messageSize, String(posted.message.utf8.count)), (.date, posted.date),
        (.positiveActionLabel, posted.positiveAction!), (.negativeActionLabel, posted.negativeAction!),
      ]
      for (id, value) in expected {
        let got = try text(response, id)
        try check(got == value, "\(id) is \"\(got)\", expected \"\(value)\"")
      }
    },
    ConformanceCase(
      "ANCS/NP/GNA/BV-02", "Title, Subtitle and Message honour their byte maximums",
      rule: "Protocol/ANCS.md, Text: \"Byte maximums count UTF-8 bytes. A value is cut at the largest scalar boundary "
        + "within the maximum\""
    ) { ctx in
      let posted = StimulusNotification(
        title: "A rather long title for a watch", subtitle: "A subtitle that goes on",
        message: String(repeating: "x", count: 300))
      try await checkMaximums(ctx, posted, title: 10, subtitle: 7, message: 100)
    },
    ConformanceCase(
      "ANCS/NP/GNA/BV-03", "A cut never splits a UTF-8 character",
      rule: "Protocol/ANCS.md, Text: \"never inside a multi-byte character\"; ANCS.md field problem 10"
    ) { ctx in
      let posted = StimulusNotification(title: "Ééééé", subtitle: "日本語のテキスト", message: "🍜🍜🍜🍜 done")
      try await checkMaximums(ctx, posted, title: 5, subtitle: 8, message: 7)
    },
    ConformanceCase(
      "ANCS/NP/GNA/BV-04", "A maximum of 0 gives an empty value",
      rule: "Protocol/ANCS.md, Text: \"A maximum of 0 gives an empty value\""
    ) { ctx in
      let (session, handles, uid, _) = try await withNotification(ctx, fullNotification)
      let response = try notificationAnswer(
        try await session.fetch(handles, getAttributes(uid, [AttributeRequest(.message, maxLength: 0)])))
      let value = try text(response, .message)
      try check(value.isEmpty, "Message with maximum 0 is \"\(value)\"")
    },
    ConformanceCase(
      "ANCS/NP/GNA/BV-05", "Tuples come in the order they were requested",
      rule: "ANCS.md, Data Source responses: \"the tuples come in the order the attributes were requested\""
    ) { ctx in
      let (session, handles, uid, _) = try await withNotification(ctx, fullNotification)
      let order: [AttributeRequest] = [
        AttributeRequest(.date), AttributeRequest(.message, maxLength: 50), AttributeRequest(.appIdentifier),
        AttributeRequest(.negativeActionLabel), AttributeRequest(.title, maxLength: 20),
      ]
      let response = try notificationAnswer(try await session.fetch(handles, getAttributes(uid, order)))
      let got = response.attributes.map(\.id)
      try check(got == order.map(\.id), "tuples in order \(got), requested \(order.map(\.id))")
    },
    ConformanceCase(
      "ANCS/NP/GNA/BV-06", "MessageSize is the full length even when Message is cut",
      rule: "Protocol/ANCS.md: \"4 MessageSize (decimal digits of the message's full length in bytes)\""
    ) { ctx in
      let posted = StimulusNotification(message: String(repeating: "ab", count: 60))
      let (session, handles, uid, _) = try await withNotification(ctx, posted)
      let response = try notificationAnswer(
        try await session.fetch(
          handles, getAttributes(uid, [AttributeRequest(.message, maxLength: 10), AttributeRequest(.messageSize)])))
      let size = try text(response, .messageSize)
      try check(size == "120", "MessageSize is \"\(size)\", expected \"120\"")
    },
  ]

  // MARK: - FRAG: fragmentation

  static func fragmentationCase(_ number: Int, mtu: UInt16) -> ConformanceCase {
    ConformanceCase(
      "ANCS/NP/FRAG/BV-0\(number)", "An answer longer than ATT_MTU-3 is split at ATT_MTU \(mtu)",
      rule: "Protocol/ANCS.md, Data Source responses: \"A response longer than ATT_MTU-3 is split over several "
        + "notifications. Only the first has the header\""
    ) { ctx in
      let message = String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 30)
      let (session, handles, uid, _) = try await withNotification(ctx, StimulusNotification(message: message), mtu: mtu)
      let capacity = session.notificationCapacity
      let answer = try await session.fetch(
        handles,
        getAttributes(uid, [AttributeRequest(.title, maxLength: 100), AttributeRequest(.message, maxLength: 2000)]))
      let response = try notificationAnswer(answer)
      let got = try text(response, .message)
      try check(got == message, "Message reassembled to \(got.utf8.count) bytes, expected \(message.utf8.count)")
      let total = answer.fragments.reduce(0) { $0 + $1.count }
      try check(total > capacity, "answer of \(total) bytes fits one notification at ATT_MTU \(session.connection.mtu)")
      try check(answer.fragments.count > 1, "an answer of \(total) bytes came in one notification")
      for (index, fragment) in answer.fragments.enumerated() {
        try check(
          fragment.count <= capacity,
          "notification \(index + 1) carries \(fragment.count) bytes, ATT_MTU-3 is \(capacity)")
      }
    }
  }

  static let fragmentation: [ConformanceCase] = [
    fragmentationCase(1, mtu: 23), fragmentationCase(2, mtu: 185), fragmentationCase(3, mtu: 517),
  ]

  // MARK: - GAA: Get App Attributes

  static let appAttributes: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NP/GAA/BV-01", "Get App Attributes gives the app's display name",
      rule: "Protocol/ANCS.md: \"1 Get App Attributes | AppIdentifier (UTF-8, NUL-terminated), then AppAttributeIDs\"; "
        + "answer \"01, AppIdentifier NUL-terminated, tuples\""
    ) { ctx in
      let (session, handles, _, _) = try await withNotification(ctx)
      let command = GetAppAttributesCommand(appIdentifier: StimulusNotification.defaultApp)
      let answer = try await session.fetch(handles, .getAppAttributes(command))
      guard case .appAttributes(let response) = answer.response else {
        throw CaseOutcome.failed("expected an app answer")
      }
      try check(response.appIdentifier == command.appIdentifier, "answer names app \"\(response.appIdentifier)\"")
      let name = response[.displayName]?.text ?? ""
      try check(!name.isEmpty, "the DisplayName of \(command.appIdentifier) is empty")
    },
    ConformanceCase(
      "ANCS/NP/GAA/BI-01", "Get App Attributes for an unknown app: 0xA2",
      rule: "\(errorsTable): 0xA2 when \"the NotificationUID or AppIdentifier does not exist\"", needsStimulus: false
    ) { ctx in
      let (session, handles) = try await ctx.openSubscribed()
      let command = GetAppAttributesCommand(appIdentifier: "org.no.such")
      try await session.expectError(handles, ControlPointCommand.getAppAttributes(command).encoded(), 0xA2)
    },
    ConformanceCase(
      "ANCS/NP/GAA/BI-02", "Get App Attributes without the NUL terminator: 0xA1",
      rule: "Protocol/ANCS.md, decoding rules: \"an AppIdentifier with no NUL fails with `missingTerminator`\"; 0xA1",
      needsStimulus: false
    ) { ctx in
      let (session, handles) = try await ctx.openSubscribed()
      try await session.expectError(handles, [0x01] + Array(StimulusNotification.defaultApp.utf8), 0xA1)
    },
  ]

  // MARK: - PNA: Perform Notification Action

  static let actionRule =
    "Protocol/ANCS.md: \"ends the notification after any action it accepts ... the Removed event follows\"; "
    + "\"Perform Notification Action is never answered on the Data Source\""

  static func actionCase(_ id: String, _ action: ActionID, _ name: String) -> ConformanceCase {
    ConformanceCase(id, "\(name) action accepted, then Removed, nothing on the Data Source", rule: actionRule) { ctx in
      let (session, handles, uid, added) = try await withNotification(ctx, fullNotification)
      try check(
        added.eventFlags.contains(action == .positive ? .positiveAction : .negativeAction),
        "the notification was posted with both actions but Added has flags \(added.eventFlags)")
      let command = ControlPointCommand.performNotificationAction(
        PerformNotificationActionCommand(notificationUID: uid, actionID: action))
      if let code = try await session.write(handles, command.encoded()) {
        throw CaseOutcome.failed("the \(name) action was refused with \(hex(code.rawValue))")
      }
      let event = try await session.nextEvent(uid: uid)
      try check(event.eventID == .removed, "after the action expected Removed, got \(event.eventID)")
      ctx.forget(uid)
      try check(session.dataSource.count == 0, "the action was answered on the Data Source")
    }
  }

  static let actions: [ConformanceCase] = [
    actionCase("ANCS/NP/PNA/BV-01", .positive, "Positive"),
    actionCase("ANCS/NP/PNA/BV-02", .negative, "Negative"),
    ConformanceCase(
      "ANCS/NP/PNA/BI-01", "An action on a notification that is gone: 0xA2",
      rule: "\(errorsTable): 0xA2 when the NotificationUID \"does not exist (or no longer exists)\""
    ) { ctx in
      let (session, handles, uid, _) = try await withNotification(ctx, fullNotification)
      try await ctx.remove(uid)
      _ = try await session.nextEvent(uid: uid)
      let command = ControlPointCommand.performNotificationAction(
        PerformNotificationActionCommand(notificationUID: uid, actionID: .positive))
      try await session.expectError(handles, command.encoded(), 0xA2)
    },
    ConformanceCase(
      "ANCS/NP/PNA/BI-02", "An action the notification does not offer: 0xA3",
      rule: "\(errorsTable): 0xA3 when \"the notification has no such action (its PositiveAction / NegativeAction "
        + "flag is clear)\""
    ) { ctx in
      let (session, handles, uid, _) = try await withNotification(ctx, StimulusNotification(positiveAction: "Reply"))
      let command = ControlPointCommand.performNotificationAction(
        PerformNotificationActionCommand(notificationUID: uid, actionID: .negative))
      try await session.expectError(handles, command.encoded(), 0xA3)
    },
  ]

  // MARK: - CP: Control Point errors

  static let errors: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NP/CP/BI-01", "Unknown CommandID: 0xA0",
      rule: "\(errorsTable): 0xA0 Unknown command, \"the CommandID is not 0, 1 or 2\"", needsStimulus: false
    ) { ctx in
      let (session, handles) = try await ctx.openSubscribed()
      try await session.expectError(handles, [0x05, 0x01, 0x00, 0x00, 0x00], 0xA0)
    },
    ConformanceCase(
      "ANCS/NP/CP/BI-02", "Truncated command (UID cut short): 0xA1",
      rule: "Protocol/ANCS.md, decoding rules: \"a truncated UID or ActionID fails with `truncated`\"; 0xA1",
      needsStimulus: false
    ) { ctx in
      let (session, handles) = try await ctx.openSubscribed()
      try await session.expectError(handles, [0x00, 0x01, 0x00], 0xA1)
    },
    ConformanceCase(
      "ANCS/NP/CP/BI-03", "Title requested without its maximum length: 0xA1",
      rule: "Protocol/ANCS.md, decoding rules: \"Title, Subtitle or Message without its 2-byte MaxLength fails with "
        + "`missingMaximumLength`\"; 0xA1"
    ) { ctx in
      let (session, handles, uid, _) = try await withNotification(ctx)
      try await session.expectError(handles, [0x00] + le32(uid) + [0x00, 0x01], 0xA1)
    },
    ConformanceCase(
      "ANCS/NP/CP/BI-04", "Unknown NotificationUID: 0xA2",
      rule: "\(errorsTable): 0xA2 when \"the NotificationUID ... does not exist\"; the phone \"never gives out "
        + "0xFFFFFFFF\"", needsStimulus: false
    ) { ctx in
      let (session, handles) = try await ctx.openSubscribed()
      try await session.expectError(
        handles, getAttributes(0xFFFF_FFFF, [AttributeRequest(.title, maxLength: 32)]).encoded(), 0xA2)
    },
    ConformanceCase(
      "ANCS/NP/CP/BI-05", "Get Notification Attributes for a removed notification: 0xA2",
      rule: "\(errorsTable): 0xA2 when the NotificationUID \"no longer exists\""
    ) { ctx in
      let (session, handles, uid, _) = try await withNotification(ctx)
      try await ctx.remove(uid)
      _ = try await session.nextEvent(uid: uid)
      try await session.expectError(
        handles, getAttributes(uid, [AttributeRequest(.title, maxLength: 32)]).encoded(), 0xA2)
    },
    ConformanceCase(
      "ANCS/NP/CP/BI-06", "Perform Notification Action with a truncated ActionID: 0xA1",
      rule: "Protocol/ANCS.md, decoding rules: \"a truncated UID or ActionID fails with `truncated`\"; 0xA1"
    ) { ctx in
      let (session, handles, uid, _) = try await withNotification(ctx, fullNotification)
      try await session.expectError(handles, [0x02] + le32(uid), 0xA1)
    },
    ConformanceCase(
      "ANCS/NP/CP/BI-07", "Get Notification Attributes with no AttributeID: 0xA1",
      rule: "Protocol/ANCS.md, decoding rules: \"a command with no AttributeID at all fails with `noAttributes`\"; 0xA1"
    ) { ctx in
      let (session, handles, uid, _) = try await withNotification(ctx)
      try await session.expectError(handles, [0x00] + le32(uid), 0xA1)
    },
  ]

  // MARK: - DS: the Data Source after errors

  static let dataSource: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NP/DS/BI-01", "Nothing on the Data Source after a refused command",
      rule: "\(errorsTable): \"After an error the phone sends nothing on the Data Source for that command\""
    ) { ctx in
      let (session, handles, uid, _) = try await withNotification(ctx)
      let refused: [(String, [UInt8], UInt8)] = [
        ("unknown command", [0x07], 0xA0), ("missing maximum length", [0x00] + le32(uid) + [0x01], 0xA1),
        ("unknown UID", getAttributes(0xFFFF_FFFF, [AttributeRequest(.title, maxLength: 8)]).encoded(), 0xA2),
      ]
      for (what, bytes, code) in refused {
        try await session.expectError(handles, bytes, code)
        // ATT keeps order: anything sent for the refused command would arrive before the
        // answer to the next one, whose first notification must start with its own header.
        let command = getAttributes(uid, [AttributeRequest(.title, maxLength: 8)])
        if let code = try await session.write(handles, command.encoded()) {
          throw CaseOutcome.failed("a valid command after the \(what) was refused with \(hex(code.rawValue))")
        }
        guard let first = await session.dataSource.next() else { throw CaseOutcome.failed("the link closed") }
        let header = [0x00] + le32(uid)
        try check(
          first.starts(with: header),
          "after the \(what) (\(hex(code))) the Data Source sent \(first.count) bytes that are not the next answer's header"
        )
        var rest = DataSourceReassembler(
          expecting: .notificationAttributes(
            GetNotificationAttributesCommand(notificationUID: uid, attributes: [AttributeRequest(.title, maxLength: 8)])
          ))
        var done = false
        do { done = try rest.feed(first) != nil } catch {
          throw CaseOutcome.failed("answer after the \(what): \(error)")
        }
        while !done {
          guard let next = await session.dataSource.next() else { throw CaseOutcome.failed("the link closed") }
          do { done = try rest.feed(next) != nil } catch {
            throw CaseOutcome.failed("answer after the \(what): \(error)")
          }
        }
      }
    }
  ]

  // MARK: - UID: uniqueness

  static let uids: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NP/UID/BV-01", "UIDs are unique in a session, never reused after removal",
      rule: "Protocol/ANCS.md, Session and security: UIDs identify a notification within the session; the phone "
        + "\"never reuses a UID while it runs\""
    ) { ctx in
      let (session, _) = try await ctx.openSubscribed()
      var seen: Set<UInt32> = []
      for index in 0..<4 {
        let uid = try await ctx.post(StimulusNotification(title: "Unique \(index)"))
        _ = try await session.awaitAdded(uid)
        try check(seen.insert(uid).inserted, "UID \(uid) given out twice")
        if index % 2 == 0 {
          try await ctx.remove(uid)
          _ = try await session.nextEvent(uid: uid)
        }
      }
    }
  ]

  // MARK: - IOS: what an iPhone shows an accessory besides ANCS (Protocol/iPhone.md)

  static let linkRule = "Protocol/iPhone.md, Behaviour on the link"

  static let iPhone: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NP/IOS/BV-01", "Starts Exchange MTU on a new link, asking for 185 (158 before iOS 10)",
      rule: "\(linkRule): the iPhone, as GATT client, sends Exchange MTU first, right after connecting",
      needsStimulus: false
    ) { ctx in
      let session = try await ctx.open(encrypt: false)
      let first = try await session.awaitReceived("the phone's first ATT request (an iPhone's: Exchange MTU)") { $0 }
      guard case .exchangeMTURequest(let request) = first else {
        throw CaseOutcome.failed("the phone's first ATT PDU is \(CaseLog.describe(first)), not an Exchange MTU Request")
      }
      try check(
        [158, 185].contains(request.clientRxMTU),
        "the phone asks for ATT_MTU \(request.clientRxMTU); an iPhone asks for 185 (158 on iOS 9 and older)")
    },
    ConformanceCase(
      "ANCS/NP/IOS/BV-02", "Reads the accessory's GAP Device Name",
      rule: "\(linkRule): it reads the accessory's Device Name", needsStimulus: false
    ) { ctx in
      let session = try await ctx.open(encrypt: false)
      let nameHandle = session.server.database.attributes.first { $0.type == 0x2A00 }?.handle
      _ = try await session.awaitReceived("the phone to read the accessory's Device Name (0x2A00)") { pdu -> Bool? in
        switch pdu {
        case .readByTypeRequest(let read) where read.type == 0x2A00: return true
        case .readRequest(let read) where read.handle == nameHandle: return true
        default: return nil
        }
      }
    },
    ConformanceCase(
      "ANCS/NP/IOS/BI-03", "Battery Level refused with Insufficient Authentication before pairing",
      rule:
        "Protocol/iPhone.md, Security: Battery Level on an unpaired link answers Insufficient Authentication (0x05)",
      needsStimulus: false
    ) { ctx in
      let session = try await ctx.open(encrypt: false)
      let level: DiscoveredCharacteristic
      do {
        guard let battery = try await session.client.discoverPrimaryServices(0x180F).first else {
          throw CaseOutcome.failed("the phone publishes no Battery service (0x180F)")
        }
        guard
          let found = try await session.client.discoverCharacteristics(of: battery).first(where: { $0.uuid == 0x2A19 })
        else { throw CaseOutcome.failed("the Battery service has no Battery Level (0x2A19)") }
        level = found
      } catch let outcome as CaseOutcome {
        throw outcome
      } catch {
        throw CaseOutcome.failed("discovering Battery Level failed: \(error)")
      }
      var code: ATTErrorCode?
      do { _ = try await session.client.read(level.valueHandle) } catch { code = (error as? ATTError)?.errorCode }
      try check(
        code == .insufficientAuthentication,
        "reading Battery Level on an unpaired link "
          + (code.map { "answered \(hex($0.rawValue))" } ?? "was accepted") + "; an iPhone answers 0x05")
    },
    ConformanceCase(
      "ANCS/NP/IOS/BV-04", "Answers Write Not Permitted to the Control Point while sharing is not allowed",
      rule: "Protocol/iPhone.md, Behaviour on the link: notification sharing (iOS 13 and later)"
    ) { ctx in
      let (session, handles) = try await ctx.openSubscribed()
      let check = getAttributes(0xFFFF_FFFF, [AttributeRequest(.appIdentifier)]).encoded()
      try await ctx.share(false)
      let refused = try await session.write(handles, check, notSharedIsAnswer: true)
      try Conformance.check(
        refused == .writeNotPermitted,
        "with sharing revoked the Control Point write \(Hex.encode(check)) "
          + (refused.map { "answered \(hex($0.rawValue))" } ?? "was accepted") + ", expected Write Not Permitted (0x03)"
      )
      try await ctx.share(true)
      // Any answer but 0x03: the phone takes the command again (0xA2 for a UID it never gave).
      let answered = try await session.write(handles, check, notSharedIsAnswer: true)
      try Conformance.check(
        answered != .writeNotPermitted, "with sharing allowed again the same write is still answered 0x03")
    },
    ConformanceCase(
      "ANCS/NP/IOS/BV-05", "Publishes ANCS once the link is encrypted, announced with Service Changed",
      rule: "\(linkRule): ANCS absent until the link is encrypted (InfiniTimeOrg/InfiniTime#910)",
      needsStimulus: false
    ) { ctx in
      let session = try await ctx.open(encrypt: false)
      let ancs = BluetoothUUID(ANCSUUID.service)!
      let changes = Inbox<HandleRange>()
      do {
        guard let gatt = try await session.client.discoverPrimaryServices(.genericAttributeService).first,
          let changed = try await session.client.discoverCharacteristics(of: gatt).first(where: {
            $0.uuid == .serviceChanged
          })
        else { throw CaseOutcome.failed("the phone has no Service Changed characteristic to announce ANCS with") }
        _ = try await session.client.subscribe(changed, indications: true) { _, event in
          guard event.value.count == 4 else { return }
          changes.push(
            HandleRange(
              UInt16(event.value[0]) | UInt16(event.value[1]) << 8, UInt16(event.value[2]) | UInt16(event.value[3]) << 8
            ))
        }
        let early = try await session.client.discoverPrimaryServices(ancs)
        try check(early.isEmpty, "ANCS is discoverable on an unencrypted link (at \(early[0].range))")
      } catch let outcome as CaseOutcome {
        throw outcome
      } catch {
        throw CaseOutcome.failed("discovery on the unencrypted link failed: \(error)")
      }
      try await session.pair()
      // The next request shows the phone the link's new level, if nothing else has.
      let found: [DiscoveredService]
      do { found = try await session.client.discoverPrimaryServices(ancs) } catch {
        throw CaseOutcome.failed("discovery on the encrypted link failed: \(error)")
      }
      guard let service = found.first else { throw CaseOutcome.failed("no ANCS on the encrypted link either") }
      try await ctx.log.awaiting("a Service Changed indication over ANCS's range \(service.range)") {
        () throws(CaseOutcome) in
        while let range = await changes.next() {
          if range.start <= service.range.start && service.range.end <= range.end { return }
        }
      }
    },
  ]

  // MARK: - BOND: bond trouble

  // Last: the phone's bond with the harness is authenticated after it, which every later
  // pairing would use.
  static let mitm: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NP/SEC/BV-05", "Pairs with MITM protection when the accessory asks for it",
      rule: "Protocol/iPhone.md, Pairing and bonds: KeyboardDisplay, Bonding, MITM, SC; Core Vol 3 Part H 2.4.6: "
        + "a Security Request with MITM is met by pairing when the bond is not authenticated",
      needsStimulus: false
    ) { ctx in
      guard ctx.phone.pairsWithMITM else {
        throw CaseOutcome.skipped(
          "needs a harness accessory that can show or type a number: conform phone --io display-yesno (or another)")
      }
      let session = try await ctx.open(encrypt: false)
      let level = try await session.pairAuthenticated()
      try check(level == .authenticated, "the phone paired an accessory that asked for MITM protection at \(level)")
    }
  ]

  static let bonds: [ConformanceCase] = [
    ConformanceCase(
      "ANCS/NP/BOND/BV-01", "Keeps its bond and drops an accessory that lost it, until its user forgets it",
      rule: "Protocol/iPhone.md, Pairing and bonds: \"Peer removed pairing information\" until \"Forget This Device\""
    ) { ctx in
      let bonds = try ctx.bonds()
      _ = try await ctx.open(encrypt: true)
      try check(!bonds.bondedPeers.isEmpty, "the phone paired without bonding (the accessory keeps no bond)")
      ctx.closeLinks()
      // The accessory loses its bond, as a reset one does; the phone still holds its own.
      _ = try bonds.forget(nil)
      let second = try await ctx.open(encrypt: false)
      // Refused (the phone's key is one the accessory does not hold), or the link dropped.
      var pairedAgain = true
      do { try await second.pair() } catch { pairedAgain = false }
      try check(
        !pairedAgain,
        "the phone paired afresh with an accessory that lost its bond; an iPhone keeps its bond and drops the "
          + "link until its user forgets the accessory")
      ctx.closeLinks()
      // Its user forgets the accessory: then it pairs afresh.
      try await ctx.forgetOnPhone()
      _ = try await ctx.open(encrypt: true)
    }
  ]

  /// Posts `posted`, asks for its Title, Subtitle and Message with these byte maximums, and
  /// checks each value is the longest whole-character prefix within its maximum.
  static func checkMaximums(
    _ ctx: NPContext, _ posted: StimulusNotification, title: UInt16, subtitle: UInt16, message: UInt16
  ) async throws {
    let (session, handles, uid, _) = try await withNotification(ctx, posted)
    let response = try notificationAnswer(
      try await session.fetch(
        handles,
        getAttributes(
          uid,
          [
            AttributeRequest(.title, maxLength: title), AttributeRequest(.subtitle, maxLength: subtitle),
            AttributeRequest(.message, maxLength: message),
          ])))
    try checkCut(try text(response, .title), of: posted.title, maximum: Int(title), "Title")
    try checkCut(try text(response, .subtitle), of: posted.subtitle, maximum: Int(subtitle), "Subtitle")
    try checkCut(try text(response, .message), of: posted.message, maximum: Int(message), "Message")
  }

  static func le32(_ value: UInt32) -> [UInt8] {
    [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)]
  }
}
