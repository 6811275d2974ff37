import Foundation
import Synchronization
import XclawBase
import XclawMessages

/// What a tool returns: text and image blocks for the tool_result.
public struct ToolOutput: Sendable, Hashable {
    /// Text and image blocks, in order.
    public var content: [ContentBlock]

    /// Creates an output.
    public init(content: [ContentBlock]) { self.content = content }

    /// A text-only output.
    public static func text(_ text: String) -> ToolOutput { ToolOutput(content: [.text(text)]) }

    /// Text followed by a PNG image.
    public static func textAndPNG(_ text: String, png: [UInt8]) -> ToolOutput {
        var blocks: [ContentBlock] = text.isEmpty ? [] : [.text(text)]
        blocks.append(.image(mediaType: "image/png", base64: Data(png).base64EncodedString()))
        return ToolOutput(content: blocks)
    }
}

/// A failure a tool reports to the model as an `is_error` tool_result: the message must tell the model what to do
/// differently (a valid range, the accepted values), because the model reads it and tries again.
public struct ToolError: Error, CustomStringConvertible, Sendable, Hashable {
    /// The message the model reads.
    public var message: String
    /// Set when the failure ends the whole run (the display is gone), with the exit status of its cause.
    public var endsRun: ExitStatus?
    /// Creates an error.
    public init(_ message: String, endsRun: ExitStatus? = nil) { (self.message, self.endsRun) = (message, endsRun) }
    /// The message, as the model reads it.
    public var description: String { message }
}

/// One line of the action log: what a tool did, where, and how it ended.
public struct ActionRecord: Codable, Sendable, Hashable {
    /// When the action started.
    public var time: Date
    /// The tool name.
    public var tool: String
    /// The action (`left_click`, `type`, ...; the tool name for single-action tools, as `RecordedAction.other`).
    public var action: RecordedAction
    /// Screen coordinates the action used, if any.
    public var x: Int?
    /// Screen coordinates the action used, if any.
    public var y: Int?
    /// Text typed or keys pressed, if any.
    public var text: String?
    /// "ok", "error: ...", "dry-run", "declined".
    public var result: String
    /// Milliseconds the action took (settling included).
    public var ms: Double?

    /// Creates a record.
    public init(
        time: Date = Date(), tool: String, action: RecordedAction, x: Int? = nil, y: Int? = nil, text: String? = nil,
        result: String, ms: Double? = nil
    ) {
        self.time = time
        self.tool = tool
        self.action = action
        self.x = x
        self.y = y
        self.text = text
        self.result = result
        self.ms = ms
    }
}

/// What a tool may use besides its input: the run's safety switches and its action log.
public struct ToolContext: Sendable {
    /// Plan and log only: tools that inject input must not touch the display.
    public var dryRun: Bool
    /// Asked before each input action; false means the user declined (the tool reports that to the model).
    public var confirm: @Sendable (String) async -> Bool
    /// Appends one line to the run's action log.
    public var log: @Sendable (ActionRecord) -> Void
    /// True once the run was cancelled; long tools (watch, wait) poll it and stop early.
    public var isCancelled: @Sendable () -> Bool
    /// The approval gate of the run (nil: none). Input tools describe what they act on (`ActionSubject`) only when
    /// there is one, since finding the control under a click costs a snapshot.
    public var gate: (@Sendable (GateRequest) async -> GateVerdict)?
    /// Asks the person at the run's terminal a yes/no question; nil when the run is unattended (no terminal), so a
    /// gated action waits for `xclaw approve|deny` instead.
    public var ask: (@Sendable (String) async -> Bool)?
    /// Keeps each input action that was done as a replayable step (nil: the run records none).
    public var recordStep: (@Sendable (RecordedStep) -> Void)?
    /// Keeps the frame each tool call's input acted on, for the run's report (nil: the run keeps none).
    public var frames: (any ActionFrameSink)?
    /// The tool_use id of the call being run (set by `ToolRegistry`; nil outside a run's loop).
    public var callID: String?

