import Foundation
import Glibc
import Logging
import Synchronization
import XclawBase
import XclawScreen

/// Why a run's display or setup command could not be used, with what to change.
public enum RunDisplayError: ClassifiedError, Equatable {
    /// A `new:…` display whose size cannot be read.
    case malformed(String)
    /// The setup command ended with a non-zero status or a signal; `log` is the end of what it printed.
    case setupFailed(command: String, ending: String, log: String)
    /// The setup command was still running at its deadline (it was killed).
    case setupTimedOut(command: String, seconds: Int, log: String)

    /// A malformed display is bad usage; a setup command that fails is a condition not met.
    public var exitStatus: ExitStatus {
        switch self {
        case .malformed: return .usage
        case .setupFailed, .setupTimedOut: return .notFound
        }
    }

    /// The message, with what to do.
    public var description: String {
        switch self {
        case .malformed(let text):
            return "display \"\(text)\" is not new, new:WIDTHxHEIGHT (e.g. new:1280x800, each side 1 to 16384) or a "
                + "display name such as :1"
        case .setupFailed(let command, let ending, let log):
            return "the setup command \(UntrustedText.quoted(command)) \(ending), so the run did not start; fix it "
                + "(it runs with /bin/sh -c and DISPLAY set to the run's display)" + Self.tail(log)
        case .setupTimedOut(let command, let seconds, let log):
            return "the setup command \(UntrustedText.quoted(command)) was still running after \(seconds) s and was "
                + "stopped: start long-running apps in the background with `&`" + Self.tail(log)
        }
    }

    private static func tail(_ log: String) -> String { log.isEmpty ? "" : "; it printed:\n  \(log)" }
}

/// The display one run works on, with the run's setup command: a private Xvfb (and accessibility bus) started for
/// the run when its display is `new[:WxH]`, the setup command run on it before the model is asked anything, and all
/// of it ended after the run (`tearDown`), also when the run fails or is stopped. A `ProcessGuard` ends it when
/// the xclaw process is killed before it could.
public final class RunDisplay: Sendable {
    /// The size of a `new` display without one: what `xclaw display start` uses.
    public static let defaultSize = Size(width: 1920, height: 1080)
    /// How long a setup command may run: what it leaves running must be in the background (`&`).
    public static let defaultSetupTimeout: Duration = .seconds(60)
    /// The environment variable that marks the setup command and everything it starts with the run's token, so what
    /// left its process group is still found at the end.
    public static let marker = "XCLAW_RUN_ID"
    private static let logger = Logger(label: "xclaw.run-display")

    /// The display the run uses: the private one's `:N`, else the one asked for (nil: `$DISPLAY`).
    public let name: String?
    /// This run's marker value (`XCLAW_RUN_ID`), given to the setup command.
    public let token: String
    private let parts: Mutex<Parts>

    /// What was started, for the teardown; emptied by it.
    private struct Parts {
        var display: VirtualDisplay?
        var setupGroup: pid_t?
        var setupLog: String?
        var processGuard: ProcessGuard?
    }

    private init(name: String?, token: String, parts: Parts) {
        self.name = name
        self.token = token
        self.parts = Mutex(parts)
    }

    deinit { tearDown() }

    /// The private display started for this run; nil when the run uses an existing one or it was torn down.
    public var started: VirtualDisplay? { parts.withLock { $0.display } }

    /// The size `display` asks a private display to have (`new`: `defaultSize`; `new:WxH`), or nil when it names an
    /// existing display (or none: `$DISPLAY`). A malformed `new:` form is refused.
    public static func privateSize(_ display: String?) throws -> Size? {
        guard let display, display == "new" || display.hasPrefix("new:") else { return nil }
        guard display != "new" else { return defaultSize }
        let text = String(display.dropFirst(4))
        guard let size = try? Size(parsing: text), size.width <= 16384, size.height <= 16384 else {
            throw RunDisplayError.malformed(display)
        }
        return size
    }

    /// Whether a run with this display and setup needs a `RunDisplay` at all.
    public static func isNeeded(display: String?, setup: String?) throws -> Bool {
        try privateSize(display) != nil || !(setup ?? "").isEmpty
    }

