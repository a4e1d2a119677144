import ATT
import GATT
import Glibc
import HCI
import Links
import Runtime
import Sockets
import TestSupport
import Testing
import Wire

private let ancs = BluetoothUUID("7905F431-B5CE-4E99-A40F-4B1E122D00D0")!

/// Whether socket(AF_BLUETOOTH) works here (it fails with EAFNOSUPPORT in most containers).
let kernelHasBluetooth: Bool = {
  let probe = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue), 1)
  if probe >= 0 { close(probe) }
  return probe >= 0 || errno != EAFNOSUPPORT
}()

@Suite("HCI host: commands and set-up")
struct HostCommandTests {
  @Test("set-up: Reset, event masks, LE buffer size, BD_ADDR, a random static address")
  func setUpSequence() async throws {
    let fake = FakeController()
    let host = HCIHost(stream: fake.stream)
    let setup = try await host.setUp()
    var opcodes: [HCIOpcode] = []
    while fake.commands.count > 0, let command = await fake.commands.next() { opcodes.append(command.opcode) }
    #expect(
      opcodes == [
        Reset.opcode, LESetScanEnable.opcode, LESetAdvertisingEnable.opcode, SetEventMask.opcode,
        LESetEventMask.opcode, LEReadBufferSize.opcode, ReadBDADDR.opcode, LESetRandomAddress.opcode,
      ])
    #expect(setup.randomAddress.isRandomStatic)
    #expect(setup.aclDataPacketLength == 27 && setup.totalNumACLDataPackets == 2)
    #expect(await host.aclBuffers == (27, 2))
  }

  /// Issue #13 (9): a controller left scanning or advertising by a host that quit. Turning
  /// each off may be refused (it was off); set-up goes on.
  @Test("set-up turns scanning and advertising off after Reset; a refusal does not stop it")
  func setUpCopesWithALeftoverController() async throws {
    var settings = FakeController.Settings()
    settings.failing = [LESetScanEnable.opcode: .commandDisallowed, LESetAdvertisingEnable.opcode: .commandDisallowed]
    let fake = FakeController(settings)
    let host = HCIHost(stream: fake.stream)
    let setup = try await host.setUp()
    #expect(setup.randomAddress.isRandomStatic)
    var sent: [HCICommandPacket] = []
    while fake.commands.count > 0, let command = await fake.commands.next() { sent.append(command) }
    let scan = try #require(sent.first { $0.opcode == LESetScanEnable.opcode })
    #expect(try LESetScanEnable(packet: scan).scanEnable == false)
    let advertising = try #require(sent.first { $0.opcode == LESetAdvertisingEnable.opcode })
    #expect(try LESetAdvertisingEnable(packet: advertising).advertisingEnable == false)
  }

  /// Issue #13 (9): on its way out the host ends its connections and stops scanning and
  /// advertising, then closes; a controller that no longer answers cannot hold it up.
  @Test("leave: Disconnect each connection, scanning and advertising off, then closed")
  func leaveRestoresTheController() async throws {
    let (fake, host, connection) = try await connectedHost(role: .central)
    // Its commands go out on the test loop, which every test shares: under a sanitizer, with
    // the whole suite running, one has taken over a second to get there.
    await host.leave(within: scaled(.seconds(5)))
    var opcodes: [HCIOpcode] = []
    while fake.commands.count > 0, let command = await fake.commands.next() { opcodes.append(command.opcode) }
    #expect(opcodes == [Disconnect.opcode, LESetScanEnable.opcode, LESetAdvertisingEnable.opcode])
    #expect(host.closedReason != nil)
    #expect(try await connection.receive() == nil)

    var silent = FakeController.Settings()
    silent.silent = [Disconnect.opcode]
    let (_, stuck, _) = try await connectedHost(role: .central, silent)
    let clock = ContinuousClock()
    let started = clock.now
    await stuck.leave(within: .milliseconds(200))
    #expect(stuck.closedReason != nil)
    #expect(clock.now - started < .seconds(5), "bounded by its limit")
  }

  @Test("an LE buffer length of 0 falls back to Read Buffer Size")
  func sharedBuffers() async throws {
    var settings = FakeController.Settings()
    settings.leACLLength = 0
    settings.leACLCount = 0
    let (_, host) = try await startHost(settings)
    #expect(await host.aclBuffers == (251, 4))
  }

  /// A host on a controller that answers nothing by itself, whose first command (Reset) was
  /// answered with no credit left: every command after it waits for a credit.
  private func hostWithoutCredits() async throws -> (FakeController, ManualClock, HCIHost) {
    var settings = FakeController.Settings()
    settings.autoAnswer = false
    let fake = FakeController(settings)
    let clock = ManualClock()
    let host = HCIHost(stream: fake.stream, clock: clock)
    let first = Task { try await host.execute(Reset()) }
    #expect(await fake.nextCommand()?.opcode == Reset.opcode)
    fake.complete(Reset.opcode, credits: 0)  // answered, but no credit left
    _ = try await first.value
    return (fake, clock, host)
  }

  @Test("no command leaves without a credit; Num_HCI_Command_Packets sets the credits")
  func commandCredits() async throws {
    let (fake, _, host) = try await hostWithoutCredits()

    let second = Task { try await host.execute(SetEventMask(eventMask: 1)) }
    let third = Task { try await host.execute(LESetEventMask(leEventMask: 1)) }
    while await host.commandBacklog.queued < 2 { await Task.yield() }  // both submitted and waiting
    #expect(await host.commandBacklog == (queued: 2, inFlight: 0))

    fake.complete(HCIOpcode(rawValue: 0), [], credits: 2)  // credits only (opcode 0x0000)
    let a = await fake.nextCommand()
    let b = await fake.nextCommand()
    #expect(Set([a?.opcode, b?.opcode]) == Set([SetEventMask.opcode, LESetEventMask.opcode]))
    #expect(await host.commandBacklog == (queued: 0, inFlight: 2))
    fake.complete(SetEventMask.opcode)
    fake.complete(LESetEventMask.opcode)
    _ = try await second.value
    _ = try await third.value
    #expect(await host.commandBacklog == (queued: 0, inFlight: 0))
  }

  @Test("a command without an answer times out on the injected clock, naming the command")
  func commandTimeout() async throws {
    var settings = FakeController.Settings()
    // A command set-up does not send (set-up would wait for it on a clock that never moves).
    settings.silent = [ReadBufferSize.opcode]
    let clock = ManualClock()
    let (fake, host) = try await startHost(settings, clock: clock)
    let waiting = Task { try await host.execute(ReadBufferSize()) }
    while await host.commandBacklog.inFlight < 1 { await Task.yield() }
    clock.advance(by: .seconds(2))
    let result = await waiting.result
    #expect(
      throws: HCIHostError.commandTimeout(
        command: ReadBufferSize.packetName, opcode: ReadBufferSize.opcode, timeout: .seconds(2))
    ) {
      try result.get()
    }
    // The credit is assumed back: the next command goes out and completes.
    try await host.execute(Reset())
    #expect(await fake.nextCommand()?.opcode == ReadBufferSize.opcode)
    #expect(await fake.nextCommand()?.opcode == Reset.opcode)
  }

  @Test("with the real clock the host's timer waits on its loop's own timers: no task sleeps for a command")
  func timerOnTheLoop() async throws {
    let loop = EventLoop()
    var settings = FakeController.Settings()
    settings.silent = [ReadBufferSize.opcode]
    let (_, host) = try await startHost(settings, options: HCIHost.Options(commandTimeout: .seconds(3600)), loop: loop)
    let waiting = Task { try await host.execute(ReadBufferSize()) }
    // Once the timer has gone to sleep (on the earliest deadline it was told: this
    // command's, or one of the set-up's).
    while !Task.isCancelled, await loop.submit({ loop.pendingTimers }) == 0 { await Task.yield() }
    #expect(await loop.submit { loop.pendingTimers } == 1)
    waiting.cancel()
    _ = await waiting.result
    host.close()
    try await loop.shutdown()
  }

  @Test("commands share the host's one timer: five waiting put one sleeper on the clock; each fails at its deadline")
  func commandsShareOneTimer() async throws {
    let (fake, clock, host) = try await hostWithoutCredits()

    let early = (0..<3).map { _ in Task { try await host.execute(SetEventMask(eventMask: 1)) } }
    while await host.commandBacklog.queued < 3 { await Task.yield() }
    clock.advance(by: .seconds(1))
    #expect(await host.commandBacklog.queued == 3)  // 1 s: none is due yet
    let late = (0..<2).map { _ in Task { try await host.execute(LESetEventMask(leEventMask: 1)) } }
    while await host.commandBacklog.queued < 5 { await Task.yield() }
    await clock.waitForSleepers(1)
    for _ in 0..<100 { await Task.yield() }
    #expect(clock.sleeperCount == 1)

    clock.advance(by: .seconds(1))  // 2 s: the first three are past their deadline
    let timeout = HCIHostError.commandTimeout(
      command: SetEventMask.packetName, opcode: SetEventMask.opcode, timeout: .seconds(2))
    for task in early { await #expect(throws: timeout) { try await task.value } }
    #expect(await host.commandBacklog == (queued: 2, inFlight: 0))
    clock.advance(by: .seconds(1))  // 3 s: the last two
    let lateTimeout = HCIHostError.commandTimeout(
      command: LESetEventMask.packetName, opcode: LESetEventMask.opcode, timeout: .seconds(2))
    for task in late { await #expect(throws: lateTimeout) { try await task.value } }
    #expect(await host.commandBacklog == (queued: 0, inFlight: 0))
    #expect(fake.commands.count == 0)  // none ever had a credit
  }

  @Test("a status other than success is a typed error with the command's name and the status")
  func commandFailure() async throws {
    var settings = FakeController.Settings()
    settings.failing = [LESetAdvertisingEnable.opcode: .commandDisallowed]
    let (_, host) = try await startHost(settings)
    await #expect(
      throws: HCIHostError.commandFailed(
        command: "HCI_LE_Set_Advertising_Enable", opcode: LESetAdvertisingEnable.opcode, status: .commandDisallowed)
    ) {
      try await host.execute(LESetAdvertisingEnable(advertisingEnable: true))
    }
  }

  @Test("malformed events and ACL data are dropped; the host goes on")
  func malformedInput() async throws {
    let (fake, host, connection) = try await connectedHost(role: .peripheral)
    fake.sendRaw([0x04, 0x0E, 0x01, 0x01])  // Command Complete too short
    fake.send(ACLPacket(handle: 0x0040, packetBoundary: .continuing, data: [1, 2, 3]))  // no start
    fake.send(.att, [0x0A, 0x01])  // L2CAP frame inside is fine; must still arrive
    #expect(try await connection.receive() == [0x0A, 0x01])
    #expect(host.closedReason == nil)
  }

  @Test("an unknown H4 indicator closes the host with a reason that says so; waits end")
  func desynchronised() async throws {
    var settings = FakeController.Settings()
    settings.silent = [LESetScanParameters.opcode]
    let (fake, host, connection) = try await connectedHost(role: .peripheral, settings)
    let waiting = Task { try await host.execute(LESetScanParameters()) }
    _ = await fake.nextCommand()
    fake.sendRaw([0xFF, 0x00])
    let result = await waiting.result
    guard case .failure(let error as HCIHostError) = result, case .closed(let why) = error else {
      Issue.record("expected .closed, got \(result)")
      return
    }
    #expect(why.contains("cannot resynchronise"))
    #expect(try await connection.receive() == nil)
    #expect(throws: BearerError.disconnected) { try connection.send([0x0A, 0x01, 0x00]) }
  }
}

