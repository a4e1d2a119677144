/// The PacketLogger reader: no magic, told apart by its records' plausibility, in either
/// byte order (`checkCapture`).
func fuzz(_ bytes: [UInt8]) {
  let (_, cut, rest) = captureInput(bytes)
  checkCapture(rest, cut: cut)
}
