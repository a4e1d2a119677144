import Capture
import Foundation
import Processes
import Wire

/// `ancs inspect FILE`: the ANCS and AMS story in a field capture.
enum InspectCommand {
  static let usage = """
    usage: ancs inspect FILE [--json] [--scenario OUT.json] [--follow] [--ltk HEX]...

    Reads a capture of Bluetooth HCI traffic and prints what happened on ANCS and the Apple
    Media Service, one line per event with its record number (as Wireshark numbers them) and
    its time from the first record: connections, encryption, ATT_MTU, where ANCS and AMS
    were found, subscriptions, each notification's life (Added, Modified, Removed with
    category and flags), the Control Point commands and their answers reassembled from the
    Data Source, app names, actions, refusals, the media player's updates, registrations,
    commands and whole reads. It judges what it sees by the rules the conformance harness
    applies, naming the side that broke one, the rule and the records (a line "accessory
    broke a rule: ..."), and exits 1 when one is broken.

    FILE is btsnoop (ancs's own --capture, Android's HCI snoop log, btmon -w), an Apple
    PacketLogger file (.pklg), or pcap/pcapng with the Bluetooth HCI H4 link types (with or
    without the direction header) or the Linux monitor's; the format is told from the
    content (Protocol/captures.md). A pcap or pcapng from an LE sniffer (link type 256, LE
    link layer with RF header, or 272, the nRF Sniffer for Bluetooth LE's) is told as the
    peripheral's HCI log would tell it, with notes of what only the air shows; its
    encrypted part is read with the link's long-term key (--ltk).
    ANCS is found from the GATT discovery in the capture, or from its traffic when the
    capture starts after discovery (the output says which).

    options:
      --json              one JSON object per line instead (Protocol/captures.md lists the events)
      --follow            read FILE as it grows (a live --capture of ancs phone or ancs watch,
                          btmon -w): print each event as it comes, until interrupted
      --scenario OUT.json write a scenario (Protocol/scenario.md) that makes `ancs phone` do
                          what the captured phone did: its notifications as the accessory
                          fetched them, posted, modified and removed at their times, and the
                          tracks it played
      --ltk HEX           an LE sniffer's capture: the long-term key of the link, 32 hex
                          digits, most significant first (as a bonds file of ancs keeps it);
                          repeat it to try several (the one that opens each link is used)

    example:
      ancs phone --listen unix:/tmp/p.sock --capture session.btsnoop
      ancs inspect session.btsnoop
      ancs inspect session.btsnoop --scenario replay.json && ancs phone --scenario replay.json
      ancs inspect Protocol/vectors/sniffer-session.pcap --ltk 4C68384139F574D836BCF34E9DFB01BF
    """

  static func run(_ arguments: [String]) async throws -> Int32 {
    var args = Arguments(arguments, command: "inspect")
    if args.flag("--help", "-h") {
      print(usage)
      return 0
    }
    let json = args.flag("--json")
    let scenarioPath = try args.value("--scenario")
    let follow = args.flag("--follow")
    let keys = try args.values("--ltk").map(longTermKey)
    let files = args.positionals()
    try args.finish()
    guard files.count == 1, let path = files.first else {
      throw UsageError(
        files.isEmpty ? "inspect needs a capture FILE; try 'ancs inspect --help'" : "inspect reads one FILE")
    }
    if follow {
      guard scenarioPath == nil else { throw UsageError("--scenario needs the whole capture: not with --follow") }
      try await followGrowing(path, json: json, keys: keys)
      return 0
    }
    let bytes = try contents(of: path)
    let format: String
    let records: [HCIRecord]
    do { (format, records) = try CaptureFormat.read(bytes, keys: keys) } catch {
      throw UsageError("\(path): \(error)")
    }
    var inspector = CaptureInspector()
    for record in records { inspector.take(record) }
    inspector.finish()
    let timeline = inspector.timeline
    if let scenarioPath { try writeScenario(timeline, to: scenarioPath, from: path) }
    let broken = inspector.findings.isEmpty ? 0 : 1 as Int32
    if json {
      for event in timeline { printLine(event.json.description) }
      return broken
    }
    printLine("\(path): \(format), \(records.count) records")
    for event in timeline { printLine(line(event)) }
    if inspector.foundANCS.isEmpty { printLine("no ANCS traffic found") }
    let findings = inspector.findings
    printLine(
      findings.isEmpty
        ? "no rule broken" : "\(findings.count) rule\(findings.count == 1 ? "" : "s") broken (the lines marked ✗ above)"
    )
    return broken
  }

