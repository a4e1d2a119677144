import ATT
import GATT
import Links
import Testing
import Wire

/// Valid requests to mutate: one of each kind the server implements.
private let seeds: [[UInt8]] = [
  "02 f7 00", "04 01 00 ff ff", "06 01 00 ff ff 00 28 0f 18", "08 01 00 ff ff 03 28", "0a 07 00", "0c 14 00 10 00",
  "10 01 00 ff ff 00 28", "12 08 00 01 00", "52 0e 00 00", "1d 03 00 01", "1e", "12 0e 00 00 01 02",
  "08 09 00 11 00 03 28", "04 0c 00 0c 00",
].map { Hex.decode($0)! }

@Suite struct FuzzTests {
  /// How many PDUs the server sends in answer to `pdu`: one for a request (known or not)
  /// and for a decodable indication (its confirmation), none otherwise.
  private func expectedAnswers(_ pdu: [UInt8]) -> Int {
    guard let first = pdu.first else { return 0 }
    let opcode = ATTOpcode(rawValue: first)
    if opcode == .handleValueIndication { return pdu.count >= 3 ? 1 : 0 }
    return opcode.needsResponse ? 1 : 0
  }

  /// Thousands of random and mutated PDUs into a running server: it never traps, answers
  /// every request exactly once with its response or an Error Response naming the request,
  /// and still serves a normal read afterwards.
  @Test func serverSurvivesRandomAndMutatedPDUs() async throws {
    var random = SplitMix64(seed: 0xA7C5)
    let served = await ServedLink(server: try makeFixtureServer(), level: .encrypted)
    let probe: [UInt8] = [0x0A, 0x07, 0x00]
    var answered = 0
    for round in 0..<20_000 {
      let pdu: [UInt8] =
        round % 4 == 0
        ? random.bytes(Int(random.next() % 24))
        : random.mutate(seeds[Int(random.next() % UInt64(seeds.count))])
      // Keep the MTU at 23 so every answer is checked at one size.
      if pdu.first == 0x02 { continue }
      try served.peer.send(pdu)
      try served.peer.send(probe)
      // Read answers until the probe's; anything before it answers the fuzz PDU.
      var before: [[UInt8]] = []
      while true {
        let answer = try #require(try await served.peer.receive(), "server closed the link at round \(round)")
        if answer == [0x0B, 0x2A] && before.count >= expectedAnswers(pdu) { break }
        before.append(answer)
        try #require(before.count <= 2, "round \(round): too many answers to \(Hex.encode(pdu))")
      }
      #expect(
        before.count == expectedAnswers(pdu), "round \(round): \(Hex.encode(pdu)) got \(before.map { Hex.encode($0) })")
      if let answer = before.first, expectedAnswers(pdu) == 1 {
        #expect(answer.count <= 23, "round \(round): answer over ATT_MTU")
        answered += 1
        if answer.first == 0x01 {
          #expect(answer.count == 5 && answer[1] == pdu[0], "round \(round): error response names the request")
        } else if pdu[0] != 0x1D {
          #expect(answer.first == pdu[0] + 1, "round \(round): \(Hex.encode(pdu)) answered by \(Hex.encode(answer))")
        }
      }
    }
    #expect(answered > 5_000)
    await served.stop()
  }

  /// A server answering every request with garbage: client procedures fail with typed
  /// errors or return, and never hang in a discovery loop.
  @Test func clientSurvivesGarbageAnswers() async throws {
    var random = SplitMix64(seed: 0xBEEF)
    let (central, peripheral) = MemoryLink.pair()
    let connection = ATTConnection(bearer: central)
    let client = await GATTClient(connection: connection)
    let task = Task { await connection.run() }
    let answers: [[UInt8]] = (0..<4_000).map { index in
      let valid: [[UInt8]] = [
        "01 10 01 00 0a", "11 06 01 00 04 00 01 18", "07 09 00 11 00", "09 07 0a 00 10 0b 00 19 2a", "0b 2a",
        "05 01 0c 00 02 29", "13", "0d 01 02", "09 15 0a 00 10 0b 00 bd 1d a2 99 e6 25 58 8c d9 42 01 63 0d 12 bf 9f",
      ].map { Hex.decode($0)! }
      return index % 3 == 0 ? random.bytes(Int(random.next() % 30)) : random.mutate(valid[index % valid.count])
    }
    let responder = Task {
      var index = 0
      while let request = try? await peripheral.receive() {
        if request.first == 0x1E || request.first == 0x52 { continue }
        // The garbage, then a proper Error Response, so a request whose garbage answer is
        // ignored (a notification, say) still completes and nothing waits for a timeout.
        try? peripheral.send(answers[index % answers.count])
        try? peripheral.send([0x01, request[0], 0x00, 0x00, 0x0A])
        index += 1
      }
    }
    var outcomes = 0
    for round in 0..<600 {
      do {
        switch round % 5 {
        case 0: _ = try await client.discoverAllPrimaryServices()
        case 1: _ = try await client.discoverPrimaryServices(0x180F)
        case 2:
          _ = try await client.discoverCharacteristics(
            of: DiscoveredService(uuid: 0x180F, range: HandleRange(1, 0xFFFF)))
        case 3: _ = try await client.read(7)
        default:
          _ = try await client.discoverDescriptors(
            of: DiscoveredCharacteristic(
              uuid: 0x2A19, properties: .notify, declarationHandle: 1, valueHandle: 2, endHandle: 0xFFFF))
        }
      } catch {
        _ = error as ATTError
      }
      outcomes += 1
    }
    #expect(outcomes == 600)
    #expect(await connection.closedReason == nil, "no transaction timed out")
    connection.close()
    await task.value
    responder.cancel()
  }
}
