import AMS
import ANCS
import ATT
import Foundation
import HCI
import Links
import Processes
import Runtime
import Sockets
import Wire

/// `--bluetooth TRANSPORT` for `ancs watch` and `ancs phone`: the engines over a Bluetooth
/// controller (Protocol/HCI.md) instead of a simulated link, pairing Just Works and keeping
/// bonds in a file.
enum BluetoothCommandLine {
  static let usage = """
      --bluetooth TRANSPORT   run over Bluetooth instead; pairs Just Works. TRANSPORT is
                                hci-tcp:HOST:PORT   a virtual controller (Bumble's tcp-server)
                                hci-uart:DEV[,BAUD] a controller with H4 firmware on a serial
                                                    port (RTS/CTS; default 1000000 baud)
                                hci-user:N          controller hciN to this program alone (Linux
                                                    HCI user channel; needs CAP_NET_ADMIN and
                                                    the controller powered off in BlueZ)
                                l2cap:hciN          the Linux kernel's own Bluetooth host on
                                                    hciN (it pairs and keeps the bonds)
      --bonds FILE            with --bluetooth hci-*: where bonds and this device's address
                              are kept (mode 0600; default
                              ~/.local/state/ancs-sim/watch.bonds.json); delete it to forget them
    """

  /// The ANCS service, as solicited by a watch and looked for by a phone.
  static let ancs = BluetoothUUID(ANCSUUID.service)!
  /// What a phone connects to: an accessory soliciting ANCS, AMS or both, as an iPhone
  /// offers both services to any accessory it is paired with.
  static let solicited = [ancs, BluetoothUUID(AMSUUID.service)!]

  /// What `--bluetooth` and `--bonds` said; nil without `--bluetooth`.
  struct Settings {
    var transport: BluetoothTransport
    var bonds: String
    var bondsGiven: Bool

    /// `l2cap:hciN`: the kernel's host pairs, not this program's.
    var isKernel: Bool {
      if case .l2cap = transport { return true }
      return false
    }
  }

  /// `role` names the default bond file: each role keeps its own, so a phone and a watch on
  /// one machine never write the same file or take the same address.
  static func settings(_ args: inout Arguments, role: String) throws(UsageError) -> Settings? {
    let bonds = try args.value("--bonds")
    guard let text = try args.value("--bluetooth") else {
      if bonds != nil { throw UsageError("--bonds goes with --bluetooth TRANSPORT") }
      return nil
    }
    let transport: BluetoothTransport
    do { transport = try BluetoothTransport(parsing: text) } catch { throw UsageError("\(error)") }
    return Settings(transport: transport, bonds: bonds ?? defaultBondsPath(role: role), bondsGiven: bonds != nil)
  }

  /// `--passkey N` and `--confirm yes|no`: a user's answers given ahead, for scripts and CI.
  static func pairingAnswers(_ args: inout Arguments, bluetooth: Settings?) throws(UsageError) -> (
    passkey: UInt32?, confirm: Bool?
  ) {
    let passkeyText = try args.value("--passkey")
    let confirmText = try args.value("--confirm")
    if passkeyText != nil || confirmText != nil {
      guard let bluetooth, !bluetooth.isKernel else {
        throw UsageError(
          "\(passkeyText != nil ? "--passkey" : "--confirm") goes with --bluetooth hci-*: this program's host pairs there"
        )
      }
    }
    var passkey: UInt32?
    if let passkeyText {
      guard let value = ATT.passkey(digits: passkeyText) else {
        throw UsageError("--passkey takes the six digits shown, like 012345, not '\(passkeyText)'")
      }
      passkey = value
    }
    var confirm: Bool?
    if let confirmText {
      guard ["yes", "no"].contains(confirmText) else {
        throw UsageError("--confirm takes yes or no, not '\(confirmText)'")
      }
      confirm = confirmText == "yes"
    }
    return (passkey, confirm)
  }

