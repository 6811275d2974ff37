import Foundation

/// A five-field cron expression (minute, hour, day of month, month, day of week) with lists, ranges, steps and names,
/// and the next time it fires in a time zone. Wall-clock times a daylight-saving change skips fire at the first instant
/// after the change, once; times it repeats fire once, at their first occurrence, unless the hour field is `*` (an
/// hourly job runs in both passes of the repeated hour, as Vixie cron's does).
public struct CronExpression: Sendable, Hashable, CustomStringConvertible {
    /// Allowed minutes (0–59).
    public let minutes: Set<Int>
    /// Allowed hours (0–23).
    public let hours: Set<Int>
    /// Allowed days of the month (1–31).
    public let daysOfMonth: Set<Int>
    /// Allowed months (1–12).
    public let months: Set<Int>
    /// Allowed days of the week (0–6, Sunday 0; 7 is read as Sunday).
    public let daysOfWeek: Set<Int>
    /// Whether the day-of-month field starts with `*` (cron matches either day field only when both are restricted).
    let anyDayOfMonth: Bool
    /// Whether the day-of-week field was `*`.
    let anyDayOfWeek: Bool
    /// Whether the hour field was `*`: such a job runs in both passes of a repeated hour.
    let everyHour: Bool
    /// The expression as given.
    public let description: String

    /// Why an expression is not one cron can read.
    public struct ParseError: Error, Hashable, CustomStringConvertible {
        /// What is wrong and how to write it instead.
        public let description: String
    }

    private static let monthNames = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    private static let dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    /// Parses `expression`: five fields separated by spaces; each field `*`, a number, a name (`jan`, `mon`), a range
    /// `a-b`, a step `*/n` or `a-b/n`, or a comma list of those.
    public init(_ expression: String) throws {
        let fields = expression.split(whereSeparator: \.isWhitespace).map(String.init)
        guard fields.count == 5 else {
            throw ParseError(
                description: "a cron expression has five fields (minute hour day-of-month month day-of-week), "
                    + "\"\(expression)\" has \(fields.count); for example \"30 9 * * mon-fri\"")
        }
        minutes = try Self.field(fields[0], name: "minute", range: 0...59, names: [])
        hours = try Self.field(fields[1], name: "hour", range: 0...23, names: [])
        daysOfMonth = try Self.field(fields[2], name: "day of month", range: 1...31, names: [])
        months = try Self.field(fields[3], name: "month", range: 1...12, names: Self.monthNames, firstName: 1)
        let week = try Self.field(fields[4], name: "day of week", range: 0...7, names: Self.dayNames)
        daysOfWeek = Set(week.map { $0 % 7 })
        // As Vixie cron and cronie read it: a day field starting with "*" (also "*/2") does not restrict, so the
        // other day field alone decides.
        anyDayOfMonth = fields[2].hasPrefix("*")
        anyDayOfWeek = fields[4].hasPrefix("*")
        everyHour = fields[1] == "*"
        description = fields.joined(separator: " ")
        // A date no month has (31 February) would search forever.
        let lengths = [1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31]
        let longest = months.map { lengths[$0] ?? 31 }.max() ?? 31
        if anyDayOfWeek, let earliest = daysOfMonth.min(), earliest > longest {
            throw ParseError(description: "\"\(expression)\" names a day its months never have")
        }
    }

