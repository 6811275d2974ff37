import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawServices

/// `list_shortcuts`: the named automations the user has (their scripts, applications' actions), so the model can do a
/// task through one instead of the screen.
public struct ListShortcutsTool: AgentTool {
    /// Where the shortcuts are found (`XDG_CONFIG_HOME`, `XDG_DATA_HOME`, `XDG_DATA_DIRS`, `HOME`).
    public let environment: [String: String]

    /// Creates the tool; `environment` defaults to the running command's (the caller's when the daemon serves it).
    public init(environment: [String: String] = Invocation.current.environment) { self.environment = environment }

    /// The tool's name.
    public var name: String { "list_shortcuts" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Shortcuts (the user's own scripts in ~/.config/xclaw/shortcuts and installed applications' .desktop actions, "
            + "such as \"Firefox: New Private Window\"): list these named automations, each with what it does. When "
            + "one does what the task needs, run it with run_shortcut instead of using the screen: it is faster, and "
            + "it does not depend on what is on screen."
    }

    /// An optional filter.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "properties": [
                "query": ["type": "string", "description": "Words to filter by, e.g. \"backup\" or \"window\"."]
            ],
        ]
    }

    /// Lists the shortcuts, filtered.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let query = input["query"]?.string ?? ""
        let shortcuts = Shortcuts.matching(query, in: Shortcuts.all(environment: environment))
        guard !shortcuts.isEmpty else {
            return .text(query.isEmpty ? "no shortcuts are installed" : "no shortcut matches \(query)")
        }
        // Names and descriptions come from files on disk, not from the user: quoted like screen text.
        return .text(
            shortcuts.map { shortcut in
                "\(UntrustedText.quoted(shortcut.name)) (\(shortcut.kind == .script ? "script" : "application action"))"
                    + (shortcut.description.map { ": \(UntrustedText.quoted($0, limit: 200))" } ?? "")
                    + (shortcut.runnable ? "" : " [cannot run: \(shortcut.note ?? "")]")
            }.joined(separator: "\n"))
    }
}
