import Foundation
import XclawBase

/// One installed application, from its freedesktop `.desktop` entry (the Desktop Entry Specification 1.5).
public struct DesktopEntry: Codable, Sendable, Hashable {
    /// The desktop file id: its path below `applications/`, `/` turned into `-` (`org.gnome.Calculator.desktop`).
    public var id: String
    /// Where the file is.
    public var path: String
    /// `Name`.
    public var name: String
    /// `GenericName` ("Text Editor").
    public var genericName: String?
    /// `Comment`.
    public var comment: String?
    /// `Keywords`.
    public var keywords: [String]
    /// `Exec`, as written (field codes and quoting included).
    public var exec: String?
    /// `Terminal=true`: the program wants a terminal.
    public var terminal: Bool
    /// `NoDisplay=true`: installed, but not meant for menus (still launchable by id).
    public var noDisplay: Bool
    /// `OnlyShowIn`: desktops it is shown in (empty: all).
    public var onlyShowIn: [String]
    /// `NotShowIn`.
    public var notShowIn: [String]
    /// The `[Desktop Action ID]` groups `Actions=` lists, in its order: what the application offers besides starting
    /// ("New Private Window"), which `xclaw shortcuts` lists.
    public var actions: [DesktopAction] = []

    /// snake_case, as every xclaw JSON output.
    enum CodingKeys: String, CodingKey {
        case id, path, name, comment, keywords, exec, terminal, actions
        case genericName = "generic_name"
        case noDisplay = "no_display"
        case onlyShowIn = "only_show_in"
        case notShowIn = "not_show_in"
    }

    /// Whether a menu on `desktops` (`XDG_CURRENT_DESKTOP`, colon-separated; empty on a bare display) lists it.
    public func isShown(on desktops: [String]) -> Bool {
        if noDisplay { return false }
        if !onlyShowIn.isEmpty && !onlyShowIn.contains(where: desktops.contains) { return false }
        return !notShowIn.contains(where: desktops.contains)
    }
}

/// One `[Desktop Action ID]` group of an entry (the Desktop Entry Specification's additional application actions).
public struct DesktopAction: Codable, Sendable, Hashable {
    /// The action's id, as `Actions=` names it (`new-private-window`).
    public var id: String
    /// `Name` ("New Private Window").
    public var name: String
    /// `Icon`.
    public var icon: String?
    /// `Exec`, as written (field codes and quoting included).
    public var exec: String?
}

/// Why an application could not be found, read or launched.
public enum AppError: ClassifiedError, Hashable {
    /// No entry matches the name.
    case notFound(String, suggestions: [String])
    /// Several entries match it equally.
    case ambiguous(String, candidates: [String])
    /// The entry cannot be launched: no Exec, not an application, or an unreadable file.
    case notLaunchable(String, why: String)
    /// The program is not on PATH.
    case missingProgram(String)
    /// No window of the launched process mapped in time.
    case noWindow(pid: Int32, seconds: Double)

    /// Missing and ambiguous names and windows that never came are conditions (1); an unusable entry is the input's
    /// fault (2).
    public var exitStatus: ExitStatus {
        switch self {
        case .notFound, .ambiguous, .noWindow: return .notFound
        case .notLaunchable, .missingProgram: return .usage
        }
    }

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .notFound(let name, let suggestions):
            return "no application is named \"\(name)\""
                + (suggestions.isEmpty ? "" : " (closest: \(suggestions.joined(separator: ", ")))")
                + "; `xclaw apps` lists them, or launch a command with `xclaw launch -- CMD ARGS`"
        case .ambiguous(let name, let candidates):
            return "\"\(name)\" names \(candidates.count) applications (\(candidates.joined(separator: ", "))); "
                + "launch one by its id"
        case .notLaunchable(let what, let why): return "\(what) cannot be launched: \(why)"
        case .missingProgram(let program):
            return "\(program) is not installed (not found on PATH); install its package or give the full path"
        case .noWindow(let pid, let seconds):
            return "no window of pid \(pid) mapped within \(seconds.formatted()) s; it is still running "
                + "(`kill \(pid)` ends it), or wait longer with --wait-window SECONDS"
        }
    }
}

