import ATT
import Runtime
import Wire

/// A GATT server: one attribute database shared by every connection, a `GATTSession` per
/// connection (its CCCD values, its ATT connection).
public final class GATTServer: Sendable {
  private struct State {
    var database: GATTDatabase
    var sessions: [ObjectIdentifier: GATTSession] = [:]
    var serviceChanged: CharacteristicHandles?
  }
  private let state: Locked<State>
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
    self.state = Locked(State(database: database, serviceChanged: changed))
    self.logger = logger
  }

  /// Adds a service while setting up, before any client could have discovered the database
  /// (no Service Changed indication). Use `publish` once clients are connected.
  @discardableResult
  public func add(_ service: ServiceDefinition) throws(DatabaseError) -> [CharacteristicHandles] {
    try state.withLock { state throws(DatabaseError) in try state.database.add(service) }
  }

  /// The handles of a published service's characteristics, in definition order.
  public func handles(of service: BluetoothUUID) -> [CharacteristicHandles]? {
    state.withLock { $0.database.handles[service] }
  }

  /// The database in force.
  public var database: GATTDatabase { state.withLock { $0.database } }

  /// The Service Changed characteristic's handles, when published.
  public var serviceChangedHandles: CharacteristicHandles? { state.withLock { $0.serviceChanged } }

  /// Serves a connection: installs a session as its ATT server. The session ends when the
  /// connection's `run()` returns; call `detach` then.
  @discardableResult
  public func attach(_ connection: ATTConnection) async -> GATTSession {
    let session = GATTSession(server: self, connection: connection)
    state.withLock { $0.sessions[ObjectIdentifier(connection)] = session }
    await connection.setServer(session)
    return session
  }

  /// Forgets a connection's session, once its `run()` has returned (which lets go of the
  /// session).
  public func detach(_ connection: ATTConnection) {
    state.withLock { $0.sessions[ObjectIdentifier(connection)] = nil }
  }

  public var sessions: [GATTSession] { state.withLock { Array($0.sessions.values) } }

  /// Adds a service and indicates Service Changed over its range to subscribed clients.
  @discardableResult
  public func publish(_ service: ServiceDefinition, startingAt first: UInt16? = nil) async throws(DatabaseError)
    -> [CharacteristicHandles]
  {
    let (handles, range) = try state.withLock { state throws(DatabaseError) in
      let handles = try state.database.add(service, startingAt: first)
      return (handles, state.database.serviceRanges[service.uuid])
    }
    if let range { await indicateServiceChanged(range) }
    return handles
  }

  /// Removes a service and indicates Service Changed over the range it had.
  public func unpublish(_ uuid: BluetoothUUID) async {
    let (range, sessions) = state.withLock { state in (state.database.remove(uuid), Array(state.sessions.values)) }
    for session in sessions { await session.forget(range) }
    if let range { await indicateServiceChanged(range) }
  }

  /// Sends a Service Changed indication (affected start and end handles) to every session
  /// subscribed to it, or queues it behind the session's unconfirmed one, and returns without
  /// waiting for the confirmations: a server handler, on the receive loop that carries them,
  /// may call it (and `publish`, `unpublish`).
  public func indicateServiceChanged(_ range: HandleRange) async {
    for session in sessions { await session.indicateServiceChanged(range) }
  }

  func withDatabase<T>(_ body: (GATTDatabase) -> T) -> T { state.withLock { body($0.database) } }
}
