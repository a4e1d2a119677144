import ATT
import Runtime
import Wire

/// A service found by discovery: its UUID and handle range.
public struct DiscoveredService: Hashable, Sendable {
  public var uuid: BluetoothUUID
  public var range: HandleRange

  public init(uuid: BluetoothUUID, range: HandleRange) {
    self.uuid = uuid
    self.range = range
  }
}

/// A characteristic found inside a service.
public struct DiscoveredCharacteristic: Hashable, Sendable {
  public var uuid: BluetoothUUID
  public var properties: CharacteristicProperties
  public var declarationHandle: UInt16
  public var valueHandle: UInt16
  /// The last handle that belongs to this characteristic (its descriptors end here).
  public var endHandle: UInt16

  public init(
    uuid: BluetoothUUID, properties: CharacteristicProperties, declarationHandle: UInt16, valueHandle: UInt16,
    endHandle: UInt16
  ) {
    self.uuid = uuid
    self.properties = properties
    self.declarationHandle = declarationHandle
    self.valueHandle = valueHandle
    self.endHandle = endHandle
  }
}

/// A descriptor found inside a characteristic.
public struct DiscoveredDescriptor: Hashable, Sendable {
  public var handle: UInt16
  public var uuid: BluetoothUUID

  public init(handle: UInt16, uuid: BluetoothUUID) {
    self.handle = handle
    self.uuid = uuid
  }
}

