import HCI
import Testing
import Wire

/// Bytes from hex as the spec prints them (spaces allowed).
func bytes(_ hex: String) -> [UInt8] {
  guard let bytes = Hex.decode(hex) else {
    Issue.record("bad hex in a test: \(hex)")
    return []
  }
  return bytes
}

/// A 128-bit number from hex as the spec prints it, most significant first.
func u128(_ hex: String) -> UInt128 {
  bytes(hex).reduce(0) { $0 << 8 | UInt128($1) }
}

/// A 256-bit value from hex as the spec prints it.
func p256(_ hex: String) -> P256Value {
  guard let value = P256Value(hex: hex) else {
    Issue.record("not 32 bytes of hex: \(hex)")
    return P256Value(bigEndian: [UInt8](repeating: 0, count: 32))!
  }
  return value
}

/// Every strict prefix of `valid` and `valid` plus one byte must be refused with an
/// HCIDecodeError (and nothing may trap), while `valid` itself decodes.
func expectTotal<T>(
  _ valid: [UInt8], sourceLocation: SourceLocation = #_sourceLocation,
  _ decode: ([UInt8]) throws(HCIDecodeError) -> T
) {
  #expect(throws: Never.self, sourceLocation: sourceLocation) { _ = try decode(valid) }
  for length in 0..<valid.count {
    #expect(throws: HCIDecodeError.self, "prefix of \(length) bytes", sourceLocation: sourceLocation) {
      _ = try decode(Array(valid[0..<length]))
    }
  }
  #expect(throws: HCIDecodeError.self, "one byte too many", sourceLocation: sourceLocation) {
    _ = try decode(valid + [0x00])
  }
}

/// The error `body` throws, or nil (recording an issue) when it throws none.
func decodeError(
  sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws(HCIDecodeError) -> Void
) -> HCIDecodeError? {
  do {
    try body()
  } catch {
    return error
  }
  Issue.record("expected an HCIDecodeError", sourceLocation: sourceLocation)
  return nil
}
