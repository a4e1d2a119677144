/// Scenarios that ship with the binary.
public enum BuiltInScenarios {
  /// Names and texts, for `--scenario NAME` and listings.
  public static let all: [(name: String, text: String)] = [("demo", demoText)]

  /// The built-in scenario called `name`, validated; nil when there is none by that name.
  public static func named(_ name: String) throws(ScenarioError) -> Scenario? {
    guard let entry = all.first(where: { $0.name == name }) else { return nil }
    return try Scenario(parsing: entry.text, file: "built-in:" + entry.name)
  }

  /// The demo, validated (tests check that it is).
  public static var demo: Scenario {
    // The text is a constant checked by ScenarioTests; it cannot fail at run time.
    try! Scenario(parsing: demoText, file: "built-in:demo")
  }

  /// New Year's Eve on a phone, in 86 seconds: every category, a long mail in three
  /// languages, a call that rings and stops, a modify, removals, the battery running down
  /// and the clock jumping to 15 seconds before midnight.
  public static let demoText = #"""
    {
      "name": "demo",
      "comment": "New Year's Eve on a phone: every ANCS category, in 86 seconds.",
      "duration": 86,
      "apps": [
        {"id": "com.apple.MobileSMS", "name": "Messages"},
        {"id": "com.apple.mobilemail", "name": "Mail"},
        {"id": "com.apple.mobilecal", "name": "Calendar"},
        {"id": "com.example.dailyplanet", "name": "Daily Planet"},
        {"id": "com.example.stride", "name": "Stride"},
        {"id": "com.example.nordbank", "name": "Nordbank"},
        {"id": "com.apple.Maps", "name": "Maps"},
        {"id": "com.example.cinema", "name": "Cinéma Lumière"},
        {"id": "com.example.chat", "name": "Chat"},
        {"id": "com.apple.Preferences", "name": "Settings"}
      ],
      "notifications": [
        {"id": "maya", "app": "com.apple.MobileSMS", "category": "social", "title": "Maya",
         "message": "Are we still on for dinner tonight? 🍜",
         "positiveAction": "Reply", "negativeAction": "Dismiss"},
        {"id": "mail", "app": "com.apple.mobilemail", "category": "email", "title": "Zoë Müller",
         "subtitle": "Kyōto in spring 🌸",
         "message": "Hi!\n\nThe ryokan is booked: 京都の旅館「花屋」, two nights from 3 April. I found a café near Nishiki Market that serves matcha crème brûlée, so breakfast is sorted ☕️🍮\n\nCould you check the trains from Ōsaka? 新大阪 → 京都 is only 14 minutes on the Shinkansen 🚄\n\nBisous,\nZoë",
         "positiveAction": "Mark as Read", "negativeAction": "Trash"},
        {"id": "dinner", "app": "com.apple.mobilecal", "category": "schedule", "title": "Dinner at Chez Anna",
         "subtitle": "19:30 – 22:00 · Rue des Lilas 12", "message": "In 30 minutes", "flags": ["important"]},
        {"id": "missed", "app": "com.apple.mobilephone", "category": "missedCall", "title": "Alice Martin",
         "message": "Missed Call", "positiveAction": "Call Back", "negativeAction": "Dismiss"},
        {"id": "voicemail", "app": "com.apple.mobilephone", "category": "voicemail", "title": "Alice Martin",
         "subtitle": "Voicemail · 0:42",
         "message": "Hi, it's Alice! Just wanted to wish you a happy new year before the fireworks. Call me back when you can 🎆",
         "positiveAction": "Play"},
        {"id": "news", "app": "com.example.dailyplanet", "category": "news", "title": "Fireworks over the harbour",
         "subtitle": "Live",
         "message": "Crowds are gathering along the waterfront as the city gets ready for midnight. Roads close from 22:00."},
        {"id": "stand", "app": "com.example.stride", "category": "healthAndFitness", "title": "Time to stand",
         "message": "Stand up and move a little for one minute 🧍", "flags": ["silent"]},
        {"id": "bank", "app": "com.example.nordbank", "category": "businessAndFinance", "title": "Card payment",
         "message": "€48.20 at Café Lumière, Paris. Not you? Freeze your card in the app.",
         "positiveAction": "View", "negativeAction": "Freeze Card"},
        {"id": "maps", "app": "com.apple.Maps", "category": "location", "title": "Leave now for Chez Anna",
         "message": "Traffic is light: 18 min by bike 🚲 via Avenue Parmentier.", "positiveAction": "Go"},
        {"id": "film", "app": "com.example.cinema", "category": "entertainment", "title": "Tonight: «Amélie» at 23:00",
         "message": "Your seats H7–H8 are confirmed. Popcorn is on us 🍿"},
        {"id": "kenta", "app": "com.example.chat", "category": "social", "title": "健太 (Kenta)",
         "message": "今夜のパーティー、楽しみにしてるよ！🎉 See you at eight.", "positiveAction": "Reply"},
        {"id": "update", "app": "com.apple.Preferences", "category": "other", "title": "Software Update",
         "message": "iOS 26.2 is available. Install tonight?", "positiveAction": "Install", "negativeAction": "Later"},
        {"id": "newyear", "app": "com.apple.MobileSMS", "category": "social", "title": "Maya",
         "message": "Happy New Year! 🎆🥂\nBonne année · ¡Feliz año! · 新年快乐 · 明けましておめでとう",
         "positiveAction": "Reply", "flags": ["important"]}
      ],
      "steps": [
        {"at": 0, "time": "20261231T183000", "comment": "half past six on New Year's Eve"},
        {"at": 0, "battery": 87},
        {"at": 0.5, "play": {"title": "Clair de Lune", "artist": "Claude Debussy", "album": "Suite bergamasque",
          "duration": 303}},
        {"at": 0.5, "play": {"title": "The Blue Danube", "artist": "Johann Strauss II",
          "album": "New Year's Concert", "duration": 580}},
        {"at": 0.5, "previous": true, "comment": "two tracks queued, the first playing"},
        {"at": 1, "post": "maya"},
        {"at": 5, "post": "mail"},
        {"at": 10, "post": "dinner"},
        {"at": 14, "call": "Alice Martin", "id": "alice"},
        {"at": 20, "remove": "alice", "comment": "she hangs up"},
        {"at": 20.5, "post": "missed"},
        {"at": 24, "post": "voicemail"},
        {"at": 28, "modify": "maya",
         "message": "Are we still on for dinner tonight? 🍜\nI'm running ten minutes late, sorry!"},
        {"at": 31, "post": "news"},
        {"at": 35, "post": "stand"},
        {"at": 38, "battery": 64},
        {"at": 39, "post": "bank"},
        {"at": 43, "post": "maps"},
        {"at": 47, "remove": "news"},
        {"at": 48, "post": "film"},
        {"at": 52, "post": "kenta"},
        {"at": 56, "post": "update"},
        {"at": 59, "remove": "stand"},
        {"at": 60, "time": "20261231T235945", "comment": "fifteen seconds to midnight"},
        {"at": 61, "remove": "dinner"},
        {"at": 62, "remove": "maps"},
        {"at": 63, "battery": 31},
        {"at": 66, "modify": "update", "message": "iOS 26.2 will install tonight at 02:00.",
         "positiveAction": null, "negativeAction": "Cancel", "flags": ["silent"]},
        {"at": 70, "remove": "missed"},
        {"at": 72, "remove": "voicemail"},
        {"at": 74, "play": {"title": "Auld Lang Syne", "artist": "Traditional", "album": "Hogmanay",
          "duration": 200}},
        {"at": 75, "post": "newyear", "comment": "midnight on the phone's clock"},
        {"at": 78, "remove": "mail"},
        {"at": 82, "battery": 22}
      ]
    }
    """#
}
