import Foundation
import Glibc
import XclawBase

/// Starts applications on a display, detached from the caller (a session of their own, no terminal, output to
/// /dev/null), and waits for their first window: what an agent on a bare display needs to open anything.
public enum AppLauncher {
    /// The program's path: as given when it contains a `/`, else the first executable of that name on `path`.
    public static func resolve(_ program: String, path: String?) throws -> String {
        if program.contains("/") {
            guard FileManager.default.isExecutableFile(atPath: program) else { throw AppError.missingProgram(program) }
            return program
        }
        for directory in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw AppError.missingProgram(program)
    }

    /// The environment an application started on `display` gets: the caller's, with the display named and every
    /// toolkit told to use X (a `WAYLAND_DISPLAY` inherited from a desktop session would open GTK and Qt apps there).
    public static func environment(_ base: [String: String], display: String) -> [String: String] {
        var environment = SecretEnvironment.stripped(base)
        environment["DISPLAY"] = display
        environment["WAYLAND_DISPLAY"] = nil
        environment["GDK_BACKEND"] = "x11"
        environment["QT_QPA_PLATFORM"] = "xcb"
        return environment
    }

    /// Starts `command` with `environment` (which names the display) in a session of its own and returns its pid. A
    /// thread reaps it when it exits, so a long-lived caller (the daemon, an agent) collects no zombies; a caller that
    /// exits first leaves it running, adopted by init.
    public static func launch(_ command: [String], environment: [String: String]) throws -> Int32 {
        guard let program = command.first else { throw AppError.notLaunchable("the command", why: "it is empty") }
        let executable = try resolve(program, path: environment["PATH"])
        let child = try Subprocess.spawn(
            [executable] + command.dropFirst(), stdin: .null, stdout: .null, stderr: .null, environment: environment,
            group: .newSession)
        let pid = child.pid
        Thread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }.start()
        return pid
    }

    /// The first mapped top-level window of `pid` or of a process it started (a launcher script's program), polled
    /// every 50 ms until `timeout` seconds have passed.
    public static func waitForWindow(pid: Int32, manager: WindowManager, timeout: Double) throws -> WindowInfo {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while true {
            if let window = try manager.list().first(where: { $0.pid.map { descends(Int32($0), from: pid) } ?? false })
            {
                return window
            }
            guard ContinuousClock.now < deadline else { throw AppError.noWindow(pid: pid, seconds: timeout) }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Whether `pid` is `ancestor` or one of its descendants, by the parent links in /proc.
    static func descends(_ pid: Int32, from ancestor: Int32) -> Bool {
        var current = pid
        for _ in 0..<64 {
            if current == ancestor { return true }
            guard current > 1, let stat = try? String(contentsOfFile: "/proc/\(current)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            // After "pid (comm) state ppid": the command may hold spaces and parentheses, so read after the last ")".
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, let parent = Int32(fields[1]) else { return false }
            current = parent
        }
        return false
    }
}
