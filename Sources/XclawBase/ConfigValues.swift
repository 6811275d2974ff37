import Foundation

/// Reads single settings from xclaw's `key = value` config file (`XclawPaths.configDirectory()/config`) for layers
/// below the client, which parses and checks the whole file: here a missing file or a malformed line just means "not
/// set", since the client reports malformed lines when it reads the file.
public enum ConfigValues {
    /// The config file's path.
    public static func path(_ environment: [String: String] = XclawPaths.environment) -> String {
        XclawPaths.configDirectory(environment) + "/config"
    }

    /// The value of `key` (case-insensitive; quotes around the value removed), or nil when the file or the key is absent
    /// or the value is empty.
    public static func value(_ key: String, environment: [String: String] = XclawPaths.environment) -> String? {
        guard let data = FileManager.default.contents(atPath: path(environment)) else { return nil }
        var found: String?
        for raw in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.hasPrefix("#"), let eq = line.firstIndex(of: "="),
                line[..<eq].trimmingCharacters(in: .whitespaces).lowercased() == key.lowercased()
            else { continue }
            var value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let q = value.first, q == "\"" || q == "'", value.last == q {
                value = String(value.dropFirst().dropLast())
            }
            found = value.isEmpty ? nil : value
        }
        return found
    }
}
