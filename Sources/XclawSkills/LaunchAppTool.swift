import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawMessages
import XclawScreen

/// `launch_app`: starts an installed application on the agent's display and waits for its window, so an agent on a
/// bare display can open what its task needs.
public struct LaunchAppTool: RecordingTool {
    /// The screen.
    public let session: ScreenSession

    /// Where the entries are looked for and what the application inherits (its `DISPLAY` is the session's).
    public let environment: [String: String]

    /// Creates the tool; `environment` defaults to the running command's (the caller's when the daemon serves it).
    public init(session: ScreenSession, environment: [String: String] = Invocation.current.environment) {
        self.session = session
        self.environment = environment
    }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Start an installed application by its name or id (from list_apps) on this screen, and wait for its first "
            + "window. Use it instead of looking for a launcher or menu when the screen has none."
    }

    /// The application and how long to wait.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["name"],
            "properties": [
                "name": [
                    "type": "string", "description": "Its name (\"Calculator\") or id (\"org.gnome.Calculator\").",
                ],
                "wait_seconds": [
                    "type": "number",
                    "description": "How long to wait for its window, 0-60 (default 10; 0: do not wait).",
                ],
            ],
        ]
    }

    /// Finds the entry, gates the launch like any other action, starts it detached and waits for its window.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        guard let wanted = input["name"]?.string, !wanted.isEmpty else {
            throw ToolError("name is required: an application's name or id from list_apps")
        }
        let wait = input["wait_seconds"]?.double ?? 10
        guard wait.isFinite, (0...60).contains(wait) else { throw ToolError("wait_seconds must be from 0 to 60") }
        // Installed applications only: a path (a .desktop file planted in Downloads, named by text on the screen)
        // could run anything.
        guard !wanted.contains("/") else {
            throw ToolError("name an installed application (from list_apps), not a file")
        }
        let environment = AppLauncher.environment(self.environment, display: session.connection.name)
        let entry: DesktopEntry, command: [String]
        let launchEnvironment = environment
        do {
            entry = try DesktopEntries.find(wanted, environment: environment)
            command = try DesktopEntries.command(entry, environment: environment)
        } catch {
            throw ToolError("\(error)")
        }
        let started = Mutex<(pid: Int32, window: WindowInfo?)?>(nil)
        let record = ActionRecord(tool: name, action: .launch, text: entry.id, result: "pending")
        let outcome = try await session.runInput(
            record, describe: "launch \(entry.name) (\(entry.id))", context: context
        ) {
            session in
            let pid = try AppLauncher.launch(command, environment: launchEnvironment)
            let window =
                wait > 0
                ? try? AppLauncher.waitForWindow(
                    pid: pid, manager: WindowManager(connection: session.connection), timeout: wait) : nil
            started.withLock { $0 = (pid, window) }
        }
        switch outcome {
        case .skipped(let message): return .text(message)
        case .done:
            guard let (pid, window) = started.withLock({ $0 }) else { throw ToolError("the launch did not report") }
            let what = "launched \(UntrustedText.quoted(entry.name)) (pid \(pid))"
            guard let window else {
                return .text(
                    what + (wait > 0 ? "; no window of it appeared within \(wait.formatted()) s" : "")
                        + ": take a screen_snapshot to see what happened")
            }
            return .text(what + "; its window \(window.hexID) \(UntrustedText.quoted(window.title)) is on screen")
        }
    }
}

extension LaunchAppTool {
    /// The tool's name.
    public static var toolName: String { "launch_app" }

    /// Its launches, which a replay does not do again.
    public static var playbacks: [RecordedAction: any ActionPlayback] { [.launch: NoPlayback()] }
}
