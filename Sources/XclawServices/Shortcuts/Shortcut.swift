import Foundation
import XclawBase
import XclawScreen

/// One named automation the user can run without the GUI: an application's `.desktop` action ("Firefox: New Private
/// Window") or one of the user's own scripts in `$XDG_CONFIG_HOME/xclaw/shortcuts/`.
public struct Shortcut: Encodable, Sendable, Hashable {
    /// Where a shortcut comes from, which decides how it runs.
    public enum Kind: String, Encodable, Sendable {
        /// A `[Desktop Action]` of an installed application: launched detached on the display, like `launch`.
        case desktopAction = "desktop-action"
        /// An executable in the shortcuts directory: run to its end, its output streamed, under a timeout.
        case script
    }

    /// What it is called: "<App name>: <Action name>", or a script's file name without its extension.
    public var name: String
    /// What names it without doubt: `<desktop id>:<action id>` (`firefox.desktop:new-private-window`), or a script's
    /// file name (`backup-notes.sh`).
    public var id: String
    /// Its kind.
    public var kind: Kind
    /// One line on what it does: a script's first comment line after the shebang, an application's `Comment`.
    public var description: String?
    /// What it runs: the action's `Exec` line, or the script's path.
    public var runs: String
    /// The file it comes from (the `.desktop` file, the script).
    public var path: String
    /// False when it cannot run (a script without its executable bit); `note` says why.
    public var runnable: Bool
    /// Why it cannot run, and what to do about it.
    public var note: String?
    /// The application and action a desktop action launches (nil for a script).
    let application: DesktopEntry?
    let action: DesktopAction?

    enum CodingKeys: String, CodingKey {
        case name, id, kind, description, runs, path, runnable, note
    }

    /// A desktop action of `entry`.
    init(entry: DesktopEntry, action: DesktopAction) {
        name = "\(entry.name): \(action.name)"
        id = "\(entry.id):\(action.id)"
        kind = .desktopAction
        description = entry.comment ?? entry.genericName
        runs = action.exec ?? ""
        path = entry.path
        runnable = action.exec.map { !$0.trimmingCharacters(in: .whitespaces).isEmpty } ?? false
        note = runnable ? nil : "the action has no Exec line"
        application = entry
        self.action = action
    }

    /// A script at `path`.
    init(script path: String, description: String?, executable: Bool) {
        let file = (path as NSString).lastPathComponent
        let stem = (file as NSString).deletingPathExtension
        name = stem.isEmpty ? file : stem
        id = file
        kind = .script
        self.description = description
        runs = path
        self.path = path
        runnable = executable
        note = executable ? nil : "not executable: make it so with `chmod +x \(path)`"
        application = nil
        action = nil
    }
}

/// Why a shortcut could not be found or run.
public enum ShortcutError: ClassifiedError, Equatable {
    /// No shortcut has the name; the closest names follow.
    case notFound(String, closest: [String])
    /// Several shortcuts have the name; their ids tell them apart.
    case ambiguous(String, ids: [String])
    /// The shortcut exists and cannot run (a script without its executable bit, an action without Exec).
    case notRunnable(String, why: String)
    /// The script exited with a status other than 0.
    case failed(String, status: Int32)
    /// A signal ended the script (not ours).
    case killedBySignal(String, signal: Int32)
    /// The script ran past its timeout: its process group was killed.
    case timedOut(String, seconds: Double)

    /// Missing, ambiguous, failed and timed-out shortcuts are conditions (1); one that cannot run is the setup's
    /// fault (2).
    public var exitStatus: ExitStatus {
        switch self {
        case .notRunnable: return .usage
        default: return .notFound
        }
    }

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .notFound(let name, let closest):
            return "no shortcut is named \(UntrustedText.quoted(name))"
                + (closest.isEmpty
                    ? "" : " (closest: \(closest.map { UntrustedText.quoted($0) }.joined(separator: ", ")))")
                + "; listing the shortcuts shows them all"
        case .ambiguous(let name, let ids):
            return "\(UntrustedText.quoted(name)) names \(ids.count) shortcuts (\(ids.joined(separator: ", "))); "
                + "run one by its id"
        case .notRunnable(let name, let why):
            return "shortcut \(UntrustedText.quoted(name)) cannot run: \(why)"
        case .failed(let name, let status):
            return "shortcut \(UntrustedText.quoted(name)) failed: it exited with status \(status)"
        case .killedBySignal(let name, let signal):
            return "shortcut \(UntrustedText.quoted(name)) was killed by signal \(signal)"
        case .timedOut(let name, let seconds):
            return "shortcut \(UntrustedText.quoted(name)) was killed after \(seconds.formatted()) s, its timeout "
                + "(what it printed until then is kept); give it longer with --timeout SECONDS"
        }
    }
}
