import ANCS
import ATT
import GATT
import Wire

/// Fault switches: test-only flags, each breaking exactly one rule of Protocol/ANCS.md that an
/// NP conformance case checks (or, for the IOS cases, one line of Protocol/iPhone.md). They exist to prove the conformance suite can fail
/// (Protocol/conformance.md, "Fault switches"); they are not quirks, which reproduce
/// documented iOS misbehaviours a watch must survive. All are off by default. Each sets a
/// field of a policy computed once, `ControlPointPolicy` for the Control Point and
/// `PhonePolicy` for the rest, so the phone's rules carry no fault branch.
public struct PhoneFaults: FaultSwitches, Hashable {
  public var rawValue: UInt64
  public init(rawValue: UInt64) { self.rawValue = rawValue }

  // SVC: service and characteristic shape
  /// The Control Point is published under a wrong UUID (the last digit changed).
  public static let controlPointWrongUUID = PhoneFaults(rawValue: 1 << 0)
  /// The Notification Source lacks the notify property, hence its CCCD.
  public static let notificationSourceWithoutNotify = PhoneFaults(rawValue: 1 << 1)
  /// The Control Point takes writes without response only.
  public static let controlPointWithoutWrite = PhoneFaults(rawValue: 1 << 2)
  /// The Data Source lacks the notify property, hence its CCCD.
  public static let dataSourceWithoutNotify = PhoneFaults(rawValue: 1 << 3)
  // SEC: security
  /// The Notification Source and its CCCD need no encryption.
  public static let notificationSourceUnencrypted = PhoneFaults(rawValue: 1 << 4)
  /// The Data Source and its CCCD need no encryption.
  public static let dataSourceUnencrypted = PhoneFaults(rawValue: 1 << 5)
  /// The Control Point needs no encryption.
  public static let controlPointUnencrypted = PhoneFaults(rawValue: 1 << 6)
  /// Both subscriptions need an authenticated (MITM) link: an encrypted one is refused 0x05.
  public static let subscriptionsNeedAuthentication = PhoneFaults(rawValue: 1 << 7)
  // NS: Notification Source events
  /// CategoryCount counts before the event instead of after it.
  public static let categoryCountBeforeEvent = PhoneFaults(rawValue: 1 << 8)
  /// A change is announced as Added instead of Modified.
  public static let modifiedAsAdded = PhoneFaults(rawValue: 1 << 9)
  /// A removal is announced as Modified instead of Removed.
  public static let removedAsModified = PhoneFaults(rawValue: 1 << 10)
  /// EventFlags never carry Silent or Important.
  public static let noImportanceFlags = PhoneFaults(rawValue: 1 << 11)
  // PRE: pre-existing notifications
  /// The session-start report lacks the PreExisting flag.
  public static let noPreExistingFlag = PhoneFaults(rawValue: 1 << 12)
  // GNA: Get Notification Attributes
  /// Date in ISO 8601 extended form (2026-11-29T12:00:00), not yyyyMMdd'T'HHmmSS.
  public static let dateFormat = PhoneFaults(rawValue: 1 << 13)
  /// Maximum lengths are ignored: values come whole.
  public static let maxLengthIgnored = PhoneFaults(rawValue: 1 << 14)
  /// Values are cut at the byte maximum even inside a multi-byte UTF-8 character.
  public static let utf8Split = PhoneFaults(rawValue: 1 << 15)
  /// Tuples in AttributeID order, not request order.
  public static let tuplesSorted = PhoneFaults(rawValue: 1 << 16)
  /// MessageSize gives the length of the Message as cut, not its full length.
  public static let messageSizeOfCut = PhoneFaults(rawValue: 1 << 17)
  // FRAG: fragmentation
  /// A notification-attributes answer is capped at 512 bytes (the longest ATT attribute
  /// value) by cutting its longest value, as if it had to fit one attribute.
  public static let answerCapped512 = PhoneFaults(rawValue: 1 << 18)
  // GAA: Get App Attributes
  /// DisplayName is empty.
  public static let appNameEmpty = PhoneFaults(rawValue: 1 << 19)
  /// Get App Attributes for an unknown app is answered (empty DisplayName), not 0xA2.
  public static let unknownAppAccepted = PhoneFaults(rawValue: 1 << 20)
  /// An AppIdentifier without its NUL is taken to the end of the write, not refused 0xA1.
  public static let appIdentifierWithoutNulAccepted = PhoneFaults(rawValue: 1 << 21)
  // PNA: Perform Notification Action
  /// An accepted action keeps the notification (announced Modified), no Removed.
  public static let actionKeepsNotification = PhoneFaults(rawValue: 1 << 22)
  /// An action the notification does not offer is answered 0xA2, not 0xA3.
  public static let missingActionAnsweredA2 = PhoneFaults(rawValue: 1 << 23)
  // CP: Control Point errors
  /// An unknown or removed NotificationUID is answered 0xA1, not 0xA2.
  public static let unknownUIDAnsweredA1 = PhoneFaults(rawValue: 1 << 24)
  /// An unknown CommandID is answered 0xA1, not 0xA0.
  public static let unknownCommandAnsweredA1 = PhoneFaults(rawValue: 1 << 25)
  /// A truncated UID or ActionID is answered 0xA2, not 0xA1.
  public static let truncatedAnsweredA2 = PhoneFaults(rawValue: 1 << 26)
  /// Title, Subtitle or Message without MaxLength is taken as "no maximum", not refused 0xA1.
  public static let missingMaxLengthAccepted = PhoneFaults(rawValue: 1 << 27)
  /// Get Notification Attributes with no AttributeID is answered (header only), not 0xA1.
  public static let noAttributesAccepted = PhoneFaults(rawValue: 1 << 28)
  // DS: Data Source discipline
  /// A refused command is echoed on the Data Source before its Error Response.
  public static let dataAfterError = PhoneFaults(rawValue: 1 << 29)
  // UID: identifiers
  /// A new notification reuses the UID of the last removed one.
  public static let reuseUID = PhoneFaults(rawValue: 1 << 30)
  // IOS: what an iPhone does besides ANCS (Protocol/iPhone.md)
  /// The phone never starts Exchange MTU.
  public static let noMTUExchange = PhoneFaults(rawValue: 1 << 31)
  /// The phone never reads the accessory's Device Name.
  public static let noDeviceNameRead = PhoneFaults(rawValue: 1 << 32)
  /// Battery Level is readable on an unpaired link.
  public static let batteryUnprotected = PhoneFaults(rawValue: 1 << 33)
  /// Revoking notification sharing changes nothing.
  public static let sharingIgnored = PhoneFaults(rawValue: 1 << 34)
  /// ANCS is discovered on an unencrypted link although the settings publish it only later.
  public static let ancsAlwaysPublished = PhoneFaults(rawValue: 1 << 35)
  // BOND: bond trouble
  /// When the accessory has lost its bond, the phone pairs again at once (as some Android
  /// phones do) instead of keeping its bond and dropping the link.
  public static let pairAgainOnKeyMissing = PhoneFaults(rawValue: 1 << 36)
  // AMS: the Apple Media Service (Protocol/AMS.md)
  /// Remote Command lacks the notify property, hence its CCCD.
  public static let amsRemoteCommandWithoutNotify = PhoneFaults(rawValue: 1 << 37)
  /// The AMS characteristics need no encryption.
  public static let amsUnencrypted = PhoneFaults(rawValue: 1 << 38)
  /// Entity Update and Entity Attribute writes are taken before the accessory subscribed.
  public static let amsNoInvalidState = PhoneFaults(rawValue: 1 << 39)
  /// A malformed Entity Update write is taken (and ignored), not refused Invalid Command.
  public static let amsMalformedAccepted = PhoneFaults(rawValue: 1 << 40)
  /// A registration is not followed by the attributes' current values.
  public static let amsNoCurrentValues = PhoneFaults(rawValue: 1 << 41)
  /// A value cut to fit a notification lacks the Truncated flag.
  public static let amsNoTruncatedFlag = PhoneFaults(rawValue: 1 << 42)
  /// Entity Attribute gives the value as cut for a notification, not whole.
  public static let amsEntityAttributeCut = PhoneFaults(rawValue: 1 << 43)
  /// Remote commands are acknowledged and not performed.
  public static let amsCommandsIgnored = PhoneFaults(rawValue: 1 << 44)
  /// Pairs by Just Works only, as a phone that can neither show nor type a number: an
  /// accessory that asks for MITM protection never gets it.
  public static let justWorksOnly = PhoneFaults(rawValue: 1 << 45)

