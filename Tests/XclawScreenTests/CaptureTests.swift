import XCTest
import XclawScreen
import XclawTesting

/// Pixel-exact capture against a real Xvfb: known rectangles drawn by the fixture, read back both ways.
final class CaptureTests: XCTestCase {
    nonisolated(unsafe) static var scene: Scene?
    static var fixture: Fixture? { scene?.fixture }
    static let frame = CaptureScene.frame

    override class func setUp() {
        super.setUp()
        do { scene = try CaptureScene.start() } catch {
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
    private func assertFixturePixels(_ frame: Frame, origin: Point, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        for check in try CaptureScene.pixelChecks(frame, origin: origin) {
            XCTAssertEqual(check.seen, check.expected, check.what, file: file, line: line)
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
            for region in [
                Rect(x: 95, y: 45, width: 310, height: 210), Rect(x: 110, y: 60, width: 1, height: 1),
                Rect(x: 0, y: 0, width: 1280, height: 1), Rect(x: 1279, y: 799, width: 1, height: 1),
            ] {
                let part = try capturer.capture(region)
                XCTAssertEqual(part.size, region.size)
                XCTAssertEqual(part.rgb(), try full.cropped(to: region).rgb(), "\(method) \(region)")
            }
            try assertFixturePixels(
                try capturer.capture(Rect(x: 95, y: 45, width: 310, height: 210)),
                origin: Point(x: 95, y: 45))
        }
    }

    func testBadRegionsAreRejected() throws {
        let capturer = try ScreenCapturer(connection: try display().connect())
        for region in [
            Rect(x: 1200, y: 0, width: 100, height: 10), Rect(x: -1, y: 0, width: 10, height: 10),
            Rect(x: 0, y: 0, width: 0, height: 10),
        ] {
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

    func testModelScaledCaptureOfAFullHDScreen() throws {
        let big = try TestDisplay(size: Size(width: 1920, height: 1080))
        defer { big.stop() }
        let fixture = try Fixture(
            display: big.name, frame: Rect(x: 0, y: 0, width: 1920, height: 1080),
            background: "#336699")
        defer { fixture.stop() }
        let capturer = try ScreenCapturer(connection: try big.connect())
        let (frame, geometry) = try capturer.captureForModel()
        XCTAssertEqual(frame.size, Size(width: 1456, height: 819))
        XCTAssertEqual(geometry.model, frame.size)
        XCTAssertEqual(Set(frame.rgb()), [0x33, 0x66, 0x99])
    }
}

/// A server without MIT-SHM (as a remote display is): auto falls back to XGetImage, shm is refused clearly.
final class NoSharedMemoryCaptureTests: XCTestCase {

    func testSixteenBitDepthConvertsThroughTheMasks() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240), depth: 16)
        defer { display.stop() }
        let fixture = try Fixture(
            display: display.name, frame: Rect(x: 0, y: 0, width: 100, height: 100),
            background: "#ffffff",
            rects: [
                (Rect(x: 0, y: 0, width: 10, height: 10), "#ff0000"),
                (Rect(x: 10, y: 0, width: 10, height: 10), "#0000ff"),
            ])
        defer { fixture.stop() }
        for method in [CaptureMethod.shm, .getImage] {
            let frame = try ScreenCapturer(connection: try display.connect(), method: method).capture()
            XCTAssertEqual(frame.pixel(x: 5, y: 5), RGB(r: 255, g: 0, b: 0), "\(method)")
            XCTAssertEqual(frame.pixel(x: 15, y: 5), RGB(r: 0, g: 0, b: 255), "\(method)")
            XCTAssertEqual(frame.pixel(x: 50, y: 50), RGB(r: 255, g: 255, b: 255), "\(method)")
        }
    }
}
