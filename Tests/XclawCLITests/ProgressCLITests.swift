import Foundation
import XCTest
import XclawBase
import XclawScreen
import XclawTesting

/// Long waits on a terminal say what they wait for, the time elapsed and the timeout on one stderr line, cleared
/// before the command's own output; nothing on a pipe or with --json. The terminal is a real pty (`script`).
final class ProgressCLITests: XCTestCase {
    nonisolated(unsafe) static var display: TestDisplay?

    override class func setUp() {
        super.setUp()
        display = try? TestDisplay(size: Size(width: 320, height: 240))
    }

    override class func tearDown() {
        display?.stop()
        super.tearDown()
    }

    /// What `xclaw ARGUMENTS` writes on a terminal (stdout and stderr both: one pty), and its exit status.
    private func onTerminal(_ arguments: [String]) throws -> (text: String, status: Int32) {
        let d = try XCTUnwrap(Self.display).name
        // --display right after the command: `launch … -- COMMAND` ends the options.
        let words =
            [productsDirectory.appendingPathComponent("xclaw").path] + arguments.prefix(1) + ["--display", d]
            + arguments.dropFirst()
        let quoted =
            words
            .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        // script's exit status is the command's (-e); its stdout is everything the pty showed.
        let run = try Subprocess.run(["/usr/bin/script", "-qec", quoted, "/dev/null"], timeout: .seconds(30))
        guard case .exited(let status) = run.ending else { return (String(decoding: run.stdout, as: UTF8.self), -1) }
        return (String(decoding: run.stdout, as: UTF8.self), status)
    }

    func testWatchAndTapSayWhatTheyWaitForOnATerminalOnly() throws {
        let watch = try onTerminal(["watch", "--text", "Nowhere", "--timeout", "1.5"])
        XCTAssertEqual(watch.status, 1)
        XCTAssertTrue(watch.text.contains("xclaw: waiting for text \"Nowhere\": "), watch.text)
        XCTAssertTrue(watch.text.contains(" s of 1.5 s"), watch.text)
        // Cleared before the result: the message starts on a clean line.
        let cleared = try XCTUnwrap(watch.text.range(of: "\r\u{1b}[K", options: .backwards), watch.text)
        XCTAssertTrue(watch.text[cleared.upperBound...].hasPrefix("xclaw: "), watch.text)
        XCTAssertFalse(watch.text[cleared.upperBound...].contains("xclaw: waiting for"), watch.text)

        let tap = try onTerminal(["tap", "Nowhere", "--timeout", "1"])
        XCTAssertEqual(tap.status, 1)
        XCTAssertTrue(tap.text.contains("xclaw: waiting for \"Nowhere\" to appear: "), tap.text)

        let json = try onTerminal(["watch", "--text", "Nowhere", "--timeout", "1", "--json"])
        XCTAssertEqual(json.status, 1)
        XCTAssertFalse(json.text.contains("xclaw: waiting for") || json.text.contains("\u{1b}[K"), json.text)
        let piped = try runCLI([
            "watch", "--text", "Nowhere", "--timeout", "1", "--display", try XCTUnwrap(Self.display).name,
        ])
        XCTAssertEqual(piped.status, 1)
        XCTAssertFalse(piped.stderr.contains("xclaw: waiting for") || piped.stderr.contains("\u{1b}[K"), piped.stderr)
    }

    func testLaunchWaitWindowSaysSoToo() throws {
        let launched = try onTerminal(["launch", "--wait-window", "3", "--", "sleep", "5"])
        XCTAssertEqual(launched.status, 1)
        XCTAssertTrue(launched.text.contains("xclaw: waiting for a window of process "), launched.text)
        XCTAssertTrue(launched.text.contains(" s of 3.0 s"), launched.text)
    }
}
