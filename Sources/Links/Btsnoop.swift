import Glibc
import Runtime
import Wire

/// The btsnoop capture format (as written by BlueZ's btsnoop and Android's HCI snoop log, and
/// read by Wireshark, tshark and btmon), with the HCI UART (H4) datalink. All header fields
/// are big-endian:
///
///   file header:  "btsnoop\0" | version u32 = 1 | datalink u32 = 1002 (HCI UART H4)
///   record:       original length u32 | included length u32 | flags u32 |
///                 cumulative drops u32 | timestamp i64 (microseconds since 0000-01-01) |
///                 packet
///   flags:        bit 0 direction (0 sent by the recording host, 1 received by it),
///                 bit 1 0 = data (1 would be command/event)
///
/// Each ATT PDU is recorded as the controller would carry it, little-endian inside:
///   H4 type 0x02 (ACL data) | connection handle + PB 0b10 (first, automatically flushable) |
///   ACL length u16 | L2CAP length u16 | CID 0x0004 (ATT) | PDU
///
/// Each link gets its own connection handle (0x0040, 0x0041, ...), announced by an HCI LE
/// Connection Complete event when it connects and ended by a Disconnection Complete when it
/// goes (flags 0b11: received, event), so that Wireshark ties each ACL packet to its link
/// instead of flagging it as "out of any connection handle session".
public enum Btsnoop {
  public enum Direction: Hashable, Sendable {
    /// Sent by the recording end (host to controller).
    case sent
    /// Received by the recording end (controller to host).
    case received
  }

  /// Microseconds from the btsnoop epoch to the Unix epoch (1970-01-01 00:00 UTC), the
  /// constant Wireshark (wiretap/btsnoop.c) and BlueZ's btmon (src/shared/btsnoop.c) both use:
  /// 0x00dcddb30f2f8000. It is midnight of 1 January of year 0 in the proleptic Gregorian
  /// calendar less two days (so counting from the "0 AD" of the format's description).
  public static let epochOffset: Int64 = 0x00DC_DDB3_0F2F_8000
  public static let datalinkH4: UInt32 = 1002
  /// The first link's connection handle; later links count up from it.
  public static let aclHandle: UInt16 = 0x0040
  /// The largest connection handle (Core v5.3, Vol 4, Part E, 5.4.2: 0x0000 to 0x0EFF).
  static let lastHandle: UInt16 = 0x0EFF
  /// The largest PDU that fits an ACL length field with its 4-byte L2CAP header.
  public static let maxPDUSize = Int(UInt16.max) - 4

  public static let fileHeader: [UInt8] = Array("btsnoop".utf8) + [0] + bigEndian(UInt32(1)) + bigEndian(datalinkH4)

  /// The simulated connection announced at the start of a capture.
  public struct Connection: Hashable, Sendable {
    public enum Role: UInt8, Hashable, Sendable {
      case central = 0x00
      case peripheral = 0x01
    }
    /// The recording end's role.
    public var role: Role
    /// The peer's random static address, most significant byte first, as it is written.
    public var peerAddress: [UInt8]

    public init(role: Role = .central, peerAddress: [UInt8] = [0xC0, 0x00, 0x00, 0x00, 0x00, 0x01]) {
      self.role = role
      self.peerAddress = peerAddress
    }
  }

  /// An H4 HCI LE Connection Complete event (Core v5.3, Vol 4, Part E, 7.7.65.1).
  public static func h4ConnectionComplete(_ connection: Connection, handle: UInt16 = aclHandle) -> [UInt8] {
    var parameters: [UInt8] = [0x01, 0x00]  // subevent LE Connection Complete, status success
    parameters += littleEndian(handle)
    parameters.append(connection.role.rawValue)
    parameters.append(0x01)  // peer address type: random
    parameters += (connection.peerAddress + [UInt8](repeating: 0, count: 6)).prefix(6).reversed()
    parameters += littleEndian(UInt16(24))  // connection interval 30 ms
    parameters += littleEndian(UInt16(0))  // peripheral latency
    parameters += littleEndian(UInt16(72))  // supervision timeout 720 ms
    parameters.append(0x00)  // central clock accuracy
    return [0x04, 0x3E, UInt8(parameters.count)] + parameters
  }

