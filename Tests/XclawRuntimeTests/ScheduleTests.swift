import Foundation
import XCTest

@testable import XclawRuntime

/// Cron expressions, intervals, one-shot times and durations, with the daylight-saving changes of 2026 in Berlin and
/// New York. Pure computations on fixed instants: no clock, no sleeping.
final class ScheduleTests: XCTestCase {
    private let berlin = TimeZone(identifier: "Europe/Berlin")!
    private let newYork = TimeZone(identifier: "America/New_York")!
    private let utc = TimeZone(identifier: "UTC")!

    /// An instant from an ISO 8601 text with its offset.
    private func at(_ text: String) -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        guard let date = formatter.date(from: text) else {
            XCTFail("bad test instant \(text)")
            return Date(timeIntervalSince1970: 0)
        }
        return date
    }

    /// The next `count` firings after `start`.
    private func firings(_ expression: String, after start: String, in zone: TimeZone, count: Int) throws -> [Date] {
        let cron = try CronExpression(expression)
        var out: [Date] = []
        var cursor = at(start)
        for _ in 0..<count {
            guard let next = cron.next(after: cursor, in: zone) else { break }
            out.append(next)
            cursor = next
        }
        return out
    }

    func testFieldsListsRangesStepsAndNames() throws {
        XCTAssertEqual(
            try firings("0 9 * * mon-fri", after: "2026-11-27T12:00:00Z", in: utc, count: 3),
            [at("2026-11-30T09:00:00Z"), at("2026-12-01T09:00:00Z"), at("2026-12-02T09:00:00Z")])  // Fri → Mon
        XCTAssertEqual(
            try firings("*/15 8 * * *", after: "2026-11-25T08:20:00Z", in: utc, count: 3),
            [at("2026-11-25T08:30:00Z"), at("2026-11-25T08:45:00Z"), at("2026-11-26T08:00:00Z")])
        XCTAssertEqual(
            try firings("0-30/10 12 1,15 jan,jul *", after: "2026-01-01T12:05:00Z", in: utc, count: 4),
            [
                at("2026-01-01T12:10:00Z"), at("2026-01-01T12:20:00Z"), at("2026-01-01T12:30:00Z"),
                at("2026-01-15T12:00:00Z"),
            ])
        // Both day fields restricted: either matches (the 13th, or a Friday). 2026-11-13 is a Friday.
        XCTAssertEqual(
            try firings("0 0 13 * fri", after: "2026-11-10T00:00:00Z", in: utc, count: 3),
            [at("2026-11-13T00:00:00Z"), at("2026-11-20T00:00:00Z"), at("2026-11-27T00:00:00Z")])
        // A day field starting with "*" does not make it either-or (as cron reads it): odd-dated Mondays only.
        XCTAssertEqual(
            try firings("0 9 */2 * mon", after: "2026-11-01T00:00:00Z", in: utc, count: 2),
            [at("2026-11-09T09:00:00Z"), at("2026-11-23T09:00:00Z")])
        // 7 is Sunday too; 29 February only in leap years.
        XCTAssertEqual(
            try firings("0 0 * * 7", after: "2026-11-25T00:00:00Z", in: utc, count: 1), [at("2026-11-29T00:00:00Z")])
        XCTAssertEqual(
            try firings("0 0 29 2 *", after: "2026-01-01T00:00:00Z", in: utc, count: 1), [at("2028-02-29T00:00:00Z")])
        // A zone's own times, not the host's.
        XCTAssertEqual(
            try firings("30 9 * * *", after: "2026-11-25T00:00:00Z", in: berlin, count: 1), [at("2026-11-25T08:30:00Z")]
        )
    }

    func testExpressionsCronCannotReadSayWhy() {
        for bad in [
            "* * * *", "60 * * * *", "5-1 * * * *", "* * * * 8", "*/0 * * * *", "a * * * *", "1,,2 * * * *",
            "0 0 31 2 *", "0 0 30 feb *",
        ] {
            XCTAssertThrowsError(try CronExpression(bad), bad) { error in
                XCTAssertFalse("\(error)".isEmpty)
            }
        }
        do {
            _ = try CronExpression("61 * * * *")
            XCTFail("61 is no minute")
        } catch {
            XCTAssertTrue("\(error)".contains("minute"), "\(error)")
            XCTAssertTrue("\(error)".contains("0-59"), "\(error)")
        }
    }

    func testBerlinSpringForward() throws {
        // 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC); 02:00–02:59 never happens that day.
        // A job at 02:30 runs once, at the change; the next day at 02:30 CEST again.
        XCTAssertEqual(
            try firings("30 2 * * *", after: "2026-03-28T12:00:00Z", in: berlin, count: 3),
            [at("2026-03-29T01:00:00Z"), at("2026-03-30T00:30:00Z"), at("2026-03-31T00:30:00Z")])
        // Every half hour: the skipped 02:00 and 02:30 and the real 03:00 are one instant, fired once.
        XCTAssertEqual(
            try firings("*/30 * * * *", after: "2026-03-29T00:00:00Z", in: berlin, count: 4),
            [
                at("2026-03-29T00:30:00Z"), at("2026-03-29T01:00:00Z"), at("2026-03-29T01:30:00Z"),
                at("2026-03-29T02:00:00Z"),
            ])
        // 03:00 itself is real.
        XCTAssertEqual(
            try firings("0 3 * * *", after: "2026-03-28T12:00:00Z", in: berlin, count: 1), [at("2026-03-29T01:00:00Z")])
    }

    func testNewYorkFallBack() throws {
        // 2026-11-01: 02:00 EDT becomes 01:00 EST (06:00 UTC); 01:00–01:59 happens twice.
        // A daily 01:30 job runs once, at the first 01:30 (EDT), then 01:30 EST the next day.
        XCTAssertEqual(
            try firings("30 1 * * *", after: "2026-10-31T12:00:00Z", in: newYork, count: 2),
            [at("2026-11-01T05:30:00Z"), at("2026-11-02T06:30:00Z")])
        // An hourly job runs in both passes of the repeated hour.
        XCTAssertEqual(
            try firings("30 * * * *", after: "2026-11-01T04:00:00Z", in: newYork, count: 4),
            [
                at("2026-11-01T04:30:00Z"), at("2026-11-01T05:30:00Z"), at("2026-11-01T06:30:00Z"),
                at("2026-11-01T07:30:00Z"),
            ])
    }

    func testIntervalsStayOnTheirGrid() {
        let anchor = at("2026-11-25T10:00:00Z")
        let every10m = TaskSchedule.interval(seconds: 600, anchor: anchor)
        XCTAssertEqual(every10m.next(after: at("2026-11-25T09:00:00Z")), anchor)
        // However late the last run ended, the next slot is on the grid.
        XCTAssertEqual(every10m.next(after: at("2026-11-25T10:25:07Z")), at("2026-11-25T10:30:00Z"))
        XCTAssertEqual(every10m.next(after: at("2026-11-25T10:30:00Z")), at("2026-11-25T10:40:00Z"))
        // After a day away: the next slot, not a burst of missed ones.
        XCTAssertEqual(every10m.next(after: at("2026-11-26T10:01:00Z")), at("2026-11-26T10:10:00Z"))
        let once = TaskSchedule.once(anchor)
        XCTAssertEqual(once.next(after: at("2026-11-25T09:59:59Z")), anchor)
        XCTAssertNil(once.next(after: anchor))
    }

    func testDurations() throws {
        for (text, seconds) in [("30s", 30), ("10m", 600), ("2h", 7_200), ("1h30m", 5_400), ("1d", 86_400), ("90", 90)]
        {
            XCTAssertEqual(try TaskSchedule.seconds(text), seconds, text)
        }
        for bad in ["", "0s", "10x", "m", "1.5h", "-5m", "400d", "5m3"] {
            XCTAssertThrowsError(try TaskSchedule.seconds(bad), bad)
        }
    }

    func testOneShotTimesAreReadInTheTasksZone() throws {
        let now = at("2026-11-25T12:00:00Z")
        // Local to the zone given, not the host's.
        XCTAssertEqual(try TaskSchedule.instant("2026-12-01 09:30", in: berlin, now: now), at("2026-12-01T08:30:00Z"))
        XCTAssertEqual(
            try TaskSchedule.instant("2026-12-01T09:30:15", in: newYork, now: now), at("2026-12-01T14:30:15Z"))
        // An explicit offset wins over the zone.
        XCTAssertEqual(
            try TaskSchedule.instant("2026-12-01T08:30:00Z", in: berlin, now: now), at("2026-12-01T08:30:00Z"))
        XCTAssertEqual(
            try TaskSchedule.instant("2026-12-01T09:30:00+01:00", in: newYork, now: now), at("2026-12-01T08:30:00Z"))
        // A time of day: the next one (it is 13:00 in Berlin: 13:30 today, 12:30 tomorrow).
        XCTAssertEqual(try TaskSchedule.instant("13:30", in: berlin, now: now), at("2026-11-25T12:30:00Z"))
        XCTAssertEqual(try TaskSchedule.instant("12:30", in: berlin, now: now), at("2026-11-26T11:30:00Z"))
        // A skipped wall time: the change.
        XCTAssertEqual(try TaskSchedule.instant("2026-03-29 02:30", in: berlin, now: now), at("2026-03-29T01:00:00Z"))
        for bad in ["tomorrow", "2026-02-30 10:00", "25:00", "2026-13-01 10:00", "10"] {
            XCTAssertThrowsError(try TaskSchedule.instant(bad, in: berlin, now: now), bad)
        }
    }
}
