import Foundation
import XCTest
import XclawBase
import XclawScreen
import XclawTesting

/// docs/xdotool.md's script with xclaw substituted (`examples/xdotool/notes-xclaw.sh`, line for line
/// `notes-xdotool.sh`), run as written on a display under openbox: it must do what the xdotool one does — the terminal
/// keeps the same text, the search for a missing window takes the same branch, the clipboard round trip prints the
/// same words — and its window lands where asked, at the size nearest 640x400 that xterm's cells allow. (The xdotool
/// original is not run here: its last line dies with BadWindow and leaves ctrl and d held, which docs/xdotool.md
/// shows.)
final class XdotoolScriptTests: XCTestCase {
    private func run(_ script: String, on display: TestDisplay) throws -> (
        output: String, notes: String, dir: URL, status: Int32
    ) {
        let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("examples/xdotool")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-xdotool-\(UUID().uuidString)")
        let bin = dir.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        // `xclaw` on PATH, as an installed one would be.
        try FileManager.default.createSymbolicLink(
            at: bin.appendingPathComponent("xclaw"),
            withDestinationURL: productsDirectory.appendingPathComponent("xclaw"))
        let out = dir.appendingPathComponent("output.txt")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        let handle = try FileHandle(forWritingTo: out)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [examples.appendingPathComponent(script).path]
        process.currentDirectoryURL = dir
        var environment = ProcessInfo.processInfo.environment
        environment["DISPLAY"] = display.name
        environment["PATH"] = bin.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["XCLAW_STATE_DIR"] = dir.appendingPathComponent("state").path
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        // A file, not a pipe: xclip stays in the background holding the clipboard, and would hold a pipe open too.
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let ended = process.exits(within: .seconds(60))
        if !ended { process.terminate() }
        let output = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
        XCTAssertTrue(ended, "\(script) still ran after 60 s: \(output)")
        let notes = (try? String(contentsOf: dir.appendingPathComponent("notes.txt"), encoding: .utf8)) ?? ""
        return (output, notes, dir, ended ? process.terminationStatus : -1)
    }

    func testTheXclawTwinOfTheXdotoolScriptDoesWhatItDoes() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        let openbox = try Openbox(display: display)
        defer { openbox.stop() }
        let xclaw = try run("notes-xclaw.sh", on: display)
        defer { try? FileManager.default.removeItem(at: xclaw.dir) }
        XCTAssertEqual(xclaw.status, 0, xclaw.output)
        // What notes-xdotool.sh leaves: the same notes, the same two lines of output.
        XCTAssertEqual(xclaw.notes, "Dear reader,\nHi\n", xclaw.output)
        XCTAssertTrue(xclaw.output.contains("no such window\n"), xclaw.output)
        XCTAssertTrue(xclaw.output.contains("copied text\n"), xclaw.output)
        let after = try runCLI(["release-all", "--everything", "--json", "--display", display.name])
        XCTAssertEqual(after.text, "{\"released\":0}\n", "xclaw left no key down")
        // xclaw's window move and resize print the window as it ended up: its content at 100,80, on whole cells.
        let row = try XCTUnwrap(
            xclaw.output.split(separator: "\n").last { $0.hasPrefix("0x") && $0.contains("notes") }, xclaw.output)
        let geometry = try XCTUnwrap(row.split(separator: "\t").dropFirst().first, String(row))
        XCTAssertTrue(geometry.hasSuffix("+100+80"), String(row))
        XCTAssertNotEqual(geometry, "640x400+100+80", "xterm's cells do not fit 640x400: the nearest size is taken")
    }
}