/// The applications installed for this user: `.desktop` files under `applications/` in `$XDG_DATA_HOME` (default
/// `~/.local/share`) and each of `$XDG_DATA_DIRS` (default `/usr/local/share:/usr/share`), the first of one id winning.
public enum DesktopEntries {
    /// Every application entry, by id; hidden (`Hidden=true`) and non-application entries are left out.
    public static func all(environment: [String: String]) -> [DesktopEntry] {
        var seen = Set<String>()
        var entries: [DesktopEntry] = []
        for directory in directories(environment: environment) {
            let root = URL(fileURLWithPath: directory).appendingPathComponent("applications")
            guard
                let walker = FileManager.default.enumerator(
                    at: root, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles])
            else { continue }
            var files: [URL] = []
            for case let file as URL in walker where file.pathExtension == "desktop" { files.append(file) }
            for file in files.sorted(by: { $0.path < $1.path }) {
                let relative = String(file.path.dropFirst(root.path.count + 1))
                let id = relative.replacingOccurrences(of: "/", with: "-")
                // The first directory's file of an id wins, even when it hides the application.
                guard seen.insert(id).inserted, let text = try? String(contentsOf: file, encoding: .utf8),
                    let entry = parse(text, id: id, path: file.path)
                else { continue }
                entries.append(entry)
            }
        }
        return entries.sorted { ($0.name.lowercased(), $0.id) < ($1.name.lowercased(), $1.id) }
    }

    /// The data directories searched, most important first.
    static func directories(environment: [String: String]) -> [String] {
        let home =
            environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["HOME"].map { $0 + "/.local/share" }
        let dirs = environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share"
        return ([home].compactMap { $0 } + dirs.split(separator: ":").map(String.init)).filter { $0.hasPrefix("/") }
    }

    /// Reads the `[Desktop Entry]` group of a file and the action groups it lists; nil unless it is a visible
    /// application (`Type=Application`, not `Hidden`) with a name. Localised keys (`Name[de]`) are skipped: the
    /// untranslated ones are what `launch` matches. An action listed without a group, or without a name, is left out.
    public static func parse(_ text: String, id: String, path: String) -> DesktopEntry? {
        let groups = self.groups(text)
        guard let values = groups["Desktop Entry"], values["Type"] == "Application", values["Hidden"] != "true",
            let name = values["Name"], !name.isEmpty
        else { return nil }
        let list = { (key: String) in
            (values[key] ?? "").split(separator: ";").map { String($0).trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        }
        let actions = list("Actions").compactMap { action -> DesktopAction? in
            guard let group = groups["Desktop Action \(action)"], let name = group["Name"], !name.isEmpty else {
                return nil
            }
            return DesktopAction(id: action, name: name, icon: group["Icon"], exec: group["Exec"])
        }
        return DesktopEntry(
            id: id, path: path, name: name, genericName: values["GenericName"], comment: values["Comment"],
            keywords: list("Keywords"), exec: values["Exec"], terminal: values["Terminal"] == "true",
            noDisplay: values["NoDisplay"] == "true", onlyShowIn: list("OnlyShowIn"), notShowIn: list("NotShowIn"),
            actions: actions)
    }

    /// Every group's untranslated keys, by group name (`Desktop Entry`, `Desktop Action new-window`); the first
    /// value of a key, and of a group, wins.
    static func groups(_ text: String) -> [String: [String: String]] {
        var groups: [String: [String: String]] = [:]
        var current: String?
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                let name = line.hasSuffix("]") ? String(line.dropFirst().dropLast()) : nil
                // A repeated group is ignored (its keys would otherwise mix with the first one's).
                current = name.flatMap { groups[$0] == nil ? $0 : nil }
                if let current { groups[current] = [:] }
                continue
            }
            guard let group = current, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            guard !key.contains("["), groups[group]?[key] == nil else { continue }
            groups[group]?[key] = unescape(line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces))
        }
        return groups
    }

    /// A value's escapes: `\s` `\n` `\t` `\r` `\\`.
    static func unescape(_ value: String) -> String {
        var out = "", escaped = false
        for c in value {
            if escaped {
                switch c {
                case "s": out.append(" ")
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "r": out.append("\r")
                default:
                    // `\;` and others stay for the list and Exec parsers.
                    out.append("\\")
                    out.append(c)
                }
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else {
                out.append(c)
            }
        }
        return escaped ? out + "\\" : out
    }

    /// The entry `name` names: its id (with or without `.desktop`), else its Name, else its GenericName (both without
    /// regard to case), among all entries (NoDisplay ones included: they are launchable); a path to a `.desktop` file
    /// is read as it is.
    public static func find(_ name: String, environment: [String: String]) throws -> DesktopEntry {
        if name.hasSuffix(".desktop"), name.contains("/") {
            guard let text = try? String(contentsOfFile: name, encoding: .utf8) else {
                throw AppError.notLaunchable(name, why: "the file cannot be read")
            }
            guard let entry = parse(text, id: (name as NSString).lastPathComponent, path: name) else {
                throw AppError.notLaunchable(name, why: "it is not a visible application entry (Type=Application)")
            }
            return entry
        }
        let entries = all(environment: environment)
        let bare = name.hasSuffix(".desktop") ? String(name.dropLast(8)) : name
        let lower = name.lowercased()
        let tiers: [(DesktopEntry) -> Bool] = [
            { $0.id == bare + ".desktop" }, { $0.name.lowercased() == lower },
            { $0.genericName?.lowercased() == lower },
        ]
        for tier in tiers {
            let matches = entries.filter(tier)
            if matches.count == 1 { return matches[0] }
            if matches.count > 1 { throw AppError.ambiguous(name, candidates: matches.map(\.id)) }
        }
        let near = entries.filter {
            $0.name.lowercased().contains(lower) || $0.id.lowercased().contains(lower)
                || $0.keywords.contains { $0.lowercased() == lower }
        }
        throw AppError.notFound(name, suggestions: near.prefix(5).map { "\($0.id) (\($0.name))" })
    }

    /// The program and arguments `Exec` runs (the entry's, or `action`'s): quoting undone (double quotes with `\"`
    /// `` \` `` `\$` `\\`), `%f %u` replaced by the first of `targets` and `%F %U` by all of them (files or URIs, as
    /// given; dropped when there are none), the other field codes dropped (`%i %c %k` and the deprecated ones), `%%`
    /// a percent sign. A `Terminal=true` program runs in a terminal (`x-terminal-emulator -e`, else `xterm -e`) found
    /// on `PATH`.
    public static func command(
        _ entry: DesktopEntry, action: DesktopAction? = nil, targets: [String] = [],
        environment: [String: String] = [:]
    ) throws -> [String] {
        let what = action.map { "\(entry.id) action \($0.id)" } ?? entry.id
        let program = try execArguments(action.map { $0.exec } ?? entry.exec, of: what, targets: targets)
        guard entry.terminal else { return program }
        for terminal in ["x-terminal-emulator", "xterm"] {
            if let path = try? AppLauncher.resolve(terminal, path: environment["PATH"]) {
                return [path, "-e"] + program
            }
        }
        throw AppError.notLaunchable(entry.id, why: "it needs a terminal and none is installed (apt-get install xterm)")
    }

    /// An `Exec` line as arguments; `what` names its entry (and action) in errors.
    static func execArguments(_ exec: String?, of what: String, targets: [String]) throws -> [String] {
        guard let exec, !exec.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw AppError.notLaunchable(what, why: "it has no Exec line")
        }
        var arguments: [String] = []
        var current = "", inQuotes = false, escaped = false, started = false
        for c in exec {
            if escaped {
                current.append(c)
                escaped = false
            } else if inQuotes {
                if c == "\\" { escaped = true } else if c == "\"" { inQuotes = false } else { current.append(c) }
            } else if c == "\"" {
                inQuotes = true
                started = true
            } else if c == " " || c == "\t" {
                if started { arguments.append(current) }
                (current, started) = ("", false)
            } else {
                current.append(c)
                started = true
            }
        }
        guard !inQuotes else { throw AppError.notLaunchable(what, why: "its Exec line has an unclosed quote") }
        if started { arguments.append(current) }
        var expanded: [String] = []
        for argument in arguments {
            // A whole-argument field code is replaced by its targets (none: the argument goes).
            if argument.count == 2, argument.hasPrefix("%"), argument != "%%" {
                switch argument {
                case "%f", "%u": expanded += targets.prefix(1)
                case "%F", "%U": expanded += targets
                default: break
                }
                continue
            }
            var out = "", percent = false
            for c in argument {
                if percent {
                    if c == "%" { out.append("%") } else if c == "f" || c == "u" { out += targets.first ?? "" }
                    percent = false
                } else if c == "%" {
                    percent = true
                } else {
                    out.append(c)
                }
            }
            expanded.append(out)
        }
        guard !expanded.isEmpty else { throw AppError.notLaunchable(what, why: "its Exec line names no program") }
        return expanded
    }
}
