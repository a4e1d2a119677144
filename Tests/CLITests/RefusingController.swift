import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A controller on a loopback TCP port (the `hci-tcp` transport, H4 framing) that answers
/// every HCI command with success, as a controller does, except the ones named in `refused`,
/// which it answers with Command Disallowed (0x0C): a controller that cannot do what a host
/// needs of it. It serves one host, on a thread of its own, until the host closes.
final class RefusingController: @unchecked Sendable {
  let port: UInt16
  private let listener: Int32

  init(refused: Set<UInt16>) throws {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    self.listener = listener
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard listener >= 0, bound == 0, listen(listener, 1) == 0 else {
      throw CocoaError(.fileWriteUnknown)
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
    }
    port = UInt16(bigEndian: address.sin_port)
    Thread.detachNewThread {
      let host = accept(listener, nil, nil)
      guard host >= 0 else { return }
      defer { close(host) }
      var pending: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 1024)
      while true {
        let count = read(host, &buffer, buffer.count)
        if count <= 0 { return }
        pending += buffer[..<count]
        // Commands: 0x01, opcode (2, little-endian), parameter length, parameters.
        while pending.count >= 4, pending[0] == 0x01, pending.count >= 4 + Int(pending[3]) {
          let opcode = UInt16(pending[1]) | UInt16(pending[2]) << 8
          pending.removeFirst(4 + Int(pending[3]))
          let status: UInt8 = refused.contains(opcode) ? 0x0C : 0x00
          var returned: [UInt8] = [status]
          switch opcode {
          case 0x2002: returned += [27, 0, 4]  // LE Read Buffer Size: 27 bytes, 4 packets
          case 0x1009: returned += [0x01, 0x02, 0x03, 0x04, 0x05, 0x06]  // Read BD_ADDR
          default: break
          }
          // Command Complete: event 0x0E, its length, one credit, the opcode, the return
          // parameters.
          let packet: [UInt8] =
            [0x04, 0x0E, UInt8(3 + returned.count), 1, UInt8(opcode & 0xFF), UInt8(opcode >> 8)] + returned
          _ = packet.withUnsafeBytes { write(host, $0.baseAddress, $0.count) }
        }
        if let first = pending.first, first != 0x01 { pending.removeAll() }
      }
    }
  }

  deinit { close(listener) }
}
