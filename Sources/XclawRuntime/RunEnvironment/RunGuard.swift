import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawScreen
import XclawStore

/// How unattended runs are kept safe: the emergency stop's hotkey and failsafe, and the approval gate's default
/// policy and timeout. Read from the config file (`stop_key`, `failsafe`, `approval`, `approval_timeout`).
public struct GuardSettings: Sendable, Equatable {
    /// The stop hotkey grabbed on a run's display; nil: none.
    public var stopKey: String?
    /// Whether the pointer parked in a screen corner stops the run (PyAutoGUI's failsafe).
    public var failsafe: Bool
    /// The kinds of action needing approval when the agent names none.
    public var policy: ApprovalPolicy
    /// How long an unattended run waits for `xclaw approve|deny` before the action is denied.
    public var approvalTimeout: Duration
    /// How often a run looks for a stop request or a decision in the store.
    public var poll: Duration

    /// The defaults: Ctrl+Alt+Pause, no failsafe, every kind gated, 15 minutes to decide, 25 ms polls.
    public init(
        stopKey: String? = StopTrigger.defaultHotkey, failsafe: Bool = false, policy: ApprovalPolicy = .all,
        approvalTimeout: Duration = .seconds(900), poll: Duration = .milliseconds(25)
    ) {
        self.stopKey = stopKey
        self.failsafe = failsafe
        self.policy = policy
        self.approvalTimeout = approvalTimeout
        self.poll = poll
    }

    /// The settings of the config file, defaults for keys it lacks; a malformed value throws a usage error naming the
    /// key and the file.
    public static func fromConfig(environment: [String: String] = Invocation.current.environment) throws
        -> GuardSettings
    {
        var settings = GuardSettings()
        let file = ConfigValues.path(environment)
        func bad(_ key: String, _ value: String, _ expected: String) -> GuardError {
            GuardError.badSetting("\(key) = \(value) in \(file): \(expected)")
        }
        if let key = ConfigValues.value("stop_key", environment: environment) {
            if key.lowercased() == "none" {
                settings.stopKey = nil
            } else {
                do { _ = try KeyCombo.parse(key) } catch { throw bad("stop_key", key, "\(error)") }
                settings.stopKey = key
            }
        }
        if let value = ConfigValues.value("failsafe", environment: environment) {
            switch value.lowercased() {
            case "on", "true", "yes", "1": settings.failsafe = true
            case "off", "false", "no", "0": settings.failsafe = false
            default: throw bad("failsafe", value, "use on or off")
            }
        }
        if let value = ConfigValues.value("approval", environment: environment) {
            do { settings.policy = try ApprovalPolicy.parse(value) } catch { throw bad("approval", value, "\(error)") }
        }
        if let value = ConfigValues.value("approval_timeout", environment: environment) {
            guard let seconds = Double(value), seconds > 0, seconds <= 7 * 86_400 else {
                throw bad("approval_timeout", value, "use seconds, more than 0 and at most a week (604800)")
            }
            settings.approvalTimeout = .milliseconds(Int64(seconds * 1000))
        }
        return settings
    }
}

/// A setting the guard cannot use.
public enum GuardError: ClassifiedError, Equatable {
    /// A config value is malformed; the text names the key, the file and what is expected.
    case badSetting(String)

    /// The user's file: a usage error.
    public var exitStatus: ExitStatus { .usage }
    /// The message.
    public var description: String {
        switch self {
        case .badSetting(let text): return text
        }
    }
}

/// One run's guard: it stops the run when asked (a stop request in the store from `xclaw stop` or another process,
/// the hotkey, the failsafe) and answers the run's approval gate. The run's task is cancelled on a stop, which the
/// loop answers by closing every pending tool call; the service then records the session as `stopped`.
final class RunGuard: Sendable {
    private let store: any RunStore & ApprovalStore
    private let session: Int64
    private let settings: GuardSettings
    private let cancel: @Sendable () -> Void
    private let reason = Mutex<String?>(nil)
    private let watchers = Mutex<(poller: StopPoller?, trigger: StopTrigger?)>((nil, nil))

    /// Starts guarding `session`: polls the store for a stop request and, when the run drives `display` and a person
    /// can use it (not one xclaw started for its own use: `VirtualDisplay.isUnattended`), grabs the stop hotkey
    /// there. `cancel` ends the run.
    init(
        store: any RunStore & ApprovalStore, session: Int64, display: String?, settings: GuardSettings,
        events: @escaping @Sendable (String) -> Void, cancel: @escaping @Sendable () -> Void
    ) {
        (self.store, self.session, self.settings, self.cancel) = (store, session, settings, cancel)
        let poller = StopPoller(store: store, session: session, poll: settings.poll)
        poller.watch { [weak self] in self?.stop(poller.reason ?? "stopped by a stop request") }
        var trigger: StopTrigger?
        // Only where a person can press them: on a display xclaw started for its own use every key press and pointer
        // move is a program's, an agent's own among them, which would stop every run in flight.
        if let display, settings.stopKey != nil || settings.failsafe, !VirtualDisplay.isUnattended(display) {
            do {
                trigger = try StopTrigger(display: display, hotkey: settings.stopKey, failsafe: settings.failsafe) {
                    [weak self] cause in
                    // An emergency stop stops everything: every run in flight, in this process or another, reads it.
                    _ = try? store.requestStop(session: nil, agent: nil, by: "\(cause)")
                    self?.stop("stopped: \(cause)")
                }
            } catch {
                // Held by another run (its press stops every run through the store, this one included) or by another
                // program: either way the person should know the key may not reach this run.
                events("the stop hotkey is not armed for this run (\(error)); `xclaw stop` still reaches it")
            }
        }
        watchers.withLock { $0 = (poller, trigger) }
    }

