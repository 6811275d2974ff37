import Foundation
import Synchronization
import XCTest
import XclawPerception
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// The settler's and the watcher's timing on a test clock, fed fixed frames: exact polls and elapsed times, with no
/// real waiting.
final class SettleClockTests: XCTestCase {
    private let size = Size(width: 4, height: 4)

    /// Frames that change for the first `changing` polls, then stay the same; counts the polls.
    private final class Frames: Sendable {
        private let polls = Mutex(0)
        let changing: Int
        let size: Size
        init(changing: Int, size: Size) { self.changing = changing; self.size = size }
        var count: Int { polls.withLock { $0 } }
        func next(_: Rect?) -> Frame {
            let n = polls.withLock {
                $0 += 1; return $0
            }
            let shade = UInt8((n <= changing ? n : changing + 1) * 10 % 250)
            return Frame(size: size, color: RGB(r: shade, g: shade, b: shade))
        }
    }

    func testTheScreenSettlesExactlyTheQuietTimeAfterItsLastChange() throws {
        // Static: captures at 0, 8, 16 and 24 ms, unchanged for the 24 ms quiet. Five changing polls: the last
        // change is seen at 40 ms, then quiet until 64 ms.
        for (changing, polls, elapsed) in [(0, 4, 24.0), (5, 9, 64.0)] {
            let clock = TestClock()
            let result = try Settler(frames: Frames(changing: changing, size: size).next, clock: clock).settle()
            XCTAssertFalse(result.timedOut)
            XCTAssertEqual(result.changed, changing > 0)
            XCTAssertEqual(result.polls, polls)
            XCTAssertEqual(result.elapsedMs, elapsed)
            XCTAssertTrue(clock.sleeps.allSatisfy { $0 == .milliseconds(8) }, "\(clock.sleeps)")
        }
    }

    func testAScreenThatNeverSettlesTimesOutOnTheDeadline() throws {
        let clock = TestClock()
        let frames = Frames(changing: .max, size: size)
        let settler = Settler(
            frames: frames.next, interval: .milliseconds(10), quiet: .milliseconds(30),
            timeout: .milliseconds(500), clock: clock)
        let start = ContinuousClock.now
        let result = try settler.settle()
        XCTAssertTrue(result.timedOut)
        XCTAssertEqual(result.elapsedMs, 500)
        XCTAssertEqual(result.polls, 51)
        XCTAssertLessThan(
            ContinuousClock.now - start, .milliseconds(400), "half a second of test time, not of real time")
    }

    func testWatchConditionsOnTheTestClock() throws {
        // The watcher needs a perceiver (a real display); its frames here come from a fixed sequence.
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let perceiver = try Perceiver(connection: display.connect())
        let clock = TestClock()
        var watcher = Watcher(perceiver: perceiver, interval: .milliseconds(50), clock: clock)
        let area = Rect(x: 0, y: 0, width: 4, height: 4)

        // Stable: polls at 0, 50, 100 and 150 ms change the frame; the first poll 300 ms after the last change.
        let settling = Frames(changing: 3, size: size)
        watcher.frames = settling.next
        let stable = try watcher.wait(for: .stable(.milliseconds(300)), area: area, timeout: .seconds(5))
        XCTAssertEqual(stable.elapsedMs, 450)
        XCTAssertEqual(stable.polls, 10)

        // A change that never comes times out on the deadline, and says what it saw last.
        let still = Frames(changing: 0, size: size)
        watcher.frames = still.next
        let before = clock.now
        XCTAssertThrowsError(try watcher.wait(for: .change, area: area, timeout: .seconds(1))) { error in
            XCTAssertEqual((error as? PerceptionError)?.exitStatus, .notFound)
            XCTAssertTrue("\(error)".contains("no change in"), "\(error)")
        }
        XCTAssertEqual(before.duration(to: clock.now), .seconds(1))
        XCTAssertEqual(still.count, 21, "a poll every 50 ms, the last on the deadline")

        // A pixel turns the wanted colour on the fourth poll.
        let turning = Frames(changing: 3, size: size)
        watcher.frames = turning.next
        let pixel = try watcher.wait(
            for: .pixel(Point(x: 1, y: 1), RGB(r: 40, g: 40, b: 40)), area: area,
            timeout: .seconds(5))
        XCTAssertEqual(pixel.polls, 4)
        XCTAssertEqual(pixel.elapsedMs, 150)
        XCTAssertEqual(pixel.colour, "#282828")
    }
}
