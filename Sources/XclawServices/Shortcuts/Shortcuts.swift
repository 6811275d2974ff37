import Foundation
import XclawBase
import XclawScreen

/// The shortcuts installed for the caller: the user's scripts (`$XDG_CONFIG_HOME/xclaw/shortcuts/`, default
/// `~/.config/xclaw/shortcuts/`) first, then the actions of the applications a menu shows, each group by name.
public enum Shortcuts {
    /// The directory of the user's own scripts.
    public static func directory(environment: [String: String]) -> String {
        XclawPaths.configDirectory(environment) + "/shortcuts"
    }

    /// Every shortcut. In the scripts directory each regular file is one (hidden files, editor backups ending in `~`
    /// and subdirectories are not); one without its executable bit is listed with a note and cannot run.
    public static func all(environment: [String: String]) -> [Shortcut] {
        scripts(environment: environment) + actions(environment: environment)
    }

    /// The scripts, by name.
    static func scripts(environment: [String: String]) -> [Shortcut] {
        let root = directory(environment: environment)
        guard let files = try? FileManager.default.contentsOfDirectory(atPath: root) else { return [] }
        return files.filter { !$0.hasPrefix(".") && !$0.hasSuffix("~") }.sorted().compactMap { file in
            let path = root + "/" + file
            var info = stat()
            // stat, not lstat: a link to a script elsewhere is a script.
            guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
            return Shortcut(
                script: path, description: description(ofScript: path), executable: access(path, X_OK) == 0)
        }.sorted { ($0.name.lowercased(), $0.id) < ($1.name.lowercased(), $1.id) }
    }

    /// The actions of the applications a menu on the caller's desktop lists, by name.
    static func actions(environment: [String: String]) -> [Shortcut] {
        let desktops = (environment["XDG_CURRENT_DESKTOP"] ?? "").split(separator: ":").map(String.init)
        return DesktopEntries.all(environment: environment).filter { $0.isShown(on: desktops) }.flatMap { entry in
            entry.actions.map { Shortcut(entry: entry, action: $0) }
        }.sorted { ($0.name.lowercased(), $0.id) < ($1.name.lowercased(), $1.id) }
    }

    /// A script's description: the first comment line after the shebang (`# Backs up the notes folder`), blank lines
    /// skipped, before any other line; nil when there is none. Only the file's first 4 KiB are read.
    static func description(ofScript path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let head = String(decoding: (try? handle.read(upToCount: 4096)) ?? Data(), as: UTF8.self)
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if lines.first?.hasPrefix("#!") == true { lines.removeFirst() }
        for line in lines where !line.isEmpty {
            guard line.hasPrefix("#") else { return nil }
            let text = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
            if !text.isEmpty { return text }
        }
        return nil
    }

    /// The shortcuts `query` selects (its words in the name, id or description, case aside); all of them for an
    /// empty query.
    public static func matching(_ query: String, in shortcuts: [Shortcut]) -> [Shortcut] {
        let words = query.lowercased().split(separator: " ").map(String.init)
        guard !words.isEmpty else { return shortcuts }
        return shortcuts.filter { shortcut in
            let text = [shortcut.name, shortcut.id, shortcut.description ?? ""].joined(separator: " ").lowercased()
            return words.allSatisfy(text.contains)
        }
    }

    /// The shortcut `name` names: its id (a desktop action's with or without `.desktop`), else its name without
    /// regard to case. None: `ShortcutError.notFound` with the closest names; several: `.ambiguous`.
    public static func find(_ name: String, in shortcuts: [Shortcut]) throws -> Shortcut {
        let wanted = name.trimmingCharacters(in: .whitespaces)
        let lower = wanted.lowercased()
        let tiers: [(Shortcut) -> Bool] = [
            { $0.id == wanted },
            { $0.kind == .desktopAction && $0.id.replacingOccurrences(of: ".desktop:", with: ":") == wanted },
            { $0.name.lowercased() == lower },
        ]
        for tier in tiers {
            let matches = shortcuts.filter(tier)
            if matches.count == 1 { return matches[0] }
            if matches.count > 1 { throw ShortcutError.ambiguous(wanted, ids: matches.map(\.id)) }
        }
        throw ShortcutError.notFound(wanted, closest: closest(to: wanted, in: shortcuts))
    }

    /// The names nearest to `name` by edit distance (case aside), best first: the "did you mean" of a missing
    /// shortcut. A name that contains the query, or is contained in it, counts as near as a one-letter typo.
    public static func closest(to name: String, in shortcuts: [Shortcut], count: Int = 3) -> [String] {
        let query = Array(name.lowercased())
        let scored = shortcuts.map { shortcut -> (Int, String) in
            let candidate = shortcut.name.lowercased()
            var distance = editDistance(query, Array(candidate))
            if !query.isEmpty, candidate.contains(String(query)) || String(query).contains(candidate) {
                distance = min(distance, 1)
            }
            return (distance, shortcut.name)
        }
        var seen = Set<String>()
        return scored.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.1).filter { seen.insert($0).inserted }
            .prefix(count).map { $0 }
    }
}
