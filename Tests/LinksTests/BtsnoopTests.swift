import ATT
import Foundation
import Runtime
import TestSupport
import Testing
import Wire

@testable import Links
@testable import Sockets

/// A clock for captures: starts at 2024-01-01 00:00 UTC and moves 1 ms per reading.
final class StepClock: Sendable {
  static let start: Int64 = 1_704_067_200_000_000
  private let readings = Locked<Int64>(0)

  var clock: BtsnoopWriter.Clock {
    { [self] in
      readings.withLock { count in
        defer { count += 1 }
        return Self.start + count * 1000
      }
    }
  }
}

/// One record of a btsnoop file, as read back by the tests.
struct SnoopRecord: Equatable {
  var originalLength: UInt32
  var includedLength: UInt32
  var flags: UInt32
  var drops: UInt32
  var timestamp: Int64
  var packet: [UInt8]
}

func bigEndian32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
  bytes[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) }
}

func littleEndian16(_ bytes: [UInt8], _ at: Int) -> UInt16 {
  UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
}

/// Splits a btsnoop file into header fields and records, checking the framing as it goes.
func readSnoop(_ bytes: [UInt8]) -> (version: UInt32, datalink: UInt32, records: [SnoopRecord])? {
  guard bytes.count >= 16, Array(bytes[0..<8]) == Array("btsnoop\0".utf8) else { return nil }
  var records: [SnoopRecord] = []
  var offset = 16
  while offset < bytes.count {
    guard bytes.count - offset >= 24 else { return nil }
    let included = bigEndian32(bytes, offset + 4)
    let high = Int64(bigEndian32(bytes, offset + 16))
    let low = Int64(bigEndian32(bytes, offset + 20))
    let end = offset + 24 + Int(included)
    guard end <= bytes.count else { return nil }
    records.append(
      SnoopRecord(
        originalLength: bigEndian32(bytes, offset), includedLength: included, flags: bigEndian32(bytes, offset + 8),
        drops: bigEndian32(bytes, offset + 12), timestamp: high << 32 | low, packet: Array(bytes[(offset + 24)..<end])))
    offset = end
  }
  return (bigEndian32(bytes, 8), bigEndian32(bytes, 12), records)
}

func readFile(_ path: String) throws -> [UInt8] {
  Array(try Data(contentsOf: URL(fileURLWithPath: path)))
}

