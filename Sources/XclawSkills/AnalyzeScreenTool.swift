import Foundation
import XclawAgent
import XclawMessages
import XclawScreen

/// Asks a vision model a question about a PNG screenshot (base64) of the given size and returns its answer. Injected
/// so the skills do not depend on the HTTP client: the agent passes a closure over its Claude client, tests a stub.
public typealias VisionAsker = @Sendable (_ question: String, _ pngBase64: String, _ size: Size) async throws -> String

/// `analyze_screen`: a question about the current screen answered by Claude's vision in a separate request, so the
/// screenshot does not stay in the main conversation (and its token cost) afterwards.
public struct AnalyzeScreenTool: AgentTool {
    /// The screen.
    public let session: ScreenSession
    /// Answers questions about screenshots.
    public let vision: VisionAsker

    /// Creates the tool.
    public init(session: ScreenSession, vision: @escaping VisionAsker) {
        self.session = session
        self.vision = vision
    }

    /// The tool's name.
    public var name: String { "analyze_screen" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Ask a question about what the screen shows now (layout, icons, colours, images, state of controls); a "
            + "vision model looks at a fresh screenshot and answers in text. Cheaper for the conversation than "
            + "capture_screen when a short answer is enough."
    }

    /// The question.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["question"],
            "properties": [
                "question": [
                    "type": "string", "description": "What to find out, e.g. \"Is the Wi-Fi icon crossed out?\"",
                ]
            ],
        ]
    }

    /// Settles, captures, asks, and returns the answer.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let question = input["question"]?.string?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard !question.isEmpty else {
            throw ToolError("question is required: what should be found out about the screen?")
        }
        let shot: Screenshot
        do {
            shot = try await session.perform { try $0.screenshot(as: .png) }  // the vision question is PNG
        } catch {
            throw modelError(error)
        }
        do {
            let answer = try await vision(question, shot.base64, shot.size)
            return .text(answer)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ToolError(
                "analyze_screen could not get an answer from the vision model (\(error)); try again "
                    + "later, or use capture_screen and look yourself")
        }
    }
}