  /// Writes the capture's scenario and checks that `ancs phone` takes it.
  static func writeScenario(_ timeline: [CaptureEvent], to output: String, from capture: String) throws {
    let scenario = CapturedScenario(timeline, name: "replay of \(URL(fileURLWithPath: capture).lastPathComponent)")
    let text = scenario.json.description + "\n"
    do { try Data(text.utf8).write(to: URL(fileURLWithPath: output)) } catch {
      throw UsageError("--scenario \(output): cannot write it (\((error as NSError).localizedDescription))")
    }
    let loaded = try PhoneCommandLine.loadScenario(output)
    printError(
      "ancs: wrote \(output): \(scenario.notifications) notifications, \(loaded.steps.count) steps"
        + (scenario.unfetched > 0 ? " (\(scenario.unfetched) never fetched: their text is unknown)" : ""))
  }

  /// `--ltk`: 32 hex digits (a leading 0x allowed), most significant first.
  static func longTermKey(_ text: String) throws(UsageError) -> UInt128 {
    let digits = text.hasPrefix("0x") || text.hasPrefix("0X") ? String(text.dropFirst(2)) : text
    guard let bytes = Hex.decode(digits: digits, count: 32) else {
      throw UsageError("--ltk \(text): a long-term key is 32 hex digits, most significant first")
    }
    return bytes.reduce(0) { $0 << 8 | UInt128($1) }
  }

  static func contents(of path: String) throws(UsageError) -> [UInt8] {
    do { return Array(try Data(contentsOf: URL(fileURLWithPath: path))) } catch {
      throw UsageError("\(path): cannot read it (\((error as NSError).localizedDescription))")
    }
  }

  /// One event as the timeline prints it.
  static func line(_ event: CaptureEvent) -> String {
    let time = String(format: "%9.3f", event.time)
    let record = String(format: "#%-6d", event.record)
    let link = event.connection.map { String(format: "0x%04X", $0) } ?? "      "
    return "\(time)  \(record) \(link)  \(event.event == "finding" ? "✗ " : "")\(event.text)"
  }

  /// `--follow`: reads the file again whenever it changes (checked every 0.1 s with stat(2),
  /// as `tail -f` does without inotify: a file that has not changed is not read) and prints
  /// the events of its new whole records; a record cut short is read once it is whole. A
  /// file that shrinks, or no longer starts with what was read (another file put in its
  /// place), was started again: so is the story.
  static func followGrowing(_ path: String, json: Bool, keys: [UInt128] = []) async throws {
    var inspector = CaptureInspector()
    var fed = 0
    var read: [UInt8]?
    var followed = ""
    var seen: FileVersion?
    while !Task.isCancelled {
      // Unchanged since the last look (same file, size and modification time): nothing new.
      let version = FileVersion(path)
      if let version, version == seen {
        try await Task.sleep(for: .milliseconds(100))
        continue
      }
      seen = version
      let bytes = try contents(of: path)
      // Changed: grown, or (the same size) another file or new content in its place.
      if bytes != read {
        if let read, !bytes.starts(with: read) {
          inspector = CaptureInspector()
          fed = 0
          if !json { printLine("\(path): started again") }
        }
        read = bytes
        let format: String
        let records: [HCIRecord]
        do { (format, records) = try CaptureFormat.read(bytes, growing: true, keys: keys) } catch {
          throw UsageError("\(path): \(error)")
        }
        // PacketLogger has no magic: more records may show the other byte order. The
        // story is told again in the order the file proves to have.
        if !format.isEmpty && format != followed {
          if !followed.isEmpty {
            inspector = CaptureInspector()
            fed = 0
          }
          followed = format
          if !json { printLine("\(path): \(format), followed as it grows") }
        }
        for record in records.dropFirst(fed) { inspector.take(record) }
        fed = max(fed, records.count)
        for event in inspector.drain() { printLine(json ? event.json.description : line(event)) }
      }
      try await Task.sleep(for: .milliseconds(100))
    }
  }
}

/// What tells one version of a file from another without reading it: the file (device and
/// inode, which a rename into place changes), its size and its modification time.
struct FileVersion: Equatable {
  /// Device, inode, size, and the modification time's seconds and nanoseconds.
  let stamp: [Int64]

  /// Nil when the file cannot be stat'ed (reading it then says why).
  init?(_ path: String) {
    var status = stat()
    guard stat(path, &status) == 0 else { return nil }
    stamp = [
      Int64(truncatingIfNeeded: status.st_dev), Int64(truncatingIfNeeded: status.st_ino), Int64(status.st_size),
      Int64(status.st_mtim.tv_sec), Int64(status.st_mtim.tv_nsec),
    ]
  }
}