@Suite("btsnoop capture", .timeLimit(scaledMinutes(2)))
struct BtsnoopTests {
  @Test("file header, record header and ACL/L2CAP wrapping, byte for byte")
  func exactBytes() {
    #expect(Btsnoop.fileHeader == Array("btsnoop".utf8) + [0, 0, 0, 0, 1, 0, 0, 0x03, 0xEA])
    let packet = Btsnoop.h4Packet(attPDU: [0x0A, 0x03, 0x00])
    #expect(packet == [0x02, 0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00])
    let record = Btsnoop.record(packet, direction: .received, unixMicroseconds: 0)
    #expect(
      record == [0, 0, 0, 12, 0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0, 0x00, 0xDC, 0xDD, 0xB3, 0x0F, 0x2F, 0x80, 0x00]
        + packet)
    #expect(Btsnoop.record(packet, direction: .sent, unixMicroseconds: 1)[8..<12] == [0, 0, 0, 0])
    #expect(Btsnoop.record(packet, direction: .received, isEvent: true, unixMicroseconds: 1)[8..<12] == [0, 0, 0, 3])
    #expect(
      Btsnoop.h4ConnectionComplete(.init(role: .peripheral, peerAddress: [0xC1, 0x02, 0x03, 0x04, 0x05, 0x06]))
        == [
          0x04, 0x3E, 19, 0x01, 0x00, 0x40, 0x00, 0x01, 0x01, 0x06, 0x05, 0x04, 0x03, 0x02, 0xC1, 24, 0, 0, 0, 72, 0,
          0x00,
        ])
    #expect(Btsnoop.h4Packet(attPDU: [0x0A], handle: 0x0041)[1...2] == [0x41, 0x20])
    #expect(
      Btsnoop.h4DisconnectionComplete(handle: 0x0041, reason: 0x13) == [0x04, 0x05, 0x04, 0x00, 0x41, 0x00, 0x13])
  }

  @Test("a capture of a socket link holds every PDU both ways, in order, with injected times")
  func captureOfLink() async throws {
    let directory = TemporaryDirectory()
    let path = directory.file("link.btsnoop")
    let writer = try BtsnoopWriter(path: path, clock: StepClock().clock)
    let (central, peripheral) = try UnixSeqpacketLink.pair(on: testLoop)
    let captured = CapturingBearer(central, writer: writer)
    defer { peripheral.close() }
    #expect(captured.name == "unix:socketpair(central)")

    let exchange: [(Btsnoop.Direction, [UInt8])] = [
      (.sent, [0x02, 0x00, 0x02]),
      (.received, [0x03, 0xB9, 0x00]),
      (.sent, [0x0A, 0x03, 0x00]),
      (.received, [0x0B] + (0..<40).map { UInt8($0) }),
      (.received, [0x1B, 0x0E, 0x00, 0x00, 0x12, 0x34, 0x56, 0x78]),
    ]
    for (direction, pdu) in exchange {
      switch direction {
      case .sent:
        try captured.send(pdu)
        #expect(try await peripheral.receive() == pdu)
      case .received:
        try peripheral.send(pdu)
        #expect(try await captured.receive() == pdu)
      }
    }
    #expect(try await captured.pair(.encrypted) == .encrypted)
    #expect(captured.securityLevel == .encrypted)
    captured.close()
    #expect(try await captured.receive() == nil)

    let file = try #require(readSnoop(try readFile(path)))
    #expect(file.version == 1)
    #expect(file.datalink == 1002)
    try #require(file.records.count == exchange.count + 2)
    let connection = file.records[0]
    #expect(connection.flags == 3)
    #expect(
      connection.packet == Btsnoop.h4ConnectionComplete(Btsnoop.Connection(peerAddress: [0xC0, 0, 0, 0, 0, 0x40])))
    #expect(connection.timestamp == StepClock.start + Btsnoop.epochOffset)
    let disconnection = try #require(file.records.last)
    #expect(disconnection.flags == 3)
    #expect(disconnection.packet == Btsnoop.h4DisconnectionComplete(handle: 0x0040, reason: 0x16))
    for (index, (record, (direction, pdu))) in zip(file.records.dropFirst(), exchange).enumerated() {
      #expect(record.flags == (direction == .received ? 1 : 0), "record \(index)")
      #expect(record.drops == 0)
      #expect(record.originalLength == UInt32(pdu.count + 9))
      #expect(record.includedLength == record.originalLength)
      #expect(record.timestamp == StepClock.start + Int64(index + 1) * 1000 + Btsnoop.epochOffset)
      let packet = record.packet
      #expect(packet[0] == 0x02, "H4 ACL")
      #expect(littleEndian16(packet, 1) & 0x0FFF == 0x0040, "handle")
      #expect(littleEndian16(packet, 1) >> 12 == 0b10, "first automatically flushable, point to point")
      #expect(Int(littleEndian16(packet, 3)) == pdu.count + 4, "ACL length")
      #expect(Int(littleEndian16(packet, 5)) == pdu.count, "L2CAP length")
      #expect(littleEndian16(packet, 7) == 0x0004, "ATT CID")
      #expect(Array(packet[9...]) == pdu)
    }
    writer.close()
    writer.close()
  }

  @Test("each link in one capture has its own handle, connected before and disconnected after its packets")
  func linksHaveHandlesOfTheirOwn() async throws {
    let directory = TemporaryDirectory()
    let path = directory.file("two.btsnoop")
    let writer = try BtsnoopWriter(path: path, clock: StepClock().clock)
    let (a, aPeer) = try UnixSeqpacketLink.pair(on: testLoop)
    let (b, bPeer) = try UnixSeqpacketLink.pair(on: testLoop)
    let first = CapturingBearer(a, writer: writer)
    let second = CapturingBearer(b, writer: writer, role: .peripheral)
    #expect(first.handle == 0x0040)
    #expect(second.handle == 0x0041)
    try first.send([0x0A, 0x01, 0x00])
    try second.send([0x0A, 0x02, 0x00])
    aPeer.close()  // the peer ends the first link
    #expect(try await first.receive() == nil)
    second.close()  // this end ends the second
    bPeer.close()
    // A PDU sent after its link's end never reaches the peer: it is not in the capture.
    try? first.send([0x1B, 0x03, 0x00])
    try? second.send([0x1B, 0x03, 0x00])
    writer.close()
    let records = try #require(readSnoop(try readFile(path))).records.map(\.packet)
    #expect(
      records == [
        Btsnoop.h4ConnectionComplete(.init(role: .central, peerAddress: [0xC0, 0, 0, 0, 0, 0x40]), handle: 0x0040),
        Btsnoop.h4ConnectionComplete(.init(role: .peripheral, peerAddress: [0xC0, 0, 0, 0, 0, 0x41]), handle: 0x0041),
        Btsnoop.h4Packet(attPDU: [0x0A, 0x01, 0x00], handle: 0x0040),
        Btsnoop.h4Packet(attPDU: [0x0A, 0x02, 0x00], handle: 0x0041),
        Btsnoop.h4DisconnectionComplete(handle: 0x0040, reason: 0x13),
        Btsnoop.h4DisconnectionComplete(handle: 0x0041, reason: 0x16),
      ])
  }

  /// Issue #13 (2): the btsnoop epoch as Wireshark reads it. A capture taken now must show
  /// now, not thirty years on.
  @Test(
    "tshark reads the time a capture was taken", .enabled(if: tsharkAvailable, "tshark is not installed"))
  func tsharkReadsTheTimeTaken() async throws {
    let directory = TemporaryDirectory()
    let path = directory.file("now.btsnoop")
    let taken = BtsnoopWriter.systemClock()
    let writer = try BtsnoopWriter(path: path)
    _ = writer.openConnection(role: .central)
    writer.close()
    let tshark = try #require(tsharkPath)
    let fields = try await offThread {
      try runToCompletion(tshark, ["-r", path, "-T", "fields", "-e", "frame.time_epoch"])
    }
    #expect(fields.status == 0, "\(fields.error)")
    let shown = try #require(Double(fields.output.trimmingCharacters(in: .whitespacesAndNewlines)))
    #expect(abs(shown - Double(taken) / 1e6) < 60, "tshark shows \(shown), taken at \(Double(taken) / 1e6)")
  }

  @Test("records from many tasks at once are all whole")
  func concurrentRecords() async throws {
    let directory = TemporaryDirectory()
    let path = directory.file("many.btsnoop")
    let writer = try BtsnoopWriter(path: path, clock: { 0 })
    await withTaskGroup(of: Void.self) { group in
      for task in 0..<8 {
        group.addTask {
          for index in 0..<500 {
            writer.record([0x1B, UInt8(task), UInt8(index & 0xFF)], direction: index % 2 == 0 ? .sent : .received)
          }
        }
      }
    }
    writer.close()
    let file = try #require(readSnoop(try readFile(path)))
    #expect(file.records.count == 4000)
    #expect(file.records.allSatisfy { $0.packet.count == 12 && $0.packet[9] == 0x1B })
    #expect(writer.writeError == nil)
  }

  @Test("an unwritable path is a typed error")
  func unwritable() {
    let error = #expect(throws: LinkError.self) { try BtsnoopWriter(path: "/nonexistent-dir/x.btsnoop") }
    #expect(error?.description.hasPrefix("/nonexistent-dir/x.btsnoop: cannot create capture file") == true)
  }

  @Test(
    "tshark decodes the capture as ATT, with nothing malformed",
    .enabled(if: tsharkAvailable, "tshark is not installed"))
  func tsharkDecodes() async throws {
    let directory = TemporaryDirectory()
    let path = directory.file("tshark.btsnoop")
    let writer = try BtsnoopWriter(path: path, clock: StepClock().clock)
    let (central, peripheral) = try UnixSeqpacketLink.pair(on: testLoop)
    let phone = CapturingBearer(central, writer: writer)
    defer { peripheral.close() }
    // An MTU exchange, a discovery of the ANCS service, a read, a notification, an error.
    let ancsUUID: [UInt8] = [
      0xD0, 0x00, 0x2D, 0x12, 0x1E, 0x4B, 0x0F, 0xA4, 0x99, 0x4E, 0xCE, 0xB5, 0x31, 0xF4, 0x05, 0x79,
    ]
    let requests: [[UInt8]] = [
      [0x02, 0x00, 0x02],
      [0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28] + ancsUUID,
      [0x0A, 0x03, 0x00],
    ]
    let responses: [[UInt8]] = [
      [0x03, 0xB9, 0x00],
      [0x07, 0x10, 0x00, 0x1F, 0x00],
      [0x01, 0x0A, 0x03, 0x00, 0x05],
    ]
    for (request, response) in zip(requests, responses) {
      try phone.send(request)
      #expect(try await peripheral.receive() == request)
      try peripheral.send(response)
      #expect(try await phone.receive() == response)
    }
    try peripheral.send([0x1B, 0x12, 0x00, 0x00, 0x10, 0x02, 0x01, 0x2A, 0x00, 0x00, 0x00])
    #expect(try await phone.receive() != nil)
    phone.close()
    writer.close()

    let tshark = try #require(tsharkPath)
    let summary = try await offThread { try runToCompletion(tshark, ["-r", path]) }
    #expect(summary.status == 0, "\(summary.error)")
    #expect(!summary.output.contains("Malformed"), "\(summary.output)")
    // The connection event, three exchanges, a notification and the disconnection.
    #expect(summary.output.split(separator: "\n").count == 9, "\(summary.output)")
    #expect(summary.output.contains("LE Connection Complete"), "\(summary.output)")
    #expect(summary.output.contains("Disconnect Complete"), "\(summary.output)")
    #expect(summary.output.contains("Exchange MTU Request"), "\(summary.output)")
    #expect(summary.output.contains("Error Response"), "\(summary.output)")

    let detail = try await offThread { try runToCompletion(tshark, ["-r", path, "-V"]) }
    #expect(detail.status == 0, "\(detail.error)")
    #expect(detail.output.contains("Bluetooth Attribute Protocol"))
    #expect(detail.output.contains("L2CAP"))
    #expect(!detail.output.contains("Malformed"), "\(detail.output)")
    #expect(!detail.output.contains("Expert Info (Error"), "\(detail.output)")
  }
}
