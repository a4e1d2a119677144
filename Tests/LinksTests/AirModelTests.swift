import Testing

@testable import Links

/// The air-time model as pure values: packet times, fragmentation, parsing, connection events.
@Suite("Air-time model")
struct AirModelTests {
  static func air(_ text: String) throws -> AirParameters { try AirParameters(parsing: text) }

  @Test(
    "time on air of an LL data packet, per PHY, with the MIC only on encrypted non-empty packets",
    arguments: [
      // 328 and 2120 µs (1M), 2704 and 17040 µs (coded S=8) are the spec's own times for 27
      // and 251 octets with the MIC (Vol 6 Part B 4.5.10); the rest follow Vol 6 Part A 3.
      (AirPHY.le1M, 0, true, 80), (.le1M, 27, false, 296), (.le1M, 27, true, 328), (.le1M, 251, true, 2120),
      (.le2M, 0, true, 44), (.le2M, 27, false, 152), (.le2M, 251, false, 1048), (.le2M, 251, true, 1064),
      (.codedS2, 0, false, 462), (.codedS2, 251, true, 4542),
      (.codedS8, 0, true, 720), (.codedS8, 27, true, 2704), (.codedS8, 251, true, 17040),
    ] as [(AirPHY, Int, Bool, Int)])
  func packetTime(phy: AirPHY, payload: Int, encrypted: Bool, microseconds: Int) {
    #expect(phy.packetTime(payload: payload, encrypted: encrypted) == .microseconds(microseconds))
  }

  @Test(
    "an ATT PDU travels as its L2CAP frame (4-byte header) cut into LL payloads of the data length",
    arguments: [
      ("1m,30ms,23,27", 23, [27]), ("1m,30ms,185,27", 24, [27, 1]),
      ("1m,30ms,185,27", 185, [27, 27, 27, 27, 27, 27, 27]), ("2m,30ms,185,251", 185, [189]),
      ("2m,30ms,247,251", 247, [251]), ("2m,30ms,517,251", 517, [251, 251, 19]),
      ("2m,30ms,517,100", 1, [5]),
    ] as [(String, Int, [Int])])
  func fragmentation(parameters: String, size: Int, fragments: [Int]) throws {
    #expect(try Self.air(parameters).fragments(ofPDU: size) == fragments)
  }

  @Test(
    "PHY,CI,MTU,DLE parses, with CI in ms on the 1.25 ms grid, and prints back the same",
    arguments: [
      ("2m,30ms,185,251", AirPHY.le2M, 24, 185, 251, "2m,30ms,185,251"),
      ("1M,7.5,23,27", .le1M, 6, 23, 27, "1m,7.5ms,23,27"),
      (" coded-s8 , 100ms , 247 , 251 ", .codedS8, 80, 247, 251, "coded-s8,100ms,247,251"),
      ("coded-s2,11.25MS,517,27", .codedS2, 9, 517, 27, "coded-s2,11.25ms,517,27"),
      ("2m,4000.000ms,517,251", .le2M, 3200, 517, 251, "2m,4000ms,517,251"),
    ] as [(String, AirPHY, Int, Int, Int, String)])
  func parses(text: String, phy: AirPHY, units: Int, mtu: Int, dataLength: Int, canonical: String) throws {
    let air = try Self.air(text)
    #expect(air.phy == phy && air.intervalUnits == units && air.mtu == mtu && air.dataLength == dataLength)
    #expect(air.connectionInterval == .microseconds(units * 1250))
    #expect(air.description == canonical)
    #expect(try Self.air(canonical) == air)
  }