  public typealias Definition = FaultDefinition<PhoneFaults>
  public typealias UnknownFault = Wire.UnknownFault

  /// Every fault, by name, in catalog order (the order of the NP case groups).
  public static let catalog: [Definition] = [
    Definition(
      name: "control-point-wrong-uuid", fault: .controlPointWrongUUID,
      rule: "Service and characteristics: Control Point 69D1D8F3-45E1-49A8-9821-9BBDFDAAD9D9"),
    Definition(
      name: "notification-source-without-notify", fault: .notificationSourceWithoutNotify,
      rule: "Service and characteristics: Notification Source | notify"),
    Definition(
      name: "control-point-without-write", fault: .controlPointWithoutWrite,
      rule: "Service and characteristics: Control Point | write (with response)"),
    Definition(
      name: "data-source-without-notify", fault: .dataSourceWithoutNotify,
      rule: "Service and characteristics: Data Source | notify"),
    Definition(
      name: "notification-source-unencrypted", fault: .notificationSourceUnencrypted,
      rule: "Session and security: the characteristics and their CCCDs need an encrypted link (Notification Source)"),
    Definition(
      name: "data-source-unencrypted", fault: .dataSourceUnencrypted,
      rule: "Session and security: the characteristics and their CCCDs need an encrypted link (Data Source)"),
    Definition(
      name: "control-point-unencrypted", fault: .controlPointUnencrypted,
      rule: "Session and security: the characteristics and their CCCDs need an encrypted link (Control Point)"),
    Definition(
      name: "subscriptions-need-authentication", fault: .subscriptionsNeedAuthentication,
      rule: "Session and security: an encrypted link is what the CCCDs need (no more)"),
    Definition(
      name: "just-works-only", fault: .justWorksOnly,
      rule: "iPhone.md, Pairing and bonds: KeyboardDisplay, MITM; an accessory that asks for MITM protection gets it"),
    Definition(
      name: "category-count-before-event", fault: .categoryCountBeforeEvent,
      rule: "Notification Source: CategoryCount counts active notifications \"after this event\""),
    Definition(
      name: "modified-as-added", fault: .modifiedAsAdded, rule: "Notification Source: EventID 1 Modified"),
    Definition(
      name: "removed-as-modified", fault: .removedAsModified, rule: "Notification Source: EventID 2 Removed"),
    Definition(
      name: "no-importance-flags", fault: .noImportanceFlags,
      rule: "Notification Source: EventFlags bit 0 Silent, bit 1 Important"),
    Definition(
      name: "no-preexisting-flag", fault: .noPreExistingFlag,
      rule: "Session and security: at session start every existing notification is Added with PreExisting"),
    Definition(name: "date-format", fault: .dateFormat, rule: "Text: Date is yyyyMMdd'T'HHmmSS"),
    Definition(
      name: "max-length-ignored", fault: .maxLengthIgnored,
      rule: "Text: byte maximums; a value is cut within the maximum"),
    Definition(
      name: "utf8-split", fault: .utf8Split, rule: "Text: a cut is never inside a multi-byte character"),
    Definition(
      name: "tuples-sorted", fault: .tuplesSorted, rule: "Data Source: tuples come in the order requested"),
    Definition(
      name: "message-size-of-cut", fault: .messageSizeOfCut,
      rule: "Control Point commands: MessageSize is the message's full length in bytes"),
    Definition(
      name: "answer-capped-512", fault: .answerCapped512,
      rule: "Data Source responses: a long response is split over several notifications (no total length)"),
    Definition(name: "app-name-empty", fault: .appNameEmpty, rule: "Get App Attributes: AppAttributeID 0 DisplayName"),
    Definition(
      name: "unknown-app-accepted", fault: .unknownAppAccepted,
      rule: "Errors: 0xA2 when the AppIdentifier does not exist"),
    Definition(
      name: "app-identifier-without-nul-accepted", fault: .appIdentifierWithoutNulAccepted,
      rule: "Decoding rules: an AppIdentifier with no NUL fails with missingTerminator, answered 0xA1"),
    Definition(
      name: "action-keeps-notification", fault: .actionKeepsNotification,
      rule: "Errors/what the phone also does: an accepted action ends the notification, the Removed event follows"),
    Definition(
      name: "missing-action-answered-a2", fault: .missingActionAnsweredA2,
      rule: "Errors: 0xA3 when the notification has no such action"),
    Definition(
      name: "unknown-uid-answered-a1", fault: .unknownUIDAnsweredA1,
      rule: "Errors: 0xA2 when the NotificationUID does not exist (or no longer exists)"),
    Definition(
      name: "unknown-command-answered-a1", fault: .unknownCommandAnsweredA1,
      rule: "Errors: 0xA0 when the CommandID is not 0, 1 or 2"),
    Definition(
      name: "truncated-answered-a2", fault: .truncatedAnsweredA2,
      rule: "Decoding rules: a truncated UID or ActionID fails with truncated, answered 0xA1"),
    Definition(
      name: "missing-max-length-accepted", fault: .missingMaxLengthAccepted,
      rule: "Decoding rules: Title, Subtitle or Message without MaxLength fails, answered 0xA1"),
    Definition(
      name: "no-attributes-accepted", fault: .noAttributesAccepted,
      rule: "Decoding rules: a command with no AttributeID fails with noAttributes, answered 0xA1"),
    Definition(
      name: "data-after-error", fault: .dataAfterError,
      rule: "Errors: after an error the phone sends nothing on the Data Source for that command"),
    Definition(
      name: "reuse-uid", fault: .reuseUID, rule: "What the phone also does: it never reuses a UID while it runs"),
    Definition(
      name: "no-mtu-exchange", fault: .noMTUExchange,
      rule: "iPhone.md, Behaviour on the link: the phone starts Exchange MTU right after connecting"),
    Definition(
      name: "no-device-name-read", fault: .noDeviceNameRead,
      rule: "iPhone.md, Behaviour on the link: the phone reads the accessory's Device Name"),
    Definition(
      name: "battery-unprotected", fault: .batteryUnprotected,
      rule: "iPhone.md, Security: Battery Level on an unpaired link answers Insufficient Authentication"),
    Definition(
      name: "sharing-ignored", fault: .sharingIgnored,
      rule: "iPhone.md, Behaviour on the link: Write Not Permitted while sharing is not allowed"),
    Definition(
      name: "ancs-always-published", fault: .ancsAlwaysPublished,
      rule: "iPhone.md, Behaviour on the link: ANCS published once the link is encrypted, with Service Changed"),
    Definition(
      name: "pair-again-on-key-missing", fault: .pairAgainOnKeyMissing,
      rule: "iPhone.md, Pairing and bonds: an iPhone keeps its bond and drops an accessory that lost it"),
    Definition(
      name: "ams-remote-command-without-notify", fault: .amsRemoteCommandWithoutNotify,
      rule: "AMS.md, Service and characteristics: Remote Command | write, notify"),
    Definition(
      name: "ams-unencrypted", fault: .amsUnencrypted,
      rule: "AMS.md, Service and characteristics (security): the characteristics need an encrypted link"),
    Definition(
      name: "ams-no-invalid-state", fault: .amsNoInvalidState,
      rule: "AMS.md, Errors: Invalid State (0xA0) for a write before the accessory subscribed to Entity Update"),
    Definition(
      name: "ams-malformed-accepted", fault: .amsMalformedAccepted,
      rule: "AMS.md, Errors: Invalid Command (0xA1) for a write that does not decode"),
    Definition(
      name: "ams-no-current-values", fault: .amsNoCurrentValues,
      rule: "AMS.md, Entity Update: the current values follow a registration"),
    Definition(
      name: "ams-no-truncated-flag", fault: .amsNoTruncatedFlag,
      rule: "AMS.md, Entity Update: a value cut to fit one notification carries the Truncated flag"),
    Definition(
      name: "ams-entity-attribute-cut", fault: .amsEntityAttributeCut,
      rule: "AMS.md, Entity Attribute: a read gives the selected attribute's whole value"),
    Definition(
      name: "ams-commands-ignored", fault: .amsCommandsIgnored,
      rule: "AMS.md, Remote Command: the player performs a command it takes"),
  ]
}

