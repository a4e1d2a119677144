import ATT
import HCI
import Wire

/// A message-sequence chart of one capture: the host that took it and its peer as two lanes,
/// each ATT and SMP PDU an arrow between them with its decoded meaning (what `ancs inspect`
/// says of it), and what happened to the link (connected, encrypted, a rule broken) across
/// both. The HTML conformance report draws one per case.
public struct SequenceChart: Sendable {
  public enum Row: Sendable, Equatable {
    /// A PDU: sent by the host (left to right) or by its peer, its ATT or SMP summary, and
    /// what it meant for ANCS or AMS.
    case message(time: Double, record: Int, fromHost: Bool, label: String, meaning: [String])
    /// Something about the link, or a rule the capture shows broken (`finding`).
    case note(time: Double, record: Int, text: String, finding: Bool)

    public var record: Int {
      switch self {
      case .message(_, let record, _, _, _), .note(_, let record, _, _): record
      }
    }
  }

  public private(set) var rows: [Row] = []
  /// Rows left out past the chart's limit.
  public private(set) var omitted = 0

  /// The chart of a capture in any format `ancs inspect` reads, at most `limit` rows.
  public init(capture bytes: [UInt8], limit: Int = 500) throws(CaptureError) {
    self.init(records: try CaptureFormat.read(bytes).records, limit: limit)
  }

  /// The chart of a capture's records, at most `limit` rows.
  public init(records: [HCIRecord], limit: Int = 500) {
    var inspector = CaptureInspector(keepsFrames: true)
    for record in records { inspector.take(record) }
    inspector.finish()
    let timeline = inspector.timeline
    var said: [Int: [CaptureEvent]] = [:]
    for event in timeline { said[event.record, default: []].append(event) }
    var all: [Row] = []
    var framed: Set<Int> = []
    for frame in inspector.frames {
      framed.insert(frame.record)
      let events = said[frame.record] ?? []
      all.append(
        .message(
          time: frame.time, record: frame.record, fromHost: frame.sent,
          label: frame.isATT ? Self.attLabel(frame.bytes) : Self.smpLabel(frame.bytes),
          meaning: events.filter { $0.event != "finding" }.map(\.text)))
      all += events.filter { $0.event == "finding" }.map { Self.note($0) }
    }
    for event in timeline where !framed.contains(event.record) { all.append(Self.note(event)) }
    // Stable: a PDU's findings stay after it, and notes keep their order.
    all = all.enumerated().sorted { ($0.element.record, $0.offset) < ($1.element.record, $1.offset) }.map(\.element)
    rows = Array(all.prefix(limit))
    omitted = all.count - rows.count
  }

  static func note(_ event: CaptureEvent) -> Row {
    .note(time: event.time, record: event.record, text: event.text, finding: event.event == "finding")
  }

  // MARK: - Summaries

  /// `writeRequest` → `Write Request`, `exchangeMTURequest` → `Exchange MTU Request`.
  static func words(_ name: String) -> String {
    let characters = Array(name)
    var out = ""
    for (index, character) in characters.enumerated() {
      if index == 0 {
        out += character.uppercased()
        continue
      }
      let previous = characters[index - 1]
      let next = index + 1 < characters.count ? characters[index + 1] : " "
      if character.isUppercase && (previous.isLowercase || (previous.isUppercase && next.isLowercase)) { out += " " }
      out.append(character)
    }
    return out
  }

  static func hexHandle(_ low: UInt8, _ high: UInt8) -> String { "0x" + hex16(low, high) }

  /// At most 12 bytes of hex, then how many there were.
  static func value(_ bytes: ArraySlice<UInt8>) -> String {
    if bytes.isEmpty { return "(empty)" }
    if bytes.count <= 12 { return Hex.encode(bytes) }
    return Hex.encode(bytes.prefix(12)) + " … (\(bytes.count) bytes)"
  }

  /// One line for an ATT PDU, from its bytes (a malformed one is told as it is).
  static func attLabel(_ pdu: [UInt8]) -> String {
    guard let opcode = pdu.first else { return "empty ATT PDU" }
    let name = ATTOpcode.names[opcode].map(words) ?? "ATT opcode \(hexByte(opcode))"
    let rest = pdu.dropFirst()
    func handle(_ offset: Int) -> String? {
      rest.count >= offset + 2 ? hexHandle(rest[rest.startIndex + offset], rest[rest.startIndex + offset + 1]) : nil
    }
    let needs: [UInt8: Int] = [0x01: 4, 0x02: 2, 0x03: 2, 0x04: 4, 0x06: 4, 0x08: 4, 0x10: 4]
    guard rest.count >= needs[opcode, default: [0x0A, 0x0C, 0x12, 0x52, 0x1B, 0x1D, 0x16].contains(opcode) ? 2 : 0]
    else { return "\(name), malformed (\(rest.count) bytes)" }
    switch opcode {
    case 0x01:
      let request = ATTOpcode.names[rest[rest.startIndex]].map(words) ?? hexByte(rest[rest.startIndex])
      let code = rest[rest.startIndex + 3]
      return "Error Response to \(request) \(handle(1)!): \(ATTErrorCode.names[code].map(words) ?? hexByte(code))"
    case 0x02, 0x03:
      return "\(name) \(UInt16(rest[rest.startIndex]) | UInt16(rest[rest.startIndex + 1]) << 8)"
    case 0x04, 0x06, 0x08, 0x10:
      return "\(name) \(handle(0)!)–\(handle(2)!)"
    case 0x0A, 0x0C, 0x12, 0x52, 0x1B, 0x1D, 0x16:
      let offset = opcode == 0x0C || opcode == 0x16 ? 2 : 0
      return "\(name) \(handle(0)!)" + (opcode == 0x0A ? "" : ": " + value(rest.dropFirst(2 + offset)))
    case 0x0B, 0x0D:
      return "\(name): \(value(rest))"
    default:
      return rest.isEmpty ? name : "\(name) (\(rest.count) bytes)"
    }
  }

