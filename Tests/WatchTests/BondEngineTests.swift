import ATT
import Links
import Phone
import Testing
import Watch
import Wire

/// The watch engine and the phone in bond trouble, over memory links that keep bonds: what
/// each side sees, and how the watch comes back.
@Suite struct BondEngineTests {
  func rig() throws -> (Rig, phone: Keyring, watch: Keyring) {
    let phone = try Phone(wallClock: FixedWallClock(seconds: 1_796_040_000), apps: ["com.example.chat": "Chat"])
    let keyrings = (phone: Keyring(), watch: Keyring())
    return (Rig(phone: phone, keyrings: keyrings), keyrings.phone, keyrings.watch)
  }

  /// "Forget This Device" on the phone: the link drops, the watch (still bonded) pairs again
  /// with the phone's new key and goes on.
  @Test func thePhoneForgetsAndTheWatchPairsAgain() async throws {
    let (rig, phoneKeys, watchKeys) = try rig()
    try await rig.ready()
    #expect(phoneKeys.bondedPeers == [watchKeys.address])
    let old = watchKeys.bond(with: phoneKeys.address)?.key
    #expect(try rig.phone.forget(nil) == [watchKeys.address])
    try await rig.until("paired again") {
      $0 == .bond(.bonded(peer: phoneKeys.address, level: .encrypted, again: true))
    }
    try await rig.connected()
    #expect(watchKeys.bond(with: phoneKeys.address)?.key != old)
    await rig.phone.post(chat("After"))
    _ = try await rig.added("After")
    await rig.stop()
  }

  /// The watch forgets (a reset): the phone's key is missing at every connection, and the
  /// phone, as an iPhone, drops the link and keeps its bond until its user forgets it; then
  /// the watch pairs afresh.
  @Test func theWatchForgetsAndComesBackOnceThePhoneDoesToo() async throws {
    let (rig, phoneKeys, watchKeys) = try rig()
    var phoneEvents = rig.phone.events().makeAsyncIterator()
    try await rig.ready()
    #expect(try rig.watch.forgetBonds() == [phoneKeys.address])
    try await rig.until("the phone's key missing") { $0 == .bond(.keyMissing(peer: phoneKeys.address)) }
    while let event = await phoneEvents.next(isolation: nil), event != .bond(.peerLostKey(peer: watchKeys.address)) {}
    #expect(phoneKeys.bondedPeers == [watchKeys.address], "an iPhone keeps its bond")
    #expect(try rig.phone.forget(watchKeys.address) == [watchKeys.address])
    try await rig.until("paired afresh") {
      $0 == .bond(.bonded(peer: phoneKeys.address, level: .encrypted, again: false))
    }
    try await rig.connected()
    await rig.phone.post(chat("Back"))
    _ = try await rig.added("Back")
    await rig.stop()
  }
}

/// A link that connects and then fails (here: the phone's key is one the watch lacks) backs
/// off as a link that cannot connect does, the wait doubling, instead of being tried again at
/// full speed.
@Suite struct BondBackOffTests {
  @Test func aLinkThatFailsToPairBacksOffDoubling() async throws {
    let clock = ManualClock()
    let phone = try Phone(wallClock: FixedWallClock(seconds: 1_796_040_000))
    let (phoneKeys, watchKeys) = (Keyring(), Keyring())
    phoneKeys.keep(Keyring.Bond(key: 1, level: .encrypted), with: watchKeys.address)
    var options = WatchOptions()
    options.reconnectDelay = .seconds(1)
    let engine = WatchEngine(options: options, clock: clock) {
      let (central, peripheral) = MemoryLink.pair(keyrings: (phoneKeys, watchKeys))
      Task { await phone.serve(central) }
      return peripheral
    }
    let running = Task { await engine.run() }
    /// The engine's next wait before reconnecting, once it is at `attempt`.
    func waitBefore(attempt: Int) async -> Duration? {
      for _ in 0..<1_000_000 {
        if case .reconnecting(let at, let retryIn, _) = await engine.state.link, at == attempt { return retryIn }
        await Task.yield()
      }
      return nil
    }
    #expect(await waitBefore(attempt: 1) == .seconds(1))
    clock.advance(by: .seconds(1))
    #expect(await waitBefore(attempt: 2) == .seconds(2))
    clock.advance(by: .seconds(2))
    #expect(await waitBefore(attempt: 3) == .seconds(4))
    if case .reconnecting(_, _, let reason) = await engine.state.link {
      #expect(reason.contains("PIN or Key Missing"), "\(reason)")
    }
    // Stopping during the wait ends the run at once, the manual clock standing still.
    engine.stop()
    await running.value
    #expect(await engine.state.link == .stopped)
  }
}