  /// An H4 HCI Disconnection Complete event (Core v5.3, Vol 4, Part E, 7.7.5); reason 0x13:
  /// Remote User Terminated Connection, 0x16: Connection Terminated by Local Host.
  public static func h4DisconnectionComplete(handle: UInt16, reason: UInt8) -> [UInt8] {
    [0x04, 0x05, 0x04, 0x00] + littleEndian(handle) + [reason]
  }

  /// An ATT PDU as an H4 ACL packet on L2CAP CID 4.
  public static func h4Packet(attPDU pdu: [UInt8], handle: UInt16 = aclHandle) -> [UInt8] {
    var packet: [UInt8] = [0x02]
    packet.reserveCapacity(pdu.count + 9)
    // Packet boundary 0b10 (first automatically flushable) in bits 12-13.
    packet += littleEndian(handle | 0b10 << 12)
    packet += littleEndian(UInt16(pdu.count + 4))
    packet += littleEndian(UInt16(pdu.count))
    packet += littleEndian(UInt16(0x0004))
    packet += pdu
    return packet
  }

  /// One record around `packet`. `unixMicroseconds` counts from the Unix epoch.
  /// `isEvent` sets flag bit 1 (command or event instead of data).
  public static func record(
    _ packet: [UInt8], direction: Direction, isEvent: Bool = false, unixMicroseconds: Int64,
    cumulativeDrops: UInt32 = 0
  ) -> [UInt8] {
    var record: [UInt8] = []
    record.reserveCapacity(packet.count + 24)
    record += bigEndian(UInt32(packet.count))
    record += bigEndian(UInt32(packet.count))
    record += bigEndian(UInt32((direction == .received ? 1 : 0) | (isEvent ? 2 : 0)))
    record += bigEndian(cumulativeDrops)
    record += bigEndian(UInt64(bitPattern: unixMicroseconds &+ epochOffset))
    record += packet
    return record
  }

  static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
    withUnsafeBytes(of: value.bigEndian) { Array($0) }
  }

  static func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
    withUnsafeBytes(of: value.littleEndian) { Array($0) }
  }
}

/// Writes a btsnoop file of ATT PDUs (format in `Btsnoop`). Safe to use from several
/// threads; records are buffered and reach the file on `flush()`, `close()`, or when the
/// buffer grows past 64 KiB, unless `live`: then each record is written as it comes, so
/// that a reader following the file (`ancs inspect --follow`, Wireshark) sees it at once.
public final class BtsnoopWriter: Sendable {
  /// Microseconds since the Unix epoch.
  public typealias Clock = @Sendable () -> Int64

  /// The wall clock (CLOCK_REALTIME).
  public static let systemClock: Clock = {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
  }

  private struct State {
    var fd: Int32
    var buffer: [UInt8]
    var drops: UInt32 = 0
    var error: String?
    var nextHandle = Btsnoop.aclHandle
    /// Every byte written so far, when the writer keeps a copy.
    var copy: [UInt8]?
  }

  public let path: String
  /// Each record reaches the file at once.
  public let live: Bool
  private let clock: Clock
  private let state: Locked<State>

  /// Creates (or truncates) the file at `path` and writes the file header. Links are
  /// announced with `openConnection(_:)`.
  /// With `keepsCopy`, every byte written is kept in memory too (`bytes`).
  public init(
    path: String, live: Bool = false, keepsCopy: Bool = false, clock: @escaping Clock = BtsnoopWriter.systemClock
  )
    throws(LinkError)
  {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else {
      let code = errno
      throw LinkError(
        address: path, kind: code == EACCES ? .permissionDenied : .system(errno: code),
        detail: "cannot create capture file: \(errnoText(code))")
    }
    self.path = path
    self.live = live
    self.clock = clock
    self.state = Locked(State(fd: fd, buffer: Btsnoop.fileHeader, copy: keepsCopy ? [] : nil))
    flush()
  }

  /// A capture kept in memory only (`bytes`), written to no file.
  public convenience init(inMemoryWith clock: @escaping Clock = BtsnoopWriter.systemClock) throws(LinkError) {
    try self.init(path: "/dev/null", keepsCopy: true, clock: clock)
  }