/// How the phone's Control Point answers, computed once from the fault switches: the
/// rules (Phone+ControlPoint.swift) read only this. Every field's default is
/// Protocol/ANCS.md's rule; the fault that changes it is named beside it.
struct ControlPointPolicy: Sendable {
  // Refusals
  /// The code for an unknown CommandID: 0xA0 (0xA1: FAULT unknown-command-answered-a1).
  var unknownCommandCode = ANCSErrorCode.unknownCommand.rawValue
  /// The code for a truncated UID or ActionID: 0xA1 (0xA2: FAULT truncated-answered-a2).
  var truncatedCode = ANCSErrorCode.invalidCommand.rawValue
  /// The code for a NotificationUID that does not exist: 0xA2 (0xA1: FAULT
  /// unknown-uid-answered-a1).
  var unknownUIDCode = ANCSErrorCode.invalidParameter.rawValue
  /// The code for an action the notification does not offer: 0xA3 (0xA2: FAULT
  /// missing-action-answered-a2).
  var missingActionCode = ANCSErrorCode.actionFailed.rawValue
  /// An AppIdentifier with no NUL runs to the end (FAULT
  /// app-identifier-without-nul-accepted; the rule: missingTerminator, 0xA1).
  var takesAppIdentifierWithoutNul = false
  /// Title, Subtitle or Message without MaxLength taken as no maximum (FAULT
  /// missing-max-length-accepted; the rule: 0xA1).
  var takesMissingMaximumLength = false
  /// A command with no AttributeID answered with the header alone (FAULT
  /// no-attributes-accepted; the rule: 0xA1).
  var takesNoAttributes = false
  /// An unknown AppIdentifier answered with an empty name (FAULT unknown-app-accepted; the
  /// rule: 0xA2).
  var takesUnknownApp = false
  /// A refused command is echoed on the Data Source before its Error Response (FAULT
  /// data-after-error; the rule: nothing follows an error).
  var echoesRefusedCommand = false
  // Answers
  /// Values cut to the maximum asked (false: FAULT max-length-ignored).
  var cutsToMaximum = true
  /// Cuts land on a byte, even inside a character (FAULT utf8-split; the rule: never inside
  /// one).
  var cutsInsideCharacters = false
  /// MessageSize is the cut message's length (FAULT message-size-of-cut; the rule: the
  /// whole message's).
  var messageSizeOfCut = false
  /// Dates in ISO 8601 extended form (FAULT date-format; the rule: yyyyMMdd'T'HHmmSS).
  var extendedDates = false
  /// Tuples sorted by AttributeID (FAULT tuples-sorted; the rule: in request order).
  var sortsTuples = false
  /// An answer cut to this many bytes (FAULT answer-capped-512; the rule: no cap, split
  /// over notifications).
  var answerCap: Int?
  /// DisplayName answered empty (FAULT app-name-empty).
  var emptyAppNames = false
  /// An action ends its notification (false: FAULT action-keeps-notification).
  var actionEndsNotification = true

