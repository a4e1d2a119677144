import ATT
import HCI
import Testing
import Wire

private let centralAddress = DeviceAddress(type: .random, address: BDAddress("C1:11:22:33:44:55")!)
private let peripheralAddress = DeviceAddress(type: .random, address: BDAddress("D2:66:77:88:99:AA")!)

/// Our central and our peripheral state machines joined directly: PDUs go from one to the
/// other (through `tamper`, which may change them), and LE Enable Encryption succeeds when
/// the peripheral's key for the LTK request equals the central's.
struct PairingRun {
  var central: SMPPairing
  var peripheral: SMPPairing
  /// Pairing Failed reasons each side sent.
  var failedByCentral: [SMPReason] = []
  var failedByPeripheral: [SMPReason] = []
  var centralOutcome: SMPAction?
  var peripheralOutcome: SMPAction?
  /// The key the central encrypted with, if the peripheral's matched.
  var encryptedWith: UInt128?

  /// The user at each side: the passkey typed (given the one the other side shows, if it
  /// shows one) and the answer to a numeric comparison.
  var types: (LinkRole, UInt32?) -> UInt32? = { _, shown in shown }
  var confirms: (LinkRole, UInt32) -> Bool = { _, _ in true }
  /// What each side showed its user.
  var shown: [LinkRole: UInt32] = [:]
  var compared: [LinkRole: UInt32] = [:]
  private var waiting: Set<LinkRole> = []

  /// An offer with the MITM bit also requires MITM protection, unless `mitmRequired` says
  /// which sides do.
  init(
    centralSC: Bool = true, peripheralSC: Bool = true, centralOffer: PairingFeatures? = nil,
    peripheralOffer: PairingFeatures? = nil, mitmRequired: Set<LinkRole>? = nil
  ) {
    let centralOffer = centralOffer ?? SMPPairing.justWorks(secureConnections: centralSC)
    let peripheralOffer = peripheralOffer ?? SMPPairing.justWorks(secureConnections: peripheralSC)
    central = SMPPairing(
      role: .central, local: centralAddress, peer: peripheralAddress, offer: centralOffer,
      requiresMITM: mitmRequired?.contains(.central) ?? centralOffer.authReq.contains(.mitm))
    peripheral = SMPPairing(
      role: .peripheral, local: peripheralAddress, peer: centralAddress, offer: peripheralOffer,
      requiresMITM: mitmRequired?.contains(.peripheral) ?? peripheralOffer.authReq.contains(.mitm))
  }

  /// A side that waits for a passkey gets it once the other side shows one (or at once when
  /// both type).
  private mutating func answerPasskeys(bothType: Bool) -> [(to: LinkRole, SMPAction)] {
    var out: [(to: LinkRole, SMPAction)] = []
    for side in waiting.sorted(by: { $0 == .central && $1 == .peripheral }) {
      let other: LinkRole = side == .central ? .peripheral : .central
      guard bothType || shown[other] != nil else { continue }
      waiting.remove(side)
      let typed = types(side, shown[other])
      let produced = side == .central ? central.enterPasskey(typed) : peripheral.enterPasskey(typed)
      out += produced.map { (other, $0) }
    }
    return out
  }

  mutating func run(tamper: (SMPPDU, LinkRole) -> SMPPDU = { pdu, _ in pdu }) {
    var queue: [(to: LinkRole, SMPAction)] = central.start().map { (.peripheral, $0) }
    var steps = 0
    while !queue.isEmpty, steps < 100 {
      steps += 1
      let (to, action) = queue.removeFirst()
      let from: LinkRole = to == .central ? .peripheral : .central
      switch action {
      case .send(let pdu):
        if case .pairingFailed(let reason) = pdu {
          if from == .central { failedByCentral.append(reason) } else { failedByPeripheral.append(reason) }
        }
        let delivered = tamper(pdu, from)
        let produced = to == .central ? central.receive(delivered) : peripheral.receive(delivered)
        queue += produced.map { (from, $0) }
      case .startEncryption(let ltk, let ediv, let rand):
        let matches = peripheral.keyForRequest(ediv: ediv, rand: rand) == ltk
        if matches { encryptedWith = ltk }
        let status: HCIStatus = matches ? .success : HCIStatus(rawValue: 0x06)
        queue += central.encryptionChanged(status: status, enabled: matches).map { (.peripheral, $0) }
        queue += peripheral.encryptionChanged(status: status, enabled: matches).map { (.central, $0) }
      case .completed, .failed:
        if from == .central { centralOutcome = action } else { peripheralOutcome = action }
      case .displayPasskey(let value):
        shown[from] = value
      case .requestPasskey:
        waiting.insert(from)
      case .requestConfirmation(let value):
        compared[from] = value
        let yes = confirms(from, value)
        queue += (from == .central ? central.confirm(yes) : peripheral.confirm(yes)).map { (to, $0) }
      }
      let bothType = central.method == .passkeyEntry(.bothInput)
      queue += answerPasskeys(bothType: bothType)
    }
  }

