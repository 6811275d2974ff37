import ArgumentParser
import Foundation
import XclawAgent
import XclawBase
import XclawClient
import XclawCommandLine
import XclawMessages
import XclawPerception
import XclawScreen

/// `xclaw replay FILE|RUN`: a recorded run done again without the model. Each step's target is grounded anew (its
/// label and role in its window, then its image patch there), its precondition waited for, its postcondition checked;
/// the first step that cannot be grounded, or whose check fails, stops the replay: no click on a guess.
struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay a recorded run's steps without the model (a script file or a run id).",
        discussion: """
            Each tap finds its control again by label and role in the window it was in (so a moved window or another \
            screen size is fine); a control whose label is gone is searched for by its recorded image patch in that \
            window; a control found nowhere, or found twice, stops the replay. After each step what it made appear is \
            waited for (--timeout). --param P1=VALUE replaces a recorded parameter. No model is asked unless a tap's \
            control is found nowhere: then, with --heal auto (the default when an API key is set), only that step \
            goes to Claude with a screenshot ("which label is this control now?"); its answer is grounded like any \
            label, and the fix is written back into the script file as a new version, so the next replay needs no \
            model. --heal ask shows the fix and asks first; --heal never stops there.
            Exit: 0 every step replayed (healed or not); 1 a step diverged (which and why on stderr, or in --json); \
            2 bad usage; 3 display; 4 the model failed while healing.
            """)
    @Argument(help: "A script file (`xclaw script export RUN -o FILE`) or a run id.") var script: String
    @Option(name: .customLong("param"), help: "NAME=VALUE for a parameter of the script (repeatable).")
    var parameters: [String] = []
    @Option(help: "Seconds each step waits for its target and for what it should make appear.") var timeout = 10.0
    @Option(
        help:
            "auto (ask Claude about a step that diverged; the default with an API key), ask (the same, asking you before the fix is used) or never."
    )
    var heal: String?
    @OptionGroup var target: DisplayOptions
    @OptionGroup var storeOptions: StoreOptions
    @Flag var json = false

    /// How the replay went.
    struct Outcome: Encodable {
        var steps: Int
        var replayed: Int
        var healed = 0
        var diverged: Int?
        var reason: String?
        var model_requests = 0
        var cost_usd = 0.0
        var saved: String?
    }

    func validate() throws {
        if let heal, !["auto", "ask", "never"].contains(heal) {
            throw ValidationError("--heal is auto, ask or never, not \(heal)")
        }
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout takes seconds from 0 to 3600") }
        for p in parameters where !p.contains("=") {
            throw ValidationError("--param takes NAME=VALUE (e.g. --param P1=hello), not \(p)")
        }
    }

    func run() throws {
        let loaded =
            try Int64(script).map { try ReplayScript.of(run: $0, in: try storeOptions.open()) }
            ?? ReplayScript.read(script)
        var values = loaded.parameters
        for p in parameters {
            let name = String(p[..<(p.firstIndex(of: "=") ?? p.endIndex)]).lowercased()
            guard values[name] != nil else {
                let known = values.keys.sorted().map { $0.uppercased() }.joined(separator: ", ")
                throw ValidationError(
                    "the script has no parameter \(name.uppercased()) (it has: \(known.isEmpty ? "none" : known))")
            }
            values[name] = String(p[p.index(after: p.firstIndex(of: "=") ?? p.startIndex)...])
        }
        var outcome = Outcome(steps: loaded.steps.count, replayed: 0)
        let healer = try Healer.make(mode: heal)
        var fixed = loaded
        try withPerceiver(target) { p in
            let input = try InputController(connection: p.connection)
            let replayer = StepReplayer(perceiver: p, input: input, timeout: timeout, healer: healer)
            for (index, step) in loaded.steps.enumerated() {
                do {
                    if let newLabel = try replayer.replay(step, values: values) {
                        fixed.steps[index].target?.label = newLabel
                        outcome.healed += 1
                    }
                    outcome.replayed += 1
                } catch let divergence as ReplayDivergence {
                    (outcome.diverged, outcome.reason) = (index + 1, divergence.reason)
                    break
                }
            }
        }
        if let healer {
            (outcome.model_requests, outcome.cost_usd) = healer.spent
        }
        // A healed script is saved as its next version, so the next replay needs no model.
        if outcome.healed > 0 {
            fixed.revision = (fixed.revision ?? 1) + 1
            if Int64(script) == nil {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                try encoder.encode(fixed).write(
                    to: URL(fileURLWithPath: Invocation.current.resolve(script)), options: .atomic)
                outcome.saved = script
            } else {
                printError("xclaw: healed steps are not saved for a run id: export the run to a file and replay that")
            }
        }
        try emit(outcome, json: json) {
            outcome.diverged == nil
                ? "replayed \(outcome.replayed) of \(outcome.steps) step(s)"
                    + (outcome.healed == 0
                        ? "; no model request"
                        : "; healed \(outcome.healed) with \(outcome.model_requests) model request(s), "
                            + String(format: "$%.4f", outcome.cost_usd)
                            + (outcome.saved.map { "; saved to \($0)" } ?? ""))
                : "replayed \(outcome.replayed) of \(outcome.steps) step(s)"
        }
        if let step = outcome.diverged {
            throw AgentRunError.failed(
                "step \(step) diverged: \(outcome.reason ?? "")", .notFound)
        }
    }
}

