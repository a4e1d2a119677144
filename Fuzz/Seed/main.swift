import ANCS
import Foundation
import Wire

// Writes the seed corpus of every fuzz target, one directory per target, from the vectors
// of Protocol/vectors (and, for the scenario reader, the JSON examples of the docs).
//   seed REPOSITORY OUTPUT
// Each seed is one file named after the vector it comes from.

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
  FileHandle.standardError.write(Data("usage: seed REPOSITORY OUTPUT\n".utf8))
  exit(2)
}
let repository = URL(fileURLWithPath: arguments[1])
let output = URL(fileURLWithPath: arguments[2])
let vectors = repository.appendingPathComponent("Protocol/vectors")

func read(_ url: URL) throws -> String { try String(contentsOf: url, encoding: .utf8) }

/// The seeds of each target, by file name.
struct Seeds {
  var files: [String: [String: [UInt8]]] = [:]

  mutating func add(_ target: String, _ name: String, _ bytes: [UInt8]) { files[target, default: [:]][name] = bytes }

  mutating func add(_ target: String, _ name: String, _ write: (inout FuzzInputWriter) -> Void) {
    var writer = FuzzInputWriter()
    write(&writer)
    add(target, name, writer.bytes)
  }
}
var seeds = Seeds()

// MARK: - Helpers

/// The Reassembler target's four policy bytes for a vector's policy column.
func reassemblyPolicy(_ column: String) -> [UInt8] {
  var bits: UInt8 = 0
  var capacity: UInt8 = 0
  var size: UInt8 = 0
  var optional: UInt8 = 0
  for word in column.split(separator: " ") where word != "strict" {
    let pair = word.split(separator: "=", maxSplits: 1).map(String.init)
    let value = pair.count == 2 ? pair[1] : ""
    switch pair[0] {
    case "acceptPartial" where value == "true": bits |= ReassemblyBits.acceptPartial
    case "unrequested" where value == "reject": bits |= ReassemblyBits.rejectUnrequested
    case "validateUTF8" where value == "false": bits |= ReassemblyBits.skipUTF8Validation
    case "enforceMaximumLength" where value == "false": bits |= ReassemblyBits.ignoreMaximumLength
    case "fragmentCapacity":
      bits |= ReassemblyBits.fragmentCapacity
      capacity = UInt8(clamping: Int(value) ?? 0)
    case "maximumSize": size = UInt8(clamping: Int(value) ?? 0)
    case "optionalAttributes":
      for id in value.split(separator: ",").compactMap({ Int($0) }) where id < 8 { optional |= 1 << id }
    default: break
    }
  }
  return [bits, capacity, size, optional]
}

// MARK: - The vectors

/// One Data Source answer: the request when known, and the fragments as they arrived.
struct Answer {
  var name: String
  var request: [UInt8]?
  var fragments: [[UInt8]]
  var policy = "strict"
}

let columns = [
  "notification-source": 4, "control-point": 4, "data-source": 4, "reassembly": 6, "att": 4,
  "ams-remote-command": 4, "ams-supported-commands": 4, "ams-entity-registration": 4, "ams-entity-update": 4,
  "ams-entity-attribute": 4, "ams-playback-info": 4,
]
/// The AMS target's first byte: which of its decoders the rest goes to.
let amsSelectors: [String: UInt8] = [
  "ams-remote-command": 0, "ams-supported-commands": 1, "ams-entity-registration": 2, "ams-entity-update": 3,
  "ams-entity-attribute": 4, "ams-playback-info": 5,
]
var records: [VectorNotation.Record] = []
for file in try FileManager.default.contentsOfDirectory(atPath: vectors.path).sorted() where file.hasSuffix(".vectors")
{
  records += try VectorNotation.records(in: try read(vectors.appendingPathComponent(file)), columns: columns)
}
func input(_ record: VectorNotation.Record) throws -> [UInt8] {
  try VectorNotation.bytes(record.columns[0], line: record.line)
}

/// The target that takes each decoder's inputs as they are.
let targets = [
  "notification-source": "NotificationSource", "control-point": "ControlPoint", "data-source": "DataSource",
  "att": "ATTPDU",
]
var answers: [Answer] = []
for record in records {
  if let target = targets[record.decoder] {
    seeds.add(target, record.name, try input(record))
  } else if let selector = amsSelectors[record.decoder] {
    seeds.add("AMS", record.name, [selector] + (try input(record)))
  } else {
    let request = record.columns[0] == "-" ? nil : try input(record)
    let fragments = try record.columns[1].split(separator: "/", omittingEmptySubsequences: false).map {
      try VectorNotation.bytes($0, line: record.line)
    }
    answers.append(Answer(name: record.name, request: request, fragments: fragments, policy: record.columns[2]))
  }
}

