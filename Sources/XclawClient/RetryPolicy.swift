import Foundation
import XclawMessages

/// The official SDK's retry rules (which statuses, which server hints, how long to wait), as pure functions so
/// they are tested without a server.
enum RetryPolicy {
    /// Longest server-requested wait that is honoured; longer hints fall back to the client's own backoff.
    static let maxServerDelay = 60.0
    /// Backoff cap.
    static let maxBackoff = 8.0
    /// First backoff.
    static let initialBackoff = 0.5

    /// Whether an HTTP failure may be retried. 401 never is; `x-should-retry` overrides the status rule.
    static func shouldRetry(status: Int, headers: [String: String]) -> Bool {
        if status == 401 { return false }
        switch headers["x-should-retry"]?.lowercased() {
        case "true": return true
        case "false": return false
        default: return status == 408 || status == 409 || status == 429 || status >= 500
        }
    }

    /// The wait before retry number `attempt` (1-based): the server's `retry-after-ms` or `retry-after`
    /// (seconds or an HTTP date) when within (0, 60] s, else 0.5 s·2^(attempt-1) capped at 8 s, times a jitter
    /// of (1 - 0.25·random) with `random` in [0, 1).
    static func delay(attempt: Int, headers: [String: String], random: Double, now: Date = Date()) -> Duration {
        if let server = serverDelay(headers: headers, now: now) { return server }
        let exponent = Double(max(0, attempt - 1))
        let base = min(initialBackoff * pow(2, exponent), maxBackoff)
        let jitter = 1 - 0.25 * min(max(random, 0), 1)
        return .milliseconds(Int((base * jitter * 1000).rounded()))
    }

    /// The server's own hint, when it is usable.
    static func serverDelay(headers: [String: String], now: Date = Date()) -> Duration? {
        if let ms = headers["retry-after-ms"].flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }),
            ms > 0, ms <= maxServerDelay * 1000
        {
            return .milliseconds(Int(ms.rounded()))
        }
        guard let raw = headers["retry-after"]?.trimmingCharacters(in: .whitespaces), !raw.isEmpty else { return nil }
        let seconds: Double
        if let s = Double(raw) {
            seconds = s
        } else if let date = parseHTTPDate(raw) {
            seconds = date.timeIntervalSince(now)
        } else {
            return nil
        }
        guard seconds > 0, seconds <= maxServerDelay else { return nil }
        return .milliseconds(Int((seconds * 1000).rounded()))
    }

    /// IMF-fixdate ("Wed, 21 Oct 2015 07:28:00 GMT") and the obsolete RFC 850 / asctime forms HTTP still allows.
    static func parseHTTPDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// A duration in seconds, for messages.
    static func seconds(_ d: Duration) -> Double {
        let c = d.components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }
}
