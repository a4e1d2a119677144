// swift-tools-version:6.0
// ancs-sim: a simulator of both ends of Apple's Notification Center Service.
// Layers, dependencies pointing down only (README.md, "Architecture"):
//   ancs                              the command
//   Bench                             what `ancs bench` measures (-> Processes, Phone, Watch)
//   Processes                         programs the command starts, their clean-up, figures (-> Conformance)
//   Conformance, HCI, WatchDisplay    the harness; the Bluetooth host; the terminal face (-> Watch)
//   Capture                           reading field captures: btsnoop, PacketLogger, pcap (-> HCI, ANCS, AMS)
//   Phone, Watch                      the ANCS and AMS server and client (-> ANCS, AMS, GATT)
//   Sockets                           the POSIX pieces: socket links, controller streams, event loops
//                                     (-> Links)
//   Links                             simulated links, framing, pairing, captures, air (-> ATT)
//   GATT -> ATT -> Runtime, Wire      the protocol layers
//   ANCS, AMS                         the services' PDUs, IDs and values (-> Wire)
//   Runtime                           lock, inbox, event hub, FIFO, logger, thread starter, slots,
//                                     calls between actors on one executor, an actor's executor,
//                                     an executor that runs calls after its current job, one that
//                                     keeps timers
//   Wire                              bytes
//   TestSupport (Tests/Shared)        helpers the test targets share (-> ANCS, ATT, Links, Sockets, Runtime, Wire)
import PackageDescription

