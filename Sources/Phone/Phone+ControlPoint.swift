import ANCS
import ATT
import GATT
import Wire

extension Phone {
  /// Answers a Control Point write: an ATT error (0xA0-0xA3, or 0xFD without a Data Source
  /// subscription), or acceptance followed by the Data Source answer. Protocol/ANCS.md
  /// lists every rule.
  func controlPoint(_ gatt: GATTSession, _ bytes: [UInt8]) -> WriteOutcome {
    let id = sessionID(gatt)
    // Sharing not allowed: "Write Not Permitted" whatever the command (PebbleOS#2093).
    guard mayShare(gatt) else {
      emit(
        .refused(
          session: id, command: "a command (notifications not shared with it)",
          code: ATTErrorCode.writeNotPermitted.rawValue))
      return .refused(.writeNotPermitted)
    }
    let policy = controlPointPolicy
    var bytes = bytes
    // Taken as running to the end, DisplayName asked.
    if policy.takesAppIdentifierWithoutNul, bytes.first == 0x01, !bytes.dropFirst().contains(0) {
      bytes += [0x00, 0x00]
    }
    let command: ControlPointCommand
    do {
      command = try ControlPointCommand(decoding: bytes)
    } catch {
      if let accepted = faultyAcceptance(of: bytes, error) {
        command = accepted
      } else {
        logger.info("session \(id): \(error)")
        var code = error.controlPointErrorCode.rawValue
        switch error.reason {
        case .unknownCommand: code = policy.unknownCommandCode
        case .truncated: code = policy.truncatedCode
        default: break
        }
        emit(.refused(session: id, command: Hex.encode(bytes), code: code))
        echoAfterError(gatt, bytes)
        return .refused(ATTErrorCode(rawValue: code))
      }
    }
    let count = withState { state -> Int in
      state.withSession(ObjectIdentifier(gatt)) { session in
        session.commands += 1
        return session.commands
      } ?? 0
    }
    let outcome: Result<[UInt8]?, ANCSRefusal>
    switch command {
    case .getNotificationAttributes(let get): outcome = notificationAttributes(get).map { $0 }
    case .getAppAttributes(let get): outcome = appAttributes(get).map { $0 }
    case .performNotificationAction(let action):
      switch perform(action, session: id) {
      case .failure(let refusal): outcome = .failure(refusal)
      case .success(let uid):
        // The notification ends after the Write Response, as its own Removed event.
        let ends = policy.actionEndsNotification
        return .accepted(then: { [self] _ in
          assumeIsolated(passing: (uid, ends, count)) { phone, done in
            if done.1 {
              phone.remove(done.0)
            } else {
              // It stays, announced Modified.
              phone.modify(done.0) { _ in }
            }
            phone.afterCommand(done.2)
          }
        })
      }
    }
    let name = command.commandID.name ?? "command"
    switch outcome {
    case .failure(let refusal):
      emit(.refused(session: id, command: name, code: refusal.code))
      echoAfterError(gatt, bytes)
      return .refused(ATTErrorCode(rawValue: refusal.code))
    case .success(nil):
      return .accepted(then: { [self] _ in
        assumeIsolated(passing: count) { phone, count in phone.afterCommand(count) }
      })
    case .success(let answer?):
      guard let handles = ancsHandles, cccd(gatt, handles.data).contains(.notifications) else {
        // Without a Data Source subscription the answer could not be delivered.
        emit(.refused(session: id, command: name, code: ATTErrorCode.cccdImproperlyConfigured.rawValue))
        return .refused(.cccdImproperlyConfigured)
      }
      let size = quirks.chunk20 ? 20 : gatt.connection.mtu - 3
      let fragments = dataSourceFragments(answer, maximumSize: size).map(Array.init) + (quirks.emptyPacket ? [[]] : [])
      if quirks.loseAnswer == count {
        return .accepted(then: { [self] _ in
          assumeIsolated(passing: (count, id, name)) { phone, lost in
            phone.emit(
              .quirk("lose-answer: the answer to command \(lost.0) of watch \(lost.1) (\(lost.2)) is never sent"))
            phone.afterCommand(lost.0)
          }
        })
      }
      let sending = Answer(
        gatt: gatt, handle: handles.data, fragments: fragments, session: id, name: name, count: count)
      return .accepted(then: { [self] _ in
        assumeIsolated(passing: sending) { phone, answer in
          // All at once, in order, put on the link.
          if case .failure(let error) = phone.notify(answer.gatt, answer.handle, answer.fragments) {
            phone.logger.info("session \(answer.session): Data Source answer not delivered: \(error)")
            return
          }
          phone.emit(.answered(session: answer.session, command: answer.name))
          phone.answered(answer.gatt)
          phone.afterCommand(answer.count)
        }
      })
    }
  }

