// Framing of the simulated socket links (unix:PATH and tcp:HOST:PORT)
//
// Both socket links carry the same frame channel, so that security and pairing work between
// two processes as they do on the in-memory link. Every message (unix) or frame (tcp) holds
// one channel byte and a payload:
//
//   unix:PATH     | channel (1) | payload |                one SOCK_SEQPACKET message
//   tcp:HOST:PORT | length (2, little-endian) | channel (1) | payload |
//
// The tcp length counts the channel byte and the payload (1...4096); the unix message is
// 1...4096 bytes long. So an ATT PDU is at most 4095 bytes on either link. TCP_NODELAY is set.
//
//   channel 0x04  ATT: the payload is exactly one ATT PDU (as on L2CAP CID 0x0004).
//   channel 0x06  link control (like SMP on L2CAP CID 0x0006): the payload is one message:
//     0x01 Pair Request  | 0x01 | wanted level (1) |
//     0x02 Pair Accept   | 0x02 | granted level (1) |
//     0x03 Pair Reject   | 0x03 | reason (1) | text (UTF-8, 0 or more bytes) |
//   and, between two ends that keep bonds (Keyring.swift):
//     0x04 Security Request | 0x04 | wanted level (1) | address |
//     0x05 Encrypt          | 0x05 | key (8, little-endian) | address |
//     0x06 Encrypt Accept   | 0x06 | level (1) |
//     0x07 Key Missing      | 0x07 |
//     0x08 Bond Request     | 0x08 | wanted level (1) | key (8, little-endian) | address |
//   An address is the sender's, 1...64 bytes of UTF-8 (a random static address such as
//   "C3:1A:05:7E:22:90" by default).
//
//   Levels: 1 unencrypted, 2 encrypted (unauthenticated key, Just Works),
//           3 authenticated (MITM-protected key).
//   Reasons (SMP's codes): 0x03 authentication requirements (wanted more than the responder
//           grants), 0x04 confirm value failed (a Bond Request with key 0, below),
//           0x05 pairing not supported (the responder rejects pairing),
//           0x0A invalid parameters (the wanted level is not 1...3), 0x08 unspecified (sent
//           by an end whose bond the other lacks, just before it disconnects).
//   Text: a one-line explanation phrased for the initiator ("the peer grants at most
//         encrypted"); the initiator reports it as `BearerError.pairingFailed(text)`.
//
// Either end may send a Pair Request. The responder answers each Pair Request with exactly one
// Accept or Reject, in order. On accepting it first raises its own level to
// max(current, wanted), then sends Pair Accept with that level; the initiator raises its level
// to the granted one. ATT PDUs sent after the exchange are therefore protected on both ends.
// Control messages are handled inside the link and never returned by `receive()`.
//
// With bonds, the end that wants a protected link sends Security Request. The other end
// answers Encrypt with the key of its bond with that address, if it has one at the wanted
// level or above, or else Bond Request with a new key (Pair Reject if its policy refuses).
// The requester answers Encrypt with Encrypt Accept (the bond's level) when it holds that key
// for that address, and with Key Missing otherwise; it answers Bond Request with Pair Accept,
// keeping the key as its bond with that address, or with Pair Reject (it refuses to pair again
// with a peer it has a bond with). The end that sent Bond Request keeps the bond on Pair
// Accept. On Key Missing it either sends Pair Reject (0x08) and disconnects, or forgets its
// bond and sends Bond Request, as its keyring's behaviour says. A Bond Request with key 0 (no
// bond's key is 0) stands for a pairing whose passkey went wrong, a conformance harness's on
// purpose (BondBook.spoilNextPairing): the requester answers it with Pair Reject, Confirm
// Value Failed (0x04), as a device whose check of the confirm values fails (Core Vol 3
// Part H 2.3.5.5, 2.3.5.6.3), unless it refuses to pair again first. Each end raises its level
// before sending an Accept. An end without a keyring answers a Security Request as a Pair
// Request (Accept or Reject, no bond); Encrypt, Encrypt Accept, Key Missing or Bond Request
// reaching it close the link (an unexpected pairing message).
//
// Anything else is a protocol error that closes the link and is recorded in `lastError`:
// an empty tcp frame, a length over 4096, an unknown channel, an unknown control code, a
// control message of the wrong size, an Accept or Reject with no request pending, a level
// outside 1...3 in an Accept, or a stream that ends inside a frame. On unix an empty
// message cannot be told from end of file and ends the link.
import ATT

