import AMS
import ANCS
import ATT
import GATT

/// Which GATT database the phone publishes (Protocol/iPhone.md, The GATT database).
public enum GATTLayout: String, CaseIterable, Hashable, Sendable {
  /// The services a real iPhone publishes, in its order and handle layout: GAP, GATT,
  /// Continuity, Nearby, Battery, Current Time, Device Information, ANCS, AMS.
  case iPhone = "iphone"
  /// Service Changed, ANCS, Current Time and Battery only (the database of ancs-sim 1.0).
  case minimal
}

/// The behaviour of one iOS generation, where the public sources show it changed
/// (Protocol/iPhone.md, iOS profiles).
public struct IOSProfile: Hashable, Sendable {
  /// What `--ios` takes: the major version ("18").
  public var name: String
  /// One line for `--ios list`.
  public var summary: String
  /// The Receive MTU the phone offers in the Exchange MTU it starts, and answers with.
  public var mtu: UInt16
  /// Whether the database has Device Information (absent before iOS 9).
  public var deviceInformation: Bool
  /// Device Information's Model Number String.
  public var modelNumber: String
  /// Whether the user is asked before an accessory receives notifications (iOS 13 and later).
  public var asksToShare: Bool
  /// The Accessory Design Guidelines' rules for an accessory's connection parameter request.
  public var connectionRules: ConnectionParameterRules
  /// ANCS is published to a link only once it is encrypted, announced with Service Changed.
  public var ancsAfterEncryption = false
  /// Quirks of that era; `--quirk` adds to them.
  public var quirks: Quirks
  /// The quirks in words, for `--ios list`.
  public var quirkNote: String?

  /// Every profile, oldest first.
  public static let catalog: [IOSProfile] = [
    IOSProfile(
      name: "8", summary: "ATT MTU 158; no Device Information", mtu: 158, deviceInformation: false,
      modelNumber: "iPhone7,2", asksToShare: false, connectionRules: .adg2013, quirks: iOS8Quirks,
      quirkNote: "Mail and Calendar answers leave out the PositiveActionLabel asked for"),
    IOSProfile(
      name: "9", summary: "ATT MTU 158; Device Information published", mtu: 158, deviceInformation: true,
      modelNumber: "iPhone8,1", asksToShare: false, connectionRules: .adg2013, quirks: Quirks()),
    IOSProfile(
      name: "12", summary: "ATT MTU 185", mtu: 185, deviceInformation: true, modelNumber: "iPhone11,2",
      asksToShare: false, connectionRules: .adg, quirks: Quirks()),
    IOSProfile(
      name: "18",
      summary:
        "ATT MTU 185; ANCS only on an encrypted link; asks the user to share notifications; a current iPhone (the "
        + "default)",
      mtu: 185, deviceInformation: true, modelNumber: "iPhone17,3", asksToShare: true, connectionRules: .adg,
      ancsAfterEncryption: true, quirks: Quirks()),
  ]

  /// iOS 8 Mail and Calendar leave out the PositiveActionLabel an accessory asks for.
  static let iOS8Quirks: Quirks = {
    var quirks = Quirks()
    quirks.omitTuple = .attribute(NotificationAttributeID.positiveActionLabel.rawValue)
    quirks.omitTupleApps = ["com.apple.mobilemail", "com.apple.mobilecal"]
    return quirks
  }()

  /// A current iOS: the default.
  public static let current = catalog[catalog.count - 1]

  /// Why `--ios` was refused.
  public struct UnknownProfile: Error, CustomStringConvertible {
    public var text: String
    public var description: String {
      "unknown iOS profile '\(text)'; known: " + IOSProfile.catalog.map(\.name).joined(separator: ", ")
    }
  }

  /// The profile named `text` ("18", also "iOS 18" or "18.5": the major version counts).
  public static func named(_ text: String) throws(UnknownProfile) -> IOSProfile {
    var major = Substring(text)
    if major.lowercased().hasPrefix("ios") { major = major.dropFirst(3).drop { $0 == " " } }
    major = major.prefix { $0 != "." }
    guard let profile = catalog.first(where: { $0.name == major }) else { throw UnknownProfile(text: text) }
    return profile
  }

  /// The profile's quirks with the named ones (`--quirk NAME[=N]`) turned on as well.
  public func quirks(adding names: [String]) throws(Quirks.UnknownQuirk) -> Quirks {
    var set = quirks
    for name in names { try set.enable(name) }
    return set
  }
}

