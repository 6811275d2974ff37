import Foundation

/// When a scheduled task fires: a cron expression in a time zone, a fixed interval anchored to the schedule (not to
/// when the last run ended, so runs do not drift), or once.
public enum TaskSchedule: Sendable, Hashable {
    /// A cron expression, evaluated in `zone`.
    case cron(CronExpression, zone: TimeZone)
    /// Every `seconds`, at `anchor` + k × `seconds`.
    case interval(seconds: Int, anchor: Date)
    /// Once, at that instant.
    case once(Date)

    /// Why a schedule could not be read.
    public struct ParseError: Error, Hashable, CustomStringConvertible {
        /// What is wrong and how to write it instead.
        public let description: String
    }

    /// The first time it fires after `date`; nil when it never will again (a one-shot time already past).
    public func next(after date: Date) -> Date? {
        switch self {
        case .cron(let expression, let zone):
            return expression.next(after: date, in: zone)
        case .interval(let seconds, let anchor):
            guard seconds > 0 else { return nil }
            if date < anchor { return anchor }
            // The slot after `date` on the anchor's grid, however long the daemon was away.
            let elapsed = Int(date.timeIntervalSince(anchor).rounded(.down))
            return anchor.addingTimeInterval(Double((elapsed / seconds + 1) * seconds))
        case .once(let at):
            return at > date ? at : nil
        }
    }

    /// A duration as people write it: `30s`, `10m`, `2h`, `1d`, or combined (`1h30m`); a bare number is seconds.
    /// At least a second, at most 366 days.
    public static func seconds(_ text: String) throws -> Int {
        let bad = ParseError(
            description: "\"\(text)\" is not a duration: write a number with s, m, h or d (30s, 10m, 2h, 1h30m, 1d)")
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var total = 0, number = "", sawUnit = false
        for character in text.lowercased() where !character.isWhitespace {
            if character.isASCII, character.isNumber {
                number.append(character)
            } else if let unit = units[character], let n = Int(number), number.count <= 9 {
                total += n * unit
                number = ""
                sawUnit = true
            } else {
                throw bad
            }
        }
        if !number.isEmpty {
            guard !sawUnit, let n = Int(number), number.count <= 9 else { throw bad }
            total += n
        }
        guard total >= 1, total <= 366 * 86_400 else {
            throw ParseError(description: "\"\(text)\" is outside 1s to 366d")
        }
        return total
    }

    /// A one-shot time in `zone`: `YYYY-MM-DD HH:MM[:SS]` (or with a `T`), `HH:MM` (the next such time after `now`),
    /// or an ISO 8601 instant with its own offset (`2026-12-01T09:00:00Z`, `…+01:00`).
    public static func instant(_ text: String, in zone: TimeZone, now: Date) throws -> Date {
        let bad = ParseError(
            description: "\"\(text)\" is not a time: write 2026-12-01 09:30, 09:30 (the next one), or an ISO 8601 "
                + "instant such as 2026-12-01T08:30:00Z")
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        // An explicit offset or Z: the instant it names, whatever the zone.
        if trimmed.count > 16,
            trimmed.hasSuffix("Z") || trimmed.dropFirst(16).contains(where: { $0 == "+" || $0 == "-" })
        {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime]
            guard let date = formatter.date(from: trimmed.replacingOccurrences(of: " ", with: "T")) else { throw bad }
            return date
        }
        let numbers = trimmed.split(whereSeparator: { "-:T ".contains($0) }).map { Int($0) }
        guard numbers.allSatisfy({ $0 != nil }) else { throw bad }
        let n = numbers.compactMap { $0 }
        switch n.count {
        case 2, 3:
            // Time of day: the next one.
            guard (0...23).contains(n[0]), (0...59).contains(n[1]), n.count == 2 || (0...59).contains(n[2]) else {
                throw bad
            }
            let seconds = n.count == 3 ? n[2] : 0
            let expression = try CronExpression("\(n[1]) \(n[0]) * * *")
            let probe = now.addingTimeInterval(-Double(seconds))
            guard let at = expression.next(after: probe, in: zone) else { throw bad }
            return at.addingTimeInterval(Double(seconds))
        case 5, 6:
            let (year, month, day, hour, minute) = (n[0], n[1], n[2], n[3], n[4])
            let second = n.count == 6 ? n[5] : 0
            guard (1970...9999).contains(year), (1...12).contains(month), (1...31).contains(day),
                (0...23).contains(hour),
                (0...59).contains(minute), (0...59).contains(second),
                CivilTime.civil(fromDays: CivilTime.days(year: year, month: month, day: day)) == (year, month, day)
            else { throw bad }
            let wall = CivilTime.days(year: year, month: month, day: day) * 86_400 + hour * 3_600 + minute * 60
            guard let first = try CronExpression("\(minute) \(hour) * * *").instants(ofWall: wall, in: zone).first
            else { throw bad }
            return Date(timeIntervalSince1970: Double(first + second))
        default:
            throw bad
        }
    }
}
