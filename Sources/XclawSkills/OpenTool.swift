import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawServices

/// `open`: opens a URI or a file with the user's default application (the desktop portal, else xdg-open), behind the
/// run's gates.
public struct OpenTool: AgentTool {
    /// What the handlers run with (the agent's display as DISPLAY).
    public let environment: [String: String]

    /// Creates the tool; `environment` defaults to the running command's, and `display` (the agent's screen) replaces
    /// its DISPLAY.
    public init(environment: [String: String] = Invocation.current.environment, display: String? = nil) {
        var environment = environment
        if let display { environment["DISPLAY"] = display }
        self.environment = environment
    }

    /// The tool's name.
    public var name: String { "open" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Desktop portal or xdg-open (the user's default applications): open a URI (https://…, mailto:…) or a file "
            + "with its default application. Prefer it to finding and clicking through a browser or file manager: it "
            + "is faster, and it does not depend on what is on screen. A relative file path is taken from the home "
            + "directory."
    }

    /// The target.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["target"],
            "properties": [
                "target": ["type": "string", "description": "A URI, or a file's path."]
            ],
        ]
    }

    /// Checks the target, gates the opening and hands it over.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        guard let target = input["target"]?.string, !target.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ToolError("target is required: a URI or a file's path")
        }
        let opener = Opener(environment: environment, directory: XclawPaths.home(environment))
        do { _ = try opener.resolve(target) } catch { throw ToolError("\(error)") }
        let quoted = UntrustedText.quoted(target, limit: 300)
        return .text(
            try await ServiceAction.perform(
                tool: name, verb: "open", label: "open \(target)", text: target, describe: "open \(quoted)",
                context: context
            ) {
                let result = try opener.open(target, timeout: .seconds(5))
                return "opened \(quoted) via \(result.via)"
                    + (result.stillRunning ? " (its application is running)" : "")
                    + ": take a screen_snapshot to see it if it opened a window"
            })
    }
}