/// The constants of the socket links' framing, described at the top of LinkFraming.swift.
public enum LinkFraming {
  /// Channel byte of an ATT PDU (L2CAP's ATT channel is CID 0x0004).
  public static let attChannel: UInt8 = 0x04
  /// Channel byte of a link-control message (L2CAP's SMP channel is CID 0x0006).
  public static let controlChannel: UInt8 = 0x06
  /// The largest channel byte plus payload in one message or frame.
  public static let maxFrameBody = 4096
  /// The largest ATT PDU the socket links carry.
  public static let maxPDUSize = maxFrameBody - 1

  /// SMP's reason codes, reused in Pair Reject.
  public enum RejectReason {
    public static let authenticationRequirements: UInt8 = 0x03
    /// Confirm Value Failed: what a wrong passkey ends in.
    public static let confirmValueFailed: UInt8 = 0x04
    public static let pairingNotSupported: UInt8 = 0x05
    public static let invalidParameters: UInt8 = 0x0A
    /// Unspecified Reason.
    public static let unspecifiedReason: UInt8 = 0x08
    /// Unspecified reason: sent before disconnecting by an end whose bond the other lacks.
    public static let keyMissing: UInt8 = unspecifiedReason
  }

  /// What the initiator reports of a Pair Reject: its text, or its reason when it has none.
  package static func rejection(reason: UInt8, text: String) -> String {
    text.isEmpty ? "the peer rejected pairing (reason 0x\(hex(reason)))" : text
  }
}

/// One message of the link-control channel (0x06).
package enum ControlMessage: Hashable, Sendable {
  /// The raw level byte, so that an out-of-range request can be answered with a rejection.
  case pairRequest(wanted: UInt8)
  case pairAccept(granted: SecurityLevel)
  case pairReject(reason: UInt8, text: String)
  case securityRequest(wanted: UInt8, address: String)
  case encrypt(key: UInt64, address: String)
  case encryptAccept(granted: SecurityLevel)
  case keyMissing
  case bondRequest(wanted: UInt8, key: UInt64, address: String)

  package static let pairRequestCode: UInt8 = 0x01
  package static let pairAcceptCode: UInt8 = 0x02
  package static let pairRejectCode: UInt8 = 0x03
  package static let securityRequestCode: UInt8 = 0x04
  package static let encryptCode: UInt8 = 0x05
  package static let encryptAcceptCode: UInt8 = 0x06
  package static let keyMissingCode: UInt8 = 0x07
  package static let bondRequestCode: UInt8 = 0x08
  /// The longest address, in bytes.
  package static let maxAddress = 64

  package var encoded: [UInt8] {
    switch self {
    case .pairRequest(let wanted): return [Self.pairRequestCode, wanted]
    case .pairAccept(let granted): return [Self.pairAcceptCode, UInt8(granted.rawValue)]
    case .pairReject(let reason, let text): return [Self.pairRejectCode, reason] + Array(text.utf8)
    case .securityRequest(let wanted, let address): return [Self.securityRequestCode, wanted] + Array(address.utf8)
    case .encrypt(let key, let address): return [Self.encryptCode] + littleEndian(key) + Array(address.utf8)
    case .encryptAccept(let granted): return [Self.encryptAcceptCode, UInt8(granted.rawValue)]
    case .keyMissing: return [Self.keyMissingCode]
    case .bondRequest(let wanted, let key, let address):
      return [Self.bondRequestCode, wanted] + littleEndian(key) + Array(address.utf8)
    }
  }

  private func littleEndian(_ key: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: key >> ($0 * 8)) } }

  package static func decode(_ payload: ArraySlice<UInt8>) throws(LinkFault) -> ControlMessage {
    guard let code = payload.first else { throw .malformedControl("empty message") }
    let rest = payload.dropFirst()
    switch code {
    case pairRequestCode:
      guard rest.count == 1 else { throw .malformedControl("Pair Request of \(payload.count) bytes, expected 2") }
      return .pairRequest(wanted: rest[rest.startIndex])
    case pairAcceptCode:
      return .pairAccept(granted: try level(rest, of: "Pair Accept", payload.count))
    case encryptAcceptCode:
      return .encryptAccept(granted: try level(rest, of: "Encrypt Accept", payload.count))
    case keyMissingCode:
      guard rest.isEmpty else { throw .malformedControl("Key Missing of \(payload.count) bytes, expected 1") }
      return .keyMissing
    case securityRequestCode:
      guard let wanted = rest.first else { throw .malformedControl("Security Request without a level") }
      return .securityRequest(wanted: wanted, address: try address(rest.dropFirst(), of: "Security Request"))
    case encryptCode:
      guard rest.count >= 8 else { throw .malformedControl("Encrypt of \(payload.count) bytes, without its key") }
      return .encrypt(key: key(rest.prefix(8)), address: try address(rest.dropFirst(8), of: "Encrypt"))
    case bondRequestCode:
      guard rest.count >= 9 else { throw .malformedControl("Bond Request of \(payload.count) bytes, without its key") }
      return .bondRequest(
        wanted: rest[rest.startIndex], key: key(rest.dropFirst().prefix(8)),
        address: try address(rest.dropFirst(9), of: "Bond Request"))
    case pairRejectCode:
      guard let reason = rest.first else { throw .malformedControl("Pair Reject without a reason") }
      return .pairReject(reason: reason, text: String(decoding: rest.dropFirst(), as: UTF8.self))
    default:
      throw .malformedControl("unknown code 0x\(hex(code))")
    }
  }

  private static func level(_ rest: ArraySlice<UInt8>, of what: String, _ size: Int) throws(LinkFault) -> SecurityLevel
  {
    guard rest.count == 1 else { throw .malformedControl("\(what) of \(size) bytes, expected 2") }
    let raw = rest[rest.startIndex]
    guard let level = SecurityLevel(rawValue: Int(raw)) else {
      throw .malformedControl("\(what) with level \(raw), expected 1...3")
    }
    return level
  }

  private static func key(_ bytes: ArraySlice<UInt8>) -> UInt64 {
    bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
  }

  private static func address(_ bytes: ArraySlice<UInt8>, of what: String) throws(LinkFault) -> String {
    guard (1...maxAddress).contains(bytes.count), let address = String(validating: bytes, as: UTF8.self) else {
      throw .malformedControl("\(what) whose address is not 1...\(maxAddress) bytes of UTF-8")
    }
    return address
  }
}

