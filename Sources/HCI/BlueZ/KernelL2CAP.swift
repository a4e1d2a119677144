import ATT
import CBluetooth
import Glibc
import Links
import Runtime
import Sockets
import Wire

/// What the phone and watch commands need of a Bluetooth radio: as a peripheral, advertise and
/// take a central's connection; as a central, scan and connect. Either way the result is the
/// ATT bearer of one connection. `HCIHost` is one (this program is the host); `KernelL2CAP`
/// is the other (the Linux kernel is the host).
public protocol BluetoothRadio: AnyObject, Sendable {
  /// The transport, as the user named it.
  var name: String { get }
  /// Nil while the radio can be used; otherwise why not.
  var closedReason: String? { get }
  /// Advertises and returns the first central's connection; `.timedOut` without one.
  func acceptLink(_ advertisement: Advertisement, timeout: Duration?) async throws(HCIHostError) -> any ATTBearer
  /// Scans for `filter` and connects to the advertiser found.
  func connectLink(scanningFor filter: ScanFilter, timeout: Duration) async throws(HCIHostError) -> any ATTBearer
  func close()
  /// Leaves the controller as it was found (no connection, no scanning, no advertising), then
  /// closes; bounded in time.
  func leave() async
}

extension HCIHost: BluetoothRadio {
  public var name: String { stream.name }

  public func leave() async { await leave(within: .seconds(1)) }

  public func acceptLink(_ advertisement: Advertisement, timeout: Duration?) async throws(HCIHostError)
    -> any ATTBearer
  {
    try await accept(advertisement, timeout: timeout)
  }

  public func connectLink(scanningFor filter: ScanFilter, timeout: Duration) async throws(HCIHostError)
    -> any ATTBearer
  {
    try await connect(scanningFor: filter, timeout: timeout).0
  }
}

/// `l2cap:hciN`: the Linux kernel's Bluetooth host on controller hciN, through BlueZ's
/// libbluetooth. ATT runs on an LE L2CAP socket bound to the fixed channel CID 4
/// (SOCK_SEQPACKET: one message per PDU); the kernel pairs when `pair` raises BT_SECURITY (or
/// the peer asks) and keeps the bonds itself, with bluetoothd. Advertising and scanning, which
/// the socket API does not offer, are HCI commands on the controller's raw HCI socket
/// (`hci_send_req`), as hcitool does; they use the controller's public address, which is also
/// the address the kernel's L2CAP connections use.
public final class KernelL2CAP: BluetoothRadio {
  public let index: UInt16
  /// The controller's public address.
  public let address: BDAddress
  public let name: String
  let clock: any EngineClock
  let logger: Logger
  /// The loops that read its connections.
  let loops: any EventLoopGroup
  /// Why the radio closed, and the pipes of the blocking waits (accept, scan, connect) in
  /// progress, which closing wakes.
  private let state = Locked<(closed: String?, waits: [WakePipe])>((nil, []))

  private init(
    index: UInt16, address: BDAddress, loops: any EventLoopGroup, clock: any EngineClock, logger: Logger
  ) {
    self.index = index
    self.loops = loops
    self.address = address
    self.name = "l2cap:hci\(index)"
    self.clock = clock
    self.logger = logger
  }

  /// Checks that the kernel has Bluetooth and that hciN exists and is up; `loops` will read
  /// its connections.
  public static func open(
    index: UInt16, on loops: any EventLoopGroup, clock: any EngineClock = SystemClock(), logger: Logger = .none
  ) throws(HCIHostError) -> KernelL2CAP {
    let name = "l2cap:hci\(index)"
    do {
      let probe = try BluetoothTransport.bluetoothSocket(
        type: Int32(SOCK_SEQPACKET.rawValue), protocol: BTPROTO_L2CAP, name: name)
      Glibc.close(probe)
    } catch {
      throw .transport(error)
    }
    var info = hci_dev_info()
    guard hci_devinfo(Int32(index), &info) == 0 else {
      throw .transport(
        LinkError(
          address: name, kind: .noSuchPath, detail: "no controller hci\(index)",
          advice: "btmgmt info lists the controllers"))
    }
    guard info.flags & (1 << UInt(HCI_UP)) != 0 else {
      throw .transport(
        LinkError(
          address: name, kind: .unavailableTransport, detail: "hci\(index) is down",
          advice: "power it on: sudo btmgmt --index \(index) power on"))
    }
    return KernelL2CAP(
      index: index, address: BDAddress(bdaddr: info.bdaddr), loops: loops, clock: clock, logger: logger)
  }

