import XCTest
import XclawBase
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// The clipboard against xclip, both ways: text with its aliases, 1 MB of UTF-8 (INCR), a PNG, PRIMARY, and
/// `type --paste`.
final class ClipboardCLITests: XCTestCase {
    nonisolated(unsafe) static var display: TestDisplay?

    override class func setUp() {
        super.setUp()
        display = try? TestDisplay(size: Size(width: 640, height: 480))
    }

    override class func tearDown() {
        display?.stop()
        super.tearDown()
    }

    private var d: String { get throws { try XCTUnwrap(Self.display).name } }

    private func file(_ name: String, _ data: Data) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-clip-\(getpid())-\(name)")
        try data.write(to: url)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url.path
    }

    func testTextRoundTripsWithXclipBothWays() throws {
        let d = try d
        let text = "héllo wörld ✓ \u{1F600}\nsecond line\t"
        let set = try runCLI(["clipboard", "set", text, "--display", d])
        XCTAssertEqual(set.status, 0, set.stderr)
        XCTAssertEqual(try oracle(["xclip", "-o", "-selection", "clipboard"], display: d), text)
        let targets = try oracle(["xclip", "-o", "-selection", "clipboard", "-t", "TARGETS"], display: d)
        for alias in ["TARGETS", "UTF8_STRING", "STRING", "TEXT", "text/plain", "text/plain;charset=utf-8"] {
            XCTAssertTrue(targets.split(separator: "\n").contains(Substring(alias)), targets)
        }
        XCTAssertEqual(
            try oracle(["xclip", "-o", "-selection", "clipboard", "-t", "text/plain;charset=utf-8"], display: d), text)
        // STRING is Latin-1: what Latin-1 has comes through, the rest as '?'.
        let latin = try oracleData(["xclip", "-o", "-selection", "clipboard", "-t", "STRING"], display: d)
        XCTAssertEqual(Array(latin.prefix(5)), [0x68, 0xe9, 0x6c, 0x6c, 0x6f])

        let theirs = try file("in.txt", Data("from xclip: ünïcödé ✓".utf8))
        try oracle(["xclip", "-i", "-selection", "clipboard", theirs], display: d)
        let get = try runCLI(["clipboard", "get", "--display", d])
        XCTAssertEqual(get.status, 0, get.stderr)
        XCTAssertEqual(get.text, "from xclip: ünïcödé ✓")

        // PRIMARY is its own selection.
        XCTAssertEqual(try runCLI(["clipboard", "set", "--primary", "primary text", "--display", d]).status, 0)
        XCTAssertEqual(try oracle(["xclip", "-o", "-selection", "primary"], display: d), "primary text")
        XCTAssertEqual(try runCLI(["clipboard", "get", "--primary", "--display", d]).text, "primary text")
        XCTAssertEqual(try runCLI(["clipboard", "get", "--display", d]).text, "from xclip: ünïcödé ✓")

        // A type the owner does not offer is exit 1, naming what it offers.
        let html = try runCLI(["clipboard", "get", "--type", "text/html", "--primary", "--display", d])
        XCTAssertEqual(html.status, 1)
        XCTAssertTrue(html.stderr.contains("offers TARGETS"), html.stderr)
    }

    func testOneMegabyteOfUTF8GoesByINCRBothWays() throws {
        let d = try d
        let big = String(repeating: "ü€ ascii ✓\n", count: 80_000)  // about 1.2 MB
        let bytes = Data(big.utf8)
        XCTAssertGreaterThan(bytes.count, 1_000_000)
        XCTAssertGreaterThan(bytes.count, SelectionOwner.chunkLimit * 4)
        let set = try runCLI(["clipboard", "set", "-", "--display", d], stdin: bytes)
        XCTAssertEqual(set.status, 0, set.stderr)
        XCTAssertEqual(try oracleData(["xclip", "-o", "-selection", "clipboard"], display: d), bytes)

        let path = try file("big.txt", bytes)
        try oracle(["xclip", "-i", "-selection", "clipboard", path], display: d)
        let get = try runCLI(["clipboard", "get", "--display", d])
        XCTAssertEqual(get.status, 0, get.stderr)
        XCTAssertEqual(get.stdout, bytes)
    }

    func testAPNGRoundTripsBinarySafe() throws {
        let d = try d
        let capture = try runCLI(["capture", "-o", "-", "--display", d])
        XCTAssertEqual(capture.status, 0, capture.stderr)
        let png = capture.stdout
        XCTAssertTrue(png.starts(with: [0x89, 0x50, 0x4e, 0x47]))
        let set = try runCLI(["clipboard", "set", "--type", "image/png", "-", "--display", d], stdin: png)
        XCTAssertEqual(set.status, 0, set.stderr)
        XCTAssertEqual(try oracleData(["xclip", "-o", "-selection", "clipboard", "-t", "image/png"], display: d), png)

        // Bytes that are not UTF-8 (a PNG is full of them) through xclip and back.
        var other = png
        other.append(contentsOf: [0, 0xff, 0xfe, 0x80])
        let path = try file("x.png", other)
        try oracle(["xclip", "-i", "-selection", "clipboard", "-t", "image/png", path], display: d)
        let get = try runCLI(["clipboard", "get", "--type", "image/png", "--display", d])
        XCTAssertEqual(get.status, 0, get.stderr)
        XCTAssertEqual(get.stdout, other)
        let json = try runCLI(["clipboard", "get", "--type", "image/png", "--json", "--display", d])
        XCTAssertTrue(json.text.contains("\"base64\":\"\(other.base64EncodedString())\""))
    }

    func testPasteSetsPressesCtrlVAndRestores() throws {
        let d = try d
        let fixture = try Fixture(display: d, title: "paster", frame: Rect(x: 0, y: 0, width: 300, height: 200))
        defer { fixture.stop() }
        XCTAssertEqual(try runCLI(["activate", "paster", "--display", d]).status, 0)
        XCTAssertEqual(try runCLI(["clipboard", "set", "old contents", "--display", d]).status, 0)
        // The fixture does not paste: an xclip started when it sees ctrl+v plays the app that asks for the clipboard.
        let pasted = DataBox()
        let app = Thread {
            let presses = fixture.wait(timeout: 10) { events in
                events.contains { $0.kind == .keyPress && $0.keysym == "v" && ($0.state ?? 0) & 4 != 0 }
            }
            guard !presses.isEmpty else { return pasted.set(Data()) }
            pasted.set((try? oracleData(["xclip", "-o", "-selection", "clipboard"], display: d)) ?? Data())
        }
        app.start()
        let paste = try runCLI(["type", "--paste", "pasted ✓ text", "--display", d])
        XCTAssertEqual(paste.status, 0, paste.stderr)
        eventually("the app read the clipboard on ctrl+v") { pasted.isSet }
        XCTAssertEqual(String(decoding: pasted.data, as: UTF8.self), "pasted ✓ text")
        XCTAssertEqual(try oracle(["xclip", "-o", "-selection", "clipboard"], display: d), "old contents")

        // With nobody asking, the paste is reported (exit 1) and the old contents are still restored.
        let unread = try runCLI(["type", "--paste", "nobody reads this", "--display", d])
        XCTAssertEqual(unread.status, 1)
        XCTAssertTrue(unread.stderr.contains("no app asked for the clipboard"), unread.stderr)
        XCTAssertEqual(try oracle(["xclip", "-o", "-selection", "clipboard"], display: d), "old contents")
    }
}