  init(_ faults: PhoneFaults) {
    if faults.contains(.unknownCommandAnsweredA1) { unknownCommandCode = ANCSErrorCode.invalidCommand.rawValue }
    if faults.contains(.truncatedAnsweredA2) { truncatedCode = ANCSErrorCode.invalidParameter.rawValue }
    if faults.contains(.unknownUIDAnsweredA1) { unknownUIDCode = ANCSErrorCode.invalidCommand.rawValue }
    if faults.contains(.missingActionAnsweredA2) { missingActionCode = ANCSErrorCode.invalidParameter.rawValue }
    takesAppIdentifierWithoutNul = faults.contains(.appIdentifierWithoutNulAccepted)
    takesMissingMaximumLength = faults.contains(.missingMaxLengthAccepted)
    takesNoAttributes = faults.contains(.noAttributesAccepted)
    takesUnknownApp = faults.contains(.unknownAppAccepted)
    echoesRefusedCommand = faults.contains(.dataAfterError)
    cutsToMaximum = !faults.contains(.maxLengthIgnored)
    cutsInsideCharacters = faults.contains(.utf8Split)
    messageSizeOfCut = faults.contains(.messageSizeOfCut)
    extendedDates = faults.contains(.dateFormat)
    sortsTuples = faults.contains(.tuplesSorted)
    answerCap = faults.contains(.answerCapped512) ? 512 : nil
    emptyAppNames = faults.contains(.appNameEmpty)
    actionEndsNotification = !faults.contains(.actionKeepsNotification)
  }
}

