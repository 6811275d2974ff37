import CXclawSystem
import Glibc
import XclawHandoff
import XclawWire

/// What the front knows of its invocation, and how it becomes the full binary.
struct Front {
    /// The arguments, `--no-daemon` taken out.
    var arguments: [String]
    /// The environment.
    let environment: [String: String]
    /// `--no-daemon` or `XCLAW_NO_DAEMON=1`: run in-process whatever runs.
    let noDaemon: Bool

    init(arguments: [String], environment: [String: String]) {
        let end = arguments.firstIndex(of: "--") ?? arguments.endIndex
        let flagged = arguments[..<end].contains("--no-daemon")
        self.arguments = arguments[..<end].filter { $0 != "--no-daemon" } + arguments[end...]
        self.environment = environment
        let variable = environment["XCLAW_NO_DAEMON"] ?? ""
        noDaemon = flagged || !(variable.isEmpty || variable == "0")
    }

    /// The process environment as a dictionary.
    static func environment() -> [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }

    /// The directory of this binary, through `/proc/self/exe`.
    static func directory() -> String {
        var buffer = [Int8](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return "." }
        let path = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return String(path[..<slash])
    }

    /// Replaces this process with `xclaw-core`, the same arguments given; never returns.
    func becomeCore() -> Never {
        let core = Front.directory() + "/xclaw-core"
        let argv = ([core] + arguments).map { strdup($0) } + [nil]
        execv(core, argv)
        Front.fail(
            "cannot run \(core) (\(String(cString: strerror(errno)))): install it beside xclaw", status: 5,
            json: asksJSON)
    }

    /// Starts a daemon for the commands to come when none runs and the policy (`AutoStartPolicy`) allows: runs
    /// `xclaw-core daemon start --auto` and waits for it. The first start in a state directory says so once on
    /// stderr, with how to turn it off. False (the command runs in-process) when the policy says off or the start
    /// failed (its error is on stderr already); a setting that means nothing ends the command (exit 2).
    func startDaemon() -> Bool {
        let policy: AutoStartPolicy
        do { policy = try AutoStartPolicy.load(environment: environment) } catch {
            Front.fail("\(error)", status: 2, json: asksJSON)
        }
        guard policy.mode == .auto else { return false }
        let core = Front.directory() + "/xclaw-core"
        let words: [String] = [core, "daemon", "start", "--auto"]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // Nothing of the asker's but stderr: a daemon that held a `$(xclaw …)` pipe or a harness's descriptor would
        // keep its reader waiting for as long as it lives.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        xclaw_spawn_closefrom(&actions, 3)
        var pid: pid_t = 0
        let failed = posix_spawn(&pid, core, &actions, nil, argv, environ)
        guard failed == 0 else {
            Front.notice("could not run \(core) (\(String(cString: strerror(failed)))); running in-process")
            return false
        }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        var code: Int32 = 0
        guard xclaw_wait_status(raw, &code) == 1, code == 0 else {
            Front.notice("could not start a daemon (above); running in-process")
            return false
        }
        if let state = DaemonHandoff.stateDirectory(environment) {
            let marker = open(state + "/autostart.noticed", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if marker >= 0 {
                close(marker)
                let stays =
                    policy.idleExitSeconds == 0
                    ? "it stays until `xclaw daemon stop` (daemon_idle_exit = 0)"
                    : "it exits after " + Self.spoken(policy.idleExitSeconds)
                        + " without a command (`xclaw daemon stop` ends it now)"
                Front.notice(
                    "started a daemon to serve this and later commands faster; \(stays). To run every command "
                        + "in-process instead: daemon = off in \(policy.configPath), or XCLAW_NO_DAEMON=1")
            }
        }
        return true
    }

    /// A number of seconds as the notice says it ("15 min"); 0 is never.
    static func spoken(_ seconds: Int) -> String {
        if seconds % 3600 == 0 { return "\(seconds / 3600) h" }
        if seconds % 60 == 0 { return "\(seconds / 60) min" }
        return "\(seconds) s"
    }

    /// Writes a line to stderr.
    static func notice(_ text: String) {
        let line = "xclaw: " + text + "\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }

    /// `--help` or `-h` among the options: help is not worth starting a daemon for.
    var asksHelp: Bool { arguments.prefix { $0 != "--" }.contains { $0 == "--help" || $0 == "-h" } }

    /// `--json` among the options (after `--` it is an operand): a failure the front itself reports then also goes to
    /// stdout as the JSON error object `xclaw-core` prints (`JSONErrorObject`).
    var asksJSON: Bool { arguments.prefix { $0 != "--" }.contains("--json") }

    /// Ends the command with `status` after saying `text` on stderr, and on stdout as a JSON error object when `json`.
    static func fail(_ text: String, status: Int32, json: Bool) -> Never {
        notice(text)
        if json {
            let line = Self.errorObject("xclaw: " + text, status: status)
            _ = line.withCString { write(1, $0, strlen($0)) }
        }
        exit(status)
    }

    /// The JSON error object's line, keys sorted as `xclaw-core` writes them.
    static func errorObject(_ message: String, status: Int32) -> String {
        let kinds: [Int32: String] = [1: "not_found", 2: "usage", 3: "display", 4: "api", 5: "internal"]
        let kind = kinds[status] ?? "failed"
        let error: [(String, WireJSON)] = [
            ("exit_code", .number(Double(status))), ("kind", .string(kind)), ("message", .string(message)),
        ]
        return WireJSON.object([("error", .object(error))]).text + "\n"
    }
}
