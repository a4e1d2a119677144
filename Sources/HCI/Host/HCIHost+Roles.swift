import ATT
import Runtime
import Wire

/// What `setUp()` learned from the controller.
public struct ControllerSetup: Hashable, Sendable {
  /// Read_BD_ADDR (zero on controllers without one, such as Bumble's virtual ones).
  public var publicAddress: BDAddress
  /// The random static address this host set and advertises or connects with.
  public var randomAddress: BDAddress
  /// Data bytes per ACL packet to the controller.
  public var aclDataPacketLength: Int
  /// ACL packets the controller can hold at once.
  public var totalNumACLDataPackets: Int
}

/// What a peripheral advertises (connectable undirected, ADV_IND).
public struct Advertisement: Hashable, Sendable {
  public var name: String
  /// Solicited 128-bit services (AD type 0x15): ANCS for a watch.
  public var solicitedServices: [BluetoothUUID]
  /// In units of 0.625 ms; 0x0020 = 20 ms, which a virtual controller needs to connect fast.
  public var interval: UInt16

  public init(name: String, solicitedServices: [BluetoothUUID] = [], interval: UInt16 = 0x0020) {
    self.name = name
    self.solicitedServices = solicitedServices
    self.interval = interval
  }

  /// Flags, the solicitation and the name (shortened if it does not fit).
  public var advertisingData: AdvertisingData {
    .peripheral(name: name, solicitedServices: solicitedServices)
  }

  /// The complete name, when the advertising data had to shorten it and it fits here.
  public var scanResponseData: AdvertisingData {
    guard advertisingData.localName?.isComplete == false, name.utf8.count <= AdvertisingData.legacyMaximum - 2
    else { return AdvertisingData([]) }
    return AdvertisingData([.completeLocalName(name)])
  }
}

/// Which advertiser a central connects to.
public enum ScanFilter: Hashable, Sendable, CustomStringConvertible {
  /// A connectable advertiser that solicits one of these services (ANCS or AMS: an accessory
  /// waiting for a phone).
  case solicits([BluetoothUUID])
  /// The advertiser with this address.
  case address(BDAddress)

  public func matches(_ report: ScanReport) -> Bool {
    guard report.isConnectable else { return false }
    switch self {
    case .solicits(let services):
      guard let data = try? AdvertisingData(decoding: report.data) else { return false }
      return services.contains(where: data.solicits)
    case .address(let address): return report.address == address
    }
  }

  public var description: String {
    switch self {
    case .solicits(let services): return "a device soliciting " + services.map(\.description).joined(separator: " or ")
    case .address(let address): return "device \(address)"
    }
  }
}

extension HCIHost {
  /// LE set-up: Reset ("the TCP server keeps controller state across clients"), the event
  /// masks this host handles, the ACL buffers (LE Read Buffer Size, or Read Buffer Size when
  /// the LE length is 0: shared buffers), Read BD_ADDR, and a random static address (Vol 6
  /// Part B 1.3.2.1: two top bits set, the rest neither all 0 nor all 1) that advertising and
  /// connections use.
  @discardableResult
  public func setUp(randomAddress: BDAddress? = nil) async throws(HCIHostError) -> ControllerSetup {
    try await execute(Reset())
    // A host that quit may have left the controller scanning or advertising, and not every
    // controller undoes that on Reset (Bumble's virtual one keeps both): then LE Set Scan
    // Parameters or LE Set Advertising Parameters would be refused with Command Disallowed.
    // Both are turned off here; a refusal (already off) is fine.
    _ = try? await execute(LESetScanEnable(scanEnable: false))
    _ = try? await execute(LESetAdvertisingEnable(advertisingEnable: false))
    try await execute(SetEventMask(eventMask: SetEventMask.leHost))
    // LE Extended Advertising Report (bit 12) too: controllers with extended advertising send it
    // even to a legacy scanner.
    try await execute(LESetEventMask(leEventMask: LESetEventMask.leHost | 1 << 12))
    let le = try await execute(LEReadBufferSize(), returning: LEReadBufferSize.ReturnParameters.self)
    var length = Int(le.leACLDataPacketLength)
    var count = Int(le.totalNumLEACLDataPackets)
    if length == 0 || count == 0 {
      let shared = try await execute(ReadBufferSize(), returning: ReadBufferSize.ReturnParameters.self)
      length = Int(shared.aclDataPacketLength)
      count = Int(shared.totalNumACLDataPackets)
    }
    let (finalLength, finalCount) = (max(1, length), max(1, count))
    await onLoop { state in
      state.aclPacketLength = finalLength
      state.acl = ACLFlow(capacity: finalCount)
    }
    let bdAddr = try await execute(ReadBDADDR(), returning: ReadBDADDR.ReturnParameters.self)
    let random = randomAddress ?? Self.randomStaticAddress()
    try await execute(LESetRandomAddress(randomAddress: random))
    state.withLock { $0.randomAddress = random }
    let setup = ControllerSetup(
      publicAddress: bdAddr.address, randomAddress: random, aclDataPacketLength: finalLength,
      totalNumACLDataPackets: finalCount)
    logger.info("\(stream.name): controller ready: \(setup)")
    return setup
  }

