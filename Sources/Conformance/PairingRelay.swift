import ATT
import Runtime
import Wire

/// The person at both devices while the harness pairs over the air: it reads the number the
/// implementation shows from its event lines (Protocol/events.md and Protocol/scenario.md:
/// `bond` with change `pairing`, the same from `ancs watch` and `ancs phone`) and answers the
/// harness's own pairing with it, as a user reads a watch's passkey and types it on the
/// iPhone, or reads the iPhone's and types it on the watch:
///
/// - the implementation shows a passkey (`showPasskey`), the harness asks for one: the
///   harness gets that passkey;
/// - both show a number (`compare`): the harness gets yes when the numbers are equal, no
///   otherwise, and so does the implementation, through its input;
/// - the harness shows a passkey and the implementation asks for one (`enterPasskey`): the
///   implementation gets it through its input; without an input the person running the
///   harness is told what to type.
///
/// The implementation's input takes an answer as its own kind of line: `ancs watch` reads
/// `passkey NNNNNN` and `confirm yes` (`watchLine`), `ancs phone --commands jsonl` reads
/// `{"cmd":"passkey",...}` and `{"cmd":"confirm",...}` (`phoneCommand`).
///
/// What the harness was given ahead (`--passkey`, `--confirm`) never asks, so it wins. A
/// number is used once: the next pairing waits for the implementation to show its own. A
/// pairing that ends (bonded, refused, or the link gone) leaves nothing behind for the next,
/// and a number the harness's pairing no longer waits for is kept for the one that does.
public final class PairingRelay: Sendable {
  private struct State {
    /// The passkey the implementation shows, not yet typed on the harness.
    var peerPasskey: UInt32?
    /// The number the implementation compares, not yet answered.
    var peerNumber: UInt32?
    /// The implementation waits for a passkey to be typed on it.
    var peerTypes = false
    /// What the harness's pairing asks, not yet answered.
    var harnessAsks: PairingPrompt?
    /// The passkey the harness shows.
    var harnessPasskey: UInt32?
  }

  private let book: any BondBook
  private let peer: String
  private let answerOnPeer: (@Sendable (PairingAnswer) -> Void)?
  private let say: @Sendable (String) -> Void
  private let state = Locked(State())

  /// - Parameters:
  ///   - book: the harness's bonds, whose pairings ask through their observer.
  ///   - peer: what the implementation is, in what the person is told ("accessory", "phone").
  ///   - answerOnPeer: gives an answer to the implementation through its input; nil when it
  ///     has none (it is only observed).
  ///   - say: tells the person running the harness what to do by hand.
  public init(
    book: any BondBook, peer: String, answerOnPeer: (@Sendable (PairingAnswer) -> Void)?,
    say: @escaping @Sendable (String) -> Void
  ) {
    self.book = book
    self.peer = peer
    self.answerOnPeer = answerOnPeer
    self.say = say
  }

  /// An answer as `ancs watch` reads it on its input: `passkey 000042`, `confirm yes`.
  public static func watchLine(_ answer: PairingAnswer) -> String {
    switch answer {
    case .passkey(let value): return "passkey \(sixDigits(value))"
    case .confirm(let yes): return "confirm \(yes ? "yes" : "no")"
    }
  }

  /// An answer as `ancs phone --commands jsonl` reads it: `{"cmd":"passkey","passkey":"000042"}`,
  /// `{"cmd":"confirm","answer":true}` (Protocol/scenario.md).
  public static func phoneCommand(_ answer: PairingAnswer) -> String {
    switch answer {
    case .passkey(let value):
      return JSON.object([("cmd", .string("passkey")), ("passkey", .string(sixDigits(value)))]).description
    case .confirm(let yes): return JSON.object([("cmd", .string("confirm")), ("answer", .bool(yes))]).description
    }
  }