  /// `--io CAPABILITY` and `--security LEVEL` of a watch (an accessory as it can be built):
  /// what it can show and type, and whether it demands MITM protection. `--io` needs this
  /// program's host (hci-*); `--security` works on the simulated links too, whose pairing
  /// gives the level asked for.
  static func accessorySecurity(_ args: inout Arguments, bluetooth: Settings?) throws(UsageError) -> (
    io: IOCapability, mitm: Bool
  ) {
    let ioText = try args.value("--io")
    let securityText = try args.value("--security")
    if ioText != nil, bluetooth == nil || bluetooth?.isKernel == true {
      throw UsageError("--io goes with --bluetooth hci-*: this program's host pairs there")
    }
    if securityText != nil, bluetooth?.isKernel == true {
      throw UsageError("--security goes with --bluetooth hci-* or a simulated link: the kernel pairs over l2cap")
    }
    let capabilities: [String: IOCapability] = [
      "display-only": .displayOnly, "display-yesno": .displayYesNo, "keyboard-only": .keyboardOnly,
      "no-input-no-output": .noInputNoOutput, "keyboard-display": .keyboardDisplay,
    ]
    var io = IOCapability.noInputNoOutput
    if let ioText {
      guard let known = capabilities[ioText] else {
        throw UsageError("--io takes \(capabilities.keys.sorted().joined(separator: ", ")), not '\(ioText)'")
      }
      io = known
    }
    guard securityText == nil || ["just-works", "mitm"].contains(securityText ?? "") else {
      throw UsageError("--security takes just-works or mitm, not '\(securityText ?? "")'")
    }
    return (io, securityText == "mitm")
  }

  /// `--peer BDADDR`.
  static func address(_ text: String) throws(UsageError) -> BDAddress {
    guard let address = BDAddress(text) else {
      throw UsageError("--peer takes a Bluetooth address like C0:11:22:33:44:55, not '\(text)'")
    }
    return address
  }

  static func defaultBondsPath(role: String) -> String {
    let environment = ProcessInfo.processInfo.environment
    let state =
      environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
      ?? ((environment["HOME"] ?? NSTemporaryDirectory()) + "/.local/state")
    return state + "/ancs-sim/\(role).bonds.json"
  }

  /// Opens the radio: for a controller, the bond store (creating its directory) and the
  /// controller, set up; for `l2cap:hciN`, the kernel's host.
  static func open(
    _ settings: Settings, on loops: any EventLoopGroup, capture: String?, logger: Logger,
    security: SMPSecurityManager.Options = .init()
  ) async throws(UsageError) -> any BluetoothRadio {
    if case .l2cap(let index) = settings.transport {
      if settings.bondsGiven {
        throw UsageError(
          "--bonds is for hci-* transports: with l2cap:hciN the kernel keeps the bonds (bluetoothctl remove ADDRESS forgets one)"
        )
      }
      if capture != nil {
        throw UsageError(
          "--capture is for hci-* transports: with l2cap:hciN record the kernel's traffic with btmon -w FILE")
      }
      do { return try KernelL2CAP.open(index: index, on: loops, logger: logger) } catch { throw UsageError("\(error)") }
    }
    let directory = (settings.bonds as NSString).deletingLastPathComponent
    if !directory.isEmpty {
      try? FileManager.default.createDirectory(
        atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
    let store: BondStore
    do { store = try BondStore(path: settings.bonds) } catch { throw UsageError("\(error)") }
    let security = SMPSecurityManager(store: store, options: security, logger: logger)
    do {
      // The address of earlier runs, so that peers bonded with this device find it again.
      let (host, setup) = try await HCIHost.open(
        transport: settings.transport, on: loops.next(), logger: logger, capturePath: capture, security: security,
        randomAddress: store.localAddress)
      logger.info("\(settings.transport): controller ready, random address \(setup.randomAddress)")
      if store.localAddress == nil {
        do { try store.keep(localAddress: setup.randomAddress) } catch {
          host.close()
          throw error
        }
      }
      return host
    } catch {
      throw UsageError("\(error)")
    }
  }

  /// The bonds a radio keeps: its host's bond file; nil for `l2cap:hciN`, whose bonds are
  /// the kernel's.
  static func bonds(of radio: any BluetoothRadio) -> BondStore? {
    ((radio as? HCIHost)?.security as? SMPSecurityManager)?.store
  }
}
