import Foundation
import XCTest
import XclawTesting

/// `xclaw bench` is a thin hand-over: the benchmarks are their own binary, `xclaw-bench`, beside `xclaw`.
final class BenchCommandTests: XCTestCase {
    func testBenchHandsOverToTheBenchmarkBinary() throws {
        let help = try runCLI(["bench", "capture", "--help"])
        XCTAssertEqual(help.status, 0, help.stderr)
        XCTAssertTrue(help.text.contains("USAGE: xclaw bench capture"), help.text)
        // Bad usage is the benchmark binary's, with xclaw's exit code for it.
        let bad = try runCLI(["bench", "capture", "--iterations", "0"])
        XCTAssertEqual(bad.status, 2, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("--iterations must be at least 1"), bad.stderr)
        // The fleet's layout can be forced back to one network namespace, and its options are checked before
        // anything starts.
        let fleet = try runCLI(["bench", "fleet", "--help"])
        XCTAssertEqual(fleet.status, 0, fleet.stderr)
        XCTAssertTrue(fleet.text.contains("--no-netns"), fleet.text)
        let tooMany = try runCLI(["bench", "fleet", "--no-netns", "--workers", "201"])
        XCTAssertEqual(tooMany.status, 2, tooMany.stderr)
        XCTAssertTrue(tooMany.stderr.contains("--workers must be from 2 to 200"), tooMany.stderr)
    }

    func testAMissingBenchmarkBinaryIsExplained() throws {
        // A copy of xclaw (the front and the full binary) alone in a directory: the product built without the
        // benchmarks.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-alone-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let lone = dir.appendingPathComponent("xclaw")
        for name in ["xclaw", "xclaw-core"] {
            try FileManager.default.copyItem(
                at: productsDirectory.appendingPathComponent(name), to: dir.appendingPathComponent(name))
        }
        let process = Process()
        process.executableURL = lone
        process.arguments = ["bench", "capture"]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 5, message)
        XCTAssertTrue(message.contains("swift build -c release --product xclaw-bench"), message)
    }
}
