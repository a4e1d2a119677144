import ATT
import Runtime
import Synchronization
import Wire

/// One client's view of a `GATTServer`: its ATT connection and its CCCD values (a CCCD is
/// per client, Vol 3 Part G 3.3.3.3). Answers every request of the implemented subset.
///
/// An actor on its connection's executor: requests are served there, one at a time, and
/// the CCCDs and prepared writes need no lock, and the database is read from the session's
/// own copy, brought up to date when the server's version moved (see `GATTServer`). The
/// characteristics' handlers are called isolated to the session, under no lock.
///
/// The session holds its server (strongly): a server dropped by its owner while a
/// connection still runs goes on answering until the connection's `run()` returns, which
/// lets go of the session.
public actor GATTSession: ATTServerHandler {
  public nonisolated let server: GATTServer
  public nonisolated let connection: ATTConnection
  // Unchecked for exclusivity at run time, as `ATTConnection`'s machine is: read or
  // changed for every request and notification, in plain accesses with no callback inside.
  @exclusivity(unchecked) private var cccds: [UInt16: CCCDValue] = [:]
  /// Prepared writes not yet executed (Prepare Write Request), in arrival order.
  private var prepared: [PreparedWrite] = []
  /// The security level whose view of the database this client has been given (services
  /// shown only from a higher one are hidden from it).
  private var shown = SecurityLevel.unencrypted
  /// The server's database as this session last took it in, and its version.
  @exclusivity(unchecked) private var copy: GATTDatabase
  @exclusivity(unchecked) private var copyVersion: Int
  /// `copyVersion`, for the server, which keeps the removals a session has not yet seen.
  private nonisolated let seen: Atomic<Int>

  /// The connection's executor: the session serves where the connection runs.
  public nonisolated var unownedExecutor: UnownedSerialExecutor { connection.unownedExecutor }

  /// A part of the database this client's link does not reach yet.
  typealias Hidden = [(range: HandleRange, shownFrom: SecurityLevel)]

  private struct PreparedWrite: Sendable {
    var handle: UInt16
    var offset: UInt16
    var value: [UInt8]
  }

  /// At most this many prepared parts and bytes are queued per client; beyond them the
  /// server answers Prepare Queue Full (0x09). Enough for a 512-byte value at ATT_MTU 23.
  public static let preparedPartsLimit = 64
  static let preparedBytesLimit = 2048
  /// "The maximum length of an attribute value shall be 512 octets" (Vol 3 Part F 3.2.9).
  static let maximumValueLength = 512

  init(server: GATTServer, connection: ATTConnection, database: GATTDatabase, version: Int) {
    self.server = server
    self.connection = connection
    copy = database
    copyVersion = version
    seen = Atomic(version)
  }

  /// The version of the database this session has taken in.
  nonisolated var seenVersion: Int { seen.load(ordering: .acquiring) }

  /// The database in force: the session's copy, first brought up to date if the server's
  /// changed (one atomic load when it has not). The CCCDs of services removed since the
  /// copy are forgotten with it, so they go in the order the database changed.
  private var database: GATTDatabase {
    if server.currentVersion != copyVersion {
      let (database, version, removed) = server.database(since: copyVersion)
      for range in removed {
        cccds = cccds.filter { !(range.start...range.end).contains($0.key) }
      }
      copy = database
      copyVersion = version
      seen.store(version, ordering: .releasing)
    }
    return copy
  }

  /// This client's configuration for the characteristic whose value is at `valueHandle`.
  public func cccd(for valueHandle: UInt16) -> CCCDValue {
    // Subscriptions to removed services are dropped first.
    _ = database
    return cccds[valueHandle] ?? []
  }

  /// Sends a notification if this client enabled notifications for the characteristic: put
  /// on the link now. Returns whether it was sent. The value is cut to ATT_MTU - 3.
  @discardableResult
  public func notify(_ valueHandle: UInt16, _ value: [UInt8]) throws(ATTError) -> Bool {
    try notify(valueHandle, values: [value])
  }

  /// Sends notifications of `values`, in order, if this client enabled notifications for the
  /// characteristic, each put on the link now. Returns whether they were sent (false: not
  /// subscribed); throws when the link refused one (those after it are not sent). One call
  /// for a whole answer (the Data Source's fragments).
  @discardableResult
  public func notify(_ valueHandle: UInt16, values: [[UInt8]]) throws(ATTError) -> Bool {
    guard cccd(for: valueHandle).contains(.notifications) else { return false }
    try connection.assumeIsolated(passing: (valueHandle, values)) { connection, notifications in
      Result { () throws(ATTError) in
        for value in notifications.1 { try connection.notify(handle: notifications.0, value: value) }
      }
    }.get()
    return true
  }

  /// Sends an indication if this client enabled indications; awaits the confirmation.
  @discardableResult
  public func indicate(_ valueHandle: UInt16, _ value: [UInt8]) async throws(ATTError) -> Bool {
    guard cccd(for: valueHandle).contains(.indications) else { return false }
    try await connection.indicate(handle: valueHandle, value: value)
    return true
  }

  /// Drops every CCCD value, as a phone that silently loses its subscriptions does.
  public func clearSubscriptions() { cccds.removeAll() }

  /// Takes in the link's security level now: what it newly reaches is shown, the client told
  /// with Service Changed. Each request does this first; an owner that learns of a new level
  /// sooner calls it then.
  public func securityChanged() {
    for range in view(of: database).revealed { indicateServiceChanged(range) }
  }

  /// The parts of the database hidden from this client, after taking in the link's level,
  /// and the ranges the level newly reaches: the client is to be told them with Service
  /// Changed.
  private func view(of db: GATTDatabase) -> (hidden: Hidden, revealed: [HandleRange]) {
    let level = connection.securityLevel
    let (before, now) = (shown, max(shown, level))
    shown = now
    let hidden = db.hidden(below: now)
    // What was hidden before is looked at only when the level rose (once per link).
    guard now > before else { return (hidden, []) }
    let revealed = db.hidden(below: before).map(\.range).filter { range in
      !hidden.contains(where: { $0.range == range })
    }
    return (hidden, revealed)
  }

  /// Sends this client a Service Changed indication over `range` if it subscribed to it, or
  /// queues it behind the one unconfirmed; returns without waiting for the confirmation
  /// (which comes through the receive loop this may be called from). A failure is logged.
  func indicateServiceChanged(_ range: HandleRange) {
    // A session not subscribed does not take the database in here (it does when it next
    // serves, and the server keeps the removal until then); a subscribed one does, in case
    // Service Changed itself was removed.
    guard let handles = server.serviceChangedHandles, cccds[handles.value]?.contains(.indications) == true,
      cccd(for: handles.value).contains(.indications)
    else { return }
    var writer = ByteWriter()
    writer.u16(range.start)
    writer.u16(range.end)
    let logger = server.logger
    connection.assumeIsolated(passing: writer.bytes) { connection, value in
      connection.indicate(handle: handles.value, value: value) { _, result in
        if case .failure(let error) = result { logger.info("Service Changed indication not confirmed: \(error)") }
      }
    }
  }

  /// The error for an access to a hidden service's handle: the level the link lacks.
  private static func hiddenError(_ handle: UInt16, _ hidden: Hidden) -> ATTErrorCode? {
    guard let needed = hidden.first(where: { $0.range.start <= handle && handle <= $0.range.end })?.shownFrom else {
      return nil
    }
    return needed == .authenticated ? .insufficientAuthentication : .insufficientEncryption
  }

  /// The attributes of `range` this client sees.
  private static func visible(_ db: GATTDatabase, _ range: HandleRange, _ hidden: Hidden) -> ArraySlice<Attribute> {
    let all = db.attributes[db.indices(in: range)]
    guard !hidden.isEmpty else { return all }
    return all.filter { hiddenError($0.handle, hidden) == nil }[...]
  }

  // MARK: - Requests

  /// Serves a request as the link's level now shows the database. What that level newly
  /// reaches is told with Service Changed after the answer: when the request is the one that
  /// subscribes to Service Changed, the subscription is in place by then.
  public func handle(_ pdu: ATTPDU, on connection: isolated ATTConnection) -> ATTServerReply {
    assumeIsolated(passing: pdu) { session, pdu in session.handle(pdu) }
  }

  private func handle(_ pdu: ATTPDU) -> ATTServerReply {
    // One look at the database for both the view and the answer.
    let db = database
    let (hidden, revealed) = view(of: db)
    var reply = serve(pdu, db, hidden: hidden)
    guard !revealed.isEmpty else { return reply }
    let after = reply.afterResponse
    reply.afterResponse = { [self] connection in
      assumeIsolated(passing: revealed) { session, revealed in
        for range in revealed { session.indicateServiceChanged(range) }
      }
      after?(connection)
    }
    return reply
  }

  private func serve(_ pdu: ATTPDU, _ db: GATTDatabase, hidden: Hidden) -> ATTServerReply {
    let opcode = pdu.opcode
    func fail(_ handle: UInt16, _ code: ATTErrorCode) -> ATTServerReply {
      ATTServerReply(.errorResponse(ErrorResponse(requestOpcode: opcode, handle: handle, errorCode: code)))
    }
    let mtu = connection.mtu
    switch pdu {
    case .findInformationRequest(let request):
      guard request.range.isValid else { return fail(request.range.start, .invalidHandle) }
      let found = Self.visible(db, request.range, hidden)
      guard let first = found.first else { return fail(request.range.start, .attributeNotFound) }
      let wide = !first.type.is16Bit
      let room = (mtu - 2) / (wide ? 18 : 4)
      let entries = found.prefix { $0.type.is16Bit != wide }.prefix(room).map {
        FindInformationResponse.Entry(handle: $0.handle, type: $0.type)
      }
      return ATTServerReply(.findInformationResponse(FindInformationResponse(entries: entries)))

    case .findByTypeValueRequest(let request):
      guard request.range.isValid else { return fail(request.range.start, .invalidHandle) }
      let type = BluetoothUUID.bit16(request.type)
      let matches = Self.visible(db, request.range, hidden).filter {
        $0.type == type && $0.storedValue == request.value
      }
      guard !matches.isEmpty else { return fail(request.range.start, .attributeNotFound) }
      let ranges = matches.prefix((mtu - 1) / 4).map { attribute -> HandleRange in
        if case .serviceDeclaration(let end) = attribute.role { return HandleRange(attribute.handle, end) }
        return HandleRange(attribute.handle, attribute.handle)
      }
      return ATTServerReply(.findByTypeValueResponse(FindByTypeValueResponse(ranges: ranges)))

    case .readByTypeRequest(let request):
      guard request.range.isValid else { return fail(request.range.start, .invalidHandle) }
      let matches = Self.visible(db, request.range, hidden).filter { $0.type == request.type }
      guard let first = matches.first else { return fail(request.range.start, .attributeNotFound) }
      // "the attribute values ... shall be the same length"; stop at the first that differs.
      // An error on the first attribute is reported; later ones end the list.
      var entries: [HandleValue] = []
      let limit = min(mtu - 4, 253)
      for attribute in matches {
        let value: [UInt8]
        switch readValue(attribute) {
        case .failure(let code):
          if attribute.handle == first.handle { return fail(attribute.handle, code) }
          return ATTServerReply(.readByTypeResponse(ReadByTypeResponse(entries: entries)))
        case .success(let read): value = Array(read.prefix(limit))
        }
        if let length = entries.first?.value.count, length != value.count { break }
        if (entries.count + 1) * (2 + value.count) > mtu - 2 { break }
        entries.append(HandleValue(handle: attribute.handle, value: value))
      }
      return ATTServerReply(.readByTypeResponse(ReadByTypeResponse(entries: entries)))

    case .readByGroupTypeRequest(let request):
      guard request.range.isValid else { return fail(request.range.start, .invalidHandle) }
      guard request.type == .primaryService || request.type == .secondaryService else {
        return fail(request.range.start, .unsupportedGroupType)
      }
      var entries: [GroupValue] = []
      for attribute in Self.visible(db, request.range, hidden) where attribute.type == request.type {
        guard case .serviceDeclaration(let end) = attribute.role else { continue }
        let value = attribute.storedValue
        if let length = entries.first?.value.count, length != value.count { break }
        if (entries.count + 1) * (4 + value.count) > mtu - 2 { break }
        entries.append(GroupValue(handle: attribute.handle, endGroupHandle: end, value: value))
      }
      guard !entries.isEmpty else { return fail(request.range.start, .attributeNotFound) }
      return ATTServerReply(.readByGroupTypeResponse(ReadByGroupTypeResponse(entries: entries)))

    case .readRequest(let request):
      if let code = Self.hiddenError(request.handle, hidden) { return fail(request.handle, code) }
      guard let index = db.index(of: request.handle) else { return fail(request.handle, .invalidHandle) }
      switch readValue(db.attributes[index]) {
      case .failure(let code): return fail(request.handle, code)
      case .success(let value):
        return ATTServerReply(.readResponse(ReadResponse(value: Array(value.prefix(mtu - 1)))))
      }

    case .readBlobRequest(let request):
      if let code = Self.hiddenError(request.handle, hidden) { return fail(request.handle, code) }
      guard let index = db.index(of: request.handle) else { return fail(request.handle, .invalidHandle) }
      switch readValue(db.attributes[index]) {
      case .failure(let code): return fail(request.handle, code)
      case .success(let value):
        let offset = Int(request.offset)
        guard offset <= value.count else { return fail(request.handle, .invalidOffset) }
        return ATTServerReply(.readBlobResponse(ReadBlobResponse(value: Array(value[offset...].prefix(mtu - 1)))))
      }

    case .writeRequest(let request):
      if let code = Self.hiddenError(request.handle, hidden) { return fail(request.handle, code) }
      switch write(request.handle, request.value) {
      case .refused(let code): return fail(request.handle, code)
      case .accepted(let then): return ATTServerReply(.writeResponse(WriteResponse()), afterResponse: then)
      }

    case .writeCommand(let command):
      // "If the server cannot write this attribute for any reason the command shall be
      // ignored" (Vol 3 Part F 3.4.5.3).
      if Self.hiddenError(command.handle, hidden) == nil,
        case .accepted(let then) = write(command.handle, command.value, command: true)
      {
        return ATTServerReply(nil, afterResponse: then)
      }
      return ATTServerReply(nil)

    case .prepareWriteRequest(let request):
      // A part over ATT_MTU - 5 bytes came in a PDU over ATT_MTU, and its echo could not be sent.
      guard request.value.count <= mtu - 5 else { return fail(request.handle, .invalidPDU) }
      if let code = Self.hiddenError(request.handle, hidden) ?? writeRefusal(request.handle) {
        return fail(request.handle, code)
      }
      let bytes = prepared.reduce(request.value.count) { $0 + $1.value.count }
      guard prepared.count < Self.preparedPartsLimit, bytes <= Self.preparedBytesLimit else {
        return fail(request.handle, .prepareQueueFull)
      }
      prepared.append(PreparedWrite(handle: request.handle, offset: request.offset, value: request.value))
      return ATTServerReply(
        .prepareWriteResponse(
          PrepareWriteResponse(handle: request.handle, offset: request.offset, value: request.value)))

    case .executeWriteRequest(let request):
      let queue = prepared
      prepared = []
      guard request.write else { return ATTServerReply(.executeWriteResponse(ExecuteWriteResponse())) }
      return execute(queue, fail)

    default:
      return opcode.needsResponse ? fail(0, .requestNotSupported) : ATTServerReply(nil)
    }
  }

  /// Executes prepared writes: each handle's parts are put together at their offsets (an
  /// offset past the value so far is Invalid Offset, a value over 512 bytes Invalid Attribute
  /// Value Length, and then nothing is written), then each value is written once, as one
  /// Write Request would write it.
  private func execute(_ queue: [PreparedWrite], _ fail: (UInt16, ATTErrorCode) -> ATTServerReply) -> ATTServerReply {
    var values: [(handle: UInt16, value: [UInt8])] = []
    for part in queue {
      let index = values.firstIndex { $0.handle == part.handle } ?? values.endIndex
      if index == values.endIndex { values.append((part.handle, [])) }
      let offset = Int(part.offset)
      guard offset <= values[index].value.count else { return fail(part.handle, .invalidOffset) }
      values[index].value = Array(values[index].value[..<offset]) + part.value
      guard values[index].value.count <= Self.maximumValueLength else {
        return fail(part.handle, .invalidAttributeValueLength)
      }
    }
    var thens: [@Sendable (isolated ATTConnection) -> Void] = []
    for (handle, value) in values {
      switch write(handle, value) {
      case .refused(let code): return fail(handle, code)
      case .accepted(let then): if let then { thens.append(then) }
      }
    }
    let runAll = thens
    var after: (@Sendable (isolated ATTConnection) -> Void)?
    if !runAll.isEmpty { after = { @Sendable connection in for then in runAll { then(connection) } } }
    return ATTServerReply(.executeWriteResponse(ExecuteWriteResponse()), afterResponse: after)
  }

  /// Why a write to `handle` would be refused before its value is looked at (Prepare Write
  /// checks this at once, Vol 3 Part F 3.4.6.1); nil when it may be written.
  private func writeRefusal(_ handle: UInt16) -> ATTErrorCode? {
    let db = database
    let attribute = db.index(of: handle).map { db.attributes[$0] }
    guard let attribute else { return .invalidHandle }
    switch attribute.role {
    case .serviceDeclaration, .characteristicDeclaration, .constantDescriptor:
      return .writeNotPermitted
    case .value(let characteristic):
      guard characteristic.properties.contains(.write), characteristic.write != nil else { return .writeNotPermitted }
      return securityError(characteristic)
    case .cccd(_, let characteristic):
      return securityError(characteristic)
    }
  }

  /// The error a link below the characteristic's level gets: its chosen refusal, else
  /// Insufficient Authentication when an authenticated key is needed, Insufficient
  /// Encryption when only encryption is missing.
  private func securityError(_ characteristic: CharacteristicDefinition) -> ATTErrorCode? {
    let required = characteristic.security
    if connection.securityLevel >= required { return nil }
    if let refusal = characteristic.refusal { return refusal }
    return required == .authenticated ? .insufficientAuthentication : .insufficientEncryption
  }

  private func readValue(_ attribute: Attribute) -> Result<[UInt8], ATTErrorCode> {
    switch attribute.role {
    case .serviceDeclaration, .characteristicDeclaration, .constantDescriptor:
      return .success(attribute.storedValue)
    case .value(let characteristic):
      guard characteristic.properties.contains(.read), let read = characteristic.read else {
        return .failure(.readNotPermitted)
      }
      if let error = securityError(characteristic) { return .failure(error) }
      return .success(read(self))
    case .cccd(let valueHandle, let characteristic):
      if let error = securityError(characteristic) { return .failure(error) }
      let value = cccd(for: valueHandle).rawValue
      return .success([UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)])
    }
  }

  private func write(_ handle: UInt16, _ value: [UInt8], command: Bool = false) -> WriteOutcome {
    let db = database
    let attribute = db.index(of: handle).map { db.attributes[$0] }
    guard let attribute else { return .refused(.invalidHandle) }
    switch attribute.role {
    case .serviceDeclaration, .characteristicDeclaration, .constantDescriptor:
      return .refused(.writeNotPermitted)
    case .value(let characteristic):
      let allowed: CharacteristicProperties = command ? .writeWithoutResponse : .write
      guard characteristic.properties.contains(allowed), let write = characteristic.write else {
        return .refused(.writeNotPermitted)
      }
      if let error = securityError(characteristic) { return .refused(error) }
      return write(self, value)
    case .cccd(let valueHandle, let characteristic):
      if let error = securityError(characteristic) { return .refused(error) }
      guard value.count == 2 else { return .refused(.invalidAttributeValueLength) }
      let requested = CCCDValue(rawValue: UInt16(value[0]) | UInt16(value[1]) << 8)
      var supported: CCCDValue = []
      if characteristic.properties.contains(.notify) { supported.insert(.notifications) }
      if characteristic.properties.contains(.indicate) { supported.insert(.indications) }
      // Reserved bits, or a mode the characteristic does not support.
      guard supported.isSuperset(of: requested) else { return .refused(.cccdImproperlyConfigured) }
      cccds[valueHandle] = requested
      server.logger.debug(
        "\(connection.bearer.name): CCCD 0x\(Hex.encode([UInt8(valueHandle >> 8), UInt8(valueHandle & 0xff)], separator: "")) = \(requested.rawValue)"
      )
      guard let subscribed = characteristic.subscribed else { return .accepted }
      return .accepted(then: { [self] _ in
        assumeIsolated(passing: (subscribed, requested)) { session, change in change.0(session, change.1) }
      })
    }
  }
}
