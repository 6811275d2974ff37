import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawClient
import XclawMessages
import XclawPerception
import XclawScreen
import XclawSkills
import XclawStore

/// What a replay is asked to do.
public struct ReplayRequest: Sendable {
    /// The script.
    public var script: ReplayScript
    /// How the user named it (a path, or `run N`), for `runs` and reports.
    public var name: String
    /// Where a healed script is saved as its next revision; nil when it came from a run id (nothing to save to).
    public var savePath: String?
    /// The stored script's name, when it came from the database: a healed script is stored as its next revision.
    public var storedName: String?
    /// Who saves a healed revision in the database (`user@host`, or a worker's name).
    public var savedBy = ""
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
    /// Steps done without the model.
    public var replayed: Int
    /// Steps done after the model healed them (a control's new label, an outcome's new words).
    public var healed = 0
    /// Steps that diverged (0 or 1).
    public var failed = 0
    /// Steps whose input was sent, the failed one included when it failed after acting.
    public var acted = 0
    /// The 1-based step that diverged.
    public var diverged: Int?
    /// Why it diverged, or why it stopped.
    public var reason: String?
    /// Model requests made (0 unless a step was healed, or healing was tried).
    public var model_requests = 0
    /// Their cost.
    public var cost_usd = 0.0
    /// Where the healed script was saved.
    public var saved: String?
    /// Where the revision before it was kept.
    public var previous: String?
    /// True when a stop request (`xclaw stop`, the hotkey, the failsafe, Ctrl-C) ended it.
    public var stopped = false
    /// Wall time in milliseconds.
    public var wall_ms = 0.0
    /// Each step's outcome.
    public var outcomes: [ReplayedStep] = []

    /// snake_case; the step that diverged is `diverged_step`, as in `runs --json`'s replay.
    enum CodingKeys: String, CodingKey {
        case run, steps, replayed, healed, failed, acted, reason, model_requests, cost_usd, saved, previous
        case stopped, wall_ms, outcomes
        case diverged = "diverged_step"
    }
}

/// Stops a replay from outside (a signal handler): the replay ends at once, as on `xclaw stop`.
public final class ReplayControl: Sendable {
    private let hook = Mutex<(@Sendable (String) -> Void)?>(nil)
    private let pending = Mutex<String?>(nil)

    /// A control that stops nothing until a replay runs with it.
    public init() {}

    /// Stops the replay (or the one about to start) because of `why`.
    public func stop(_ why: String) {
        if let hook = hook.withLock({ $0 }) { hook(why) } else { pending.withLock { $0 = why } }
    }

    /// Wires the replay's own stop.
    func attach(_ stop: @escaping @Sendable (String) -> Void) {
        hook.withLock { $0 = stop }
        if let why = pending.withLock({ $0 }) { stop(why) }
    }
}

/// A replay as a run: recorded in `runs` (its own session, counts, cost, each step's outcome and the screen where it
/// diverged, for `xclaw report`), stoppable like an agent's run (`xclaw stop`, the hotkey, the failsafe, a signal),
/// gated by the agent's approval policy as its own runs are, and healed (when asked) one step at a time.
public enum Replayer {
    /// The start of a divergence's reason when the approval gate refused the step: the agent would need the same
    /// approval, so a schedule does not hand the task to it.
    public static let approvalReason = "it needs approval"

    /// Checks what a replay needs before anything connects or acts: its parameters (a password is never recorded,
    /// so a script that types one needs it given), its agent, an API key when healing is asked for, a terminal for
    /// `--heal ask`. Throws the error the replay would.
    public static func check(_ request: ReplayRequest, store: any StoreBackend, attended: Bool) throws {
        try checkParameters(request)
        _ = try store.agent(named: request.agent ?? request.script.agent)
        _ = try ReplayHealer.configuration(mode: request.heal)
        if request.heal == "ask", !attended { throw ReplayError.noTerminal }
    }

    /// Checks the request's parameters: each `--param` names one of the script's, and a step that types a
    /// password (never recorded) has its value. What a host that only queues a replay can check.
    public static func checkParameters(_ request: ReplayRequest) throws {
        let values = try request.script.values(request.assignments)
        let missing = Set(
            request.script.steps.compactMap { step in
                step.parameter.flatMap { values[$0] == nil && step.text == nil ? $0 : nil }
            })
        if let name = missing.sorted().first {
            throw ReplayError.missingParameter(name)
        }
    }

