import Foundation

/// The one date format of the database: ISO-8601 UTC text with milliseconds, `2024-01-02T03:04:05.678Z`.
/// It is fixed-width, so text order is time order (`next_run <= ?` works), the `sqlite3` shell shows it readably, and
/// SQLite's own `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')` produces the same format. Hand-written instead of a
/// `DateFormatter` because it runs on every streamed update and must be thread-safe.
public enum StoreDate {
    /// Rounds a date to the millisecond the database keeps, so a value read back equals the value stored.
    public static func normalized(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    /// The database text for a date.
    public static func format(_ date: Date) -> String {
        let totalMs = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var seconds = time_t(totalMs >= 0 ? totalMs / 1000 : (totalMs - 999) / 1000)
        let ms = Int(totalMs - Int64(seconds) * 1000)
        var tm = tm()
        gmtime_r(&seconds, &tm)
        return pad(Int(tm.tm_year) + 1900, 4) + "-" + pad(Int(tm.tm_mon) + 1, 2) + "-" + pad(Int(tm.tm_mday), 2)
            + "T" + pad(Int(tm.tm_hour), 2) + ":" + pad(Int(tm.tm_min), 2) + ":" + pad(Int(tm.tm_sec), 2)
            + "." + pad(ms, 3) + "Z"
    }

    /// Reads the database text; also accepts a space for `T`, no fraction, and no `Z` (SQLite's `datetime()`).
    public static func parse(_ text: String) -> Date? {
        let u = Array(text.utf8)
        guard u.count >= 19 else { return nil }
        func num(_ from: Int, _ len: Int) -> Int? {
            var v = 0
            for i in from..<(from + len) {
                guard i < u.count, u[i] >= 48, u[i] <= 57 else { return nil }
                v = v * 10 + Int(u[i] - 48)
            }
            return v
        }
        guard let year = num(0, 4), let month = num(5, 2), let day = num(8, 2), let hour = num(11, 2),
            let minute = num(14, 2), let second = num(17, 2)
        else { return nil }
        var fraction = 0.0
        if u.count > 20, u[19] == UInt8(ascii: ".") {
            var scale = 0.1
            var i = 20
            while i < u.count, u[i] >= 48, u[i] <= 57 {
                fraction += Double(u[i] - 48) * scale
                scale /= 10
                i += 1
            }
        }
        var tm = tm()
        tm.tm_year = Int32(year - 1900)
        tm.tm_mon = Int32(month - 1)
        tm.tm_mday = Int32(day)
        tm.tm_hour = Int32(hour)
        tm.tm_min = Int32(minute)
        tm.tm_sec = Int32(second)
        let seconds = timegm(&tm)
        return Date(timeIntervalSince1970: (Double(seconds) * 1000 + (fraction * 1000).rounded()) / 1000)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let s = String(value)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
}
