/// The btsnoop reader: the file header ("btsnoop\0", version 1, a datalink of 1001, 1002 or
/// 2001, or another the first byte picks), then the fuzzer's records (`checkCapture`).
func fuzz(_ bytes: [UInt8]) {
  let (selector, cut, rest) = captureInput(bytes)
  let datalinks: [UInt32] = [1001, 1002, 2001, UInt32(selector)]
  let header = Array("btsnoop".utf8) + [0] + bigEndian32(1) + bigEndian32(datalinks[Int(selector) % 4])
  checkCapture(header + rest, cut: cut)
}