    /// How a replay went, as recorded in the store (for a replay that ran on another host); nil when the run is no
    /// replay. `saved` and `previous` are the runner's to say.
    public static func recorded(session id: Int64, store: any StoreBackend) throws -> ReplayOutcome? {
        let record = try store.session(id)
        guard let summary = record.replay else { return nil }
        var outcome = ReplayOutcome(run: id, steps: summary.steps, replayed: summary.replayed)
        (outcome.healed, outcome.failed, outcome.acted) = (summary.healed, summary.failed, summary.acted)
        (outcome.diverged, outcome.reason) = (summary.divergedStep, summary.reason)
        (outcome.model_requests, outcome.cost_usd) = (summary.requests, record.usd)
        if record.status == .stopped {
            outcome.stopped = true
            outcome.reason = outcome.reason ?? record.error
        }
        if let ended = record.endedAt {
            outcome.wall_ms = (ended.timeIntervalSince(record.startedAt) * 1000).rounded()
        }
        if let log = try store.replayLog(session: id)?.log {
            outcome.outcomes = ReplayedStep.log(log)
        }
        return outcome
    }

    /// Runs `request` on `perceiver`'s display, recording it in `store`. `ask` asks the person at the terminal (nil
    /// when unattended); `events` hears what the user should know; `control` stops it from outside. Throws before
    /// acting on bad input; a step that diverges ends the replay with `failed` set, not with an error.
    public static func run(
        _ request: ReplayRequest, perceiver: Perceiver, store: any StoreBackend, settings: GuardSettings,
        ask: (@Sendable (String) async -> Bool)?, control: ReplayControl = ReplayControl(),
        events: @escaping @Sendable (String) -> Void
    ) throws -> ReplayOutcome {
        try check(request, store: store, attended: ask != nil)
        let script = request.script
        let values = try script.values(request.assignments)
        let agentName = request.agent ?? script.agent
        let agent = try store.agent(named: agentName)
        let input = try InputController(connection: perceiver.connection)
        // Everything that can fail is ready before the run is recorded, so no run is left `running`.
        let sessionBox = Mutex<Int64?>(nil)
        var healer: ReplayHealer?
        if let configuration = try ReplayHealer.configuration(mode: request.heal) {
            let catalog = try ModelCatalog.load()
            let model = try (try? catalog.model(agent.model)) ?? catalog.model(catalog.default)
            healer = ReplayHealer(
                client: ClaudeClient(configuration: configuration), model: model,
                confirm: request.heal == "ask" ? ask : nil, events: events
            ) { usage, usd in
                try? store.recordUsage(
                    agent: agentName, sessionID: sessionBox.withLock { $0 }, model: model.id, usage: usage, usd: usd,
                    timing: nil)
            }
        }
        let session = try store.startReplay(
            agent: agentName, script: request.name, revision: script.revision, steps: script.steps.count,
            task: request.task)
        sessionBox.withLock { $0 = session }
        let start = ContinuousClock.now
        let stop = CancelFlag()
        // The approval wait in flight, cancelled by a stop so a stopped replay does not wait for a decision.
        let waiting = Mutex<Task<Void, Never>?>(nil)
        let runGuard = RunGuard(
            store: store, session: session, display: perceiver.connection.name, settings: settings, events: events
        ) {
            stop.set()
            waiting.withLock { $0?.cancel() }
        }
        defer { runGuard.finish() }
        control.attach { why in runGuard.stop(why) }
        let policy = agent.approval.map { (try? ApprovalPolicy.parse($0)) ?? .all } ?? settings.policy
        let gate = policy.kinds.isEmpty ? nil : runGuard.gate(policy: policy, ask: ask, events: events)
        let replayer = StepReplayer(
            perceiver: perceiver, input: input, timeout: request.timeout, healer: healer, stopped: { stop.isSet })
        var outcome = ReplayOutcome(run: session, steps: script.steps.count, replayed: 0)
        var fixed = script
        var screenshot: String?
        func summary() -> ReplaySummary {
            var summary = ReplaySummary(
                script: request.name, revision: script.revision, steps: script.steps.count,
                replayed: outcome.replayed, healed: outcome.healed, failed: outcome.failed,
                requests: outcome.model_requests, divergedStep: outcome.diverged, reason: outcome.reason)
            summary.acted = outcome.acted
            return summary
        }
        func save() {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let log = (try? encoder.encode(outcome.outcomes)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
            (outcome.model_requests, outcome.cost_usd) = healer?.spent ?? (0, 0)
            try? store.updateReplay(session: session, summary: summary(), log: log, screenshot: screenshot)
        }
        // The gate sees the control where it is now, as the agent's gate would: a plain "OK" by its dialog's text,
        // typing by its field (a password, a terminal).
        func approve(_ record: ActionRecord) throws {
            guard let gate else { return }
            let snapshot = try Snapshotter(perceiver: perceiver).snapshot(area: nil, refs: nil)
            let subject =
                GateSubject.of(record, in: snapshot, pointer: try? input.cursorPosition()) ?? ActionSubject()
            guard let kind = policy.classify(subject) else { return }
            let describe =
                "\(record.action)"
                + (subject.label.map { " \(subject.role ?? "control") \(UntrustedText.quoted($0, limit: 60))" } ?? "")
            let (task, wait) = Blocking.start {
                await gate(GateRequest(record: record, describe: describe, subject: subject))
            }
            waiting.withLock { $0 = task }
            if stop.isSet { task.cancel() }
            let verdict = wait()
            waiting.withLock { $0 = nil }
            if stop.isSet { throw CancellationError() }
            if case .deny = verdict {
                throw ReplayDivergence(
                    reason: "\(approvalReason) (\(kind.rawValue): \(describe)) and was not approved: run the replay "
                        + "at a terminal to approve it, `xclaw approve \(session)` while it waits, or change the "
                        + "approval policy of agent \(agentName) (`xclaw agent set \(agentName) --approval …`)")
            }
        }
        for (index, step) in script.steps.enumerated() {
            if stop.isSet { break }
            let number = index + 1
            let began = ContinuousClock.now
            var acted = false
            do {
                let done = try replayer.replay(step, number: number, values: values, acted: &acted, gate: approve)
                outcome.outcomes.append(done)
                outcome.acted += 1
                if done.result == "healed" { outcome.healed += 1 } else { outcome.replayed += 1 }
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
            } catch let divergence as ReplayDivergence {
                (outcome.diverged, outcome.reason, outcome.failed) = (number, divergence.reason, 1)
                if acted { outcome.acted += 1 }
                outcome.outcomes.append(failure(step, number, divergence.reason, acted: acted, since: began))
                screenshot = try? Data(PNG.encode(perceiver.capturer.capture())).base64EncodedString()
                break
            } catch is CancellationError {
                if acted { outcome.acted += 1 }
                break
            } catch {
                // The display or the input failed: the replay cannot go on.
                let reason = "\(error)"
                (outcome.diverged, outcome.reason, outcome.failed) = (number, reason, 1)
                if acted { outcome.acted += 1 }
                outcome.outcomes.append(failure(step, number, reason, acted: acted, since: began))
                save()
                try? store.finishSession(
                    session, status: .failed, error: "step \(number): \(reason)", steps: outcome.acted,
                    usd: healer?.spent.usd ?? 0)
                throw error
            }
            save()
        }
        if stop.isSet {
            outcome.stopped = true
            outcome.reason = runGuard.stopReason ?? "stopped"
            _ = try? input.releaseEverything()  // a click's modifiers or a key may have been down
        }
        outcome.wall_ms = milliseconds(since: start)
        // A healed script is saved as its next revision (the one before kept beside it), so the next replay needs
        // no model.
        if outcome.healed > 0, let path = request.savePath {
            fixed.revision = (fixed.revision ?? 1) + 1
            let previous = "\(path).rev\(script.revision ?? 1)"
            do {
                try? FileManager.default.removeItem(atPath: previous)
                try FileManager.default.copyItem(atPath: path, toPath: previous)
                outcome.previous = previous
                try fixed.write(to: path)
                outcome.saved = path
            } catch {
                events("the healed script could not be saved to \(path): \(error)")
            }
        } else if outcome.healed > 0, let name = request.storedName {
            do {
                let saved = try fixed.store(as: name, in: store, by: request.savedBy).script
                outcome.saved = "script \(name) revision \(saved.revision)"
                outcome.previous = "script \(name) revision \(script.revision ?? 1)"
            } catch {
                events("the healed script could not be stored as \(name): \(error)")
            }
        } else if outcome.healed > 0 {
            events(
                "healed steps are not saved for a run id: store the run (`xclaw script save RUN --name NAME`) or "
                    + "export it to a file, and replay that")
        }
        save()
        let status: SessionStatus = outcome.stopped ? .stopped : outcome.diverged == nil ? .completed : .failed
        do {
            try store.finishSession(
                session, status: status,
                error: outcome.stopped
                    ? outcome.reason : outcome.diverged.map { "step \($0) diverged: \(outcome.reason ?? "")" },
                steps: outcome.acted, usd: outcome.cost_usd)
        } catch {
            events(
                "run \(session) ended, but its end could not be recorded (\(error)); `xclaw runs` may show it running")
        }
        return outcome
    }

    /// A failed step's outcome.
    private static func failure(
        _ step: RecordedStep, _ number: Int, _ reason: String, acted: Bool, since: ContinuousClock.Instant
    ) -> ReplayedStep {
        var outcome = ReplayedStep(
            number: number, action: step.action, label: step.target.flatMap { $0.label.isEmpty ? nil : $0.label },
            grounded: nil, point: nil, result: "failed", reason: reason, ms: milliseconds(since: since))
        outcome.acted = acted
        return outcome
    }

    /// Milliseconds since `start`.
    static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let d = (ContinuousClock.now - start).components
        return Double(d.seconds) * 1000 + Double(d.attoseconds) / 1e15
    }
}