// AMS values to cut to a notification: the selector 6 + 7 × capacity (ATT_MTU 23: 20 bytes).
for (index, title) in ["Tall Bird", "Für Élise – ♪ 🎵 and a title longer than one notification"].enumerated() {
  for capacity in [3, 20] {
    seeds.add("AMS", "cut-\(index)-\(capacity)", [UInt8(6 + 7 * capacity)] + Array(title.utf8))
  }
}

// ios-captures.txt: blocks of `name:`, `request:` and `fragment:` lines.
for line in try read(vectors.appendingPathComponent("ios-captures.txt")).split(separator: "\n") {
  let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
  guard parts.count == 2, !line.hasPrefix("#") else { continue }
  switch parts[0] {
  case "name": answers.append(Answer(name: "ios-" + parts[1], fragments: []))
  case "request": answers[answers.count - 1].request = try VectorNotation.bytes(parts[1])
  case "fragment": answers[answers.count - 1].fragments.append(try VectorNotation.bytes(parts[1]))
  default: break
  }
}

// MARK: - Seeds for each target

let byDecoder = Dictionary(grouping: records, by: \.decoder)
let controlPoints = try byDecoder["control-point", default: []].map { ($0.name, try input($0)) }
let attPDUs = try byDecoder["att", default: []].map { ($0.name, try input($0)) }
let events = try byDecoder["notification-source", default: []].map { try input($0) }.filter { $0.count == 8 }

for answer in answers {
  let whole = answer.fragments.flatMap { $0 }
  seeds.add("DataSource", answer.name, whole)
  if let request = answer.request { seeds.add("ControlPoint", answer.name, request) }
  seeds.add("Reassembler", answer.name) { writer in
    writer.raw(reassemblyPolicy(answer.policy))
    writer.chunk(answer.request ?? [])
    for fragment in answer.fragments { writer.chunk(fragment) }
  }
  // The watch fetches the notification an event announces; the answer's tuples come back
  // under the header of whatever it asked.
  if whole.first == 0, whole.count > 5 {
    seeds.add("WatchMachine", answer.name) { writer in
      writer.byte(0)
      writer.byte(WatchOperation.notificationSourceEvent.rawValue)
      writer.raw(events.first ?? [0, 0, 0, 1, 1, 0, 0, 0])
      writer.byte(WatchOperation.writeResponse.rawValue)
      writer.byte(WatchOperation.dataSourceAnswer.rawValue)
      writer.chunk(Array(whole.dropFirst(5)))
      writer.byte(WatchOperation.writeResponse.rawValue)
      writer.byte(WatchOperation.dataSourceAnswer.rawValue)
      writer.chunk([0, 4, 0] + Array("Chat".utf8))
    }
  }
  let values = (try? DataSourceResponse(decoding: whole))?.tuples.map(\.value) ?? []
  for (index, value) in values.enumerated() {
    seeds.add("ANCSText", "\(answer.name)-\(index)", [UInt8(clamping: value.count / 2), 1] + value)
  }
}

for (index, event) in events.enumerated() {
  seeds.add("WatchMachine", "event-\(index)") { writer in
    writer.byte(UInt8(index % 16))
    writer.byte(WatchOperation.sessionStarted.rawValue)
    writer.byte(81)
    writer.byte(WatchOperation.notificationSourceEvent.rawValue)
    writer.raw(event)
    writer.byte(WatchOperation.writeResponse.rawValue)
    writer.byte(WatchOperation.tick.rawValue)
    writer.byte(60)
  }
}

for (name, command) in controlPoints {
  seeds.add("PhoneControlPoint", name) { writer in
    writer.byte(0)
    writer.byte(PhoneOperation.writeRequest.rawValue)
    writer.chunk(command)
  }
}
seeds.add("PhoneControlPoint", "all-at-mtu-185-reversed") { writer in
  writer.byte(8)
  writer.byte(PhoneOperation.exchangeMTU.rawValue)
  writer.u16(185)
  for (_, command) in controlPoints {
    writer.byte(PhoneOperation.writeRequest.rawValue)
    writer.chunk(command)
  }
}

for (name, pdu) in attPDUs {
  seeds.add("GATTServer", name) { writer in
    writer.byte(1)
    writer.chunk(pdu)
  }
}
seeds.add("GATTServer", "all-encrypted") { writer in
  writer.byte(1)
  for (_, pdu) in attPDUs { writer.chunk(pdu) }
}

// The scenario examples: ```json blocks of the docs, and the test fixture.
for document in ["README.md", "Protocol/scenario.md"] {
  let blocks = try read(repository.appendingPathComponent(document)).components(separatedBy: "```json\n").dropFirst()
  for (index, block) in blocks.enumerated() {
    let json = block.components(separatedBy: "```").first ?? ""
    seeds.add("Scenario", "\(document.replacingOccurrences(of: "/", with: "-"))-\(index)", Array(json.utf8))
  }
}
let fixture = repository.appendingPathComponent("Tests/WatchDisplayTests/scenario.json")
seeds.add("Scenario", "watch-display-fixture", Array(try read(fixture).utf8))

