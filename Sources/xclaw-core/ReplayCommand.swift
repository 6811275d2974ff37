import ArgumentParser
import Foundation
import XclawAgent
import XclawBase
import XclawCommandLine
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
            waited for (--timeout). --param P1=VALUE replaces a recorded parameter. No model is asked: healing a \
            diverged step with Claude is not implemented yet.
            Exit: 0 every step replayed; 1 a step diverged (which and why on stderr, or in --json); 2 bad usage; \
            3 display.
            """)
    @Argument(help: "A script file (`xclaw script export RUN -o FILE`) or a run id.") var script: String
    @Option(name: .customLong("param"), help: "NAME=VALUE for a parameter of the script (repeatable).")
    var parameters: [String] = []
    @Option(help: "Seconds each step waits for its target and for what it should make appear.") var timeout = 10.0
    @OptionGroup var target: DisplayOptions
    @OptionGroup var storeOptions: StoreOptions
    @Flag var json = false

    /// How the replay went.
    struct Outcome: Encodable {
        var steps: Int
        var replayed: Int
        var diverged: Int?
        var reason: String?
        var model_requests = 0
    }

    func validate() throws {
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
        try withPerceiver(target) { p in
            let input = try InputController(connection: p.connection)
            for (index, step) in loaded.steps.enumerated() {
                do {
                    try StepReplayer(perceiver: p, input: input, timeout: timeout).replay(step, values: values)
                    outcome.replayed += 1
                } catch let divergence as ReplayDivergence {
                    (outcome.diverged, outcome.reason) = (index + 1, divergence.reason)
                    break
                }
            }
        }
        try emit(outcome, json: json) {
            outcome.diverged == nil
                ? "replayed \(outcome.replayed) of \(outcome.steps) step(s); no model request"
                : "replayed \(outcome.replayed) of \(outcome.steps) step(s)"
        }
        if let step = outcome.diverged {
            throw AgentRunError.failed(
                "step \(step) diverged: \(outcome.reason ?? "")\nnothing was done at or after it", .notFound)
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

    /// Replays `step`, with `values` for its parameter; throws `ReplayDivergence` when it cannot be done safely.
    func replay(_ step: RecordedStep, values: [String: String]) throws {
        let text = step.parameter.flatMap { values[$0] } ?? step.text
        switch step.action {
        case "left_click", "tap", "press", "click", "right_click", "middle_click", "double_click", "double_tap",
            "triple_click":
            let point = try ground(step)
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
    }

    /// Where the step's target is now: its label and role in its window, else its image patch there.
    private func ground(_ step: RecordedStep) throws -> Point {
        guard let anchor = step.target, !anchor.label.isEmpty || anchor.patch != nil else {
            throw ReplayDivergence(
                reason: "the step has no anchor but a screen point, which a replay never clicks blind")
        }
        let area: () throws -> Rect = {
            guard let title = anchor.windowTitle, !title.isEmpty else { return try perceiver.area() }
            return try perceiver.area(window: title)
        }
        var why = ""
        if !anchor.label.isEmpty {
            do {
                let match = try waiting(
                    perceiver, timeout: timeout, for: "\"\(anchor.label)\" to appear", area: area
                ) { area in
                    let snapshot = try takeSnapshot(perceiver, area: area)
                    let role = Role(rawValue: anchor.role).flatMap { $0.isInteractive ? $0 : nil }
                    let alike = Finder.find(anchor.label, in: snapshot, role: role).filter { $0.score >= 0.999 }
                    return try Selection(nth: alike.count > 1 ? anchor.nth : nil, role: role)
                        .resolve(anchor.label, in: snapshot)
                }
                if match.covered == true { throw ReplayDivergence(reason: "\(match.summary) is covered by a window") }
                return match.point
            } catch let divergence as ReplayDivergence {
                throw divergence
            } catch {
                why = "\(error)"
            }
        }
        if let patch = anchor.patch, let data = Data(base64Encoded: patch) {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-patch-\(getpid()).png")
            defer { try? FileManager.default.removeItem(at: file) }
            do {
                try data.write(to: file)
                let template = try ImageTemplate(path: file.path, resolved: file.path)
                let match = try ImageSearch(
                    perceiver, area: try area(), template: template, options: ImageSearchOptions()
                )
                .chosen(nth: nil)
                // The patch is centred on the point unless the screen's edge shifted it.
                return match.center
            } catch {
                why += (why.isEmpty ? "" : "; ") + "its image: \(error)"
            }
        }
        throw ReplayDivergence(
            reason: "cannot find \(anchor.role) \"\(anchor.label)\""
                + (anchor.windowTitle.map { " in \"\($0)\"" } ?? "") + ": \(why)")
    }

    /// Waits for what the step made appear when it was recorded (the first such label).
    private func postcondition(_ step: RecordedStep) throws {
        guard let first = step.post.appeared.first, let space = first.firstIndex(of: " ") else { return }
        let label = String(first[first.index(after: space)...])
        do {
            _ = try waiting(perceiver, timeout: timeout, for: "\"\(label)\" to appear", area: { try perceiver.area() })
            {
                area in try Selection().resolve(label, in: takeSnapshot(perceiver, area: area), acting: false)
            }
        } catch {
            throw ReplayDivergence(
                reason: "after it, \"\(label)\" did not appear within \(timeout) s as it did when recorded")
        }
    }
}
