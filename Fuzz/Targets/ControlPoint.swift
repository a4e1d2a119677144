import ANCS
import Wire

/// Control Point commands: a command that decodes encodes back to the same bytes, with a
/// maximum length exactly on Title, Subtitle and Message; a refusal points inside the
/// write and maps to 0xA0 for an unknown CommandID, 0xA1 for anything else.
func fuzz(_ bytes: [UInt8]) {
  do {
    let command = try ControlPointCommand(decoding: bytes)
    require(command.encoded() == bytes, "\(Hex.encode(bytes)) encodes back as \(Hex.encode(command.encoded()))")
    if case .getNotificationAttributes(let get) = command {
      require(!get.attributes.isEmpty, "\(Hex.encode(bytes)): no attributes")
      for attribute in get.attributes {
        require(
          (attribute.maxLength != nil) == attribute.id.takesMaximumLength, "\(Hex.encode(bytes)): \(attribute)")
      }
    }
  } catch {
    requireOffset(error.offset, within: bytes, error)
    require(error.kind != "invalidValue", "\(Hex.encode(bytes)): \(error)")
    let unknown = error.kind == "unknownCommand"
    require(
      error.controlPointErrorCode == (unknown ? .unknownCommand : .invalidCommand),
      "\(Hex.encode(bytes)): \(error) answered \(error.controlPointErrorCode)")
  }
}
