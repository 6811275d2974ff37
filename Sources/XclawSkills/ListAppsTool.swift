import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawScreen

/// `list_apps`: the installed applications (freedesktop .desktop entries), so the model can open one by name.
public struct ListAppsTool: AgentTool {
    /// Where the entries are looked for (`XDG_DATA_HOME`, `XDG_DATA_DIRS`, `HOME`) and the desktop shown on.
    public let environment: [String: String]

    /// Creates the tool; `environment` defaults to the running command's (the caller's when the daemon serves it).
    public init(environment: [String: String] = Invocation.current.environment) { self.environment = environment }

    /// The tool's name.
    public var name: String { "list_apps" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "List the applications installed on this computer (id, name, and what kind of program it is), optionally "
            + "only those whose name, id, generic name or keywords contain a word. Open one with launch_app."
    }

    /// An optional filter.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "properties": [
                "query": ["type": "string", "description": "A word to filter by, e.g. \"editor\" or \"calc\"."]
            ],
        ]
    }

    /// Lists the entries a menu would show, filtered.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let desktops = (environment["XDG_CURRENT_DESKTOP"] ?? "").split(separator: ":").map(String.init)
        let query = (input["query"]?.string ?? "").lowercased()
        let apps = DesktopEntries.all(environment: environment).filter { $0.isShown(on: desktops) }.filter { app in
            query.isEmpty
                || ([app.id, app.name, app.genericName ?? ""] + app.keywords).contains {
                    $0.lowercased().contains(query)
                }
        }
        guard !apps.isEmpty else {
            return .text(query.isEmpty ? "no applications are installed" : "no installed application matches \(query)")
        }
        // Names come from files on disk, not from the user: quoted and escaped like screen text.
        return .text(
            apps.map { app in
                "\(app.id): \(UntrustedText.quoted(app.name))"
                    + (app.genericName.map { " (\(UntrustedText.quoted($0)))" } ?? "")
            }.joined(separator: "\n"))
    }
}
