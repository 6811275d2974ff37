import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawServices

/// `run_shortcut`: runs one of the user's named automations (a script, an application's action) without the GUI,
/// behind the run's gates: the shortcut's name is what the approval policy reads, so "Send report" needs the send
/// approval.
public struct RunShortcutTool: AgentTool {
    /// What the output the model reads is cut to (its head and tail kept).
    public static let outputLimit = 16 * 1024

    /// Where the shortcuts are found and what scripts run with.
    public let environment: [String: String]
    /// The display an application's action opens on (the agent's screen; nil: `DISPLAY`).
    public let display: String?

    /// Creates the tool; `environment` defaults to the running command's (the caller's when the daemon serves it).
    public init(environment: [String: String] = Invocation.current.environment, display: String? = nil) {
        (self.environment, self.display) = (environment, display)
    }

    /// The tool's name.
    public var name: String { "run_shortcut" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Shortcuts (the user's scripts and applications' .desktop actions, from list_shortcuts): run one without "
            + "the GUI. A script runs to its end and its output and exit status come back; an application's action "
            + "(\"App: Action\") is launched on the screen. Prefer it to the screen when a shortcut does what the task "
            + "needs: it is faster, and it does not depend on what is on screen. A name that is not found comes back "
            + "with the closest names."
    }

    /// The shortcut, its input and how long it may run.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["name"],
            "properties": [
                "name": ["type": "string", "description": "The shortcut's name or id, as list_shortcuts gives it."],
                "input": [
                    "type": "string",
                    "description": "Text for a script's stdin, or the URI or file an application's action opens.",
                ],
                "timeout_seconds": [
                    "type": "number",
                    "description": "How long a script may run before it is killed, 1-300 (default 60).",
                ],
            ],
        ]
    }

    /// Finds the shortcut, gates it, runs it off the pool and reports its output and status.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        guard let wanted = input["name"]?.string, !wanted.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ToolError("name is required: a shortcut's name from list_shortcuts")
        }
        let seconds = input["timeout_seconds"]?.double ?? 60
        guard seconds.isFinite, (1...300).contains(seconds) else {
            throw ToolError("timeout_seconds must be from 1 to 300")
        }
        let text = input["input"]?.string
        let shortcut: Shortcut
        do {
            shortcut = try Shortcuts.find(wanted, in: Shortcuts.all(environment: environment))
        } catch ShortcutError.notFound(let name, let closest) {
            let names = closest.map { UntrustedText.quoted($0) }.joined(separator: ", ")
            throw ToolError(
                "no shortcut is named \(UntrustedText.quoted(name))"
                    + (closest.isEmpty
                        ? "; list_shortcuts lists the ones there are"
                        : "; the closest names are \(names): call run_shortcut with one of them if it does what you "
                            + "need, or list_shortcuts to see them all"))
        } catch {
            throw ToolError("\(error)")
        }
        guard shortcut.runnable else {
            throw ToolError("\(ShortcutError.notRunnable(shortcut.name, why: shortcut.note ?? ""))")
        }
        let describe = "run shortcut \(UntrustedText.quoted(shortcut.name))"
        if let refused = await ServiceAction.permit(
            tool: name, verb: "run", label: "run shortcut \(shortcut.name)", text: shortcut.id, describe: describe,
            command: shortcut.runs, context: context)
        {
            return .text(refused)
        }
        if context.isCancelled() { throw CancellationError() }
        let runner = ShortcutRunner(environment: environment, directory: XclawPaths.home(environment))
        let (display, cancelled) = (self.display, context.isCancelled)
        let start = ContinuousClock.now
        let run: ShortcutRun
        do {
            run = try await ServiceAction.blocking {
                try runner.run(
                    shortcut, input: text, timeout: .milliseconds(Int(seconds * 1000)), display: display,
                    keep: Self.outputLimit, cancelled: cancelled)
            }
        } catch {
            ServiceAction.log(
                tool: name, verb: "run", text: shortcut.id, result: "error: \(error)", since: start, context: context)
            throw ToolError("\(error)")
        }
        if run.status == .cancelled { throw CancellationError() }
        let failure = run.failure
        ServiceAction.log(
            tool: name, verb: "run", text: shortcut.id, result: failure.map { "error: \($0)" } ?? "ok", since: start,
            context: context)
        let report = Self.report(run)
        if failure != nil { throw ToolError(report) }
        return .text(report)
    }

    /// The result as the model reads it: how it ended, then each stream's output (control characters shown).
    static func report(_ run: ShortcutRun) -> String {
        let name = UntrustedText.quoted(run.name)
        var lines: [String]
        switch run.status {
        case .launched:
            return "launched \(name) (pid \(run.pid)): take a screen_snapshot to see its window"
        case .ok:
            let seconds = run.seconds.formatted(.number.precision(.fractionLength(0...2)))
            lines = ["shortcut \(name) finished (exit status 0) in \(seconds) s"]
        case .failed: lines = ["shortcut \(name) failed: it exited with status \(run.exitCode ?? -1)"]
        case .killed: lines = ["shortcut \(name) was killed by signal \(run.signal ?? 0)"]
        case .timedOut:
            lines = ["shortcut \(name) was killed after \(run.seconds.formatted()) s, its timeout"]
        case .cancelled: lines = ["shortcut \(name) was cancelled"]
        }
        if run.cutBytes > 0 { lines.append("(\(run.cutBytes) bytes of output were left out in the middle)") }
        for (label, text) in [("stdout", run.stdout), ("stderr", run.stderr)] where !text.isEmpty {
            lines.append("\(label):\n" + UntrustedText.forTerminal(text))
        }
        if run.stdout.isEmpty && run.stderr.isEmpty { lines.append("(it printed nothing)") }
        return lines.joined(separator: "\n")
    }
}
