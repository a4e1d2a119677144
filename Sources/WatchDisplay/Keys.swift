/// A key as the terminal reports it, before it means anything.
public enum Key: Hashable, Sendable {
  case up
  case down
  case left
  case right
  case pageUp
  case pageDown
  case home
  case end
  case enter
  case escape
  case backspace
  case tab
  /// The terminal changed size.
  case resize
  case character(Character)
}

/// What the wearer asks for. The same intent means different things on different screens:
/// `down` moves the cursor in the list and scrolls a message.
public enum FaceIntent: Hashable, Sendable {
  case up
  case down
  case pageUp
  case pageDown
  case top
  case bottom
  case open
  case back
  case positive
  case negative
  case mute
  case help
  case quit
  /// The now-playing screen, and back.
  case nowPlaying
  /// Remote commands to the phone's media player (the Apple Media Service).
  case nextTrack
  case previousTrack
  case volumeUp
  case volumeDown
}

/// Keys to intents: the key map of the README, as a table.
public enum KeyMap {
  public static func intent(for key: Key) -> FaceIntent? {
    switch key {
    case .up, .character("k"): return .up
    case .down, .character("j"): return .down
    case .pageUp, .character("b"): return .pageUp
    case .pageDown, .character(" "), .character("f"): return .pageDown
    case .home, .character("g"): return .top
    case .end, .character("G"): return .bottom
    case .enter, .right, .character("\n"), .character("\r"), .character("l"): return .open
    case .escape, .backspace, .left, .character("h"): return .back
    case .character("a"), .character("A"): return .positive
    case .character("d"), .character("D"): return .negative
    case .character("m"), .character("M"): return .mute
    case .character("?"): return .help
    case .character("q"), .character("Q"): return .quit
    case .character("p"), .character("P"): return .nowPlaying
    case .character(">"), .character("."): return .nextTrack
    case .character("<"), .character(","): return .previousTrack
    case .character("+"), .character("="): return .volumeUp
    case .character("-"), .character("_"): return .volumeDown
    default: return nil
    }
  }

  /// The help overlay and the README's key map: keys (Unicode, ASCII) and what they do.
  static let help: [(unicode: String, ascii: String, meaning: String)] = [
    ("↑ ↓  k j", "Up Dn k j", "move, scroll"),
    ("⏎", "Enter", "open"),
    ("esc ⌫", "Esc Bksp", "back"),
    ("a", "a", "positive action"),
    ("d", "d", "negative action"),
    ("m", "m", "mute category"),
    ("p", "p", "now playing"),
    ("space ⏎", "Space", "play / pause there"),
    ("< > + -", "< > + -", "track, volume"),
    ("?", "?", "this help"),
    ("q", "q", "quit"),
  ]
}
