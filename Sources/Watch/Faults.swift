import ANCS
import ATT
import Wire

/// Fault switches of the watch: test-only flags, each breaking exactly one rule that an NC
/// conformance case checks, to prove that case can fail (Protocol/conformance.md, "Fault
/// switches"). Not quirks, not options a user wants: plain bugs on purpose. All are off by
/// default. A fault in the machine's decisions is a field of `WatchMachine.Policy`; one
/// that changes bytes is `outgoingRewrite`, on the bearer; one in the engine's setup is a
/// branch of `WatchEngine` marked `// FAULT <name>`.
public struct WatchFaults: FaultSwitches, Hashable {
  public var rawValue: UInt64
  public init(rawValue: UInt64) { self.rawValue = rawValue }

  // DISC and SEC: discovery, subscription, security
  /// Never pairs: touches ANCS on an unencrypted link.
  public static let skipPairing = WatchFaults(rawValue: 1 << 0)
  /// Discovers characteristics from ANCS's first handle to the end of the database.
  public static let discoverWholeDatabase = WatchFaults(rawValue: 1 << 1)
  /// Never subscribes to Service Changed.
  public static let noServiceChanged = WatchFaults(rawValue: 1 << 2)
  /// Subscribes to Service Changed but ignores its indications.
  public static let ignoreServiceChanged = WatchFaults(rawValue: 1 << 3)
  // NS: Notification Source
  /// Writes the NotificationUID of Get Notification Attributes big-endian.
  public static let uidByteOrder = WatchFaults(rawValue: 1 << 19)
  /// Drops the link when more than 100 notifications wait to be fetched.
  public static let floodFatal = WatchFaults(rawValue: 1 << 5)
  /// Drops the link on a Notification Source value that is not 8 bytes.
  public static let malformedEventFatal = WatchFaults(rawValue: 1 << 6)
  /// Ignores Removed events.
  public static let ignoreRemoved = WatchFaults(rawValue: 1 << 7)
  /// Keeps the answer to a fetch whose notification was removed meanwhile.
  public static let lateAnswerKept = WatchFaults(rawValue: 1 << 8)
  // CP: Control Point
  /// Sends the next command as soon as the Write Response comes, before the answer.
  public static let commandsOverlap = WatchFaults(rawValue: 1 << 9)
  /// Asks for the app's display name with every notification.
  public static let noAppNameCache = WatchFaults(rawValue: 1 << 10)
  /// Takes 0xA2 as fatal: empties its queue and subscribes again.
  public static let flushOnA2 = WatchFaults(rawValue: 1 << 11)
  /// Waits for an answer forever.
  public static let noCommandTimeout = WatchFaults(rawValue: 1 << 12)
  /// Sends the positive action as ActionID 1 and the negative as 0.
  public static let swappedActions = WatchFaults(rawValue: 1 << 13)
  // DS: Data Source
  /// Takes the first Data Source notification as the whole answer.
  public static let noReassembly = WatchFaults(rawValue: 1 << 14)
  /// Refuses an answer whose tuples are not in request order.
  public static let tuplesInRequestOrder = WatchFaults(rawValue: 1 << 15)
  /// Refuses an answer with a tuple it did not ask for.
  public static let unrequestedTupleFatal = WatchFaults(rawValue: 1 << 16)
  /// Drops the link on a value longer than the maximum it asked for.
  public static let overLongFatal = WatchFaults(rawValue: 1 << 17)
  /// Takes an empty Data Source notification as the start of the next answer.
  public static let emptyPacketStartsAnswer = WatchFaults(rawValue: 1 << 18)
  /// Drops an answer that lacks a requested tuple.
  public static let omittedTupleFatal = WatchFaults(rawValue: 1 << 20)
  /// Lists a notification flagged PreExisting without fetching it, whenever it comes.
  public static let preexistingAlwaysListed = WatchFaults(rawValue: 1 << 21)
  /// Never checks that the phone still has its subscriptions.
  public static let noLivenessProbe = WatchFaults(rawValue: 1 << 22)
  /// Never checks an incoming call again.
  public static let noCallRecheck = WatchFaults(rawValue: 1 << 23)
  /// Never writes its CCCDs again while the phone, silent, still reads subscribed.
  public static let noSilenceResubscribe = WatchFaults(rawValue: 1 << 24)
  /// Queues a call reported PreExisting behind the other pre-existing notifications.
  public static let preexistingCallQueued = WatchFaults(rawValue: 1 << 25)
  /// Takes Write Not Permitted as a command's plain refusal: never asks again.
  public static let ignoreNotShared = WatchFaults(rawValue: 1 << 26)
  /// Ignores a Notification Source event with a reserved EventFlags bit set.
  public static let reservedFlagsRejected = WatchFaults(rawValue: 1 << 27)
  /// Discovers ANCS before it pairs (pairing only to subscribe), and gives up when the
  /// phone shows no ANCS yet.
  public static let discoverBeforePairing = WatchFaults(rawValue: 1 << 28)
  /// Publishes no GAP Device Name.
  public static let noDeviceName = WatchFaults(rawValue: 1 << 29)
  /// Refuses to pair with a phone it already has a bond with.
  public static let refuseRepairing = WatchFaults(rawValue: 1 << 30)
  /// Stops for good when pairing fails, instead of connecting again.
  public static let pairingFailureFatal = WatchFaults(rawValue: 1 << 31)
  // AMS: the Apple Media Service
  /// Writes its Entity Update registrations before it subscribes to Entity Update (and again
  /// after).
  public static let mediaRegisterBeforeSubscribe = WatchFaults(rawValue: 1 << 32)
  /// Reads an Entity Update's value from its third byte: the flags byte becomes the value's first.
  public static let entityUpdateFlagsAsValue = WatchFaults(rawValue: 1 << 33)
  /// Shows a value the phone cut as it came, never reading it whole.
  public static let noWholeRead = WatchFaults(rawValue: 1 << 34)
  /// Writes a remote command as two bytes, the command and a zero.
  public static let remoteCommandPadded = WatchFaults(rawValue: 1 << 35)
  /// Writes any remote command the wearer asks for, listed by the player or not.
  public static let commandsUnchecked = WatchFaults(rawValue: 1 << 36)
  /// Asks for an encrypted link only, and uses one without MITM protection, though its
  /// maker states that it requires MITM (`--security mitm`).
  public static let mitmNotRequired = WatchFaults(rawValue: 1 << 37)
  /// Answers a pairing with a wrong passkey with Pairing Failed, Unspecified Reason (0x08),
  /// not Confirm Value Failed (0x04).
  public static let wrongPasskeyMisreported = WatchFaults(rawValue: 1 << 38)

