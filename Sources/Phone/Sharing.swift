import ATT
import GATT
import Runtime

/// Notification sharing (iOS 13 and later): the user allows an accessory to receive
/// notifications. Until then the phone takes the CCCD writes, sends no event, and answers
/// every Control Point write with Write Not Permitted (0x03) (Protocol/iPhone.md).
public enum SharingPolicy: String, CaseIterable, Hashable, Sendable {
  /// Every accessory receives notifications (iOS 12 and earlier; the library's default).
  case allow
  /// Each new accessory must be allowed (`allow N` at the console): iOS 13 and later.
  case ask
  /// No accessory is allowed until the user allows it.
  case deny
}

extension Phone {
  /// Allows notification sharing for the watch of session `id`, or, when nil, every watch
  /// now and every one that comes later (the policy becomes `allow`); a watch already
  /// subscribed gets its session (and its pre-existing report) at once. Returns the
  /// sessions whose sharing changed.
  @discardableResult
  public func allowSharing(session id: Int? = nil) -> [Int] {
    let changed = setSharing(id, to: true)
    for (number, gatt, waiting) in changed {
      emit(.sharingChanged(session: number, allowed: true))
      if waiting { startSession(gatt) }
    }
    return changed.map(\.0)
  }

  /// Revokes notification sharing for the watch of session `id`, or, when nil, every watch
  /// now and later (the policy becomes `deny`): no more events, and the Control Point
  /// answers Write Not Permitted, the link staying up.
  @discardableResult
  public func revokeSharing(session id: Int? = nil) -> [Int] {
    let changed = setSharing(id, to: false)
    for (number, _, _) in changed { emit(.sharingChanged(session: number, allowed: false)) }
    return changed.map(\.0)
  }

  /// The sessions connected now and whether each may receive notifications, by session number.
  public var sharing: [Int: Bool] {
    withState { state in Dictionary(uniqueKeysWithValues: state.sessions.values.map { ($0.id, $0.shared) }) }
  }

  /// Sets sharing and remembers it by the accessory's name; returns (session, GATT session,
  /// subscribed while blocked) for each one changed.
  private func setSharing(_ id: Int?, to allowed: Bool) -> [(Int, GATTSession, Bool)] {
    if !allowed && !policy.honoursRevocation { return [] }
    return withState { state in
      if id == nil { state.sharingPolicy = allowed ? .allow : .deny }
      var changed: [(Int, GATTSession, Bool)] = []
      for (key, var session) in state.sessions where (id == nil || session.id == id) && session.shared != allowed {
        session.shared = allowed
        let waiting = allowed && session.waitingForSharing
        if !allowed {
          // The session stops; a subscription still in place waits for sharing again.
          session.waitingForSharing = session.started || session.waitingForSharing
          session.stop()
        }
        if let name = session.name { state.sharingDecisions[name] = allowed }
        state.sessions[key] = session
        changed.append((session.id, session.gatt, waiting))
      }
      return changed.sorted { $0.0 < $1.0 }
    }
  }

  /// The accessory of session `id` is named `name`: a decision the user made about it on an
  /// earlier connection applies again.
  func named(_ id: Int, _ name: String) {
    let decision = withState { state -> Bool? in
      guard let key = state.sessions.first(where: { $0.value.id == id })?.key else { return nil }
      state.sessions[key]?.name = name
      return state.sharingDecisions[name]
    }
    if decision == true { allowSharing(session: id) }
  }

  /// Whether the Control Point may be used by this session now.
  func mayShare(_ gatt: GATTSession) -> Bool {
    withState { $0.sessions[ObjectIdentifier(gatt)]?.shared ?? false }
  }
}
