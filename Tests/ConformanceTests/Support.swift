import ANCS
import ATT
import Conformance
import Foundation
import GATT
import Links
import Phone
import Runtime
import Synchronization
import TestSupport
import Testing
import Wire

#if canImport(FoundationXML)
  import FoundationXML
#endif

/// A case's budget against the project's phone in process. Alone, the phone answers a whole
/// case in milliseconds; but the test run starts every test at once, and while dozens of
/// processes (Bumble, Chromium, tshark, `ancs`) start on two cores, a one-case run waited
/// 15 s for the processor (CI, December 2026). A case that passes, or fails on a rule, ends
/// long before this; a case that waits for what a phone never does gets a short time of its
/// own (`expectedFailureTimeouts`).
let npBudget = scaled(.seconds(30))

/// The time of a case a test expects to fail, where it waits for what the implementation
/// never does. Against these in-process implementations a case passes in milliseconds, or
/// a few hundred with the accessory's own timers (which come on top), so a case still
/// waiting after this is not going to pass; the other cases keep the run's whole budget.
/// Were a fault to stop failing such a case, it would pass long before this. Under the
/// sanitizers (scaled) the sweeps spent most of their time waiting out whole budgets here.
func expectedFailureTimeouts(_ ids: [String]) -> [String: Duration] {
  Dictionary(ids.map { ($0, scaled(.seconds(1.5))) }, uniquingKeysWith: { first, _ in first })
}

/// Every case that did not pass, with its detail: a failed expectation's comment.
func notPassed(_ results: [CaseResult]) -> Comment {
  Comment(rawValue: results.filter { $0.verdict != .passed }.map { "\($0.id): \($0.detail)" }.joined(separator: "\n"))
}

/// The project's phone, in process, reached over memory links; its console is the stimulus.
/// `faults` turns on fault switches (FaultSwitchTests).
func ownPhone(faults: PhoneFaults = [], settings: PhoneSettings = PhoneSettings()) throws -> (Phone, PhoneUnderTest) {
  let phone = try Phone(
    faults: faults, settings: settings, apps: [StimulusNotification.defaultApp: StimulusNotification.defaultAppName])
  let console = PhoneConsole(phone: phone)
  let stimulus = JSONLineStimulus(
    channel: ClosureLineChannel { line throws(StimulusError) in
      guard let output = await console.run(jsonLine: line) else { throw StimulusError("no answer to \(line)") }
      return output.json.description
    })
  // Both keep bonds, as an iPhone and an accessory do (the BOND case needs them).
  let phoneKeys = Keyring(behaviour: .init(disconnectOnKeyMissing: phone.disconnectsOnKeyMissing))
  let harnessKeys = Keyring()
  phone.keepBonds(in: phoneKeys)
  let target = PhoneUnderTest(
    connect: {
      let (central, peripheral) = MemoryLink.pair(keyrings: (phoneKeys, harnessKeys))
      Task { await phone.serve(central) }
      return peripheral
    }, stimulus: stimulus, bonds: harnessKeys)
  return (phone, target)
}

/// A link to the project's phone with one fault on the wire: `rewrite` changes (or keeps)
/// every PDU the phone sends. A phone that breaks exactly one rule, with everything else
/// its own.
func faultyPhone(_ makeRewrite: (Phone) -> @Sendable ([UInt8]) -> [UInt8]) throws -> PhoneUnderTest {
  let (phone, own) = try ownPhone()
  let rewrite = makeRewrite(phone)
  return PhoneUnderTest(
    connect: { RewritingBearer(try await own.connect(), incoming: rewrite) }, stimulus: own.stimulus,
    bonds: own.bonds)
}