/// Everything else the phone's fault switches change, by the rules without them: the ANCS
/// service's shape, what the phone does first on a link, how it reports notifications and
/// honours sharing. Computed once from the switches (and the settings a fault overrides), so
/// the phone's setup, notification center and sharing carry no fault branch.
struct PhonePolicy: Sendable {
  // SVC, SEC: the ANCS service as published
  /// The Control Point's UUID (last digit changed: FAULT control-point-wrong-uuid).
  var controlPointUUID = ANCSUUID.controlPoint
  /// Notify (none, so no CCCD: FAULT notification-source-without-notify).
  var sourceProperties: CharacteristicProperties = .notify
  /// Write with response (write without response only: FAULT control-point-without-write).
  var controlProperties: CharacteristicProperties = .write
  /// Notify (none, so no CCCD: FAULT data-source-without-notify).
  var dataProperties: CharacteristicProperties = .notify
  /// Encrypted (unencrypted: FAULT notification-source-unencrypted; authenticated: FAULT
  /// subscriptions-need-authentication).
  var sourceSecurity = SecurityLevel.encrypted
  /// Encrypted (unencrypted: FAULT control-point-unencrypted).
  var controlSecurity = SecurityLevel.encrypted
  /// Encrypted (unencrypted: FAULT data-source-unencrypted; authenticated: FAULT
  /// subscriptions-need-authentication).
  var dataSecurity = SecurityLevel.encrypted
  /// ANCS shown from an encrypted link, as the settings ask (always shown: FAULT
  /// ancs-always-published). A characteristic's own want of encryption shows only on a link
  /// that reaches it, so the three *-unencrypted faults publish ANCS always too.
  var ancsHiddenUntilEncrypted: Bool
  /// Battery Level wants an encrypted link on an iPhone (FAULT battery-unprotected).
  var batterySecurity: SecurityLevel
  // LINK: what the phone does on a link
  /// The phone starts Exchange MTU (false: FAULT no-mtu-exchange).
  var exchangesMTU = true
  /// The phone reads the accessory's Device Name (false: FAULT no-device-name-read).
  var readsDeviceName = true
  /// An accessory without the bond's key is dropped, the bond kept (false: FAULT
  /// pair-again-on-key-missing).
  var disconnectsOnKeyMissing = true
  // NS: the notification center's reports
  /// A removed UID is never given again (false: FAULT reuse-uid).
  var reusesRemovedUIDs = false
  /// The flag of the session-start report (none: FAULT no-preexisting-flag).
  var preExistingFlag: EventFlags = .preExisting
  /// CategoryCount as it was before the event (FAULT category-count-before-event; the rule:
  /// after it).
  var categoryCountBeforeEvent = false
  /// The EventID a modification is reported with (Added: FAULT modified-as-added).
  var modifiedID = EventID.modified
  /// The EventID a removal is reported with (Modified: FAULT removed-as-modified).
  var removedID = EventID.removed
  /// The importance flags a live event may carry (none: FAULT no-importance-flags).
  var importanceFlags: EventFlags = [.silent, .important]
  // SHARE
  /// The user's revocation stops the sharing (false: FAULT sharing-ignored).
  var honoursRevocation = true
  // AMS: the Apple Media Service
  /// Write and notify (write only, no CCCD: FAULT ams-remote-command-without-notify).
  var remoteCommandProperties: CharacteristicProperties = [.write, .notify]
  /// Encrypted (unencrypted: FAULT ams-unencrypted).
  var mediaSecurity = SecurityLevel.encrypted
  /// Writes before the Entity Update subscription refused Invalid State (false: FAULT
  /// ams-no-invalid-state).
  var mediaNeedsSubscription = true
  /// A write that does not decode refused Invalid Command (false: FAULT
  /// ams-malformed-accepted, taken and ignored).
  var refusesMalformedMedia = true
  /// A registration followed by the current values (false: FAULT ams-no-current-values).
  var tellsCurrentValues = true
  /// A cut value flagged Truncated (false: FAULT ams-no-truncated-flag).
  var flagsTruncated = true
  /// Entity Attribute cut to one notification as well (FAULT ams-entity-attribute-cut; the
  /// rule: whole).
  var cutsEntityAttribute = false
  /// Remote commands performed (false: FAULT ams-commands-ignored).
  var performsCommands = true

