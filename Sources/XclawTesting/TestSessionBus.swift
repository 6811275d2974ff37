import Foundation
import XclawBase

/// A private D-Bus session bus of a test's own (`dbus-daemon` with a config written here), with a home of its own
/// (HOME, XDG_* under one temporary directory), so the services it starts (evolution-data-server, a notification
/// server, an MPRIS player) keep their state there and nothing system-wide is touched. Which services the bus may
/// start on demand is the test's choice: none, the system's standard ones, or service files the test writes.
public final class TestSessionBus: StoppableScene, @unchecked Sendable {
    /// What the bus may start when a name is first called.
    public enum Activation: Sendable, Equatable {
        /// Nothing: a service runs only when the test starts it (an absent service stays absent).
        case none
        /// The standard session services of this machine (`/usr/share/dbus-1/services`: evolution-data-server's).
        case standard
    }

    /// The temporary directory holding the bus's socket, config, home and the services' state.
    public let directory: String
    /// The bus address (`unix:path=…`).
    public let address: String
    /// The environment a client of this bus runs with: the bus address, HOME and XDG directories under `directory`
    /// (on top of the process's PATH and locale).
    public let environment: [String: String]
    /// The directory of service files the test may add to (`addService`), read by the bus on every activation.
    public let servicesDirectory: String
    private let daemon: Subprocess
    private let group: pid_t
    /// What the test started on the bus (`start`), ended with it.
    private let started = NSLock()
    private var programs: [Subprocess] = []
    private var stopped = false

    /// Starts a bus; `display` (":5") is put in the environment for services that show windows.
    public init(activation: Activation = .none, display: String? = nil) throws {
        directory =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("xclaw-bus-\(getpid())-\(UUID().uuidString.prefix(8))").path
        let home = directory + "/home"
        servicesDirectory = directory + "/services"
        for path in [
            directory, home, home + "/.config", home + "/.local/share", home + "/.cache", directory + "/run",
            servicesDirectory,
        ] {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let socket = directory + "/run/bus"
        address = "unix:path=" + socket
        let standard = activation == .standard ? "<standard_session_servicedirs/>" : ""
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <servicedir>\(servicesDirectory)</servicedir>
              \(standard)
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        let configPath = directory + "/bus.conf"
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)

        let base = ProcessInfo.processInfo.environment
        var env: [String: String] = [
            "PATH": base["PATH"] ?? "/usr/local/bin:/usr/bin:/bin",
            "LANG": base["LANG"] ?? "C.UTF-8",
            "HOME": home,
            "XDG_CONFIG_HOME": home + "/.config",
            "XDG_DATA_HOME": home + "/.local/share",
            "XDG_CACHE_HOME": home + "/.cache",
            "XDG_RUNTIME_DIR": directory + "/run",
            "DBUS_SESSION_BUS_ADDRESS": address,
            // GLib services would otherwise try dconf and a keyring over the bus.
            "GSETTINGS_BACKEND": "memory",
            "XCLAW_DAEMON": "off",
        ]
        if let display { env["DISPLAY"] = display }
        environment = env

        // Its own process group, so the services it activates (its children) end with it. It prints its address once
        // it listens: a socket file alone can exist before the listen, and a client then finds it refusing.
        daemon = try Subprocess.spawn(
            ["/usr/bin/dbus-daemon", "--config-file=" + configPath, "--nofork", "--nopidfile", "--print-address=1"],
            stdout: .pipe, stderr: .appending(toFile: directory + "/bus.log"), environment: env, group: .own)
        group = daemon.pid
        let printed = daemon.read(until: .now + .seconds(10)) { $0.contains(UInt8(ascii: "\n")) }
        guard String(decoding: printed.stdout, as: UTF8.self).contains("unix:"), daemon.isRunning else {
            stop()
            let log = (try? String(contentsOfFile: directory + "/bus.log", encoding: .utf8)) ?? ""
            throw Failure(description: "dbus-daemon did not start (\(log)); run scripts/install-deps.sh (dbus)")
        }
    }

    deinit { stop() }

    /// Why the bus could not start.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    /// Writes a service file so the bus starts `command` when `name` is first called (D-Bus activation).
    public func addService(name: String, command: [String]) throws {
        let text = "[D-BUS Service]\nName=\(name)\nExec=\(command.joined(separator: " "))\n"
        try text.write(toFile: "\(servicesDirectory)/\(name).service", atomically: true, encoding: .utf8)
    }

    /// Starts a program on this bus (its environment, plus `extra`), ended with the bus.
    @discardableResult
    public func start(_ arguments: [String], log name: String, extra: [String: String] = [:]) throws -> Subprocess {
        let program = try Subprocess.spawn(
            arguments, stdout: .appending(toFile: "\(directory)/\(name).log"), stderr: .sameAsStdout,
            environment: environment.merging(extra) { $1 })
        started.withLock { programs.append(program) }
        return program
    }

    /// What a program started with `start(_:log:)` printed so far.
    public func log(_ name: String) -> String {
        (try? String(contentsOfFile: "\(directory)/\(name).log", encoding: .utf8)) ?? ""
    }

    /// Ends the bus and what it started, and removes its directory.
    public func stop() {
        // Once only: a second stop (a class's tearDown, then deinit) must not signal a group id the kernel may have
        // handed to someone else's process since (pids wrap at 32,768, and a suite starts thousands).
        guard
            started.withLock({ () -> Bool in
                defer { stopped = true }
                return !stopped
            })
        else { return }
        for program in started.withLock({ programs }) { _ = program.kill() }
        // The group is signalled only while its leader is unreaped (running, or dead and not yet waited for), so the
        // id is still ours; the services it started may outlive it.
        if group > 0, Subprocess.endingUnreaped(group) != .unknown {
            kill(-group, SIGTERM)
            let deadline = ContinuousClock.now + .seconds(2)
            while Subprocess.endingUnreaped(group) == nil, ContinuousClock.now < deadline {
                usleep(10_000)
            }
            kill(-group, SIGKILL)
        }
        _ = daemon.kill()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
