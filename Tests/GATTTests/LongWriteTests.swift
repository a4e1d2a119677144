import ATT
import GATT
import Links
import Runtime
import TestSupport
import Testing
import Wire

/// `startWrite` of a value longer than ATT_MTU - 3: the test plays the server on the other
/// end of a memory link at ATT_MTU 23 and answers each PDU the client sends.
@Suite(.timeLimit(scaledMinutes(1))) struct LongWriteTests {
  final class Answers: Sendable {
    let inbox = Inbox<String>()
    func record(_ result: Result<Void, ATTError>) {
      switch result {
      case .success: inbox.push("ok")
      case .failure(let error): inbox.push("\(error)")
      }
    }
  }

  let value = (0..<50).map { UInt8($0) }

  /// A client at ATT_MTU 23, its answers, and the server's end of the link.
  func start() async -> (client: GATTClient, server: any ATTBearer, answers: Answers, task: Task<Void, Never>) {
    let (central, peripheral) = MemoryLink.pair()
    let connection = ATTConnection(bearer: central)
    let client = await GATTClient(connection: connection)
    let task = Task { await connection.run() }
    let answers = Answers()
    await client.startWrite(0x0010, value) { answers.record($1) }
    return (client, peripheral, answers, task)
  }

  func request(from server: any ATTBearer) async throws -> ATTPDU {
    try ATTPDU(decoding: try #require(try await server.receive()))
  }

  @Test func partsOfMTUMinus5ThenExecuteAndTheExecuteAnswerIsTheWrites() async throws {
    let (client, server, answers, task) = await start()
    var offset = 0
    while offset < value.count {
      guard case .prepareWriteRequest(let part) = try await request(from: server) else {
        Issue.record("expected a Prepare Write Request at offset \(offset)")
        break
      }
      #expect(part.handle == 0x0010 && Int(part.offset) == offset)
      #expect(part.value == Array(value[offset..<min(value.count, offset + 18)]), "ATT_MTU 23 - 5 bytes a part")
      try server.send(
        ATTPDU.prepareWriteResponse(PrepareWriteResponse(handle: part.handle, offset: part.offset, value: part.value))
          .encoded())
      offset += part.value.count
    }
    #expect(try await request(from: server) == .executeWriteRequest(ExecuteWriteRequest(write: true)))
    #expect(answers.inbox.count == 0, "no answer before the Execute Write's")
    try server.send(ATTPDU.executeWriteResponse(ExecuteWriteResponse()).encoded())
    #expect(await answers.inbox.next() == "ok")
    client.connection.close()
    await task.value
  }

  @Test func anErrorOnTheExecuteIsTheWritesError() async throws {
    let (client, server, answers, task) = await start()
    for _ in 0..<3 {
      guard case .prepareWriteRequest(let part) = try await request(from: server) else { break }
      try server.send(
        ATTPDU.prepareWriteResponse(.init(handle: part.handle, offset: part.offset, value: part.value)).encoded())
    }
    #expect(try await request(from: server) == .executeWriteRequest(ExecuteWriteRequest(write: true)))
    // An ANCS refusal (0xA1, Unknown Command) comes as the Execute Write's Error Response.
    let refusal = ErrorResponse(
      requestOpcode: .executeWriteRequest, handle: 0x0010, errorCode: ATTErrorCode(rawValue: 0xA1))
    try server.send(ATTPDU.errorResponse(refusal).encoded())
    #expect(await answers.inbox.next() == "\(ATTError.errorResponse(refusal))")
    client.connection.close()
    await task.value
  }

  @Test(arguments: [true, false])
  func aRefusedOrGarbledPartCancelsTheQueue(refused: Bool) async throws {
    let (client, server, answers, task) = await start()
    guard case .prepareWriteRequest(let part) = try await request(from: server) else {
      Issue.record("expected a Prepare Write Request")
      return
    }
    let expected: String
    if refused {
      let error = ErrorResponse(requestOpcode: .prepareWriteRequest, handle: 0x0010, errorCode: .prepareQueueFull)
      try server.send(ATTPDU.errorResponse(error).encoded())
      expected = "\(ATTError.errorResponse(error))"
    } else {
      // An echo that is not the part sent.
      try server.send(
        ATTPDU.prepareWriteResponse(.init(handle: part.handle, offset: part.offset, value: [0xFF])).encoded())
      expected = "\(ATTError.invalidResponse("Prepare Write Response does not echo the part sent at offset 0"))"
    }
    #expect(
      try await request(from: server) == .executeWriteRequest(ExecuteWriteRequest(write: false)),
      "the queue is cancelled")
    #expect(await answers.inbox.next() == expected)
    client.connection.close()
    await task.value
  }
}