  var centralBond: Bond? { if case .completed(let bond)? = centralOutcome { return bond } else { return nil } }
  var peripheralBond: Bond? { if case .completed(let bond)? = peripheralOutcome { return bond } else { return nil } }
}

@Suite("SMP: Just Works pairing, our central against our peripheral")
struct SMPPairingTests {
  @Test("LE Secure Connections when both set SC: same LTK, encrypted with it, both bonds equal")
  func secureConnections() throws {
    var run = PairingRun()
    run.run()
    #expect(run.central.secureConnections && run.peripheral.secureConnections)
    #expect(run.central.phase == .complete && run.peripheral.phase == .complete)
    let central = try #require(run.centralBond)
    let peripheral = try #require(run.peripheralBond)
    #expect(central.ltk == peripheral.ltk && central.secureConnections && peripheral.secureConnections)
    #expect(central.ediv == 0 && central.rand == 0)
    #expect(run.encryptedWith == central.ltk)
    #expect(central.peer == peripheralAddress && peripheral.peer == centralAddress)
  }

  @Test(
    "LE legacy pairing when either side clears SC: same STK, then the peripheral's LTK bonds both",
    arguments: [
      (false, true), (true, false), (false, false),
    ])
  func legacy(centralSC: Bool, peripheralSC: Bool) throws {
    var run = PairingRun(centralSC: centralSC, peripheralSC: peripheralSC)
    run.run()
    #expect(!run.central.secureConnections && !run.peripheral.secureConnections)
    #expect(run.central.key == run.peripheral.key && run.encryptedWith == run.central.key)
    let central = try #require(run.centralBond)
    let peripheral = try #require(run.peripheralBond)
    #expect(!central.secureConnections)
    #expect(central.ltk == peripheral.ltk && central.ediv == peripheral.ediv && central.rand == peripheral.rand)
    // The distributed LTK is not the STK.
    #expect(central.ltk != run.central.key)
  }

  @Test("a wrong confirm value fails with 0x04 (legacy Sconfirm, SC Cb)", arguments: [false, true])
  func wrongConfirm(secureConnections: Bool) {
    var run = PairingRun(centralSC: secureConnections, peripheralSC: secureConnections)
    run.run { pdu, from in
      if case .pairingConfirm(let value) = pdu, from == .peripheral { return .pairingConfirm(value ^ 1) }
      return pdu
    }
    #expect(run.failedByCentral == [.confirmValueFailed])
    #expect(
      run.centralOutcome == .failed(.refused(.confirmValueFailed, "the peer's confirm value does not match its random"))
    )
    #expect(run.peripheralOutcome == .failed(.peerFailed(.confirmValueFailed)))
    #expect(run.encryptedWith == nil)
  }

  @Test("a wrong DHKey check value fails with 0x0B, in either direction", arguments: [LinkRole.central, .peripheral])
  func wrongDHKeyCheck(corruptedBy: LinkRole) {
    var run = PairingRun()
    run.run { pdu, from in
      if case .pairingDHKeyCheck(let value) = pdu, from == corruptedBy { return .pairingDHKeyCheck(~value) }
      return pdu
    }
    let checker = corruptedBy == .central ? run.failedByPeripheral : run.failedByCentral
    #expect(checker == [.dhKeyCheckFailed])
    #expect(run.encryptedWith == nil)
  }

  @Test("a public key that is not on P-256 fails with 0x0A before any multiplication")
  func invalidCurvePoint() {
    var run = PairingRun()
    run.run { pdu, from in
      if case .pairingPublicKey(let key) = pdu, from == .central {
        return .pairingPublicKey(P256PublicKey(x: key.x, y: P256Value(bigEndian: [UInt8](repeating: 1, count: 32))!))
      }
      return pdu
    }
    #expect(run.failedByPeripheral == [.invalidParameters])
    #expect(run.peripheral.phase == .failed)
  }

  @Test("a maximum key size below 7 fails with 0x06")
  func keySizeTooSmall() {
    var offer = SMPPairing.justWorks(secureConnections: true)
    offer.maxEncryptionKeySize = 6
    var run = PairingRun(centralOffer: offer)
    run.run()
    #expect(run.failedByPeripheral == [.encryptionKeySize])
  }

  @Test("a shorter key size masks the key; both sides agree")
  func keySizeMasks() throws {
    var offer = SMPPairing.justWorks(secureConnections: true)
    offer.maxEncryptionKeySize = 7
    var run = PairingRun(centralOffer: offer)
    run.run()
    let key = try #require(run.encryptedWith)
    #expect(key >> 56 == 0)
    #expect(run.centralBond?.keySize == 7 && run.peripheralBond?.ltk == key)
  }

  @Test("an out-of-order PDU fails with 0x08; a PDU after the end is ignored")
  func unexpectedPDU() {
    var peripheral = SMPPairing(
      role: .peripheral, local: peripheralAddress, peer: centralAddress,
      offer: SMPPairing.justWorks(secureConnections: true))
    let actions = peripheral.receive(.pairingRandom(42))
    #expect(actions.first == .send(.pairingFailed(.unspecifiedReason)))
    #expect(peripheral.phase == .failed)
    #expect(peripheral.receive(.pairingRequest(SMPPairing.justWorks(secureConnections: true))).isEmpty)
  }

  @Test("without bonding on one side the pairing encrypts but leaves no bond")
  func noBonding() {
    var run = PairingRun(centralOffer: SMPPairing.justWorks(secureConnections: true, bonding: false))
    run.run()
    #expect(run.encryptedWith != nil)
    #expect(run.centralOutcome == .completed(nil) && run.peripheralOutcome == .completed(nil))
  }
}

