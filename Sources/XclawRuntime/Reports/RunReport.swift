import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawScreen
import XclawSkills
import XclawStore

/// One run, step by step, as its report shows it: built from what the store kept (no screen, no network), so a
/// report can be written for any run, long after it ended. Rendered by `ReportHTML`.
public struct RunReport: Sendable {
    /// A screenshot as stored: a PNG whose size was read from its header (the overlay's viewBox).
    public struct Image: Sendable, Hashable {
        /// The PNG, base64 (re-encoded from the decoded bytes, so nothing but base64 reaches the page).
        public var base64: String
        /// Its width in pixels.
        public var width: Int
        /// Its height in pixels.
        public var height: Int

        /// `image/png` or `image/jpeg`.
        public var mediaType = "image/png"

        /// Reads a stored image block; nil unless it is a PNG or a JPEG with a sane header.
        public init?(mediaType: String, base64: String) {
            guard let data = Data(base64Encoded: base64, options: .ignoreUnknownCharacters) else { return nil }
            self.init(mediaType: mediaType, data: data)
        }

        /// Reads stored image bytes; nil unless they are a PNG or a JPEG with a sane header.
        public init?(mediaType: String, data: Data) {
            guard ["image/png", "image/jpeg"].contains(mediaType), let size = Self.size(of: data, mediaType: mediaType)
            else { return nil }
            (self.base64, width, height) = (data.base64EncodedString(), size.width, size.height)
            self.mediaType = mediaType
        }

        /// Width and height from the image's header.
        static func size(of data: Data, mediaType: String) -> (width: Int, height: Int)? {
            if mediaType == "image/png" { return PNGHeader.size(data) }
            guard let s = JPEG.size(of: data) else { return nil }
            return (s.width, s.height)
        }
    }

    /// What the model had seen when it made a step's request.
    public enum Shot: Sendable, Hashable {
        /// No screenshot yet in this run.
        case none
        /// The newest screenshot of the run before the request.
        case image(Image)
        /// There was one, but retention (or the loop's pruning) replaced it with a placeholder.
        case removed
    }

    /// One tool call of a step, with what it answered and how the report draws it.
    public struct Action: Sendable, Hashable {
        /// Its number within the step (the overlay's label).
        public var number: Int
        /// The tool_use id.
        public var id: String
        /// The tool.
        public var tool: String
        /// Its input, as the model sent it.
        public var input: JSONValue
        /// The result's text blocks joined; nil when no result was stored (the run ended first).
        public var result: String?
        /// Whether the tool failed.
        public var isError: Bool
        /// Screenshots the result carried (shown at the next step).
        public var images: Int
        /// The marks and caption, in the pixels of the image it is drawn on.
        public var overlay: OverlayAction
        /// Whether the call acts on the screen (a click, a tap, keys, typing), so a frame of it is expected.
        public var acts = false
        /// The frame it acted on, when the run kept one (nil: none was kept).
        public var frame: Shot? = nil
    }

    /// An image the report shows in a step, with the calls drawn on it.
    public struct Panel: Sendable, Hashable {
        /// The frame the calls acted on, or the screenshot the model saw.
        public var image: Image
        /// Indices into the step's `actions`, in order.
        public var actions: [Int]
        /// True for a frame the calls acted on, false for the screenshot the model saw (a run without frames).
        public var actedOn = true
    }

    /// One model request and what came of it.
    public struct Step: Sendable, Hashable {
        /// 1-based.
        public var number: Int
        /// The screenshot the request carried last.
        public var shot: Shot
        /// The reply's text blocks.
        public var text: String
        /// How far the reply got (partial: cut off; error: the request failed).
        public var status: MessageStatus
        /// The tool calls it made.
        public var actions: [Action]
        /// Its usage row: tokens, cost, model and tool milliseconds, stop reason (nil when none was stored).
        public var record: StepRecord?
        /// What the step shows: each frame its calls acted on (consecutive calls on one screen share it), else the
        /// screenshot the model saw, with the calls drawn on it.
        public var panels: [Panel] = []
        /// Why the step shows no screen, when `panels` is empty.
        public var noFrame: String? = nil
    }

