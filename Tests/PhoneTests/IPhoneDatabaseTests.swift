import ANCS
import ATT
import GATT
import Links
import Phone
import Testing
import Wire

/// An accessory's view of a phone: a GATT client over a memory link, the phone serving it.
struct Accessory {
  let client: GATTClient
  let connection: ATTConnection
  let link: MemoryBearer
  let tasks: [Task<Void, Never>]

  /// `encrypted`: the link starts encrypted, as a paired accessory's does (an iPhone shows
  /// ANCS only then).
  init(_ phone: Phone, mtu: UInt16 = 517, encrypted: Bool = false) async {
    let (central, peripheral) = MemoryLink.pair(initialLevel: encrypted ? .encrypted : .unencrypted)
    await self.init(
      phone, central: central, peripheral: peripheral,
      connection: ATTConnection(bearer: peripheral, options: .init(localMTU: mtu)))
  }

  /// Over a link made by the caller, `connection` on its peripheral end.
  init(_ phone: Phone, central: any ATTBearer, peripheral: MemoryBearer, connection: ATTConnection) async {
    self.connection = connection
    client = await GATTClient(connection: connection)
    link = peripheral
    tasks = [Task { await phone.serve(central) }, Task { await connection.run() }]
  }

  func close() async {
    link.close()
    for task in tasks { await task.value }
  }

  /// Every primary service, as (UUID, first handle, last handle).
  func services() async throws -> [(BluetoothUUID, UInt16, UInt16)] {
    try await client.discoverAllPrimaryServices().map { ($0.uuid, $0.range.start, $0.range.end) }
  }
}

@Suite struct IPhoneDatabaseTests {
  static let ancs = BluetoothUUID(ANCSUUID.service)!

  /// The services and handle ranges of the PacketLogger dump in Protocol/iPhone.md, as a
  /// paired accessory sees them.
  @Test func theDefaultPhoneHasTheServicesAndHandlesOfAnIPhone() async throws {
    let phone = try Phone()
    let accessory = await Accessory(phone, encrypted: true)
    let found = try await accessory.services()
    let expected: [(String, UInt16, UInt16)] = [
      ("1800", 0x0001, 0x0005), ("1801", 0x0006, 0x0009),
      ("D0611E78-BBB4-4591-A5F8-487910AE4366", 0x000A, 0x000E),
      ("9FA480E0-4967-4542-9390-D343DC5D04AE", 0x000F, 0x0013), ("180F", 0x0014, 0x0017),
      ("1805", 0x0018, 0x001D), ("180A", 0x001E, 0x0022),
      (ANCSUUID.service, 0x0023, 0x002C), ("89D3502B-0F36-433A-8EF4-C502AD55F8DC", 0x002D, 0x0038),
    ]
    #expect(found.map(\.0) == expected.map { BluetoothUUID($0.0)! })
    #expect(found.map(\.1) == expected.map(\.1))
    #expect(found.map(\.2) == expected.map(\.2))
    await accessory.close()
  }

