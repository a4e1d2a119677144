import ANCS
import Wire

/// Notification Source values: exactly 8 bytes decode, to an event that encodes back to
/// them, from an array and from a slice alike; fewer fail `truncated`, more
/// `trailingBytes`, at an offset inside the value.
func fuzz(_ bytes: [UInt8]) {
  let size = NotificationSourceEvent.size
  do {
    let event = try NotificationSourceEvent(decoding: bytes)
    require(bytes.count == size, "\(Hex.encode(bytes)): \(bytes.count) bytes decoded")
    require(event.encoded() == bytes, "\(Hex.encode(bytes)) encodes back as \(Hex.encode(event.encoded()))")
    let slice = [0] + bytes
    require((try? NotificationSourceEvent(decoding: slice[1...])) == event, "\(Hex.encode(bytes)): slice differs")
  } catch {
    require(bytes.count != size, "\(Hex.encode(bytes)): 8 bytes refused: \(error)")
    require(
      error.kind == (bytes.count < size ? "truncated" : "trailingBytes"), "\(Hex.encode(bytes)): \(error)")
    requireOffset(error.offset, within: bytes, error)
  }
}
