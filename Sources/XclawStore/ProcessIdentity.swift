import Foundation

/// Who a pid really is: the boot id plus the process's start time, so a pid the kernel reused for another process
/// (or this process's own pid after a restart) is not taken for the process that started a session.
enum ProcessIdentity {
    /// This boot's id, or nil when /proc is unavailable.
    static let bootID: String? = {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else {
            return nil
        }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty ? nil : id
    }()

    /// This machine's name (`gethostname`): a session records it, so a fleet sharing one database judges only its
    /// own host's sessions by their pids (another host's pid means nothing here; its worker's heartbeat says whether
    /// it still runs). Containers of one node share the boot id, so the name is what tells them apart.
    static let host: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(cString: buffer)
        return name.isEmpty ? "localhost" : name
    }()

    /// This process's identity, computed once.
    static let current: String? = of(pid: getpid())

    /// `BOOTID:STARTTIME` for a live pid, or nil when it is gone or /proc cannot tell.
    static func of(pid: Int32) -> String? {
        guard let boot = bootID, let start = startTime(pid: pid) else { return nil }
        return "\(boot):\(start)"
    }

    /// The start time in clock ticks since boot (field 22 of /proc/PID/stat).
    static func startTime(pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let paren = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name start at field 3 (state); the name itself may hold spaces and parentheses.
        let fields = stat[stat.index(after: paren)...].split(separator: " ")
        let index = 22 - 3
        return fields.count > index ? String(fields[index]) : nil
    }

    /// Whether the process that recorded `identity` under `pid` is certainly gone.
    static func isGone(pid: Int32, identity: String?) -> Bool {
        guard pid > 0 else { return true }  // never a real process (and kill(0, 0) would probe our own group)
        if let identity, let boot = bootID, !identity.hasPrefix(boot + ":") { return true }  // recorded before a reboot
        if pid == getpid() {
            // Our own pid: a session of this process is alive; one recorded by an earlier holder of the pid is not.
            guard let identity, let current else { return false }
            return identity != current
        }
        if kill(pid, 0) == -1, errno == ESRCH { return true }
        // Alive (or not ours to signal): still gone if the kernel handed the pid to another process since.
        guard let identity, let now = of(pid: pid) else { return false }
        return identity != now
    }
}