@Suite("HCI host: ACL, L2CAP channels, connections")
struct HostConnectionTests {
  @Test("ACL: fragments of 27 bytes, never more than 2 outstanding, released by Number Of Completed Packets")
  func fragmentationAndFlowControl() async throws {
    let (fake, host, connection) = try await connectedHost(role: .peripheral)
    let pdu = [0x1B, 0x03, 0x00] + (0..<97).map { UInt8($0) }  // a 100-byte notification
    try connection.send(pdu)
    #expect(await host.aclBacklog == (queued: 2, outstanding: 2))
    var packets: [ACLPacket] = []
    for _ in 0..<2 { if let packet = await fake.acl.next() { packets.append(packet) } }
    fake.completed(1)
    if let packet = await fake.acl.next() { packets.append(packet) }
    #expect(await host.aclBacklog == (queued: 1, outstanding: 2))
    fake.completed(2)
    if let packet = await fake.acl.next() { packets.append(packet) }
    #expect(packets.map(\.data.count) == [27, 27, 27, 23])
    #expect(packets.map(\.packetBoundary) == [.firstNonFlushable, .continuing, .continuing, .continuing])
    #expect(packets.allSatisfy { $0.handle == 0x0040 })
    #expect(packets.flatMap(\.data) == L2CAPFrame(channel: .att, payload: pdu).encoded)
  }