    /// Why the run was stopped, or nil.
    var stopReason: String? { reason.withLock { $0 } }

    /// Stops the run (once).
    func stop(_ why: String) {
        let first = reason.withLock { reason in
            defer { if reason == nil { reason = why } }
            return reason == nil
        }
        if first { cancel() }
    }

    /// Ends the guard: the poller stops and the hotkey is let go.
    func finish() {
        let (poller, trigger) = watchers.withLock { w in
            defer { w = (nil, nil) }
            return w
        }
        poller?.finish()
        trigger?.cancel()
    }

    /// The run's approval gate under `policy`: an action of a gated kind is put to the person at the terminal when
    /// `ask` is given (an attended run), else recorded as waiting (`needs-approval`) until `xclaw approve|deny` or
    /// the timeout, which denies it. Anything that goes wrong denies it: the gate fails closed.
    func gate(
        policy: ApprovalPolicy, ask: (@Sendable (String) async -> Bool)?, events: @escaping @Sendable (String) -> Void
    )
        -> @Sendable (GateRequest) async -> GateVerdict
    {
        let (store, session, settings) = (store, session, settings)
        return { request in
            guard let kind = policy.classify(request.subject) else { return .allow }
            // A password's characters go nowhere but the field: not into the approval, its notice or the log.
            let action =
                kind == .password
                ? "type \(request.subject.typed?.count ?? 0) character(s) into the password field "
                    + UntrustedText.quoted(request.subject.label ?? "", limit: 60)
                : request.describe
            let what = "\(action) (\(kind.rawValue))"
            if let ask {
                return await ask("xclaw: approve \(what)? [y/N] ")
                    ? .allow : .deny(Self.denial(what, by: "the user at the terminal"))
            }
            let timeout = settings.approvalTimeout.components
            let expires = Date().addingTimeInterval(Double(timeout.seconds) + Double(timeout.attoseconds) / 1e18)
            let id: Int64
            do {
                id = try store.requestApproval(
                    session: session, kind: kind.rawValue, tool: request.record.tool,
                    action: request.record.action.rawValue, detail: action, expiresAt: expires)
            } catch {
                return .deny(Self.denial(what, by: "xclaw, which could not record the request (\(error))"))
            }
            events(
                "run \(session) waits for approval to \(what): `xclaw approve \(session)` or `xclaw deny \(session)` "
                    + "(denied at \(StoreDate.format(expires)) without a decision)")
            while true {
                if Task.isCancelled {
                    try? store.withdrawApproval(id, reason: "the run stopped")
                    return .deny(Self.denial(what, by: "the run ending"))
                }
                // Polled with a read as often as a stop is (a decision on any host of a fleet reaches the run within
                // a poll); the write that settles it comes once it is decided or its deadline passed.
                if Date() < expires {
                    let status: String??
                    do { status = .some(try store.approvalStatus(id)) } catch { status = nil }
                    switch status {
                    case .some(nil):
                        return .deny(Self.denial(what, by: "xclaw: the request is gone (its agent was deleted)"))
                    case .some("pending"):
                        try? await Task.sleep(for: settings.poll)
                        continue
                    case nil:
                        // The store cannot answer: wait as a failed settle does, without a write that would wait too.
                        try? await Task.sleep(for: settings.poll)
                        continue
                    default: break
                    }
                }
                guard let record = try? store.settleApproval(id, now: Date()) else {
                    // The store cannot answer (locked, the row gone): the deadline still holds, and denies.
                    if Date() > expires.addingTimeInterval(5) {
                        return .deny(Self.denial(what, by: "xclaw, which could not read the decision in time"))
                    }
                    try? await Task.sleep(for: settings.poll)
                    continue
                }
                switch record.status {
                case "approved": return .allow
                case "expired":
                    let seconds = Double(timeout.seconds) + Double(timeout.attoseconds) / 1e18
                    return .deny(Self.denial(what, by: "nobody within \(String(format: "%g", seconds)) s"))
                case "denied": return .deny(Self.denial(what, by: record.decidedBy ?? "a person"))
                default: try? await Task.sleep(for: settings.poll)
                }
            }
        }
    }

    /// What the model reads when an action was not approved: it must not try the same thing another way.
    static func denial(_ what: String, by who: String) -> String {
        "not approved: \(what) needs a person's approval and was denied by \(who); nothing was done. Do not try "
            + "it again or another way: finish, and say what was left undone."
    }
}

/// Watches the store for a stop request of one run (`xclaw stop`, another process's hotkey): the run's guard, and
/// the preparation of its environment before the guard exists, both wait through it.
final class StopPoller: Sendable {
    private let store: any RunStore
    private let session: Int64
    private let poll: Duration
    private let state = Mutex<(reason: String?, task: Task<Void, Never>?)>((nil, nil))

    init(store: any RunStore, session: Int64, poll: Duration) {
        (self.store, self.session, self.poll) = (store, session, poll)
    }

    /// Why the run was stopped, or nil.
    var reason: String? { state.withLock { $0.reason } }

    /// Polls until `finish`; on a stop request records why and calls `stop`.
    func watch(_ stop: @escaping @Sendable () -> Void) {
        let (store, session, poll) = (store, session, poll)
        let task = Task.detached { [weak self] in
            while !Task.isCancelled {
                if let request = try? store.stopRequest(session: session) {
                    let who = request.split(separator: " ", maxSplits: 1).dropFirst().first.map(String.init)
                    self?.state.withLock { $0.reason = "stopped by \(who ?? "a stop request")" }
                    stop()
                    return
                }
                try? await Task.sleep(for: poll)
            }
        }
        state.withLock { $0.task = task }
    }

    /// Stops polling.
    func finish() { state.withLock { $0.task }?.cancel() }
}
