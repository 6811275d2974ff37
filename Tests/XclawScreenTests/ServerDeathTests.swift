import Foundation
import XCTest
import XclawScreen

/// The X server dies under a running capture loop: typed errors, the process lives, reconnecting works.
final class ServerDeathTests: XCTestCase {
    func testCaptureLoopSurvivesServerDeathAndReconnects() throws {
        let first = try TestDisplay(size: Size(width: 640, height: 480))
        let number = first.server.number
        let name = first.name
        var connection = try DisplayConnection(name: name)
        var capturer = try ScreenCapturer(connection: connection)
        XCTAssertEqual(try capturer.capture().size, Size(width: 640, height: 480))

        // Kill the server from another thread while this one keeps capturing.
        let killer = Thread {
            Thread.sleep(forTimeInterval: 0.2)
            kill(first.server.pid, SIGKILL)
        }
        killer.start()
        var captures = 0
        var failure: Error?
        let deadline = Date().addingTimeInterval(10)
        while failure == nil && Date() < deadline {
            do { _ = try capturer.capture(); captures += 1 } catch { failure = error }
        }
        XCTAssertGreaterThan(captures, 0)
        XCTAssertEqual(failure as? ScreenError, .displayLost(name))
        XCTAssertFalse(connection.isAlive)
        // Every later call fails the same way, at once, instead of exiting or hanging.
        XCTAssertThrowsError(try capturer.capture()) { XCTAssertEqual($0 as? ScreenError, .displayLost(name)) }
        XCTAssertThrowsError(try InputController(connection: connection).move(to: Point(x: 1, y: 1)))
        XCTAssertThrowsError(try WindowManager(connection: connection).list()) {
            XCTAssertEqual(($0 as? ScreenError)?.exitStatus, .display)
        }
        first.stop()

        // The server comes back on the same display number; a new connection works.
        let second = try TestDisplay(size: Size(width: 800, height: 600), number: number)
        defer { second.stop() }
        connection = try DisplayConnection.reconnect(name: name, timeout: .seconds(5))
        capturer = try ScreenCapturer(connection: connection)
        XCTAssertEqual(try capturer.capture().size, Size(width: 800, height: 600))
    }
}