    /// Prepares a run's display off the concurrency pool: as `start`, and cancelling the calling task stops a setup
    /// command that still runs (the start then throws `CancellationError`).
    public static func prepare(
        display: String?, setup: String?, setupTimeout: Duration = defaultSetupTimeout
    ) async throws -> RunDisplay {
        let cancelled = CancelFlag()
        let invocation = Invocation.served
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (done: CheckedContinuation<RunDisplay, any Error>) in
                Thread {
                    Invocation.$served.withValue(invocation) {
                        done.resume(
                            with: Result {
                                try start(
                                    display: display, setup: setup, setupTimeout: setupTimeout, cancelled: cancelled)
                            })
                    }
                }.start()
            }
        } onCancel: {
            cancelled.set()
        }
    }

    /// Starts a private display when `display` asks for one (`new[:WxH]`), with an accessibility bus when it can
    /// (without one, with a warning, when the bus cannot start), then runs `setup` on the run's display with
    /// `/bin/sh -c` until it exits: non-zero fails the start. What it starts in the background runs on until
    /// `tearDown`. On any failure whatever was started is ended again before the error is thrown. Blocks.
    public static func start(
        display: String?, setup: String?, setupTimeout: Duration = defaultSetupTimeout,
        cancelled: CancelFlag = CancelFlag()
    ) throws -> RunDisplay {
        let size = try privateSize(display)
        let token = "\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
        var parts = Parts()
        do {
            var name = display
            if let size {
                let processGuard = try ProcessGuard()
                parts.processGuard = processGuard
                var started = try VirtualDisplay.start(size: size, detached: true, record: false, unattended: true)
                processGuard.watch(pid: started.pid)
                parts.display = started
                name = started.name
                started.accessibility = startBus(for: started, watchedBy: processGuard)
                parts.display = started
            }
            if let setup, !setup.isEmpty {
                if parts.processGuard == nil { parts.processGuard = try ProcessGuard() }
                try runSetup(
                    setup, on: name, display: parts.display, token: token, timeout: setupTimeout,
                    cancelled: cancelled, parts: &parts)
            }
            return RunDisplay(name: name, token: token, parts: parts)
        } catch {
            end(&parts, token: token)
            throw error
        }
    }

    /// Ends what the run started: the setup command's process group and every process marked with the run's token
    /// (SIGTERM, SIGKILL after 1 s), then the private display's accessibility bus and Xvfb (which ends any X client
    /// still connected). Safe to call more than once.
    public func tearDown() {
        let token = self.token
        parts.withLock { Self.end(&$0, token: token) }
    }

    // MARK: - Steps

    /// The accessibility bus for a display just started, watched by the guard; nil (with a warning) when it cannot
    /// start: the run still works, reading the screen by OCR only.
    private static func startBus(for display: VirtualDisplay, watchedBy processGuard: ProcessGuard) -> AccessibilityBus?
    {
        // Buses of displays whose xclaw was killed before its guard could act would otherwise pile up.
        AccessibilityBus.reapOrphans()
        do {
            let log = try VirtualDisplay.checkedStateDirectory()
                .appendingPathComponent("displays/\(display.number)-a11y.log").path
            let bus = try AccessibilityBus.start(display: display.name, detached: true, logPath: log)
            processGuard.watch(group: bus.launcherPID)
            processGuard.watch(pid: bus.daemonPID)
            processGuard.watch(group: bus.daemonPID)
            return bus
        } catch {
            logger.warning(
                "the run's display has no accessibility bus; apps are read by OCR only",
                metadata: ["display": "\(display.name)", "error": "\(error)"])
            return nil
        }
    }

    /// Runs the setup command in a session of its own (so its background children form a group that can be ended),
    /// its output in a private log, and waits for it to exit; throws when it fails, runs past `timeout` or the start
    /// is cancelled.
    private static func runSetup(
        _ command: String, on name: String?, display: VirtualDisplay?, token: String, timeout: Duration,
        cancelled: CancelFlag, parts: inout Parts
    ) throws {
        let directory = try PrivateFiles.directory(
            VirtualDisplay.checkedStateDirectory().appendingPathComponent("displays"))
        let log = directory.appendingPathComponent("setup-\(token).log").path
        parts.setupLog = log
        let invocation = Invocation.current
        var environment = SecretEnvironment.stripped(invocation.environment)
        if let display {
            for key in display.environmentToRemove { environment.removeValue(forKey: key) }
            environment.merge(display.environment) { _, new in new }
        } else if let name {
            environment["DISPLAY"] = name
        }
        environment[marker] = token
        // `cd` first: in the daemon the command's directory is the asking shell's, not the daemon's.
        let child = try Subprocess.spawn(
            ["/bin/sh", "-c", "cd -- \"$1\" && eval \"$2\"", "xclaw-setup", invocation.directory, command],
            stdout: .appending(toFile: log), stderr: .sameAsStdout, environment: environment, group: .newSession)
        parts.setupGroup = child.pid
        parts.processGuard?.watch(group: child.pid)
        let deadline = ContinuousClock.now + timeout
        // Its ending is read without reaping it: its pid, and so its group's id, stays taken until `end` has signalled
        // the group, and no stranger that got the number meanwhile is ever signalled (here or by the guard).
        while true {
            if let ending = Subprocess.endingUnreaped(child.pid) {
                switch ending {
                case .exited(0): return
                case .exited(let code):
                    throw RunDisplayError.setupFailed(
                        command: command, ending: "exited with status \(code)", log: tail(log))
                case .signalled(let signal):
                    throw RunDisplayError.setupFailed(
                        command: command, ending: "was killed by signal \(signal)", log: tail(log))
                case .unknown: return  // reaped elsewhere (SIGCHLD ignored): its status is lost
                case .timedOut:
                    throw RunDisplayError.setupFailed(
                        command: command, ending: "ended with an unknown status", log: tail(log))
                }
            }
            if cancelled.isSet { throw CancellationError() }
            if ContinuousClock.now >= deadline {
                throw RunDisplayError.setupTimedOut(
                    command: command, seconds: Int(timeout / .seconds(1)), log: tail(log))
            }
            usleep(2000)
        }
    }

    /// The last lines of a setup log, for an error message.
    private static func tail(_ path: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(5).joined(separator: "\n  ")
    }

    /// Ends everything in `parts` and empties it.
    private static func end(_ parts: inout Parts, token: String) {
        // Who to wait for: the setup command's group and every process carrying the run's mark (zombies count as
        // gone: an orphan's parent may be slow to reap it).
        let (setupGroup, mark) = (parts.setupGroup, Array("\(marker)=\(token)".utf8))
        let targets = Set(
            ownProcesses { _, group, environ in
                group == setupGroup || environ().contains { $0.elementsEqual(mark) }
            })
        Subprocess.terminate(targets, groups: setupGroup.map { [$0] } ?? [], grace: .seconds(1)) {
            // The setup shell, our child, is left unreaped until its group was killed: its pid holds the group's id.
            $0 == setupGroup ? Subprocess.endingUnreaped($0) == nil : Subprocess.isRunning($0)
        }
        if let group = parts.setupGroup { _ = Subprocess.waitForExit(group, deadline: .now + .milliseconds(100)) }
        if let display = parts.display {
            do { try display.stop() } catch {
                logger.warning(
                    "the run's display did not stop", metadata: ["display": "\(display.name)", "error": "\(error)"])
            }
            for log in [display.logPath, display.accessibility?.logPath].compactMap({ $0 }) {
                try? FileManager.default.removeItem(atPath: log)
            }
        }
        if let log = parts.setupLog { try? FileManager.default.removeItem(atPath: log) }
        parts.processGuard?.dismiss()
        parts = Parts()
    }

    /// Live (not zombie) processes other than this one for which `matches` holds, given the pid, the process group
    /// and a reader of the environment's `NAME=value` entries.
    private static func ownProcesses(
        _ matches: (pid_t, pid_t, () -> [ArraySlice<UInt8>]) -> Bool
    ) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), pid != getpid(), let stat = ProcFiles.read("/proc/\(pid)/stat") else {
                return nil
            }
            // "pid (comm) S ppid pgrp …": comm may hold spaces and parentheses, so split after the last ')'.
            let text = String(decoding: stat, as: UTF8.self)
            guard let close = text.lastIndex(of: ")") else { return nil }
            let fields = text[text.index(after: close)...].split(separator: " ")
            guard fields.count >= 3, fields[0] != "Z", let group = pid_t(fields[2]) else { return nil }
            let environ = { (ProcFiles.read("/proc/\(pid)/environ") ?? []).split(separator: 0) }
            return matches(pid, group, environ) ? pid : nil
        }
    }
}
