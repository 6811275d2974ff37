import Foundation
import XclawBase
import XclawPolling

/// A systemd user manager of a test's own (`systemd --user`), with its own session bus (the manager starts it, from
/// dbus-user-session's `dbus.socket`, and then joins it, as in a desktop session) and home, so units written to
/// `unitDirectory` can be started, watched and stopped without touching the machine's.
///
/// systemd refuses `--user` unless /run/systemd/system exists, so the manager runs in a private mount namespace with a
/// tmpfs on /run/systemd (the host's /run/systemd is never touched), and in a cgroup of its own
/// (`xclaw-test-…` under the test process's own cgroup, removed at `stop`, or by a process guard should the test
/// process be killed), so two managers at once never share a unit's cgroup (systemd kills a stopped unit's cgroup
/// whole).
public final class TestUserManager: @unchecked Sendable {
    /// The temporary directory holding the home, the runtime directory (the bus socket) and the log.
    public let directory: String
    /// What a client of the manager runs with: HOME, XDG_* under `directory`, `DBUS_SESSION_BUS_ADDRESS` (the
    /// manager's bus), PATH and locale.
    public let environment: [String: String]
    /// `$XDG_CONFIG_HOME/systemd/user`, where the test writes its units.
    public let unitDirectory: String
    /// The manager's pid.
    public var pid: pid_t { manager.pid }
    /// What was still in the manager's cgroup once it had exited (its units should all have been stopped by then),
    /// as "PID COMMAND LINE": set by `stop`, which then ends them.
    public private(set) var leftAfterExit: [String] = []
    private let manager: Subprocess
    /// Ends the manager, what it started and its cgroups should the test process be killed before `stop`.
    private let guardian: ProcessGuard?
    private let cgroups: [String]
    private var stopped = false

    /// Why the manager could not start.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    /// Starts a manager and waits (up to 20 s) until it owns `org.freedesktop.systemd1` on its bus.
    public init() throws {
        let token = "\(getpid())-\(UUID().uuidString.prefix(8))"
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-units-\(token)").path
        let home = directory + "/home", runtime = directory + "/run"
        unitDirectory = home + "/.config/systemd/user"
        for path in [directory, home, runtime, unitDirectory, home + "/.local/share", home + "/.cache"] {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let base = ProcessInfo.processInfo.environment
        environment = [
            "PATH": base["PATH"] ?? "/usr/local/bin:/usr/bin:/bin", "LANG": base["LANG"] ?? "C.UTF-8",
            "HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_DATA_HOME": home + "/.local/share",
            "XDG_CACHE_HOME": home + "/.cache", "XDG_RUNTIME_DIR": runtime,
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(runtime)/bus", "XCLAW_DAEMON": "off",
        ]
        // The unified hierarchy decides a manager's root cgroup (its own); the named v1 one only mirrors it. Each is
        // a child of this test process's own cgroup, not of the machine's root: the manager stays inside what the
        // runner (and CI) started.
        let name = "xclaw-test-\(token)"
        let own = Self.ownCgroups()
        let unified = Self.cgroupMounts().first { $0.type == "cgroup2" }.map { "\($0.path)\(own["cgroup2"] ?? "")" }
        cgroups = Self.cgroupMounts().map { mount in
            "\(mount.path)\(own[mount.type] ?? "")/\(name)".replacingOccurrences(of: "//", with: "/")
        }
        let enter =
            unified.map { "c=\($0)/\(name); mkdir \"$c\" && echo $$ > \"$c/cgroup.procs\" || true; " } ?? ""
        let script =
            enter
            + "mount -t tmpfs none /run/systemd && mkdir -p /run/systemd/system && exec /lib/systemd/systemd --user"
        manager = try Subprocess.spawn(
            ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script],
            stdout: .appending(toFile: directory + "/manager.log"), stderr: .sameAsStdout, environment: environment,
            group: .own)
        guardian = try? ProcessGuard()
        guardian?.watch(group: manager.pid)
        let cleanUp = cgroups.map { "find '\($0)' -depth -type d -exec rmdir {} + 2>/dev/null" }.joined(separator: "; ")
        _ = guardian?.onDeath(run: [
            "/bin/sh", "-c",
            (unified.map { "echo 1 > '\($0)/\(name)/cgroup.kill' 2>/dev/null; sleep 1; " } ?? "") + cleanUp,
        ])
        let ready = poll(within: .seconds(20)) {
            !self.manager.isRunning || self.busOwns("org.freedesktop.systemd1")
        }
        guard ready, manager.isRunning else {
            let log = (try? String(contentsOfFile: directory + "/manager.log", encoding: .utf8)) ?? ""
            stop()
            throw Failure(description: "systemd --user did not join its bus within 20 s: \(log)")
        }
        // In its own cgroup (systemd then moves itself one level down, into init.scope), or the test would hand the
        // runner's to systemd and see nothing of what it left.
        let placed = (try? String(contentsOfFile: "/proc/\(manager.pid)/cgroup", encoding: .utf8)) ?? ""
        if unified != nil,
            !placed.split(separator: "\n").contains(where: { $0.hasPrefix("0::") && $0.contains("/\(name)") })
        {
            stop()
            throw Failure(description: "systemd --user did not get a cgroup of its own (\(placed)): see \(directory)")
        }
    }

