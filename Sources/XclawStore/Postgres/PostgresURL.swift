import Foundation

/// A PostgreSQL connection URL (`postgres://USER:PASSWORD@HOST:PORT/DB?…`, or `postgresql://`), kept whole for libpq
/// and shown only without its password: the password never reaches a log, an error, `--json` or the web view.
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible {
    /// The URL as given, password included: handed to libpq only.
    let text: String
    /// The password, when the URL has one (to scrub it from server messages too).
    private let password: String?

    /// Parses `text`; `StoreError.invalidArgument` when it is not a PostgreSQL URL.
    public init(_ text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard Self.isPostgres(trimmed) else {
            throw StoreError.invalidArgument(
                "the database URL must start with postgres:// or postgresql:// "
                    + "(postgres://USER:PASSWORD@HOST:PORT/DATABASE), not \"\(Self.redact(trimmed))\"")
        }
        guard let components = URLComponents(string: trimmed) else {
            throw StoreError.invalidArgument(
                "\"\(Self.redact(trimmed))\" is not a valid URL: percent-encode special characters in the user "
                    + "and password (for example @ as %40)")
        }
        self.text = trimmed
        password = components.percentEncodedPassword.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether `text` names a PostgreSQL database (rather than an SQLite file).
    public static func isPostgres(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    /// The URL with its password replaced by `***`.
    public var redacted: String { Self.redact(text) }

    public var description: String { redacted }

    /// `text` without the URL's password, wherever the server or libpq repeated it.
    func scrub(_ message: String) -> String {
        guard let password else { return message }
        var out = message.replacingOccurrences(of: password, with: "***")
        if let decoded = password.removingPercentEncoding, !decoded.isEmpty {
            out = out.replacingOccurrences(of: decoded, with: "***")
        }
        return out
    }

    /// Replaces the password of a URL-shaped text (`scheme://user:password@…`), even one that does not parse.
    static func redact(_ text: String) -> String {
        guard let scheme = text.range(of: "://") else { return text }
        let rest = text[scheme.upperBound...]
        let authority = rest[..<(rest.firstIndex(of: "?") ?? rest.endIndex)]
        guard let at = authority.lastIndex(of: "@") else { return text }
        let credentials = authority[..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }
}
