import ATT
import Conformance
import Runtime
import Testing
import Wire

/// A bond book that records the answers given to its pairings.
private final class AnsweredBook: BondBook, @unchecked Sendable {
  let answers = Locked<[PairingAnswer]>([])
  let observer = Locked<(@Sendable (BondEvent) -> Void)?>(nil)
  /// Whether a pairing waits for the answer now.
  let waiting = Locked(true)
  var bondedPeers: [String] { [] }
  func forget(_ peer: String?) -> [String] { [] }
  func observe(_ observer: @escaping @Sendable (BondEvent) -> Void) { self.observer.withLock { $0 = observer } }
  func spoil(_ peer: String) -> Bool { false }
  func answer(_ answer: PairingAnswer, for peer: String?) -> Bool {
    guard waiting.withLock({ $0 }) else { return false }
    answers.withLock { $0.append(answer) }
    return true
  }
  /// The harness's pairing asks its user.
  func ask(_ prompt: PairingPrompt) { tell(.pairing(peer: "C0:00:00:00:00:01", prompt)) }
  func tell(_ event: BondEvent) { observer.withLock { $0 }?(event) }
}

private func pairingLine(_ prompt: String, _ number: String? = nil) throws -> JSON {
  let field = number.map { #","number":"\#($0)""# } ?? ""
  return try JSON(
    parsing: #"{"event":"bond","change":"pairing","peer":"C1:00:00:00:00:02","prompt":"\#(prompt)""# + field + "}")
}

@Suite("The harness reads the accessory's number from its event lines")
struct PairingRelayTests {
  private func relay() -> (PairingRelay, AnsweredBook, Locked<[String]>, Locked<[String]>) {
    let book = AnsweredBook()
    let typed = Locked<[String]>([])
    let said = Locked<[String]>([])
    let relay = PairingRelay(
      book: book, peer: "accessory",
      answerOnPeer: { answer in typed.withLock { $0.append(PairingRelay.watchLine(answer)) } },
      say: { line in said.withLock { $0.append(line) } })
    relay.start()
    return (relay, book, typed, said)
  }

  @Test("the passkey the accessory shows is typed on the harness, whichever comes first, once")
  func accessoryShows() throws {
    let (relay, book, _, _) = relay()
    relay.peerReported(try pairingLine("showPasskey", "012345"))
    #expect(book.answers.withLock { $0 }.isEmpty)
    book.ask(.enterPasskey)
    #expect(book.answers.withLock { $0 } == [.passkey(12345)])
    // The next pairing waits for the accessory's next passkey.
    book.ask(.enterPasskey)
    #expect(book.answers.withLock { $0 }.count == 1)
    relay.peerReported(try pairingLine("showPasskey", "999999"))
    #expect(book.answers.withLock { $0 } == [.passkey(12345), .passkey(999_999)])
  }

  @Test(
    "both compare: each side hears whether the numbers are equal", arguments: [("654321", true), ("654320", false)])
  func bothCompare(accessory: String, equal: Bool) throws {
    let (relay, book, typed, _) = relay()
    book.ask(.compare(654_321))
    #expect(book.answers.withLock { $0 }.isEmpty)
    relay.peerReported(try pairingLine("compare", accessory))
    #expect(book.answers.withLock { $0 } == [.confirm(equal)])
    #expect(typed.withLock { $0 } == [equal ? "confirm yes" : "confirm no"])
  }

  @Test("the harness shows a passkey: typed on the accessory once it asks")
  func harnessShows() throws {
    let (relay, book, typed, said) = relay()
    book.ask(.showPasskey(42))
    #expect(typed.withLock { $0 }.isEmpty)
    relay.peerReported(try pairingLine("enterPasskey"))
    #expect(typed.withLock { $0 } == ["passkey 000042"])
    #expect(book.answers.withLock { $0 }.isEmpty)
    #expect(!said.withLock { $0 }.contains { $0.contains("000042") })
  }

  @Test("a question whose pairing ended answers nothing: the accessory's next number waits for the next question")
  func staleQuestion() throws {
    let (relay, book, typed, _) = relay()
    // The harness asked, and its pairing timed out before the accessory said anything.
    book.ask(.enterPasskey)
    book.waiting.withLock { $0 = false }
    relay.peerReported(try pairingLine("showPasskey", "111111"))
    #expect(book.answers.withLock { $0 }.isEmpty)
    // The next pairing asks: the number kept answers it.
    book.waiting.withLock { $0 = true }
    book.ask(.enterPasskey)
    #expect(book.answers.withLock { $0 } == [.passkey(111_111)])
    // A pairing that ends takes its question with it; a link that ends, the accessory's number.
    book.ask(.compare(5))
    book.tell(.pairingRefused(peer: "C0:00:00:00:00:01", reason: "timeout"))
    relay.peerReported(try pairingLine("compare", "000005"))
    #expect(book.answers.withLock { $0 }.count == 1 && typed.withLock { $0 }.isEmpty)
    relay.peerReported(try JSON(parsing: #"{"event":"disconnected","reason":"gone"}"#))
    book.ask(.compare(5))
    #expect(book.answers.withLock { $0 }.count == 1)
  }

  @Test("an accessory without an input: the person running the harness is told the passkey to type")
  func noInput() {
    let book = AnsweredBook()
    let said = Locked<[String]>([])
    let relay = PairingRelay(
      book: book, peer: "accessory", answerOnPeer: nil, say: { line in said.withLock { $0.append(line) } })
    relay.start()
    book.ask(.showPasskey(123_456))
    #expect(said.withLock { $0 } == ["type the passkey 123456 on the accessory"])
  }

  @Test("other event lines, and a prompt with a bad number, answer nothing")
  func otherLines() throws {
    let (relay, book, typed, _) = relay()
    book.ask(.enterPasskey)
    relay.peerReported(try JSON(parsing: #"{"event":"added","uid":1,"title":"showPasskey"}"#))
    relay.peerReported(try pairingLine("showPasskey", "12345"))
    relay.peerReported(try pairingLine("showPasskey", "abcdef"))
    #expect(book.answers.withLock { $0 }.isEmpty)
    #expect(typed.withLock { $0 }.isEmpty)
  }

  /// The phone role: the harness is the accessory, and `ancs phone` reports its prompts in the
  /// same lines and takes its answers as JSON commands.
  @Test("a spawned phone: it types the passkey the harness shows, and both compare", arguments: [true, false])
  func phoneRole(equal: Bool) throws {
    let book = AnsweredBook()
    let commands = Locked<[String]>([])
    let relay = PairingRelay(
      book: book, peer: "phone",
      answerOnPeer: { answer in commands.withLock { $0.append(PairingRelay.phoneCommand(answer)) } },
      say: { _ in })
    relay.start()
    book.ask(.showPasskey(7))
    relay.peerReported(try pairingLine("enterPasskey"))
    #expect(commands.withLock { $0 } == [#"{"cmd":"passkey","passkey":"000007"}"#])
    relay.peerReported(try pairingLine("compare", equal ? "100000" : "100001"))
    book.ask(.compare(100_000))
    #expect(book.answers.withLock { $0 } == [.confirm(equal)])
    #expect(commands.withLock { $0 }.last == #"{"cmd":"confirm","answer":\#(equal)}"#)
  }

}