  /// Leaves the controller as this host found it, then closes: every connection ended
  /// (HCI Disconnect, Remote User Terminated Connection), scanning and advertising off; each
  /// step's refusal is fine, and the whole is bounded by `within`, so a controller that no
  /// longer answers cannot hold the program up.
  public func leave(within limit: Duration = .seconds(1)) async {
    if closedReason == nil {
      let handles = state.withLock { Array($0.connections.keys) }
      _ = await withDeadline(clock.now + limit, on: clock) { () async -> Bool? in
        for handle in handles { try? await self.start(Disconnect(connectionHandle: handle)) }
        _ = try? await self.execute(LESetScanEnable(scanEnable: false))
        _ = try? await self.execute(LESetAdvertisingEnable(advertisingEnable: false))
        return true
      }
    }
    close()
  }

  /// A fresh random static address.
  public static func randomStaticAddress() -> BDAddress {
    while true {
      let random = UInt64.random(in: 0...0x3FFF_FFFF_FFFF)
      if random != 0, random != 0x3FFF_FFFF_FFFF { return BDAddress(rawValue: 0xC000_0000_0000 | random) }
    }
  }

  // MARK: Peripheral

  /// Starts connectable undirected advertising from the random address.
  public func advertise(_ advertisement: Advertisement) async throws(HCIHostError) {
    try await execute(
      LESetAdvertisingParameters(
        advertisingIntervalMin: advertisement.interval, advertisingIntervalMax: advertisement.interval,
        advertisingType: 0x00, ownAddressType: .random))
    try await execute(LESetAdvertisingData(advertisingData: advertisement.advertisingData.encoded))
    try await execute(LESetScanResponseData(scanResponseData: advertisement.scanResponseData.encoded))
    try await execute(LESetAdvertisingEnable(advertisingEnable: true))
  }

  /// Stops advertising.
  public func stopAdvertising() async throws(HCIHostError) {
    try await execute(LESetAdvertisingEnable(advertisingEnable: false))
  }

  /// Advertises and waits for a central to connect (the controller stops advertising when it
  /// does). Without a connection within `timeout`, advertising stops and `.timedOut` is thrown.
  public func accept(_ advertisement: Advertisement, timeout: Duration? = nil) async throws(HCIHostError)
    -> HCIConnection
  {
    let deadline = timeout.map { clock.now + $0 }
    try await advertise(advertisement)
    while true {
      let outcome = try await nextConnectionEvent(deadline: deadline)
      switch outcome {
      case .connected(let connection) where connection.role == .peripheral: return connection
      case .connected(let connection):
        logger.error("\(stream.name): unexpected central connection to \(connection.peer) while advertising")
      case .failed(let status, _): logger.error("\(stream.name): a connection failed: \(status)")
      case nil:
        try? await stopAdvertising()
        if Task.isCancelled { throw .cancelled }
        throw .timedOut("no central connected within \(timeout ?? .zero)")
      }
    }
  }

  // MARK: Central

