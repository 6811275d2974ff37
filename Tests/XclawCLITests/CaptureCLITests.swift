import Foundation
import XCTest
import XclawScreen
import XclawTesting

/// `xclaw capture` on the capture scene: files, stdout, model scaling and bad paths.
final class CaptureCLITests: XCTestCase {
    func testCLICapturesPNGToFileAndStdout() throws {
        let scene = try CaptureScene.start()
        defer { scene.stop() }
        let d = scene.display
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-capture-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("shot.png").path
        let result = try runCLI(["capture", "--display", d.name, "--window", "capture target", "-o", file, "--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.text.contains("\"width\":300"), result.text)
        let decoded = try PNG.decode(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        for check in try CaptureScene.pixelChecks(
            decoded, origin: Point(x: CaptureScene.frame.x, y: CaptureScene.frame.y))
        {
            XCTAssertEqual(check.seen, check.expected, check.what)
        }

        let stdout = try runCLI(["capture", "--display", d.name, "--region", "100,50,300,200", "-o", "-"])
        XCTAssertEqual(stdout.status, 0, stdout.stderr)
        XCTAssertEqual(try PNG.decode(Array(stdout.stdout)).rgb(), decoded.rgb())

        let scaled = try runCLI(["capture", "--display", d.name, "--scale-for-model", "-o", file, "--json"])
        XCTAssertEqual(scaled.status, 0, scaled.stderr)
        // 1280x800 is within Claude's limits except the area: 1280*800 = 1.02 MP, so it stays as it is.
        XCTAssertEqual(
            try PNG.decode(Array(try Data(contentsOf: URL(fileURLWithPath: file)))).size,
            Size(width: 1280, height: 800))

        // One pixel's colour, as the scene painted it; a point off the screen or malformed is bad usage.
        XCTAssertEqual(try runCLI(["pixel", "110,60", "--display", d.name]).text, "#ff0000\n")
        XCTAssertEqual(
            try runCLI(["pixel", "300,200", "--json", "--display", d.name]).text,
            "{\"color\":\"#fedcba\",\"x\":300,\"y\":200}\n")
        for bad in ["5000,10", "-1,3", "12", "a,b"] {
            let refused = try runCLI(["pixel", bad, "--display", d.name])
            XCTAssertEqual(refused.status, 2, "\(bad): \(refused.stderr)")
        }

        // watch --pixel with a tolerance per channel: #ff0000 is within 15 of #f00a00, not within 14.
        let near = ["watch", "--pixel", "110,60", "--color", "#f00a00", "--display", d.name]
        let within = try runCLI(near + ["--tolerance", "15", "--timeout", "5"])
        XCTAssertEqual(within.status, 0, within.stderr)
        XCTAssertTrue(within.text.contains("± 15"), within.text)
        let outside = try runCLI(near + ["--tolerance", "14", "--timeout", "0.3"])
        XCTAssertEqual(outside.status, 1, outside.stderr)
        XCTAssertTrue(outside.stderr.contains("is #ff0000"), outside.stderr)
        XCTAssertEqual(try runCLI(near + ["--tolerance", "256"]).status, 2)
        XCTAssertEqual(try runCLI(["watch", "--text", "x", "--tolerance", "3", "--display", d.name]).status, 2)

        // An unwritable path fails with exit 2 and leaves nothing behind.
        let bad = try runCLI(["capture", "--display", d.name, "-o", dir.path + "/missing/dir/x.png"])
        XCTAssertEqual(bad.status, 2, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("cannot write"), bad.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["shot.png"])

        let empty = try runCLI(["capture", "--display", d.name, "--region", "0,0,0,10", "-o", file])
        XCTAssertEqual(empty.status, 2, empty.stderr)
        XCTAssertTrue(empty.stderr.contains("empty"), empty.stderr)
    }

    /// `-o` onto special files writes through them, as scrot and cp do: a rename over `/dev/null` (as root) replaced
    /// the device with a regular file and broke every later program that writes there.
    func testCaptureWritesThroughDevNullAFIFOAndStdout() throws {
        let scene = try CaptureScene.start()
        defer { scene.stop() }
        let d = scene.display
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-special-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let region = ["--display", d.name, "--region", "100,50,300,200"]
        let reference = try runCLI(["capture", "-o", "-"] + region)
        XCTAssertEqual(reference.status, 0, reference.stderr)

        let null = try runCLI(["capture", "-o", "/dev/null", "--json"] + region)
        XCTAssertEqual(null.status, 0, null.stderr)
        XCTAssertTrue(null.text.contains("\"width\":300"), null.text)
        XCTAssertNil(SpecialFiles.nullDeviceProblem())

        // Served by a daemon, /dev/stdout is the asking CLI's stdout, not the daemon's.
        let stdout = try runCLI(["capture", "-o", "/dev/stdout"] + region)
        XCTAssertEqual(stdout.status, 0, stdout.stderr)
        XCTAssertEqual(try PNG.decode(Array(stdout.stdout)).rgb(), try PNG.decode(Array(reference.stdout)).rgb())
        XCTAssertEqual(stdout.stdout, reference.stdout, "the PNG alone: no path printed after it")

        let fifo = try SpecialFiles.FIFOReader(path: dir.appendingPathComponent("shots.fifo").path)
        let piped = try runCLI(["capture", "-o", fifo.path] + region)
        XCTAssertEqual(piped.status, 0, piped.stderr)
        let got = try XCTUnwrap(fifo.contents(), "the FIFO's reader got the PNG and its end")
        XCTAssertEqual(try PNG.decode(Array(got)).rgb(), try PNG.decode(Array(reference.stdout)).rgb())
        XCTAssertTrue(SpecialFiles.isFIFO(fifo.path), "the FIFO is still a FIFO")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["shots.fifo"])
    }
}

