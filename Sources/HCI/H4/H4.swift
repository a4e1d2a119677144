import Wire

/// The packet indicator that starts every packet of the UART transport, H4 (Vol 4 Part A 2).
public enum H4PacketType: UInt8, Hashable, Sendable, CaseIterable {
  case command = 0x01
  case acl = 0x02
  case sco = 0x03
  case event = 0x04
  case iso = 0x05

  /// Header length after the indicator, and where and how long its length field is.
  var header: (size: Int, lengthOffset: Int, lengthSize: Int) {
    switch self {
    case .command: return (3, 2, 1)  // Opcode(2) Parameter_Total_Length(1)
    case .acl: return (4, 2, 2)  // Handle and flags(2) Data_Total_Length(2)
    case .sco: return (3, 2, 1)  // Handle and flags(2) Data_Total_Length(1)
    case .event: return (2, 1, 1)  // Event_Code(1) Parameter_Total_Length(1)
    case .iso: return (4, 2, 2)  // Handle and flags(2) ISO_Data_Load_Length(14 bits) RFU(2)
    }
  }

  /// The payload length a header announces.
  func payloadLength(header bytes: ArraySlice<UInt8>) -> Int {
    let (_, at, size) = header
    let start = bytes.startIndex + at
    if size == 1 { return Int(bytes[start]) }
    let value = Int(bytes[start]) | Int(bytes[start + 1]) << 8
    return self == .iso ? value & 0x3FFF : value
  }
}

/// One HCI packet with its type; `bytes` is the packet without the H4 indicator (header and
/// payload), as the HCI codecs take it.
public struct H4Packet: Hashable, Sendable {
  public var type: H4PacketType
  public var bytes: [UInt8]

  public init(type: H4PacketType, bytes: [UInt8]) {
    self.type = type
    self.bytes = bytes
  }

  /// The indicator followed by the packet, as written to the UART or TCP stream.
  public var encoded: [UInt8] { [type.rawValue] + bytes }
}

/// Why an H4 stream cannot be read further.
public enum H4Error: Error, Hashable, Sendable, CustomStringConvertible {
  /// A byte where a packet indicator must be that is none of 0x01 to 0x05, at `offset` bytes
  /// into the stream. H4 has no way to find the next packet boundary after this, so the
  /// decoder stays failed: the transport must be reset (HCI_Reset after reopening).
  case unknownPacketIndicator(UInt8, offset: Int)

  public var description: String {
    switch self {
    case .unknownPacketIndicator(let byte, let offset):
      return
        "H4: unknown packet indicator 0x\(Hex.encode([byte])) at stream byte \(offset); the stream cannot resynchronise"
    }
  }
}

/// Splits an H4 byte stream into packets: `append` the chunks as they arrive, of any size, then
/// take packets with `next()` until it returns nil. Pure: no I/O, no clock.
public struct H4Decoder: Sendable {
  private var buffer: [UInt8] = []
  /// Where the unread bytes start in `buffer`.
  private var head = 0
  /// Stream offset of `buffer[0]`.
  private var consumed = 0
  /// Set once the stream is broken; every later `next()` throws it again.
  public private(set) var failure: H4Error?

  public init() {}

  /// Bytes received and not yet part of a packet returned.
  public var pendingCount: Int { buffer.count - head }

  /// Adds received bytes (ignored once the stream has failed).
  public mutating func append(_ chunk: some Sequence<UInt8>) {
    if failure == nil { buffer.append(contentsOf: chunk) }
  }

  /// The next complete packet, or nil until more bytes arrive. Packets come out in stream
  /// order, so every packet before a bad indicator is delivered before the error; from then on
  /// it throws on every call.
  public mutating func next() throws(H4Error) -> H4Packet? {
    if let failure { throw failure }
    guard head < buffer.count else { return nil }
    guard let type = H4PacketType(rawValue: buffer[head]) else {
      let error = H4Error.unknownPacketIndicator(buffer[head], offset: consumed + head)
      failure = error
      buffer = []
      head = 0
      throw error
    }
    let headerEnd = head + 1 + type.header.size
    guard headerEnd <= buffer.count else { return nil }
    let end = headerEnd + type.payloadLength(header: buffer[(head + 1)..<headerEnd])
    guard end <= buffer.count else { return nil }
    let packet = H4Packet(type: type, bytes: Array(buffer[(head + 1)..<end]))
    head = end
    compact()
    return packet
  }

  /// Appends `chunk` and returns every packet now complete. On a bad indicator it throws, and
  /// the packets before it in this call are lost with the stream; use `next()` to keep them.
  public mutating func packets(after chunk: some Sequence<UInt8>) throws(H4Error) -> [H4Packet] {
    append(chunk)
    var packets: [H4Packet] = []
    while let packet = try next() { packets.append(packet) }
    return packets
  }

  /// Drops what has been read once it is most of the buffer, so a long stream stays O(n).
  private mutating func compact() {
    if head == buffer.count {
      consumed += head
      buffer.removeAll(keepingCapacity: true)
      head = 0
    } else if head >= 4096 && head * 2 >= buffer.count {
      consumed += head
      buffer.removeFirst(head)
      head = 0
    }
  }
}
