import AMS
import ANCS
import ATT
import Watch

/// The watch face as a pure function: the engine's `WatchState` and the face's `FaceUI` at
/// a time `now` (the engine's clock) give the `Screen` to show. The renderer draws that and
/// nothing else, so every screen here is tested as text without a terminal.
public enum FaceModel {
  public static func screen(_ state: WatchState, _ ui: FaceUI, now: Duration) -> Screen {
    var ui = ui
    // Works on a copy brought up to date, so a face one event behind still draws truthfully.
    ui.sync(state, now: now)
    var canvas = Canvas(size: ui.size, charset: ui.charset)
    guard let layout = FaceLayout(size: ui.size) else {
      tooSmall(&canvas, ui.size)
      return canvas.screen
    }
    var face = Face(canvas: canvas, layout: layout, state: state, ui: ui, now: now)
    face.draw()
    return face.canvas.screen
  }

  /// One clear line instead of a broken drawing.
  static func tooSmall(_ canvas: inout Canvas, _ size: Size) {
    guard size.width > 0, size.height > 0 else { return }
    let need = FaceLayout.minimum
    let candidates = [
      "Terminal too small for the watch: \(size), it needs \(need)",
      "Too small: \(size), needs \(need)",
      "Too small: \(size)",
      "Too small",
    ]
    let text = candidates.first { DisplayText.width($0) <= size.width } ?? "Too small"
    canvas.center(text, in: Rect(x: 0, y: 0, width: size.width, height: size.height), y: size.height / 2, style: .bold)
  }
}

/// Draws one screen.
private struct Face {
  var canvas: Canvas
  let layout: FaceLayout
  let state: WatchState
  let ui: FaceUI
  let now: Duration
  let symbols: Symbols
  let visible: [WatchNotification]

  init(canvas: Canvas, layout: FaceLayout, state: WatchState, ui: FaceUI, now: Duration) {
    self.canvas = canvas
    self.layout = layout
    self.state = state
    self.ui = ui
    self.now = now
    symbols = Symbols.of(ui.charset)
    visible = ui.visible(state)
  }

  var charset: Charset { ui.charset }
  var content: Rect { layout.content }
  var phoneTime: ANCSDate? { state.time?.current(at: now) }

  mutating func draw() {
    drawCase()
    drawStatus()
    if let call = ui.activeCall(state) {
      drawCall(call)
    } else {
      switch ui.page {
      case .list: drawList()
      case .nowPlaying: drawNowPlaying()
      case .detail(let uid):
        if let notification = visible.first(where: { $0.uid == uid }) { drawDetail(notification) } else { drawList() }
      }
    }
    // The pairing's question, with a toast still readable over it.
    if let pairing = ui.pairing { drawPairing(pairing) }
    if let toast = ui.toast, toast.until > now {
      // Over the oldest entries of the list; over the hint line where it would hide a message.
      let boxed = ui.activeCall(state) == nil && ui.page == .list
      if boxed { drawToast(toast) } else { drawToastLine(toast) }
    }
    if ui.showingHelp { drawHelp() }
  }

  // MARK: - Pairing

