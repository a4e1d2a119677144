import ANCS
import ATT
import GATT
import Links
import Phone
import Testing
import Wire

/// What an iPhone does on a new link: it starts Exchange MTU, then reads the Device Name.
@Suite struct IPhoneLinkTests {
  /// The first PDU from the phone is its Exchange MTU Request, with the profile's MTU.
  @Test(arguments: [("18", 185), ("12", 185), ("9", 158), ("8", 158)] as [(String, UInt16)])
  func thePhoneStartsExchangeMTUWithItsProfilesMTU(_ version: String, _ mtu: UInt16) async throws {
    let phone = try Phone(settings: PhoneSettings(profile: try IOSProfile.named(version)))
    let (central, peripheral) = MemoryLink.pair()
    let serving = Task { await phone.serve(central) }
    let first = try await peripheral.receive()
    #expect(first == [0x02, UInt8(mtu & 0xFF), UInt8(mtu >> 8)])
    peripheral.close()
    await serving.value
  }

  /// The minimal layout keeps 1.0's silence: the accessory speaks first.
  @Test func theMinimalLayoutStartsNothing() async throws {
    let phone = try Phone(settings: PhoneSettings(layout: .minimal))
    let (central, peripheral) = MemoryLink.pair()
    let serving = Task { await phone.serve(central) }
    // A request of the accessory's is answered, and it is the first thing that comes.
    try peripheral.send([0x02, 0x05, 0x02])
    #expect(try await peripheral.receive() == [0x03, 0x05, 0x02])
    peripheral.close()
    await serving.value
  }

  /// After the exchange the phone reads the accessory's Device Name and reports it, with the
  /// MTU agreed (the smaller offer: 185 against 517).
  @Test func thePhoneReadsAndReportsTheAccessorysName() async throws {
    let phone = try Phone()
    var events = phone.events().makeAsyncIterator()
    let (central, peripheral) = MemoryLink.pair()
    let connection = ATTConnection(bearer: peripheral)
    let gap = ServiceDefinition(
      uuid: 0x1800, characteristics: [.constant(0x2A00, Array("Ring 7".utf8))])
    let server = try GATTServer(leading: [gap], services: [], serviceChanged: false)
    await server.attach(connection)
    let tasks = [Task { await phone.serve(central) }, Task { await connection.run() }]
    var identified: PhoneEvent?
    while let event = await events.next(isolation: nil) {
      if case .identified = event {
        identified = event
        break
      }
    }
    #expect(identified == .identified(session: 1, mtu: 185, name: "Ring 7", problem: nil))
    #expect(connection.mtu == 185)
    peripheral.close()
    for task in tasks { await task.value }
  }

  /// An accessory with no GATT server of its own: the phone says so and serves on.
  @Test func anAccessoryWithoutADeviceNameIsReportedAndServed() async throws {
    let phone = try Phone()
    var events = phone.events().makeAsyncIterator()
    let accessory = await Accessory(phone)
    var identified: PhoneEvent?
    while let event = await events.next(isolation: nil) {
      if case .identified = event {
        identified = event
        break
      }
    }
    guard case .identified(_, let mtu, let name, let problem) = identified else {
      Issue.record("no identified event")
      return
    }
    #expect(mtu == 185)
    #expect(name == nil)
    #expect(problem == "Device Name read answered requestNotSupported(6)", "\(problem ?? "")")
    #expect(try await accessory.services().count == 8, "ANCS hidden: the link is not encrypted")
    await accessory.close()
  }
}
