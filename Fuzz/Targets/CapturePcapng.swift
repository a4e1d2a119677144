/// The pcapng reader: a Section Header Block's type, then the fuzzer's blocks (its byte
/// order magic, Interface Descriptions, Enhanced and Simple Packet Blocks; `checkCapture`).
func fuzz(_ bytes: [UInt8]) {
  let (_, cut, rest) = captureInput(bytes)
  checkCapture([0x0A, 0x0D, 0x0D, 0x0A] + rest, cut: cut)
}
