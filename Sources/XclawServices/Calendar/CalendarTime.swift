import Foundation

/// A calendar day (an all-day event's start, a task's due day), with no time and no zone.
public struct CalendarDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The year.
    public var year: Int
    /// The month, 1-12.
    public var month: Int
    /// The day of the month, 1-31.
    public var day: Int

    /// A day; nil when the date does not exist (February 30th).
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), (1...31).contains(day) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day)),
            calendar.component(.day, from: date) == day
        else { return nil }
        (self.year, self.month, self.day) = (year, month, day)
    }

    /// The day `date` falls on in `zone`.
    public init(_ date: Date, in zone: TimeZone) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        (year, month, day) = (parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1)
    }

    /// `2026-12-10`.
    public var description: String { String(format: "%04d-%02d-%02d", year, month, day) }

    /// `20261210`, iCalendar's DATE.
    public var basic: String { String(format: "%04d%02d%02d", year, month, day) }

    /// Its first moment in `zone`.
    public func start(in zone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar.date(from: DateComponents(year: year, month: month, day: day)) ?? Date(timeIntervalSince1970: 0)
    }

    /// The day `count` days later (earlier when negative).
    public func adding(days count: Int) -> CalendarDay {
        let utc = TimeZone(identifier: "UTC") ?? .current
        return CalendarDay(start(in: utc).addingTimeInterval(Double(count) * 86_400), in: utc)
    }

    /// Earlier days first.
    public static func < (a: CalendarDay, b: CalendarDay) -> Bool {
        (a.year, a.month, a.day) < (b.year, b.month, b.day)
    }
}

/// When an event starts or ends, or a task is due: a whole day, or an instant.
public enum CalendarTime: Sendable, Hashable {
    /// A whole day (iCalendar `VALUE=DATE`).
    case day(CalendarDay)
    /// A moment (written as UTC, `…Z`).
    case instant(Date)

    /// Whether it is a whole day.
    public var isDay: Bool {
        if case .day = self { return true }
        return false
    }

    /// The moment it starts, a day's first in `zone`.
    public func date(in zone: TimeZone) -> Date {
        switch self {
        case .day(let day): return day.start(in: zone)
        case .instant(let date): return date
        }
    }

    /// The property `name` carrying it: `NAME;VALUE=DATE:20261210` or `NAME:20261210T080000Z`. xclaw writes UTC
    /// rather than a TZID, which would need a VTIMEZONE beside it to mean anything to another reader.
    public func line(_ name: String) -> ContentLine {
        switch self {
        case .day(let day):
            return ContentLine(name: name, parameters: [ContentParameter("VALUE", ["DATE"])], value: day.basic)
        case .instant(let date):
            return ContentLine(name: name, value: Self.utcBasic(date))
        }
    }

    /// `20261210T080000Z`.
    public static func utcBasic(_ date: Date) -> String {
        let p = components(date, in: TimeZone(identifier: "UTC") ?? .current)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ", p.year ?? 0, p.month ?? 0, p.day ?? 0, p.hour ?? 0, p.minute ?? 0,
            p.second ?? 0)
    }

    /// `2026-12-10T08:00:00Z`, for JSON.
    public static func iso(_ date: Date) -> String {
        let p = components(date, in: TimeZone(identifier: "UTC") ?? .current)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02dZ", p.year ?? 0, p.month ?? 0, p.day ?? 0, p.hour ?? 0,
            p.minute ?? 0, p.second ?? 0)
    }

    /// `2026-12-10 09:00` in `zone` (seconds shown only when there are some), for people.
    public static func local(_ date: Date, in zone: TimeZone) -> String {
        let p = components(date, in: zone)
        let seconds = (p.second ?? 0) == 0 ? "" : String(format: ":%02d", p.second ?? 0)
        return String(
            format: "%04d-%02d-%02d %02d:%02d", p.year ?? 0, p.month ?? 0, p.day ?? 0, p.hour ?? 0, p.minute ?? 0)
            + seconds
    }

    private static func components(_ date: Date, in zone: TimeZone) -> DateComponents {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
    }

    /// Reads a DATE or DATE-TIME property: `VALUE=DATE` (or eight digits) is a day; a time ending in `Z` is UTC; one
    /// with a TZID is read in that zone when the zone database knows its name (libical's
    /// `/freeassociation.sourceforge.net/Europe/Berlin` too), else in `local`, as a floating time is. Nil when the
    /// value is neither.
    public static func read(_ line: ContentLine, local: TimeZone) -> CalendarTime? {
        let value = line.value.trimmingCharacters(in: .whitespaces)
        let digits = Array(value.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= digits.count,
                digits[range].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
            else { return nil }
            return Int(String(decoding: digits[range], as: UTF8.self))
        }
        guard let year = number(0..<4), let month = number(4..<6), let dayNumber = number(6..<8),
            let day = CalendarDay(year: year, month: month, day: dayNumber)
        else { return nil }
        if line.parameter("VALUE")?.uppercased() == "DATE" || digits.count == 8 { return .day(day) }
        guard digits.count >= 15, digits[8] == UInt8(ascii: "T"), let hour = number(9..<11),
            let minute = number(11..<13), let second = number(13..<15), hour < 24, minute < 60, second <= 60
        else { return nil }
        let utc = digits.count == 16 && digits[15] == UInt8(ascii: "Z")
        guard utc || digits.count == 15 else { return nil }
        let zone =
            utc ? TimeZone(identifier: "UTC") ?? .current : line.parameter("TZID").flatMap(zoneNamed) ?? local
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = DateComponents(
            year: year, month: month, day: dayNumber, hour: hour, minute: minute, second: min(second, 59))
        return calendar.date(from: parts).map { .instant($0) }
    }

    /// The zone a TZID names: an Olson name as it is, or the Olson name at the end of a prefixed one
    /// (`/freeassociation.sourceforge.net/Tzfile/Europe/Berlin`).
    static func zoneNamed(_ tzid: String) -> TimeZone? {
        let parts = tzid.split(separator: "/").map(String.init)
        for start in parts.indices {
            if let zone = TimeZone(identifier: parts[start...].joined(separator: "/")) { return zone }
        }
        return nil
    }
}