    /// The run's session.
    public var session: SessionRecord
    /// The scheduled task's name when a schedule started it.
    public var task: String?
    /// What the run was asked: the input messages' text, else its batch prompt.
    public var prompt: String
    /// The model that answered (the session's, else the steps').
    public var model: String?
    /// Summed tokens of the steps.
    public var usage: Usage
    /// The cost in USD: the session's, else the steps' sum.
    public var usd: Double
    /// The steps, in order.
    public var steps: [Step]
    /// A replay's steps' outcomes (empty for an agent's run: `session.replay` tells which it was).
    public var replaySteps: [ReplayedStep] = []
    /// The screen when a replay diverged.
    public var replayShot: Image?

    /// Builds the report of a stored run. Step k shows the newest screenshot stored before request k (zoom crops
    /// excluded: their pixels are not the screen the coordinates refer to) with reply k's calls drawn on it.
    public init(_ transcript: RunTranscript) {
        session = transcript.session
        task = transcript.task
        let asked = transcript.input.map { Message(role: .user, content: $0.content).text }.joined(separator: "\n\n")
        prompt =
            asked.isEmpty
            ? (transcript.messages.first { $0.role == .user }.map { Message(role: .user, content: $0.content).text }
                ?? "") : asked
        model = transcript.session.model ?? transcript.steps.last?.model
        usage = transcript.steps.reduce(Usage()) { $0 + $1.usage }
        let stepCost = transcript.steps.reduce(0) { $0 + $1.usd }
        usd = transcript.session.usd > 0 ? transcript.session.usd : stepCost

        var steps: [Step] = []
        var shot = Shot.none
        var pointer: (x: Double, y: Double)?
        // Calls that typed into a password field show their text masked, in the caption and the call alike.
        let contents = SecretText.masking(transcript.messages.map(\.content))
        for (message, content) in zip(transcript.messages, contents) {
            if message.role == .assistant {
                let number = steps.count + 1
                let uses = content.compactMap { block -> (String, String, JSONValue)? in
                    if case .toolUse(let id, let name, let input) = block { return (id, name, input) }
                    return nil
                }
                let actions = uses.enumerated().map { i, use in
                    var action = Action(
                        number: i + 1, id: use.0, tool: use.1, input: use.2, result: nil, isError: false, images: 0,
                        overlay: OverlayAction(marks: [], caption: use.1))
                    action.acts = Self.acts(tool: use.1, input: use.2)
                    action.frame = transcript.frames[use.0].map { frame in
                        frame.data.flatMap { Image(mediaType: frame.mediaType, data: $0) }.map(Shot.image) ?? .removed
                    }
                    return action
                }
                steps.append(
                    Step(
                        number: number, shot: shot, text: Message(role: .assistant, content: content).text,
                        status: message.status, actions: actions,
                        record: transcript.steps.first { $0.step == number }))
                continue
            }
            // A tool-results turn answers the last step's calls; its screenshots are what the next step sees.
            for case .toolResult(let result) in message.content {
                guard var step = steps.last, let i = step.actions.firstIndex(where: { $0.id == result.toolUseID })
                else { continue }
                var texts: [String] = []
                var images = 0
                let zoom =
                    step.actions[i].tool == ComputerTool.toolName
                    && step.actions[i].input["action"]?.string.flatMap(ComputerAction.init(rawValue:)) == .zoom
                for block in result.content {
                    switch block {
                    case .image(let media, let data):
                        images += 1
                        if !zoom { shot = Image(mediaType: media, base64: data).map(Shot.image) ?? .removed }
                    case .text(let t) where t == ImagePruner.placeholder:
                        images += 1
                        if !zoom { shot = .removed }
                    case .text(let t):
                        texts.append(t)
                    default:
                        break
                    }
                }
                step.actions[i].result = texts.joined(separator: "\n")
                step.actions[i].isError = result.isError
                step.actions[i].images = images
                steps[steps.count - 1] = step
            }
        }
        // The marks, in order, so "at the pointer" follows the calls before it; each in the pixels of the image it
        // is drawn on.
        for s in steps.indices {
            steps[s].panels = Self.panels(steps[s])
            if steps[s].panels.isEmpty { steps[s].noFrame = Self.noFrame(steps[s]) }
            var drawnOn: [Int: Image] = [:]
            for panel in steps[s].panels { for a in panel.actions { drawnOn[a] = panel.image } }
            for a in steps[s].actions.indices {
                let action = steps[s].actions[a]
                let size = drawnOn[a].map { ($0.width, $0.height) } ?? (1000, 1000)
                steps[s].actions[a].overlay = ReportOverlay.action(
                    tool: action.tool, input: action.input, result: action.result, image: size, pointer: &pointer)
            }
        }
        self.steps = steps
    }