  /// A Data Source answer to send after its Write Response.
  struct Answer: Sendable {
    var gatt: GATTSession
    var handle: UInt16
    var fragments: [[UInt8]]
    var session: Int
    var name: String
    var count: Int
  }

  struct ANCSRefusal: Error {
    var code: UInt8
    static let invalidParameter = ANCSRefusal(code: ANCSErrorCode.invalidParameter.rawValue)
    static let actionFailed = ANCSRefusal(code: ANCSErrorCode.actionFailed.rawValue)
    static let invalidCommand = ANCSRefusal(code: ANCSErrorCode.invalidCommand.rawValue)
  }

  /// A command the policy accepts although it does not decode; nil by the rules.
  private func faultyAcceptance(of bytes: [UInt8], _ error: ANCSError) -> ControlPointCommand? {
    switch error.reason {
    case .missingMaximumLength where controlPointPolicy.takesMissingMaximumLength:
      // Taken as no maximum.
      return try? ControlPointCommand(decoding: bytes + [0xFF, 0xFF])
    case .noAttributes where controlPointPolicy.takesNoAttributes && bytes.count == 5:
      // Answered with the header alone.
      let uid = UInt32(bytes[1]) | UInt32(bytes[2]) << 8 | UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 24
      return .getNotificationAttributes(GetNotificationAttributesCommand(notificationUID: uid, attributes: []))
    default:
      return nil
    }
  }

  /// The refused command echoed on the Data Source before its Error Response, when the
  /// policy says so (never by the rules: "After an error the phone sends nothing on the
  /// Data Source for that command").
  private func echoAfterError(_ gatt: GATTSession, _ bytes: [UInt8]) {
    guard controlPointPolicy.echoesRefusedCommand, let handles = ancsHandles else { return }
    _ = notify(gatt, handles.data, [bytes])
  }

  /// The quirk service-changed: after the N-th command, unpublish and republish ANCS.
  private func afterCommand(_ count: Int) {
    guard let after = quirks.serviceChangedAfter, count >= after else { return }
    let first = withState { state -> Bool in
      defer { state.serviceChanged = true }
      return !state.serviceChanged
    }
    guard first else { return }
    // On the connection's receive loop, after the Write Response: the two Service Changed
    // indications are queued, never awaited (their confirmations come through this loop).
    let end = server.database.attributes.last?.handle ?? 0x20
    // The handles are looked up again after each change of the database.
    server.unpublishNow(Self.ancsService)
    state.handles = nil
    _ = try? server.publishNow(ancsDefinition(), startingAt: end + 0x10)
    state.handles = nil
    emit(.quirk("service-changed: ANCS republished at handle \(end + 0x10)"))
  }

  /// The Data Source answer to Get Notification Attributes: tuples in request order, each
  /// value cut to its maximum on a UTF-8 scalar boundary.
  func notificationAttributes(_ command: GetNotificationAttributesCommand) -> Result<[UInt8], ANCSRefusal> {
    let found = withState { $0.center.notification(command.notificationUID) }
    guard let notification = found else { return .failure(unknownUIDRefusal) }
    let policy = controlPointPolicy
    var tuples: [NotificationAttribute] = []
    for request in command.attributes {
      var text: String
      switch request.id {
      case .appIdentifier: text = notification.appIdentifier
      case .title: text = notification.title
      case .subtitle: text = notification.subtitle
      case .message: text = notification.message
      case .messageSize:
        text = String(notification.message.utf8.count)
        if policy.messageSizeOfCut, let cut = command.attributes.first(where: { $0.id == .message }),
          let maximum = cut.maxLength
        {
          text = String(ANCSText.truncate(notification.message, toBytes: Int(maximum)).count)
        }
      case .date:
        text = notification.date
        if policy.extendedDates, text.utf8.count == 15 {
          let c = Array(text)
          text =
            String(c[0..<4]) + "-" + String(c[4..<6]) + "-" + String(c[6..<11]) + ":" + String(c[11..<13]) + ":"
            + String(c[13..<15])
        }
      case .positiveActionLabel: text = notification.positiveAction ?? ""
      case .negativeActionLabel: text = notification.negativeAction ?? ""
      default: return .failure(.invalidParameter)
      }
      var value =
        request.maxLength.map { ANCSText.truncate(text, toBytes: Int($0), ellipsis: quirks.ellipsis) }
        ?? Array(text.utf8)
      if !policy.cutsToMaximum { value = Array(text.utf8) }
      if policy.cutsInsideCharacters, let maximum = request.maxLength {
        value = Array(text.utf8.prefix(Int(maximum)))
      }
      tuples.append(NotificationAttribute(request.id, value))
    }
    if let omitted = quirks.omitTuple, quirks.omitTupleApps?.contains(notification.appIdentifier) ?? true {
      switch omitted {
      case .last: if !tuples.isEmpty { tuples.removeLast() }
      case .attribute(let id): tuples.removeAll { $0.id.rawValue == id }
      }
    }
    if quirks.reverseTuples { tuples.reverse() }
    if policy.sortsTuples { tuples.sort { $0.id.rawValue < $1.id.rawValue } }
    // The longest value is cut for the whole answer to fit the cap.
    if let cap = policy.answerCap {
      let size = 5 + tuples.reduce(0) { $0 + 3 + $1.value.count }
      if size > cap, let longest = tuples.indices.max(by: { tuples[$0].value.count < tuples[$1].value.count }) {
        tuples[longest].value = ANCSText.truncate(
          tuples[longest].value, toBytes: tuples[longest].value.count - (size - cap))
      }
    }
    return .success(
      DataSourceResponse.notificationAttributes(
        NotificationAttributesResponse(notificationUID: notification.uid, attributes: tuples)
      ).encoded())
  }

