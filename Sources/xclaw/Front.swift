import CXclawSystem
import Glibc
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

    /// Writes a line to stderr.
    static func notice(_ text: String) {
        let line = "xclaw: " + text + "\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }

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
