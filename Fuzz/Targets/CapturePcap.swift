/// The classic pcap reader: the magic in either byte order, in micro- or nanoseconds (the
/// first byte picks), then the fuzzer's header (its link type) and records (`checkCapture`).
func fuzz(_ bytes: [UInt8]) {
  let (selector, cut, rest) = captureInput(bytes)
  let magic = bigEndian32(selector & 1 == 0 ? 0xA1B2_C3D4 : 0xA1B2_3C4D)
  checkCapture((selector & 2 == 0 ? magic : magic.reversed()) + rest, cut: cut)
}
