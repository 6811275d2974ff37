import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawStore

/// `xclaw stop [RUN|AGENT|--all]`: the emergency stop from a shell. It asks through the database, so it reaches a run
/// wherever it runs (this machine's daemon, a second daemon, a plain `xclaw run`), then waits until each has stopped.
struct Stop: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop",
        abstract: "Stop runs in flight at once: one run (its id), an agent's runs, or --all.",
        discussion: """
            Each run stops within a fraction of a second: held keys and mouse buttons are released, the tool calls \
            in flight are answered, and the run is recorded as stopped (`xclaw runs`). The stop hotkey \
            (Ctrl+Alt+Pause by default; `stop_key` in the config file, `none` to disarm) and the optional corner \
            failsafe (`failsafe = on`) do the same from the display.
            Exit: 0 every run asked stopped (or none was in flight); 1 no such run or agent, or a run did not stop \
            within --wait; 2 bad usage.
            Examples:
              xclaw stop 42  # one run, by its id in xclaw runs
              xclaw stop --all --json  # every run in flight, each with the ms it took
            """)
    @Argument(help: "A run id (from `xclaw runs`) or an agent name.") var target: String?
    @Flag(help: "Stop every run in flight.") var all = false
    @Option(help: "Seconds to wait for the runs to end (0: ask and return).") var wait: Double = 5
    @OptionGroup var storeOptions: StoreOptions
    @Flag var json = false

    /// One run asked to stop, and how it ended.
    struct Row: Encodable {
        var id: Int64
        var agent: String
        var status: String
        var stopped_ms: Int?
    }

    func validate() throws {
        guard (target != nil) != all else {
            throw ValidationError("name one run id or agent, or pass --all")
        }
        guard wait >= 0, wait <= 3600 else { throw ValidationError("--wait takes seconds from 0 to 3600") }
    }

    func run() throws {
        let store = try storeOptions.open()
        let asked = ContinuousClock.now
        let who = "xclaw stop (pid \(Invocation.current.pid))"
        let sessions: [SessionRecord]
        if all {
            sessions = try store.requestStop(by: who)
        } else if let target, let id = Int64(target) {
            sessions = try store.requestStop(session: id, by: who)
            if sessions.isEmpty {
                let session = try store.session(id)
                printError("xclaw: run \(id) is not in flight (it ended \(session.status.rawValue))")
            }
        } else if let target {
            sessions = try store.requestStop(agent: target, by: who)
        } else {
            sessions = []
        }
        var rows = sessions.map { Row(id: $0.id, agent: $0.agent, status: $0.status.rawValue, stopped_ms: nil) }
        let deadline = asked + .milliseconds(Int64(wait * 1000))
        var open = Set(rows.indices)
        while !open.isEmpty {
            for i in open {
                guard let session = try? store.session(rows[i].id), session.status.isFinal else { continue }
                rows[i].status = session.status.rawValue
                rows[i].stopped_ms = Int((ContinuousClock.now - asked).milliseconds.rounded())
                open.remove(i)
            }
            if open.isEmpty || ContinuousClock.now >= deadline || wait == 0 { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        try emit(rows, json: json) {
            rows.isEmpty
                ? "no run in flight"
                : rows.map { r in
                    "\(r.id)\t\(r.agent)\t\(r.status)" + (r.stopped_ms.map { "\t\($0) ms" } ?? "\tstill running")
                }.joined(separator: "\n")
        }
        if wait > 0, !open.isEmpty {
            throw AgentRunError.failed(
                "\(open.count) run(s) had not stopped after \(wait) s: their process may be blocked or gone; "
                    + "`xclaw runs` shows them", .notFound)
        }
    }
}

/// `xclaw approve RUN` and `xclaw deny RUN`: decide the gated action a run waits on.
struct Approve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve",
        abstract: "Let a run waiting for approval (status needs-approval) do the gated action.",
        discussion: """
            Exit: 0 decided; 1 no such run, or it waits for nothing; 2 bad usage.
            Examples:
              xclaw approve 42  # the run id xclaw approvals lists
            """)
    @Argument(help: ArgumentHelp("The run id (from `xclaw runs`).", valueName: "run")) var runID: Int64
    @OptionGroup var storeOptions: StoreOptions
    @Flag var json = false

    func run() throws { try Decision.decide(runID, approve: true, storeOptions, json: json) }
}

/// `xclaw deny RUN`.
struct Deny: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deny",
        abstract: "Refuse the gated action a run waits on; the run goes on without it.",
        discussion: """
            Exit: 0 decided; 1 no such run, or it waits for nothing; 2 bad usage.
            Examples:
              xclaw deny 42
            """)
    @Argument(help: ArgumentHelp("The run id (from `xclaw runs`).", valueName: "run")) var runID: Int64
    @OptionGroup var storeOptions: StoreOptions
    @Flag var json = false

    func run() throws { try Decision.decide(runID, approve: false, storeOptions, json: json) }
}

/// What `approve` and `deny` share.
enum Decision {
    /// One decided approval.
    struct Row: Encodable {
        var run: Int64
        var agent: String
        var kind: String
        var action: String
        var decision: String
    }

    /// Records the decision and prints what was decided.
    static func decide(_ run: Int64, approve: Bool, _ options: StoreOptions, json: Bool) throws {
        let store = try options.open()
        let record = try store.decideApproval(
            session: run, approve: approve, by: "xclaw \(approve ? "approve" : "deny") (pid \(Invocation.current.pid))")
        let row = Row(
            run: run, agent: record.agent, kind: record.kind, action: record.detail, decision: record.status)
        try emit(row, json: json) { "\(record.status) for run \(run) (\(record.agent)): \(record.detail)" }
    }
}

/// `xclaw approvals`: the gated actions runs wait on, to approve or deny.
struct Approvals: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approvals",
        abstract: "List the gated actions runs wait on (decide with `xclaw approve RUN` or `xclaw deny RUN`).",
        discussion: """
            Exit: 0 listed (none waiting is not an error); 2 bad usage.
            Examples:
              xclaw approvals  # run, agent, kind of action, the action
              xclaw approvals --json
            """)
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON (run, agent, kind, action, requested_at, expires_at).") var json = false

    /// One waiting action.
    struct Row: Encodable {
        var run: Int64
        var agent: String
        var kind: String
        var action: String
        var requested_at: String
        var expires_at: String
    }

    func run() throws {
        let rows = try storeOptions.open().approvals(pendingOnly: true).map {
            Row(
                run: $0.session, agent: $0.agent, kind: $0.kind, action: $0.detail,
                requested_at: StoreDate.format($0.requestedAt), expires_at: StoreDate.format($0.expiresAt))
        }
        try emit(rows, json: json) {
            rows.isEmpty
                ? "no run waits for approval"
                : rows.map { "run \($0.run)\t\($0.agent)\t\($0.kind)\t\(UntrustedText.quoted($0.action))" }
                    .joined(separator: "\n")
        }
    }
}