  public var closedReason: String? { state.withLock { $0.closed } }

  /// Stops any accept, scan or connect in progress; connections already made stay up until
  /// their bearers close.
  /// The kernel's host ends its own connections and advertising when the socket closes.
  public func leave() async { close() }

  public func close() {
    let waits = state.withLock { state -> [WakePipe] in
      state.closed = state.closed ?? "closed by the host"
      defer { state.waits = [] }
      return state.waits
    }
    for pipe in waits { pipe.wake() }
  }

  // MARK: Peripheral

  public func acceptLink(_ advertisement: Advertisement, timeout: Duration?) async throws(HCIHostError)
    -> any ATTBearer
  {
    if let closed = closedReason { throw .closed(closed) }
    let listener = try attSocket()
    defer { Glibc.close(listener) }
    guard listen(listener, 1) == 0 else { throw failure("listen", errno) }
    setNonBlocking(listener)
    try withRawHCI { device throws(HCIHostError) in
      try command(
        LESetAdvertisingParameters(
          advertisingIntervalMin: advertisement.interval, advertisingIntervalMax: advertisement.interval,
          advertisingType: 0x00, ownAddressType: .public),
        on: device)
      try command(LESetAdvertisingData(advertisingData: advertisement.advertisingData.encoded), on: device)
      try command(LESetScanResponseData(scanResponseData: advertisement.scanResponseData.encoded), on: device)
      try command(LESetAdvertisingEnable(advertisingEnable: true), on: device)
    }
    let (outcome, timedOut) = try await waitUntil(timeout) { acceptConnection(listener, wake: $0) }
    // The controller stops advertising when a central connects; otherwise stop it here.
    try? withRawHCI { device throws(HCIHostError) in
      try command(LESetAdvertisingEnable(advertisingEnable: false), on: device)
    }
    switch outcome {
    case .accepted(let fd, _):
      return try bearer(fd, peer: Self.peerAddress(fd))
    case .failed(let code): throw failure("accept", code)
    case .closed, .cancelled:
      if let closed = closedReason { throw .closed(closed) }
      if timedOut { throw .timedOut("no central connected within \(timeout ?? .zero)") }
      throw .cancelled
    }
  }

  // MARK: Central

  public func connectLink(scanningFor filter: ScanFilter, timeout: Duration) async throws(HCIHostError)
    -> any ATTBearer
  {
    if let closed = closedReason { throw .closed(closed) }
    let start = clock.now
    let report = try await scan(for: filter, timeout: timeout)
    let left = max(.milliseconds(100), timeout - (clock.now - start))
    let fd = try attSocket()
    var peer = Self.attAddress(report.address, public: report.addressType == .public)
    let target = SocketAddress(
      storage: withUnsafeBytes(of: &peer) { Array($0) }, family: Int32(AF_BLUETOOTH))
    let (code, timedOut) = try await waitUntil(left) { connectConnection(fd, to: target, wake: $0) }
    guard code == 0 else {
      Glibc.close(fd)
      if let closed = closedReason { throw .closed(closed) }
      if timedOut { throw .timedOut("no connection to \(report.address) within \(timeout)") }
      guard let code else { throw .cancelled }
      throw failure("connect to \(report.address)", code)
    }
    return try bearer(fd, peer: report.address)
  }

  /// Scans (active, public address) until an advertiser matches `filter`.
  func scan(for filter: ScanFilter, timeout: Duration) async throws(HCIHostError) -> ScanReport {
    let deadline = clock.now + timeout
    let device = try openRawHCI()
    defer { Glibc.close(device) }
    try command(LESetScanParameters(scanType: 0x01, ownAddressType: .public), on: device)
    do {
      try command(LESetScanEnable(scanEnable: true, filterDuplicates: false), on: device)
    } catch .commandFailed(_, _, .commandDisallowed) {
      throw .closed("hci\(index) is already scanning (bluetoothctl scan off, then try again)")
    }
    defer { try? command(LESetScanEnable(scanEnable: false), on: device) }
    // Only LE meta events from here on.
    var events = hci_filter()
    hci_filter_clear(&events)
    hci_filter_set_ptype(Int32(HCI_EVENT_PKT), &events)
    hci_filter_set_event(Int32(EVT_LE_META_EVENT), &events)
    setsockopt(device, SOL_HCI, HCI_FILTER, &events, socklen_t(MemoryLayout<hci_filter>.size))
    let (found, _) = try await waitUntil(max(.zero, deadline - clock.now)) { wake -> ScanReport? in
      var buffer = [UInt8](repeating: 0, count: 300)
      while true {
        guard case .ready = wake.wait(for: device, events: Int32(POLLIN)) else { return nil }
        let count = buffer.withUnsafeMutableBytes { Glibc.read(device, $0.baseAddress, $0.count) }
        if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
        guard count > 1, buffer[0] == UInt8(HCI_EVENT_PKT) else { return nil }
        guard let event = try? HCIEvent(decoding: Array(buffer[1..<count])),
          let reports = try? ScanReport.reports(in: event)
        else { continue }
        if let match = reports.first(where: filter.matches) { return match }
      }
    }
    if let found { return found }
    if let closed = closedReason { throw .closed(closed) }
    throw .timedOut("no \(filter) found within \(timeout)")
  }