  @Test(
    "bad --air values fail with a typed error whose one line names the problem",
    arguments: [
      ("", "'' is not PHY,CI,MTU,DLE (for example 2m,30ms,185,251)"),
      ("2m,30ms,185", "'2m,30ms,185' is not PHY,CI,MTU,DLE (for example 2m,30ms,185,251)"),
      ("2m,30ms,185,251,1", "'2m,30ms,185,251,1' is not PHY,CI,MTU,DLE (for example 2m,30ms,185,251)"),
      ("3m,30ms,185,251", "unknown PHY '3m' (use 1m, 2m, coded-s2 or coded-s8)"),
      ("coded,30ms,185,251", "unknown PHY 'coded' (use 1m, 2m, coded-s2 or coded-s8)"),
      ("2m,8ms,185,251", "connection interval '8ms' must be 7.5 to 4000 ms in steps of 1.25 ms"),
      ("2m,6.25ms,185,251", "connection interval '6.25ms' must be 7.5 to 4000 ms in steps of 1.25 ms"),
      ("2m,4001.25,185,251", "connection interval '4001.25' must be 7.5 to 4000 ms in steps of 1.25 ms"),
      ("2m,-30ms,185,251", "connection interval '-30ms' must be 7.5 to 4000 ms in steps of 1.25 ms"),
      ("2m,30.0001,185,251", "connection interval '30.0001' must be 7.5 to 4000 ms in steps of 1.25 ms"),
      ("2m,3e1,185,251", "connection interval '3e1' must be 7.5 to 4000 ms in steps of 1.25 ms"),
      ("2m,,185,251", "connection interval '' must be 7.5 to 4000 ms in steps of 1.25 ms"),
      (
        "2m,99999999999999999999,185,251",
        "connection interval '99999999999999999999' must be 7.5 to 4000 ms in steps of 1.25 ms"
      ),
      ("2m,30ms,22,251", "ATT MTU '22' must be a whole number from 23 to 517"),
      ("2m,30ms,518,251", "ATT MTU '518' must be a whole number from 23 to 517"),
      ("2m,30ms,99999999999999999999,251", "ATT MTU '99999999999999999999' must be a whole number from 23 to 517"),
      ("2m,30ms,185.5,251", "ATT MTU '185.5' must be a whole number from 23 to 517"),
      ("2m,30ms,185,26", "LL data length '26' must be a whole number from 27 to 251"),
      ("2m,30ms,185,252", "LL data length '252' must be a whole number from 27 to 251"),
      (
        "coded-s8,7.5ms,185,251",
        "a 7.5 ms interval cannot hold one exchange of two 251-byte packets on coded-s8 (34.38 ms): "
          + "use a longer interval or a smaller data length"
      ),
      (
        "coded-s2,7.5ms,185,251",
        "a 7.5 ms interval cannot hold one exchange of two 251-byte packets on coded-s2 (9.384 ms): "
          + "use a longer interval or a smaller data length"
      ),
    ] as [(String, String)])
  func parseErrors(text: String, message: String) {
    let error = #expect(throws: AirParameterError.self) { try AirParameters(parsing: text) }
    #expect(error?.description == message)
  }

  /// The textbook bound for notifications that each fit one LL packet, from the central, with
  /// empty packets back: an event holds floor(CI / exchange) exchanges of one full packet,
  /// T_IFS, an empty packet, T_IFS, so the rate is that many values per interval. The packet
  /// times are the spec's, not the model's.
  @Test(
    "bulk notifications stream within 5% of the analytic LE throughput bound",
    arguments: [
      ("2m,30ms,247,251", [1064]), ("1m,30ms,247,251", [2120]), ("2m,7.5ms,247,251", [1064]),
      ("1m,7.5ms,23,27", [328]), ("1m,30ms,23,27", [328]), ("coded-s2,50ms,247,251", [4542]),
      ("coded-s8,100ms,247,251", [17040]), ("2m,30ms,185,251", [816]),
      // ATT_MTU 517 over DLE 251: three packets per notification (251, 251, 19 bytes + MIC).
      ("2m,4000ms,517,251", [1064, 1064, 136]),
    ] as [(String, [Int])])
  func bulkThroughput(parameters: String, packets: [Int]) throws {
    let air = try Self.air(parameters)
    let empty = ["1m": 80, "2m": 44, "coded-s2": 462, "coded-s8": 720][air.phy.rawValue]!
    let perNotification = packets.reduce(0) { $0 + $1 + empty + 2 * 150 }
    let interval = Double(air.intervalUnits) * 1250
    let perEvent = (interval / Double(perNotification)).rounded(.down)
    let bound = perEvent * Double(air.mtu - 3) / (interval / 1e6)

    let count = 3000
    let arrivals = AirSchedule.arrivals(
      of: Array(repeating: (air.mtu, .centralToPeripheral), count: count), over: air, encrypted: true)
    let model = Double(count * (air.mtu - 3)) / inSeconds(arrivals[count - 1])
    #expect(abs(model / bound - 1) < 0.05, "model \(model) B/s, bound \(bound) B/s")
  }

