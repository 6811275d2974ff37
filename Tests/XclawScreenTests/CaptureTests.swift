import XCTest
import XclawTesting
import XclawScreen

/// Pixel-exact capture against a real Xvfb: known rectangles drawn by the fixture, read back both ways.
final class CaptureTests: XCTestCase {
    nonisolated(unsafe) static var scene: Scene?
    static var fixture: Fixture? { scene?.fixture }
    static let frame = Rect(x: 100, y: 50, width: 300, height: 200)
    static let rects: [(Rect, String)] = [
        (Rect(x: 10, y: 10, width: 40, height: 30), "#ff0000"), (Rect(x: 60, y: 10, width: 40, height: 30), "#00ff00"),
        (Rect(x: 110, y: 10, width: 40, height: 30), "#0000ff"), (Rect(x: 10, y: 100, width: 1, height: 1), "#123456"),
        (Rect(x: 200, y: 150, width: 99, height: 49), "#fedcba"),
    ]

    override class func setUp() {
        super.setUp()
        do { scene = try Scene(title: "capture target", frame: frame, background: "#202830", rects: rects) } catch {
            XCTFail("could not start the display and fixture: \(error)")
        }
    }

    override class func tearDown() {
        scene?.stop()
        super.tearDown()
    }

    private func display() throws -> TestDisplay {
        try XCTUnwrap(Self.scene?.display, "no display")
    }

    /// Checks every drawn rectangle and the background in a frame whose top-left is at `origin` on screen.
    private func assertFixturePixels(_ frame: Frame, origin: Point, file: StaticString = #filePath, line: UInt = #line) throws {
        let window = Self.frame
        for (rect, hex) in Self.rects {
            let expected = try RGB(hex: hex)
            for (dx, dy) in [(0, 0), (rect.width - 1, 0), (0, rect.height - 1), (rect.width - 1, rect.height - 1)] {
                let x = window.x + rect.x + dx - origin.x, y = window.y + rect.y + dy - origin.y
                XCTAssertEqual(frame.pixel(x: x, y: y), expected, "\(hex) at \(x),\(y)", file: file, line: line)
            }
            // Just outside the rectangle is background.
            XCTAssertEqual(frame.pixel(x: window.x + rect.x - 1 - origin.x, y: window.y + rect.y - origin.y),
                           try RGB(hex: "#202830"), file: file, line: line)
        }
        // The root window outside the fixture is black on Xvfb (when the frame reaches that far).
        if let outside = frame.pixel(x: window.x - 1 - origin.x, y: window.y - origin.y) {
            XCTAssertEqual(outside, RGB(r: 0, g: 0, b: 0), file: file, line: line)
        }
    }

    func testFullScreenIsPixelExactWithBothMethods() throws {
        let connection = try display().connect()
        let shm = try ScreenCapturer(connection: connection, method: .shm)
        XCTAssertEqual(shm.method, .shm)
        let viaShm = try shm.capture()
        XCTAssertEqual(viaShm.size, Size(width: 1280, height: 800))
        try assertFixturePixels(viaShm, origin: Point(x: 0, y: 0))
        let viaGetImage = try ScreenCapturer(connection: connection, method: .getImage).capture()
        try assertFixturePixels(viaGetImage, origin: Point(x: 0, y: 0))
        XCTAssertEqual(viaShm.rgb(), viaGetImage.rgb(), "XShm and XGetImage disagree")
        // The reused segment gives the same answer twice.
        XCTAssertEqual(try shm.capture().rgb(), viaShm.rgb())
    }

    func testRegionsMatchTheFullFrame() throws {
        let connection = try display().connect()
        let full = try ScreenCapturer(connection: connection).capture()
        for method in [CaptureMethod.shm, .getImage] {
            let capturer = try ScreenCapturer(connection: connection, method: method)
            for region in [Rect(x: 95, y: 45, width: 310, height: 210), Rect(x: 110, y: 60, width: 1, height: 1),
                           Rect(x: 0, y: 0, width: 1280, height: 1), Rect(x: 1279, y: 799, width: 1, height: 1)] {
                let part = try capturer.capture(region)
                XCTAssertEqual(part.size, region.size)
                XCTAssertEqual(part.rgb(), try full.cropped(to: region).rgb(), "\(method) \(region)")
            }
            try assertFixturePixels(try capturer.capture(Rect(x: 95, y: 45, width: 310, height: 210)),
                                    origin: Point(x: 95, y: 45))
        }
    }

    func testBadRegionsAreRejected() throws {
        let capturer = try ScreenCapturer(connection: try display().connect())
        for region in [Rect(x: 1200, y: 0, width: 100, height: 10), Rect(x: -1, y: 0, width: 10, height: 10),
                       Rect(x: 0, y: 0, width: 0, height: 10)] {
            XCTAssertThrowsError(try capturer.capture(region)) { error in
                XCTAssertEqual((error as? ScreenError)?.exitStatus, .usage, "\(region): \(error)")
            }
        }
    }

