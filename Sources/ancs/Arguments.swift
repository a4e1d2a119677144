import Links
import Processes
import Runtime
import Sockets
import Wire

#if canImport(Glibc)
  import Glibc
#endif

/// The arguments of one subcommand, taken option by option; what is left at the end is an
/// error naming it.
struct Arguments {
  private var items: [String]
  let command: String

  init(_ items: [String], command: String) {
    self.items = items
    self.command = command
  }

  /// True (and consumed) when any of `names` is present.
  mutating func flag(_ names: String...) -> Bool {
    guard let index = items.firstIndex(where: names.contains) else { return false }
    items.remove(at: index)
    return true
  }

  /// The value after the last occurrence of `name` (`--name VALUE` or `--name=VALUE`).
  mutating func value(_ name: String) throws(UsageError) -> String? {
    values(name).last
  }

  /// Every value of a repeatable option, in order.
  mutating func values(_ name: String) -> [String] {
    var found: [String] = []
    var index = 0
    while index < items.count {
      let item = items[index]
      if item == name {
        guard index + 1 < items.count, !items[index + 1].hasPrefix("--") else {
          missing = name
          items.remove(at: index)
          continue
        }
        found.append(items[index + 1])
        items.removeSubrange(index...index + 1)
      } else if item.hasPrefix(name + "=") {
        found.append(String(item.dropFirst(name.count + 1)))
        items.remove(at: index)
      } else {
        index += 1
      }
    }
    return found
  }

  private var missing: String?

  /// An integer option within `range`.
  mutating func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
    guard let text = try value(name) else { return nil }
    guard let number = Int(text), range.contains(number) else {
      throw UsageError("\(name) needs a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
    }
    return number
  }

  /// A number of seconds within `range`.
  mutating func seconds(_ name: String, in range: ClosedRange<Double>) throws(UsageError) -> Double? {
    guard let text = try value(name) else { return nil }
    guard let number = Double(text), number.isFinite, range.contains(number) else {
      throw UsageError(
        "\(name) needs a number of seconds from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
    }
    return number
  }

  /// -v (info) or -vv (debug); trace with -vvv.
  mutating func logger() -> Logger {
    var level: Logger.Level?
    if flag("-vvv") {
      level = .trace
    } else if flag("-vv") {
      level = .debug
    } else if flag("-v", "--verbose") {
      level = .info
    }
    guard let level else { return .none }
    return Logger(level: level) { _, message in printError(message) }
  }

  /// The arguments that are not options (do not start with "-"), taken.
  mutating func positionals() -> [String] {
    let found = items.filter { !$0.hasPrefix("-") }
    items.removeAll { !$0.hasPrefix("-") }
    return found
  }

  /// Fails on anything not taken.
  func finish() throws(UsageError) {
    if let missing { throw UsageError("\(missing) needs a value; try 'ancs \(command) --help'") }
    if let first = items.first {
      throw UsageError("unknown argument '\(first)' for \(command); try 'ancs \(command) --help'")
    }
  }
}

/// An address a phone listens on or a watch connects to from another process.
func twoProcessAddress(_ text: String) throws(UsageError) -> LinkAddress {
  do { return try LinkAddress(parsing: text, allowingMemory: false) } catch { throw UsageError("\(error)") }
}

/// The air-time model's link for `--air PHY,CI,MTU,DLE`.
func airParameters(_ text: String) throws(UsageError) -> AirParameters {
  do { return try AirParameters(parsing: text) } catch { throw UsageError("--air: \(error)") }
}

/// A btsnoop capture file for `--capture FILE`, written as it happens (it can be followed:
/// `ancs inspect --follow FILE`, Wireshark).
func captureWriter(_ path: String) throws(UsageError) -> BtsnoopWriter {
  do { return try BtsnoopWriter(path: path, live: true) } catch { throw UsageError("\(error)") }
}

/// Whether standard output is a terminal.
var stdoutIsTerminal: Bool { isatty(1) == 1 }

/// Writes a line on standard output at once, unbuffered (scripts read events as they come).
func printLine(_ line: String) { writeLine(line, to: 1) }

/// Writes a line to standard error (unbuffered).
func printError(_ line: String) { writeLine(line, to: 2) }

/// Through the line editor when it is drawing on that terminal (LineEditor.take).
func writeLine(_ line: String, to fd: Int32) {
  if LineEditor.take(line, for: fd) { return }
  writeAll(line + "\n", to: fd)
}
