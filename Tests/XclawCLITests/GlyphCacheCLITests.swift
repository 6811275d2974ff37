import Foundation
import XCTest
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// The glyphs xclaw renders from the font files are kept in the user's cache directory, so only the first process
/// renders them; the file changes nothing that is read, and a damaged one is ignored.
final class GlyphCacheCLITests: XCTestCase {
    func testRendersAreKeptBetweenProcessesAndADamagedFileIsIgnored() throws {
        let display = try TestDisplay(size: Size(width: 1280, height: 800))
        defer { display.stop() }
        let xcalc = Process()
        xcalc.executableURL = URL(fileURLWithPath: "/usr/bin/xcalc")
        xcalc.environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": display.name]) { $1 }
        try xcalc.run()
        defer { xcalc.terminate() }
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-glyphs-\(getpid())")
        defer { try? FileManager.default.removeItem(at: base) }
        let cache = base.appendingPathComponent("cache")
        let d = ["--display", display.name]
        func snapshot(_ run: Int) throws -> String {
            let result = try runCLI(
                ["snapshot", "--window", "Calculator"] + d,
                environment: [
                    "XDG_CACHE_HOME": cache.path, "XCLAW_STATE_DIR": base.appendingPathComponent("state\(run)").path,
                ])
            XCTAssertEqual(result.status, 0, result.stderr)
            // Refs and change marks aside, the elements as read.
            return result.text.split(separator: "\n").dropFirst(2).map {
                $0.split(separator: " ").dropFirst().joined(separator: " ")
            }.joined(separator: "\n")
        }
        XCTAssertEqual(
            try runCLI(["watch", "--text", "DEC", "--window", "Calculator", "--timeout", "15"] + d).status, 0)
        let first = try snapshot(1)
        XCTAssertTrue(first.contains("button \"=\""), first)
        let file = cache.appendingPathComponent("xclaw/glyphs.bin")
        // A daemon saves after it replies.
        eventually("the glyph cache is saved", within: .seconds(5)) {
            FileManager.default.fileExists(atPath: file.path)
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        XCTAssertEqual(attributes[.posixPermissions] as? Int, 0o600)
        XCTAssertGreaterThan(attributes[.size] as? Int ?? 0, 1000)
        XCTAssertEqual(try snapshot(2), first, "read from the kept renders, the same")
        try Data("xclaw-glyphs 1\ngarbage".utf8).write(to: file)
        XCTAssertEqual(try snapshot(3), first, "a damaged file is ignored")
    }
}