  /// The whole capture so far, header first, when the writer keeps a copy; empty otherwise.
  public var bytes: [UInt8] { state.withLock { state in state.copy.map { $0 + state.buffer } ?? [] } }

  /// Records an LE Connection Complete for a new link and returns its connection handle,
  /// the next one after the last link's (0x0040 first). The peer's address ends in the handle,
  /// so each link's peer can be told apart too.
  public func openConnection(role: Btsnoop.Connection.Role) -> UInt16 {
    let time = clock()
    return state.withLock { state in
      let handle = state.nextHandle
      state.nextHandle = handle == Btsnoop.lastHandle ? Btsnoop.aclHandle : handle + 1
      guard state.fd >= 0 else { return handle }
      let peer: [UInt8] = [0xC0, 0x00, 0x00, 0x00, UInt8(handle >> 8), UInt8(handle & 0xFF)]
      state.buffer += Btsnoop.record(
        Btsnoop.h4ConnectionComplete(.init(role: role, peerAddress: peer), handle: handle), direction: .received,
        isEvent: true, unixMicroseconds: time, cumulativeDrops: state.drops)
      if live { Self.write(&state) }
      return handle
    }
  }

  /// Records the Disconnection Complete of a link opened with `openConnection(role:)`.
  public func closeConnection(_ handle: UInt16, reason: UInt8) {
    record(
      h4Packet: Btsnoop.h4DisconnectionComplete(handle: handle, reason: reason), direction: .received, isEvent: true)
  }

  deinit {
    close()
  }

  /// Records one ATT PDU on the link `handle`. A PDU too large for an ACL packet is counted
  /// as dropped.
  public func record(_ pdu: [UInt8], direction: Btsnoop.Direction, handle: UInt16 = Btsnoop.aclHandle) {
    let time = clock()
    state.withLock { state in
      guard state.fd >= 0 else { return }
      guard pdu.count <= Btsnoop.maxPDUSize else {
        state.drops &+= 1
        return
      }
      state.buffer += Btsnoop.record(
        Btsnoop.h4Packet(attPDU: pdu, handle: handle), direction: direction, unixMicroseconds: time,
        cumulativeDrops: state.drops)
      if live || state.buffer.count >= 64 * 1024 { Self.write(&state) }
    }
  }

  /// Records one raw HCI packet, H4 indicator first, as a host sent or received it (a
  /// capture of a real controller's traffic). `isEvent` is true for commands and events.
  public func record(h4Packet packet: [UInt8], direction: Btsnoop.Direction, isEvent: Bool) {
    let time = clock()
    state.withLock { state in
      guard state.fd >= 0 else { return }
      state.buffer += Btsnoop.record(
        packet, direction: direction, isEvent: isEvent, unixMicroseconds: time, cumulativeDrops: state.drops)
      if live || state.buffer.count >= 64 * 1024 { Self.write(&state) }
    }
  }

  /// Writes what is buffered to the file.
  public func flush() {
    state.withLock { Self.write(&$0) }
  }

  /// Flushes and closes the file (idempotent); later records are ignored.
  public func close() {
    state.withLock { state in
      guard state.fd >= 0 else { return }
      Self.write(&state)
      Glibc.close(state.fd)
      state.fd = -1
    }
  }

  /// The first write error, if any (the capture then stops growing).
  public var writeError: String? { state.withLock { $0.error } }

  /// PDUs left out because they do not fit an ACL packet.
  public var droppedCount: UInt32 { state.withLock { $0.drops } }

  private static func write(_ state: inout State) {
    guard state.fd >= 0, state.error == nil, !state.buffer.isEmpty else { return }
    state.copy? += state.buffer
    let fd = state.fd
    let failure = state.buffer.withUnsafeBytes { raw -> Int32? in
      var offset = 0
      while offset < raw.count {
        let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
        if written < 0 {
          if errno == EINTR { continue }
          return errno
        }
        offset += written
      }
      return nil
    }
    state.buffer.removeAll(keepingCapacity: true)
    if let failure { state.error = "cannot write the capture: \(errnoText(failure))" }
  }
}