/// A random well-formed SMP PDU (or nil when the random parameters do not decode).
private func randomPDU(_ random: inout SplitMix64) -> SMPPDU? {
  let lengths: [UInt8: Int] = [
    1: 6, 2: 6, 3: 16, 4: 16, 5: 1, 6: 16, 7: 10, 8: 16, 9: 7, 10: 16, 11: 1, 12: 64, 13: 16, 14: 1,
  ]
  let code = UInt8.random(in: 1...14, using: &random)
  return try? SMPPDU(decoding: [code] + random.bytes(lengths[code] ?? 0))
}

@Suite("SMP: nothing a peer sends traps")
struct SMPRobustnessTests {
  @Test("a random PDU at a random step of a pairing ends it cleanly, in both roles, legacy and SC")
  func randomSubstitution() {
    var random = SplitMix64(seed: 0x5EC0_0001)
    for round in 0..<400 {
      let sc = round % 2 == 0
      var run = PairingRun(centralSC: sc, peripheralSC: sc)
      let victim: LinkRole = round % 4 < 2 ? .central : .peripheral
      let step = Int.random(in: 0..<8, using: &random)
      var seen = 0
      let substitute = randomPDU(&random)
      run.run { pdu, from in
        defer { seen += 1 }
        guard from != victim, seen == step, let substitute else { return pdu }
        return substitute
      }
      // A Keypress Notification is ignored: the pairing then waits for the 30-second timer.
      if case .keypressNotification? = substitute { continue }
      // Either the substitute happened to fit, or one side refused and the other saw it.
      let ended = [run.central.phase, run.peripheral.phase].allSatisfy { [.complete, .failed].contains($0) }
      let waiting = run.central.phase == .failed || run.peripheral.phase == .failed
      #expect(ended || waiting, "round \(round): \(run.central.phase) / \(run.peripheral.phase)")
    }
  }
}

/// Vol 3 Part H 2.3.5.1, Table 2.8 as printed: rows the responder's IO capability, columns
/// the initiator's (DisplayOnly, DisplayYesNo, KeyboardOnly, NoInputNoOutput,
/// KeyboardDisplay). JW Just Works, NC Numeric Comparison, PI/PR/PB Passkey Entry with the
/// initiator showing, the responder showing, both typing; "a/b": legacy pairing / Secure
/// Connections.
private let table28: [[String]] = [
  ["JW", "JW", "PR", "JW", "PR"],
  ["JW", "JW/NC", "PR", "JW", "PR/NC"],
  ["PI", "PI", "PB", "JW", "PI"],
  ["JW", "JW", "JW", "JW", "JW"],
  ["PI", "PI/NC", "PR", "JW", "PI/NC"],
]
private let capabilities: [IOCapability] = [
  .displayOnly, .displayYesNo, .keyboardOnly, .noInputNoOutput, .keyboardDisplay,
]

