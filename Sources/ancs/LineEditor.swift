import CEdit
import Foundation
import Phone
import Processes
import Runtime
import Wire

#if canImport(Glibc)
  import Glibc
#endif

/// The phone's console at a terminal: lines read through libedit (emacs keys, history with
/// Up and Down, Ctrl-R searching it backwards, Tab completing), on a thread of its own so
/// no Swift concurrency thread ever blocks on the terminal.
///
/// While it runs, whatever the program writes to the terminal (`writeLine`) goes through it:
/// the thread reading keys takes the lines, clears the line being edited, writes them and
/// draws the prompt and the line again below them. libedit is only ever called from that
/// thread. The history is kept in `historyFile`, the newest `historySize` lines.
final class LineEditor: @unchecked Sendable {
  static let prompt = "phone> "
  static let historySize: Int32 = 1000

  /// ~/.ancs_phone_history; nil without a HOME.
  static var defaultHistoryFile: String? {
    guard let home = getenv("HOME").map({ String(cString: $0) }), !home.isEmpty else { return nil }
    return (home.hasSuffix("/") ? home : home + "/") + ".ancs_phone_history"
  }

  /// Whether standard input and standard output are both terminals, of a kind that moves
  /// its cursor (TERM set, and not dumb).
  static var isInteractive: Bool {
    guard isatty(0) == 1 && isatty(1) == 1, let type = getenv("TERM").map({ String(cString: $0) }) else { return false }
    return !type.isEmpty && type != "dumb"
  }

  private let historyFile: String?
  private let complete: @Sendable (String, Int) -> ConsoleCompletion
  private let promptText: UnsafeMutablePointer<CChar>
  /// Standard output and standard error, each when it is the terminal being edited on.
  private let routed: Set<Int32>
  /// The pipe that wakes the thread reading keys when there is output or a stop.
  private let wakeRead: Int32
  private let wakeWrite: Int32
  private let shared = Locked(Shared())

  private struct Shared {
    /// Lines to write, with their file descriptor, oldest first.
    var pending: [(Int32, String)] = []
    var wakeSent = false
    var stopRequested = false
    /// SIGCONT came since the reading thread last looked.
    var continued = false
    var finished = false
    var stopWaiters: [CheckedContinuation<Void, Never>] = []
  }

  // The reading thread's own state.
  private var pushedBack: UInt8?
  private var size: (rows: Int32, columns: Int32) = (0, 0)
  private var warnedHistory = false
  private var signalSources: [any DispatchSourceSignal] = []

  /// The editor that takes the terminal's output now, if any.
  private static let current = Locked<LineEditor?>(nil)
  /// The terminal's settings before the editor first changed them.
  private static let savedTerminal = Locked<termios?>(nil)

