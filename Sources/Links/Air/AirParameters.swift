/// An LE physical layer: how long each packet stays on the air (Core Vol 6 Part A 3 and
/// Part B 2.1). Protocol/ATT.md, "Air-time model", gives the formulas.
public enum AirPHY: String, CaseIterable, Hashable, Sendable, CustomStringConvertible {
  case le1M = "1m"
  case le2M = "2m"
  case codedS2 = "coded-s2"
  case codedS8 = "coded-s8"

  public var description: String { rawValue }

  /// Time on air of one LL Data Channel PDU with `payload` bytes of payload. An encrypted
  /// link adds the 4-byte MIC, except to an empty PDU: "The MIC shall not be included ... in
  /// an encrypted Data Channel PDU with the Length field set to 0" (Vol 6 Part B 2.4).
  public func packetTime(payload: Int, encrypted: Bool) -> Duration {
    .nanoseconds(packetNanoseconds(payload: payload, encrypted: encrypted))
  }

  func packetNanoseconds(payload: Int, encrypted: Bool) -> Int64 {
    let octets = Int64(payload + (encrypted && payload > 0 ? 4 : 0))
    switch self {
    // Preamble 1, access address 4, header 2, CRC 3 octets; 8 µs per octet.
    case .le1M: return (10 + octets) * 8_000
    // Preamble 2 octets, the rest as on 1M; 4 µs per octet.
    case .le2M: return (11 + octets) * 4_000
    case .codedS2: return Self.coded(octets, microsecondsPerBit: 2)
    case .codedS8: return Self.coded(octets, microsecondsPerBit: 8)
    }
  }

  /// Preamble 80 µs; FEC block 1 (access address 32 bits, CI 2, TERM1 3) always at S=8:
  /// 296 µs; FEC block 2 (header 16 bits, payload and MIC, CRC 24, TERM2 3) at S µs per bit.
  private static func coded(_ octets: Int64, microsecondsPerBit s: Int64) -> Int64 {
    (376 + s * (43 + 8 * octets)) * 1_000
  }
}

/// Why `--air PHY,CI,MTU,DLE` was refused.
public enum AirParameterError: Error, Hashable, Sendable, CustomStringConvertible {
  case shape(String)
  case phy(String)
  case interval(String)
  case mtu(String)
  case dataLength(String)
  /// One exchange of two full packets does not fit in the interval.
  case intervalTooShort(AirParameters, needed: Duration)

  public var description: String {
    switch self {
    case .shape(let text): return "'\(text)' is not PHY,CI,MTU,DLE (for example 2m,30ms,185,251)"
    case .phy(let text): return "unknown PHY '\(text)' (use 1m, 2m, coded-s2 or coded-s8)"
    case .interval(let text): return "connection interval '\(text)' must be 7.5 to 4000 ms in steps of 1.25 ms"
    case .mtu(let text): return "ATT MTU '\(text)' must be a whole number from 23 to 517"
    case .dataLength(let text): return "LL data length '\(text)' must be a whole number from 27 to 251"
    case .intervalTooShort(let air, let needed):
      return "a \(AirParameters.milliseconds(air.connectionInterval)) ms interval cannot hold one exchange of two "
        + "\(air.dataLength)-byte packets on \(air.phy) (\(AirParameters.milliseconds(needed)) ms): "
        + "use a longer interval or a smaller data length"
    }
  }
}

/// The LE link an air-time model stands for: PHY, connection interval, ATT_MTU and the LL
/// data length (Data Length Extension). Written `PHY,CI,MTU,DLE`: `2m,30ms,185,251`.
public struct AirParameters: Hashable, Sendable, CustomStringConvertible {
  /// T_IFS, the inter frame space between two packets of a connection event (Vol 6 Part B 4.1.1).
  public static let interFrameSpace: Duration = .microseconds(150)
  /// The L2CAP basic header (length and channel ID) before each ATT PDU.
  public static let l2capHeaderSize = 4

  public let phy: AirPHY
  /// The connection interval in units of 1.25 ms (6...3200).
  public let intervalUnits: Int
  /// ATT_MTU (23...517): the watch offers it in Exchange MTU.
  public let mtu: Int
  /// The largest LL payload either side sends, MIC excluded (27...251).
  public let dataLength: Int

  public var connectionInterval: Duration { .microseconds(intervalUnits * 1_250) }