/// A bearer to nowhere: sends vanish, nothing ever arrives until it is closed.
final class SilentBearer: ATTBearer {
  private let inbox = Inbox<[UInt8]>()
  var name: String { "silent" }
  func send(_ pdu: [UInt8]) throws(BearerError) {}
  nonisolated(nonsending) func receive() async throws(BearerError) -> [UInt8]? { await inbox.next() }
  var securityLevel: SecurityLevel { .encrypted }
  func pair(_ level: SecurityLevel) async throws(BearerError) -> SecurityLevel { .encrypted }
  func close() { inbox.close() }
}

/// A minimal phone of its own, built from the GATT server: the ANCS service with no
/// notifications, whose Control Point decodes commands and refuses them with the right
/// codes, but which forgets that the Control Point needs encryption.
func minimalPhone() throws -> PhoneUnderTest {
  let uuid = { (text: String) in BluetoothUUID(text)! }
  let controlPoint = CharacteristicDefinition(
    uuid: uuid(ANCSUUID.controlPoint), properties: .write, security: .unencrypted,
    write: { _, bytes in
      do {
        _ = try ControlPointCommand(decoding: bytes)
        return .refused(ATTErrorCode(rawValue: ANCSErrorCode.invalidParameter.rawValue))
      } catch let error as ANCSError {
        return .refused(ATTErrorCode(rawValue: error.controlPointErrorCode.rawValue))
      } catch {
        return .refused(ATTErrorCode(rawValue: ANCSErrorCode.invalidCommand.rawValue))
      }
    })
  let server = try GATTServer(services: [
    ServiceDefinition(
      uuid: uuid(ANCSUUID.service),
      characteristics: [
        CharacteristicDefinition(uuid: uuid(ANCSUUID.notificationSource), properties: .notify, security: .encrypted),
        controlPoint,
        CharacteristicDefinition(uuid: uuid(ANCSUUID.dataSource), properties: .notify, security: .encrypted),
      ])
  ])
  return PhoneUnderTest(
    connect: {
      let (central, peripheral) = MemoryLink.pair()
      let connection = ATTConnection(bearer: central)
      _ = await server.attach(connection)
      Task { await connection.run() }
      return peripheral
    }, stimulus: nil)
}

/// IDs of the cases with `verdict`.
func ids(_ results: [CaseResult], _ verdict: Verdict) -> [String] {
  results.filter { $0.verdict == verdict }.map(\.id)
}

func temporaryDirectory(_ name: String) throws -> String {
  let path = NSTemporaryDirectory() + "ancs-conform-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
  try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  return path
}

/// Elements of a JUnit XML document, counted by name, with the attributes of each testcase.
final class JUnitReader: NSObject, XMLParserDelegate, @unchecked Sendable {
  var counts: [String: Int] = [:]
  var testcases: [[String: String]] = []
  var failedNames: [String] = []
  private var current: String?

  func parser(
    _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
    attributes: [String: String] = [:]
  ) {
    counts[name, default: 0] += 1
    if name == "testcase" {
      testcases.append(attributes)
      current = attributes["name"]
    }
    if name == "failure", let current { failedNames.append(current) }
  }

  static func read(_ xml: String) -> (JUnitReader, Bool, String?) {
    let reader = JUnitReader()
    let parser = XMLParser(data: Data(xml.utf8))
    parser.delegate = reader
    let ok = parser.parse()
    return (reader, ok, parser.parserError.map { "\($0)" })
  }
}

/// Runs the `ancs` binary to its end, off the shared threads; returns its exit status,
/// standard output and standard error.
func runAncs(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
  try await runProgram(ancsPath, arguments)
}

/// Runs a program to its end, off the shared threads (killed if the test is cancelled).
func runProgram(_ path: String, _ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: path)
  process.arguments = arguments
  let output = Pipe()
  let errors = Pipe()
  // Input open until the program ends: a watch in it stops at end of input, as a user's
  // would at the end of what they type.
  let input = Pipe()
  process.standardInput = input
  process.standardOutput = output
  process.standardError = errors
  try process.run()
  return try await killingOnCancel(process) {
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try? input.fileHandleForWriting.close()
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
  }
}