/// Why a step could not be replayed.
struct ReplayDivergence: Error {
    /// What went wrong, for the user.
    var reason: String
}

/// Grounds and performs one recorded step.
struct StepReplayer {
    let perceiver: Perceiver
    let input: InputController
    let timeout: Double
    /// Asks the model about a step that diverged; nil: never.
    let healer: Healer?

    /// Replays `step`, with `values` for its parameter; throws `ReplayDivergence` when it cannot be done safely.
    /// Returns the control's new label when the step was healed.
    func replay(_ step: RecordedStep, values: [String: String]) throws -> String? {
        var healed: String?
        if let name = step.parameter, values[name] == nil, step.text == nil {
            throw ReplayDivergence(
                reason: "it types a password, which is never recorded: pass --param \(name.uppercased())=…")
        }
        let text = step.parameter.flatMap { values[$0] } ?? step.text
        switch step.action {
        case "left_click", "tap", "press", "click", "right_click", "middle_click", "double_click", "double_tap",
            "triple_click":
            let point: Point
            do { point = try ground(step) } catch let divergence as ReplayDivergence {
                guard let healer, let anchor = step.target, !anchor.label.isEmpty else { throw divergence }
                let label = try healer.relabel(anchor, perceiver: perceiver, divergence: divergence)
                var fixed = step
                fixed.target?.label = label
                fixed.target?.alikes = nil  // the new label must be unique
                fixed.target?.nth = nil
                point = try ground(fixed)
                healed = label
            }
            let button: MouseButton =
                step.action == "right_click" ? .right : step.action == "middle_click" ? .middle : .left
            let count =
                ["double_click", "double_tap"].contains(step.action) ? 2 : step.action == "triple_click" ? 3 : 1
            try input.click(at: point, button: button, count: count)
        case "type", "type_submit":
            try input.keyboard.type(text ?? "")
            if step.action == "type_submit" { try input.keyboard.press([try KeyCombo.parse("Return")]) }
        case "key", "press_button":
            let combos = try (step.text ?? "").split(separator: " ").map { try KeyCombo.parse(String($0)) }
            try input.keyboard.press(combos)
        case "scroll":
            let parts = (step.text ?? "down 1").split(separator: " ")
            guard let direction = parts.first.flatMap({ ScrollDirection(rawValue: String($0)) }) else {
                throw ReplayDivergence(reason: "the recorded scroll \(step.text ?? "") names no direction")
            }
            let point = step.target == nil ? nil : try ground(step)
            try input.scroll(direction, amount: parts.count > 1 ? Int(parts[1]) ?? 1 : 1, at: point)
        default:
            throw ReplayDivergence(reason: "\(step.tool) \(step.action) cannot be replayed without the model yet")
        }
        try postcondition(step)
        return healed
    }

