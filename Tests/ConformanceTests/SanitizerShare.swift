import Foundation

/// The part of `all` a fault sweep runs: every element, except under the sanitizer runs of
/// `.ci/run` (`ANCS_SANITIZER`, set by the Makefile), where ThreadSanitizer takes the even
/// positions and AddressSanitizer the odd ones. Every fault still runs under one sanitizer,
/// and each sanitizer run spends half the time on the sweeps, whose many concurrent runs are
/// the longest part of it.
func sanitizerShare<T>(_ all: [T]) -> [T] {
  let first: Int
  switch ProcessInfo.processInfo.environment["ANCS_SANITIZER"] {
  case "thread": first = 0
  case "address": first = 1
  default: return all
  }
  return stride(from: first, to: all.count, by: 2).map { all[$0] }
}
