import CX11
import Foundation
import Glibc
import XclawBase

/// The D-Bus session bus and AT-SPI2 accessibility bus of a display xclaw started (`xclaw display start
/// --accessibility`): GTK and Qt apps only expose their accessibility trees when both run for their display.
///
/// Never started behind a user's own desktop, which has its own. The session bus is a `dbus-daemon --session`; the
/// accessibility bus is started by `at-spi-bus-launcher`, which writes its address to the root-window property
/// `AT_SPI_BUS`, and whose bus activates the registry (`at-spi2-registryd`) on the first call.
public struct AccessibilityBus: Codable, Sendable, Hashable {
    /// The session bus address, for `DBUS_SESSION_BUS_ADDRESS`.
    public var sessionAddress: String
    /// The accessibility bus address, as the launcher wrote it to the root-window property `AT_SPI_BUS`.
    public var a11yAddress: String
    /// The session `dbus-daemon`'s process id.
    public var daemonPID: Int32
    /// The `at-spi-bus-launcher`'s process id; the accessibility `dbus-daemon` and the registry run in its
    /// process group.
    public var launcherPID: Int32
    /// Where the daemons' output goes, for when they fail.
    public var logPath: String

    /// snake_case, as every xclaw JSON output.
    enum CodingKeys: String, CodingKey {
        case sessionAddress = "session_address"
        case a11yAddress = "a11y_address"
        case daemonPID = "daemon_pid"
        case launcherPID = "launcher_pid"
        case logPath = "log_path"
    }

    /// What an app launched on the display needs besides `DISPLAY`: only `DBUS_SESSION_BUS_ADDRESS`. Qt reads
    /// `org.a11y.Status.IsEnabled` and the accessibility bus address on the session bus; GTK's bridge finds the
    /// bus through the root property `AT_SPI_BUS`. `AT_SPI_BUS_ADDRESS` is deliberately not set: it would override
    /// both, and goes stale if the launcher restarts. An inherited one must be dropped instead (it would point at
    /// another desktop's bus); see `VirtualDisplay.environmentToRemove`.
    public var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": sessionAddress] }

    /// Where `at-spi-bus-launcher` lives: Debian and Fedora, then older Debian/Ubuntu.
    static let launcherPaths = ["/usr/libexec/at-spi-bus-launcher", "/usr/lib/at-spi2-core/at-spi-bus-launcher"]

    /// What to tell the user when a piece is missing or fails.
    static let installHint = "run scripts/install-deps.sh (or `apt-get install dbus dbus-bin at-spi2-core`)"