extension PairingPolicy {
  /// The responder's answer to a Pair Request: the same rules as `MemoryLink`.
  package func answer(wanted raw: UInt8, current: SecurityLevel) -> ControlMessage {
    guard let wanted = SecurityLevel(rawValue: Int(raw)) else {
      return .pairReject(
        reason: LinkFraming.RejectReason.invalidParameters, text: "the peer got an invalid level \(raw)")
    }
    switch self {
    case .reject:
      return .pairReject(reason: LinkFraming.RejectReason.pairingNotSupported, text: "the peer rejects pairing")
    case .accept(let limit):
      guard wanted <= limit else {
        return .pairReject(
          reason: LinkFraming.RejectReason.authenticationRequirements, text: "the peer grants at most \(limit)")
      }
      return .pairAccept(granted: max(current, wanted))
    }
  }
}

/// Splits a TCP byte stream into frame bodies (channel byte + payload), whatever the read
/// sizes: a frame split across reads is held until complete, several frames in one read all
/// come out. A bad length is reported as soon as its two bytes are in.
package struct StreamFrameDecoder {
  package let limit: Int
  private var buffer: [UInt8] = []
  private var start = 0

  package init(limit: Int = LinkFraming.maxFrameBody) {
    self.limit = limit
  }

  /// Bytes received and not yet returned as a frame.
  package var bufferedCount: Int { buffer.count - start }

  package mutating func append(_ bytes: some Collection<UInt8>) {
    if start > 0 && start * 2 >= buffer.count {
      buffer.removeFirst(start)
      start = 0
    }
    buffer.append(contentsOf: bytes)
  }

  /// The next complete frame body, or nil if more bytes are needed.
  package mutating func next() throws(LinkFault) -> [UInt8]? {
    guard bufferedCount >= 2 else { return nil }
    let length = Int(buffer[start]) | Int(buffer[start + 1]) << 8
    if length == 0 { throw .emptyFrame }
    if length > limit { throw .frameTooLong(length: length, limit: limit) }
    guard bufferedCount >= 2 + length else { return nil }
    let body = Array(buffer[(start + 2)..<(start + 2 + length)])
    start += 2 + length
    return body
  }

  /// A frame as it goes on the stream.
  package static func frame(_ body: [UInt8]) -> [UInt8] {
    [UInt8(truncatingIfNeeded: body.count), UInt8(truncatingIfNeeded: body.count >> 8)] + body
  }
}
