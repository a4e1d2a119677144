import ATT
import TestSupport
import Testing
import Wire

/// Random and mutated ATT PDUs from a fixed seed. Nothing may trap; every error points inside
/// the input and names its opcode; every successful decode re-encodes to the exact input,
/// except the one normalisation (a 128-bit UUID on the Bluetooth base UUID is encoded in its
/// 16-bit form), whose output must decode to the same value.
@Suite struct ATTFuzzTests {
  static let iterations = 30_000

  @Test func attPDU() throws {
    var issues = IssueLimit()
    var random = SplitMix64(seed: 0x0A77)
    let seeds = try VectorFiles.records().filter { $0.record.decoder == "att" }.map {
      try VectorNotation.bytes($0.record.columns[0], line: $0.record.line)
    }
    var decoded = 0
    var normalised = 0
    for _ in 0..<Self.iterations {
      var input: [UInt8]
      if Int.random(in: 0..<4, using: &random) == 0 {
        input = random.bytes(Int.random(in: 0...24, using: &random))
        // Aim random bodies at opcodes that have decoders.
        if !input.isEmpty && Bool.random(using: &random) {
          input[0] = [
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x10, 0x11, 0x12, 0x13, 0x1B,
            0x1D, 0x1E, 0x52,
          ]
          .randomElement(using: &random)!
        }
      } else {
        input = random.mutate(seeds.randomElement(using: &random)!)
      }
      do {
        let pdu = try ATTPDU(decoding: input)
        decoded += 1
        if pdu.opcode.rawValue != input[0] { issues.record("\(Hex.encode(input)) -> opcode \(pdu.opcode)") }
        let encoded = pdu.encoded()
        if encoded == input { continue }
        normalised += 1
        if !Self.normalises(pdu, from: input) || (try? ATTPDU(decoding: encoded)) != pdu {
          issues.record("\(Hex.encode(input)) -> \(pdu) -> \(Hex.encode(encoded))")
        }
      } catch {
        if !(0...input.count).contains(error.offset) || error.opcode?.rawValue != input.first {
          issues.record("\(Hex.encode(input)): \(error)")
        }
      }
    }
    #expect(decoded > Self.iterations / 4, "the fuzzer should reach valid PDUs")
    #expect(normalised > 0, "the fuzzer should reach the UUID normalisation")
  }

  /// True where the decoder is known to normalise: a 16-byte UUID on the base UUID in a Read
  /// By (Group) Type Request, or a Find Information Response in format 2 whose UUIDs all are.
  static func normalises(_ pdu: ATTPDU, from input: [UInt8]) -> Bool {
    switch pdu {
    case .readByTypeRequest(let request): return input.count == 21 && request.type.is16Bit
    case .readByGroupTypeRequest(let request): return input.count == 21 && request.type.is16Bit
    case .findInformationResponse(let response): return input[1] == 2 && response.entries.allSatisfy(\.type.is16Bit)
    default: return false
    }
  }
}
