import CX11
import Foundation
import XCTest
import XclawTesting
import XclawTimeTesting

@testable import XclawScreen

/// The X server dies under a running capture loop: typed errors, the process lives, reconnecting works.
final class ServerDeathTests: XCTestCase {
    func testCaptureLoopSurvivesServerDeathAndReconnects() throws {
        let first = try TestDisplay.restartable(size: Size(width: 640, height: 480))
        let number = first.server.number
        let name = first.name
        var connection = try DisplayConnection(name: name)
        var capturer = try ScreenCapturer(connection: connection)
        XCTAssertEqual(try capturer.capture().size, Size(width: 640, height: 480))

        // Kill the server from another thread while this one keeps capturing.
        let killer = Thread {
            Thread.sleep(forTimeInterval: 0.2)  // kept: the scenario, the server dies while captures go on
            kill(first.server.pid, SIGKILL)
        }
        killer.start()
        var captures = 0
        var failure: Error?
        eventually("a capture fails once the server is gone", every: .milliseconds(1)) {
            do {
                _ = try capturer.capture()
                captures += 1
                return false
            } catch {
                failure = error
                return true
            }
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
        let droppedBefore = DisplayConnection.census.dropped
        let lostSocket = XConnectionNumber(connection.handle)
        connection = try DisplayConnection.reconnect(name: name, timeout: .seconds(5))
        capturer = try ScreenCapturer(connection: connection)  // the last holder of the lost connection lets go
        // The lost connection, met by Xlib on this thread, is dropped at once: its socket is closed.
        XCTAssertEqual(DisplayConnection.census.dropped, droppedBefore + 1)
        XCTAssertEqual(fcntl(lostSocket, F_GETFD), -1, "the lost connection's socket is closed")
        XCTAssertEqual(try capturer.capture().size, Size(width: 800, height: 600))
    }

    /// Closing a dead connection runs Xlib's IO error handler once more; the loss it records must not outlive the
    /// close, because malloc may hand the address straight to the next connection (CI failed this way on `:0`).
    func testClosingADeadConnectionLeavesNoLossBehind() throws {
        let doomed = try TestDisplay(size: Size(width: 320, height: 240))
        var idle: DisplayConnection? = try doomed.connect()  // never used, so it learns of the death on close
        let address = UInt(bitPattern: idle?.handle)
        doomed.stop()
        XCTAssertEqual(idle?.isAlive, true, "nothing has been read from the dead server yet")
        let droppedBefore = DisplayConnection.census.dropped
        idle = nil
        XCTAssertFalse(lossRecorded(at: address))
        // Its socket told of the death, so it was dropped rather than closed through Xlib.
        XCTAssertEqual(DisplayConnection.census.dropped, droppedBefore + 1)

        // A connection that found out before its close leaves nothing behind either.
        let second = try TestDisplay(size: Size(width: 320, height: 240))
        var used: DisplayConnection? = try second.connect()
        let usedAddress = UInt(bitPattern: used?.handle)
        second.stop()
        XCTAssertThrowsError(try used.map { try ScreenCapturer(connection: $0).capture() })
        XCTAssertTrue(lossRecorded(at: usedAddress))
        let droppedBeforeUsed = DisplayConnection.census.dropped
        used = nil
        // Dropped at once; the loss goes with it.
        XCTAssertEqual(DisplayConnection.census.dropped, droppedBeforeUsed + 1)
        XCTAssertFalse(lossRecorded(at: usedAddress))
    }
}

/// Protocol errors become typed errors of the call that caused them, and only of that call.
final class ProtocolErrorTests: XCTestCase {
    func testErrorsAreBlamedOnTheRequestThatCausedThem() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let connection = try display.connect()
        let bogus: Window = 0x7ff_fff1
        XCTAssertThrowsError(try connection.trapped { XMapWindow($0, bogus) }) { error in
            guard case .protocolError(let code, let request, let resource, _) = error as? ScreenError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(code, Int(BadWindow))
            XCTAssertEqual(request, 8)  // X_MapWindow
            XCTAssertEqual(resource, UInt(bogus))
        }
        // An earlier request that nobody checked fails; the next checked call is innocent.
        XUnmapWindow(connection.handle, bogus)
        XCTAssertNoThrow(try connection.trapped { XNoOp($0) })
        XCTAssertNoThrow(try connection.screenSize())
        XCTAssertTrue(connection.isAlive, "a protocol error never ends the connection or the process")
    }
}
