import Foundation
import TestSupport
import Testing

/// Counts, in a PNG screenshot (8-bit RGB or RGBA, not interlaced, as Chromium writes them),
/// the pixels of each colour named in hex: Python's standard library only.
let pngColourCounter = """
  import struct, sys, zlib
  data = open(sys.argv[1], "rb").read()
  assert data[:8] == b"\\x89PNG\\r\\n\\x1a\\n", "not a PNG"
  pos, idat = 8, b""
  while pos < len(data):
      length, kind = struct.unpack(">I4s", data[pos:pos + 8])
      body = data[pos + 8:pos + 8 + length]
      pos += 12 + length
      if kind == b"IHDR":
          width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
          assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG layout"
      elif kind == b"IDAT":
          idat += body
  raw, bpp = zlib.decompress(idat), 3 if colour == 2 else 4
  stride, previous, at, pixels = width * bpp, bytearray(width * bpp), 0, {}
  for y in range(height):
      kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
      at += 1 + stride
      for x in range(stride):
          a = line[x - bpp] if x >= bpp else 0
          b = previous[x]
          c = previous[x - bpp] if x >= bpp else 0
          if kind == 1: line[x] = (line[x] + a) & 255
          elif kind == 2: line[x] = (line[x] + b) & 255
          elif kind == 3: line[x] = (line[x] + ((a + b) >> 1)) & 255
          elif kind == 4:
              p = a + b - c
              pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
              line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
      for x in range(0, stride, bpp):
          key = bytes(line[x:x + 3]).hex()
          pixels[key] = pixels.get(key, 0) + 1
      previous = line
  print(width, height, " ".join(str(pixels.get(c.lower(), 0)) for c in sys.argv[2:]))
  """

/// `ancs conform ... --html FILE` as a person opens it: Chromium renders the page with no
/// console error, every case has its chart, and a screenshot shows the failed case's chart.
@Suite(
  .enabled(if: ancsBuilt, "needs the ancs binary: swift build --build-tests first"),
  .enabled(if: chromiumPath != nil, "Chromium is not installed (make deps installs it)"),
  .timeLimit(scaledMinutes(2)))
struct HTMLReportInChromiumTests {
  @Test func theReportOpensInChromiumWithAChartPerCase() async throws {
    let chromium = try #require(chromiumPath)
    let directory = temporaryPath("html")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let socket = "unix:\(directory)/h.sock"
    let html = "\(directory)/report.html"
    let (status, output, errors) = try await runAncs([
      "conform", "accessory", "--listen", socket, "--case", "ANCS/NC/CP/BV-02", "--case", "ANCS/NC/CP/BV-03",
      "--html", html, "--capture-dir", "\(directory)/captures",
      "--spawn", "\(ancsPath) watch --connect \(socket) --headless --fault swapped-actions",
    ])
    #expect(status == 1, "\(output)\n\(errors)")
    #expect(output.contains("2 cases: 1 passed, 1 failed"))

    let browser = [
      "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(directory)/profile", "--hide-scrollbars",
      "--enable-logging=stderr", "--v=0",
    ]
    let dom = try await offThread { try runToCompletion(chromium, browser + ["--dump-dom", "file://\(html)"]) }
    #expect(dom.status == 0, "\(dom.error)")
    // Chromium logs each console message, errors included, as INFO:CONSOLE.
    let console = dom.error.split(separator: "\n").filter { $0.contains(":CONSOLE") }
    #expect(console.isEmpty, "\(console)")
    #expect(dom.output.components(separatedBy: "<svg class=\"chart\"").count == 3, "a chart per case")
    #expect(dom.output.contains("1 failed"))

    // The page opens on the totals, the table, then the failed case, its chart open.
    let png = "\(directory)/report.png"
    let shot = try await offThread {
      try runToCompletion(chromium, browser + ["--window-size=1000,1100", "--screenshot=\(png)", "file://\(html)"])
    }
    #expect(shot.status == 0, "\(shot.error)")
    // The harness's arrows, the accessory's, and the FAIL badge's red.
    let counted = try await offThread {
      try runToCompletion("/usr/bin/python3", ["-c", pngColourCounter, png, "2f6fdd", "8250df", "cf222e"])
    }
    let numbers = counted.output.split(separator: " ").compactMap {
      Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    try #require(numbers.count == 5, "\(counted.output) \(counted.error)")
    #expect(numbers[0] == 1000 && numbers[1] == 1100)
    #expect(numbers[2] > 2000 && numbers[3] > 2000, "the failed case's chart is not in the screenshot: \(numbers)")
    #expect(numbers[4] > 50, "no FAIL badge in the screenshot: \(numbers)")
  }
}