  // MARK: Sockets

  static let attChannel = 4

  /// An LE L2CAP socket bound to this controller's public address on the ATT channel.
  private func attSocket() throws(HCIHostError) -> Int32 {
    let fd: Int32
    do {
      fd = try BluetoothTransport.bluetoothSocket(
        type: Int32(SOCK_SEQPACKET.rawValue), protocol: BTPROTO_L2CAP, name: name)
    } catch {
      throw .transport(error)
    }
    var local = Self.attAddress(address, public: true)
    let bound = withUnsafePointer(to: &local) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size)) }
    }
    guard bound == 0 else {
      let code = errno
      Glibc.close(fd)
      if code == EADDRINUSE {
        throw .transport(
          LinkError(
            address: name, kind: .addressInUse, detail: "the ATT channel of hci\(index) is taken",
            advice: "bluetoothd serves GATT there; stop it (sudo systemctl stop bluetooth) or use hci-user"))
      }
      throw failure("bind", code)
    }
    return fd
  }

  /// The ATT channel (CID 4) of an LE device, as bind and connect take it.
  private static func attAddress(_ address: BDAddress, public: Bool) -> sockaddr_l2 {
    var socketAddress = sockaddr_l2()
    socketAddress.l2_family = sa_family_t(AF_BLUETOOTH)
    socketAddress.l2_bdaddr = address.bdaddr
    socketAddress.l2_cid = UInt16(attChannel).littleEndian
    socketAddress.l2_bdaddr_type = UInt8(`public` ? BDADDR_LE_PUBLIC : BDADDR_LE_RANDOM)
    return socketAddress
  }

  private func bearer(_ fd: Int32, peer: BDAddress) throws(HCIHostError) -> any ATTBearer {
    logger.info("\(name): connected to \(peer)")
    do {
      return try SocketBearer.bareATT(fd: fd, name: "\(name) \(peer)", kernel: KernelSecurity(), on: loops.next())
    } catch {
      throw .transport(error)
    }
  }

  private static func peerAddress(_ fd: Int32) -> BDAddress {
    var peer = sockaddr_l2()
    var length = socklen_t(MemoryLayout<sockaddr_l2>.size)
    _ = withUnsafeMutablePointer(to: &peer) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
    }
    return BDAddress(bdaddr: peer.l2_bdaddr)
  }

  /// The controller's raw HCI socket; the caller closes it.
  private func openRawHCI() throws(HCIHostError) -> Int32 {
    let device = hci_open_dev(Int32(index))
    guard device >= 0 else { throw failure("open hci\(index)", errno) }
    return device
  }

  /// Opens the controller's raw HCI socket for `body`.
  private func withRawHCI(_ body: (Int32) throws(HCIHostError) -> Void) throws(HCIHostError) {
    let device = try openRawHCI()
    defer { Glibc.close(device) }
    try body(device)
  }

  /// Sends `command` on a raw HCI socket and waits (1 s) for its Command Complete status.
  private func command<C: HCICommand>(_ command: C, on device: Int32) throws(HCIHostError) {
    var parameters = command.encoded
    var status: UInt8 = 0xFF
    let result = parameters.withUnsafeMutableBytes { raw in
      withUnsafeMutableBytes(of: &status) { answer in
        var request = hci_request()
        request.ogf = UInt16(C.opcode.ogf)
        request.ocf = C.opcode.ocf
        request.cparam = raw.baseAddress
        request.clen = Int32(raw.count)
        request.rparam = answer.baseAddress
        request.rlen = 1
        return hci_send_req(device, &request, 1000)
      }
    }
    guard result == 0 else {
      let code = errno
      if code == ETIMEDOUT {
        throw .commandTimeout(command: C.packetName, opcode: C.opcode, timeout: .seconds(1))
      }
      throw failure(C.packetName, code)
    }
    guard status == HCIStatus.success.rawValue else {
      throw .commandFailed(command: C.packetName, opcode: C.opcode, status: HCIStatus(rawValue: status))
    }
  }

  /// Runs the blocking `body` on its own thread with a pipe it must wait on; the pipe is woken
  /// when `timeout` passes, the task is cancelled or the radio closes, and `body` then returns
  /// early with what it returns when woken. Also says whether the timeout woke it.
  private func waitUntil<T: Sendable>(_ timeout: Duration?, _ body: @escaping @Sendable (WakePipe) -> T)
    async throws(HCIHostError) -> (T, timedOut: Bool)
  {
    let pipe: WakePipe
    do { pipe = try WakePipe() } catch { throw failure("pipe", error.code) }
    let closed = state.withLock { state -> String? in
      if state.closed == nil { state.waits.append(pipe) }
      return state.closed
    }
    if let closed { throw .closed(closed) }
    defer { state.withLock { $0.waits.removeAll { $0 === pipe } } }
    let timedOut = Locked(false)
    let timer = timeout.map { timeout in
      Task { [clock] in
        guard (try? await clock.sleep(until: clock.now + timeout)) != nil else { return }
        timedOut.withLock { $0 = true }
        pipe.wake()
      }
    }
    defer { timer?.cancel() }
    let value = await withTaskCancellationHandler {
      await runBlocking { body(pipe) }
    } onCancel: {
      pipe.wake()
    }
    return (value, timedOut.withLock { $0 })
  }

  private func failure(_ what: String, _ code: Int32) -> HCIHostError {
    .transport(LinkError(address: name, kind: .system(errno: code), detail: "\(what): \(errnoText(code))"))
  }
}