// The capture readers: each real iPhone answer as a capture of its session (the link
// opening, the Added event, the watch's command on the Control Point at 0x000E, the answer's notifications
// on the Data Source at 0x0010), in each container after the header its target writes.
// The targets' input: a selector byte, a cut point, then these bytes.
func be32(_ value: Int) -> [UInt8] { (0..<4).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
func le32(_ value: Int) -> [UInt8] { be32(value).reversed() }
func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
/// H4 packets and whether the host sent them: an LE Connection Complete, then ATT in ACL.
func sessionPackets(_ answer: Answer) -> [(h4: [UInt8], sent: Bool)] {
  let connected: [UInt8] =
    [0x04, 0x3E, 19, 0x01, 0x00, 0x40, 0x00, 0x01, 0x00] + [1, 0, 0, 0, 0, 0xC0] + [24, 0, 0, 0, 0x48, 0, 0]
  func acl(_ pdu: [UInt8]) -> [UInt8] { [0x02, 0x40, 0x20] + le16(pdu.count + 4) + le16(pdu.count) + [4, 0] + pdu }
  var packets = [(connected, false)]
  if let request = answer.request {
    // A notification's Added event on the Notification Source at 0x000B comes first.
    if request.first == 0, request.count >= 5 {
      packets.append((acl([0x1B, 0x0B, 0x00, 0, 0, 0, 1] + request[1..<5]), false))
    }
    packets.append((acl([0x12, 0x0E, 0x00] + request), true))
  }
  for fragment in answer.fragments { packets.append((acl([0x1B, 0x10, 0x00] + fragment), false)) }
  return packets
}
for answer in answers {
  let packets = sessionPackets(answer)
  let times = packets.indices.map { 1_764_590_400_000_000 + $0 * 10_000 }
  var btsnoop: [UInt8] = []
  var packetLogger: [UInt8] = []
  var pcap = [2, 0, 4, 0] + le32(0) + le32(0) + le32(65_535) + le32(201)
  var pcapng = le32(28) + [0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0] + [UInt8](repeating: 0xFF, count: 8) + le32(28)
  pcapng += le32(1) + le32(20) + le16(201) + le16(0) + le32(65_535) + le32(20)
  for ((h4, sent), time) in zip(packets, times) {
    let flags = (sent ? 0 : 1) | (h4[0] == 0x04 ? 2 : 0)
    btsnoop += be32(h4.count) + be32(h4.count) + be32(flags) + be32(0) + be32(time >> 32) + be32(time)
    btsnoop += h4
    packetLogger += be32(h4.count + 8) + be32(time / 1_000_000) + be32(time % 1_000_000)
    packetLogger += [h4[0] == 0x04 ? 0x01 : sent ? 0x02 : 0x03] + h4.dropFirst()
    let directed = be32(sent ? 0 : 1) + h4
    pcap += le32(time / 1_000_000) + le32(time % 1_000_000) + le32(directed.count) + le32(directed.count) + directed
    let padded = directed + [UInt8](repeating: 0, count: (4 - directed.count % 4) % 4)
    pcapng += le32(6) + le32(padded.count + 32) + le32(0) + le32(time >> 32) + le32(time) + le32(directed.count)
    pcapng += le32(directed.count) + padded + le32(padded.count + 32)
  }
  seeds.add("CaptureBtsnoop", answer.name, [1, 0xFF, 0xFF] + btsnoop)
  seeds.add("CapturePacketLogger", answer.name, [0, 0xFF, 0xFF] + packetLogger)
  // Selector 2: the target writes the magic little-endian, as these fields are.
  seeds.add("CapturePcap", answer.name, [2, 0xFF, 0xFF] + pcap)
  seeds.add("CapturePcapng", answer.name, [0, 0xFF, 0xFF] + pcapng)
}
// An LE sniffer's capture of a whole encrypted session (link type 256), after its magic.
let sniffer = try Data(contentsOf: vectors.appendingPathComponent("sniffer-session.pcap"))
seeds.add("CapturePcap", "sniffer-session", [2, 0xFF, 0xFF] + Array(sniffer.dropFirst(4)))

// MARK: - Writing

try? FileManager.default.removeItem(at: output)
for (target, files) in seeds.files {
  let directory = output.appendingPathComponent(target)
  try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  for (name, bytes) in files { try Data(bytes).write(to: directory.appendingPathComponent(name)) }
}
print("seeds: " + seeds.files.keys.sorted().map { "\($0) \(seeds.files[$0]!.count)" }.joined(separator: ", "))
