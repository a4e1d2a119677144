import Dispatch
import Runtime
import Sockets
import TestSupport
import Testing

@testable import HCI

/// The host's command and ACL flows belong to its loop: what is sent from elsewhere reaches
/// the loop later, and must still be right when it gets there. Each test has a loop of its
/// own, which it holds still for a moment.
@Suite("HCI host: flows on the loop", .timeLimit(scaledMinutes(1)))
struct HCILoopFlowTests {
  @Test("a command abandoned before it reaches the loop is answered 'cancelled' there and never sent")
  func abandonedOnItsWay() async throws {
    let loop = EventLoop()
    let (fake, host) = try await startHost(loop: loop)
    defer { host.close() }
    let answers = Inbox<Result<CommandAnswer, HCIHostError>>()
    await loop.submit {
      // Submitted from another thread: its way to the loop waits behind this job. The loop
      // abandons it meanwhile (a cancelled caller), in place.
      let submitted = DispatchSemaphore(value: 0)
      let ticket = Locked<HCIHost.CommandTicket?>(nil)
      let started = spawnThread {
        ticket.withLock {
          $0 = host.submit(ReadBDADDR().packet, name: ReadBDADDR.packetName) { answers.push($0) }
        }
        submitted.signal()
      }
      guard started else { return }
      submitted.wait()
      if let ticket = ticket.withLock({ $0 }) { host.abandon(ticket) }
    }
    let answer = await answers.next()
    guard case .failure(.cancelled)? = answer else {
      Issue.record("expected the command cancelled, got \(String(describing: answer))")
      return
    }
    // The next command the controller sees is the one after: the abandoned one never went out.
    try await host.execute(LEReadBufferSize())
    #expect(await fake.nextCommand()?.opcode == LEReadBufferSize.opcode)
    try await loop.shutdown()
  }

  @Test("a PDU sent as its connection ended is not sent on the connection that takes the handle next")
  func handleTakenOver() async throws {
    let loop = EventLoop()
    let (fake, host, first) = try await connectedHost(role: .peripheral, loop: loop)
    defer { host.close() }
    // The loop holds still while the first connection sends from here (its way to the loop
    // waits) and the controller reports its end and a new connection on the same handle.
    let parked = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    loop.execute {
      parked.signal()
      gate.wait()
    }
    try await offThread { parked.wait() }
    try first.send([0x1B, 0x03, 0x00, 0xAA])
    fake.send(.disconnectionComplete(.init(connectionHandle: 0x0040, reason: .remoteUserTerminatedConnection)))
    fake.connectionComplete(role: 0x01)
    gate.signal()
    let second = try await host.accept(Advertisement(name: "watch"))
    #expect(second.handle == first.handle && second !== first)
    try second.send([0x1B, 0x03, 0x00, 0xBB])
    #expect(await fake.nextFrame()?.payload == [0x1B, 0x03, 0x00, 0xBB])
    try await loop.shutdown()
  }
}