/// The kernel's view of an L2CAP socket's security (BT_SECURITY): Just Works pairing gives
/// MEDIUM (encrypted), an authenticated key HIGH or FIPS.
struct KernelSecurity: Sockets.KernelSecurity {
  /// How long the kernel may take to pair (with the wearer confirming, on a real phone).
  static let timeout: Int32 = 30_000

  func level(of fd: Int32) -> SecurityLevel {
    var security = bt_security()
    var length = socklen_t(MemoryLayout<bt_security>.size)
    guard getsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &security, &length) == 0 else { return .unencrypted }
    switch Int32(security.level) {
    case BT_SECURITY_HIGH, BT_SECURITY_FIPS: return .authenticated
    case BT_SECURITY_MEDIUM: return .encrypted
    default: return .unencrypted
    }
  }

  /// Sets BT_SECURITY: the kernel starts pairing (as central) or sends a Security Request (as
  /// peripheral), and holds the socket (not writable) until the link is encrypted or pairing
  /// fails; then the level tells which.
  func raise(_ fd: Int32, to wanted: SecurityLevel) async -> Result<SecurityLevel, BearerError> {
    let before = level(of: fd)
    if before >= wanted { return .success(before) }
    var security = bt_security()
    security.level = UInt8(wanted == .authenticated ? BT_SECURITY_HIGH : BT_SECURITY_MEDIUM)
    if setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &security, socklen_t(MemoryLayout<bt_security>.size)) != 0 {
      let code = errno
      // EINVAL: the link already has the level (it rose meanwhile); anything else is a refusal.
      if code != EINVAL { return .failure(.pairingFailed("the kernel refused BT_SECURITY: \(errnoText(code))")) }
    }
    let ready = await runBlocking { () -> Bool in
      var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
      while true {
        let count = poll(&entry, 1, Self.timeout)
        if count < 0 && errno == EINTR { continue }
        return count > 0 && entry.revents & Int16(POLLOUT) != 0
      }
    }
    let reached = level(of: fd)
    if reached >= wanted { return .success(reached) }
    return .failure(
      .pairingFailed(
        ready
          ? "the kernel did not reach \(wanted) (the link is \(reached)); bluetoothd's agent may have refused"
          : "no pairing within \(Self.timeout / 1000) s"))
  }
}

extension BDAddress {
  /// From BlueZ's bdaddr_t (six bytes, least significant first).
  init(bdaddr: bdaddr_t) {
    self.init(rawValue: withUnsafeBytes(of: bdaddr.b) { littleEndianValue(Array($0)) })
  }

  var bdaddr: bdaddr_t {
    var address = bdaddr_t()
    withUnsafeMutableBytes(of: &address.b) { $0.copyBytes(from: littleEndianBytes(rawValue, count: 6)) }
    return address
  }
}