    deinit { stop() }

    /// Writes a unit file (`sleeper.service`) where the manager finds it.
    public func writeUnit(_ name: String, _ text: String) throws {
        try text.write(toFile: "\(unitDirectory)/\(name)", atomically: true, encoding: .utf8)
    }

    /// `systemctl --user ARGUMENTS` against this manager: the oracle. Its exit status and stdout.
    public func systemctl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let outcome = try Subprocess.run(
            ["/bin/systemctl", "--user"] + arguments, timeout: .seconds(20), environment: environment)
        let status: Int32
        if case .exited(let code) = outcome.ending { status = code } else { status = -1 }
        return (status, String(decoding: outcome.stdout, as: UTF8.self))
    }

    /// Processes still in the manager's cgroup, the manager included while it runs.
    public var members: [pid_t] {
        cgroups.flatMap { root -> [pid_t] in
            guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
            var files = ["cgroup.procs"]
            for case let path as String in walker where path.hasSuffix("/cgroup.procs") { files.append(path) }
            return files.flatMap { file in
                ((try? String(contentsOfFile: "\(root)/\(file)", encoding: .utf8)) ?? "").split(separator: "\n")
                    .compactMap { pid_t($0) }
            }
        }
    }

    /// Ends the manager (its units stopped first, through exit.target), whatever of it is left, its cgroup and directory.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        if manager.isRunning {
            // `systemctl exit` starts exit.target, which stops every unit before the manager exits (the bus's
            // Manager.Exit alone leaves them running).
            _ = try? systemctl(["exit"])
            // Killed at the deadline if it did not leave; what it started is ended below.
            _ = manager.wait(deadline: .now + .seconds(10))
        }
        _ = manager.kill()
        let left = Set(members)
        leftAfterExit = left.sorted().map { pid in
            let command = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
            return "\(pid) " + command.split(separator: "\u{0}").joined(separator: " ")
        }
        if !left.isEmpty { Subprocess.terminate(left, grace: .seconds(2)) }
        _ = poll(within: .seconds(5)) { self.members.isEmpty }
        // Deepest first: a cgroup is removed only once empty of processes and children.
        for root in cgroups {
            let walker = FileManager.default.enumerator(atPath: root)
            var dirs: [String] = []
            while let path = walker?.nextObject() as? String {
                if walker?.fileAttributes?[.type] as? FileAttributeType == .typeDirectory { dirs.append(path) }
            }
            for dir in dirs.sorted(by: { $0.count > $1.count }) { rmdir("\(root)/\(dir)") }
            rmdir(root)
        }
        try? FileManager.default.removeItem(atPath: directory)
        guardian?.dismiss()
    }

    /// Whether `name` has an owner on the manager's bus (which the first call starts, through its socket).
    private func busOwns(_ name: String) -> Bool {
        guard
            let outcome = try? Subprocess.run(
                [
                    "/usr/bin/dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus",
                    "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", "string:\(name)",
                ],
                timeout: .seconds(5), environment: environment)
        else { return false }
        return String(decoding: outcome.stdout, as: UTF8.self).contains("boolean true")
    }

    /// The machine's cgroup hierarchies (cgroup2, and v1's named `systemd` one), from this process's mount table.
    static func cgroupMounts() -> [(type: String, path: String)] {
        let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        return table.split(separator: "\n").compactMap { line in
            // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS … - TYPE SOURCE SUPEROPTIONS"
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2 else { return nil }
            let fields = halves[0].split(separator: " "), tail = halves[1].split(separator: " ")
            guard fields.count >= 5, let type = tail.first else { return nil }
            if type == "cgroup2" || (type == "cgroup" && tail.count >= 3 && tail[2].contains("name=systemd")) {
                return (String(type), String(fields[4]))
            }
            return nil
        }
    }

    /// This process's own cgroup in each hierarchy `cgroupMounts` names ("cgroup2" for `0::PATH`, "cgroup" for the
    /// named systemd one), from /proc/self/cgroup.
    static func ownCgroups() -> [String: String] {
        let lines = ((try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)) ?? "").split(separator: "\n")
        var out: [String: String] = [:]
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            let path = parts[2] == "/" ? "" : String(parts[2])
            if parts[0] == "0" && parts[1].isEmpty { out["cgroup2"] = path }
            if parts[1] == "name=systemd" { out["cgroup"] = path }
        }
        return out
    }

    /// What the host shows of /run/systemd (its entries, and the mounts on or under it): the same before and after a
    /// manager ran, since it ran in a namespace of its own.
    public static func hostRunSystemd() -> [String] {
        let entries = ((try? FileManager.default.contentsOfDirectory(atPath: "/run/systemd")) ?? []).sorted()
        let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        let mounts = table.split(separator: "\n").filter { $0.contains(" /run/systemd") }.map(String.init)
        return entries + mounts
    }
}
