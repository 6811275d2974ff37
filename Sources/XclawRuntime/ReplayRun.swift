import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawClient
import XclawMessages
import XclawPerception
import XclawScreen
import XclawStore

/// What a replay is asked to do.
public struct ReplayRequest: Sendable {
    /// The script.
    public var script: ReplayScript
    /// How the user named it (a path, or `run N`), for `runs` and reports.
    public var name: String
    /// Where a healed script is saved as its next revision; nil when it came from a run id (nothing to save to).
    public var savePath: String?
    /// `NAME=VALUE` parameter assignments.
    public var assignments: [String] = []
    /// Seconds each step waits for its target and its postcondition.
    public var timeout: Double = 10
    /// `auto`, `ask`, `never`, or nil (auto when an API key is set).
    public var heal: String?
    /// The agent the run is recorded under (default: the script's).
    public var agent: String?
    /// The scheduled task that fired it.
    public var task: String?

    /// Creates a request.
    public init(script: ReplayScript, name: String, savePath: String?) {
        (self.script, self.name, self.savePath) = (script, name, savePath)
    }
}

/// How a replay went: `xclaw replay --json` prints it.
public struct ReplayOutcome: Codable, Sendable {
    /// The run it was recorded as.
    public var run: Int64
    /// The script's steps.
    public var steps: Int
    /// Steps done (healed ones included).
    public var replayed: Int
    /// Steps done after the model named their control's new label.
    public var healed = 0
    /// Steps that diverged (0 or 1).
    public var failed = 0
    /// The 1-based step that diverged.
    public var diverged: Int?
    /// Why it diverged, or why it stopped.
    public var reason: String?
    /// Model requests made (0 unless a step healed).
    public var model_requests = 0
    /// Their cost.
    public var cost_usd = 0.0
    /// Where the healed script was saved.
    public var saved: String?
    /// True when a stop request (or Ctrl-C) ended it.
    public var stopped = false
    /// Wall time in milliseconds.
    public var wall_ms = 0.0
    /// Each step's outcome.
    public var outcomes: [ReplayedStep] = []
}

/// A replay as a run: recorded in `runs` (its own session, counts, cost, each step's outcome and the screen where it
/// diverged, for `xclaw report`), stoppable like an agent's run (`xclaw stop`, the hotkey, the failsafe), gated by
/// the agent's approval policy, and healed (when asked) one step at a time.
public enum Replayer {
    /// Checks what a replay needs before anything connects or acts: its parameters, its agent, an API key when
    /// healing is asked for. Throws the error the replay would.
    public static func check(_ request: ReplayRequest, store: AgentStore) throws {
        _ = try request.script.values(request.assignments)
        _ = try store.agent(named: request.agent ?? request.script.agent)
        _ = try ReplayHealer.configuration(mode: request.heal)
    }