  func appAttributes(_ command: GetAppAttributesCommand) -> Result<[UInt8], ANCSRefusal> {
    var name = withState { $0.center.displayName(of: command.appIdentifier) }
    if controlPointPolicy.takesUnknownApp && name == nil { name = "" }
    guard let name else { return .failure(.invalidParameter) }
    var tuples: [AppAttribute] = []
    for id in command.attributes {
      guard id == .displayName else { return .failure(.invalidParameter) }
      tuples.append(AppAttribute(id, text: controlPointPolicy.emptyAppNames ? "" : name))
    }
    if quirks.reverseTuples { tuples.reverse() }
    return .success(
      DataSourceResponse.appAttributes(AppAttributesResponse(appIdentifier: command.appIdentifier, attributes: tuples))
        .encoded())
  }

  /// The refusal of an unknown or removed NotificationUID: 0xA2.
  var unknownUIDRefusal: ANCSRefusal { ANCSRefusal(code: controlPointPolicy.unknownUIDCode) }

  /// Performs an action: the notification must exist (0xA2) and offer it (0xA3). Every
  /// action ends the notification (the caller removes the returned UID once the Write
  /// Response is out); on an incoming call positive answers and negative declines.
  func perform(_ command: PerformNotificationActionCommand, session: Int) -> Result<UInt32, ANCSRefusal> {
    let found = withState { $0.center.notification(command.notificationUID) }
    guard let notification = found else { return .failure(unknownUIDRefusal) }
    let label: String?
    switch command.actionID {
    case .positive: label = notification.positiveAction
    case .negative: label = notification.negativeAction
    default: return .failure(.invalidParameter)
    }
    guard let label else { return .failure(ANCSRefusal(code: controlPointPolicy.missingActionCode)) }
    let outcome: String
    if notification.category == .incomingCall {
      outcome = command.actionID == .positive ? "call answered" : "call declined"
    } else {
      outcome = "\(label) performed"
    }
    emit(
      .action(
        session: session, uid: notification.uid, action: command.actionID.name ?? "?", title: notification.title,
        outcome: outcome))
    return .success(notification.uid)
  }

  // MARK: - Current Time Service

  /// Current Time (0x2A2B): Exact Time 256 (year, month, day, hours, minutes, seconds,
  /// day of week 1 = Monday, fractions256) and Adjust Reason.
  nonisolated func currentTime() -> [UInt8] {
    let local = localNow()
    let date = ANCSDate(secondsSinceEpoch: local)
    let days = local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
    // 1970-01-01 was a Thursday (4).
    let weekday = UInt8(((days % 7) + 7 + 3) % 7 + 1)
    var writer = ByteWriter()
    writer.u16(UInt16(clamping: date.year))
    for part in [date.month, date.day, date.hour, date.minute, date.second] { writer.u8(UInt8(clamping: part)) }
    writer.u8(weekday)
    writer.u8(0)
    writer.u8(0)
    return writer.bytes
  }

  /// Local Time Information (0x2A0F): time zone in 15-minute units, DST offset unknown (255).
  nonisolated func localTimeInformation() -> [UInt8] {
    let offset = wallClock.now().utcOffsetSeconds / 900
    return [UInt8(bitPattern: Int8(clamping: offset)), 255]
  }

  /// The Date attribute for "now" on this phone's wall clock.
  public nonisolated func dateNow() -> String {
    ANCSDate(secondsSinceEpoch: localNow()).description
  }

  /// The phone's local time, in seconds since 1970-01-01 local.
  nonisolated func localNow() -> Int64 {
    let (seconds, offset) = wallClock.now()
    return seconds + Int64(offset) + timeShift.load(ordering: .acquiring)
  }
}