  public init(phy: AirPHY, intervalUnits: Int, mtu: Int, dataLength: Int) throws(AirParameterError) {
    guard (6...3200).contains(intervalUnits) else { throw .interval(Self.milliseconds(units: intervalUnits)) }
    guard (23...517).contains(mtu) else { throw .mtu("\(mtu)") }
    guard (27...251).contains(dataLength) else { throw .dataLength("\(dataLength)") }
    self.phy = phy
    self.intervalUnits = intervalUnits
    self.mtu = mtu
    self.dataLength = dataLength
    // Every connection event carries at least one exchange; it must fit even with full
    // packets both ways on an encrypted link.
    let needed = exchangeTime(central: dataLength, peripheral: dataLength, encrypted: true)
    if needed > connectionInterval { throw .intervalTooShort(self, needed: needed) }
  }

  /// Parses `PHY,CI,MTU,DLE`: PHY 1m, 2m, coded-s2 or coded-s8; CI in milliseconds with an
  /// optional `ms`; whole numbers for MTU and DLE.
  public init(parsing text: String) throws(AirParameterError) {
    let fields = text.split(separator: ",", omittingEmptySubsequences: false).map(Self.trimmed)
    guard fields.count == 4 else { throw .shape(text) }
    guard let phy = AirPHY(rawValue: fields[0].lowercased()) else { throw .phy(fields[0]) }
    guard let units = Self.intervalUnits(fields[1]) else { throw .interval(fields[1]) }
    guard let mtu = Int(fields[2]) else { throw .mtu(fields[2]) }
    guard let dataLength = Int(fields[3]) else { throw .dataLength(fields[3]) }
    try self.init(phy: phy, intervalUnits: units, mtu: mtu, dataLength: dataLength)
  }

  /// `2m,30ms,185,251`, which parses back to the same value.
  public var description: String { "\(phy),\(Self.milliseconds(connectionInterval))ms,\(mtu),\(dataLength)" }

  /// The LL payloads an ATT PDU of `size` bytes travels in: its L2CAP frame (4-byte header
  /// and the PDU) cut into pieces of at most `dataLength` bytes (Vol 3 Part A 7.2).
  public func fragments(ofPDU size: Int) -> [Int] {
    var left = size + Self.l2capHeaderSize
    var pieces: [Int] = []
    while left > 0 {
      pieces.append(min(left, dataLength))
      left -= dataLength
    }
    return pieces
  }

  /// One exchange of a connection event: the central's packet, T_IFS, the peripheral's
  /// packet, T_IFS. A side with nothing to send sends an empty packet.
  public func exchangeTime(central: Int, peripheral: Int, encrypted: Bool) -> Duration {
    phy.packetTime(payload: central, encrypted: encrypted) + phy.packetTime(payload: peripheral, encrypted: encrypted)
      + Self.interFrameSpace * 2
  }

  // MARK: - Text

  private static func trimmed(_ field: Substring) -> String {
    String(field.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
  }

  /// `7.5`, `30`, `11.25` (ms) in units of 1.25 ms; nil unless 7.5...4000 ms on that grid.
  static func intervalUnits(_ text: String) -> Int? {
    var number = Substring(text)
    if number.lowercased().hasSuffix("ms") { number = number.dropLast(2) }
    let parts = number.split(separator: ".", omittingEmptySubsequences: false)
    guard (1...2).contains(parts.count), let whole = parts.first, (1...4).contains(whole.count),
      whole.allSatisfy(\.isASCIIDigit), let wholeValue = Int(whole)
    else { return nil }
    var microseconds = wholeValue * 1_000
    if parts.count == 2 {
      let fraction = parts[1]
      guard (1...3).contains(fraction.count), fraction.allSatisfy(\.isASCIIDigit), let value = Int(fraction) else {
        return nil
      }
      microseconds += value * [100, 10, 1][fraction.count - 1]
    }
    guard microseconds % 1_250 == 0, (6...3200).contains(microseconds / 1_250) else { return nil }
    return microseconds / 1_250
  }

  /// Milliseconds with only the decimals needed: `7.5`, `30`, `11.25`, `1.064`.
  static func milliseconds(_ duration: Duration) -> String {
    let microseconds = AirSchedule.nanoseconds(duration) / 1_000
    var text = "\(microseconds / 1_000)"
    let fraction = microseconds % 1_000
    if fraction != 0 {
      var digits = String(fraction + 1_000).dropFirst()
      while digits.last == "0" { digits = digits.dropLast() }
      text += "." + digits
    }
    return text
  }

  private static func milliseconds(units: Int) -> String { milliseconds(.microseconds(units * 1_250)) }
}

extension Character {
  fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
