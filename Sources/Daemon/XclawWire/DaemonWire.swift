/// The daemon's wire, as both sides speak it: one JSON object per line each way, its version checked first. The
/// daemon's `DaemonProtocol` takes its version and limit from here and its Codable `DaemonRequest`/`DaemonReply`
/// carry the same keys (pinned by `WireFormatTests`); the front builds and reads lines with these.
public enum DaemonWire {
    /// Bumped whenever a request or a reply changes shape.
    public static let version = 3
    /// The longest request line the daemon takes (arguments and environment included): a longer one is answered
    /// with an error naming this limit, and the front does not send one but runs the command in-process.
    public static let maximumRequest = 1 << 20

    /// A `run` request line (newline included): the command's arguments without the program's name, the asker's
    /// environment, working directory and pid.
    public static func runRequest(
        arguments: [String], environment: [String: String], directory: String, pid: Int32
    ) -> String {
        let members: [(String, WireJSON)] = [
            ("version", .number(Double(version))), ("op", .string("run")),
            ("arguments", .array(arguments.map(WireJSON.string))),
            ("environment", .object(environment.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
            ("directory", .string(directory)), ("pid", .number(Double(pid))),
        ]
        return WireJSON.object(members).text + "\n"
    }

    /// What a reply line says, as far as the front needs it.
    public struct Reply: Equatable, Sendable {
        /// The daemon's protocol version (0 when it did not say).
        public var version: Int
        /// The command's exit status, when it ran.
        public var exit: Int32?
        /// Why it was refused, when it was.
        public var error: String?

        /// Reads one reply line; nil when it is not a JSON object.
        public init?(line: String) {
            guard let json = WireJSON.parse(line), case .object = json else { return nil }
            version = json["version"]?.integer ?? 0
            exit = json["exit"]?.integer.map { Int32(truncatingIfNeeded: $0) }
            error = json["error"]?.string
        }
    }
}