  /// Scans until an advertiser matches `filter`, then stops scanning. Active scanning sends scan
  /// requests, so scan responses are seen too.
  public func scan(for filter: ScanFilter, active: Bool = true, timeout: Duration) async throws(HCIHostError)
    -> ScanReport
  {
    let reports = Inbox<ScanReport>()
    let busy = state.withLock { state -> Bool in
      if state.scanReports != nil { return true }
      state.scanReports = reports
      return false
    }
    if busy { throw .closed("a scan is already running") }
    defer { state.withLock { $0.scanReports = nil } }
    let deadline = clock.now + timeout
    try await execute(LESetScanParameters(scanType: active ? 0x01 : 0x00, ownAddressType: .random))
    try await execute(LESetScanEnable(scanEnable: true, filterDuplicates: false))
    logger.info("\(stream.name): scanning for \(filter)")
    let found = await withDeadline(deadline, on: clock) {
      while let report = await reports.next() {
        if filter.matches(report) { return report }
      }
      return nil
    }
    _ = try? await execute(LESetScanEnable(scanEnable: false))
    if let found { return found }
    if let closed = closedReason { throw .closed(closed) }
    if Task.isCancelled { throw .cancelled }
    throw .timedOut("no \(filter) found within \(timeout)")
  }

  /// LE Create Connection to `peer`. Without LE Connection Complete within `timeout`, the
  /// attempt is cancelled (LE Create Connection Cancel) and `.timedOut` thrown. The controller
  /// then should report the cancelled attempt (status 0x02); Bumble's virtual controller does
  /// not, so that report is awaited for at most `cancelGrace`, and a connection that completed
  /// meanwhile is returned.
  public func connect(
    to peer: DeviceAddress, parameters: ConnectionParameters = ConnectionParameters(), timeout: Duration,
    cancelGrace: Duration = .milliseconds(500)
  ) async throws(HCIHostError) -> HCIConnection {
    let deadline = clock.now + timeout
    try await start(
      LECreateConnection(
        peerAddressType: peer.type, peerAddress: peer.address, ownAddressType: .random, connection: parameters))
    if let connection = try await centralConnection(deadline: deadline) { return connection }
    if Task.isCancelled {
      _ = try? await execute(LECreateConnectionCancel())
      throw .cancelled
    }
    try await execute(LECreateConnectionCancel())
    if let connection = try await centralConnection(deadline: clock.now + cancelGrace) { return connection }
    throw .timedOut("no connection to \(peer) within \(timeout)")
  }

  /// Scans for `filter`, then connects to the advertiser found.
  public func connect(
    scanningFor filter: ScanFilter, active: Bool = true, parameters: ConnectionParameters = ConnectionParameters(),
    timeout: Duration
  ) async throws(HCIHostError) -> (HCIConnection, ScanReport) {
    let start = clock.now
    let report = try await scan(for: filter, active: active, timeout: timeout)
    let left = max(.milliseconds(100), timeout - (clock.now - start))
    let peer = DeviceAddress(type: report.addressType, address: report.address)
    return (try await connect(to: peer, parameters: parameters, timeout: left), report)
  }

  /// The next central-role connection before `deadline`; nil when it passes. A failed attempt
  /// throws, except for status 0x02 (the attempt was cancelled), which ends the wait with nil.
  private func centralConnection(deadline: Duration) async throws(HCIHostError) -> HCIConnection? {
    while true {
      switch try await nextConnectionEvent(deadline: deadline) {
      case .connected(let connection) where connection.role == .central: return connection
      case .connected(let connection):
        logger.error("\(stream.name): unexpected peripheral connection from \(connection.peer) while connecting")
      case .failed(.unknownConnectionIdentifier, _): return nil
      case .failed(let status, _): throw .connectionFailed(status)
      case nil: return nil
      }
    }
  }

  private func nextConnectionEvent(deadline: Duration?) async throws(HCIHostError) -> ConnectionOutcome? {
    let events = connectionEvents
    let outcome: ConnectionOutcome?
    if let deadline {
      outcome = await withDeadline(deadline, on: clock) { await events.next() }
    } else {
      outcome = await events.next()
    }
    if outcome == nil, let closed = closedReason { throw .closed(closed) }
    return outcome
  }
}
