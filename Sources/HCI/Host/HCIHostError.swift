import Links
import Sockets

/// Why the host could not do what was asked. Its description is one line that names the
/// command or the step.
public enum HCIHostError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The controller answered `command` with a status other than success.
  case commandFailed(command: String, opcode: HCIOpcode, status: HCIStatus)
  /// No Command Complete or Command Status for `command` within `timeout`.
  case commandTimeout(command: String, opcode: HCIOpcode, timeout: Duration)
  /// The return parameters of `command` do not decode.
  case invalidReturnParameters(command: String, HCIDecodeError)
  /// The transport could not be opened.
  case transport(LinkError)
  /// The host is closed (the stream ended or broke, or `close()` was called); why.
  case closed(String)
  /// The controller reported a connection that failed to be established.
  case connectionFailed(HCIStatus)
  /// A step that waits for the air (scan, connection, disconnection) ran out of time.
  case timedOut(String)
  /// The waiting task was cancelled.
  case cancelled

  public var description: String {
    switch self {
    case .commandFailed(let command, let opcode, let status):
      return "\(command) (opcode \(opcode)) failed with status \(status)"
    case .commandTimeout(let command, let opcode, let timeout):
      return "\(command) (opcode \(opcode)): no answer from the controller within \(timeout)"
    case .invalidReturnParameters(let command, let error): return "\(command): \(error)"
    case .transport(let error): return error.description
    case .closed(let why): return "HCI host closed: \(why)"
    case .connectionFailed(let status): return "the connection failed to be established: \(status)"
    case .timedOut(let what): return what
    case .cancelled: return "cancelled"
    }
  }
}
