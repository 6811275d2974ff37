import Foundation

/// Where xclaw keeps and finds its files, one rule each, every one taking the environment as a parameter so the
/// rules are tested without touching a real home.
public enum XclawPaths {
    /// The process environment, the default of every rule.
    public static var environment: [String: String] { Invocation.current.environment }

    /// The directory of the running executable, through `/proc/self/exe`; a test bundle's products directory when
    /// the executable is `<products>/xclawPackageTests.xctest`, so tests find the binaries built beside them.
    public static let executableDirectory: URL = {
        let exe =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
        if url.lastPathComponent.hasSuffix(".xctest") { url.deleteLastPathComponent() }
        return url
    }()

    /// The binary `name` beside the running executable, when it is there and executable.
    public static func sibling(_ name: String) -> String? {
        let path = executableDirectory.appendingPathComponent(name).path
        return access(path, X_OK) == 0 ? path : nil
    }

    /// `$HOME`, else the password database's home directory.
    public static func home(_ environment: [String: String] = environment) -> String {
        environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
    }

    /// Per-run state shared by the processes of one user (display records and logs, the OCR cache, refs):
    /// `$XCLAW_STATE_DIR`, else `$XDG_RUNTIME_DIR/xclaw`, else `/tmp/xclaw-UID`.
    public static func stateDirectory(_ environment: [String: String] = environment) -> URL {
        if let dir = environment["XCLAW_STATE_DIR"], !dir.isEmpty { return URL(fileURLWithPath: dir) }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return URL(fileURLWithPath: runtime).appendingPathComponent("xclaw")
        }
        return URL(fileURLWithPath: "/tmp/xclaw-\(getuid())")
    }

    /// `$XDG_CONFIG_HOME/xclaw`, else `~/.config/xclaw`: the API key file and the user's model catalog.
    public static func configDirectory(_ environment: [String: String] = environment) -> String {
        xdg("XDG_CONFIG_HOME", ".config", environment) + "/xclaw"
    }

    /// `$XDG_DATA_HOME/xclaw`, else `~/.local/share/xclaw`: agents and their history are user data.
    public static func dataDirectory(_ environment: [String: String] = environment) -> String {
        xdg("XDG_DATA_HOME", ".local/share", environment) + "/xclaw"
    }

    /// `$XDG_CACHE_HOME/xclaw`, else `~/.cache/xclaw`: what is derived from installed files (glyphs rendered from
    /// the fonts), never from the screen, and can be made again at any time.
    public static func cacheDirectory(_ environment: [String: String] = environment) -> String {
        xdg("XDG_CACHE_HOME", ".cache", environment) + "/xclaw"
    }

    /// `$XDG_STATE_HOME/xclaw`, else `~/.local/state/xclaw`: the action logs of runs.
    public static func userStateDirectory(_ environment: [String: String] = environment) -> String {
        xdg("XDG_STATE_HOME", ".local/state", environment) + "/xclaw"
    }

    /// The database, a file path or a `postgres://` URL: `$XCLAW_DATABASE_URL`, else `$XCLAW_DB`, else the config
    /// file's `database`, else `xclaw.sqlite` in the data directory. A leading `~/` of a path is expanded (a config
    /// file or a quoted value may carry it).
    public static func database(_ environment: [String: String] = environment) -> String {
        if let url = environment["XCLAW_DATABASE_URL"], !url.isEmpty { return url }
        for explicit in [environment["XCLAW_DB"], ConfigValues.value("database", environment: environment)] {
            guard let explicit, !explicit.isEmpty else { continue }
            if explicit == "~" || explicit.hasPrefix("~/") { return home(environment) + explicit.dropFirst() }
            return explicit
        }
        return dataDirectory(environment) + "/xclaw.sqlite"
    }

    /// An XDG base directory: the variable when it holds an absolute path (the spec says relative values are invalid
    /// and must be ignored), else `fallback` under the home directory.
    private static func xdg(_ variable: String, _ fallback: String, _ environment: [String: String]) -> String {
        if let value = environment[variable], value.hasPrefix("/") { return value }
        return home(environment) + "/" + fallback
    }
}