    /// Whether a call acts on the screen: a tool that records input actions (whose call is not only a look), or a
    /// batch of computer actions.
    static func acts(tool: String, input: JSONValue) -> Bool {
        RecordingTools.tool(named: tool)?.acts(input) ?? (tool == ComputerBatchTool.toolName)
    }

    /// A step's images: each frame its calls acted on, consecutive calls on the same screen sharing one, the calls
    /// with no frame of their own (a look, a note) drawn with the call before them (else the first); without any
    /// frame, the screenshot the model saw with every call on it.
    static func panels(_ step: Step) -> [Panel] {
        var panels: [Panel] = []
        var leading: [Int] = []
        for (i, action) in step.actions.enumerated() {
            guard case .image(let image)? = action.frame else {
                if panels.isEmpty { leading.append(i) } else { panels[panels.count - 1].actions.append(i) }
                continue
            }
            if panels.last?.image == image {
                panels[panels.count - 1].actions.append(i)
            } else {
                panels.append(Panel(image: image, actions: [i]))
            }
        }
        if panels.isEmpty {
            guard case .image(let shot) = step.shot else { return [] }
            return [Panel(image: shot, actions: Array(step.actions.indices), actedOn: false)]
        }
        panels[0].actions.insert(contentsOf: leading, at: 0)
        return panels
    }

    /// Why a step shows no screen, in words a reviewer reads: what its calls did, or what kept their frames away.
    static func noFrame(_ step: Step) -> String {
        let names = { (actions: [Action]) in
            Array(Set(actions.map(\.tool))).sorted().joined(separator: ", ")
        }
        let acting = step.actions.filter(\.acts)
        if acting.isEmpty && step.shot == .removed {
            return "the screenshot the model saw before this step was removed to keep the database small"
        }
        guard !step.actions.isEmpty else {
            return step.status == .complete
                ? "the model acted on nothing in this step: it only answered"
                : "the reply was cut off (\(step.status.rawValue)) before it acted"
        }
        guard !acting.isEmpty else {
            let looked = step.actions.allSatisfy { SkillCatalog.screenToolNames.contains($0.tool) }
            return looked
                ? "the model only read the screen in this step (\(names(step.actions))), and no screenshot was taken before it"
                : "the model's calls did not touch the screen (\(names(step.actions)))"
        }
        if acting.contains(where: { $0.frame == .removed }) {
            return "the frame its action acted on was removed to keep the database small"
        }
        let results = acting.compactMap(\.result)
        if results.contains(where: {
            $0.contains("lost the connection to display") || $0.contains("cannot open display")
        }) {
            return "the display was gone, so nothing was captured or done"
        }
        if results.isEmpty { return "the run ended before its action was done" }
        if acting.allSatisfy(\.isError), let first = acting.first?.result {
            let line = first.split(whereSeparator: \.isNewline).first.map(String.init) ?? first
            return "its action failed before anything was captured: "
                + (line.count > 200 ? String(line.prefix(199)) + "…" : line)
        }
        return "no frame was stored for its action (a run recorded before xclaw kept one per action)"
    }

    /// How long the run took in milliseconds; nil while it runs.
    public var durationMs: Int? {
        session.endedAt.map { Int(($0.timeIntervalSince(session.startedAt) * 1000).rounded()) }
    }

    /// The header's task line: the scheduled task's name, else the prompt's first 120 characters on one line.
    public var title: String {
        if let task { return task }
        let line = prompt.split(whereSeparator: \.isNewline).joined(separator: " ")
        return line.count > 120 ? String(line.prefix(119)) + "…" : (line.isEmpty ? "(no prompt)" : line)
    }
}