  /// Control Point first with a descriptor of its own, then Notification Source, Data Source.
  @Test func ancsListsTheControlPointFirstWithItsDescriptor() async throws {
    let phone = try Phone()
    let accessory = await Accessory(phone, encrypted: true)
    let service = try #require(try await accessory.client.discoverPrimaryServices(Self.ancs).first)
    let characteristics = try await accessory.client.discoverCharacteristics(of: service)
    #expect(
      characteristics.map(\.uuid)
        == [ANCSUUID.controlPoint, ANCSUUID.notificationSource, ANCSUUID.dataSource].map { BluetoothUUID($0)! })
    #expect(characteristics.map(\.declarationHandle) == [0x0024, 0x0027, 0x002A])
    #expect(characteristics.map(\.valueHandle) == [0x0025, 0x0028, 0x002B])
    #expect(characteristics[0].properties.contains(.extendedProperties))
    let descriptors = try await accessory.client.discoverDescriptors(of: characteristics[0])
    #expect(descriptors.map(\.handle) == [0x0026])
    #expect(descriptors.map(\.uuid) == [.characteristicExtendedProperties])
    #expect(try await accessory.client.read(0x0026) == [0x01, 0x00])
    let sourceDescriptors = try await accessory.client.discoverDescriptors(of: characteristics[1])
    #expect(sourceDescriptors.map(\.uuid) == [.clientCharacteristicConfiguration])
    #expect(sourceDescriptors.map(\.handle) == [0x0029])
    await accessory.close()
  }

  /// Issue #14 (4): a current iPhone leaves ANCS out of discovery until the link is encrypted
  /// (InfiniTimeOrg/InfiniTime#910), then announces it with Service Changed; the other
  /// profiles, `--ancs-after-encryption off` and the minimal layout publish it always.
  @Test func ancsIsHiddenUntilTheLinkIsEncrypted() async throws {
    let phone = try Phone()
    let accessory = await Accessory(phone)
    let before = try await accessory.services()
    #expect(before.count == 8 && !before.contains { $0.0 == Self.ancs })
    let changed = try #require(phone.server.serviceChangedHandles)
    let ranges = AsyncStream<[UInt8]>.makeStream()
    await accessory.client.onValue(changed.value) { ranges.continuation.yield($1.value) }
    try await accessory.client.configure(cccd: try #require(changed.cccd), .indications)
    #expect(try await accessory.link.pair(.encrypted) == .encrypted)
    let after = try await accessory.services()
    #expect(after.count == 9 && after.contains { $0.0 == Self.ancs && $0.1 == 0x0023 && $0.2 == 0x002C })
    var iterator = ranges.stream.makeAsyncIterator()
    #expect(await iterator.next() == [0x23, 0x00, 0x2C, 0x00], "Service Changed over ANCS's range")
    await accessory.close()
    for settings in [
      PhoneSettings(ancsAfterEncryption: false), PhoneSettings(profile: try IOSProfile.named("12")),
      PhoneSettings(layout: .minimal),
    ] {
      let always = await Accessory(try Phone(settings: settings))
      #expect(try await always.services().contains { $0.0 == Self.ancs }, "\(settings)")
      await always.close()
    }
  }

  /// An iPhone answers Battery Level on an unpaired link with Insufficient Authentication;
  /// once encrypted it reads.
  @Test func batteryLevelNeedsPairingAndSaysInsufficientAuthentication() async throws {
    let phone = try Phone()
    let accessory = await Accessory(phone)
    let level = try #require(phone.server.database.attributes.first { $0.type == BluetoothUUID.bit16(0x2A19) }).handle
    do {
      _ = try await accessory.client.read(level)
      Issue.record("Battery Level read on an unpaired link")
    } catch {
      #expect(error.errorCode == .insufficientAuthentication)
    }
    _ = try await accessory.link.pair(.encrypted)
    #expect(try await accessory.client.read(level) == [await phone.battery])
    await accessory.close()
  }

  /// GAP and Device Information read without pairing: the phone's name and Apple's.
  @Test func deviceNameAndDeviceInformationRead() async throws {
    let phone = try Phone()
    let accessory = await Accessory(phone)
    func value(_ uuid: UInt16) async throws -> String {
      let handle = try #require(phone.server.database.attributes.first { $0.type == BluetoothUUID.bit16(uuid) }).handle
      return String(decoding: try await accessory.client.read(handle), as: UTF8.self)
    }
    #expect(try await value(0x2A00) == "iPhone")
    #expect(try await value(0x2A29) == "Apple Inc.")
    #expect(try await value(0x2A24) == IOSProfile.current.modelNumber)
    await accessory.close()
  }

  /// `--gatt-layout minimal`: the 1.0 database, Notification Source first, no extra services.
  @Test func theMinimalLayoutKeepsTheSmallDatabase() async throws {
    let phone = try Phone(settings: PhoneSettings(layout: .minimal))
    let accessory = await Accessory(phone)
    let found = try await accessory.services()
    #expect(found.map(\.0) == [.genericAttributeService, Self.ancs, 0x1805, 0x180F])
    let service = try #require(try await accessory.client.discoverPrimaryServices(Self.ancs).first)
    let characteristics = try await accessory.client.discoverCharacteristics(of: service)
    #expect(characteristics.first?.uuid == BluetoothUUID(ANCSUUID.notificationSource)!)
    await accessory.close()
  }

  /// iOS 8 had no Device Information; the rest keep the iPhone order.
  @Test func anIOS8PhoneHasNoDeviceInformation() async throws {
    let phone = try Phone(settings: PhoneSettings(profile: try IOSProfile.named("8")))
    let accessory = await Accessory(phone)
    let found = try await accessory.services()
    #expect(!found.contains { $0.0 == 0x180A })
    #expect(found.map(\.0).suffix(2) == [Self.ancs, BluetoothUUID("89D3502B-0F36-433A-8EF4-C502AD55F8DC")!])
    await accessory.close()
  }

  @Test func profilesAreNamedByTheirMajorVersion() throws {
    #expect(try IOSProfile.named("18.5") == IOSProfile.current)
    #expect(try IOSProfile.named("iOS 9").mtu == 158)
    #expect(try IOSProfile.named("12").mtu == 185)
    #expect(throws: IOSProfile.UnknownProfile.self) { try IOSProfile.named("7") }
    #expect(throws: IOSProfile.UnknownProfile.self) { try IOSProfile.named("") }
  }
}
