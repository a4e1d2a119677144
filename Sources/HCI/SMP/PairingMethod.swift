/// How a pairing authenticates the two sides (Vol 3 Part H 2.3.5.1), chosen from both
/// Pairing Request and Response.
public enum PairingMethod: Hashable, Sendable, CustomStringConvertible {
  /// No user involvement: no protection against a man in the middle.
  case justWorks
  /// Passkey Entry: one side shows a six-digit passkey and the user types it on the other,
  /// or (both KeyboardOnly) the user types the same passkey on both.
  case passkeyEntry(PasskeyEntry)
  /// Numeric Comparison (LE Secure Connections only): both show a six-digit number and
  /// the user confirms on each that they are the same.
  case numericComparison
  /// Out of band data: not supported here.
  case outOfBand

  public enum PasskeyEntry: Hashable, Sendable {
    case initiatorDisplays
    case responderDisplays
    case bothInput
  }

  /// Protection against a man in the middle (an authenticated key).
  public var authenticated: Bool { self != .justWorks }

  public var description: String {
    switch self {
    case .justWorks: return "Just Works"
    case .passkeyEntry(.initiatorDisplays): return "Passkey Entry (the initiator shows it)"
    case .passkeyEntry(.responderDisplays): return "Passkey Entry (the responder shows it)"
    case .passkeyEntry(.bothInput): return "Passkey Entry (typed on both)"
    case .numericComparison: return "Numeric Comparison"
    case .outOfBand: return "Out of Band"
    }
  }

  /// The method for a Pairing Request and Response (2.3.5.1): OOB when the OOB flags say so
  /// (both in legacy pairing, either in Secure Connections); Just Works when neither side
  /// sets MITM; otherwise Table 2.8 of the IO capabilities.
  public static func choose(request: PairingFeatures, response: PairingFeatures, secureConnections: Bool)
    -> PairingMethod
  {
    let oob = (request.oobDataFlag != 0, response.oobDataFlag != 0)
    if secureConnections ? (oob.0 || oob.1) : (oob.0 && oob.1) { return .outOfBand }
    guard request.authReq.contains(.mitm) || response.authReq.contains(.mitm) else { return .justWorks }
    return table(
      initiator: request.ioCapability, responder: response.ioCapability, secureConnections: secureConnections)
  }

  /// Table 2.8: the initiator's IO capability against the responder's. A reserved value is
  /// taken as NoInputNoOutput.
  static func table(initiator: IOCapability, responder: IOCapability, secureConnections: Bool) -> PairingMethod {
    let numericOrInitiatorShows: PairingMethod =
      secureConnections ? .numericComparison : .passkeyEntry(.initiatorDisplays)
    switch (initiator, responder) {
    case (.noInputNoOutput, _), (_, .noInputNoOutput): return .justWorks
    case (.keyboardOnly, .keyboardOnly): return .passkeyEntry(.bothInput)
    // The responder shows: it has a display, the initiator a keyboard.
    case (.keyboardOnly, .displayOnly), (.keyboardOnly, .displayYesNo), (.keyboardOnly, .keyboardDisplay),
      (.keyboardDisplay, .displayOnly):
      return .passkeyEntry(.responderDisplays)
    // The initiator shows: the responder has a keyboard only, or (below) both could.
    case (.displayOnly, .keyboardOnly), (.displayYesNo, .keyboardOnly), (.keyboardDisplay, .keyboardOnly),
      (.displayOnly, .keyboardDisplay):
      return .passkeyEntry(.initiatorDisplays)
    case (.displayYesNo, .keyboardDisplay), (.keyboardDisplay, .keyboardDisplay):
      return numericOrInitiatorShows
    case (.keyboardDisplay, .displayYesNo):
      return secureConnections ? .numericComparison : .passkeyEntry(.responderDisplays)
    case (.displayYesNo, .displayYesNo):
      return secureConnections ? .numericComparison : .justWorks
    default:
      // DisplayOnly or DisplayYesNo against DisplayOnly or DisplayYesNo: nobody can type.
      return .justWorks
    }
  }
}
