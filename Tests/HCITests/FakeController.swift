import ATT
import HCI
import Links
import Runtime
import Testing
import Wire

/// An in-memory controller for the host's tests: it reads the H4 bytes the host writes, keeps
/// every command and ACL packet for the test to await, and answers commands the way a
/// controller does unless told to stay silent. The test makes it send events and ACL data.
final class FakeController: HCIByteStream {
  struct Settings {
    /// Answer commands automatically (Command Complete, or Command Status for the commands
    /// that complete later).
    var autoAnswer = true
    /// Commands never answered.
    var silent: Set<HCIOpcode> = []
    /// Status of every automatic answer, by opcode (success otherwise).
    var failing: [HCIOpcode: HCIStatus] = [:]
    var credits: UInt8 = 1
    var leACLLength: UInt16 = 27
    var leACLCount: UInt8 = 2
    var sharedACLLength: UInt16 = 251
    var sharedACLCount: UInt16 = 4
  }

  let name = "fake"
  private let toHost = Inbox<[UInt8]>()
  /// Commands from the host, in order.
  let commands = Inbox<HCICommandPacket>()
  /// ACL packets from the host, in order.
  let acl = Inbox<ACLPacket>()
  private let decoder = Locked(H4Decoder())
  private let reassembler = Locked(ACLReassembler())
  let settings: Locked<Settings>

  init(_ settings: Settings = Settings()) {
    self.settings = Locked(settings)
  }

  func read() async throws(LinkFault) -> [UInt8]? { await toHost.next() }

  func write(_ bytes: [UInt8]) async throws(LinkFault) {
    let packets = decoder.withLock { decoder in (try? decoder.packets(after: bytes)) ?? [] }
    for packet in packets {
      switch packet.type {
      case .command:
        guard let command = try? HCICommandPacket(decoding: packet.bytes) else {
          Issue.record("the host sent a malformed command: \(packet.bytes)")
          continue
        }
        commands.push(command)
        answer(command)
      case .acl:
        guard let data = try? ACLPacket(decoding: packet.bytes) else {
          Issue.record("the host sent malformed ACL data: \(packet.bytes)")
          continue
        }
        acl.push(data)
      default:
        Issue.record("the host sent a \(packet.type) packet")
      }
    }
  }

  func close() { toHost.close() }

  // MARK: Sending to the host

  func send(_ event: HCIEvent) { toHost.push([H4PacketType.event.rawValue] + event.encoded) }
  func send(_ packet: ACLPacket) { toHost.push([H4PacketType.acl.rawValue] + packet.encoded) }
  func sendRaw(_ bytes: [UInt8]) { toHost.push(bytes) }

  /// An L2CAP frame in one ACL packet (PB 0b10, as controllers send), of any size.
  func send(_ channel: ChannelID, _ payload: [UInt8], handle: UInt16 = 0x0040) {
    send(
      ACLPacket(
        handle: handle, packetBoundary: .firstFlushable, data: L2CAPFrame(channel: channel, payload: payload).encoded))
  }

  func complete(_ opcode: HCIOpcode, _ parameters: [UInt8] = [0x00], credits: UInt8? = nil) {
    let credits = credits ?? settings.withLock { $0.credits }
    send(
      .commandComplete(
        CommandComplete(numHCICommandPackets: credits, commandOpcode: opcode, returnParameters: parameters)))
  }

  func status(_ opcode: HCIOpcode, _ status: HCIStatus = .success) {
    let credits = settings.withLock { $0.credits }
    send(.commandStatus(CommandStatus(status: status, numHCICommandPackets: credits, commandOpcode: opcode)))
  }

  func connectionComplete(handle: UInt16 = 0x0040, role: UInt8, peer: BDAddress = BDAddress("C0:00:00:00:00:42")!) {
    send(
      .leConnectionComplete(
        LEConnectionComplete(
          connectionHandle: handle, role: role, peerAddressType: .random, peerAddress: peer, connectionInterval: 24,
          supervisionTimeout: 72)))
  }