  init(_ faults: PhoneFaults, settings: PhoneSettings) {
    if faults.contains(.controlPointWrongUUID) { controlPointUUID = String(controlPointUUID.dropLast()) + "A" }
    if faults.contains(.notificationSourceWithoutNotify) { sourceProperties = [] }
    if faults.contains(.controlPointWithoutWrite) { controlProperties = .writeWithoutResponse }
    if faults.contains(.dataSourceWithoutNotify) { dataProperties = [] }
    if faults.contains(.notificationSourceUnencrypted) { sourceSecurity = .unencrypted }
    if faults.contains(.dataSourceUnencrypted) { dataSecurity = .unencrypted }
    if faults.contains(.controlPointUnencrypted) { controlSecurity = .unencrypted }
    if faults.contains(.subscriptionsNeedAuthentication) {
      sourceSecurity = .authenticated
      dataSecurity = .authenticated
    }
    ancsHiddenUntilEncrypted =
      settings.ancsAfterEncryption
      && faults.isDisjoint(
        with: [.ancsAlwaysPublished, .notificationSourceUnencrypted, .dataSourceUnencrypted, .controlPointUnencrypted])
    let iPhone = settings.layout == .iPhone
    batterySecurity = iPhone && !faults.contains(.batteryUnprotected) ? .encrypted : .unencrypted
    exchangesMTU = !faults.contains(.noMTUExchange)
    readsDeviceName = !faults.contains(.noDeviceNameRead)
    disconnectsOnKeyMissing = !faults.contains(.pairAgainOnKeyMissing)
    reusesRemovedUIDs = faults.contains(.reuseUID)
    if faults.contains(.noPreExistingFlag) { preExistingFlag = [] }
    categoryCountBeforeEvent = faults.contains(.categoryCountBeforeEvent)
    if faults.contains(.modifiedAsAdded) { modifiedID = .added }
    if faults.contains(.removedAsModified) { removedID = .modified }
    if faults.contains(.noImportanceFlags) { importanceFlags = [] }
    honoursRevocation = !faults.contains(.sharingIgnored)
    if faults.contains(.amsRemoteCommandWithoutNotify) { remoteCommandProperties = .write }
    if faults.contains(.amsUnencrypted) { mediaSecurity = .unencrypted }
    mediaNeedsSubscription = !faults.contains(.amsNoInvalidState)
    refusesMalformedMedia = !faults.contains(.amsMalformedAccepted)
    tellsCurrentValues = !faults.contains(.amsNoCurrentValues)
    flagsTruncated = !faults.contains(.amsNoTruncatedFlag)
    cutsEntityAttribute = faults.contains(.amsEntityAttributeCut)
    performsCommands = !faults.contains(.amsCommandsIgnored)
  }

  /// A live event as it goes out under this policy; unchanged by the rules.
  func live(_ event: NotificationSourceEvent) -> NotificationSourceEvent {
    var event = event
    if categoryCountBeforeEvent {
      if event.eventID == .added { event.categoryCount &-= 1 }
      if event.eventID == .removed { event.categoryCount &+= 1 }
    }
    switch event.eventID {
    case .modified: event.eventID = modifiedID
    case .removed: event.eventID = removedID
    default: break
    }
    event.eventFlags.subtract(EventFlags([.silent, .important]).subtracting(importanceFlags))
    return event
  }
}
