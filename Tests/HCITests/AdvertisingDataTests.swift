import ATT
import HCI
import Testing
import Wire

@Suite struct AdvertisingDataTests {
  static let ancs = BluetoothUUID("7905F431-B5CE-4E99-A40F-4B1E122D00D0")!
  /// Length 0x11, type 0x15, then the UUID least significant byte first.
  static let ancsSolicitation = "11 15 d0 00 2d 12 1e 4b 0f a4 99 4e ce b5 31 f4 05 79"

  @Test func ancsSolicitationBytesAreExact() {
    let data = AdvertisingData([.serviceSolicitation128([Self.ancs])])
    #expect(Hex.encode(data.encoded) == Self.ancsSolicitation)
  }

  @Test func peripheralWithAShortName() throws {
    let data = AdvertisingData.peripheral(name: "Watch", solicitedServices: [Self.ancs])
    #expect(Hex.encode(data.encoded) == "02 01 06 " + Self.ancsSolicitation + " 06 09 57 61 74 63 68")
    let decoded = try AdvertisingData(decoding: data.encoded)
    #expect(decoded == data)
    #expect(decoded.flags == 0x06)
    #expect(decoded.localName?.name == "Watch" && decoded.localName?.isComplete == true)
    #expect(try decoded.solicitedServices128() == [Self.ancs])
    #expect(decoded.solicits(Self.ancs))
    #expect(!decoded.solicits(BluetoothUUID(0x180F)))
  }

  /// A phone connects to an accessory that solicits ANCS, AMS or both (issue #17, 6).
  @Test func aPhoneTakesAnAccessorySolicitingEitherService() {
    let ams = BluetoothUUID("89D3502B-0F36-433A-8EF4-C502AD55F8DC")!
    let filter = ScanFilter.solicits([Self.ancs, ams])
    func report(_ data: AdvertisingData, connectable: Bool = true) -> ScanReport {
      ScanReport(
        addressType: .random, address: BDAddress("C1:22:33:44:55:66")!, isConnectable: connectable,
        isScanResponse: false, data: data.encoded, rssi: -40)
    }
    #expect(filter.matches(report(.peripheral(name: "Remote", solicitedServices: [ams]))))
    #expect(filter.matches(report(.peripheral(name: "Watch", solicitedServices: [Self.ancs]))))
    #expect(!filter.matches(report(.peripheral(name: "Lamp"))))
    #expect(!filter.matches(report(.peripheral(name: "Remote", solicitedServices: [ams]), connectable: false)))
    #expect(!ScanFilter.solicits([Self.ancs]).matches(report(.peripheral(name: "Remote", solicitedServices: [ams]))))
    #expect(filter.description.hasPrefix("a device soliciting 7905F431") && filter.description.contains(" or 89D3502B"))
  }

  /// 3 bytes of flags and 18 of solicitation leave 8 bytes of name in 31.
  @Test func longNameIsShortenedToFit() throws {
    let data = AdvertisingData.peripheral(name: "ANCS Watch", solicitedServices: [Self.ancs])
    #expect(data.encoded.count == 31)
    #expect(data.localName?.name == "ANCS Wat" && data.localName?.isComplete == false)
    #expect(data.first(.shortenedLocalName) == Array("ANCS Wat".utf8))
  }

  @Test func shorteningKeepsWholeCharacters() {
    let data = AdvertisingData.peripheral(name: "ABCDEFGéé", solicitedServices: [Self.ancs])
    #expect(data.localName?.name == "ABCDEFG")
    let none = AdvertisingData.peripheral(name: "éé", solicitedServices: [Self.ancs], maximum: 24)
    #expect(none.localName == nil, "one byte of room cannot hold a two-byte character")
    #expect(none.encoded.count <= 24)
  }

  @Test func decodingStopsAtZeroLengthPadding() throws {
    let command = LESetAdvertisingData(advertisingData: AdvertisingData.peripheral(name: "W").encoded)
    let padded = Array(command.encoded.dropFirst())  // 31 bytes, zero-padded
    let data = try AdvertisingData(decoding: padded)
    #expect(data.localName?.name == "W")
    #expect(data.structures.count == 2)
  }

  @Test func structureRunningPastTheEndIsRefused() {
    let valid = bytes("02 01 06 03 09 41 42")
    expectTotal(valid) { bytes throws(HCIDecodeError) in
      let data = try AdvertisingData(decoding: bytes)
      // A prefix that ends between structures is valid data: only the two-structure form counts here.
      if data.structures.count != 2 || bytes.count != valid.count {
        throw HCIDecodeError(packet: "test", field: "count", offset: 0, reason: .invalid("partial"))
      }
      return data
    }
    let error = decodeError { () throws(HCIDecodeError) in _ = try AdvertisingData(decoding: bytes("02 01 06 05 09 41"))
    }
    #expect(error?.field == "AD data")
    #expect(error?.offset == 5)
  }

  @Test func solicitationOfAPartialUUIDIsRefused() {
    let data = AdvertisingData([ADStructure(type: .serviceSolicitationUUIDs128, data: [UInt8](repeating: 1, count: 15))]
    )
    let flagged = AdvertisingData([.flags()] + data.structures)
    #expect(decodeError { () throws(HCIDecodeError) in _ = try flagged.solicitedServices128() }?.offset == 5)
    #expect(!data.solicits(Self.ancs))
  }

  @Test func unknownTypesSurvive() throws {
    let data = try AdvertisingData(decoding: bytes("03 ff 4c 00"))
    #expect(data.structures == [ADStructure(type: .manufacturerSpecificData, data: [0x4c, 0x00])])
    #expect(ADType(rawValue: 0x42).description == "reserved(66)")
    #expect(data.flags == nil && data.localName == nil)
  }
}
