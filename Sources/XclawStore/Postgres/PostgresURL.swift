import Foundation

/// A PostgreSQL connection URL (`postgres://USER:PASSWORD@HOST:PORT/DB?…`, or `postgresql://`), kept whole for libpq
/// and shown only without its password: the password never reaches a log, an error, `--json` or the web view.
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible {
    /// The URL as given, password included: handed to libpq only.
    let text: String
    /// The passwords the URL carries (its user's, or `password=`/`sslpassword=` in its query), to scrub them from
    /// server messages too.
    private let passwords: [String]

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
        let query = (components.percentEncodedQueryItems ?? []).filter { Self.secretParameters.contains($0.name) }
        passwords = ([components.percentEncodedPassword] + query.map(\.value)).compactMap { $0 }.filter { !$0.isEmpty }
    }

    /// Whether `text` names a PostgreSQL database (rather than an SQLite file).
    public static func isPostgres(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    /// The URL with its password replaced by `***`.
    public var redacted: String { Self.redact(text) }

    public var description: String { redacted }

    /// The query parameters libpq reads a secret from.
    static let secretParameters: Set<String> = ["password", "sslpassword"]

    /// `text` without the URL's passwords, wherever the server or libpq repeated them.
    func scrub(_ message: String) -> String {
        var out = message
        for password in passwords.sorted(by: { $0.count > $1.count }) {  // the longest first: one may hold another
            out = out.replacingOccurrences(of: password, with: "***")
            if let decoded = password.removingPercentEncoding, !decoded.isEmpty {
                out = out.replacingOccurrences(of: decoded, with: "***")
            }
        }
        return out
    }

    /// Replaces the passwords of a URL-shaped text (`scheme://user:password@…`, `?password=…`), even one that does
    /// not parse.
    static func redact(_ text: String) -> String { redactQuery(redactUserInfo(text)) }

    /// `password=…` and `sslpassword=…` in the query, replaced.
    private static func redactQuery(_ text: String) -> String {
        guard let question = text.firstIndex(of: "?") else { return text }
        let query = text[text.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false).map {
            pair -> String in
            let name = pair.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            return secretParameters.contains(name.lowercased()) ? name + "=***" : String(pair)
        }
        return String(text[...question]) + query.joined(separator: "&")
    }

    /// The user's password in the authority, replaced.
    private static func redactUserInfo(_ text: String) -> String {
        guard let scheme = text.range(of: "://") else { return text }
        let rest = text[scheme.upperBound...]
        let authority = rest[..<(rest.firstIndex(of: "?") ?? rest.endIndex)]
        guard let at = authority.lastIndex(of: "@") else { return text }
        let credentials = authority[..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }
}