    /// Creates a context.
    public init(
        dryRun: Bool = false, confirm: @escaping @Sendable (String) async -> Bool = { _ in true },
        log: @escaping @Sendable (ActionRecord) -> Void = { _ in },
        isCancelled: @escaping @Sendable () -> Bool = { Task.isCancelled },
        gate: (@Sendable (GateRequest) async -> GateVerdict)? = nil,
        ask: (@Sendable (String) async -> Bool)? = nil
    ) {
        self.ask = ask
        self.dryRun = dryRun
        self.confirm = confirm
        self.log = log
        self.isCancelled = isCancelled
        self.gate = gate
    }

    /// How the gates answered an input action.
    public enum Permission: Sendable, Equatable {
        /// Act.
        case go
        /// `--dry-run`: log only.
        case dryRun
        /// The user at the terminal declined.
        case declined
        /// The approval gate denied it; the text is for the model.
        case denied(String)
    }

    /// Gates an input action: returns false (and logs) under `--dry-run` or when the user declines.
    /// `describe` names the action for the prompt and the log ("left_click at 640,400").
    public func mayAct(_ record: ActionRecord, describe: String) async -> Bool {
        await permit(record, describe: describe, subject: nil) == .go
    }

    /// Gates an input action through dry-run, the terminal confirmation and the approval gate (with `subject`, what
    /// it acts on), logging any refusal with its reason.
    public func permit(_ record: ActionRecord, describe: String, subject: ActionSubject?) async -> Permission {
        func refuse(_ result: String) {
            var r = record
            r.result = result
            log(r)
        }
        if dryRun {
            refuse("dry-run")
            return .dryRun
        }
        if !(await confirm(describe)) {
            refuse("declined")
            return .declined
        }
        if let gate, let subject,
            case .deny(let why) = await gate(GateRequest(record: record, describe: describe, subject: subject))
        {
            refuse("denied: \(why)")
            return .denied(why)
        }
        return .go
    }
}

/// Where a run keeps the frames its input actions acted on, for its report: one per tool call (its first action's), so
/// a tool that acts several times in one call (`computer_batch`, `type_text into:`) is drawn on the screen the call
/// started from. The frame is encoded by the sink off the action's path (while the model thinks), not by the tool.
public protocol ActionFrameSink: Sendable {
    /// Whether call `id` still wants a frame: true until one was handed over for it, so none is captured in vain.
    func wants(call id: String) -> Bool
    /// Keeps call `id`'s frame, which `image` encodes (as the model's screenshots are: their size and encoding); a
    /// store that refuses loses the frame, never the run.
    func keep(call id: String, image: @escaping @Sendable () throws -> (mediaType: String, data: Data))
}

/// A tool the model can call.
public protocol AgentTool: Sendable {
    /// The name the model calls it by.
    var name: String { get }
    /// What it does, for the model.
    var description: String { get }
    /// The JSON schema of its input.
    var inputSchema: JSONValue { get }
    /// The definition sent in `tools`; custom tools use name/description/input_schema, the computer tool its own
    /// built-in shape.
    var definition: JSONValue { get }
    /// The `anthropic-beta` values a request offering this tool needs (the computer tool's version header).
    var betas: [String] { get }
    /// Whether several calls of it in one assistant turn may run at once (a delegated subtask waits minutes for
    /// its own agent; screen tools must not overlap). Their results are still answered in the turn's order.
    var runsConcurrently: Bool { get }
    /// Runs it. Throws `ToolError` for failures the model should read; anything else is reported the same way.
    func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput
}

extension AgentTool {
    /// Custom tools need no beta.
    public var betas: [String] { [] }

    /// Tools run one after another unless they say otherwise.
    public var runsConcurrently: Bool { false }

    /// The standard custom-tool definition.
    public var definition: JSONValue {
        ["name": .string(name), "description": .string(description), "input_schema": inputSchema]
    }
}

/// A group of tools with shared prerequisites (a display, OCR data); `setup()` checks them once before a run, so a
/// missing prerequisite is a clear error up front instead of a failure in the middle of a task.
public protocol Skill: Sendable {
    /// The skill's name (for `--tools` and messages).
    var name: String { get }
    /// The tools it offers.
    var tools: [any AgentTool] { get }
    /// Checks the prerequisites; throws an error that tells the user what to install or start.
    func setup() throws
}
