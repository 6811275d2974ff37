/// The bus names an agent may call through the generic `dbus_call`: exact well-known names, or a family written with
/// a trailing `.*` (`org.mpris.MediaPlayer2.*`). Empty by default, so the generic call is off until a person names
/// what it may reach; unique names (`:1.42`) are never allowed, since they could be anything.
public struct BusAllowList: Sendable, Hashable {
    /// The patterns, as given.
    public let patterns: [String]

    /// An allow-list of `patterns`, already checked.
    public init(_ patterns: [String] = []) { self.patterns = patterns }

    /// True when nothing is allowed.
    public var isEmpty: Bool { patterns.isEmpty }

    /// Parses a comma-separated list (`none` or empty: nothing); each entry must be a well-known bus name or one
    /// followed by `.*`.
    public static func parse(_ text: String) throws -> BusAllowList {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty || trimmed == "none" { return BusAllowList() }
        var patterns: [String] = []
        for part in trimmed.split(separator: ",") {
            let pattern = part.trimmingCharacters(in: .whitespaces)
            let name = pattern.hasSuffix(".*") ? String(pattern.dropLast(2)) : pattern
            guard isWellKnownName(name) else {
                throw BusError.invalidArguments(
                    call: "the D-Bus allow-list",
                    message:
                        "\"\(pattern)\" is not a bus name: give well-known names such as org.mpris.MediaPlayer2.vlc "
                        + "or a family such as org.mpris.MediaPlayer2.*, separated by commas (none: nothing)")
            }
            if !patterns.contains(pattern) { patterns.append(pattern) }
        }
        return BusAllowList(patterns)
    }

    /// The list as `parse` reads it back (`none` when empty).
    public var text: String { patterns.isEmpty ? "none" : patterns.joined(separator: ",") }

    /// Names a family never covers, only an exact entry: the bus itself (monitoring, the activation environment)
    /// and the secret store, whose answers would land in the model's transcript and the store.
    public static let exactOnly: Set<String> = [
        "org.freedesktop.DBus", "org.freedesktop.secrets", "org.gnome.keyring", "org.kde.kwalletd5",
        "org.kde.kwalletd6",
    ]

    /// Whether `name` is allowed by an entry naming it exactly (not only through a family).
    public func namesExactly(_ name: String) -> Bool { patterns.contains(name) }

    /// Whether `name` may be called.
    public func allows(_ name: String) -> Bool {
        guard !name.hasPrefix(":") else { return false }
        return patterns.contains { pattern in
            pattern.hasSuffix(".*")
                ? !Self.exactOnly.contains(name) && name.hasPrefix(String(pattern.dropLast(1))) : name == pattern
        }
    }

    /// A well-known bus name: two or more dot-separated elements of `[A-Za-z0-9_-]`, none starting with a digit,
    /// at most 255 characters (the D-Bus specification's rule).
    public static func isWellKnownName(_ name: String) -> Bool {
        let elements = name.split(separator: ".", omittingEmptySubsequences: false)
        guard name.utf8.count <= 255, elements.count >= 2 else { return false }
        return elements.allSatisfy { element in
            guard let first = element.first, !first.isNumber else { return false }
            return element.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
        }
    }
}