    /// Where the step's target is now: its label and role in its window (exactly as many look-alikes as when it was
    /// recorded, so the rank means the same one), else, only when the label is found nowhere, its image patch there.
    private func ground(_ step: RecordedStep) throws -> Point {
        guard let anchor = step.target, !anchor.label.isEmpty else {
            throw ReplayDivergence(reason: "the step has no label to find its control by; a replay never clicks blind")
        }
        let area: () throws -> Rect = {
            guard let title = anchor.windowTitle, !title.isEmpty else { return try perceiver.area() }
            return try perceiver.area(window: title)
        }
        let role = Role(rawValue: anchor.role).flatMap { $0.isInteractive ? $0 : nil }
        var why = ""
        do {
            let match = try waiting(perceiver, timeout: timeout, for: "\"\(anchor.label)\" to appear", area: area) {
                area in
                let snapshot = try takeSnapshot(perceiver, area: area)
                // Exact, whole matches only (never a ref, a fuzzy or a partial one), in reading order.
                let exact = Finder.find(anchor.label, in: snapshot, role: role)
                    .filter { $0.score >= 0.999 && $0.whole == true }
                    .sorted { ($0.box.y, $0.box.x) < ($1.box.y, $1.box.x) }
                guard !exact.isEmpty else {
                    throw PerceptionError.notFound(
                        label: anchor.label, closest: Finder.closest(anchor.label, in: snapshot))
                }
                let expected = anchor.alikes ?? 1
                guard exact.count == expected else {
                    throw ReplayDivergence(
                        reason:
                            "found \(exact.count) \(anchor.role) \"\(anchor.label)\" where the run saw \(expected): "
                            + "which one it meant is not certain")
                }
                let nth = min(max(1, anchor.nth ?? 1), exact.count)
                return exact[nth - 1]
            }
            if match.covered == true { throw ReplayDivergence(reason: "\(match.summary) is covered by a window") }
            return match.point
        } catch let divergence as ReplayDivergence {
            throw divergence
        } catch PerceptionError.notFound {
            why = "its label is not on the screen"
        } catch {
            throw ReplayDivergence(reason: "cannot find \(anchor.role) \"\(anchor.label)\": \(error)")
        }
        // Found nowhere by its label: its image, in its window, at the same offset inside the patch.
        if let patch = anchor.patch, let data = Data(base64Encoded: patch), let origin = anchor.patchOrigin,
            origin.count == 2, let x = step.x, let y = step.y
        {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-patch-\(getpid()).png")
            defer { try? FileManager.default.removeItem(at: file) }
            do {
                try data.write(to: file)
                let template = try ImageTemplate(path: file.path, resolved: file.path)
                let match = try ImageSearch(
                    perceiver, area: try area(), template: template, options: ImageSearchOptions()
                ).chosen(nth: nil)
                return Point(x: match.box.x + (x - origin[0]), y: match.box.y + (y - origin[1]))
            } catch {
                why += "; its image: \(error)"
            }
        }
        throw ReplayDivergence(
            reason: "cannot find \(anchor.role) \"\(anchor.label)\""
                + (anchor.windowTitle.map { " in \"\($0)\"" } ?? "") + ": \(why)")
    }

    /// Waits for what the step made appear when it was recorded (the first such label, anywhere on the screen).
    private func postcondition(_ step: RecordedStep) throws {
        guard let first = step.post.appeared.first, let space = first.firstIndex(of: " ") else { return }
        let label = String(first[first.index(after: space)...])
        do {
            _ = try waiting(perceiver, timeout: timeout, for: "\"\(label)\" to appear", area: { try perceiver.area() })
            {
                area in
                guard !Finder.find(label, in: try takeSnapshot(perceiver, area: area)).isEmpty else {
                    throw PerceptionError.notFound(label: label, closest: [])
                }
                return true
            }
        } catch {
            throw ReplayDivergence(
                reason: "it was done, but \"\(label)\" did not appear within \(timeout) s as it did when recorded")
        }
    }
}