  /// What the faults that change bytes on the wire do to the watch's PDUs on their way out
  /// (nil: none of them is on). The machine's commands stay right; the bearer changes them.
  var outgoingRewrite: RewritingBearer.Rewrite? {
    let swapActions = contains(.swappedActions)
    let swapUIDs = contains(.uidByteOrder)
    let padCommands = contains(.remoteCommandPadded)
    guard swapActions || swapUIDs || padCommands else { return nil }
    return { pdu in
      // FAULT remote-command-padded: breaks "a remote command is one byte". The watch writes
      // no other one-byte value with a Write Request.
      if padCommands && pdu.count == 4 && pdu[0] == ATTOpcode.writeRequest.rawValue { return pdu + [0] }
      // A Write Request (opcode, handle, value) carrying a Control Point command.
      guard pdu.count >= 8, pdu[0] == ATTOpcode.writeRequest.rawValue else { return pdu }
      var pdu = pdu
      switch pdu[3] {
      case CommandID.performNotificationAction.rawValue where swapActions && pdu.count == 9:
        // FAULT swapped-actions: breaks "ActionID 0 positive, 1 negative".
        pdu[8] ^= 1
      case CommandID.getNotificationAttributes.rawValue where swapUIDs:
        // FAULT uid-byte-order: breaks "numbers are little-endian" (the command names the UID).
        pdu[4...7].reverse()
      default: break
      }
      return pdu
    }
  }

  public typealias Definition = FaultDefinition<WatchFaults>