/// The client side of GATT over one ATT connection: discovery, reads, writes, subscriptions
/// and the notification and indication streams, dispatched by value handle. An actor on its
/// connection's executor: its handlers are kept and called there, one at a time, with no
/// lock.
public actor GATTClient {
  public nonisolated let connection: ATTConnection
  /// A handler in a struct, so the dictionary stores the closure as it was made: a bare
  /// closure as a dictionary value is stored in its generic form, and every call (one per
  /// notification) then goes through a conversion thunk, an extra async frame each way.
  private struct Handler {
    let call: ValueHandler
  }
  /// Who takes a characteristic's notifications and indications: isolated to the client, so
  /// it runs on the connection's executor, where the value arrives, in a plain call.
  public typealias ValueHandler = @Sendable (isolated GATTClient, ATTValueEvent) -> Void
  /// Who takes the answer of a read or write started without waiting: isolated to the
  /// client, so it too runs where the answer arrives, in a plain call.
  public typealias Answer<Value> = @Sendable (isolated GATTClient, Result<Value, ATTError>) -> Void
  /// Unchecked for exclusivity at run time, as `ATTConnection`'s machine is: looked up for
  /// every value received, in a plain access with no callback inside.
  @exclusivity(unchecked) private var byHandle: [UInt16: Handler] = [:]
  private var other: Handler?

  /// The connection's executor: the client runs where the connection does.
  public nonisolated var unownedExecutor: UnownedSerialExecutor { connection.unownedExecutor }

  /// Takes over the connection's notification and indication handler.
  public init(connection: ATTConnection) async {
    self.connection = connection
    // The client and its connection share one executor: from the connection's callback to
    // the client is a plain call (`assumeIsolated(passing:)`), not a hop.
    await connection.setValueHandler { [self] _, event in
      assumeIsolated(passing: event) { client, event in client.dispatch(event) }
    }
  }

  private func dispatch(_ event: ATTValueEvent) {
    (byHandle[event.handle] ?? other)?.call(self, event)
  }

  /// Hands a result to `onAnswer` from a callback of the connection (see `init`).
  private nonisolated func answer<Value>(_ onAnswer: @escaping Answer<Value>, _ result: Result<Value, ATTError>) {
    assumeIsolated(passing: (onAnswer, result)) { client, answer in answer.0(client, answer.1) }
  }

  /// Sends `request` from the client's executor (the connection's), `onAnswer` taking its
  /// answer there.
  private func request(_ request: ATTPDU, onAnswer: @escaping ATTConnection.Answer) {
    connection.assumeIsolated(passing: (request, onAnswer)) { connection, request in
      connection.request(request.0, onAnswer: request.1)
    }
  }

  /// Calls `handler` for every notification or indication of `valueHandle`; nil removes it.
  /// Handlers run on the connection's receive loop and must not block.
  public func onValue(_ valueHandle: UInt16, _ handler: ValueHandler?) {
    byHandle[valueHandle] = handler.map(Handler.init)
  }

  /// Calls `handler` for values of handles without their own handler.
  public func onOtherValues(_ handler: ValueHandler?) {
    other = handler.map(Handler.init)
  }

  // MARK: - Discovery

  /// Primary services with this UUID (Discover Primary Service by Service UUID: Find By Type
  /// Value on 0x2800).
  public func discoverPrimaryServices(_ uuid: BluetoothUUID) async throws(ATTError) -> [DiscoveredService] {
    var found: [DiscoveredService] = []
    try await paginate(HandleRange.all) { range throws(ATTError) in
      let answer = try await connection.request(
        .findByTypeValueRequest(FindByTypeValueRequest(range: range, type: 0x2800, value: uuid.littleEndian)))
      guard case .findByTypeValueResponse(let response) = answer else {
        throw .invalidResponse("expected Find By Type Value Response")
      }
      found += response.ranges.map { DiscoveredService(uuid: uuid, range: $0) }
      return response.ranges.map(\.end).max()
    }
    return found
  }

  /// Every primary service (Discover All Primary Services: Read By Group Type on 0x2800).
  public func discoverAllPrimaryServices() async throws(ATTError) -> [DiscoveredService] {
    var found: [DiscoveredService] = []
    try await paginate(HandleRange.all) { range throws(ATTError) in
      let answer = try await connection.request(
        .readByGroupTypeRequest(ReadByGroupTypeRequest(range: range, type: .primaryService)))
      guard case .readByGroupTypeResponse(let response) = answer else {
        throw .invalidResponse("expected Read By Group Type Response")
      }
      for entry in response.entries {
        guard let uuid = BluetoothUUID(littleEndian: entry.value) else {
          throw .invalidResponse("service UUID of \(entry.value.count) bytes")
        }
        found.append(DiscoveredService(uuid: uuid, range: HandleRange(entry.handle, entry.endGroupHandle)))
      }
      return response.entries.map(\.endGroupHandle).max()
    }
    return found
  }

  /// The characteristics inside a service's range (Read By Type on 0x2803), with the end
  /// handle of each one.
  public func discoverCharacteristics(of service: DiscoveredService) async throws(ATTError)
    -> [DiscoveredCharacteristic]
  {
    var declarations: [(handle: UInt16, properties: UInt8, value: UInt16, uuid: BluetoothUUID)] = []
    try await paginate(service.range) { range throws(ATTError) in
      let answer = try await connection.request(
        .readByTypeRequest(ReadByTypeRequest(range: range, type: .characteristic)))
      guard case .readByTypeResponse(let response) = answer else {
        throw .invalidResponse("expected Read By Type Response")
      }
      for entry in response.entries {
        let v = entry.value
        guard v.count == 5 || v.count == 19, let uuid = BluetoothUUID(littleEndian: v[3...]) else {
          throw .invalidResponse("characteristic declaration of \(v.count) bytes at handle \(entry.handle)")
        }
        declarations.append((entry.handle, v[0], UInt16(v[1]) | UInt16(v[2]) << 8, uuid))
      }
      return response.entries.map(\.handle).max()
    }
    return declarations.enumerated().map { index, declaration in
      let next = index + 1 < declarations.count ? declarations[index + 1].handle - 1 : service.range.end
      return DiscoveredCharacteristic(
        uuid: declaration.uuid, properties: CharacteristicProperties(rawValue: declaration.properties),
        declarationHandle: declaration.handle, valueHandle: declaration.value, endHandle: max(next, declaration.value))
    }
  }

  /// The descriptors of a characteristic (Find Information after its value handle).
  public func discoverDescriptors(of characteristic: DiscoveredCharacteristic) async throws(ATTError)
    -> [DiscoveredDescriptor]
  {
    guard characteristic.valueHandle < characteristic.endHandle else { return [] }
    var found: [DiscoveredDescriptor] = []
    try await paginate(HandleRange(characteristic.valueHandle + 1, characteristic.endHandle)) {
      range throws(ATTError) in
      let answer = try await connection.request(.findInformationRequest(FindInformationRequest(range: range)))
      guard case .findInformationResponse(let response) = answer else {
        throw .invalidResponse("expected Find Information Response")
      }
      found += response.entries.map { DiscoveredDescriptor(handle: $0.handle, uuid: $0.type) }
      return response.entries.map(\.handle).max()
    }
    return found
  }

  /// Repeats a discovery request over `range`, continuing after the last handle each
  /// answer reached, until Attribute Not Found or the end of the range. A server whose
  /// answers do not move forward is an invalid response, never an endless loop.
  private func paginate(
    _ range: HandleRange, _ step: (HandleRange) async throws(ATTError) -> UInt16?
  ) async throws(ATTError) {
    var start = range.start
    while start <= range.end && start != 0 {
      let last: UInt16?
      do {
        last = try await step(HandleRange(start, range.end))
      } catch {
        if error.errorCode == .attributeNotFound { return }
        throw error
      }
      guard let last, last >= start else {
        throw .invalidResponse("discovery did not advance past 0x\(String(start, radix: 16))")
      }
      if last >= range.end { return }
      start = last + 1
    }
  }

  // MARK: - Values

  /// Reads a value, following with Read Blob while the answers fill ATT_MTU - 1 (long values
  /// up to the 512-byte attribute maximum).
  public func read(_ handle: UInt16) async throws(ATTError) -> [UInt8] {
    let answer = try await connection.request(.readRequest(ReadRequest(handle: handle)))
    guard case .readResponse(let response) = answer else { throw .invalidResponse("expected Read Response") }
    var value = response.value
    var part = value.count
    while part == connection.mtu - 1 && value.count < Self.longestValue {
      let next: ATTPDU
      do {
        next = try await connection.request(
          .readBlobRequest(ReadBlobRequest(handle: handle, offset: UInt16(value.count))))
      } catch {
        if error.errorCode == .attributeNotLong || error.errorCode == .invalidOffset { break }
        throw error
      }
      guard case .readBlobResponse(let blob) = next else { throw .invalidResponse("expected Read Blob Response") }
      value += blob.value
      part = blob.value.count
    }
    return value
  }

  /// `read` without waiting: the Read Request is sent now or queued behind the request
  /// outstanding, each Read Blob Request from the answer before it; `onAnswer` runs exactly
  /// once, on the receive loop, with the whole value.
  public func startRead(
    _ handle: UInt16, onAnswer: @escaping Answer<[UInt8]>
  ) {
    request(.readRequest(ReadRequest(handle: handle))) { [self] _, result in
      switch result {
      case .success(.readResponse(let response)):
        assumeIsolated(passing: (handle, response.value, onAnswer)) { client, read in
          client.continueRead(read.0, read.1, last: read.1.count, onAnswer: read.2)
        }
      case .success: answer(onAnswer, .failure(.invalidResponse("expected Read Response")))
      case .failure(let error): answer(onAnswer, .failure(error))
      }
    }
  }

  /// One Read Blob step of `startRead`, while the last part filled ATT_MTU - 1.
  private func continueRead(
    _ handle: UInt16, _ value: [UInt8], last: Int,
    onAnswer: @escaping Answer<[UInt8]>
  ) {
    guard last == connection.mtu - 1 && value.count < Self.longestValue else {
      return onAnswer(self, .success(value))
    }
    let request = ReadBlobRequest(handle: handle, offset: UInt16(value.count))
    self.request(.readBlobRequest(request)) { [self] _, result in
      switch result {
      case .success(.readBlobResponse(let blob)):
        assumeIsolated(passing: (handle, value + blob.value, blob.value.count, onAnswer)) { client, read in
          client.continueRead(read.0, read.1, last: read.2, onAnswer: read.3)
        }
      case .success: answer(onAnswer, .failure(.invalidResponse("expected Read Blob Response")))
      case .failure(let error) where error.errorCode == .attributeNotLong || error.errorCode == .invalidOffset:
        answer(onAnswer, .success(value))
      case .failure(let error): answer(onAnswer, .failure(error))
      }
    }
  }

  /// The values of the characteristics of this type in `range` (Read Using Characteristic
  /// UUID, Vol 3 Part G 4.8.2: one Read By Type Request), as (value handle, value); empty
  /// when there is none (Attribute Not Found).
  public func read(type: BluetoothUUID, in range: HandleRange = HandleRange(0x0001, 0xFFFF)) async throws(ATTError)
    -> [(handle: UInt16, value: [UInt8])]
  {
    let answer: ATTPDU
    do {
      answer = try await connection.request(.readByTypeRequest(ReadByTypeRequest(range: range, type: type)))
    } catch {
      if error.errorCode == .attributeNotFound { return [] }
      throw error
    }
    guard case .readByTypeResponse(let response) = answer else {
      throw .invalidResponse("expected Read By Type Response")
    }
    return response.entries.map { ($0.handle, $0.value) }
  }

  /// Write with response.
  public func write(_ handle: UInt16, _ value: [UInt8]) async throws(ATTError) {
    let answer = try await connection.request(.writeRequest(WriteRequest(handle: handle, value: value)))
    guard case .writeResponse = answer else { throw .invalidResponse("expected Write Response") }
  }

  /// Write with response, without waiting for the answer (see `ATTConnection.request(_:onAnswer:)`):
  /// sent now or queued behind the request outstanding; `onAnswer` runs exactly once, on
  /// the receive loop when the answer comes.
  ///
  /// A value longer than ATT_MTU - 3 bytes (up to ATT's 512) goes as a long write: Prepare
  /// Write Requests of ATT_MTU - 5 bytes, each echo checked, then an Execute Write, whose
  /// answer is the write's (Vol 3 Part G 4.9.4). A failure on the way cancels what the
  /// server has queued (Execute Write with flags 0x00).
  public func startWrite(
    _ handle: UInt16, _ value: [UInt8], onAnswer: @escaping Answer<Void>
  ) {
    if value.count > connection.mtu - 3 && value.count <= Self.longestValue {
      return startLongWrite(handle, value, from: 0, onAnswer: onAnswer)
    }
    request(.writeRequest(WriteRequest(handle: handle, value: value))) { [self] _, result in
      switch result {
      case .success(.writeResponse): answer(onAnswer, .success(()))
      case .success: answer(onAnswer, .failure(.invalidResponse("expected Write Response")))
      case .failure(let error): answer(onAnswer, .failure(error))
      }
    }
  }

  /// The longest attribute value ATT allows (Vol 3 Part F 3.2.9).
  static let longestValue = 512

  /// One step of a long write: the Prepare Write Request of the part at `offset`, or the
  /// Execute Write Request once every part is queued. Each step's answer, on the receive
  /// loop, sends (or queues) the next.
  private func startLongWrite(
    _ handle: UInt16, _ value: [UInt8], from offset: Int,
    onAnswer: @escaping Answer<Void>
  ) {
    let part = max(1, connection.mtu - 5)
    let prepared =
      offset < value.count
      ? PrepareWriteRequest(
        handle: handle, offset: UInt16(offset), value: Array(value[offset..<min(value.count, offset + part)])) : nil
    let request: ATTPDU =
      prepared.map { .prepareWriteRequest($0) } ?? .executeWriteRequest(ExecuteWriteRequest(write: true))
    self.request(request) { [self] connection, result in
      guard let prepared else {
        switch result {
        case .success(.executeWriteResponse): answer(onAnswer, .success(()))
        case .success: answer(onAnswer, .failure(.invalidResponse("expected Execute Write Response")))
        case .failure(let error): answer(onAnswer, .failure(error))
        }
        return
      }
      let failure: ATTError
      switch result {
      case .success(.prepareWriteResponse(let echo))
      where echo.handle == prepared.handle && echo.offset == prepared.offset && echo.value == prepared.value:
        assumeIsolated(passing: (handle, value, offset + prepared.value.count, onAnswer)) { client, next in
          client.startLongWrite(next.0, next.1, from: next.2, onAnswer: next.3)
        }
        return
      case .success(.prepareWriteResponse):
        failure = .invalidResponse("Prepare Write Response does not echo the part sent at offset \(offset)")
      case .success: failure = .invalidResponse("expected Prepare Write Response")
      case .failure(let error): failure = error
      }
      // Empties the server's queue of prepared writes; its answer is not waited for.
      if failure != .disconnected && failure != .timeout {
        connection.request(.executeWriteRequest(ExecuteWriteRequest(write: false))) { _, _ in }
      }
      answer(onAnswer, .failure(failure))
    }
  }

  /// Write without response: the Write Command is put on the bearer now. Throws what the
  /// connection refuses (a value too long, a link that is down).
  public func writeWithoutResponse(_ handle: UInt16, _ value: [UInt8]) throws(ATTError) {
    let command = WriteCommand(handle: handle, value: value)
    try connection.assumeIsolated(passing: command) { connection, command in
      Result { () throws(ATTError) in try connection.send(.writeCommand(command)) }
    }.get()
  }

  /// Writes a characteristic's CCCD: notifications, indications, or [] to unsubscribe.
  public func configure(cccd handle: UInt16, _ value: CCCDValue) async throws(ATTError) {
    try await write(handle, value.bytes)
  }

  /// Finds the CCCD of `characteristic`, installs `handler` and enables notifications (or
  /// indications). Returns the CCCD handle, for unsubscribing.
  @discardableResult
  public func subscribe(
    _ characteristic: DiscoveredCharacteristic, indications: Bool = false,
    handler: @escaping ValueHandler
  ) async throws(ATTError) -> UInt16 {
    let descriptors = try await discoverDescriptors(of: characteristic)
    guard let cccd = descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration }) else {
      throw .invalidResponse("characteristic \(characteristic.uuid) has no CCCD")
    }
    onValue(characteristic.valueHandle, handler)
    try await configure(cccd: cccd.handle, indications ? .indications : .notifications)
    return cccd.handle
  }

  /// Disables a subscription and removes its handler.
  public func unsubscribe(_ characteristic: DiscoveredCharacteristic, cccd: UInt16) async throws(ATTError) {
    try await configure(cccd: cccd, [])
    onValue(characteristic.valueHandle, nil)
  }
}