/// Asks Claude which label a control that diverged has now: one question with one screenshot, for one step.
final class Healer: @unchecked Sendable {
    private let client: ClaudeClient
    private let model: ModelInfo
    private let confirm: Bool
    private let lock = NSLock()
    private var requests = 0
    private var cost = 0.0

    private init(client: ClaudeClient, model: ModelInfo, confirm: Bool) {
        (self.client, self.model, self.confirm) = (client, model, confirm)
    }

    /// The healer `mode` asks for: nil for never, and for auto without an API key (a replay never needs one).
    static func make(mode: String?) throws -> Healer? {
        if mode == "never" { return nil }
        guard let configuration = try? ClientConfiguration.load() else {
            if mode == nil { return nil }
            throw ValidationError(
                "--heal \(mode ?? "") needs an API key (ANTHROPIC_API_KEY): set one, or use --heal never")
        }
        let catalog = try ModelCatalog.load()
        return Healer(
            client: ClaudeClient(configuration: configuration), model: try catalog.model(catalog.default),
            confirm: mode == "ask")
    }

    /// Requests made and their cost.
    var spent: (Int, Double) { lock.withLock { (requests, cost) } }

    /// The label the control of `anchor` has now, as the model reads the screen; a divergence when it sees none.
    func relabel(_ anchor: StepAnchor, perceiver: Perceiver, divergence: ReplayDivergence) throws -> String {
        let frame = try perceiver.capturer.capture()
        let png = Data(try PNG.encode(frame)).base64EncodedString()
        let question =
            "A recorded step pressed the \(anchor.role) labelled \"\(anchor.label)\""
            + (anchor.windowTitle.map { " in the window \"\($0)\"" } ?? "")
            + ", which is no longer on the screen. Which visible control does the same thing now? Answer with its "
            + "exact visible label and nothing else, or NONE if there is no such control."
        let (client, model) = (client, self.model)
        let answer: String = try Blocking.wait {
            try await VisionRequest.ask(
                client: client, model: model, question: question, pngBase64: png, width: frame.width,
                height: frame.height
            ) { [self] usage in
                lock.withLock {
                    requests += 1
                    cost += model.price.cost(of: usage)
                }
            }
        }
        let label = answer.trimmingCharacters(in: .whitespacesAndNewlines)
            .trimmingCharacters(in: CharacterSet(charactersIn: "\"'`."))
        guard !label.isEmpty, label.uppercased() != "NONE", label.count <= 200,
            !label.unicodeScalars.contains(where: UntrustedText.isControl)
        else {
            throw ReplayDivergence(reason: divergence.reason + "; the model saw no such control either")
        }
        // The model's answer is untrusted: it only names a label, and one whose press needs approval is refused.
        if let kind = ApprovalPolicy.all.classify(ActionSubject(label: label, role: anchor.role)) {
            throw ReplayDivergence(
                reason: divergence.reason
                    + "; the model named \(UntrustedText.quoted(label)), a \(kind.rawValue) action, "
                    + "which a replay does not heal")
        }
        if confirm {
            let yes: Bool = Blocking.start {
                await TerminalPrompt.ask(
                    "xclaw: use \(UntrustedText.quoted(label)) for \(UntrustedText.quoted(anchor.label))? [y/N] ")
            }.1()
            guard yes else { throw ReplayDivergence(reason: divergence.reason + "; the fix \"\(label)\" was refused") }
        }
        printError("xclaw: healed: \(UntrustedText.quoted(anchor.label)) is now \(UntrustedText.quoted(label))")
        return label
    }
}