private func features(_ io: IOCapability, mitm: Bool, sc: Bool) -> PairingFeatures {
  SMPPairing.features(ioCapability: io, mitm: mitm, secureConnections: sc)
}

@Suite("SMP: the pairing methods of Table 2.8, our central against our peripheral")
struct PairingMethodTests {
  static func expected(initiator: Int, responder: Int, sc: Bool) -> PairingMethod {
    let cell = table28[responder][initiator].split(separator: "/")
    switch sc ? cell.last! : cell.first! {
    case "NC": return .numericComparison
    case "PI": return .passkeyEntry(.initiatorDisplays)
    case "PR": return .passkeyEntry(.responderDisplays)
    case "PB": return .passkeyEntry(.bothInput)
    default: return .justWorks
    }
  }

  @Test("the method is Table 2.8's when a side asks for MITM, Just Works when none does", arguments: [false, true])
  func methodFollowsTheTable(sc: Bool) {
    for (i, initiator) in capabilities.enumerated() {
      for (r, responder) in capabilities.enumerated() {
        let request = features(initiator, mitm: true, sc: sc)
        let response = features(responder, mitm: false, sc: sc)
        #expect(
          PairingMethod.choose(request: request, response: response, secureConnections: sc)
            == Self.expected(initiator: i, responder: r, sc: sc), "\(initiator) against \(responder)")
        let plain = (features(initiator, mitm: false, sc: sc), features(responder, mitm: false, sc: sc))
        #expect(PairingMethod.choose(request: plain.0, response: plain.1, secureConnections: sc) == .justWorks)
      }
    }
    var oob = features(.keyboardDisplay, mitm: true, sc: sc)
    oob.oobDataFlag = 1
    // OOB: either flag in SC, both in legacy pairing.
    #expect(
      PairingMethod.choose(request: oob, response: features(.displayOnly, mitm: true, sc: sc), secureConnections: sc)
        == (sc ? .outOfBand : .passkeyEntry(.responderDisplays)))
    #expect(PairingMethod.choose(request: oob, response: oob, secureConnections: sc) == .outOfBand)
  }

  /// Every pair of IO capabilities, both sides asking for MITM: an authenticated method pairs
  /// with the passkey shown on one side typed on the other (or the same number confirmed on
  /// both), both ending with the same key; Just Works is refused.
  @Test("every pair of IO capabilities with MITM pairs, or is refused for Just Works", arguments: [false, true])
  func everyPairPairsOrRefuses(sc: Bool) throws {
    for (i, initiator) in capabilities.enumerated() {
      for (r, responder) in capabilities.enumerated() {
        var run = PairingRun(
          centralOffer: features(initiator, mitm: true, sc: sc),
          peripheralOffer: features(responder, mitm: true, sc: sc))
        // Both typing: the user makes one up.
        run.types = { _, shown in shown ?? 314_159 }
        run.run()
        let method = Self.expected(initiator: i, responder: r, sc: sc)
        let name = "\(initiator) against \(responder), \(sc ? "SC" : "legacy")"
        // (The responder chooses first, and may refuse before the initiator has.)
        #expect(run.peripheral.method == method, "\(name)")
        guard method.authenticated else {
          #expect(run.centralBond == nil && run.peripheralBond == nil, "\(name)")
          #expect(
            run.failedByCentral == [.authenticationRequirements]
              || run.failedByPeripheral == [.authenticationRequirements], "\(name)")
          continue
        }
        #expect(run.failedByCentral.isEmpty && run.failedByPeripheral.isEmpty, "\(name)")
        let key = try #require(run.encryptedWith, "\(name)")
        #expect(run.centralBond?.ltk == run.peripheralBond?.ltk && run.centralBond != nil, "\(name)")
        if sc { #expect(run.centralBond?.ltk == key, "\(name)") }
        switch method {
        case .numericComparison:
          #expect(run.compared[.central] != nil && run.compared[.central] == run.compared[.peripheral], "\(name)")
          #expect(run.shown.isEmpty)
        case .passkeyEntry(.bothInput):
          #expect(run.shown.isEmpty && run.compared.isEmpty, "\(name)")
        case .passkeyEntry(let who):
          let shower: LinkRole = who == .initiatorDisplays ? .central : .peripheral
          #expect(run.shown.keys.sorted { _, _ in true } == [shower], "\(name)")
        default: break
        }
      }
    }
  }

  /// A wrong passkey fails with Confirm Value Failed: in legacy pairing at the confirm
  /// values; in SC at the round of the first bit that differs.
  @Test("a wrong passkey fails with Confirm Value Failed (0x04)", arguments: [false, true])
  func wrongPasskey(sc: Bool) {
    var run = PairingRun(
      centralOffer: features(.keyboardOnly, mitm: true, sc: sc),
      peripheralOffer: features(.displayOnly, mitm: true, sc: sc))
    run.types = { _, shown in (shown ?? 0) ^ 0b10_0000 }  // bit 5: round 6
    run.run()
    #expect(run.encryptedWith == nil && run.centralBond == nil)
    #expect(run.failedByCentral + run.failedByPeripheral == [.confirmValueFailed])
    if sc, case .failed(.refused(_, let detail))? = run.peripheralOutcome {
      #expect(detail.contains("round 6"), "\(detail)")
    } else if sc {
      Issue.record("the peripheral did not refuse: \(String(describing: run.peripheralOutcome))")
    }
  }

  @Test("no passkey typed fails with Passkey Entry Failed (0x01); one over six digits too")
  func noPasskey() {
    for typed: UInt32? in [nil, 1_000_000] {
      var run = PairingRun(
        centralOffer: features(.keyboardDisplay, mitm: true, sc: true),
        peripheralOffer: features(.displayOnly, mitm: true, sc: true))
      run.types = { _, _ in typed }
      run.run()
      #expect(run.failedByCentral == [.passkeyEntryFailed] && run.failedByPeripheral.isEmpty)
      #expect(run.peripheralOutcome == .failed(.peerFailed(.passkeyEntryFailed)))
    }
  }

  @Test(
    "numbers said to differ fail with Numeric Comparison Failed (0x0C), from either side",
    arguments: [LinkRole.central, .peripheral])
  func numbersDiffer(on side: LinkRole) {
    var run = PairingRun(
      centralOffer: features(.keyboardDisplay, mitm: true, sc: true),
      peripheralOffer: features(.displayYesNo, mitm: true, sc: true))
    run.confirms = { who, _ in who != side }
    run.run()
    #expect(run.encryptedWith == nil)
    #expect((side == .central ? run.failedByCentral : run.failedByPeripheral) == [.numericComparisonFailed])
  }

  /// MITM asked by one side only, against a peer with no input or output: that side refuses.
  @Test(
    "one side asking MITM against NoInputNoOutput refuses with Authentication Requirements",
    arguments: [LinkRole.central, .peripheral])
  func mitmAgainstNoInputNoOutput(asker: LinkRole) {
    let asking = features(.keyboardDisplay, mitm: true, sc: true)
    let plain = features(.noInputNoOutput, mitm: false, sc: true)
    var run = PairingRun(
      centralOffer: asker == .central ? asking : plain, peripheralOffer: asker == .peripheral ? asking : plain)
    run.run()
    #expect((asker == .central ? run.failedByCentral : run.failedByPeripheral) == [.authenticationRequirements])
    #expect(run.encryptedWith == nil)
  }

  /// An iPhone asks for MITM (KeyboardDisplay, the AuthReq bit) without requiring it: with an
  /// accessory that has no display it pairs Just Works.
  @Test("asking for MITM without requiring it pairs Just Works with NoInputNoOutput", arguments: [false, true])
  func askingIsNotRequiring(sc: Bool) {
    var run = PairingRun(
      centralOffer: features(.keyboardDisplay, mitm: true, sc: sc),
      peripheralOffer: features(.noInputNoOutput, mitm: false, sc: sc), mitmRequired: [])
    run.run()
    #expect(run.central.method == .justWorks && run.encryptedWith != nil && run.centralBond != nil)
    #expect(run.shown.isEmpty && run.compared.isEmpty)
  }

  /// An answer before the question answers nothing: the pairing still asks, then completes.
  @Test func anEarlyAnswerIsIgnored() {
    var run = PairingRun(
      centralOffer: features(.keyboardDisplay, mitm: true, sc: true),
      peripheralOffer: features(.displayYesNo, mitm: true, sc: true))
    #expect(run.central.confirm(true).isEmpty && run.central.enterPasskey(123_456).isEmpty)
    run.run()
    #expect(run.compared[.central] != nil && run.compared[.central] == run.compared[.peripheral])
    #expect(run.encryptedWith != nil)
  }

  @Test func passkeysShowSixDigits() {
    #expect(sixDigits(42) == "000042" && sixDigits(999_999) == "999999")
  }
}
