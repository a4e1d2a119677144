import ATT
import Wire

/// ATT PDUs: a PDU that decodes keeps its opcode and encodes back to the same bytes, except
/// for the one normalisation (a 128-bit UUID on the Bluetooth base UUID is encoded in its
/// 16-bit form, in the three PDUs that carry UUIDs of either size), whose shorter bytes
/// decode to the same PDU and encode to themselves; a refusal names the opcode and points
/// inside the PDU.
func fuzz(_ bytes: [UInt8]) {
  do {
    let pdu = try ATTPDU(decoding: bytes)
    require(pdu.opcode.rawValue == bytes[0], "\(Hex.encode(bytes)) decoded as \(pdu.opcode)")
    let encoded = pdu.encoded()
    guard encoded != bytes else { return }
    let context = "\(Hex.encode(bytes)) -> \(pdu) -> \(Hex.encode(encoded))"
    let normalising: Set<ATTOpcode> = [.readByTypeRequest, .readByGroupTypeRequest, .findInformationResponse]
    require(normalising.contains(pdu.opcode) && encoded.count < bytes.count, "\(context): not a normalisation")
    let again = try? ATTPDU(decoding: encoded)
    require(again == pdu && again?.encoded() == encoded, "\(context): the normal form is not stable")
  } catch {
    requireOffset(error.offset, within: bytes, error)
    require(error.opcode?.rawValue == bytes.first, "\(Hex.encode(bytes)): \(error) names another opcode")
    require((error.kind == "empty") == bytes.isEmpty, "\(Hex.encode(bytes)): \(error)")
  }
}
