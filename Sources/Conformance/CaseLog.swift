import ANCS
import ATT
import Runtime
import Wire

/// What a running case waits for and what the implementation under test last did on the
/// link, so that a case that runs out of time says why ("expected a Get Notification
/// Attributes for UID 1003; the accessory last wrote 01 00 to handle 0x0029, 2.1 s before")
/// instead of only that it timed out.
public final class CaseLog: Sendable {
  private struct State {
    var waiting: [String] = []
    var last: (at: Duration, what: String)?
  }

  private let state = Locked(State())
  let clock: any EngineClock

  init(clock: any EngineClock) { self.clock = clock }

  /// Runs `body` as waiting for `what`. Nested waits name the outermost: it says what the
  /// case is after ("a fetch of UID 3"), the inner ones how ("a Control Point write").
  func awaiting<T>(_ what: String, _ body: () async throws(CaseOutcome) -> T) async throws(CaseOutcome) -> T {
    state.withLock { $0.waiting.append(what) }
    defer { state.withLock { _ = $0.waiting.popLast() } }
    return try await body()
  }

  /// Records what the implementation just did.
  func peerDid(_ what: String) {
    let now = clock.now
    state.withLock { $0.last = (now, what) }
  }

  /// What the case was waiting for and what `peer` last did, as of now.
  func summary(peer: String) -> String {
    let (waiting, last) = state.withLock { ($0.waiting.first, $0.last) }
    var text = "expected \(waiting ?? "the case's next step")"
    if let last {
      text += "; the \(peer) last \(last.what), \(Self.seconds(clock.now - last.at)) before"
    } else {
      text += "; the \(peer) sent nothing on the link"
    }
    return text
  }

  static func seconds(_ duration: Duration) -> String {
    let (whole, atto) = duration.components
    let tenths = (whole * 10 + atto / 100_000_000_000_000_000)
    return "\(tenths / 10).\(tenths % 10) s"
  }

  /// A PDU the implementation sent, in a few words; `controlPoint` names the Control Point's
  /// value handle (its writes are decoded as ANCS commands).
  static func describe(_ pdu: ATTPDU, controlPoint: UInt16? = nil) -> String {
    switch pdu {
    case .writeRequest(let write) where write.handle == controlPoint:
      switch Result(catching: { () throws(ANCSError) in try ControlPointCommand(decoding: write.value) }) {
      case .success(.getNotificationAttributes(let get)):
        return "asked for the attributes of UID \(get.notificationUID)"
      case .success(.getAppAttributes(let get)): return "asked for the name of app \(get.appIdentifier)"
      case .success(.performNotificationAction(let perform)):
        return "asked for the \(perform.actionID.name ?? "?") action on UID \(perform.notificationUID)"
      case .failure: return "wrote \(Hex.encode(write.value)) to the Control Point, which is no valid command"
      }
    case .writeRequest(let write): return "wrote \(Hex.encode(write.value)) to handle \(handle(write.handle))"
    case .readRequest(let read): return "read handle \(handle(read.handle))"
    case .handleValueNotification(let notification):
      return "notified \(notification.value.count) bytes on handle \(handle(notification.handle))"
    case .errorResponse(let error):
      return "answered \(error.requestOpcode.name ?? "a request") with error \(hex(error.errorCode.rawValue))"
    default:
      return "sent \(pdu.opcode.name ?? "an ATT PDU")"
    }
  }

  static func handle(_ value: UInt16) -> String {
    "0x" + Hex.encode([UInt8(value >> 8), UInt8(value & 0xFF)], separator: "").uppercased()
  }
}
