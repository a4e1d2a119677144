/// Which end of ANCS a case judges.
public enum ConformanceRole: String, Hashable, Sendable, CaseIterable {
  /// The implementation under test is a phone (Notification Provider); the harness plays the
  /// accessory.
  case np = "NP"
  /// The implementation under test is an accessory (Notification Consumer); the harness plays
  /// the phone.
  case nc = "NC"
}

/// What a case does, by the role it judges.
public enum CaseBody: Sendable {
  /// Judges a phone: the harness is the accessory.
  case phone(@Sendable (NPContext) async throws -> Void)
  /// Judges an accessory: the harness is the phone.
  case accessory(@Sendable (NCContext) async throws -> Void)
}

/// What the runner needs of a case's context: closing what the case opened (which ends any
/// wait on the peer) and undoing what it changed on the peer.
public protocol CaseContext: Sendable {
  func closeLinks()
  func cleanUp() async
  /// What the case waits for and what the implementation last did.
  var log: CaseLog { get }
}

/// A timer of the accessory's own that a case waits on: the case's time budget grows by it.
public enum AccessoryTimer: String, Hashable, Sendable, CaseIterable {
  /// After this long without a word from the phone, the accessory checks its subscriptions.
  case liveness
  /// How often the accessory checks that a ringing call still exists.
  case callRecheck
  /// How long the accessory waits for the answer to one Control Point command.
  case commandTimeout
  /// After this long without a Notification Source event, the accessory writes its CCCDs
  /// again (a phone may fall silent while it still reads subscribed).
  case resubscribe
  /// While the phone does not share its notifications, the accessory asks again this often.
  case sharingRecheck

  /// The `ancs conform accessory` option that states it.
  public var option: String {
    switch self {
    case .liveness: return "--liveness"
    case .callRecheck: return "--call-recheck"
    case .commandTimeout: return "--command-timeout"
    case .resubscribe: return "--resubscribe-after"
    case .sharingRecheck: return "--sharing-recheck"
    }
  }
}

/// The accessory's timers as its maker states them (defaults: those of `ancs watch`).
public struct AccessoryTimers: Hashable, Sendable {
  public var liveness: Duration = .seconds(30)
  public var callRecheck: Duration = .seconds(20)
  public var commandTimeout: Duration = .seconds(10)
  /// Unknown until stated: `ancs watch` waits 6 hours, too long to wait for unasked, so the
  /// cases that wait on it are skipped until it is given.
  public var resubscribe: Duration?
  public var sharingRecheck: Duration = .seconds(10)

  public init() {}

  /// Whether the timer is known (stated, or with a default worth waiting for).
  public func isKnown(_ timer: AccessoryTimer) -> Bool { timer != .resubscribe || resubscribe != nil }

  public subscript(timer: AccessoryTimer) -> Duration {
    get {
      switch timer {
      case .liveness: return liveness
      case .callRecheck: return callRecheck
      case .commandTimeout: return commandTimeout
      case .resubscribe: return resubscribe ?? .zero
      case .sharingRecheck: return sharingRecheck
      }
    }
    set {
      switch timer {
      case .liveness: liveness = newValue
      case .callRecheck: callRecheck = newValue
      case .commandTimeout: commandTimeout = newValue
      case .resubscribe: resubscribe = newValue
      case .sharingRecheck: sharingRecheck = newValue
      }
    }
  }
}

/// One conformance case: a stable ID in the Bluetooth SIG style (`ANCS/NP/CP/BI-02`), what it
/// checks, and how to run it. Described in Protocol/conformance.md.
public struct ConformanceCase: Sendable, Identifiable {
  public var id: String
  public var title: String
  /// The rule it checks, quoted or cited from Protocol/ANCS.md or the specification.
  public var rule: String
  /// Whether the phone must be told to post or remove notifications (a stimulus channel).
  public var needsStimulus: Bool
  /// The accessory's own timers the case waits on (NC only).
  public var waitsOn: [AccessoryTimer] = []
  public var body: CaseBody

  public init(
    _ id: String, _ title: String, rule: String, needsStimulus: Bool = true,
    run: @escaping @Sendable (NPContext) async throws -> Void
  ) {
    self.id = id
    self.title = title
    self.rule = rule
    self.needsStimulus = needsStimulus
    self.body = .phone(run)
  }

  /// An NC case. `needsStimulus` is false: the harness phone posts its own notifications.
  public init(
    _ id: String, _ title: String, rule: String, waitsOn: [AccessoryTimer] = [],
    accessory run: @escaping @Sendable (NCContext) async throws -> Void
  ) {
    self.id = id
    self.title = title
    self.rule = rule
    self.needsStimulus = false
    self.waitsOn = waitsOn
    self.body = .accessory(run)
  }

  /// The role, from the ID's second component.
  public var role: ConformanceRole? {
    let parts = id.split(separator: "/")
    return parts.count > 1 ? ConformanceRole(rawValue: String(parts[1])) : nil
  }

  /// The ID as a file name: '/' replaced by '_'.
  public var fileName: String { String(id.map { $0 == "/" ? "_" : $0 }) }
}

/// Every case, by role.
public enum ConformanceCatalog {
  /// The phone (NP) cases, in catalog order.
  public static var np: [ConformanceCase] { NPCases.all }

  /// The accessory (NC) cases, in catalog order.
  public static var nc: [ConformanceCase] { NCCases.all }

  /// Every case of a role.
  public static func cases(for role: ConformanceRole) -> [ConformanceCase] {
    switch role {
    case .np: return np
    case .nc: return nc
    }
  }

  /// Cases whose ID starts with one of `prefixes` (all of them when `prefixes` is empty), in
  /// catalog order. A prefix that selects nothing is reported in `unmatched`.
  public static func select(_ cases: [ConformanceCase], prefixes: [String]) -> (
    cases: [ConformanceCase], unmatched: [String]
  ) {
    guard !prefixes.isEmpty else { return (cases, []) }
    let selected = cases.filter { testCase in prefixes.contains { testCase.id.hasPrefix($0) } }
    let unmatched = prefixes.filter { prefix in !cases.contains { $0.id.hasPrefix(prefix) } }
    return (selected, unmatched)
  }
}