    func testWindowCaptureByIdAndName() throws {
        let connection = try display().connect()
        let manager = WindowManager(connection: connection)
        let byName = try manager.find("CAPTURE tar")
        let fixtureWindow = try XCTUnwrap(Self.fixture?.window)
        XCTAssertEqual(byName.id, fixtureWindow)
        XCTAssertEqual(try manager.find("0x" + String(fixtureWindow, radix: 16)).id, fixtureWindow)
        let frame = try ScreenCapturer(connection: connection).capture(window: byName)
        XCTAssertEqual(frame.size, Self.frame.size)
        try assertFixturePixels(frame, origin: Point(x: Self.frame.x, y: Self.frame.y))
    }

    func testCLICapturesPNGToFileAndStdout() throws {
        let d = try display()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-capture-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("shot.png").path
        let result = try runCLI(["capture", "--display", d.name, "--window", "capture target", "-o", file, "--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.text.contains("\"width\":300"), result.text)
        let decoded = try PNG.decode(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        try assertFixturePixels(decoded, origin: Point(x: Self.frame.x, y: Self.frame.y))

        let stdout = try runCLI(["capture", "--display", d.name, "--region", "100,50,300,200", "-o", "-"])
        XCTAssertEqual(stdout.status, 0, stdout.stderr)
        XCTAssertEqual(try PNG.decode(Array(stdout.stdout)).rgb(), decoded.rgb())

        let scaled = try runCLI(["capture", "--display", d.name, "--scale-for-model", "-o", file, "--json"])
        XCTAssertEqual(scaled.status, 0, scaled.stderr)
        // 1280x800 is within Claude's limits except the area: 1280*800 = 1.02 MP, so it stays as it is.
        XCTAssertEqual(try PNG.decode(Array(try Data(contentsOf: URL(fileURLWithPath: file)))).size,
                       Size(width: 1280, height: 800))

        // An unwritable path fails with exit 2 and leaves nothing behind.
        let bad = try runCLI(["capture", "--display", d.name, "-o", dir.path + "/missing/dir/x.png"])
        XCTAssertEqual(bad.status, 2, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("cannot write"), bad.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["shot.png"])

        let empty = try runCLI(["capture", "--display", d.name, "--region", "0,0,0,10", "-o", file])
        XCTAssertEqual(empty.status, 2, empty.stderr)
        XCTAssertTrue(empty.stderr.contains("empty"), empty.stderr)
    }

    func testModelScaledCaptureOfAFullHDScreen() throws {
        let big = try TestDisplay(size: Size(width: 1920, height: 1080))
        defer { big.stop() }
        let fixture = try Fixture(display: big.name, frame: Rect(x: 0, y: 0, width: 1920, height: 1080),
                                  background: "#336699")
        defer { fixture.stop() }
        let capturer = try ScreenCapturer(connection: try big.connect())
        let (frame, geometry) = try capturer.captureForModel()
        XCTAssertEqual(frame.size, Size(width: 1429, height: 804))
        XCTAssertEqual(geometry.model, frame.size)
        XCTAssertEqual(Set(frame.rgb()), [0x33, 0x66, 0x99])
    }
}

/// A server without MIT-SHM (as a remote display is): auto falls back to XGetImage, shm is refused clearly.
final class NoSharedMemoryCaptureTests: XCTestCase {
    func testFallsBackToGetImage() throws {
        let display = try TestDisplay(size: Size(width: 640, height: 480), shm: false)
        defer { display.stop() }
        let fixture = try Fixture(display: display.name, frame: Rect(x: 10, y: 10, width: 100, height: 100),
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
        let fixture = try Fixture(display: display.name, frame: Rect(x: 0, y: 0, width: 50, height: 50),
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

    func testSixteenBitDepthConvertsThroughTheMasks() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240), depth: 16)
        defer { display.stop() }
        let fixture = try Fixture(display: display.name, frame: Rect(x: 0, y: 0, width: 100, height: 100),
                                  background: "#ffffff", rects: [(Rect(x: 0, y: 0, width: 10, height: 10), "#ff0000"),
                                                                 (Rect(x: 10, y: 0, width: 10, height: 10), "#0000ff")])
        defer { fixture.stop() }
        for method in [CaptureMethod.shm, .getImage] {
            let frame = try ScreenCapturer(connection: try display.connect(), method: method).capture()
            XCTAssertEqual(frame.pixel(x: 5, y: 5), RGB(r: 255, g: 0, b: 0), "\(method)")
            XCTAssertEqual(frame.pixel(x: 15, y: 5), RGB(r: 0, g: 0, b: 255), "\(method)")
            XCTAssertEqual(frame.pixel(x: 50, y: 50), RGB(r: 255, g: 255, b: 255), "\(method)")
        }
    }
}
