import Foundation
import Synchronization
import XclawAgent
import XclawMessages
import XclawPolling

/// A tool of the tests' own: echoes its input, optionally with an image, optionally slowly.
public struct EchoTool: AgentTool {
    /// "echo".
    public var name = "echo"
    /// What the model reads.
    public var description = "Echoes its text."
    /// text, image, sleep_ms.
    public var inputSchema: JSONValue = [
        "type": "object", "required": ["text"],
        "properties": [
            "text": ["type": "string"], "image": ["type": "boolean"], "sleep_ms": ["type": "integer", "minimum": 0],
        ],
    ]
    /// A tool with the default name.
    public init() {}

    /// Echoes `text`; with `sleep_ms`, polls the run's cancel flag from a dispatch thread first.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        if let ms = input["sleep_ms"]?.int, ms > 0 {
            // Polls cancellation the way the screen tools do: from a dispatch thread, where Task.isCancelled is
            // always false, so only the registry's flag can stop it.
            let stopped = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
                DispatchQueue.global().async {
                    done.resume(
                        returning: poll(within: .milliseconds(ms), every: .milliseconds(5)) { context.isCancelled() })
                }
            }
            if stopped { throw CancellationError() }
        }
        let text = input["text"]?.string ?? ""
        if input["image"]?.bool == true {
            // A distinct 1x1 PNG per call is not needed: the text says which call made it.
            return ToolOutput(content: [
                .text("echo: \(text)"), .image(mediaType: "image/png", base64: "iVBORw0KGgo=" + text),
            ])
        }
        return .text("echo: \(text)")
    }
}

/// Text collected across threads (streamed reply text, in tests of the loop and the runtime).
public final class TextSink: Sendable {
    private let value = Mutex("")
    /// An empty sink.
    public init() {}
    /// Appends streamed text.
    public func append(_ s: String) { value.withLock { $0 += s } }
    /// Everything appended so far.
    public var text: String { value.withLock { $0 } }
}