  /// Answers the harness's pairings from now on (the book's one observer).
  public func start() {
    book.observe { [weak self] event in
      switch event {
      case .pairing(_, let prompt): self?.harnessAsks(prompt)
      // The harness's pairing ended: its questions are void.
      case .bonded, .encrypted, .pairingRefused, .repairingRefused, .keyMissing, .peerLostKey:
        self?.state.withLock { state in
          state.harnessAsks = nil
          state.harnessPasskey = nil
        }
      case .forgotten: break
      }
    }
  }

  /// One of the implementation's event lines; all but pairing prompts and ends are ignored.
  public func peerReported(_ event: JSON) {
    // The implementation's pairing ended, or its link: what it showed is void.
    if event["event"]?.string == "disconnected"
      || (event["event"]?.string == "bond" && ["bonded", "pairingRefused"].contains(event["change"]?.string ?? ""))
    {
      state.withLock { state in
        state.peerPasskey = nil
        state.peerNumber = nil
        state.peerTypes = false
        // The link is the harness's too: its pairing on it is over (over the air a lost link
        // ends it without a bond event).
        if event["event"]?.string == "disconnected" {
          state.harnessAsks = nil
          state.harnessPasskey = nil
        }
      }
      return
    }
    guard event["event"]?.string == "bond", event["change"]?.string == "pairing",
      let prompt = event["prompt"]?.string
    else { return }
    let number = event["number"]?.string.flatMap { passkey(digits: $0) }
    state.withLock { state in
      switch prompt {
      case "showPasskey": state.peerPasskey = number
      case "compare": state.peerNumber = number
      case "enterPasskey": state.peerTypes = true
      default: break
      }
    }
    relay()
  }

  /// What the harness's own pairing asks its user.
  func harnessAsks(_ prompt: PairingPrompt) {
    state.withLock { state in
      if case .showPasskey(let value) = prompt {
        state.harnessPasskey = value
      } else {
        state.harnessAsks = prompt
      }
    }
    switch prompt {
    case .showPasskey(let value) where answerOnPeer == nil:
      say("type the passkey \(sixDigits(value)) on the \(peer)")
    case .enterPasskey:
      say("the pairing asks for the \(peer)'s passkey: waiting for the \(peer) to report it")
    case .compare(let value):
      say("the pairing shows \(sixDigits(value)): waiting for the \(peer) to report its number")
    default: break
    }
    relay()
  }

  /// Answers whatever both sides have now made answerable.
  private func relay() {
    enum Step {
      /// The answer, and how to take it back when no pairing waits for it.
      case harness(PairingAnswer, undo: @Sendable (inout State) -> Void)
      case peer(PairingAnswer)
    }
    let steps = state.withLock { state -> [Step] in
      var steps: [Step] = []
      switch state.harnessAsks {
      case .enterPasskey?:
        if let value = state.peerPasskey {
          steps.append(.harness(.passkey(value), undo: { $0.peerPasskey = $0.peerPasskey ?? value }))
          state.peerPasskey = nil
          state.harnessAsks = nil
        }
      case .compare(let ours)?:
        if let theirs = state.peerNumber {
          steps += [
            .harness(.confirm(theirs == ours), undo: { $0.peerNumber = $0.peerNumber ?? theirs }),
            .peer(.confirm(theirs == ours)),
          ]
          state.peerNumber = nil
          state.harnessAsks = nil
        }
      default: break
      }
      if state.peerTypes, let value = state.harnessPasskey {
        steps.append(.peer(.passkey(value)))
        state.peerTypes = false
        state.harnessPasskey = nil
      }
      return steps
    }
    for step in steps {
      switch step {
      case .harness(let answer, let undo):
        // A question that was no longer waiting (its pairing ended): the number is kept for
        // the next, and nothing goes to the implementation for it.
        guard book.answer(answer, for: nil) else {
          state.withLock { undo(&$0) }
          return
        }
      case .peer(let answer):
        if let answerOnPeer {
          answerOnPeer(answer)
        } else {
          say("answer on the \(peer): \(Self.watchLine(answer))")
        }
      }
    }
  }
}
