import Synchronization
import XCTest
import XclawTimeTesting

/// The tests' one wait: `poll` returns what it waited for as soon as it comes, nil once its time is up, and on a
/// test clock it spends that clock's time, not the wall clock's.
final class PollTests: XCTestCase {
    func testPollReturnsTheValueOnceItComes() {
        let checks = Mutex(0)
        let value = poll(within: .seconds(5), every: .milliseconds(1)) { () -> String? in
            checks.withLock {
                $0 += 1
                return $0 == 3 ? "third" : nil
            }
        }
        XCTAssertEqual(value, "third")
        XCTAssertEqual(checks.withLock { $0 }, 3, "no check after the value came")
        XCTAssertTrue(eventually("a condition that holds at once") { true })
    }

    func testPollGivesUpAtItsDeadlineAfterALastCheck() {
        let start = ContinuousClock.now
        let checks = Mutex([ContinuousClock.Instant]())
        let held = poll(within: .milliseconds(100), every: .milliseconds(30)) {
            checks.withLock { $0.append(.now) }
            return false
        }
        XCTAssertFalse(held)
        let times = checks.withLock { $0 }.map { $0 - start }
        // At most at 0, 30, 60 and 90 ms, and the last at the deadline or after.
        XCTAssertLessThanOrEqual(times.count, 5, "\(times)")
        XCTAssertGreaterThanOrEqual(times.last ?? .zero, .milliseconds(100), "\(times)")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
    }

    func testAsyncPollSpendsTheTestClocksTime() async {
        let clock = TestClock()
        let start = ContinuousClock.now
        let late = await poll(within: .seconds(60), every: .seconds(1), on: clock) {
            clock.now.offset >= .seconds(10) ? clock.now.offset : nil
        }
        XCTAssertEqual(late, .seconds(10))
        XCTAssertEqual(clock.sleeps, Array(repeating: .seconds(1), count: 10))
        let never = await poll(within: .seconds(60), every: .seconds(1), on: clock) { () -> Int? in nil }
        XCTAssertNil(never)
        XCTAssertEqual(clock.now.offset, .seconds(70), "a minute of test time")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5), "not of real time")
        let held = await eventually("ten more seconds pass", on: clock) { clock.now.offset >= .seconds(80) }
        XCTAssertTrue(held)
    }
}
