import ATT
import Glibc
import HCI
import Links
import Runtime
import Sockets
import TestSupport
import Testing
import Wire

/// A controller for the host's tests, at the far end of a Unix stream socket pair whose near
/// end is the host's `stream` (a `DescriptorStream` read by the test loop, as a real
/// controller's is): a thread of its own reads the H4 bytes the host writes, keeps every
/// command and ACL packet for the test to await, and answers commands the way a controller
/// does unless told to stay silent. The test makes it send events and ACL data.
final class FakeController: Sendable {
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

  /// The host's end.
  let stream: DescriptorStream
  /// The controller's end.
  private let far: OwnedFD
  /// Commands from the host, in order.
  let commands = Inbox<HCICommandPacket>()
  /// ACL packets from the host, in order.
  let acl = Inbox<ACLPacket>()
  private let reassembler = Locked(ACLReassembler())
  /// Serialises writes to the host, so that two packets never interleave.
  private let writing = Locked(())
  let settings: Locked<Settings>

  init(_ settings: Settings = Settings(), loop: EventLoop = testLoop) {
    self.settings = Locked(settings)
    var fds: [Int32] = [-1, -1]
    let made = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
    precondition(made == 0, "socketpair: \(errno)")
    stream = DescriptorStream(adopting: fds[0], name: "fake", on: loop)
    far = OwnedFD(fds[1])
    // The thread holds the fake until the host's end closes.
    precondition(spawnThread { [self] in readLoop() }, "cannot start the fake controller's thread")
  }

  /// Closes the controller's end: the host sees its stream end.
  func close() { far.shutdown() }

  private func readLoop() {
    var decoder = H4Decoder()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(far.fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { break }
      let packets: [H4Packet]
      do {
        packets = try decoder.packets(after: buffer[0..<count])
      } catch {
        Issue.record("the host broke the H4 stream: \(error)")
        break
      }
      for packet in packets { received(packet) }
    }
    commands.close()
    acl.close()
  }

  private func received(_ packet: H4Packet) {
    switch packet.type {
    case .command:
      guard let command = try? HCICommandPacket(decoding: packet.bytes) else {
        Issue.record("the host sent a malformed command: \(packet.bytes)")
        return
      }
      commands.push(command)
      answer(command)
    case .acl:
      guard let data = try? ACLPacket(decoding: packet.bytes) else {
        Issue.record("the host sent malformed ACL data: \(packet.bytes)")
        return
      }
      acl.push(data)
    default:
      Issue.record("the host sent a \(packet.type) packet")
    }
  }

  // MARK: Sending to the host

  func send(_ event: HCIEvent) { sendRaw([H4PacketType.event.rawValue] + event.encoded) }
  func send(_ packet: ACLPacket) { sendRaw([H4PacketType.acl.rawValue] + packet.encoded) }

  /// Writes `bytes` to the host whole (a blocking write: the host's loop always reads). A
  /// host that closed its end takes nothing.
  func sendRaw(_ bytes: [UInt8]) {
    writing.withLock { _ in
      bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
          let written = Glibc.send(far.fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
          if written < 0 && errno == EINTR { continue }
          guard written > 0 else { return }
          offset += written
        }
      }
    }
  }

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
  options: HCIHost.Options = HCIHost.Options(), security: any HCISecurityManager = PairingNotSupported(),
  capture: BtsnoopWriter? = nil, loop: EventLoop = testLoop
) async throws -> (FakeController, HCIHost) {
  let fake = FakeController(settings, loop: loop)
  let host = HCIHost(stream: fake.stream, clock: clock, options: options, capture: capture, security: security)
  try await host.setUp()
  while fake.commands.count > 0 { _ = await fake.commands.next() }
  return (fake, host)
}

/// A host with one connection in `role`, handle 0x0040.
func connectedHost(
  role: LinkRole, _ settings: FakeController.Settings = FakeController.Settings(),
  clock: any EngineClock = SystemClock(), security: any HCISecurityManager = PairingNotSupported(),
  capture: BtsnoopWriter? = nil, loop: EventLoop = testLoop
) async throws -> (FakeController, HCIHost, HCIConnection) {
  let (fake, host) = try await startHost(settings, clock: clock, security: security, capture: capture, loop: loop)
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
