import ANCS
import ATT
import GATT
import Wire

extension Phone {
  /// Answers a Control Point write: an ATT error (0xA0-0xA3, or 0xFD without a Data Source
  /// subscription), or acceptance followed by the Data Source answer. Protocol/ANCS.md
  /// lists every rule.
  func controlPoint(_ gatt: GATTSession, _ bytes: [UInt8]) async -> WriteOutcome {
    let id = sessionID(gatt)
    // Sharing not allowed: "Write Not Permitted" whatever the command (PebbleOS#2093).
    guard mayShare(gatt) else {
      emit(
        .refused(
          session: id, command: "a command (notifications not shared with it)",
          code: ATTErrorCode.writeNotPermitted.rawValue))
      return .refused(.writeNotPermitted)
    }
    var bytes = bytes
    // FAULT app-identifier-without-nul-accepted: breaks "an AppIdentifier with no NUL fails
    // with missingTerminator" (0xA1): the identifier runs to the end, DisplayName is asked.
    if faults.contains(.appIdentifierWithoutNulAccepted), bytes.first == 0x01, !bytes.dropFirst().contains(0) {
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
        // FAULT unknown-command-answered-a1: breaks 0xA0 "the CommandID is not 0, 1 or 2".
        if faults.contains(.unknownCommandAnsweredA1), case .unknownCommand = error.reason {
          code = ANCSErrorCode.invalidCommand.rawValue
        }
        // FAULT truncated-answered-a2: breaks "a truncated UID or ActionID fails with
        // truncated" (0xA1).
        if faults.contains(.truncatedAnsweredA2), case .truncated = error.reason {
          code = ANCSErrorCode.invalidParameter.rawValue
        }
        emit(.refused(session: id, command: Hex.encode(bytes), code: code))
        await echoAfterError(gatt, bytes)
        return .refused(ATTErrorCode(rawValue: code))
      }
    }
    let count = state.withLock { state -> Int in
      state.sessions[ObjectIdentifier(gatt)]?.commands += 1
      return state.sessions[ObjectIdentifier(gatt)]?.commands ?? 0
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
        return .accepted(then: { [self] in
          if faults.contains(.actionKeepsNotification) {
            // FAULT action-keeps-notification: breaks "ends the notification after any
            // action it accepts ... the Removed event follows": it stays, announced Modified.
            await modify(uid) { _ in }
          } else {
            await remove(uid)
          }
          await afterCommand(count)
        })
      }
    }
    let name = command.commandID.name ?? "command"
    switch outcome {
    case .failure(let refusal):
      emit(.refused(session: id, command: name, code: refusal.code))
      await echoAfterError(gatt, bytes)
      return .refused(ATTErrorCode(rawValue: refusal.code))
    case .success(nil):
      return .accepted(then: { [self] in await afterCommand(count) })
    case .success(let answer?):
      guard let handles = ancsHandles, gatt.cccd(for: handles.data).contains(.notifications) else {
        // Without a Data Source subscription the answer could not be delivered.
        emit(.refused(session: id, command: name, code: ATTErrorCode.cccdImproperlyConfigured.rawValue))
        return .refused(.cccdImproperlyConfigured)
      }
      let size = quirks.chunk20 ? 20 : gatt.connection.mtu - 3
      let fragments = dataSourceFragments(answer, maximumSize: size).map(Array.init) + (quirks.emptyPacket ? [[]] : [])
      if quirks.loseAnswer == count {
        return .accepted(then: { [self] in
          emit(.quirk("lose-answer: the answer to command \(count) of watch \(id) (\(name)) is never sent"))
          await afterCommand(count)
        })
      }
      return .accepted(then: { [self] in
        for fragment in fragments {
          do {
            try await gatt.notify(handles.data, fragment)
          } catch {
            logger.info("session \(id): Data Source answer not delivered: \(error)")
            return
          }
        }
        emit(.answered(session: id, command: name))
        await answered(gatt)
        await afterCommand(count)
      })
    }
  }

  struct ANCSRefusal: Error {
    var code: UInt8
    static let invalidParameter = ANCSRefusal(code: ANCSErrorCode.invalidParameter.rawValue)
    static let actionFailed = ANCSRefusal(code: ANCSErrorCode.actionFailed.rawValue)
    static let invalidCommand = ANCSRefusal(code: ANCSErrorCode.invalidCommand.rawValue)
  }

  /// A command the fault switches accept although it does not decode; nil without them.
  private func faultyAcceptance(of bytes: [UInt8], _ error: ANCSError) -> ControlPointCommand? {
    switch error.reason {
    case .missingMaximumLength where faults.contains(.missingMaxLengthAccepted):
      // FAULT missing-max-length-accepted: breaks "Title, Subtitle or Message without its
      // 2-byte MaxLength fails with missingMaximumLength" (0xA1): taken as no maximum.
      return try? ControlPointCommand(decoding: bytes + [0xFF, 0xFF])
    case .noAttributes where faults.contains(.noAttributesAccepted) && bytes.count == 5:
      // FAULT no-attributes-accepted: breaks "a command with no AttributeID at all fails
      // with noAttributes" (0xA1): answered with the header alone.
      let uid = UInt32(bytes[1]) | UInt32(bytes[2]) << 8 | UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 24
      return .getNotificationAttributes(GetNotificationAttributesCommand(notificationUID: uid, attributes: []))
    default:
      return nil
    }
  }

  /// FAULT data-after-error: breaks "After an error the phone sends nothing on the Data
  /// Source for that command": the refused command is echoed there before its Error Response.
  private func echoAfterError(_ gatt: GATTSession, _ bytes: [UInt8]) async {
    guard faults.contains(.dataAfterError), let handles = ancsHandles else { return }
    _ = try? await gatt.notify(handles.data, bytes)
  }

  /// The quirk service-changed: after the N-th command, unpublish and republish ANCS.
  private func afterCommand(_ count: Int) async {
    guard let after = quirks.serviceChangedAfter, count >= after else { return }
    let first = state.withLock { state -> Bool in
      defer { state.serviceChanged = true }
      return !state.serviceChanged
    }
    guard first else { return }
    // Not awaited: this runs on the connection's receive loop, which must stay free to
    // take the watch's confirmations of the Service Changed indications.
    Task {
      let end = server.database.attributes.last?.handle ?? 0x20
      await server.unpublish(Self.ancsService)
      _ = try? await server.publish(ancsDefinition(), startingAt: end + 0x10)
      emit(.quirk("service-changed: ANCS republished at handle \(end + 0x10)"))
    }
  }

  /// The Data Source answer to Get Notification Attributes: tuples in request order, each
  /// value cut to its maximum on a UTF-8 scalar boundary.
  func notificationAttributes(_ command: GetNotificationAttributesCommand) -> Result<[UInt8], ANCSRefusal> {
    let found = state.withLock { $0.center.notification(command.notificationUID) }
    guard let notification = found else { return .failure(unknownUIDRefusal) }
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
        // FAULT message-size-of-cut: breaks MessageSize "the message's full length in bytes".
        if faults.contains(.messageSizeOfCut), let cut = command.attributes.first(where: { $0.id == .message }),
          let maximum = cut.maxLength
        {
          text = String(ANCSText.truncate(notification.message, toBytes: Int(maximum)).count)
        }
      case .date:
        text = notification.date
        // FAULT date-format: breaks Date "yyyyMMdd'T'HHmmSS" (ISO 8601 extended instead).
        if faults.contains(.dateFormat), text.utf8.count == 15 {
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
      // FAULT max-length-ignored: breaks "Byte maximums ... a value is cut ... within the maximum".
      if faults.contains(.maxLengthIgnored) { value = Array(text.utf8) }
      // FAULT utf8-split: breaks "never inside a multi-byte character": cut at the byte.
      if faults.contains(.utf8Split), let maximum = request.maxLength { value = Array(text.utf8.prefix(Int(maximum))) }
      tuples.append(NotificationAttribute(request.id, value))
    }
    if let omitted = quirks.omitTuple, quirks.omitTupleApps?.contains(notification.appIdentifier) ?? true {
      switch omitted {
      case .last: if !tuples.isEmpty { tuples.removeLast() }
      case .attribute(let id): tuples.removeAll { $0.id.rawValue == id }
      }
    }
    if quirks.reverseTuples { tuples.reverse() }
    // FAULT tuples-sorted: breaks "Tuples come in the order the attributes were requested".
    if faults.contains(.tuplesSorted) { tuples.sort { $0.id.rawValue < $1.id.rawValue } }
    // FAULT answer-capped-512: breaks "A response longer than ATT_MTU-3 is split over
    // several notifications" (no total length): the longest value is cut to fit 512 bytes.
    if faults.contains(.answerCapped512) {
      let size = 5 + tuples.reduce(0) { $0 + 3 + $1.value.count }
      if size > 512, let longest = tuples.indices.max(by: { tuples[$0].value.count < tuples[$1].value.count }) {
        tuples[longest].value = ANCSText.truncate(
          tuples[longest].value, toBytes: tuples[longest].value.count - (size - 512))
      }
    }
    return .success(
      DataSourceResponse.notificationAttributes(
        NotificationAttributesResponse(notificationUID: notification.uid, attributes: tuples)
      ).encoded())
  }

  func appAttributes(_ command: GetAppAttributesCommand) -> Result<[UInt8], ANCSRefusal> {
    var name = state.withLock { $0.center.displayName(of: command.appIdentifier) }
    // FAULT unknown-app-accepted: breaks 0xA2 when "the AppIdentifier does not exist".
    if faults.contains(.unknownAppAccepted) && name == nil { name = "" }
    guard let name else { return .failure(.invalidParameter) }
    var tuples: [AppAttribute] = []
    for id in command.attributes {
      guard id == .displayName else { return .failure(.invalidParameter) }
      // FAULT app-name-empty: breaks AppAttributeID "0 DisplayName": the name is empty.
      tuples.append(AppAttribute(id, text: faults.contains(.appNameEmpty) ? "" : name))
    }
    if quirks.reverseTuples { tuples.reverse() }
    return .success(
      DataSourceResponse.appAttributes(AppAttributesResponse(appIdentifier: command.appIdentifier, attributes: tuples))
        .encoded())
  }

  /// The refusal of an unknown or removed NotificationUID: 0xA2.
  var unknownUIDRefusal: ANCSRefusal {
    // FAULT unknown-uid-answered-a1: breaks 0xA2 when the NotificationUID "does not exist
    // (or no longer exists)".
    faults.contains(.unknownUIDAnsweredA1) ? .invalidCommand : .invalidParameter
  }

  /// Performs an action: the notification must exist (0xA2) and offer it (0xA3). Every
  /// action ends the notification (the caller removes the returned UID once the Write
  /// Response is out); on an incoming call positive answers and negative declines.
  func perform(_ command: PerformNotificationActionCommand, session: Int) -> Result<UInt32, ANCSRefusal> {
    let found = state.withLock { $0.center.notification(command.notificationUID) }
    guard let notification = found else { return .failure(unknownUIDRefusal) }
    let label: String?
    switch command.actionID {
    case .positive: label = notification.positiveAction
    case .negative: label = notification.negativeAction
    default: return .failure(.invalidParameter)
    }
    // FAULT missing-action-answered-a2: breaks 0xA3 when "the notification has no such action".
    guard let label else {
      return .failure(faults.contains(.missingActionAnsweredA2) ? .invalidParameter : .actionFailed)
    }
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
  func currentTime() -> [UInt8] {
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
  func localTimeInformation() -> [UInt8] {
    let offset = wallClock.now().utcOffsetSeconds / 900
    return [UInt8(bitPattern: Int8(clamping: offset)), 255]
  }

  /// The Date attribute for "now" on this phone's wall clock.
  public func dateNow() -> String {
    ANCSDate(secondsSinceEpoch: localNow()).description
  }

  /// The phone's local time, in seconds since 1970-01-01 local.
  func localNow() -> Int64 {
    let (seconds, offset) = wallClock.now()
    return seconds + Int64(offset) + state.withLock { $0.timeShift }
  }
}
