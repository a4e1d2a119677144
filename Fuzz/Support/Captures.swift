import Capture

/// What every capture reader owes any bytes (`ancs inspect` reads files from the field): a
/// list of records or one `CaptureError`, never a trap; records numbered 1, 2, 3 as
/// Wireshark numbers them; the same records when the file is read as still growing; and,
/// read growing in the same format, any prefix of the file gives a prefix of its records
/// (`--follow` never tells a record it must take back). The records feed the inspector and the HTML report's
/// chart without a trap, and the chart's SVG holds no markup from the file.
///
/// An LE sniffer's capture (pcap link type 256) is read with the specification's sample LTK,
/// so its encrypted links are opened too; its records carry the numbers of the packets they
/// were made from (several, or none, a packet), and read as growing they lack only the
/// summaries said at the file's end.
func checkCapture(_ bytes: [UInt8], cut: Int) {
  let keys: [UInt128] = [0x4C68_3841_39F5_74D8_36BC_F34E_9DFB_01BF]
  guard let whole = try? CaptureFormat.read(bytes, keys: keys) else { return }
  let records = whole.records
  let grown = try? CaptureFormat.read(bytes, growing: true, keys: keys)
  if whole.format.contains("sniffer") {
    require(zip(records, records.dropFirst()).allSatisfy { $0.number <= $1.number }, "records out of order")
    require(records.first.map { $0.number >= 1 } ?? true, "a record numbered under 1")
    require(grown.map { records.starts(with: $0.records) } ?? false, "read as growing, other records")
  } else {
    require(records.map(\.number) == records.indices.map { $0 + 1 }, "records misnumbered")
    require(grown?.records == records, "read as growing, \(grown?.records.count ?? -1) records, not \(records.count)")
  }
  let prefix = Array(bytes.prefix(cut))
  // (PacketLogger has no magic: a prefix may read in the other byte order.)
  if cut < bytes.count, let part = try? CaptureFormat.read(prefix, growing: true, keys: keys),
    part.format == whole.format
  {
    require(records.starts(with: part.records), "the first \(prefix.count) bytes read as other records")
  }
  // The chart inspects the records (its timeline and frames); one input in eight is drawn.
  let chart = SequenceChart(records: records, limit: 64)
  guard cut % 8 == 0 else { return }
  let svg = chart.svg(host: "harness", peer: "accessory")
  require(!svg.contains("<script") && !svg.contains("<a "), "the chart carries markup from the file")
}

/// The bytes after the header a target puts in front, and where to cut the file.
func captureInput(_ bytes: [UInt8]) -> (selector: UInt8, cut: Int, rest: [UInt8]) {
  var input = FuzzInput(bytes)
  let selector = input.byte()
  let cut = Int(input.u16())
  return (selector, cut, input.bytes(bytes.count))
}

func bigEndian32(_ value: UInt32) -> [UInt8] { (0..<4).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