  /// Every fault, by name, in catalog order (the order of the NC case groups).
  public static let catalog: [Definition] = [
    Definition(
      name: "skip-pairing", fault: .skipPairing, rule: "ANCS.md, Session and security: ANCS needs an encrypted link"),
    Definition(
      name: "discover-whole-database", fault: .discoverWholeDatabase,
      rule: "ANCS.md, field problem 7: discovery within the service's handle range"),
    Definition(
      name: "no-service-changed", fault: .noServiceChanged,
      rule: "ANCS.md, Service: the accessory subscribes to Service Changed"),
    Definition(
      name: "ignore-service-changed", fault: .ignoreServiceChanged,
      rule: "Core Vol 3 Part G 7.1: after Service Changed the client discovers the range again"),
    Definition(
      name: "uid-byte-order", fault: .uidByteOrder,
      rule: "ANCS.md: numbers are little-endian; a fetch names the UID the phone announced"),
    Definition(
      name: "flood-fatal", fault: .floodFatal,
      rule: "ANCS.md, field problem 4: floods of pre-existing notifications must not stall the accessory"),
    Definition(
      name: "malformed-event-fatal", fault: .malformedEventFatal,
      rule: "ANCS.md, Notification Source: a value that is not 8 bytes is ignored"),
    Definition(name: "ignore-removed", fault: .ignoreRemoved, rule: "ANCS.md, Notification Source: EventID 2 Removed"),
    Definition(
      name: "late-answer-kept", fault: .lateAnswerKept,
      rule: "ANCS.md, field problems 2 and 8: a notification removed during its fetch stays removed"),
    Definition(
      name: "commands-overlap", fault: .commandsOverlap,
      rule: "ANCS.md, Data Source: answers carry no command tag, so one command at a time"),
    Definition(
      name: "no-app-name-cache", fault: .noAppNameCache,
      rule: "ANCS.md, Session and security: Apple advises caching app display names"),
    Definition(
      name: "flush-on-a2", fault: .flushOnA2,
      rule: "ANCS.md, field problem 2: 0xA2 is not fatal; no flush, no resubscription"),
    Definition(
      name: "no-command-timeout", fault: .noCommandTimeout,
      rule: "ANCS.md, Data Source: the accessory bounds its wait for an answer"),
    Definition(
      name: "swapped-actions", fault: .swappedActions,
      rule: "ANCS.md, Control Point: ActionID 0 positive, 1 negative"),
    Definition(
      name: "no-reassembly", fault: .noReassembly,
      rule: "ANCS.md, Data Source: a response longer than one notification is split over several"),
    Definition(
      name: "tuples-in-request-order", fault: .tuplesInRequestOrder,
      rule: "ANCS.md, Data Source: this project finds tuples by AttributeID"),
    Definition(
      name: "unrequested-tuple-fatal", fault: .unrequestedTupleFatal,
      rule: "ANCS.md, Data Source: an unrequested tuple is skipped"),
    Definition(
      name: "over-long-fatal", fault: .overLongFatal,
      rule: "ANCS.md, Data Source: a value over the requested maximum is survived"),
    Definition(
      name: "empty-packet-starts-answer", fault: .emptyPacketStartsAnswer,
      rule: "ANCS.md, field problem 13: an empty Data Source notification is harmless"),
    Definition(
      name: "omitted-tuple-fatal", fault: .omittedTupleFatal,
      rule: "ANCS.md, What an accessory must do: an answer without its last requested tuple completes"),
    Definition(
      name: "preexisting-always-listed", fault: .preexistingAlwaysListed,
      rule: "ANCS.md, What an accessory must do: PreExisting is honoured only at session start"),
    Definition(
      name: "no-liveness-probe", fault: .noLivenessProbe,
      rule: "ANCS.md, What an accessory must do: notice a phone that silently dropped the subscriptions"),
    Definition(
      name: "no-call-recheck", fault: .noCallRecheck,
      rule: "ANCS.md, What an accessory must do: a call whose Removed never came does not ring forever"),
    Definition(
      name: "no-silence-resubscribe", fault: .noSilenceResubscribe,
      rule: "ANCS.md, What an accessory must do: write the CCCDs again after a long Notification Source silence"),
    Definition(
      name: "preexisting-call-queued", fault: .preexistingCallQueued,
      rule: "ANCS.md, What an accessory must do: a ringing call is fetched first, PreExisting or not"),
    Definition(
      name: "ignore-not-shared", fault: .ignoreNotShared,
      rule: "ANCS.md, What an accessory must do: Write Not Permitted means not shared; ask again until it is"),
    Definition(
      name: "reserved-flags-rejected", fault: .reservedFlagsRejected,
      rule: "ANCS.md, What an accessory must do: reserved EventFlags bits are ignored, not the event"),
    Definition(
      name: "discover-before-pairing", fault: .discoverBeforePairing,
      rule: "ANCS.md, Session and security: ANCS left out of discovery until the link is encrypted"),
    Definition(
      name: "no-device-name", fault: .noDeviceName,
      rule: "iPhone.md, Behaviour on the link: the phone reads the accessory's Device Name"),
    Definition(
      name: "mitm-not-required", fault: .mitmNotRequired,
      rule: "HCI.md, Pairing: an accessory that requires MITM protection uses no link encrypted without it"),
    Definition(
      name: "wrong-passkey-misreported", fault: .wrongPasskeyMisreported,
      rule: "HCI.md, Pairing: a wrong passkey ends in Pairing Failed, Confirm Value Failed (0x04)"),
    Definition(
      name: "refuse-repairing", fault: .refuseRepairing,
      rule: "iPhone.md, Pairing and bonds: a phone that forgot the bond pairs afresh; the accessory pairs again"),
    Definition(
      name: "pairing-failure-fatal", fault: .pairingFailureFatal,
      rule: "iPhone.md, Pairing and bonds: an accessory whose bond the phone still holds comes back once forgotten"),
    Definition(
      name: "media-register-before-subscribe", fault: .mediaRegisterBeforeSubscribe,
      rule: "AMS.md, What an accessory must do: subscribe to Entity Update before writing it"),
    Definition(
      name: "entity-update-flags-as-value", fault: .entityUpdateFlagsAsValue,
      rule: "AMS.md, Entity Update: the value starts after EntityID, AttributeID and EntityUpdateFlags"),
    Definition(
      name: "no-whole-read", fault: .noWholeRead,
      rule: "AMS.md, What an accessory must do: a cut value it shows is read whole through Entity Attribute"),
    Definition(
      name: "remote-command-padded", fault: .remoteCommandPadded,
      rule: "AMS.md, Remote Command: the accessory writes one byte, a RemoteCommandID"),
    Definition(
      name: "commands-unchecked", fault: .commandsUnchecked,
      rule: "AMS.md, What an accessory must do: write only the commands the player lists now"),
  ]
}
