import Foundation
import XclawAgent
import XclawMessages
import XclawScreen

/// `computer_batch`: several `computer` actions in one turn, for a sequence whose outcome the model can predict (fill
/// a form: click, type, Tab, type, Return). Each item is a `computer` call; all coordinates refer to the screenshot
/// taken before the batch. Input actions neither settle nor take screenshots one by one: the screen settles once at
/// the end, which answers with one screenshot. The first error stops the batch and says how far it got.
public struct ComputerBatchTool: AgentTool {
    /// The tool each item runs through.
    private let computer: ComputerTool

    /// A batch over the run's `computer` tool.
    public init(computer: ComputerTool) {
        var inner = computer
        inner.batched = true
        self.computer = inner
    }

    /// The name Anthropic's reference tools use.
    public static let toolName = "computer_batch"

    /// The name Anthropic's reference tools use.
    public var name: String { Self.toolName }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Execute several `computer` actions in order in a single turn (e.g. click a field, type, press Tab, type, "
            + "press Return), for steps whose outcome you can predict. Each item has the same shape as one "
            + "`computer` call. All coordinates refer to the screenshot taken before this batch. The batch stops at "
            + "the first error and says which actions ran; otherwise the screen settles once at the end and one "
            + "screenshot shows the result."
    }

    /// A list of `computer` inputs.
    public var inputSchema: JSONValue {
        [
            "type": "object", "required": ["actions"],
            "properties": [
                "actions": [
                    "type": "array", "minItems": 1, "maxItems": 50,
                    "items": [
                        "type": "object", "required": ["action"],
                        "properties": ["action": ["type": "string", "description": "A computer action."]],
                    ],
                ]
            ],
        ]
    }

    /// Runs the items in order; stops at the first error; settles once and answers with one screenshot.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        guard let actions = input["actions"]?.array, !actions.isEmpty else {
            throw ToolError("actions must be a non-empty list of computer actions, e.g. [{\"action\": \"type\", …}]")
        }
        guard actions.count <= 50 else { throw ToolError("at most 50 actions a batch, not \(actions.count)") }
        var lines: [String] = []
        for (i, item) in actions.enumerated() {
            let label = "\(i):\(item["action"]?.string ?? "?")"
            if context.isCancelled() { throw CancellationError() }
            do {
                guard item.object != nil else { throw ToolError("each action must be an object") }
                // A screenshot inside a batch would be stale by the end: the batch takes one at its end.
                if item["action"]?.string == "screenshot" {
                    lines.append("[\(label)] (the batch takes its screenshot at the end)")
                    continue
                }
                let output = try await computer.execute(item, context: context)
                let text = output.content.compactMap { block -> String? in
                    if case .text(let t) = block { return t }
                    return nil
                }.joined(separator: " ")
                lines.append("[\(label)] " + (text.isEmpty ? "(ok)" : text))
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                let message = (error as? ToolError)?.message ?? "\(error)"
                lines.append("[\(label)] \(message)")
                throw ToolError(
                    lines.joined(separator: "\n")
                        + "\nbatch stopped at actions[\(i)] (\(label)): \(message) (\(i) completed, "
                        + "\(actions.count - i - 1) skipped). Take a screenshot before going on.")
            }
        }
        let shot = try await computer.session.perform { try $0.screenshot() }
        return ToolOutput(content: [.text(lines.joined(separator: "\n")), shot.imageBlock])
    }
}