/// What the phone is: its database and its iOS generation.
public struct PhoneSettings: Hashable, Sendable {
  public var layout: GATTLayout = .iPhone
  public var profile: IOSProfile = .current
  /// GAP Device Name, as an accessory reads it.
  public var deviceName = "iPhone"
  /// Whether accessories may receive notifications without the user's say
  /// (`ancs phone` takes the profile's: ask on iOS 13 and later).
  public var sharing: SharingPolicy = .allow
  /// ANCS is published to a link only once it is encrypted, announced with Service Changed.
  public var ancsAfterEncryption: Bool

  /// `ancsAfterEncryption` nil: the profile's with the iPhone layout, off with the minimal one.
  public init(
    layout: GATTLayout = .iPhone, profile: IOSProfile = .current, sharing: SharingPolicy = .allow,
    ancsAfterEncryption: Bool? = nil
  ) {
    self.layout = layout
    self.profile = profile
    self.sharing = sharing
    self.ancsAfterEncryption = ancsAfterEncryption ?? (layout == .iPhone && profile.ancsAfterEncryption)
  }

  /// The Receive MTU the phone offers: the profile's with the iPhone layout; with the
  /// minimal one, as much as ATT allows, as ancs-sim 1.0 did (the watch's offer decides).
  var mtu: UInt16 { layout == .iPhone ? profile.mtu : 517 }
}

/// UUIDs of the services only the iPhone layout has.
enum IPhoneUUID {
  static let genericAccess: BluetoothUUID = 0x1800
  static let deviceName: BluetoothUUID = 0x2A00
  static let appearance: BluetoothUUID = 0x2A01
  static let deviceInformation: BluetoothUUID = 0x180A
  static let manufacturerName: BluetoothUUID = 0x2A29
  static let modelNumber: BluetoothUUID = 0x2A24
  static let continuity = BluetoothUUID("D0611E78-BBB4-4591-A5F8-487910AE4366")!
  static let continuityCharacteristic = BluetoothUUID("8667556C-9A37-4C91-84ED-54EE27D90049")!
  static let nearby = BluetoothUUID("9FA480E0-4967-4542-9390-D343DC5D04AE")!
  static let nearbyCharacteristic = BluetoothUUID("AF0BADB1-5B99-43CD-917A-A77BC549E3CC")!
  static let ams = BluetoothUUID(AMSUUID.service)!
  static let remoteCommand = BluetoothUUID(AMSUUID.remoteCommand)!
  static let entityUpdate = BluetoothUUID(AMSUUID.entityUpdate)!
  static let entityAttribute = BluetoothUUID(AMSUUID.entityAttribute)!
}

extension Phone {
  /// GAP Appearance 0x0040, Generic Phone (Bluetooth Assigned Numbers, Appearance Values).
  static let phoneAppearance: UInt16 = 0x0040

  /// Extended Properties bit 0, Reliable Write: what the dumps' extra descriptor is taken to be.
  static let reliableWrite: UInt16 = 0x0001

  /// An Apple characteristic whose protocol the project does not speak: it can be
  /// discovered, subscribed to and written (the writes are taken and ignored); it never
  /// notifies.
  static func opaque(_ uuid: BluetoothUUID, _ properties: CharacteristicProperties) -> CharacteristicDefinition {
    CharacteristicDefinition(
      uuid: uuid, properties: properties, security: .encrypted, extendedProperties: reliableWrite,
      write: { _, _ in .accepted })
  }

  /// GAP: Device Name, Appearance (the iPhone layout puts it before the GATT service).
  static func genericAccessService(_ settings: PhoneSettings) -> ServiceDefinition {
    ServiceDefinition(
      uuid: IPhoneUUID.genericAccess,
      characteristics: [
        .constant(IPhoneUUID.deviceName, Array(settings.deviceName.utf8)),
        .constant(IPhoneUUID.appearance, [UInt8(phoneAppearance & 0xFF), UInt8(phoneAppearance >> 8)]),
      ])
  }

  /// Continuity and Nearby, the two Apple services between GATT and Battery.
  static func appleServices() -> [ServiceDefinition] {
    [
      ServiceDefinition(
        uuid: IPhoneUUID.continuity, characteristics: [opaque(IPhoneUUID.continuityCharacteristic, [.write, .notify])]),
      ServiceDefinition(
        uuid: IPhoneUUID.nearby, characteristics: [opaque(IPhoneUUID.nearbyCharacteristic, [.write, .notify])]),
    ]
  }

  /// Device Information, when the profile has it.
  static func deviceInformationService(_ settings: PhoneSettings) -> ServiceDefinition? {
    guard settings.profile.deviceInformation else { return nil }
    return ServiceDefinition(
      uuid: IPhoneUUID.deviceInformation,
      characteristics: [
        .constant(IPhoneUUID.manufacturerName, Array("Apple Inc.".utf8)),
        .constant(IPhoneUUID.modelNumber, Array(settings.profile.modelNumber.utf8)),
      ])
  }
}