/// A server without MIT-SHM (as a remote display is): auto falls back to XGetImage, shm is refused clearly, in
/// process and through `xclaw capture`.
final class NoSharedMemoryCaptureCLITests: XCTestCase {
    func testFallsBackToGetImage() throws {
        let display = try TestDisplay(size: Size(width: 640, height: 480), shm: false)
        defer { display.stop() }
        let fixture = try Fixture(
            display: display.name, frame: Rect(x: 10, y: 10, width: 100, height: 100),
            background: "#00ff00")
        defer { fixture.stop() }
        let connection = try display.connect()
        let auto = try ScreenCapturer(connection: connection)
        XCTAssertEqual(auto.method, .getImage)
        let frame = try auto.capture()
        XCTAssertEqual(frame.pixel(x: 10, y: 10), RGB(r: 0, g: 255, b: 0))
        XCTAssertEqual(frame.pixel(x: 9, y: 9), RGB(r: 0, g: 0, b: 0))
        XCTAssertThrowsError(try ScreenCapturer(connection: connection, method: .shm)) { error in
            XCTAssertEqual(error as? ScreenError, .extensionMissing("MIT-SHM"))
        }
        let cli = try runCLI(["capture", "--display", display.name, "-o", "-", "--method", "shm"])
        XCTAssertEqual(cli.status, 3, cli.stderr)
        XCTAssertTrue(cli.stderr.contains("MIT-SHM"), cli.stderr)
    }

    func testServerThatCannotAttachOurSegmentFallsBack() throws {
        // Xvfb in its own IPC namespace (as in a container) offers MIT-SHM but cannot see our segment.
        let display = try TestDisplay(size: Size(width: 320, height: 240), launcher: ["/usr/bin/unshare", "--ipc"])
        defer { display.stop() }
        let fixture = try Fixture(
            display: display.name, frame: Rect(x: 0, y: 0, width: 50, height: 50),
            background: "#ff00ff")
        defer { fixture.stop() }
        let connection = try display.connect()
        let auto = try ScreenCapturer(connection: connection)
        XCTAssertEqual(auto.method, .getImage)
        XCTAssertEqual(try auto.capture().pixel(x: 5, y: 5), RGB(r: 255, g: 0, b: 255))
        XCTAssertThrowsError(try ScreenCapturer(connection: connection, method: .shm)) { error in
            XCTAssertEqual((error as? ScreenError)?.exitStatus, .display, "\(error)")
        }
        let cli = try runCLI(["capture", "--display", display.name, "-o", "-"])
        XCTAssertEqual(cli.status, 0, cli.stderr)
        XCTAssertEqual(try PNG.decode(Array(cli.stdout)).pixel(x: 5, y: 5), RGB(r: 255, g: 0, b: 255))
        XCTAssertEqual(try runCLI(["capture", "--display", display.name, "-o", "-", "--method", "shm"]).status, 3)
    }
}
