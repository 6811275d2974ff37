import Foundation
import XclawBase
import XclawMessages

/// What a run reports while it goes, for the terminal (text to stdout, the rest to stderr).
public struct RunObserver: Sendable {
    /// Streamed assistant text.
    public var text: @Sendable (String) -> Void
    /// A retry of a failed request (HTTP 529, 429, network...).
    public var retry: @Sendable (RetryNotice) -> Void
    /// A tool call is about to run.
    public var toolStarted: @Sendable (_ name: String, _ input: JSONValue) -> Void
    /// A tool call finished.
    public var toolFinished: @Sendable (_ name: String, _ result: ToolResultBlock, _ ms: Double) -> Void
    /// A step (one request and its tools) finished.
    public var stepFinished: @Sendable (StepReport) -> Void
    /// A message joined the conversation (the model's reply, or the tool results answering it), so a store can
    /// persist the conversation as it grows.
    public var appended: @Sendable (Message) -> Void
    /// The turns before the newest reply were replaced by this summary (xclaw's own compaction), so a store can
    /// rebuild the same conversation later.
    public var summarised: @Sendable (String) -> Void
    /// Something the user should know that is not the model's text (a summary that failed).
    public var notice: @Sendable (String) -> Void

    /// Creates an observer; every callback defaults to doing nothing.
    public init(
        text: @escaping @Sendable (String) -> Void = { _ in },
        retry: @escaping @Sendable (RetryNotice) -> Void = { _ in },
        toolStarted: @escaping @Sendable (String, JSONValue) -> Void = { _, _ in },
        toolFinished: @escaping @Sendable (String, ToolResultBlock, Double) -> Void = { _, _, _ in },
        stepFinished: @escaping @Sendable (StepReport) -> Void = { _ in },
        appended: @escaping @Sendable (Message) -> Void = { _ in },
        summarised: @escaping @Sendable (String) -> Void = { _ in },
        notice: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.text = text
        self.retry = retry
        self.toolStarted = toolStarted
        self.toolFinished = toolFinished
        self.stepFinished = stepFinished
        self.appended = appended
        self.summarised = summarised
        self.notice = notice
    }
}
