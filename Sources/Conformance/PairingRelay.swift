import ATT
import Runtime
import Wire

/// The person at both devices while the harness pairs over the air: it reads the number the
/// accessory shows from its event lines (Protocol/events.md, `bond` with change `pairing`)
/// and answers the harness's own pairing with it, as a user reads a watch's passkey and types
/// it on the iPhone:
///
/// - the accessory shows a passkey (`showPasskey`), the harness asks for one: the harness
///   gets that passkey;
/// - both show a number (`compare`): the harness gets yes when the numbers are equal, no
///   otherwise, and so does the accessory, through its input (`confirm yes`);
/// - the harness shows a passkey and the accessory asks for one (`enterPasskey`): the
///   accessory gets it through its input (`passkey NNNNNN`); without an input it is written
///   out for a person to type.
///
/// What the harness was given ahead (`--passkey`, `--confirm`) never asks, so it wins. A
/// number is used once: the next pairing waits for the accessory to show its own. A pairing
/// that ends (bonded, refused, or the link gone) leaves nothing behind for the next, and a
/// number the harness's pairing no longer waits for is kept for the one that does.
public final class PairingRelay: Sendable {
  private struct State {
    /// The passkey the accessory shows, not yet typed on the harness.
    var accessoryPasskey: UInt32?
    /// The number the accessory compares, not yet answered.
    var accessoryNumber: UInt32?
    /// The accessory waits for a passkey to be typed on it.
    var accessoryTypes = false
    /// What the harness's pairing asks, not yet answered.
    var harnessAsks: PairingPrompt?
    /// The passkey the harness shows.
    var harnessPasskey: UInt32?
  }

  private let book: any BondBook
  private let typeOnAccessory: (@Sendable (String) -> Void)?
  private let say: @Sendable (String) -> Void
  private let state = Locked(State())

  /// - Parameters:
  ///   - book: the harness's bonds, whose pairings ask through their observer.
  ///   - typeOnAccessory: sends a line to the accessory's input (`passkey N`, `confirm yes`);
  ///     nil when it has none (it is only observed).
  ///   - say: tells the person running the harness what to do by hand.
  public init(
    book: any BondBook, typeOnAccessory: (@Sendable (String) -> Void)?, say: @escaping @Sendable (String) -> Void
  ) {
    self.book = book
    self.typeOnAccessory = typeOnAccessory
    self.say = say
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

  /// One of the accessory's event lines; all but pairing prompts are ignored.
  public func accessoryReported(_ event: JSON) {
    // The accessory's pairing ended, or its link: what it showed is void.
    if event["event"]?.string == "disconnected"
      || (event["event"]?.string == "bond" && ["bonded", "pairingRefused"].contains(event["change"]?.string ?? ""))
    {
      state.withLock { state in
        state.accessoryPasskey = nil
        state.accessoryNumber = nil
        state.accessoryTypes = false
      }
      return
    }
    guard event["event"]?.string == "bond", event["change"]?.string == "pairing",
      let prompt = event["prompt"]?.string
    else { return }
    let number = event["number"]?.string.flatMap { passkey(digits: $0) }
    state.withLock { state in
      switch prompt {
      case "showPasskey": state.accessoryPasskey = number
      case "compare": state.accessoryNumber = number
      case "enterPasskey": state.accessoryTypes = true
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
    case .showPasskey(let value) where typeOnAccessory == nil:
      say("type the passkey \(sixDigits(value)) on the accessory")
    case .enterPasskey:
      say("the pairing asks for the accessory's passkey: waiting for the accessory to report it")
    case .compare(let value):
      say("the pairing shows \(sixDigits(value)): waiting for the accessory to report its number")
    default: break
    }
    relay()
  }

  /// Answers whatever both sides have now made answerable.
  private func relay() {
    enum Step {
      /// The answer, and how to take it back when no pairing waits for it.
      case harness(PairingAnswer, undo: @Sendable (inout State) -> Void)
      case accessory(String)
    }
    let steps = state.withLock { state -> [Step] in
      var steps: [Step] = []
      switch state.harnessAsks {
      case .enterPasskey?:
        if let value = state.accessoryPasskey {
          steps.append(.harness(.passkey(value), undo: { $0.accessoryPasskey = $0.accessoryPasskey ?? value }))
          state.accessoryPasskey = nil
          state.harnessAsks = nil
        }
      case .compare(let ours)?:
        if let theirs = state.accessoryNumber {
          steps += [
            .harness(.confirm(theirs == ours), undo: { $0.accessoryNumber = $0.accessoryNumber ?? theirs }),
            .accessory("confirm \(theirs == ours ? "yes" : "no")"),
          ]
          state.accessoryNumber = nil
          state.harnessAsks = nil
        }
      default: break
      }
      if state.accessoryTypes, let value = state.harnessPasskey {
        steps.append(.accessory("passkey \(sixDigits(value))"))
        state.accessoryTypes = false
        state.harnessPasskey = nil
      }
      return steps
    }
    for step in steps {
      switch step {
      case .harness(let answer, let undo):
        // A question that was no longer waiting (its pairing ended): the number is kept for
        // the next, and nothing goes to the accessory for it.
        guard book.answer(answer, for: nil) else {
          state.withLock { undo(&$0) }
          return
        }
      case .accessory(let line):
        if let typeOnAccessory {
          typeOnAccessory(line)
        } else {
          say("answer on the accessory: \(line)")
        }
      }
    }
  }
}