  /// The pairing's question over the body: a passkey or a number large and centred, or the
  /// digits typed so far, and the keys that answer.
  mutating func drawPairing(_ pairing: PairingScreen) {
    let rect = layout.body
    canvas.fill(rect)
    let title = ("Pairing with the phone", Style(bold: true, tint: .accent))
    var lines: [(String, Style)] = [title, ("", .plain)]
    func number(_ value: UInt32) -> [(String, Style)] {
      let digits = sixDigits(value)
      let big = bigDigits(digits, scale: 1)
      // Large where the body has room for the title, five rows and the question.
      guard rect.height >= 11, let row = big.first, DisplayText.width(row) <= rect.width else {
        return [(digits, Style(bold: true))]
      }
      // And in plain text, for a screen reader or a copy.
      return big.map { ($0, Style(bold: true)) } + [(digits, .dim)]
    }
    let enter = charset == .unicode ? "⏎" : "Enter"
    switch pairing {
    case .show(let value):
      lines += number(value) + [("", .plain), ("Type this passkey on the phone", .plain), ("esc hides", .dim)]
    case .compare(let value):
      lines +=
        number(value) + [
          ("", .plain), ("Does the phone show this number?", .plain), ("y yes   n no", Style(bold: true)),
        ]
    case .enter(let typed):
      let slots = (typed.map(String.init) + Array(repeating: "_", count: max(0, 6 - typed.count)))
      lines += [
        ("Type the passkey the phone shows", .plain), ("", .plain),
        (slots.joined(separator: " "), Style(bold: true, tint: .accent)), ("", .plain),
        ("\(enter) send   esc cancel", .dim),
      ]
    }
    drawCentered(lines, in: rect)
  }

  // MARK: - The case

  mutating func drawCase() {
    let bezel = layout.bezel
    let style = Style(tint: .bezel)
    if layout.straps {
      let width = max(8, bezel.width / 2) & ~1
      let x = bezel.x + (bezel.width - width) / 2
      let strap = Style(dim: true, tint: .bezel)
      for y in 0..<layout.size.height where y < bezel.y || y >= bezel.maxY {
        canvas.put(symbols.frame.vertical, x: x, y: y, style: style)
        canvas.hline(x: x + 1, y: y, width: width - 2, symbols.strap, style: strap)
        canvas.put(symbols.frame.vertical, x: x + width - 1, y: y, style: style)
      }
      canvas.box(bezel, frame: symbols.frame, style: style)
      for edge in [x, x + width - 1] {
        canvas.put(symbols.frame.teeUp, x: edge, y: bezel.y, style: style)
        canvas.put(symbols.frame.teeDown, x: edge, y: bezel.maxY - 1, style: style)
      }
    } else {
      canvas.box(bezel, frame: symbols.frame, style: style)
    }
    // The crown, on the right side.
    if bezel.maxX < layout.size.width {
      let y = bezel.y + max(2, bezel.height / 4)
      canvas.put(symbols.crown, x: bezel.maxX, y: y, style: style)
      canvas.put(symbols.crown, x: bezel.maxX, y: y + 1, style: style)
    }
    let separator = layout.separatorY
    canvas.put(symbols.frame.teeLeft, x: bezel.x, y: separator, style: style)
    canvas.hline(x: bezel.x + 1, y: separator, width: bezel.width - 2, symbols.frame.horizontal, style: style)
    canvas.put(symbols.frame.teeRight, x: bezel.maxX - 1, y: separator, style: style)
  }

  // MARK: - Status line

  mutating func drawStatus() {
    let y = layout.statusY
    let time = phoneTime.map(Clock.time) ?? "--:--"
    let left = canvas.put(time, x: content.x, y: y, style: Style(bold: true, tint: .accent))
    var parts: [(text: String, style: Style)] = []
    if ui.isQuiet(state, now: now) { parts.append((symbols.quiet, Style(tint: .notice))) }
    if let level = state.battery {
      let low = level <= 20
      let percent = "\(level)%"
      let full = content.width >= 40 ? batteryBar(level) + " " + percent : percent
      parts.append((full, Style(bold: low, tint: low ? .bad : .plain)))
    }
    switch state.link {
    case .connected: parts.append((symbols.connected, Style(tint: .good)))
    case .connecting: parts.append((symbols.connecting, Style(tint: .notice)))
    case .reconnecting, .stopped: parts.append((symbols.disconnected, Style(bold: true, tint: .bad)))
    }
    if state.nowPlaying.isPlaying { parts.append((symbols.note, Style(tint: .accent))) }
    let unread = ui.unreadCount(state)
    if unread > 0 { parts.append(("\(unread) new", Style(bold: true))) }
    // Right-aligned, dropping from the left when the line is short.
    var x = content.maxX
    for part in parts.reversed() {
      let width = DisplayText.width(part.text, charset: charset)
      if x - width - 2 < content.x + left { break }
      x -= width
      canvas.put(part.text, x: x, y: y, style: part.style)
      x -= 2
    }
  }

