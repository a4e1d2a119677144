import Glibc

/// Why a link could not be set up: an address that does not parse, or a bind, listen,
/// accept or connect that failed. Its description is one line that says what went wrong
/// where, and what to do: "unix:/tmp/x.sock: address in use (another phone is listening
/// there; pick another path)".
public struct LinkError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Kind: Hashable, Sendable {
    /// The address names no transport this program knows.
    case unknownTransport
    /// A real-Bluetooth transport this machine cannot open: its kernel has no Bluetooth
    /// sockets, or no such controller.
    case unavailableTransport
    /// The address has a known transport but does not parse (bad port, empty path, ...).
    case invalidAddress
    /// Someone is already listening on the path or port.
    case addressInUse
    /// The path exists and is not a socket; it is never deleted.
    case notASocket
    /// Nobody listens at the address.
    case connectionRefused
    /// The socket path (or its directory) does not exist.
    case noSuchPath
    /// The operating system refused access.
    case permissionDenied
    /// The host name does not resolve.
    case hostNotFound
    /// The listener was closed while accepting, or before.
    case listenerClosed
    /// The task waiting to accept or connect was cancelled.
    case cancelled
    /// Any other operating-system error, with its errno.
    case system(errno: Int32)
  }

  /// The address as the user wrote it or as the link names it ("tcp:127.0.0.1:9").
  public var address: String
  public var kind: Kind
  /// What went wrong ("connection refused").
  public var detail: String
  /// What to do about it, if there is something to say.
  public var advice: String?

  public init(address: String, kind: Kind, detail: String, advice: String? = nil) {
    self.address = address
    self.kind = kind
    self.detail = detail
    self.advice = advice
  }

  public var description: String {
    // "tcp:: missing port" reads badly; an address that already ends in a colon gets a space.
    let separator = address.hasSuffix(":") ? " " : ": "
    var text = address.isEmpty ? detail : address + separator + detail
    if let advice { text += " (\(advice))" }
    return text
  }
}

/// Why an established socket link went down on its own: the peer broke the framing (see the
/// top of LinkFraming.swift), or the operating system reported an error. A link that faults
/// is closed: `receive()` returns nil and `send` throws `.disconnected`. A clean close by
/// either side records no fault.
public enum LinkFault: Error, Hashable, Sendable, CustomStringConvertible {
  /// A message or frame longer than the link allows.
  case frameTooLong(length: Int, limit: Int)
  /// A TCP frame of length 0: it has no channel byte.
  case emptyFrame
  /// A channel byte other than ATT (0x04) or link control (0x06).
  case unknownChannel(UInt8)
  /// A link-control message of unknown code or wrong size.
  case malformedControl(String)
  /// A pairing response arrived while no pairing request was pending.
  case unexpectedPairResponse
  /// The TCP stream ended in the middle of a frame.
  case truncatedFrame(bufferedBytes: Int)
  /// The peer reset the connection.
  case connectionReset
  /// Another operating-system error while reading or writing.
  case io(String)
  /// The peer left this many bytes unread beyond the socket's buffer (it stopped reading).
  case peerNotReading(bytes: Int)

  public var description: String {
    switch self {
    case .frameTooLong(let length, let limit): return "frame of \(length) bytes exceeds the link's limit of \(limit)"
    case .emptyFrame: return "frame of length 0 (no channel byte)"
    case .unknownChannel(let channel): return "unknown channel 0x\(hex(channel)) (expected 0x04 ATT or 0x06 control)"
    case .malformedControl(let why): return "malformed link-control message: \(why)"
    case .unexpectedPairResponse: return "pairing response with no pairing request pending"
    case .truncatedFrame(let count): return "stream ended inside a frame (\(count) bytes buffered)"
    case .connectionReset: return "connection reset by peer"
    case .io(let why): return why
    case .peerNotReading(let bytes): return "the peer stopped reading: \(bytes) bytes sent to it wait unread"
    }
  }
}

package func hex(_ byte: UInt8) -> String {
  let digits = Array("0123456789ABCDEF")
  return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}

extension LinkError {
  /// Nobody accepts connections at `address`.
  package static func refused(_ address: String) -> LinkError {
    LinkError(
      address: address, kind: .connectionRefused, detail: "connection refused",
      advice: "is `ancs phone --listen` running?")
  }
}

/// What an errno value means, in the C library's words: the one table every message about
/// a failed system call reads.
package func errnoText(_ code: Int32) -> String {
  String(cString: strerror(code))
}

/// What some errno values mean for one system call on one kind of address, in the user's
/// terms: the errors a listener, a connection or a device open can meet, each said once.
package struct ErrnoMeaning: Sendable {
  package var codes: [Int32]
  /// nil: `.system(errno:)`.
  package var kind: LinkError.Kind?
  package var detail: String
  package var advice: String?

  package init(_ codes: [Int32], _ kind: LinkError.Kind? = nil, _ detail: String, advice: String? = nil) {
    self.codes = codes
    self.kind = kind
    self.detail = detail
    self.advice = advice
  }
}

extension LinkError {
  /// `call` failed at `address` with `code`: the meaning given for it, or else the C
  /// library's words after the call's name ("bind: Cannot assign requested address").
  package init(_ call: String, failedWith code: Int32, at address: String, meanings: [ErrnoMeaning]) {
    guard let meaning = meanings.first(where: { $0.codes.contains(code) }) else {
      self.init(address: address, kind: .system(errno: code), detail: "\(call): \(errnoText(code))")
      return
    }
    self.init(
      address: address, kind: meaning.kind ?? .system(errno: code), detail: meaning.detail, advice: meaning.advice)
  }
}
