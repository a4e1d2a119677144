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
    let phone = try Phone(wallClock: FixedWallClock(seconds: 1_796_040_000))
    phone.register(app: "com.example.chat", name: "Chat")
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
    #expect(rig.watch.state.link != .connected("memory(peripheral)"))
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