  private init(historyFile: String?, complete: @escaping @Sendable (String, Int) -> ConsoleCompletion) throws {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw FileProblem("no pipe for the line editor") }
    for fd in fds {
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      _ = fcntl(fd, F_SETFL, O_NONBLOCK)
    }
    wakeRead = fds[0]
    wakeWrite = fds[1]
    self.historyFile = historyFile
    self.complete = complete
    promptText = strdup(Self.prompt)
    var routed: Set<Int32> = [1]
    if isatty(2) == 1 && Self.sameTerminal(1, 2) { routed.insert(2) }
    self.routed = routed
  }

  deinit {
    free(promptText)
  }

  /// Starts reading the terminal's lines; they end at Ctrl-D on an empty line or `stop()`.
  /// Nil (and nothing changed) when the terminal cannot be edited on.
  static func start(
    historyFile: String?, complete: @escaping @Sendable (String, Int) -> ConsoleCompletion
  ) -> (LineEditor, AsyncStream<String>)? {
    guard let editor = try? LineEditor(historyFile: historyFile, complete: complete) else { return nil }
    // libedit reads and draws in the C library's character set: make it UTF-8, as the
    // lines are (before the thread starts: setlocale is not safe beside other threads' use).
    setlocale(LC_CTYPE, "")
    if String(cString: nl_langinfo(nl_item(CODESET))) != "UTF-8" { setlocale(LC_CTYPE, "C.UTF-8") }
    var settings = termios()
    if tcgetattr(0, &settings) == 0 { savedTerminal.withLock { $0 = $0 ?? settings } }
    current.withLock { $0 = editor }
    editor.wakeOnSignals()
    let (stream, continuation) = AsyncStream<String>.makeStream()
    detachThread(stackSize: 8 << 20) { editor.run(continuation) }
    return (editor, stream)
  }

  /// Ends reading (the line being typed is dropped) and gives the terminal back; returns
  /// once the reading thread has let go of it.
  func stop() async {
    await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
      let done = shared.withLock { shared -> Bool in
        if shared.finished { return true }
        shared.stopRequested = true
        shared.stopWaiters.append(waiter)
        wakeLocked(&shared)
        return false
      }
      if done { waiter.resume() }
    }
  }

  /// For a signal's clean-up, from any thread, just before the process exits: the terminal's
  /// settings as they were, and the cursor on a line of its own.
  static func restoreTerminal() {
    guard current.withLock({ $0 }) != nil, var settings = savedTerminal.withLock({ $0 }) else { return }
    tcsetattr(0, TCSANOW, &settings)
    writeAll("\r\n", to: 1)
  }

  /// Takes `text` (one or more lines, without the last newline) for `fd` when an editor is
  /// drawing on that terminal; false when the caller is to write it itself.
  static func take(_ text: String, for fd: Int32) -> Bool {
    guard let editor = current.withLock({ $0 }), editor.routed.contains(fd) else { return false }
    return editor.shared.withLock { shared in
      guard !shared.finished else { return false }
      shared.pending.append((fd, text))
      editor.wakeLocked(&shared)
      return true
    }
  }

  /// SIGWINCH (a new size) and SIGCONT (back from Ctrl-Z, the terminal's settings perhaps
  /// changed by the shell) wake the reading thread, which sets the line up again.
  private func wakeOnSignals() {
    for number in [SIGWINCH, SIGCONT] {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { [weak self] in
        guard let self else { return }
        shared.withLock { shared in
          if number == SIGCONT { shared.continued = true }
          wakeLocked(&shared)
        }
      }
      source.resume()
      signalSources.append(source)
    }
  }

  private func wakeLocked(_ shared: inout Shared) {
    guard !shared.wakeSent, !shared.finished else { return }
    shared.wakeSent = true
    var byte: UInt8 = 1
    _ = write(wakeWrite, &byte, 1)
  }

  /// Whether two descriptors are the same terminal device.
  private static func sameTerminal(_ a: Int32, _ b: Int32) -> Bool {
    var first = stat()
    var second = stat()
    return fstat(a, &first) == 0 && fstat(b, &second) == 0 && first.st_rdev == second.st_rdev
  }

  // MARK: - The reading thread

  private func run(_ continuation: AsyncStream<String>.Continuation) {
    defer { finish(continuation) }
    guard let editLine = ancs_el_init("ancs") else { return }
    defer { el_end(editLine) }
    guard let history = history_init() else { return }
    defer { history_end(history) }
    ancs_el_set_clientdata(editLine, Unmanaged.passUnretained(self).toOpaque())
    ancs_el_set_prompt(editLine, lineEditorPrompt)
    ancs_el_set_editor(editLine, "emacs")
    // The program handles SIGINT and SIGTERM itself (restoreTerminal).
    ancs_el_set_signal(editLine, 0)
    ancs_el_set_getcfn(editLine, lineEditorReadCharacter)
    ancs_history_setsize(history, Self.historySize)
    ancs_history_setunique(history, 1)
    ancs_el_set_history(editLine, history)
    // ~/.editrc, as other libedit programs; the keys below stay the console's.
    el_source(editLine, nil)
    ancs_el_addfn(editLine, "ancs-complete", "complete a command, an app or a key", lineEditorComplete)
    ancs_el_bind(editLine, "^I", "ancs-complete")
    ancs_el_bind(editLine, "^R", "em-inc-search-prev")
    var saving = loadHistory(history)
    while true {
      var count: Int32 = 0
      let text = el_gets(editLine, &count)
      if shared.withLock({ $0.stopRequested }) { return }
      guard let text, count > 0 else {
        writeAll("\r\u{1B}[K", to: 1)
        printLine("phone: end of console input; still serving (Ctrl-C or SIGTERM stops the phone)")
        return
      }
      var line = String(cString: text)
      while line.hasSuffix("\n") || line.hasSuffix("\r") { line.removeLast() }
      if !line.allSatisfy(\.isWhitespace) {
        ancs_history_enter(history, line)
        if saving, let historyFile, ancs_history_save(history, historyFile) < 0 {
          saving = false
          warn("phone: cannot write the console history to \(historyFile); it is kept for this session only")
        }
      }
      continuation.yield(line)
    }
  }

  /// Reads the history file; false when it is not to be written (it exists but is not
  /// libedit's history).
  private func loadHistory(_ history: OpaquePointer) -> Bool {
    guard let historyFile else { return false }
    guard ancs_history_load(history, historyFile) < 0, access(historyFile, F_OK) == 0 else { return true }
    warn("phone: cannot read the console history in \(historyFile); it is left alone and not written")
    return false
  }

  private func warn(_ line: String) {
    guard !warnedHistory else { return }
    warnedHistory = true
    writeAll(line + "\n", to: 2)
  }

  private func finish(_ continuation: AsyncStream<String>.Continuation) {
    for source in signalSources { source.cancel() }
    let waiters = shared.withLock { shared -> [CheckedContinuation<Void, Never>] in
      for (fd, text) in shared.pending { writeAll(text + "\n", to: fd) }
      shared.pending = []
      shared.finished = true
      close(wakeRead)
      close(wakeWrite)
      defer { shared.stopWaiters = [] }
      return shared.stopWaiters
    }
    Self.current.withLock { if $0 === self { $0 = nil } }
    continuation.finish()
    for waiter in waiters { waiter.resume() }
  }

  /// libedit's next character: waits for a key or for output to write. 1 with a character,
  /// 0 at the end of input (or to stop), -1 on an error.
  fileprivate func readCharacter(_ editLine: OpaquePointer, into character: UnsafeMutablePointer<wchar_t>) -> Int32 {
    if let byte = pushedBack {
      pushedBack = nil
      return decode(byte, into: character)
    }
    while true {
      let (lines, stop, continued) = shared.withLock { shared -> ([(Int32, String)], Bool, Bool) in
        defer {
          shared.pending = []
          shared.continued = false
        }
        return (shared.pending, shared.stopRequested, shared.continued)
      }
      if continued && !stop {
        // The settings libedit edits with again (after the shell's own), the line redrawn.
        ancs_el_prep_term(editLine, 0)
        ancs_el_prep_term(editLine, 1)
        writeAll("\r", to: 1)
        ancs_el_refresh(editLine)
      }
      if !lines.isEmpty || stop {
        eraseLine(editLine)
        for (fd, text) in lines { writeAll(text.replacingOccurrences(of: "\n", with: "\r\n") + "\r\n", to: fd) }
        if stop { return 0 }
        ancs_el_refresh(editLine)
      }
      followResize(editLine)
      var watched = [
        pollfd(fd: 0, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
      ]
      let ready = poll(&watched, 2, -1)
      if ready < 0 {
        if errno == EINTR { continue }
        return -1
      }
      if watched[1].revents != 0 {
        var drain = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &drain, drain.count) > 0 {}
        shared.withLock { $0.wakeSent = false }
        continue
      }
      guard watched[0].revents != 0 else { continue }
      switch readByte() {
      case .byte(let byte): return decode(byte, into: character)
      case .end: return 0
      case .again: continue
      case .error: return -1
      }
    }
  }

  /// After the terminal changed size: libedit lays the line out again, drawn afresh where
  /// the terminal has rewrapped it.
  private func followResize(_ editLine: OpaquePointer) {
    var rows: Int32 = 0
    var columns: Int32 = 0
    ancs_terminal_size(1, &rows, &columns)
    guard (rows, columns) != size else { return }
    let first = size == (0, 0)
    size = (rows, columns)
    guard !first else { return }
    el_resize(editLine)
    eraseLine(editLine)
    ancs_el_refresh(editLine)
  }

  private enum ByteRead {
    case byte(UInt8)
    case end, again, error
  }

  private func readByte() -> ByteRead {
    var byte: UInt8 = 0
    let count = read(0, &byte, 1)
    if count == 1 { return .byte(byte) }
    if count == 0 { return .end }
    return errno == EINTR || errno == EAGAIN ? .again : .error
  }

  /// One character from UTF-8 starting with `first` (the terminal's bytes); U+FFFD for what
  /// is not UTF-8.
  private func decode(_ first: UInt8, into character: UnsafeMutablePointer<wchar_t>) -> Int32 {
    let length: Int
    var value: UInt32
    switch first {
    case 0..<0x80:
      character.pointee = wchar_t(first)
      return 1
    case 0xC2..<0xE0: (length, value) = (2, UInt32(first & 0x1F))
    case 0xE0..<0xF0: (length, value) = (3, UInt32(first & 0x0F))
    case 0xF0..<0xF5: (length, value) = (4, UInt32(first & 0x07))
    default:
      character.pointee = 0xFFFD
      return 1
    }
    for _ in 1..<length {
      guard case .byte(let next) = readByte() else {
        value = 0xFFFD
        break
      }
      guard next & 0xC0 == 0x80 else {
        pushedBack = next
        value = 0xFFFD
        break
      }
      value = value << 6 | UInt32(next & 0x3F)
    }
    character.pointee = wchar_t(bitPattern: Unicode.Scalar(value) != nil ? value : 0xFFFD)
    return 1
  }

  /// The line as libedit holds it: its characters and the cursor's place among them.
  private func line(_ editLine: OpaquePointer) -> (characters: [Unicode.Scalar], cursor: Int) {
    guard let info = el_wline(editLine)?.pointee, let buffer = info.buffer else { return ([], 0) }
    let count = max(0, buffer.distance(to: info.lastchar ?? buffer))
    let cursor = min(count, max(0, buffer.distance(to: info.cursor ?? buffer)))
    let characters = (0..<count).map { Unicode.Scalar(UInt32(bitPattern: buffer[$0])) ?? "\u{FFFD}" }
    return (characters, cursor)
  }

  /// Rows of the terminal the prompt and line take, and the one the cursor is on (0 the
  /// first), as libedit lays them out: a character that does not fit goes to the next row.
  private func rows(_ editLine: OpaquePointer) -> (cursor: Int, last: Int) {
    let (characters, cursor) = line(editLine)
    let width = size.columns > 0 ? Int(size.columns) : 80
    var row = 0
    var column = Self.prompt.count
    var cursorRow = 0
    for (index, character) in characters.enumerated() {
      if index == cursor { cursorRow = row }
      if character == "\n" {
        row += 1
        column = 0
        continue
      }
      let cells = Int(wcwidth(wchar_t(bitPattern: character.value)))
      let shown = cells < 0 ? 2 : cells
      if column + shown > width {
        row += 1
        column = 0
      }
      column += shown
      if column >= width {
        row += 1
        column = 0
      }
    }
    if cursor >= characters.count { cursorRow = row }
    return (cursorRow, row)
  }

  /// Clears the prompt and the line from the screen, leaving the cursor where the prompt was.
  private func eraseLine(_ editLine: OpaquePointer) {
    let up = rows(editLine).cursor
    writeAll("\r" + (up > 0 ? "\u{1B}[\(up)A" : "") + "\u{1B}[J", to: 1)
  }

  /// Tab: completes the word before the cursor, or lists what it could become.
  fileprivate func completeWord(_ editLine: OpaquePointer) -> UInt8 {
    let (characters, cursor) = line(editLine)
    var text = ""
    text.unicodeScalars.append(contentsOf: characters)
    let completion = complete(text, cursor)
    if let replacement = completion.replacement {
      el_deletestr(editLine, Int32(cursor - completion.start))
      guard el_insertstr(editLine, replacement) == 0 else { return UInt8(CC_REFRESH_BEEP) }
      return UInt8(CC_REFRESH)
    }
    guard !completion.candidates.isEmpty else { return UInt8(CC_REFRESH_BEEP) }
    // Below the line: the candidates in columns; then the prompt and the line again.
    let (cursorRow, lastRow) = rows(editLine)
    let widest = completion.candidates.map(\.count).max() ?? 0
    let width = size.columns > 0 ? Int(size.columns) : 80
    let perRow = max(1, (width + 2) / (widest + 2))
    var listing = String(repeating: "\r\n", count: lastRow - cursorRow + 1)
    for start in stride(from: 0, to: completion.candidates.count, by: perRow) {
      let row = completion.candidates[start..<min(start + perRow, completion.candidates.count)]
      listing += row.map { $0 + String(repeating: " ", count: widest - $0.count) }.joined(separator: "  ")
      listing += "\r\n"
    }
    writeAll(listing, to: 1)
    ancs_el_refresh(editLine)
    return UInt8(CC_NORM)
  }

  fileprivate static func owner(of editLine: OpaquePointer) -> LineEditor? {
    guard let data = ancs_el_clientdata(editLine) else { return nil }
    return Unmanaged<LineEditor>.fromOpaque(data).takeUnretainedValue()
  }

  fileprivate var promptPointer: UnsafeMutablePointer<CChar> { promptText }
}

// libedit's callbacks: C functions, which find their editor through EL_CLIENTDATA.

private let lineEditorPrompt: ancs_el_prompt_fn = { editLine in
  editLine.flatMap(LineEditor.owner(of:))?.promptPointer
}

private let lineEditorReadCharacter: el_rfunc_t = { editLine, character in
  guard let editLine, let character, let editor = LineEditor.owner(of: editLine) else { return -1 }
  return editor.readCharacter(editLine, into: character)
}

private let lineEditorComplete: ancs_el_command_fn = { editLine, _ in
  guard let editLine, let editor = LineEditor.owner(of: editLine) else { return UInt8(CC_ERROR) }
  return editor.completeWord(editLine)
}