    /// One field's values.
    private static func field(
        _ text: String, name: String, range: ClosedRange<Int>, names: [String], firstName: Int = 0
    ) throws -> Set<Int> {
        var values = Set<Int>()
        let bad = { (why: String) in
            ParseError(
                description: "the \(name) field \"\(text)\" \(why) (allowed: \(range.lowerBound)-\(range.upperBound)"
                    + (names.isEmpty ? "" : " or \(names.first ?? "")-\(names.last ?? "")")
                    + ", *, a-b, */n, lists with ,)")
        }
        func value(_ token: Substring) throws -> Int {
            if let n = Int(token), range.contains(n) { return n }
            if let index = names.firstIndex(of: token.lowercased()) { return index + firstName }
            throw bad("has \"\(token)\"")
        }
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard !part.isEmpty else { throw bad("has an empty item") }
            let pieces = part.split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count <= 2 else { throw bad("has two steps") }
            var step = 1
            if pieces.count == 2 {
                guard let n = Int(pieces[1]), n >= 1, n <= range.upperBound + 1 else { throw bad("has a bad step") }
                step = n
            }
            let span = pieces[0]
            let low: Int, high: Int
            if span == "*" {
                (low, high) = (range.lowerBound, range.upperBound)
            } else if let dash = span.firstIndex(of: "-") {
                low = try value(span[..<dash])
                high = try value(span[span.index(after: dash)...])
                guard low <= high else { throw bad("has a range that runs backwards") }
            } else {
                low = try value(span)
                // "5/15" means from 5 on, every 15.
                high = pieces.count == 2 ? range.upperBound : low
            }
            values.formUnion(stride(from: low, through: high, by: step))
        }
        return values
    }

    /// Whether a civil date's day matches: with both day fields restricted, either may match (as cron does).
    func matchesDay(year: Int, month: Int, day: Int) -> Bool {
        guard months.contains(month) else { return false }
        let weekday = CivilTime.weekday(year: year, month: month, day: day)
        // Both fields restricted: either day matches; one starting with "*" (all days, or every other): both must.
        if anyDayOfMonth || anyDayOfWeek { return daysOfMonth.contains(day) && daysOfWeek.contains(weekday) }
        return daysOfMonth.contains(day) || daysOfWeek.contains(weekday)
    }

    /// The first instant after `date` at which it fires in `zone`; nil when none comes within eight years (an
    /// expression such as "0 0 30 2 *").
    public func next(after date: Date, in zone: TimeZone) -> Date? {
        let after = Int(date.timeIntervalSince1970.rounded(.down))
        // The local day `after` falls in, searched day by day.
        let local = after + zone.secondsFromGMT(for: date)
        var day = CivilTime.days(fromSeconds: local)
        let sortedHours = hours.sorted(), sortedMinutes = minutes.sorted()
        var best: Int?, foundOn: Int?
        for _ in 0..<(366 * 8) {
            let (year, month, dayOfMonth) = CivilTime.civil(fromDays: day)
            if matchesDay(year: year, month: month, day: dayOfMonth) {
                for hour in sortedHours {
                    for minute in sortedMinutes {
                        let wall = day * 86_400 + hour * 3_600 + minute * 60
                        for instant in instants(ofWall: wall, in: zone) where instant > after {
                            best = min(best ?? instant, instant)
                        }
                    }
                }
            }
            // The next day too, once something fired: around a change of offset its first times can come before
            // this day's last ones.
            if best != nil, foundOn == nil { foundOn = day }
            if let foundOn, day > foundOn { break }
            day += 1
        }
        return best.map { Date(timeIntervalSince1970: Double($0)) }
    }

    /// The instants a local wall-clock time (seconds from the epoch as if the zone were UTC) names in `zone`: one
    /// normally; in a skipped hour, the first instant after the change; in a repeated hour the first occurrence, or
    /// both when the hour field is `*`.
    func instants(ofWall wall: Int, in zone: TimeZone) -> [Int] {
        let before = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(wall - 86_400)))
        let later = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(wall + 86_400)))
        var found: [Int] = []
        for offset in Set([before, later]) {
            let instant = wall - offset
            if zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))) == offset {
                found.append(instant)
            }
        }
        found.sort()
        if found.isEmpty {
            // Skipped: the change itself, the first instant whose wall time is later than this one.
            let start = Date(timeIntervalSince1970: Double(wall - before - 86_400))
            guard let change = zone.nextDaylightSavingTimeTransition(after: start) else { return [] }
            return [Int(change.timeIntervalSince1970.rounded())]
        }
        return everyHour ? found : [found[0]]
    }
}

/// Calendar arithmetic on civil (proleptic Gregorian) dates as day counts from 1970-01-01, without a Calendar: the
/// scheduler's wall-clock times must not depend on the host's zone or locale.
enum CivilTime {
    /// The day count of a number of seconds from the epoch (floored).
    static func days(fromSeconds seconds: Int) -> Int {
        seconds >= 0 ? seconds / 86_400 : -((-seconds + 86_399) / 86_400)
    }

    /// Year, month (1–12) and day (1–31) of a day count (Howard Hinnant's civil_from_days).
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The day count of a civil date (Howard Hinnant's days_from_civil).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The day of the week, Sunday 0 (1970-01-01 was a Thursday).
    static func weekday(year: Int, month: Int, day: Int) -> Int {
        let d = days(year: year, month: month, day: day)
        return ((d % 7) + 7 + 4) % 7
    }
}
