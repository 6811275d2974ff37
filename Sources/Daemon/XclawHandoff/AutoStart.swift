import Glibc

/// Whether a command the daemon serves starts one when none runs ("fast by default"), and how long such a daemon
/// stays when nothing asks it anything. Read the same way by the front (which links no Foundation) and by
/// `xclaw daemon start --auto`: `XCLAW_DAEMON` (`auto` or `off`) over the config file's `daemon = auto|off`, and
/// `XCLAW_DAEMON_IDLE_EXIT` over `daemon_idle_exit = DURATION` (15 minutes by default).
public struct AutoStartPolicy: Equatable, Sendable {
    /// Whether commands start a daemon.
    public enum Mode: String, Sendable {
        /// Start one when none runs (the default).
        case auto
        /// Never start one (a running one still serves).
        case off
    }

    /// Whether commands start a daemon.
    public var mode: Mode
    /// Seconds without a command after which a daemon started so leaves; 0: never.
    public var idleExitSeconds: Int
    /// The config file the settings were read from (named in messages).
    public var configPath: String

    /// 15 minutes: long enough for a script's pauses, short enough that nothing lingers all day.
    public static let defaultIdleExitSeconds = 900

    /// The policy of `environment` and its config file; a value that means nothing is an error naming it.
    public static func load(environment: [String: String]) throws(AutoStartError) -> AutoStartPolicy {
        let path = configPath(environment)
        let file = readSettings(path)
        var policy = AutoStartPolicy(mode: .auto, idleExitSeconds: defaultIdleExitSeconds, configPath: path)
        if let (raw, source) = setting("XCLAW_DAEMON", environment, "daemon", file, path) {
            guard let mode = Mode(rawValue: raw.lowercased()) else {
                throw AutoStartError(setting: source, value: raw, expected: "auto or off")
            }
            policy.mode = mode
        }
        if let (raw, source) = setting("XCLAW_DAEMON_IDLE_EXIT", environment, "daemon_idle_exit", file, path) {
            guard let seconds = parseDuration(raw) else {
                throw AutoStartError(
                    setting: source, value: raw, expected: "a duration such as 900, 90s, 15m or 2h (0: never)")
            }
            policy.idleExitSeconds = seconds
        }
        return policy
    }

    /// "900", "90s", "15m", "2h" (fractions allowed, "1.5h"): whole seconds; nil for anything else or past a week.
    public static func parseDuration(_ text: String) -> Int? {
        var digits = Substring(text)
        var unit = 1.0
        switch digits.last {
        case "s": unit = 1
        case "m": unit = 60
        case "h": unit = 3600
        default: break
        }
        // Only those three units: "2d" or "5x" is not a number of seconds.
        if let last = digits.last, "smh".contains(last) { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isNumber || $0 == "." }), let value = Double(digits) else {
            return nil
        }
        let seconds = value * unit
        guard seconds.isFinite, seconds >= 0, seconds <= 7 * 86400 else { return nil }
        return Int(seconds.rounded())
    }

    /// The environment variable's value (named so), else the config file's (named `PATH: key`); nil when neither
    /// says anything.
    private static func setting(
        _ variable: String, _ environment: [String: String], _ key: String, _ file: [String: String], _ path: String
    ) -> (String, String)? {
        if let value = environment[variable].map(trimmed), !value.isEmpty { return (value, variable) }
        if let value = file[key], !value.isEmpty { return (value, "\(path): \(key)") }
        return nil
    }

    /// `$XDG_CONFIG_HOME/xclaw/config`, else `$HOME/.config/xclaw/config` (the rule of `XclawPaths`).
    static func configPath(_ environment: [String: String]) -> String {
        if let value = environment["XDG_CONFIG_HOME"], value.hasPrefix("/") { return value + "/xclaw/config" }
        var home = environment["HOME"] ?? ""
        if home.isEmpty, let entry = getpwuid(getuid()), let dir = entry.pointee.pw_dir { home = String(cString: dir) }
        return home + "/.config/xclaw/config"
    }

    /// The config file's `daemon` and `daemon_idle_exit` lines (its format: `key = value`, `#` comments, quotes
    /// around a value allowed); empty when there is no file. The rest of the file is the other readers' business.
    static func readSettings(_ path: String) -> [String: String] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [:] }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        var settings: [String: String] = [:]
        for raw in String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = trimmed(String(raw))
            guard !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { continue }
            let key = trimmed(String(line[..<equals])).lowercased()
            guard key == "daemon" || key == "daemon_idle_exit" else { continue }
            var value = trimmed(String(line[line.index(after: equals)...]))
            if value.count >= 2, let quote = value.first, quote == "\"" || quote == "'", value.last == quote {
                value = String(value.dropFirst().dropLast())
            }
            settings[key] = value
        }
        return settings
    }

    private static func trimmed(_ text: String) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

/// A daemon setting that means nothing: which one, what it said, and what it takes.
public struct AutoStartError: Error, Equatable, CustomStringConvertible {
    /// The variable, or `PATH: key` of the config file.
    public var setting: String
    /// What it said.
    public var value: String
    /// What it takes.
    public var expected: String

    /// The message the user sees.
    public var description: String { "\(setting) is \"\(value)\": it takes \(expected)" }
}