    /// Starts the session bus and the accessibility bus for `display` and returns once apps can use them: the
    /// launcher owns `org.a11y.Bus`, accessibility is enabled, `AT_SPI_BUS` is on the root window and the registry
    /// answers. On any failure whatever was started is stopped again.
    /// - Parameters:
    ///   - display: the X display (`:41`); it must be one xclaw started.
    ///   - detached: run the launcher in its own session so it outlives this process (`xclaw display start`); the
    ///     session daemon always detaches (`--fork`).
    ///   - logPath: where the daemons' output goes (default: beside the display logs in the state directory).
    ///   - timeout: how long the whole start-up may take.
    public static func start(
        display: String, detached: Bool = true, logPath: String? = nil,
        timeout: Duration = .seconds(5)
    ) throws -> AccessibilityBus {
        let deadline = ContinuousClock.now + timeout
        guard let daemon = VirtualDisplay.findExecutable("dbus-daemon"),
            let update = VirtualDisplay.findExecutable("dbus-update-activation-environment"),
            let send = VirtualDisplay.findExecutable("dbus-send")
        else {
            throw ScreenError.virtualDisplay(
                "dbus-daemon, dbus-update-activation-environment or dbus-send is not "
                    + "installed, needed for --accessibility: \(installHint)")
        }
        guard let launcher = launcherPaths.first(where: { access($0, X_OK) == 0 }) else {
            throw ScreenError.virtualDisplay(
                "at-spi-bus-launcher is not installed (looked in "
                    + "\(launcherPaths.joined(separator: ", "))), needed for --accessibility: \(installHint)")
        }
        let log =
            try logPath
            ?? VirtualDisplay.checkedStateDirectory()
            .appendingPathComponent("displays/a11y-\(display.filter(\.isNumber))-\(getpid()).log").path
        try? FileManager.default.createDirectory(
            atPath: (log as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try? FileManager.default.removeItem(atPath: log)

        // Held for the whole start-up: a server started with `-terminate` ends when its last client leaves, and the
        // launcher closes its own connection once it has set the property.
        let connection = try DisplayConnection(name: display)
        let stale = try? WindowManager(connection: connection).rootText("AT_SPI_BUS")

        var bus = AccessibilityBus(sessionAddress: "", a11yAddress: "", daemonPID: 0, launcherPID: 0, logPath: log)
        do {
            var env = inheritedEnvironment()
            env["DISPLAY"] = display
            // Marks these daemons (and what they spawn) as xclaw's, so `reapOrphans` never touches anyone else's.
            env[Self.marker] = display
            let session = try startSessionDaemon(daemon, environment: env, logPath: log, deadline: deadline)
            bus.sessionAddress = session.address
            bus.daemonPID = session.pid
            env["DBUS_SESSION_BUS_ADDRESS"] = session.address

            // Services the session bus starts on demand (for apps on the display) must find the display too.
            let updated = try run([update, "DISPLAY"], environment: env, logPath: log, deadline: deadline).status
            guard updated == 0 else {
                throw StartFailure("dbus-update-activation-environment DISPLAY failed (exit status \(updated))")
            }

            bus.launcherPID = try VirtualDisplay.spawn(
                [launcher, "--launch-immediately"],
                stdout: .appending(toFile: log), environment: env,
                group: detached ? .newSession : .own
            ).pid

            // Wait until our launcher owns org.a11y.Bus (after starting the accessibility bus and setting the root
            // property) before calling it: a call to the name while it has no owner makes the session bus start a
            // second launcher (D-Bus activation), and ours, losing the race for the name, exits.
            let launcherPID = bus.launcherPID
            var owner: Int32?
            try retry(
                until: deadline, what: "the launcher did not take org.a11y.Bus on the session bus",
                launcherPID: launcherPID
            ) { replyTimeout in
                let reply = try run(
                    [
                        send, "--bus=\(session.address)", "--reply-timeout=\(replyTimeout)",
                        "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                        "org.freedesktop.DBus.GetConnectionUnixProcessID", "string:org.a11y.Bus",
                    ],
                    environment: env, logPath: log, deadline: deadline)
                // The reply's last line is `   uint32 PID`; without an owner the call fails.
                guard reply.status == 0, let last = reply.output.split(separator: " ").last,
                    let pid = Int32(last.trimmingCharacters(in: .whitespacesAndNewlines))
                else { return false }
                owner = pid
                return true
            }
            guard owner == launcherPID else {
                throw StartFailure(
                    "another process (pid \(owner.map(String.init) ?? "?")) owns org.a11y.Bus on the "
                        + "new session bus, not the launcher started for it (pid \(launcherPID))")
            }

            // Qt apps only turn their bridge on when IsEnabled is true.
            try retry(
                until: deadline, what: "the launcher did not enable accessibility (org.a11y.Status.IsEnabled)",
                launcherPID: launcherPID
            ) { replyTimeout in
                try run(
                    [
                        send, "--bus=\(session.address)", "--reply-timeout=\(replyTimeout)", "--print-reply",
                        "--dest=org.a11y.Bus", "/org/a11y/bus", "org.freedesktop.DBus.Properties.Set",
                        "string:org.a11y.Status", "string:IsEnabled", "variant:boolean:true",
                    ],
                    environment: env, logPath: log, deadline: deadline
                ).status == 0
            }

            try retry(
                until: deadline, what: "the launcher did not set AT_SPI_BUS on the root window",
                launcherPID: bus.launcherPID
            ) { _ in
                guard let value = try WindowManager(connection: connection).rootText("AT_SPI_BUS"), value != stale,
                    value.hasPrefix("unix:")
                else { return false }
                bus.a11yAddress = value
                return true
            }

            // The first call activates the registry: apps launched from now on register at once, and it holds a
            // connection to the display for as long as it runs.
            let a11yAddress = bus.a11yAddress
            try retry(
                until: deadline, what: "the accessibility registry did not answer",
                launcherPID: bus.launcherPID
            ) { replyTimeout in
                try run(
                    [
                        send, "--bus=\(a11yAddress)", "--reply-timeout=\(replyTimeout)", "--print-reply",
                        "--dest=org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root",
                        "org.a11y.atspi.Accessible.GetChildren",
                    ],
                    environment: env, logPath: log, deadline: deadline
                ).status == 0
            }
            return bus
        } catch {
            bus.stop()
            let why = (error as? StartFailure)?.text ?? "\(error)"
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            let tail = output.split(separator: "\n").suffix(5).joined(separator: "\n  ")
            throw ScreenError.virtualDisplay(
                "could not start the accessibility bus for \(display): \(why). "
                    + "If dbus, dbus-bin or at-spi2-core is missing, run scripts/install-deps.sh"
                    + (tail.isEmpty ? "" : "; the log \(log) ends:\n  \(tail)"))
        }
    }

    /// Stops the launcher (SIGTERM), then what it and the session daemon left behind (the registry outlives the
    /// launcher; the accessibility `dbus-daemon` usually ends with it) and the session daemon; SIGKILL for whatever
    /// still runs after `timeout`. Only processes whose identity checks out are signalled, so a reused pid is safe.
    public func stop(timeout: Duration = .seconds(3)) {
        let deadline = ContinuousClock.now + timeout
        let marker = Self.busIdentity(sessionAddress)
        if Self.isAlive(launcherPID), Self.commandLine(launcherPID).contains("at-spi-bus-launcher") {
            // Bounded: half the time for it, the rest for what it leaves behind.
            Subprocess.terminate([launcherPID], grace: timeout / 2, escalate: false, isAlive: Self.isAlive)
        }
        var targets = Self.processes(inGroups: [launcherPID, daemonPID].filter { $0 > 0 }, busIdentity: marker)
        if Self.isAlive(daemonPID), Self.commandLine(daemonPID).contains("dbus-daemon") { targets.insert(daemonPID) }
        if Self.isAlive(launcherPID) { targets.insert(launcherPID) }  // it ignored SIGTERM: it gets SIGKILL below
        Subprocess.terminate(targets, grace: max(deadline - ContinuousClock.now, .zero), isAlive: Self.isAlive)
    }

    // MARK: - Start-up steps

    /// A step's failure, worded for the user.
    private struct StartFailure: Error {
        var text: String
        init(_ text: String) { self.text = text }
    }

    /// This process's environment without what would point the daemons at another desktop or its buses.
    private static func inheritedEnvironment() -> [String: String] {
        var env = Invocation.current.environment
        for key in [
            "DBUS_SESSION_BUS_ADDRESS", "DBUS_STARTER_ADDRESS", "DBUS_STARTER_BUS_TYPE",
            "AT_SPI_BUS_ADDRESS", "WAYLAND_DISPLAY",
        ] {
            env.removeValue(forKey: key)
        }
        return env
    }

    /// Runs `dbus-daemon --session --fork` and reads the address and pid it prints on two lines of a pipe.
    private static func startSessionDaemon(
        _ daemon: String, environment: [String: String], logPath: String,
        deadline: ContinuousClock.Instant
    ) throws -> (address: String, pid: Int32) {
        let forker = try VirtualDisplay.spawn(
            [daemon, "--session", "--fork", "--print-address=1", "--print-pid=1"],
            stdout: .pipe, stderr: .appending(toFile: logPath),
            environment: environment)
        // The forked daemon keeps the pipe open: read until its two lines, not to EOF.
        let read = forker.read(until: deadline) { $0.filter { $0 == 0x0A }.count >= 2 }
        let text = read.complete ? String(decoding: read.stdout, as: UTF8.self) : nil
        forker.closePipes()
        // The first process exits once the daemon has forked: reap it.
        _ = forker.wait(deadline: deadline)
        let lines = (text ?? "").split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        guard lines.count >= 2, lines[0].contains(":"), let pid = Int32(lines[1]), pid > 0 else {
            if let pid = lines.count >= 2 ? Int32(lines[1]) : nil, pid > 0 { kill(pid, SIGTERM) }
            switch text {
            case nil: throw StartFailure("dbus-daemon --session did not print its address in time")
            case ""?: throw StartFailure("dbus-daemon --session exited without printing its address")
            case let output?: throw StartFailure("dbus-daemon --session printed \"\(output)\", not its address and pid")
            }
        }
        return (lines[0], pid)
    }

    /// Calls `attempt` (given a reply timeout in ms for `dbus-send`) every 20 ms until it returns true; throws
    /// `what` at `deadline`, or at once when the launcher has died.
    private static func retry(
        until deadline: ContinuousClock.Instant, what: String, launcherPID: Int32,
        _ attempt: (Int) throws -> Bool
    ) throws {
        while true {
            let left = deadline - ContinuousClock.now
            if left > .zero, try attempt(max(50, min(1000, Int(left.milliseconds)))) { return }
            guard isAlive(launcherPID) else { throw StartFailure("at-spi-bus-launcher exited early, so \(what)") }
            guard ContinuousClock.now < deadline else { throw StartFailure("\(what) in time") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Runs a short command to its end (killed at `deadline`), stderr to the log; returns its exit status (-1 when
    /// it had to be killed or died of a signal) and its stdout.
    private static func run(
        _ arguments: [String], environment: [String: String], logPath: String,
        deadline: ContinuousClock.Instant
    ) throws -> (status: Int32, output: String) {
        let child = try VirtualDisplay.spawn(
            arguments, stdout: .pipe, stderr: .appending(toFile: logPath),
            environment: environment)
        let read = child.read(until: deadline)  // to EOF
        child.closePipes()
        let ending = child.wait(deadline: deadline)
        guard case .exited(let status) = ending else {
            return (-1, read.complete ? String(decoding: read.stdout, as: UTF8.self) : "")
        }
        return (status, read.complete ? String(decoding: read.stdout, as: UTF8.self) : "")
    }

    // MARK: - Processes

    /// True while `pid` runs. A zombie counts as gone (init reaps orphans only every few seconds), and our own
    /// exited child is reaped here.
    static func isAlive(_ pid: Int32) -> Bool { Subprocess.isRunning(pid) }

    /// The state letter and process group of `pid`, from `/proc/PID/stat`.
    private static func processStat(_ pid: Int32) -> (state: Character, group: Int32)? {
        guard let bytes = ProcFiles.read("/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        // "pid (comm) S ppid pgrp …": comm may hold spaces and parentheses, so split after the last ')'.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count >= 3, let state = fields[0].first, let group = Int32(fields[2]) else { return nil }
        return (state, group)
    }

    /// `pid`'s command line, arguments joined by spaces ("" when it is gone).
    private static func commandLine(_ pid: Int32) -> String {
        guard let bytes = ProcFiles.read("/proc/\(pid)/cmdline") else { return "" }
        return String(decoding: bytes.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
    }

    /// The live processes in `groups` whose `DBUS_SESSION_BUS_ADDRESS` names this session bus: what the launcher
    /// and the session daemon spawned, and nothing that merely reuses a group id.
    private static func processes(inGroups groups: [Int32], busIdentity marker: String) -> Set<Int32> {
        guard !groups.isEmpty, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else {
            return []
        }
        var result: Set<Int32> = []
        for entry in entries {
            guard let pid = Int32(entry), pid != getpid(), let stat = processStat(pid), groups.contains(stat.group),
                stat.state != "Z", let environ = ProcFiles.read("/proc/\(pid)/environ")
            else { continue }
            let prefix = Array("DBUS_SESSION_BUS_ADDRESS=".utf8)
            for variable in environ.split(separator: 0) where variable.starts(with: prefix) {
                if busIdentity(String(decoding: variable.dropFirst(prefix.count), as: UTF8.self)) == marker {
                    result.insert(pid)
                }
            }
        }
        return result
    }

    /// The environment variable that marks the daemons xclaw started, with their display.
    static let marker = "XCLAW_A11Y_DISPLAY"

    /// Ends the bus daemons (session and accessibility `dbus-daemon`, the launcher, the registry) xclaw started for a
    /// display that no longer runs: what a test process or an xclaw killed before its clean-up left behind. A display counts as
    /// running while the pid in its X lock file (`/tmp/.XN-lock`) is alive. Returns how many were ended.
    @discardableResult
    public static func reapOrphans() -> Int {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return 0 }
        let names: Set<String> = ["dbus-daemon", "at-spi-bus-laun", "at-spi2-registr"]
        var orphans: [Int32] = []
        for entry in entries {
            guard let pid = Int32(entry), pid != getpid(),
                let comm = ProcFiles.read("/proc/\(pid)/comm"),
                names.contains(String(decoding: comm, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
                let environ = ProcFiles.read("/proc/\(pid)/environ")
            else { continue }
            let prefix = Array("\(marker)=".utf8)
            guard let variable = environ.split(separator: 0).first(where: { $0.starts(with: prefix) }) else { continue }
            let display = String(decoding: variable.dropFirst(prefix.count), as: UTF8.self)
            // Only local displays (":N" or ":N.S"); a remote one cannot be checked from here.
            guard display.hasPrefix(":"), let number = Int(display.dropFirst().prefix { $0 != "." }) else { continue }
            guard !serverRuns(display: number) else { continue }
            orphans.append(pid)
        }
        Subprocess.terminate(Set(orphans), grace: .seconds(1), isAlive: isAlive)
        return orphans.count
    }

    /// Whether an X server runs for display `number`: the pid in its lock file is alive, or (an Xvfb started with
    /// `-displayfd`, as xclaw starts them, writes no lock file) its socket accepts a connection.
    private static func serverRuns(display number: Int) -> Bool {
        if let bytes = ProcFiles.read("/tmp/.X\(number)-lock"),
            let pid = Int32(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
            kill(pid, 0) == 0 || errno == EPERM
        {
            return true
        }
        return VirtualDisplay.socketAnswers(display: number)
    }

    /// A bus address without its `guid=` part, which a daemon may or may not pass on to what it spawns.
    private static func busIdentity(_ address: String) -> String {
        address.split(separator: ",").filter { !$0.hasPrefix("guid=") }.joined(separator: ",")
    }
}
