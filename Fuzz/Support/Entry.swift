import Foundation

/// The libFuzzer entry point of every target: each target file defines `fuzz(_:)`.
/// A property that does not hold traps through `require`, which libFuzzer reports as a
/// crash and saves the input as an artifact.
@_cdecl("LLVMFuzzerTestOneInput")
public func llvmFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  fuzz(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
  return 0
}

/// Whether `trace` prints: set FUZZ_TRACE=1 when replaying a finding
/// (`.build-fuzz/bin/TARGET FINDING`) to see the steps that led to it.
let tracing = ProcessInfo.processInfo.environment["FUZZ_TRACE"] != nil

/// Prints `line` to standard error when tracing.
func trace(_ line: @autoclosure () -> String) {
  if tracing { FileHandle.standardError.write(Data((line() + "\n").utf8)) }
}

/// Stops the run with `message` when `condition` is false.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
  if !condition { fatalError("property violated: " + message()) }
}

/// An error's offset points inside the input or just past its end.
func requireOffset(_ offset: Int, within input: [UInt8], _ error: some Error) {
  require((0...input.count).contains(offset), "offset \(offset) outside \(input.count) bytes: \(error)")
}
