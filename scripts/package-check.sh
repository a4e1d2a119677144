#!/usr/bin/env bash
# Another project's package that depends on this one by URL and version, as SwiftPM users
# do (`.package(url:from:)`): a clone of this repository's HEAD, tagged 0.1.0, and a small
# executable package that uses its ANCS and GATT libraries. SwiftPM refuses unsafe build
# flags in such a dependency (not in a path one), so this is what proves the libraries can
# be depended on. Builds and runs it; nothing is left behind.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/ancs-package-check.XXXXXX)"
trap 'rm -rf "$work"' EXIT

git clone -q "$root" "$work/ancs-sim"
git -C "$work/ancs-sim" -c user.name=check -c user.email=check@localhost tag 0.1.0

mkdir -p "$work/user/Sources/user"
cat > "$work/user/Package.swift" <<MANIFEST
// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "user",
  dependencies: [.package(url: "file://$work/ancs-sim", from: "0.1.0")],
  targets: [
    .executableTarget(
      name: "user",
      dependencies: [.product(name: "ANCS", package: "ancs-sim"), .product(name: "GATT", package: "ancs-sim")])
  ]
)
MANIFEST
cat > "$work/user/Sources/user/main.swift" <<'SOURCE'
import ANCS
import GATT

// A Notification Source event through the codec, and a GATT database with a Battery service.
let event = NotificationSourceEvent(
  eventID: .added, eventFlags: [.important], categoryID: .social, categoryCount: 1, notificationUID: 42)
let decoded = try NotificationSourceEvent(decoding: event.encoded())
guard decoded == event else { fatalError("the event did not survive its codec") }
let server = try GATTServer(services: [
  ServiceDefinition(uuid: 0x180F, characteristics: [.constant(0x2A19, [100])])
])
print("ok: UID \(decoded.notificationUID), \(server.database.attributes.count) attributes")
SOURCE

echo "package-check: building a package that depends on ancs-sim 0.1.0 by URL" >&2
swift build --no-color-diagnostics --package-path "$work/user" 2>&1 | tail -n 20 >&2
output="$("$work/user/.build/debug/user")"
echo "package-check: $output" >&2
[[ "$output" == ok:* ]]
