import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawRuntime
import XclawStore

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
            With a fleet (workers up on the PostgreSQL database): the replay is queued and a worker does it; a file \
            is stored in the database first (as HOST:PATH), and the revision a healed replay saves there is written \
            back to the file when the run ends (not with --no-wait: the next replay of the file writes it); exit 5 \
            when its worker was lost; a --param that fills a password needs --local. --stored NAME replays a \
            script kept in the database (`xclaw script save`, `xclaw script list`).
            Examples:
              xclaw replay task.json --param P1='order 9'  # the recorded steps again, without the model
              xclaw replay --stored order --heal never
            """)
    @Argument(help: "A script file (`xclaw script export RUN -o FILE`) or a run id.") var script: String?
    @Option(help: "Replay the newest revision of a script stored in the database (`xclaw script list`).")
    var stored: String?
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
    @OptionGroup var fleet: FleetOptions
    @Flag var json = false

    func validate() throws {
        guard (script == nil) != (stored == nil) else {
            throw ValidationError("name one script: a file, a run id, or --stored NAME")
        }
        if let heal, !["auto", "ask", "never"].contains(heal) {
            throw ValidationError("--heal is auto, ask or never, not \(heal)")
        }
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout takes seconds from 0 to 3600") }
        for p in parameters where !p.contains("=") {
            throw ValidationError("--param takes NAME=VALUE (e.g. --param P1=hello), not \(p)")
        }
    }

    func run() throws {
        if let store = try FleetDispatch.queueing(storeOptions, fleet) { return try queue(store) }
        let store = try storeOptions.open()
        var request = try request(store)
        request.savedBy = FleetDispatch.who()
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
        try report(outcome)
    }

    /// What the command was asked to replay, with its options.
    private func request(_ store: AgentStore) throws -> ReplayRequest {
        var request: ReplayRequest
        if let stored {
            request = ReplayRequest(script: try ReplayScript.stored(stored, in: store), name: stored, savePath: nil)
            request.storedName = stored
        } else if let script, let run = Int64(script) {
            request = ReplayRequest(script: try ReplayScript.of(run: run, in: store), name: "run \(run)", savePath: nil)
        } else {
            let script = self.script ?? ""
            let path = Invocation.current.resolve(script)
            request = ReplayRequest(
                script: try ReplayScript.read(script, resolved: path), name: path, savePath: path)
        }
        (request.assignments, request.timeout, request.heal) = (parameters, timeout, heal)
        (request.agent, request.task) = (agent, task)
        return request
    }

    /// Queues the replay for the fleet and follows it: a file is stored in the database first, and a revision a
    /// healed replay stored is written back to it (the one before kept beside it, as a replay here does). Values go
    /// as `--option=value`, so a value starting with "-" stays a value on the worker.
    private func queue(_ store: AgentStore) throws {
        if heal == "ask" {
            throw ValidationError(
                "--heal ask asks at this terminal, and a worker runs a fleet replay: use --heal auto "
                    + "or never, or add --local")
        }
        let request = try request(store)
        try Replayer.checkParameters(request)
        // A password is never recorded, and a queued run's command line is kept in the fleet's database.
        let passwords = Set(request.script.steps.compactMap { $0.text == nil ? $0.parameter : nil })
        for p in parameters where passwords.contains(String(p.prefix(while: { $0 != "=" })).lowercased()) {
            throw ValidationError(
                "--param \(p.prefix(while: { $0 != "=" })) fills a password, which a fleet run would keep in the "
                    + "database with its command line: replay it here with --local")
        }
        var arguments = ["replay"]
        var storedFile: (path: String, name: String, revision: Int, contents: Data?)?
        if let stored {
            arguments += FleetDispatch.option("--stored", stored)
        } else if let script, Int64(script) != nil {
            arguments.append(script)
        } else if let path = request.savePath {
            let (name, revision) = try FleetScripts.store(request.script, file: path, in: store)
            storedFile = (path, name, revision, FileManager.default.contents(atPath: path))
            arguments += FleetDispatch.option("--stored", name)
        }
        arguments += parameters.flatMap { FleetDispatch.option("--param", $0) } + ["--timeout=\(timeout)"]
        let passed: [(String, String?)] = [
            ("--heal", heal), ("--agent", agent), ("--task", task), ("--display", target.display),
        ]
        for case (let option, let value?) in passed { arguments += FleetDispatch.option(option, value) }
        let id = try FleetDispatch.enqueue(
            .replay, agent: agent ?? request.script.agent, arguments: arguments, store: store, options: fleet)
        guard let id else {
            if storedFile != nil, heal != "never" {
                printError(
                    "xclaw: with --no-wait a healed revision stays in the database; the next `xclaw replay "
                        + "\(script ?? "")` writes it into the file")
            }
            return
        }
        let status = try FleetDispatch.follow(id, store: store)
        let run = try store.fleetRun(id)
        if var outcome = try run.sessionID.flatMap({ try Replayer.recorded(session: $0, store: store) }) {
            if let file = storedFile, outcome.healed > 0 {
                let newest = try store.script(named: file.name, revision: nil)
                if newest.revision > file.revision {
                    if FileManager.default.contents(atPath: file.path) != file.contents {
                        printError(
                            "xclaw: \(file.path) changed while the replay ran: the healed script stays in the database "
                                + "as \(file.name) revision \(newest.revision) (`xclaw replay --stored` replays it)")
                    } else if let previous = FleetScripts.writeBack(newest, to: file.path, replacing: file.revision) {
                        (outcome.saved, outcome.previous) = (file.path, previous)
                    }
                }
            } else if let stored, outcome.healed > 0 {
                let newest = try store.script(named: stored, revision: nil)
                if newest.revision > request.script.revision ?? 1 {
                    outcome.saved = "script \(stored) revision \(newest.revision)"
                    outcome.previous = "script \(stored) revision \(request.script.revision ?? 1)"
                }
            }
            try report(outcome, exitOnFailure: false)
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Prints how the replay went and ends with its exit status.
    private func report(_ outcome: ReplayOutcome, exitOnFailure: Bool = true) throws {
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
            if exitOnFailure { throw ExitCode(Send.stoppedStatus) }
        }
        if let step = outcome.diverged, !exitOnFailure {
            printError(
                "xclaw: step \(step) diverged: \(outcome.reason ?? "") (`xclaw report \(outcome.run)` shows the screen)"
            )
        } else if let step = outcome.diverged {
            throw AgentRunError.failed(
                "step \(step) diverged: \(outcome.reason ?? "") (`xclaw report \(outcome.run)` shows the screen)",
                .notFound)
        }
    }
}
