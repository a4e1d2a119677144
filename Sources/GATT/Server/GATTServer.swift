import ATT
import Runtime
import Synchronization
import Wire

/// A GATT server: one attribute database shared by every connection, a `GATTSession` per
/// connection (its CCCD values, its ATT connection).
///
/// Each session serves from a copy of the database (a value: the copy shares its storage
/// until the database changes), so a request takes no lock: the session compares the
/// database's version, an atomic, with its copy's, and only after a change takes the new
/// database under the lock, with the services removed since its copy, whose CCCDs it then
/// forgets. The characteristics' handlers therefore run under no lock of the server's, and
/// may ask it anything.
public final class GATTServer: Sendable {
  private struct State {
    var database: GATTDatabase
    var sessions: [ObjectIdentifier: GATTSession] = [:]
    /// The ranges of removed services, each with the version its removal made, kept while a
    /// session's copy is older than it (let go at the next removal or detach after that).
    var removals: [(version: Int, range: HandleRange)] = []
  }
  private let state: Locked<State>
  /// The database's version: raised, under the lock, by every change.
  private let version = Atomic(0)
  /// The Service Changed characteristic's handles, when published (fixed at init).
  public let serviceChangedHandles: CharacteristicHandles?
  let logger: Logger

  /// Builds the database from `services`, in order, handles from 1.
  /// - Parameters:
  ///   - leading: services put before the Generic Attribute service (an iPhone has GAP first).
  ///   - serviceChanged: publish the Generic Attribute service with the Service Changed
  ///     characteristic (indicate) before `services`, so clients learn of later changes.
  public init(
    leading: [ServiceDefinition] = [], services: [ServiceDefinition], serviceChanged: Bool = true,
    logger: Logger = .none
  ) throws(DatabaseError) {
    var database = GATTDatabase()
    for service in leading { try database.add(service) }
    var changed: CharacteristicHandles?
    if serviceChanged {
      let service = ServiceDefinition(
        uuid: .genericAttributeService,
        characteristics: [CharacteristicDefinition(uuid: .serviceChanged, properties: .indicate)])
      changed = try database.add(service).first
    }
    for service in services { try database.add(service) }
    self.state = Locked(State(database: database))
    serviceChangedHandles = changed
    self.logger = logger
  }

  /// Adds a service while setting up, before any client could have discovered the database
  /// (no Service Changed indication). Use `publish` once clients are connected.
  @discardableResult
  public func add(_ service: ServiceDefinition) throws(DatabaseError) -> [CharacteristicHandles] {
    try change { state throws(DatabaseError) in try state.database.add(service) }
  }

  /// Changes the database under the lock and raises its version.
  private func change<T, Failure: Error>(_ body: (inout State) throws(Failure) -> T) throws(Failure) -> T {
    try state.withLock { state throws(Failure) in
      let result = try body(&state)
      version.add(1, ordering: .releasing)
      return result
    }
  }

  /// Removals kept for sessions that have not yet taken them in. For tests.
  package var keptRemovals: Int { state.withLock { $0.removals.count } }

  /// The database's version now; a session compares it with its copy's at each request.
  var currentVersion: Int { version.load(ordering: .acquiring) }

  /// The database now, its version, and the ranges removed after version `seen`, in order.
  func database(since seen: Int) -> (database: GATTDatabase, version: Int, removed: [HandleRange]) {
    state.withLock { state in
      let removed = state.removals.lazy.filter { $0.version > seen }.map(\.range)
      return (state.database, version.load(ordering: .relaxed), Array(removed))
    }
  }

  /// The handles of a published service's characteristics, in definition order.
  public func handles(of service: BluetoothUUID) -> [CharacteristicHandles]? {
    state.withLock { $0.database.handles[service] }
  }

  /// The database in force.
  public var database: GATTDatabase { state.withLock { $0.database } }

  /// Serves a connection: installs a session as its ATT server. The session ends when the
  /// connection's `run()` returns; call `detach` then.
  @discardableResult
  public func attach(_ connection: ATTConnection) async -> GATTSession {
    let session = state.withLock { state in
      let session = GATTSession(
        server: self, connection: connection, database: state.database, version: version.load(ordering: .relaxed))
      state.sessions[ObjectIdentifier(connection)] = session
      return session
    }
    await connection.setServer(session)
    return session
  }

  /// Forgets a connection's session, once its `run()` has returned (which lets go of the
  /// session).
  public func detach(_ connection: ATTConnection) {
    state.withLock { state in
      state.sessions[ObjectIdentifier(connection)] = nil
      Self.trim(&state)
    }
  }

  /// Lets go of the removals every session has taken in.
  private static func trim(_ state: inout State) {
    guard !state.removals.isEmpty else { return }
    let oldest = state.sessions.values.map(\.seenVersion).min() ?? .max
    state.removals.removeAll { $0.version <= oldest }
  }

  public var sessions: [GATTSession] { state.withLock { Array($0.sessions.values) } }

  /// Adds a service and indicates Service Changed over its range to subscribed clients.
  @discardableResult
  public func publish(_ service: ServiceDefinition, startingAt first: UInt16? = nil) async throws(DatabaseError)
    -> [CharacteristicHandles]
  {
    let (handles, range) = try added(service, startingAt: first)
    if let range { await indicateServiceChanged(range) }
    return handles
  }

  /// As `publish`, from the executor every session runs on (an owner that runs each
  /// connection it serves on its own executor, as the phone does): each subscribed client is
  /// told in this call, in the caller's step. Stops the program if a session runs elsewhere.
  @discardableResult
  package func publishNow(_ service: ServiceDefinition, startingAt first: UInt16? = nil) throws(DatabaseError)
    -> [CharacteristicHandles]
  {
    let (handles, range) = try added(service, startingAt: first)
    if let range { indicateServiceChangedNow(range) }
    return handles
  }

  private func added(_ service: ServiceDefinition, startingAt first: UInt16?) throws(DatabaseError) -> (
    [CharacteristicHandles], HandleRange?
  ) {
    try change { state throws(DatabaseError) in
      let handles = try state.database.add(service, startingAt: first)
      return (handles, state.database.serviceRanges[service.uuid])
    }
  }

  /// Removes a service and indicates Service Changed over the range it had. Each session
  /// forgets its CCCDs in the range when it next looks at the database, in order with its
  /// requests (so a subscription to a service published later in the same handles stays).
  public func unpublish(_ uuid: BluetoothUUID) async {
    if let range = removed(uuid) { await indicateServiceChanged(range) }
  }

  /// As `unpublish`, from the executor every session runs on, as `publishNow`.
  package func unpublishNow(_ uuid: BluetoothUUID) {
    if let range = removed(uuid) { indicateServiceChangedNow(range) }
  }

  private func removed(_ uuid: BluetoothUUID) -> HandleRange? {
    change { state -> HandleRange? in
      guard let range = state.database.remove(uuid) else { return nil }
      Self.trim(&state)
      state.removals.append((version.load(ordering: .relaxed) + 1, range))
      return range
    }
  }

  /// Service Changed over `range` to every session, from the executor they all run on.
  private func indicateServiceChangedNow(_ range: HandleRange) {
    for session in sessions {
      session.assumeIsolated(passing: range) { session, range in session.indicateServiceChanged(range) }
    }
  }

  /// Sends a Service Changed indication (affected start and end handles) to every session
  /// subscribed to it, or queues it behind the session's unconfirmed one, and returns without
  /// waiting for the confirmations.
  public func indicateServiceChanged(_ range: HandleRange) async {
    for session in sessions { await session.indicateServiceChanged(range) }
  }
}
