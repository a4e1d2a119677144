import ATT
import Foundation
import Glibc
import Runtime
import TestSupport
import Testing
import Wire

@testable import Links
@testable import Sockets

/// A fresh directory under /tmp (short, so socket paths fit sun_path), removed with the value.
final class TemporaryDirectory: Sendable {
  let path: String

  init() {
    var template = Array("/tmp/ancs-links-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(made != nil, "mkdtemp failed")
    path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  func file(_ name: String) -> String { "\(path)/\(name)" }

  deinit {
    try? FileManager.default.removeItem(atPath: path)
  }
}

/// The three socket links, for tests that must hold on each.
enum LinkKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
  case unixPair
  case unixNamed
  case tcp

  var testDescription: String { rawValue }

  /// Two connected ends: `a` is the connecting (or central) end, `b` the accepting one.
  func open(
    a pairingA: PairingPolicy = .accept(upTo: .authenticated),
    b pairingB: PairingPolicy = .accept(upTo: .authenticated)
  ) async throws -> Ends {
    switch self {
    case .unixPair:
      // socketpair gives both ends one policy; build the ends separately to tell them apart.
      var fds: [Int32] = [-1, -1]
      let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
      #expect(socketpair(AF_UNIX, type, 0, &fds) == 0)
      let a = try SocketCore.start(fd: fds[0], framing: .messages, name: "a", pairing: pairingA, on: testLoop)
      let b = try SocketCore.start(fd: fds[1], framing: .messages, name: "b", pairing: pairingB, on: testLoop)
      return Ends(a: a, b: b, listener: nil, directory: nil)
    case .unixNamed:
      let directory = TemporaryDirectory()
      let path = directory.file("phone.sock")
      let listener = try UnixSeqpacketListener(path: path, on: testLoop, pairing: pairingB)
      async let accepted = listener.accept()
      let a = try await UnixSeqpacketLink.connect(path: path, on: testLoop, pairing: pairingA)
      let b = try await accepted
      return Ends(a: a, b: b, listener: listener, directory: directory)
    case .tcp:
      let listener = try TCPListener(on: testLoop, pairing: pairingB)
      async let accepted = listener.accept()
      let a = try await TCPLink.connect(port: listener.port, on: testLoop, pairing: pairingA)
      let b = try await accepted
      return Ends(a: a, b: b, listener: listener, directory: nil)
    }
  }
}

struct Ends: Sendable {
  let a: SocketBearer
  let b: SocketBearer
  let listener: (any LinkListener)?
  let directory: TemporaryDirectory?

  func close() {
    a.close()
    b.close()
    listener?.close()
  }
}

/// A plain socket for playing a misbehaving peer. Blocking calls run on their own thread.
final class RawSocket: Sendable {
  let fd: Int32
  private let closed = Locked(false)

  init(fd: Int32) {
    self.fd = fd
  }

  deinit {
    close()
  }

  func close() {
    let first = closed.withLock { closed -> Bool in
      defer { closed = true }
      return !closed
    }
    if first { Glibc.close(fd) }
  }

  static func tcp(port: UInt16) async throws -> RawSocket {
    let addresses = try SocketAddress.resolveTCP(host: "127.0.0.1", port: port, passive: false).get()
    let fd = try makeSocket(family: AF_INET, type: Int32(SOCK_STREAM.rawValue)).get()
    let code = await runBlocking { connectSocket(fd, to: addresses[0]) }
    #expect(code == 0)
    setNoDelay(fd)
    return RawSocket(fd: fd)
  }

  /// A seqpacket socketpair: one end as a link (answering with `pairing`), the other raw.
  static func seqpacketPair(pairing: PairingPolicy = .accept(upTo: .authenticated)) throws -> (
    SocketBearer, RawSocket
  ) {
    var fds: [Int32] = [-1, -1]
    let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    #expect(socketpair(AF_UNIX, type, 0, &fds) == 0)
    let bearer = try SocketCore.start(fd: fds[0], framing: .messages, name: "raw-pair", pairing: pairing, on: testLoop)
    return (bearer, RawSocket(fd: fds[1]))
  }

  func write(_ bytes: [UInt8]) {
    let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    #expect(sent == bytes.count)
  }

  /// One recv: a whole message on seqpacket, whatever has arrived on TCP; [] at end of file.
  func read() async -> [UInt8] {
    let fd = self.fd
    return await runBlocking {
      var buffer = [UInt8](repeating: 0, count: 65536)
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      return count > 0 ? Array(buffer[0..<count]) : []
    }
  }

  /// Exactly `count` bytes from a stream (fewer only at end of file).
  func read(exactly count: Int) async -> [UInt8] {
    var bytes: [UInt8] = []
    while bytes.count < count {
      let more = await read()
      if more.isEmpty { break }
      bytes += more
    }
    return bytes
  }

  /// Closes with a TCP RST instead of a FIN.
  func closeWithReset() {
    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    close()
  }
}
