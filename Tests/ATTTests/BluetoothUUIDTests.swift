import ATT
import Testing
import Wire

@Suite struct BluetoothUUIDTests {
  static let ancsText = "7905F431-B5CE-4E99-A40F-4B1E122D00D0"
  static let ancsLittleEndian: [UInt8] = [
    0xd0, 0x00, 0x2d, 0x12, 0x1e, 0x4b, 0x0f, 0xa4, 0x99, 0x4e, 0xce, 0xb5, 0x31, 0xf4, 0x05, 0x79,
  ]

  @Test func parses16BitForms() {
    #expect(BluetoothUUID("2A2B") == .bit16(0x2A2B))
    #expect(BluetoothUUID("2a2b") == .bit16(0x2A2B))
    #expect(BluetoothUUID("0x2902") == .bit16(0x2902))
    #expect(BluetoothUUID("0X2902") == .bit16(0x2902))
  }

  @Test func parses128BitForm() throws {
    let uuid = try #require(BluetoothUUID(Self.ancsText))
    #expect(uuid == .bit128(0x7905_F431_B5CE_4E99_A40F_4B1E_122D_00D0))
    #expect(uuid.description == Self.ancsText)
    #expect(BluetoothUUID(Self.ancsText.lowercased()) == uuid)
    #expect(uuid.littleEndian == Self.ancsLittleEndian)
    #expect(uuid.littleEndian128 == Self.ancsLittleEndian)
    #expect(!uuid.is16Bit)
  }

  @Test(arguments: [
    "", "2A2", "2A2B5", "  2A", "2A  ", "::2A", "2A-B", "2:AB", "zzzz", "0x", "0x2A2",
    "7905F431B5CE4E99A40F4B1E122D00D0",
    "7905F431-B5CE-4E99-A40F4B1E122D00D0", "7905F431-B5CE-4E99-A40F-4B1E122D00D",
    "7905F431-B5CE-4E99-A40F-4B1E122D00D0-",
    "7905F431-B5CE-4E99-A40F-4B1E122D00DG", "7905F431-B5CE-4E99-A40F-4B1E 22D00D0",
    "{7905F431-B5CE-4E99-A40F-4B1E122D00D0}",
  ])
  func rejectsMalformedText(_ text: String) {
    #expect(BluetoothUUID(text) == nil)
  }

  /// A 16-bit UUID is the base UUID with 16 bits filled in: both spellings are one value.
  @Test func sixteenBitAndItsBaseFormAreEqual() throws {
    let long = try #require(BluetoothUUID("00002902-0000-1000-8000-00805F9B34FB"))
    #expect(long == .bit16(0x2902))
    #expect(long.is16Bit)
    #expect(long.description == "2902")
    #expect(Set([long, BluetoothUUID.clientCharacteristicConfiguration, 0x2902]).count == 1)
    let expanded = BluetoothUUID.bit16(0x2902).littleEndian128
    #expect(
      expanded == [0xfb, 0x34, 0x9b, 0x5f, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x02, 0x29, 0x00, 0x00])
    #expect(BluetoothUUID(littleEndian: expanded) == .bit16(0x2902))
    // Off the base UUID by one bit in any byte other than the two of the short form: 128-bit.
    for index in expanded.indices where index != 12 && index != 13 {
      var bytes = expanded
      bytes[index] ^= 0x01
      #expect(!(BluetoothUUID(littleEndian: bytes)?.is16Bit ?? true), "byte \(index)")
    }
  }

  @Test func littleEndianWireForms() {
    #expect(BluetoothUUID(littleEndian: [0x02, 0x29]) == .bit16(0x2902))
    #expect(BluetoothUUID.bit16(0x2902).littleEndian == [0x02, 0x29])
    #expect(BluetoothUUID(littleEndian: Self.ancsLittleEndian)?.description == Self.ancsText)
    for count in [0, 1, 3, 4, 15, 17] {
      #expect(BluetoothUUID(littleEndian: [UInt8](repeating: 0, count: count)) == nil, "\(count) bytes")
    }
  }

  @Test func everySixteenBitValueRoundTrips() {
    for value in UInt16.min...UInt16.max {
      let uuid = BluetoothUUID.bit16(value)
      if BluetoothUUID(littleEndian: uuid.littleEndian128) != uuid || BluetoothUUID(uuid.description) != uuid {
        Issue.record("\(value)")
      }
    }
  }
}
