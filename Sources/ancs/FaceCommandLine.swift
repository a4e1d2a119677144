import Links
import Phone
import Processes
import Watch
import WatchDisplay

#if canImport(Glibc)
  import Glibc
#endif

/// The watch face's options, shared by `ancs watch` and `ancs demo`.
enum FaceCommandLine {
  /// The options' help lines, descriptions starting at `column` (as the command's others do).
  static func usage(column: Int) -> String {
    let options: [(String, [String])] = [
      (
        "--mute CATEGORY",
        [
          "list but never toast or ring this category (repeatable):",
          "other, incomingCall, missedCall, voicemail, social, schedule,",
          "email, news, healthAndFitness, businessAndFinance, location,", "entertainment",
        ]
      ),
      ("--quiet-hours TIMES", ["do not disturb, e.g. 22:00-07:00 (the phone's time)"]),
      (
        "--config FILE",
        [
          "face settings, `key = value` lines: mute, quiet-hours,", "color (on/off), alert (bell/flash/off),",
          "message-seconds (how long a message stays, default 3)",
        ]
      ),
      ("--no-color", ["monochrome (the NO_COLOR variable is honoured too)"]),
    ]
    var lines: [String] = []
    for (name, text) in options {
      let option = "  " + name
      if option.count + 1 > column {
        lines.append(option)
      } else {
        lines.append(option + String(repeating: " ", count: column - option.count) + text[0])
      }
      let rest = option.count + 1 > column ? text : Array(text.dropFirst())
      lines += rest.map { String(repeating: " ", count: column) + $0 }
    }
    return lines.joined(separator: "\n")
  }

  /// Reads --config, then --mute, --quiet-hours and --no-color on top of it.
  static func settings(_ args: inout Arguments) throws(UsageError) -> FaceSettings {
    var settings = FaceSettings()
    if let path = try args.value("--config") {
      let text: String
      do { text = try readTextFile(path) } catch { throw UsageError("\(path): \(error)") }
      do { try settings.apply(config: text, file: path) } catch { throw UsageError("\(error)") }
    }
    for name in args.values("--mute") {
      do { settings.muted.insert(try FaceSettings.category(named: name)) } catch {
        throw UsageError("--mute: \(error)")
      }
    }
    if let text = try args.value("--quiet-hours") {
      do { settings.quietHours = try QuietHours(parsing: text) } catch { throw UsageError("--quiet-hours: \(error)") }
    }
    if args.flag("--no-color", "--no-colour") { settings.color = false }
    return settings
  }

  /// Runs the face; nil (after saying why) when the terminal cannot take it, so the caller
  /// prints JSON events instead.
  static func run(_ engine: WatchEngine, _ settings: FaceSettings, until deadline: Duration?) async -> Int32? {
    do {
      let exit = try await WatchFace.run(engine: engine, settings: settings, until: deadline)
      if let message = exit.message { printError("ancs: \(message)") }
      return exit.code
    } catch {
      printError("ancs: no watch face: \(error); printing JSON events (as --headless)")
      return nil
    }
  }

  /// Appends the phone's events to `path` as JSON lines (`ancs phone --commands jsonl`'s
  /// event lines), for scripts and tests that watch what the phone received: each line as
  /// the phone reports it (its observer), so none is lost at the end. The file stays open
  /// as long as the process.
  static func phoneLog(_ phone: Phone, path: String) throws(UsageError) {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    guard fd >= 0 else {
      throw UsageError("--phone-log \(path): cannot open for writing (\(errnoText(errno)))")
    }
    phone.observe { event in writeLine(PhoneCommandLine.eventJSON(event).description, to: fd) }
  }
}
