import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawRuntime

/// `xclaw replay FILE|RUN`: a recorded run done again without the model, as a run of its own (see `Replayer`).
struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay a recorded run's steps without the model (a script file or a run id).",
        discussion: """
            Each tap finds its control again by label and role in the window it was in (so a moved window or another \
            screen size is fine); a control whose label is gone is searched for by its recorded image patch in that \
            window; a control found nowhere, or found more or fewer times than recorded, stops the replay: it never \
            clicks on a guess. Typing and keys wait until the window that was active then is active again. After \
            each step what it made appear is waited for (--timeout). --param P1=VALUE replaces a recorded parameter \
            (`xclaw script show` lists them; a password is never recorded and must be given). No model is asked \
            unless a tap's control is gone: then, with --heal auto (the default when an API key is set), only that \
            step goes to Claude with a screenshot ("which label is this control now?"); its answer is grounded like \
            any label, and the fix is written back into the script file as its next revision, so the next replay \
            needs no model. --heal ask shows the fix and asks first; --heal never stops there. The agent's approval \
            policy gates steps as in its own runs.
            A replay is a run: `xclaw runs` lists it (replayed, healed and failed steps, cost), `xclaw report RUN` \
            shows each step and the screen where it diverged, `xclaw stop RUN` stops it.
            Exit: 0 every step replayed (healed or not); 1 a step diverged (which and why on stderr, or in --json), \
            the run has no steps, or no such run or agent (--agent names one of this database for a script from \
            elsewhere); 2 bad usage, a file that is not a script, an unknown parameter; \
            3 display; 4 the model failed while healing; 130 stopped.
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
    @Option(help: "Record the run under this agent (default: the script's).") var agent: String?
    @Option(help: .hidden) var task: String?
    @OptionGroup var target: DisplayOptions
    @OptionGroup var storeOptions: StoreOptions
    @Flag var json = false

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
        let store = try storeOptions.open()
        var request: ReplayRequest
        if let run = Int64(script) {
            request = ReplayRequest(script: try ReplayScript.of(run: run, in: store), name: "run \(run)", savePath: nil)
        } else {
            let path = Invocation.current.resolve(script)
            request = ReplayRequest(
                script: try ReplayScript.read(script, resolved: path), name: path, savePath: path)
        }
        (request.assignments, request.timeout, request.heal) = (parameters, timeout, heal)
        (request.agent, request.task) = (agent, task)
        let settings = try GuardSettings.fromConfig()
        let ask = TerminalPrompt.approver
        // Bad input costs nothing: checked before the display is opened.
        try Replayer.check(request, store: store, attended: ask != nil)
        // Ctrl-C, SIGTERM or a closed terminal stop the replay as `xclaw stop` does: recorded, keys let go, 130.
        let control = ReplayControl()
        let watch = Interrupt.watch([SIGINT, SIGTERM, SIGHUP]) { signal in
            control.stop(signal == SIGINT ? "stopped by Ctrl-C" : "stopped by signal \(signal)")
        }
        defer { watch.stop() }
        let outcome = try withPerceiver(target) { p in
            try Replayer.run(
                request, perceiver: p, store: store, settings: settings, ask: ask, control: control,
                events: { printError("xclaw: \($0)") })
        }
        try emit(outcome, json: json) {
            var line =
                "run \(outcome.run): \(outcome.replayed + outcome.healed) of \(outcome.steps) step(s) done, "
                + "\(outcome.replayed) without the model"
            if outcome.model_requests == 0 {
                line += "; no model request"
            } else {
                line +=
                    "; \(outcome.healed) healed with \(outcome.model_requests) model request(s), "
                    + String(format: "$%.4f", outcome.cost_usd) + (outcome.saved.map { "; saved to \($0)" } ?? "")
                    + (outcome.previous.map { " (the revision before it: \($0))" } ?? "")
            }
            return line
        }
        if outcome.stopped {
            printError("xclaw: run \(outcome.run) \(outcome.reason ?? "stopped")")
            throw ExitCode(Send.stoppedStatus)
        }
        if let step = outcome.diverged {
            throw AgentRunError.failed(
                "step \(step) diverged: \(outcome.reason ?? "") (`xclaw report \(outcome.run)` shows the screen)",
                .notFound)
        }
    }
}