  /// One line for an SMP command.
  static func smpLabel(_ pdu: [UInt8]) -> String {
    guard let code = pdu.first else { return "empty SMP PDU" }
    return "SMP " + (SMPCode.names[code].map(words) ?? "code \(hexByte(code))")
  }
}

// MARK: - Drawing

extension SequenceChart {
  /// At most `count` characters, with an ellipsis when cut.
  static func cut(_ text: String, _ count: Int) -> String {
    text.count <= count ? text : String(text.prefix(count - 1)) + "…"
  }

  static func number(_ value: Double) -> String {
    let thousandths = Int((value * 1000).rounded())
    let fraction = String(abs(thousandths) % 1000)
    let sign = thousandths < 0 ? "-" : ""
    return "\(sign)\(abs(thousandths) / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
  }

  /// The chart as one inline SVG element: `host` names the left lane (the side that took
  /// the capture), `peer` the right. Each row's whole text is its tooltip.
  public func svg(host: String, peer: String) -> String {
    let width = 980
    let (hostX, peerX, middle) = (220, 920, 570)
    let header = 44
    var y = header
    var body = ""
    for row in rows {
      switch row {
      case .message(let time, let record, let fromHost, let label, let meaning):
        let said = meaning.joined(separator: "; ")
        let (from, to) = fromHost ? (hostX, peerX) : (peerX, hostX)
        let head = fromHost ? to - 9 : to + 9
        let colour = fromHost ? "#2f6fdd" : "#8250df"
        body +=
          "<g class=\"pdu\"><title>\(Markup.escape("#\(record) \(label)" + (said.isEmpty ? "" : "\n" + said)))</title>"
        body += "<text x=\"6\" y=\"\(y + 22)\" class=\"t\">\(Self.number(time)) #\(record)</text>"
        if !said.isEmpty {
          body += "<text x=\"\(middle)\" y=\"\(y + 13)\" class=\"m\">\(Markup.escape(Self.cut(said, 88)))</text>"
        }
        body += "<text x=\"\(middle)\" y=\"\(y + 27)\" class=\"l\">\(Markup.escape(Self.cut(label, 96)))</text>"
        body +=
          "<line x1=\"\(from)\" y1=\"\(y + 33)\" x2=\"\(head)\" y2=\"\(y + 33)\" stroke=\"\(colour)\" stroke-width=\"2\"/>"
        body += "<polygon points=\"\(to),\(y + 33) \(head),\(y + 28) \(head),\(y + 38)\" fill=\"\(colour)\"/></g>"
        y += 40
      case .note(let time, let record, let text, let finding):
        let shown = (finding ? "✗ " : "") + text
        body += "<g class=\"\(finding ? "finding" : "note")\"><title>\(Markup.escape("#\(record) \(shown)"))</title>"
        body += "<text x=\"6\" y=\"\(y + 18)\" class=\"t\">\(Self.number(time)) #\(record)</text>"
        body += "<rect x=\"\(hostX - 12)\" y=\"\(y + 4)\" width=\"\(peerX - hostX + 24)\" height=\"20\" rx=\"4\"/>"
        body += "<text x=\"\(middle)\" y=\"\(y + 18)\">\(Markup.escape(Self.cut(shown, 100)))</text></g>"
        y += 28
      }
    }
    if omitted > 0 {
      body += "<text x=\"\(middle)\" y=\"\(y + 18)\" class=\"l\">… \(omitted) more rows not drawn</text>"
      y += 28
    }
    var svg = "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(y + 8)\" "
    svg += "viewBox=\"0 0 \(width) \(y + 8)\" role=\"img\" aria-label=\"\(Markup.escape("\(host) and \(peer)"))\">"
    for (x, name) in [(hostX, host), (peerX, peer)] {
      svg += "<line x1=\"\(x)\" y1=\"\(header - 8)\" x2=\"\(x)\" y2=\"\(y + 8)\" class=\"lane\"/>"
      svg += "<rect x=\"\(x - 95)\" y=\"4\" width=\"190\" height=\"28\" rx=\"5\" class=\"head\"/>"
      svg += "<text x=\"\(x)\" y=\"23\" class=\"h\">\(Markup.escape(Self.cut(name, 26)))</text>"
    }
    return svg + body + "</svg>"
  }
}