  @Test("an event carries the exchanges that fit before the next anchor; the rest wait for the next event")
  func eventPacking() throws {
    // 2M, ATT_MTU 185: 193 bytes with the MIC take 816 µs; an exchange is 816 + 150 + 44 + 150.
    let air = try Self.air("2m,30ms,185,251")
    let arrivals = AirSchedule.arrivals(
      of: Array(repeating: (185, .centralToPeripheral), count: 30), over: air, encrypted: true)
    #expect(arrivals[0] == .microseconds(816))
    #expect(arrivals[24] == .microseconds(24 * 1160 + 816))
    #expect(arrivals[25] == .microseconds(30_000 + 816))
    #expect(arrivals[29] == .microseconds(30_000 + 4 * 1160 + 816))
  }

  @Test("a peripheral's packet rides in the same exchange as the central's and lengthens it")
  func bothWays() throws {
    let air = try Self.air("1m,30ms,23,27")
    // Each side sends one 23-byte PDU: 27-byte payloads, 328 µs with the MIC.
    let arrivals = AirSchedule.arrivals(
      of: [(23, .centralToPeripheral), (23, .peripheralToCentral), (23, .centralToPeripheral)], over: air,
      encrypted: true)
    #expect(arrivals == [.microseconds(328), .microseconds(328 + 150 + 328), .microseconds(2 * 328 + 300 + 328)])
  }

  @Test("write with response: the answer comes in the next connection event, one interval after the request")
  func writeRoundTrip() throws {
    let air = try Self.air("2m,30ms,185,251")
    var schedule = AirSchedule(air)
    // Watch (peripheral) writes 8 bytes to the Control Point: an 11-byte Write Request.
    schedule.enqueue(id: 0, size: 11, direction: .peripheralToCentral, encrypted: true, ready: .zero)
    let request = schedule.runEvent()
    // Empty central packet 44 µs, T_IFS, the request's 15 + 4 bytes: 120 µs.
    #expect(request == [AirSchedule.Delivery(id: 0, direction: .peripheralToCentral, arrival: .microseconds(314))])
    schedule.enqueue(id: 1, size: 1, direction: .centralToPeripheral, encrypted: true, ready: request[0].arrival)
    #expect(schedule.nextEvent == air.connectionInterval)
    let response = schedule.runEvent()
    #expect(response.map(\.arrival) == [.microseconds(30_080)])
    #expect(response[0].arrival >= air.connectionInterval)
  }

  @Test("a PDU handed over after an anchor goes out at the next anchor, not before")
  func readyBetweenAnchors() throws {
    let air = try Self.air("2m,7.5ms,185,251")
    var both = AirSchedule(air)
    both.enqueue(id: 0, size: 20, direction: .centralToPeripheral, encrypted: false, ready: .zero)
    both.enqueue(id: 1, size: 20, direction: .peripheralToCentral, encrypted: false, ready: .microseconds(1))
    #expect(both.runEvent().map(\.id) == [0])
    #expect(both.nextEvent == .microseconds(7_500))
    #expect(both.runEvent().map(\.id) == [1])

    var schedule = AirSchedule(air)
    schedule.enqueue(id: 0, size: 20, direction: .centralToPeripheral, encrypted: false, ready: .microseconds(1))
    #expect(schedule.nextEvent == .microseconds(7_500))
    #expect(schedule.runEvent().map(\.arrival) == [.microseconds(7_500 + (11 + 24) * 4)])
    schedule.enqueue(id: 1, size: 20, direction: .centralToPeripheral, encrypted: false, ready: .milliseconds(40))
    #expect(schedule.nextEvent == .microseconds(45_000))
  }
}

func inSeconds(_ duration: Duration) -> Double {
  let (whole, attoseconds) = duration.components
  return Double(whole) + Double(attoseconds) / 1e18
}