  @Test("ACL from the controller: one packet larger than the buffer size, and a PDU in fragments")
  func reassembly() async throws {
    let (fake, _, connection) = try await connectedHost(role: .peripheral)
    let big = [0x1B, 0x03, 0x00] + [UInt8](repeating: 0x41, count: 59)  // 66 bytes with L2CAP
    fake.send(.att, big)
    #expect(try await connection.receive() == big)
    let frame = L2CAPFrame(channel: .att, payload: [0x52, 0x03, 0x00] + [UInt8](repeating: 7, count: 40)).encoded
    fake.send(ACLPacket(handle: 0x0040, packetBoundary: .firstFlushable, data: Array(frame[0..<10])))
    fake.send(ACLPacket(handle: 0x0040, packetBoundary: .continuing, data: Array(frame[10...])))
    #expect(try await connection.receive() == Array(frame[4...]))
  }

  @Test("LE signalling as peripheral: a parameter update request and an unknown command get Command Reject")
  func signalingPeripheral() async throws {
    let (fake, _, _) = try await connectedHost(role: .peripheral)
    fake.send(.leSignaling, [0x12, 0x07, 0x08, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01])
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .leSignaling, payload: [0x01, 0x07, 0x02, 0x00, 0x00, 0x00]))
    fake.send(.leSignaling, [0x14, 0x09, 0x0A, 0x00] + [UInt8](repeating: 0, count: 10))  // LE credit-based request
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .leSignaling, payload: [0x01, 0x09, 0x02, 0x00, 0x00, 0x00]))
  }

  @Test(
    "LE signalling as central: a valid update is accepted and applied with LE Connection Update; responses are ignored")
  func signalingCentral() async throws {
    let (fake, _, _) = try await connectedHost(role: .central)
    fake.send(.leSignaling, [0x13, 0x03, 0x02, 0x00, 0x00, 0x00])  // a response: no answer
    fake.send(.leSignaling, [0x12, 0x04, 0x08, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01])
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .leSignaling, payload: [0x13, 0x04, 0x02, 0x00, 0x00, 0x00]))
    let update = try #require(await fake.nextCommand())
    #expect(
      try LEConnectionUpdate(packet: update)
        == LEConnectionUpdate(
          connectionHandle: 0x0040,
          connection: ConnectionParameters(
            intervalMin: 0x18, intervalMax: 0x28, maxLatency: 0, supervisionTimeout: 0x1F4)))
    // Timeout 100 ms is below (1 + 0) x 50 ms x 2: rejected, no update.
    fake.send(.leSignaling, [0x12, 0x05, 0x08, 0x00, 0x28, 0x00, 0x28, 0x00, 0x00, 0x00, 0x0A, 0x00])
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .leSignaling, payload: [0x13, 0x05, 0x02, 0x00, 0x01, 0x00]))
    #expect(fake.commands.count == 0)
  }

  @Test("LE signalling as central: a judge's rules refuse a request within the Core ranges, and it is told")
  func signalingCentralWithAJudge() async throws {
    let (fake, host, _) = try await connectedHost(role: .central)
    let told = Inbox<(String, ConnectionParameters, [String])>()
    host.parameterJudge = HCIHost.ParameterJudge(
      rules: { $0.intervalMin < 12 ? ["Interval Min under 15 ms"] : [] }, report: { told.push(($0, $1, $2)) })
    // 30-50 ms: accepted, applied, and told with nothing broken.
    fake.send(.leSignaling, [0x12, 0x04, 0x08, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01])
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .leSignaling, payload: [0x13, 0x04, 0x02, 0x00, 0x00, 0x00]))
    #expect(try LEConnectionUpdate(packet: try #require(await fake.nextCommand())).connection.intervalMin == 0x18)
    let accepted = try #require(await told.next())
    #expect(accepted.1.intervalMin == 0x18 && accepted.2 == [])
    // 7.5-15 ms is within the Core ranges, not within the judge's: rejected, no update.
    fake.send(.leSignaling, [0x12, 0x05, 0x08, 0x00, 0x06, 0x00, 0x0C, 0x00, 0x00, 0x00, 0xC8, 0x00])
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .leSignaling, payload: [0x13, 0x05, 0x02, 0x00, 0x01, 0x00]))
    let refused = try #require(await told.next())
    #expect(refused.1.intervalMin == 6 && refused.2 == ["Interval Min under 15 ms"])
    #expect(fake.commands.count == 0)
  }

  @Test("SMP: a Pairing Request is answered with Pairing Failed, Pairing Not Supported")
  func pairingNotSupported() async throws {
    let (fake, _, connection) = try await connectedHost(role: .peripheral)
    fake.send(.smp, [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07])
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .smp, payload: [0x05, 0x05]))
    await #expect(throws: BearerError.pairingFailed("this host's security manager does not pair")) {
      _ = try await connection.pair(.encrypted)
    }
    fake.send(.encryptionChange(EncryptionChange(connectionHandle: 0x0040, encryptionEnabled: 1)))
    fake.send(.att, [0x0A, 0x01, 0x00])
    _ = try await connection.receive()
    #expect(connection.securityLevel == .encrypted)
  }

  @Test("ATT over the bearer: a GATT server answers Exchange MTU and Read from the controller's side")
  func attOverBearer() async throws {
    let (fake, _, connection) = try await connectedHost(role: .peripheral)
    let server = try GATTServer(
      services: [
        ServiceDefinition(uuid: ancs, characteristics: [.constant(BluetoothUUID("2A00")!, Array("watch".utf8))])
      ],
      serviceChanged: false)
    let att = ATTConnection(bearer: connection)
    _ = await server.attach(att)
    let running = Task { await att.run() }
    fake.send(.att, [0x02, 0x00, 0x02])  // Exchange MTU Request, 512
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .att, payload: [0x03, 0x05, 0x02]))
    let value = try #require(server.handles(of: ancs)?.first?.value)
    fake.send(.att, [0x0A, UInt8(value & 0xFF), UInt8(value >> 8)])
    #expect(await fake.nextFrame() == L2CAPFrame(channel: .att, payload: [0x0B] + Array("watch".utf8)))
    fake.send(
      .disconnectionComplete(DisconnectionComplete(connectionHandle: 0x0040, reason: .remoteUserTerminatedConnection)))
    await running.value
    #expect(try await connection.waitForDisconnection() == .remoteUserTerminatedConnection)
  }

  @Test("any number of callers wait for the disconnection, and every one learns its reason")
  func manyWaitForTheDisconnection() async throws {
    let (fake, _, connection) = try await connectedHost(role: .central)
    let waiting = (0..<3).map { _ in Task { try await connection.waitForDisconnection() } }
    while connection.disconnectionWaiters < 3 { await Task.yield() }
    fake.send(
      .disconnectionComplete(DisconnectionComplete(connectionHandle: 0x0040, reason: .authenticationFailure)))
    for task in waiting { #expect(try await task.value == .authenticationFailure) }
    #expect(try await connection.waitForDisconnection() == .authenticationFailure)
  }

  @Test("disconnect: HCI_Disconnect with the reason, then receive is nil and send throws")
  func disconnect() async throws {
    let (fake, host, connection) = try await connectedHost(role: .central)
    try connection.send([0x02, 0x00, 0x02])
    let reason = try await connection.disconnect(reason: .remoteDeviceTerminatedPowerOff)
    #expect(reason == .connectionTerminatedByLocalHost)
    let command = try #require(await fake.nextCommand())
    #expect(try Disconnect(packet: command).reason == .remoteDeviceTerminatedPowerOff)
    #expect(try await connection.receive() == nil)
    #expect(throws: BearerError.disconnected) { try connection.send([0x02, 0x00, 0x02]) }
    #expect(!connection.isConnected)
    #expect(await host.aclBacklog == (queued: 0, outstanding: 0))
  }

  @Test("central: scan reports (extended, as Bumble sends) filtered on the ANCS solicitation, then connect")
  func scanAndConnect() async throws {
    let (fake, host) = try await startHost()
    let watch = BDAddress("C1:22:33:44:55:66")!
    let connecting = Task { try await host.connect(scanningFor: .solicits([ancs]), timeout: .seconds(10)) }
    #expect(await fake.nextCommand()?.opcode == LESetScanParameters.opcode)
    #expect(await fake.nextCommand()?.opcode == LESetScanEnable.opcode)
    let other = AdvertisingData.peripheral(name: "lamp").encoded
    let solicits = AdvertisingData.peripheral(name: "watch", solicitedServices: [ancs]).encoded
    let reports = [(BDAddress("C1:00:00:00:00:01")!, other), (watch, solicits)].map { address, data in
      LEExtendedAdvertisingReport.Report(eventType: 0x13, addressType: .random, address: address, rssi: -50, data: data)
    }
    fake.send(.leUnknown(subevent: 0x0D, parameters: LEExtendedAdvertisingReport(reports: reports).encoded))
    #expect(try await fake.nextCommand().map(LESetScanEnable.init(packet:))?.scanEnable == false)
    let create = try #require(await fake.nextCommand())
    #expect(try LECreateConnection(packet: create).peerAddress == watch)
    fake.connectionComplete(role: 0x00, peer: watch)
    let (connection, report) = try await connecting.value
    #expect(report.address == watch && connection.role == .central && connection.peer.address == watch)
  }

  @Test("central: no connection in time sends LE Create Connection Cancel and times out")
  func connectTimeout() async throws {
    let clock = ManualClock()
    // Commands time out later than the connection: only the connection's deadline passes.
    let (fake, host) = try await startHost(clock: clock, options: HCIHost.Options(commandTimeout: .seconds(60)))
    let peer = DeviceAddress(type: .random, address: BDAddress("C1:22:33:44:55:66")!)
    let connecting = Task { try await host.connect(to: peer, timeout: .seconds(3)) }
    // The deadline is taken before LE Create Connection is sent, so a wait that starts after
    // this advance ends at once.
    #expect(await fake.nextCommand()?.opcode == LECreateConnection.opcode)
    clock.advance(by: .seconds(3))
    #expect(await fake.nextCommand()?.opcode == LECreateConnectionCancel.opcode)
    fake.send(
      .leConnectionComplete(
        LEConnectionComplete(
          status: .unknownConnectionIdentifier, connectionHandle: 0, role: 0, peerAddressType: .random,
          peerAddress: peer.address, connectionInterval: 0, supervisionTimeout: 0)))
    let result = await connecting.result
    #expect(throws: HCIHostError.timedOut("no connection to \(peer) within 3.0 seconds")) { try result.get() }
  }

  @Test("transport names: the four forms parse; a malformed one fails with one line saying what to write")
  func transports() throws {
    #expect(try BluetoothTransport(parsing: "hci-tcp:127.0.0.1:9001") == .hciTCP(host: "127.0.0.1", port: 9001))
    #expect(try BluetoothTransport(parsing: "hci-tcp:[::1]:9") == .hciTCP(host: "::1", port: 9))
    #expect(try BluetoothTransport(parsing: "hci-tcp:[::1]:9").description == "hci-tcp:[::1]:9")
    #expect(try BluetoothTransport(parsing: "hci-uart:/dev/ttyACM0") == .hciUART(path: "/dev/ttyACM0", baud: 1_000_000))
    #expect(
      try BluetoothTransport(parsing: "hci-uart:/dev/ttyUSB0,115200") == .hciUART(path: "/dev/ttyUSB0", baud: 115_200))
    #expect(try BluetoothTransport(parsing: "hci-user:1") == .hciUser(index: 1))
    #expect(try BluetoothTransport(parsing: "hci-user:hci2") == .hciUser(index: 2))
    #expect(try BluetoothTransport(parsing: "l2cap:hci0") == .l2cap(index: 0))
    let failures: [(String, String)] = [
      ("hci-tcp:localhost", "missing port"), ("hci-tcp:h:0", "the port must be a number"),
      ("hci-uart:", "expected a device"), ("hci-uart:/dev/ttyS0,9", "unsupported speed '9'"),
      ("hci-uart:/dev/ttyS0,115200,8N1", "expected a device"), ("hci-user:", "expected a controller number"),
      ("hci-user:-1", "expected a controller number"), ("l2cap:hciX", "expected a controller name"),
      ("bogus:1", "use one of hci-tcp:HOST:PORT, hci-uart:DEV[,BAUD], hci-user:N, l2cap:hciN"),
    ]
    for (text, expected) in failures {
      do {
        _ = try BluetoothTransport(parsing: text)
        Issue.record("\(text) parsed")
      } catch {
        #expect(error.description.contains(expected), "\(text): \(error)")
        // Named as written ("hci-uart:" as such, not "hci-uart::").
        #expect(error.description.hasPrefix(text.hasSuffix(":") ? text : text + ": "), "\(text): \(error)")
      }
    }
  }

  @Test("hci-uart: a missing device, and a file that is not a terminal, fail with what to do")
  func serialErrors() async throws {
    do {
      _ = try await HCIHost.open(transport: .hciUART(path: "/nonexistent/ttyACM9", baud: 115_200), on: testLoop)
      Issue.record("a missing device opened")
    } catch {
      #expect(error.description.contains("no serial device /nonexistent/ttyACM9"), "\(error)")
    }
    do {
      _ = try await HCIHost.open(transport: .hciUART(path: "/dev/null", baud: 115_200), on: testLoop)
      Issue.record("/dev/null opened as a serial port")
    } catch {
      #expect(error.description.contains("/dev/null is not a serial device"), "\(error)")
    }
  }

  /// Where the kernel has no Bluetooth (these machines), hci-user and l2cap say so and name
  /// what works; on a machine with Bluetooth it is skipped.
  @Test(
    "hci-user and l2cap without kernel Bluetooth: one line naming the transports that work",
    .enabled(if: !kernelHasBluetooth, "this kernel has Bluetooth sockets"))
  func noKernelBluetooth() async throws {
    do {
      _ = try await HCIHost.open(transport: .hciUser(index: 0), on: testLoop)
      Issue.record("hci-user opened without kernel Bluetooth")
    } catch {
      #expect(error.description.hasPrefix("hci-user:0: this machine's kernel has no Bluetooth sockets"), "\(error)")
      #expect(error.description.contains("use hci-tcp:HOST:PORT"), "\(error)")
    }
    do {
      _ = try KernelL2CAP.open(index: 0, on: testLoop)
      Issue.record("l2cap opened without kernel Bluetooth")
    } catch {
      #expect(error.description.hasPrefix("l2cap:hci0: this machine's kernel has no Bluetooth sockets"), "\(error)")
    }
  }
}
