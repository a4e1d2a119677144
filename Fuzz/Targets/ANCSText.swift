import ANCS
import Wire

/// The text helpers: the Date attribute parser and the UTF-8 byte budget cut.
/// A date that parses prints back as the same 15 characters and survives the trip through
/// seconds since the epoch (a leap second aside); a cut fits its budget, is a prefix of the
/// text (then "…" when asked and there is room), never ends before a continuation byte
/// (unless it is empty), and keeps valid UTF-8 valid.
///
/// Layout: the budget, a flags byte (bit 0: ellipsis), then the text.
func fuzz(_ bytes: [UInt8]) {
  var input = FuzzInput(bytes)
  let budget = Int(input.byte())
  let ellipsis = input.byte() & 1 != 0
  let text = input.rest()

  if let string = String(validatingUTF8Bytes: text) {
    do {
      if let date = try ANCSDate.parse(string) {
        require(date.description == string, "date \(string) prints as \(date)")
        if date.second < 60 {
          let back = ANCSDate(secondsSinceEpoch: date.secondsSinceEpoch)
          require(back == date, "date \(string) comes back from seconds as \(back)")
        }
      } else {
        require(string.isEmpty, "\(string) parsed as no date")
      }
    } catch {
      require(error.offset >= 0 && error.offset < max(1, text.count), "date \(string): \(error)")
    }
  }

  let cut = ANCSText.truncate(text, toBytes: budget, ellipsis: ellipsis)
  let context = "\(Hex.encode(text)) cut to \(budget)\(ellipsis ? " with ellipsis" : "")"
  require(cut.count <= budget, "\(context): \(cut.count) bytes")
  if text.count <= budget {
    require(cut == text, "\(context): changed a text that fits")
    return
  }
  let marked = ellipsis && budget >= ANCSText.ellipsis.count
  let kept = marked ? Array(cut.dropLast(ANCSText.ellipsis.count)) : cut
  require(!marked || cut.suffix(ANCSText.ellipsis.count).elementsEqual(ANCSText.ellipsis), "\(context): no ellipsis")
  require(text.starts(with: kept), "\(context): \(Hex.encode(kept)) is not a prefix")
  // Text that starts with continuation bytes has no boundary to cut at but its start.
  require(kept.isEmpty || text[kept.count] & 0xC0 != 0x80, "\(context): cut before a continuation byte")
  if String(validatingUTF8Bytes: text) != nil {
    require(String(validatingUTF8Bytes: cut) != nil, "\(context): not UTF-8 any more")
  }
}