let package = Package(
  name: "ancs-sim",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "ancs", targets: ["ancs"]),
    // Every module that appears in a library's public API is a library too.
    .library(name: "Wire", targets: ["Wire"]),
    .library(name: "Runtime", targets: ["Runtime"]),
    .library(name: "ANCS", targets: ["ANCS"]),
    .library(name: "AMS", targets: ["AMS"]),
    .library(name: "ATT", targets: ["ATT"]),
    .library(name: "GATT", targets: ["GATT"]),
  ],
  targets: [
    .target(name: "Wire"),
    .target(name: "Runtime"),
    .target(name: "ANCS", dependencies: ["Wire"]),
    .target(name: "AMS", dependencies: ["Wire"]),
    .target(name: "ATT", dependencies: ["Runtime", "Wire"]),
    .target(name: "GATT", dependencies: ["ATT", "Runtime", "Wire"]),
    .systemLibrary(name: "CEpoll", path: "Sources/CEpoll"),
    .systemLibrary(name: "CSwiftRuntime", path: "Sources/CSwiftRuntime"),
    .target(name: "Links", dependencies: ["ATT", "Runtime", "Wire"]),
    .target(name: "Sockets", dependencies: ["ATT", "CEpoll", "CSwiftRuntime", "Links", "Runtime", "Wire"]),
    .target(name: "Phone", dependencies: ["AMS", "ANCS", "ATT", "GATT", "Runtime", "Wire"]),
    .target(name: "Watch", dependencies: ["AMS", "ANCS", "ATT", "GATT", "Runtime", "Wire"]),
    .target(name: "Conformance", dependencies: ["AMS", "ANCS", "ATT", "Capture", "GATT", "Links", "Runtime", "Wire"]),
    // No pkgConfig: ncursesw's .pc file gives only -D_DEFAULT_SOURCE -D_XOPEN_SOURCE=600,
    // which SwiftPM drops with a warning; the shim defines what the headers need.
    .systemLibrary(name: "CNcurses", path: "Sources/CNcurses", providers: [.apt(["libncurses-dev"])]),
    .target(name: "WatchDisplay", dependencies: ["Watch", "AMS", "ANCS", "CNcurses", "Runtime", "Wire"]),
    .systemLibrary(
      name: "CEdit", path: "Sources/CEdit", pkgConfig: "libedit", providers: [.apt(["libedit-dev"])]),
    .systemLibrary(
      name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(
      name: "CBluetooth", path: "Sources/CBluetooth", providers: [.apt(["libbluetooth-dev"])]),
    .target(name: "HCI", dependencies: ["ATT", "CBluetooth", "COpenSSL", "Links", "Runtime", "Sockets", "Wire"]),
    .target(name: "Capture", dependencies: ["AMS", "ANCS", "ATT", "HCI", "Wire"]),
    .target(name: "Processes", dependencies: ["Conformance", "Runtime", "Sockets", "Wire"]),
    .target(
      name: "Bench",
      dependencies: [
        "ANCS", "ATT", "Conformance", "GATT", "Links", "Phone", "Processes", "Runtime", "Sockets", "Watch", "Wire",
      ]),
    .executableTarget(
      name: "ancs",
      dependencies: [
        "AMS", "ANCS", "ATT", "Bench", "Capture", "CEdit", "GATT", "HCI", "Links", "Phone", "Processes", "Runtime",
        "Sockets", "Watch",
        "WatchDisplay",
        "Wire",
        "Conformance",
      ]),
    // Helpers more than one test target uses (vector files, time scale, tmux, threads for
    // blocking waits): a target of their own rather than copies.
    .target(
      name: "TestSupport", dependencies: ["ANCS", "ATT", "Links", "Runtime", "Sockets", "Wire"], path: "Tests/Shared"),
    .testTarget(name: "WireTests", dependencies: ["Wire"]),
    .testTarget(name: "RuntimeTests", dependencies: ["TestSupport", "Runtime"]),
    .testTarget(name: "ANCSTests", dependencies: ["TestSupport", "ANCS", "Wire"]),
    .testTarget(name: "AMSTests", dependencies: ["TestSupport", "AMS", "Wire"]),
    .testTarget(
      name: "CaptureTests", dependencies: ["TestSupport", "Capture", "AMS", "ANCS", "ATT", "HCI", "Links", "Wire"]),
    .testTarget(name: "ATTTests", dependencies: ["TestSupport", "ATT", "Links", "Wire", "Runtime"]),
    .testTarget(
      name: "GATTTests", dependencies: ["TestSupport", "GATT", "ATT", "Links", "Wire", "Runtime", "Sockets"]),
    .testTarget(
      name: "PhoneTests", dependencies: ["TestSupport", "Phone", "ANCS", "ATT", "GATT", "Links", "Wire", "Runtime"]),
    .testTarget(
      name: "WatchTests",
      dependencies: [
        "TestSupport", "Watch", "Phone", "AMS", "ANCS", "ATT", "GATT", "Links", "Wire", "Runtime", "Sockets",
      ]),
    .testTarget(name: "CLITests", dependencies: ["TestSupport"]),
    .testTarget(
      name: "ConformanceTests",
      dependencies: [
        "TestSupport", "Conformance", "Phone", "Watch", "AMS", "ANCS", "ATT", "GATT", "Links", "Wire", "Runtime",
      ]),
    .testTarget(
      name: "LinksTests", dependencies: ["TestSupport", "Links", "ATT", "GATT", "Wire", "Runtime", "Sockets"]),
    .testTarget(
      name: "HCITests", dependencies: ["TestSupport", "HCI", "ATT", "GATT", "Links", "Wire", "Runtime", "Sockets"]),
    .testTarget(name: "InteropTests", dependencies: ["TestSupport", "HCI", "ATT", "GATT", "Wire", "Runtime"]),
    .testTarget(
      name: "WatchDisplayTests",
      dependencies: ["TestSupport", "WatchDisplay", "Watch", "AMS", "ANCS", "ATT", "CNcurses", "Wire", "Runtime"],
      exclude: ["Snapshots", "scenario.json"]),
  ]
)

// No unsafe flags: SwiftPM refuses them in a package another one depends on by version.
// The project's own release builds add cross-module optimization on the command line
// (Makefile, RELEASE_FLAGS; BENCHMARKS.md).
