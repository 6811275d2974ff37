import Foundation

/// Dates and durations as people and models write them: ISO 8601 (`2026-12-10`, `2026-12-10T09:00`, local time
/// unless it ends in `Z` or an offset), `today`, `tomorrow`, `now`, and a day with a time (`tomorrow 09:00`).
public struct DateInput: Sendable {
    /// The zone of times written without `Z` or an offset.
    public let zone: TimeZone
    /// What `now`, `today` and `tomorrow` are relative to.
    public let now: Date

    /// A reader for `zone` at `now`.
    public init(zone: TimeZone, now: Date = Date()) { (self.zone, self.now) = (zone, now) }

    /// The zone the caller's `TZ` names (`Europe/Berlin`, `:Europe/Berlin`, `UTC`), else this machine's: the one
    /// /etc/localtime links to, not the process's own (a daemon started by a script with its own `TZ` serves callers
    /// without one).
    public static func zone(environment: [String: String]) -> TimeZone {
        guard var name = environment["TZ"], !name.isEmpty else {
            let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/etc/localtime")) ?? ""
            return CalendarTime.zoneNamed(link) ?? .current
        }
        if name.hasPrefix(":") { name.removeFirst() }
        if name.hasPrefix("/") { return CalendarTime.zoneNamed(name) ?? .current }
        return TimeZone(identifier: name) ?? .current
    }

    /// The forms `parse` accepts, for messages.
    public static let forms =
        "2026-12-10 (a day), 2026-12-10T09:00 (local time), 2026-12-10T09:00Z or 2026-12-10T09:00+01:00, "
        + "today, tomorrow, now, or a day and a time (tomorrow 09:00)"

    /// Reads `text` as a day or a moment; throws `EDSError.badDate` naming the accepted forms.
    public func parse(_ text: String) throws -> CalendarTime {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let lower = trimmed.lowercased()
        let today = CalendarDay(now, in: zone)
        let words = lower.split(separator: " ", maxSplits: 1).map(String.init)
        let relative: CalendarDay? =
            switch words.first {
            case "today": today
            case "tomorrow": today.adding(days: 1)
            case "yesterday": today.adding(days: -1)
            default: nil
            }
        if lower == "now" { return .instant(now) }
        if let relative {
            guard words.count == 2 else { return .day(relative) }
            guard let date = try? moment(relative, time: words[1]) else { throw EDSError.badDate(text) }
            return .instant(date)
        }
        // `2026-12-10T09:00` or `2026-12-10 09:00`.
        let separator = trimmed.firstIndex { $0 == "T" || $0 == "t" || $0 == " " }
        let dayText = separator.map { String(trimmed[..<$0]) } ?? trimmed
        guard let day = Self.day(dayText) else { throw EDSError.badDate(text) }
        guard let separator else { return .day(day) }
        let rest = String(trimmed[trimmed.index(after: separator)...]).trimmingCharacters(in: .whitespaces)
        guard let date = try? moment(day, time: rest) else { throw EDSError.badDate(text) }
        return .instant(date)
    }

    /// `2026-12-10`.
    static func day(_ text: String) -> CalendarDay? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2])
        else { return nil }
        return CalendarDay(year: y, month: m, day: d)
    }

    /// `day` at `time` (`09:00`, `09:00:30`, `9:00`, with an optional `.fff`, then `Z`, `+01:00`, `+0100` or `-05`).
    func moment(_ day: CalendarDay, time: String) throws -> Date {
        var clock = time
        var offset: Int?
        if clock.hasSuffix("Z") || clock.hasSuffix("z") {
            clock.removeLast()
            offset = 0
        } else if let sign = clock.lastIndex(where: { $0 == "+" || $0 == "-" }) {
            let zoneText = clock[clock.index(after: sign)...].replacingOccurrences(of: ":", with: "")
            guard zoneText.allSatisfy(\.isNumber), [2, 4].contains(zoneText.count),
                let hours = Int(zoneText.prefix(2)),
                let minutes = Int(zoneText.dropFirst(2).isEmpty ? "0" : zoneText.dropFirst(2)),
                hours < 24, minutes < 60
            else { throw EDSError.badDate(time) }
            offset = (hours * 3600 + minutes * 60) * (clock[sign] == "-" ? -1 : 1)
            clock = String(clock[..<sign])
        }
        if let dot = clock.firstIndex(of: ".") {
            guard clock[clock.index(after: dot)...].allSatisfy(\.isNumber) else { throw EDSError.badDate(time) }
            clock = String(clock[..<dot])
        }
        let fields = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(fields.count),
            fields.allSatisfy({ (1...2).contains($0.count) && $0.allSatisfy(\.isNumber) }),
            let hour = Int(fields[0]), let minute = Int(fields[1]), hour < 24, minute < 60
        else { throw EDSError.badDate(time) }
        let second = fields.count == 3 ? Int(fields[2]) ?? 99 : 0
        guard second < 60 else { throw EDSError.badDate(time) }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = offset.flatMap { TimeZone(secondsFromGMT: $0) } ?? zone
        guard
            let date = calendar.date(
                from: DateComponents(
                    year: day.year, month: day.month, day: day.day, hour: hour, minute: minute, second: second))
        else { throw EDSError.badDate(time) }
        return date
    }

    /// Reads a duration: `90m`, `1h30m`, `2h`, `1d`, `45s`, or a number of minutes; throws `EDSError.badDuration`.
    public static func duration(_ text: String) throws -> TimeInterval {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if let minutes = Int(trimmed), minutes > 0 { return Double(minutes) * 60 }
        guard let total = seconds(Substring(trimmed), scales: ["d": 86_400, "h": 3600, "m": 60, "s": 1]), total > 0
        else { throw EDSError.badDuration(text) }
        return total
    }

    /// The seconds `text` adds up to as numbers, each followed by one of the units `scales` prices (`1h30m`); nil
    /// when anything else is in it, a number lacks its unit, or there is no number.
    static func seconds(_ text: Substring, scales: [Character: Double]) -> Double? {
        var total = 0.0
        var digits = ""
        var units = 0
        for character in text {
            if character.isNumber {
                digits.append(character)
                continue
            }
            guard let scale = scales[character], digits.count <= 9, let number = Double(digits) else { return nil }
            total += number * scale
            digits = ""
            units += 1
        }
        return units > 0 && digits.isEmpty ? total : nil
    }
}
