import ANCS
import Wire

/// Data Source responses held whole: a response that decodes encodes back to the same
/// bytes, has no attribute twice and only UTF-8 values; a refusal points inside the bytes.
func fuzz(_ bytes: [UInt8]) {
  do {
    let response = try DataSourceResponse(decoding: bytes)
    require(response.encoded() == bytes, "\(Hex.encode(bytes)) encodes back as \(Hex.encode(response.encoded()))")
    let tuples: [(id: UInt8, value: [UInt8])] = response.tuples
    require(Set(tuples.map(\.id)).count == tuples.count, "\(Hex.encode(bytes)): an attribute twice")
    for tuple in tuples {
      require(String(validatingUTF8Bytes: tuple.value) != nil, "\(Hex.encode(bytes)): value not UTF-8")
    }
  } catch {
    requireOffset(error.offset, within: bytes, error)
    require(error.kind != "invalidValue", "\(Hex.encode(bytes)): \(error)")
  }
}