  func completed(handle: UInt16 = 0x0040, _ count: UInt16) {
    send(
      .numberOfCompletedPackets(
        NumberOfCompletedPackets(entries: [.init(connectionHandle: handle, numCompletedPackets: count)])))
  }

  // MARK: Receiving from the host

  /// The next command the host sent; fails the test at the end of the stream.
  func nextCommand(sourceLocation: SourceLocation = #_sourceLocation) async -> HCICommandPacket? {
    let command = await commands.next()
    if command == nil { Issue.record("no more commands", sourceLocation: sourceLocation) }
    return command
  }

  /// The next whole L2CAP frame the host sent (its ACL packets reassembled).
  func nextFrame(sourceLocation: SourceLocation = #_sourceLocation) async -> L2CAPFrame? {
    while let packet = await acl.next() {
      let pdu = reassembler.withLock { try? $0.push(packet) }
      if let pdu { return try? L2CAPFrame(decoding: pdu) }
    }
    Issue.record("no more ACL data", sourceLocation: sourceLocation)
    return nil
  }

  private func answer(_ command: HCICommandPacket) {
    let settings = settings.withLock { $0 }
    guard settings.autoAnswer, !settings.silent.contains(command.opcode) else { return }
    let status = settings.failing[command.opcode] ?? .success
    switch command.opcode {
    case LECreateConnection.opcode, LEConnectionUpdate.opcode, LEStartEncryption.opcode:
      self.status(command.opcode, status)
    case Disconnect.opcode:
      self.status(command.opcode, status)
      if status == .success, let disconnect = try? Disconnect(packet: command) {
        send(
          .disconnectionComplete(
            DisconnectionComplete(
              connectionHandle: disconnect.connectionHandle, reason: .connectionTerminatedByLocalHost)))
      }
    case LEReadBufferSize.opcode:
      complete(
        command.opcode,
        LEReadBufferSize.ReturnParameters(
          status: status, leACLDataPacketLength: settings.leACLLength, totalNumLEACLDataPackets: settings.leACLCount
        ).encoded)
    case ReadBufferSize.opcode:
      complete(
        command.opcode,
        ReadBufferSize.ReturnParameters(
          status: status, aclDataPacketLength: settings.sharedACLLength, totalNumACLDataPackets: settings.sharedACLCount
        ).encoded)
    case ReadBDADDR.opcode:
      complete(command.opcode, ReadBDADDR.ReturnParameters(status: status, address: .zero).encoded)
    default:
      complete(command.opcode, [status.rawValue])
    }
  }
}

/// A host on a fake controller, set up.
func startHost(
  _ settings: FakeController.Settings = FakeController.Settings(), clock: any EngineClock = SystemClock(),
  options: HCIHost.Options = HCIHost.Options(), security: any HCISecurityManager = PairingNotSupported()
) async throws -> (FakeController, HCIHost) {
  let fake = FakeController(settings)
  let host = HCIHost(stream: fake, clock: clock, options: options, security: security)
  try await host.setUp()
  while fake.commands.count > 0 { _ = await fake.commands.next() }
  return (fake, host)
}

/// A host with one connection in `role`, handle 0x0040.
func connectedHost(
  role: LinkRole, _ settings: FakeController.Settings = FakeController.Settings(),
  clock: any EngineClock = SystemClock(), security: any HCISecurityManager = PairingNotSupported()
) async throws -> (FakeController, HCIHost, HCIConnection) {
  let (fake, host) = try await startHost(settings, clock: clock, security: security)
  fake.connectionComplete(role: role == .central ? 0x00 : 0x01)
  let connection: HCIConnection
  if role == .peripheral {
    connection = try await host.accept(Advertisement(name: "watch"))
  } else {
    connection = try await host.connect(
      to: DeviceAddress(type: .random, address: BDAddress("C0:00:00:00:00:42")!), timeout: .seconds(5))
  }
  while fake.commands.count > 0 { _ = await fake.commands.next() }
  return (fake, host, connection)
}
