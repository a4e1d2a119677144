import Watch

/// Where the watch sits in the terminal. The case is about as wide in columns as twice its
/// height in rows (terminal cells are twice as tall as wide), so it looks square-ish like a
/// watch; it grows with the terminal up to 56x26, with a strap above and below when there is
/// room, and it is centred.
struct FaceLayout: Hashable {
  /// The smallest case that still shows a usable list.
  static let minimum = Size(width: 34, height: 12)
  static let maximum = Size(width: 56, height: 26)

  let size: Size
  /// The case, border included.
  let bezel: Rect
  let straps: Bool

  init?(size: Size) {
    guard size.width >= Self.minimum.width, size.height >= Self.minimum.height else { return nil }
    self.size = size
    let straps = size.height >= Self.minimum.height + 4
    var height = min(straps ? size.height - 2 : size.height, Self.maximum.height)
    let width = min(size.width, max(Self.minimum.width, min(2 * height + 2, Self.maximum.width)))
    height = min(height, max(Self.minimum.height, width / 2 + 1))
    self.straps = straps
    bezel = Rect(x: (size.width - width) / 2, y: (size.height - height) / 2, width: width, height: height)
  }

  /// Inside the border.
  var inner: Rect { bezel.inset(1, 1) }
  /// Where text goes: inside the border with one column of margin on each side.
  var content: Rect { Rect(x: inner.x + 1, y: inner.y, width: inner.width - 2, height: inner.height) }
  var statusY: Int { inner.y }
  var separatorY: Int { inner.y + 1 }
  var hintY: Int { inner.maxY - 1 }
  /// Between the separator and the hint line.
  var body: Rect { Rect(x: content.x, y: inner.y + 2, width: content.width, height: inner.height - 3) }
  /// Notifications take two rows each.
  var listCapacity: Int { max(1, body.height / 2) }
}

/// The detail view's parts, measured for a width: shared by the screen model (to draw) and
/// the key handling (to know how far a message scrolls).
struct DetailLayout {
  var title: [[Glyph]]
  var subtitle: [[Glyph]]
  var message: [[Glyph]]
  /// Rows the message has on screen.
  var viewport: Int
  var hasButtons: Bool

  init(_ notification: WatchNotification, layout: FaceLayout, charset: Charset) {
    let width = layout.content.width
    func lines(_ text: String, _ maximum: Int) -> [[Glyph]] {
      guard !text.isEmpty else { return [] }
      var wrapped = DisplayText.wrap(text, width: width, charset: charset)
      if wrapped.count > maximum {
        wrapped = Array(wrapped.prefix(maximum))
        let ellipsis = Glyph(charset == .unicode ? "…" : ".", width: 1)
        wrapped[maximum - 1] = DisplayText.truncate(
          wrapped[maximum - 1] + [ellipsis, ellipsis], to: width, ellipsis: ellipsis)
      }
      return wrapped
    }
    title = lines(notification.title, 2)
    subtitle = lines(notification.subtitle, 2)
    let body = notification.message.isEmpty && !notification.fetched ? "" : notification.message
    message = DisplayText.wrap(body, width: width - 1, charset: charset)
    while message.last?.isEmpty == true { message.removeLast() }
    hasButtons = notification.hasPositiveAction || notification.hasNegativeAction
    // App line, title, subtitle, a rule; buttons above the hint line.
    let used = 1 + title.count + subtitle.count + 1 + (hasButtons ? 1 : 0)
    viewport = max(1, layout.body.height - used)
  }

  /// The furthest the message scrolls.
  var maximumTop: Int { max(0, message.count - viewport) }
}