    /// Runs `request` on `perceiver`'s display, recording it in `store`. `ask` asks the person at the terminal (nil
    /// when unattended); `events` hears what the user should know. Throws before acting on bad input; a step that
    /// diverges ends the replay with `failed` set, not with an error.
    public static func run(
        _ request: ReplayRequest, perceiver: Perceiver, store: AgentStore, settings: GuardSettings,
        ask: (@Sendable (String) async -> Bool)?, events: @escaping @Sendable (String) -> Void
    ) throws -> ReplayOutcome {
        let script = request.script
        let values = try script.values(request.assignments)
        let agentName = request.agent ?? script.agent
        let agent = try store.agent(named: agentName)
        let configuration = try ReplayHealer.configuration(mode: request.heal)
        let input = try InputController(connection: perceiver.connection)
        let session = try store.startReplay(
            agent: agentName, script: request.name, revision: script.revision, steps: script.steps.count,
            task: request.task)
        let start = ContinuousClock.now
        let stop = CancelFlag()
        let runGuard = RunGuard(
            store: store, session: session, display: perceiver.connection.name, settings: settings, events: events,
            cancel: { stop.set() })
        defer { runGuard.finish() }
        let policy = agent.approval.map { (try? ApprovalPolicy.parse($0)) ?? .all } ?? settings.policy
        let gate = policy.kinds.isEmpty ? nil : runGuard.gate(policy: policy, ask: ask, events: events)
        var healer: ReplayHealer?
        if let configuration {
            let catalog = try ModelCatalog.load()
            let model = try (try? catalog.model(agent.model)) ?? catalog.model(catalog.default)
            healer = ReplayHealer(
                client: ClaudeClient(configuration: configuration), model: model,
                confirm: request.heal == "ask" ? ask : nil, events: events
            ) { usage, usd in
                try? store.recordUsage(
                    agent: agentName, sessionID: session, model: model.id, usage: usage, usd: usd)
            }
        }
        let replayer = StepReplayer(
            perceiver: perceiver, input: input, timeout: request.timeout, healer: healer, stopped: { stop.isSet })
        var outcome = ReplayOutcome(run: session, steps: script.steps.count, replayed: 0)
        var fixed = script
        var screenshot: String?
        func summary() -> ReplaySummary {
            ReplaySummary(
                script: request.name, revision: script.revision, steps: script.steps.count,
                replayed: outcome.replayed - outcome.healed, healed: outcome.healed, failed: outcome.failed,
                requests: outcome.model_requests, divergedStep: outcome.diverged, reason: outcome.reason)
        }
        func save() {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let log = (try? encoder.encode(outcome.outcomes)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
            (outcome.model_requests, outcome.cost_usd) = healer?.spent ?? (0, 0)
            try? store.updateReplay(session: session, summary: summary(), log: log, screenshot: screenshot)
        }
        for (index, step) in script.steps.enumerated() {
            if stop.isSet { break }
            let number = index + 1
            let began = ContinuousClock.now
            do {
                if let gate, let why = approval(of: step, values: values, gate: gate) {
                    throw ReplayDivergence(reason: why)
                }
                let done = try replayer.replay(step, number: number, values: values)
                outcome.outcomes.append(done)
                outcome.replayed += 1
                if let label = done.healedLabel {
                    fixed.steps[index].target?.label = label
                    fixed.steps[index].target?.alikes = nil
                    fixed.steps[index].target?.nth = nil
                }
                if let text = done.healedPost, let first = step.post.appeared.first {
                    // The same role, the new words: "text Saved" → "text Saved to disk".
                    let role = first.split(separator: " ", maxSplits: 1).first.map(String.init) ?? "text"
                    fixed.steps[index].post.appeared[0] = "\(role) \(text)"
                }
                if done.result == "healed" { outcome.healed += 1 }
            } catch let divergence as ReplayDivergence {
                (outcome.diverged, outcome.reason, outcome.failed) = (number, divergence.reason, 1)
                outcome.outcomes.append(failure(step, number, divergence.reason, since: began))
                screenshot = try? Data(PNG.encode(perceiver.capturer.capture())).base64EncodedString()
                save()
                break
            } catch is CancellationError {
                break
            } catch {
                // The display or the input failed: the replay cannot go on (its status says which).
                let reason = "\(error)"
                (outcome.diverged, outcome.reason, outcome.failed) = (number, reason, 1)
                outcome.outcomes.append(failure(step, number, reason, since: began))
                save()
                try? store.finishSession(
                    session, status: .failed, error: "step \(number): \(reason)",
                    steps: outcome.replayed, usd: healer?.spent.usd ?? 0)
                throw error
            }
            save()
        }
        if stop.isSet {
            outcome.stopped = true
            outcome.reason = runGuard.stopReason ?? "stopped"
        }
        outcome.wall_ms = milliseconds(since: start)
        // A healed script is saved as its next revision, so the next replay needs no model.
        if outcome.healed > 0, let path = request.savePath {
            fixed.revision = (fixed.revision ?? 1) + 1
            do {
                try fixed.write(to: path)
                outcome.saved = path
            } catch {
                events("the healed script could not be saved to \(path): \(error)")
            }
        } else if outcome.healed > 0 {
            events("healed steps are not saved for a run id: export the run to a file and replay that")
        }
        save()
        let status: SessionStatus = outcome.stopped ? .stopped : outcome.diverged == nil ? .completed : .failed
        try? store.finishSession(
            session, status: status,
            error: outcome.stopped ? outcome.reason : outcome.diverged.map { "step \($0) diverged: \(outcome.reason ?? "")" },
            steps: outcome.replayed, usd: outcome.cost_usd)
        return outcome
    }

    /// Why the approval gate refused the step, or nil when it may go: the control's label and role, or the text
    /// typed (a password) and keys pressed, classified by the agent's policy as in its own runs.
    private static func approval(
        of step: RecordedStep, values: [String: String], gate: @escaping @Sendable (GateRequest) async -> GateVerdict
    ) -> String? {
        let text = step.parameter.flatMap { values[$0] } ?? step.text
        let subject: ActionSubject
        switch step.action {
        case let action where StepReplayer.clicks.contains(action):
            subject = ActionSubject(label: step.target?.label, role: step.target?.role)
        case "type", "type_submit", "type_text":
            subject = ActionSubject(
                label: step.focus == true ? step.target?.label : nil, role: step.focus == true ? step.target?.role : nil,
                typed: (text ?? "") + (step.action == "type_submit" ? "\n" : ""),
                intoPassword: step.parameter == "password")
        case "key", "press_button":
            subject = ActionSubject(typed: step.text, keys: true)
        default:
            return nil
        }
        let record = ActionRecord(tool: step.tool, action: step.action, x: step.x, y: step.y, text: nil, result: "pending")
        let describe =
            "\(step.action)"
            + (step.target.flatMap { $0.label.isEmpty ? nil : " \($0.role) \(UntrustedText.quoted($0.label))" } ?? "")
        let verdict: GateVerdict = Blocking.start {
            await gate(GateRequest(record: record, describe: describe, subject: subject))
        }.1()
        if case .deny(let why) = verdict { return "it needs approval: " + why }
        return nil
    }

    /// A failed step's outcome.
    private static func failure(_ step: RecordedStep, _ number: Int, _ reason: String, since: ContinuousClock.Instant)
        -> ReplayedStep
    {
        ReplayedStep(
            number: number, action: step.action, label: step.target.flatMap { $0.label.isEmpty ? nil : $0.label },
            grounded: nil, point: nil, result: "failed", reason: reason, ms: milliseconds(since: since))
    }

    /// Milliseconds since `start`.
    static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let d = (ContinuousClock.now - start).components
        return Double(d.seconds) * 1000 + Double(d.attoseconds) / 1e15
    }
}