  func batteryBar(_ level: UInt8) -> String {
    let filled = min(4, (Int(level) + 12) / 25)
    if charset == .ascii {
      return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: 4 - filled) + "]"
    }
    return String(repeating: "▮", count: filled) + String(repeating: "▯", count: 4 - filled)
  }

  // MARK: - The list

  mutating func drawList() {
    guard case .connected = state.link else {
      drawDisconnected()
      return
    }
    if state.sharingAllowed == false {
      drawNotShared()
      return
    }
    guard !visible.isEmpty else {
      drawEmpty()
      return
    }
    let capacity = layout.listCapacity
    let top = ui.top(visible, capacity: capacity)
    let selected = ui.selection(visible)
    for (offset, notification) in visible[top...].prefix(capacity).enumerated() {
      drawEntry(notification, y: layout.body.y + 2 * offset, selected: top + offset == selected)
    }
    let below = visible.count - min(visible.count, top + capacity)
    if top > 0 {
      canvas.putRight("\(symbols.up) \(top) ", in: layout.inner, y: layout.separatorY, style: Style(tint: .bezel))
    }
    var hints = [
      "\(symbols.enter) open \(symbols.dot) a d act \(symbols.dot) m mute \(symbols.dot) ? keys",
      "\(symbols.enter) open \(symbols.dot) ? keys", "? keys",
    ]
    if below > 0 {
      let more = "\(symbols.down) \(below) more"
      hints = hints.map { $0 + "  " + more } + [more]
    }
    drawHint(hints)
  }

  mutating func drawEntry(_ notification: WatchNotification, y: Int, selected: Bool) {
    let unread = !ui.seen.contains(notification.uid)
    let muted = ui.settings.muted.contains(notification.category)
    if unread { canvas.put(symbols.unread, x: layout.inner.x, y: y + 1, style: Style(bold: true, tint: .accent)) }
    canvas.put(Symbols.glyph(notification.category, charset), x: content.x, y: y, style: Style(tint: .accent))
    // Right: important, muted, age.
    var right = [Clock.age(now - notification.receivedAt)]
    if muted { right.insert(symbols.muted, at: 0) }
    if notification.flags.contains(.important) { right.insert("!", at: 0) }
    let age = right.joined(separator: " ")
    let ageX = canvas.putRight(age, in: content, y: y, style: Style(dim: !selected))
    if notification.flags.contains(.important) {
      canvas.restyle(x: ageX, y: y, width: 1) { $0 = Style(bold: true, tint: .bad) }
    }
    let name = notification.appName.isEmpty ? notification.appIdentifier : notification.appName
    canvas.put(name, x: content.x + 2, y: y, style: Style(bold: unread, tint: .accent), limit: ageX - content.x - 3)
    // Second row: the title, then the start of the message.
    let indent = content.x + 2
    let room = content.maxX - indent
    let message = DisplayText.paragraphs(notification.message).first { !$0.isEmpty } ?? ""
    if !notification.fetched && notification.title.isEmpty && message.isEmpty {
      canvas.put("(not fetched)", x: indent, y: y + 1, style: .dim, limit: room)
    } else if notification.title.isEmpty {
      canvas.put(message, x: indent, y: y + 1, style: Style(bold: unread), limit: room)
    } else {
      let used = canvas.put(notification.title, x: indent, y: y + 1, style: Style(bold: unread), limit: room)
      if used + 3 < room, !message.isEmpty {
        canvas.put(message, x: indent + used + 2, y: y + 1, style: .dim, limit: room - used - 2)
      }
    }
    if selected {
      // Reverse video shows the cursor; the mark shows it in plain text too.
      canvas.put(symbols.selected, x: layout.inner.x, y: y, style: Style(bold: true))
      for row in [y, y + 1] {
        canvas.restyle(x: layout.inner.x, y: row, width: layout.inner.width) { style in
          style.reverse = true
          style.dim = false
        }
      }
    }
  }

  /// Lines centred in the body, as many as fit.
  mutating func drawCentered(_ lines: [(text: String, style: Style)], in rect: Rect) {
    let shown = Array(lines.prefix(rect.height))
    var y = rect.y + (rect.height - shown.count) / 2
    for line in shown {
      canvas.center(line.text, in: rect, y: y, style: line.style)
      y += 1
    }
  }

  mutating func drawEmpty() {
    let rect = layout.body
    var lines: [(String, Style)] = []
    if let time = phoneTime {
      let digits = Clock.time(time)
      let scale = rect.width >= 36 ? 2 : 1
      if rect.height >= 11 {
        lines += bigDigits(digits, scale: scale).map { ($0, Style(bold: true, tint: .accent)) }
      } else {
        lines.append((digits, Style(bold: true, tint: .accent)))
      }
      lines.append((Clock.longDay(time), Style(tint: .accent)))
      lines.append(("", .plain))
    }
    lines.append(("No notifications", Style(bold: true)))
    lines.append(("New ones from the phone appear here", .dim))
    drawCentered(lines, in: rect)
    drawHint(["? keys \(symbols.dot) q quit"])
  }

  /// The time in block digits, five rows high.
  func bigDigits(_ text: String, scale: Int) -> [String] {
    let font: [Character: [String]] = [
      "0": ["###", "# #", "# #", "# #", "###"], "1": ["  #", "  #", "  #", "  #", "  #"],
      "2": ["###", "  #", "###", "#  ", "###"], "3": ["###", "  #", "###", "  #", "###"],
      "4": ["# #", "# #", "###", "  #", "  #"], "5": ["###", "#  ", "###", "  #", "###"],
      "6": ["###", "#  ", "###", "# #", "###"], "7": ["###", "  #", "  #", "  #", "  #"],
      "8": ["###", "# #", "###", "# #", "###"], "9": ["###", "# #", "###", "  #", "###"],
      ":": [" ", "#", " ", "#", " "], "-": ["   ", "   ", "###", "   ", "   "],
    ]
    let pixel = String(repeating: symbols.pixel, count: scale)
    let gap = String(repeating: " ", count: scale)
    return (0..<5).map { row in
      text.map { character in
        (font[character]?[row] ?? "   ").map { $0 == "#" ? pixel : String(repeating: " ", count: scale) }.joined()
      }.joined(separator: gap)
    }
  }

  /// The phone refuses to share its notifications (iOS asks its user first).
  mutating func drawNotShared() {
    var lines: [(String, Style)] = [
      ("\(symbols.disconnected) Notifications not shared", Style(bold: true, tint: .bad)), ("", .plain),
    ]
    for text in ["Allow this watch on the phone", "to receive its notifications"] { lines.append((text, .plain)) }
    lines += [("", .plain), ("Checking again every few seconds", .dim)]
    if !visible.isEmpty {
      lines += [("", .plain), ("\(visible.count) notification\(visible.count == 1 ? "" : "s") kept", .dim)]
    }
    drawCentered(lines, in: layout.body)
    drawHint(["? keys \(symbols.dot) q quit"])
  }

  mutating func drawDisconnected() {
    let rect = layout.body
    var lines: [(String, Style)] = []
    let spinner = symbols.spinner[Int((now / .milliseconds(100)).rounded(.down)) % symbols.spinner.count]
    switch state.link {
    case .connected:
      return
    case .stopped:
      lines.append(("\(symbols.disconnected) Watch stopped", Style(bold: true, tint: .bad)))
      lines.append(("The link to the phone is closed", .dim))
    case .connecting:
      if ui.everConnected {
        lines.append(("\(symbols.disconnected) Phone disconnected", Style(bold: true, tint: .bad)))
        lines.append(("", .plain))
        lines.append(("\(spinner) Reconnecting now", .plain))
      } else {
        lines.append(("\(spinner) Waiting for the phone", Style(bold: true)))
        lines.append(("", .plain))
        lines.append(("Connecting, pairing, subscribing", .dim))
      }
    case .reconnecting(let attempt, let retryIn, let reason):
      let left = retryIn - (now - ui.linkSince)
      let seconds = max(0, Int((left / .seconds(1)).rounded(.up)))
      if ui.everConnected {
        lines.append(("\(symbols.disconnected) Phone disconnected", Style(bold: true, tint: .bad)))
      } else {
        lines.append(("\(spinner) Waiting for the phone", Style(bold: true)))
      }
      lines.append(("", .plain))
      lines.append((seconds > 0 ? "Reconnecting in \(seconds) s" : "Reconnecting now", .plain))
      lines.append(("(attempt \(attempt))", .dim))
      lines.append(("", .plain))
      for line in DisplayText.wrap(reason, width: rect.width, charset: charset).prefix(2) {
        lines.append((line.map(\.text).joined(), .dim))
      }
    }
    if !visible.isEmpty {
      lines += [("", .plain), ("\(visible.count) notification\(visible.count == 1 ? "" : "s") kept", .dim)]
    }
    drawCentered(lines, in: rect)
    drawHint(["? keys \(symbols.dot) q quit"])
  }

  mutating func drawHint(_ candidates: [String]) {
    let text = candidates.first { DisplayText.width($0, charset: charset) <= content.width } ?? candidates.last ?? ""
    canvas.center(text, in: content, y: layout.hintY, style: .dim)
  }

  // MARK: - Detail

  mutating func drawDetail(_ notification: WatchNotification) {
    let detail = DetailLayout(notification, layout: layout, charset: charset)
    var y = layout.body.y
    canvas.put(Symbols.glyph(notification.category, charset), x: content.x, y: y, style: Style(tint: .accent))
    let stamp = Clock.stamp(notification.date, today: phoneTime) ?? Clock.age(now - notification.receivedAt)
    let stampX = canvas.putRight(stamp, in: content, y: y, style: .dim)
    let name = notification.appName.isEmpty ? notification.appIdentifier : notification.appName
    canvas.put(name, x: content.x + 2, y: y, style: Style(bold: true, tint: .accent), limit: stampX - content.x - 3)
    y += 1
    for line in detail.title {
      canvas.put(line, x: content.x, y: y, style: .bold)
      y += 1
    }
    for line in detail.subtitle {
      canvas.put(line, x: content.x, y: y)
      y += 1
    }
    canvas.hline(x: content.x, y: y, width: content.width, symbols.separator, style: Style(dim: true, tint: .bezel))
    y += 1
    let top = min(max(0, ui.detailTop), detail.maximumTop)
    if detail.message.isEmpty {
      let text = notification.fetched ? "(no message)" : "(not fetched: it was on the phone before the watch)"
      canvas.put(text, x: content.x, y: y, style: .dim, limit: content.width)
    }
    for (offset, line) in detail.message.dropFirst(top).prefix(detail.viewport).enumerated() {
      canvas.put(line, x: content.x, y: y + offset)
    }
    let marker = Style(bold: true, tint: .accent)
    if top > 0 { canvas.put(symbols.up, x: content.maxX - 1, y: y, style: marker) }
    if top < detail.maximumTop {
      canvas.put(symbols.down, x: content.maxX - 1, y: y + detail.viewport - 1, style: marker)
    }
    if detail.hasButtons {
      var buttons: [(String, String, Tint)] = []
      if notification.hasPositiveAction { buttons.append(("a", notification.positiveActionLabel, .good)) }
      if notification.hasNegativeAction { buttons.append(("d", notification.negativeActionLabel, .bad)) }
      drawButtons(buttons, y: layout.hintY - 1)
    }
    let scroll = detail.maximumTop > 0 ? "\(symbols.up)\(symbols.down) scroll \(symbols.dot) " : ""
    drawHint([
      "esc back \(symbols.dot) \(scroll)m mute \(symbols.dot) ? keys", "esc back \(symbols.dot) ? keys", "esc back",
    ])
  }

  /// Buttons as reverse-video pills, centred: " a Reply ".
  mutating func drawButtons(_ buttons: [(key: String, label: String, tint: Tint)], y: Int) {
    guard !buttons.isEmpty else { return }
    let gap = 2
    let room = (content.width - gap * (buttons.count - 1)) / buttons.count
    let pills = buttons.map { button -> (glyphs: [Glyph], tint: Tint) in
      let label = button.label.isEmpty ? "Action" : button.label
      let text =
        canvas.glyphs(" \(button.key) ")
        + DisplayText.truncate(
          canvas.glyphs(label), to: max(1, room - 4), ellipsis: canvas.ellipsis) + [.space]
      return (text, button.tint)
    }
    let total = pills.reduce(0) { $0 + DisplayText.width($1.glyphs) } + gap * (pills.count - 1)
    var x = content.x + max(0, (content.width - total) / 2)
    for pill in pills {
      x += canvas.put(pill.glyphs, x: x, y: y, style: Style(bold: true, reverse: true, tint: pill.tint)) + gap
    }
  }

  // MARK: - Now playing

  /// What the phone's media player plays: the app, the track, a progress bar that moves by
  /// itself from the last PlaybackInfo, the state, the volume and the queue's modes.
  mutating func drawNowPlaying() {
    guard case .connected = state.link else {
      drawDisconnected()
      return
    }
    let playing = state.nowPlaying
    let body = layout.body
    let back = ["esc back \(symbols.dot) ? keys", "esc back"]
    guard playing.available, playing.hasTrack else {
      let why =
        !playing.available
        ? "The phone shares no media player"
        : playing.playerName.isEmpty ? "No media app on the phone" : "\(playing.playerName) plays nothing"
      drawCentered(
        [(symbols.note, Style(tint: .accent)), ("", .plain), ("Nothing playing", .bold), (why, .dim)], in: body)
      drawHint(back)
      return
    }
    var y = body.y
    let app = playing.playerName.isEmpty ? "Now playing" : playing.playerName
    let queue = playing.values[.queueCount].flatMap(Int.init).flatMap { count -> String? in
      // The phone's numbers: only an index inside the queue is shown.
      guard count > 1, let index = playing.values[.queueIndex].flatMap(Int.init), (0..<count).contains(index)
      else { return nil }
      return "\(index + 1)/\(count)"
    }
    let queueX = queue.map { canvas.putRight($0, in: content, y: y, style: .dim) } ?? content.maxX
    canvas.put(
      symbols.note + " " + app, x: content.x, y: y, style: Style(bold: true, tint: .accent),
      limit: queueX - content.x - 1)
    y += 1
    // The bar and the state line sit above the hint; the text is centred above them.
    let barY = layout.hintY - 2
    // The title on two lines at most, the second ending in an ellipsis when it goes on.
    var title = DisplayText.wrap(playing.title, width: content.width, charset: charset)
    if title.count > 2 {
      let rest = title[1] + [.space] + title[2...].joined(separator: [.space])
      title = [title[0], DisplayText.truncate(rest, to: content.width, ellipsis: canvas.ellipsis)]
    }
    var lines = title.map { ($0.map(\.text).joined(), Style(bold: true)) }
    if !playing.artist.isEmpty { lines.append((playing.artist, .plain)) }
    if !playing.album.isEmpty { lines.append((playing.album, .dim)) }
    drawCentered(lines, in: Rect(x: content.x, y: y, width: content.width, height: max(0, barY - y)))
    drawProgress(playing, y: barY)
    var status = [playing.isPlaying ? "\(symbols.play) Playing" : "\(symbols.pause) Paused"]
    if let volume = playing.volume { status.append("vol \(Int((volume * 100).rounded()))%") }
    for (attribute, name) in [(EntityAttribute.shuffleMode, "shuffle"), (.repeatMode, "repeat")] {
      if let mode = playing.values[attribute].flatMap(UInt8.init).map(ShuffleMode.init(rawValue:)), mode != .off {
        status.append("\(name) \(mode.name ?? "\(mode.rawValue)")")
      }
    }
    // What does not fit goes, from the end.
    while status.count > 1
      && DisplayText.width(status.joined(separator: " \(symbols.dot) "), charset: charset) > content.width
    {
      status.removeLast()
    }
    canvas.center(
      status.joined(separator: " \(symbols.dot) "), in: content, y: barY + 1,
      style: Style(tint: playing.isPlaying ? .good : .plain))
    drawHint(
      [
        "space \(symbols.play)/\(symbols.pause) \(symbols.dot) < > track \(symbols.dot) + - vol \(symbols.dot) esc",
        "space \(symbols.play)/\(symbols.pause) \(symbols.dot) < > \(symbols.dot) esc",
      ] + back)
  }

  /// `1:20 ━━━━━━━━──────── 3:35`: the elapsed time, the bar, the duration.
  mutating func drawProgress(_ playing: NowPlaying, y: Int) {
    let elapsed = playing.elapsed(at: now) ?? 0
    let left = TrackTime.text(elapsed)
    guard let duration = playing.duration, duration > 0 else {
      canvas.center(left, in: content, y: y, style: .dim)
      return
    }
    let right = TrackTime.text(duration)
    let width = content.width - left.count - right.count - 2
    canvas.put(left, x: content.x, y: y, style: .dim)
    canvas.putRight(right, in: content, y: y, style: .dim)
    guard width > 0 else { return }
    let filled = min(width, Int((Double(width) * elapsed / duration).rounded()))
    canvas.hline(x: content.x + left.count + 1, y: y, width: filled, symbols.barFull, style: Style(tint: .accent))
    canvas.hline(
      x: content.x + left.count + 1 + filled, y: y, width: width - filled, symbols.barEmpty,
      style: Style(dim: true, tint: .bezel))
  }

  // MARK: - Incoming call

  mutating func drawCall(_ call: WatchNotification) {
    let rect = Rect(x: content.x, y: layout.body.y, width: content.width, height: layout.hintY - layout.body.y)
    canvas.fill(Rect(x: layout.inner.x, y: rect.y, width: layout.inner.width, height: rect.height + 1))
    let seconds = max(0, Int((now - call.receivedAt).components.seconds))
    let ring = symbols.ring[seconds % symbols.ring.count]
    let name = call.title.isEmpty ? "Unknown caller" : call.title
    let from = call.subtitle.isEmpty ? (call.appName.isEmpty ? "" : call.appName) : call.subtitle
    let elapsed = "\(seconds / 60):\(twoDigits(seconds % 60))"
    var lines: [(text: String, style: Style)] = [
      (ring, Style(bold: true, tint: .good)), ("", .plain), ("Incoming call", .dim), ("", .plain),
    ]
    let nameLines = DisplayText.wrap(name, width: rect.width, charset: charset).prefix(2)
    lines += nameLines.map { ($0.map(\.text).joined(), Style(bold: true)) }
    if !from.isEmpty { lines.append((from, .dim)) }
    lines += [("", .plain), (elapsed, .dim)]
    // The buttons need two rows of their own below the text.
    let room = rect.height - 2
    while lines.count > room, let index = lines.firstIndex(where: { $0.text.isEmpty }) ?? lines.indices.first {
      lines.remove(at: index)
    }
    drawCentered(lines, in: Rect(x: rect.x, y: rect.y, width: rect.width, height: room))
    var buttons: [(String, String, Tint)] = []
    if call.hasPositiveAction {
      buttons.append(("a", call.positiveActionLabel.isEmpty ? "Accept" : call.positiveActionLabel, .good))
    }
    if call.hasNegativeAction {
      buttons.append(("d", call.negativeActionLabel.isEmpty ? "Decline" : call.negativeActionLabel, .bad))
    }
    drawButtons(buttons, y: rect.maxY - 1)
    drawHint(["esc hide \(symbols.dot) m mute calls \(symbols.dot) q quit", "esc hide"])
  }

  // MARK: - Overlays

  /// A toast in a box above the hint line.
  mutating func drawToast(_ toast: Toast) {
    let box = Rect(x: layout.inner.x + 1, y: layout.hintY - 3, width: layout.inner.width - 2, height: 3)
    let tint: Tint = toast.kind == .info ? .notice : .bad
    canvas.fill(Rect(x: layout.inner.x, y: box.y, width: layout.inner.width, height: box.height))
    canvas.box(box, frame: symbols.innerFrame, style: Style(bold: toast.kind != .info, tint: tint))
    var x = box.x + 2
    if let category = toast.category {
      x += canvas.put(Symbols.glyph(category, charset), x: x, y: box.y + 1, style: Style(tint: .accent)) + 1
    } else if toast.kind == .error {
      x += canvas.put("!", x: x, y: box.y + 1, style: Style(bold: true, tint: .bad)) + 1
    }
    let limit = box.maxX - 2 - x
    canvas.put(
      toast.fitting(limit, charset: charset), x: x, y: box.y + 1, style: Style(bold: toast.kind == .important),
      limit: limit)
  }

  mutating func drawToastLine(_ toast: Toast) {
    let y = layout.hintY
    let tint: Tint = toast.kind == .info ? .notice : .bad
    let style = Style(bold: toast.kind != .info, reverse: true, tint: tint)
    canvas.fill(Rect(x: layout.inner.x, y: y, width: layout.inner.width, height: 1), style: style)
    var x = content.x
    if let category = toast.category {
      x += canvas.put(Symbols.glyph(category, charset), x: x, y: y, style: style) + 1
    } else if toast.kind == .error {
      x += canvas.put("!", x: x, y: y, style: style) + 1
    }
    canvas.put(toast.fitting(content.maxX - x, charset: charset), x: x, y: y, style: style, limit: content.maxX - x)
  }

  mutating func drawHelp() {
    var lines: [(keys: String, meaning: String)] = KeyMap.help.map {
      (charset == .unicode ? $0.unicode : $0.ascii, $0.meaning)
    }
    let muted = ui.settings.muted.sorted { $0.rawValue < $1.rawValue }.map { Symbols.name($0) }
    lines.append(("", ""))
    lines.append(("muted", muted.isEmpty ? "nothing" : muted.joined(separator: ", ")))
    let quiet = ui.isQuiet(state, now: now) ? " (now)" : ""
    lines.append(("quiet", ui.settings.quietHours.map { "\($0)\(quiet)" } ?? "off"))
    lines.append(("alert", ui.settings.alert.rawValue))
    let inner = layout.inner
    let width = min(inner.width - 2, 36)
    let height = min(inner.height, lines.count + 2)
    let box = Rect(
      x: inner.x + (inner.width - width) / 2, y: inner.y + (inner.height - height) / 2, width: width, height: height)
    canvas.fill(box)
    canvas.box(box, frame: symbols.innerFrame, style: Style(bold: true, tint: .accent))
    canvas.put(" Keys ", x: box.x + 2, y: box.y, style: Style(bold: true, tint: .accent))
    let keyWidth = 10
    for (offset, line) in lines.prefix(height - 2).enumerated() {
      let y = box.y + 1 + offset
      canvas.put(line.keys, x: box.x + 2, y: y, style: .bold, limit: keyWidth)
      canvas.put(line.meaning, x: box.x + 2 + keyWidth + 1, y: y, limit: box.maxX - 2 - (box.x + 3 + keyWidth))
    }
  }
}
