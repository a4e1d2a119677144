import Testing
import Wire

@Suite struct ByteReaderWriterTests {
  @Test func writesAndReadsLittleEndian() throws {
    var writer = ByteWriter()
    writer.u8(0x01)
    writer.u16(0x0302)
    writer.u32(0x0706_0504)
    writer.cString("hé")
    writer.append([0xaa, 0xbb])
    #expect(writer.bytes == [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x68, 0xc3, 0xa9, 0x00, 0xaa, 0xbb])

    var reader = ByteReader(writer.bytes)
    #expect(try reader.u8("a") == 0x01)
    #expect(try reader.u16("b") == 0x0302)
    #expect(try reader.u32("c") == 0x0706_0504)
    #expect(try reader.cString("d") == "hé")
    #expect(reader.offset == 11)
    #expect(try reader.bytes(1, "e") == [0xaa])
    #expect(reader.rest() == [0xbb])
    #expect(reader.isAtEnd)
    #expect(reader.rest() == [])
  }

  @Test func readsFromASliceWithItsOwnIndices() throws {
    let bytes: [UInt8] = [0xff, 0xff, 0x34, 0x12, 0x61, 0x00]
    var reader = ByteReader(bytes[2...])
    #expect(try reader.u16("x") == 0x1234)
    #expect(try reader.cString("s") == "a")
    #expect(reader.isAtEnd)
  }

  @Test func truncationSaysWhereTheFieldStarts() {
    var reader = ByteReader([UInt8]([0x01, 0x02, 0x03]))
    _ = try? reader.u8("first")
    #expect(throws: ReadError(field: "UID", offset: 1, reason: .truncated(needed: 4, available: 2))) {
      try reader.u32("UID")
    }
    #expect(reader.offset == 1, "a failed read consumes nothing")
  }

  @Test func cStringErrors() {
    var noNul = ByteReader([UInt8]([0x61, 0x62]))
    #expect(throws: ReadError(field: "App", offset: 0, reason: .missingTerminator)) { try noNul.cString("App") }
    var badUTF8 = ByteReader([UInt8]([0xc3, 0x28, 0x00]))
    #expect(throws: ReadError(field: "App", offset: 0, reason: .invalidUTF8)) { try badUTF8.cString("App") }
  }

  @Test func validatingUTF8RejectsWhatDecodingWouldRepair() {
    #expect(String(validatingUTF8Bytes: [0x68, 0x69]) == "hi")
    #expect(String(validatingUTF8Bytes: [UInt8]()) == "")
    #expect(String(validatingUTF8Bytes: [0xc3]) == nil)
    #expect(String(validatingUTF8Bytes: [0xed, 0xa0, 0x80]) == nil, "UTF-16 surrogate")
    #expect(String(validatingUTF8Bytes: [0xc0, 0xaf]) == nil, "overlong form")
  }
}
