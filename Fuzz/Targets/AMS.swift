import AMS
import Wire

/// The Apple Media Service codec: the first byte picks what the rest is (a Remote Command
/// write, a supported-commands list, an Entity Update write or notification, an Entity
/// Attribute write, PlaybackInfo text, or a value to cut to a notification of that many
/// bytes). Whatever decodes encodes back to the same bytes; errors point inside the input
/// and answer Invalid Command; a cut value fits, is a prefix, never splits a character and
/// is marked truncated exactly when it was cut; PlaybackInfo written out reads back the same.
func fuzz(_ bytes: [UInt8]) {
  guard let selector = bytes.first else { return }
  let input = Array(bytes.dropFirst())
  let hex = Hex.encode(input)
  func roundTrip(_ decode: () throws(AMSError) -> [UInt8]) {
    do {
      let encoded = try decode()
      require(encoded == input, "\(hex) encodes back as \(Hex.encode(encoded))")
    } catch {
      requireOffset(error.offset, within: input, error)
      require(error.errorCode == .invalidCommand, "\(hex): \(error)")
    }
  }
  switch selector % 7 {
  case 0: roundTrip { () throws(AMSError) in try RemoteCommand(decoding: input).encoded() }
  case 1: roundTrip { () throws(AMSError) in SupportedCommands(decoding: input).encoded() }
  case 2: roundTrip { () throws(AMSError) in try EntityRegistration(decoding: input).encoded() }
  case 3: roundTrip { () throws(AMSError) in try EntityUpdate(decoding: input).encoded() }
  case 4: roundTrip { () throws(AMSError) in try EntityAttributeSelection(decoding: input).encoded() }
  case 5:
    let text = String(decoding: input, as: UTF8.self)
    guard let info = try? PlaybackInfo(text: text) else { return }
    let again = try? PlaybackInfo(text: info.text)
    require(again?.text == info.text, "\(hex): '\(info.text)' reads back as \(String(describing: again))")
  default:
    let capacity = Int(selector / 7)
    let text = String(decoding: input, as: UTF8.self)
    let update = EntityUpdate(.title, text: text, capacity: capacity)
    let whole = Array(text.utf8)
    require(update.encoded().count <= max(capacity, EntityUpdate.headerSize), "\(hex): over \(capacity) bytes")
    require(whole.starts(with: update.value), "\(hex): not a prefix")
    require(String(validating: update.value, as: UTF8.self) != nil, "\(hex): cut inside a character")
    require(update.flags.contains(.truncated) == (update.value.count < whole.count), "\(hex): flag \(update.flags)")
  }
}
