import Foundation
import XclawBase
import XclawWire

/// What the CLI and the daemon say to each other: one JSON object per line each way. The version is checked first,
/// so a CLI and a daemon of different builds say so instead of misreading each other.
///
/// A `run` request comes with the CLI's stdin, stdout and stderr (and its terminal, when it has one) attached as
/// descriptors (SCM_RIGHTS): the command writes to them directly, so its output is the same bytes as in-process.
/// While it runs, each byte the CLI sends is a signal it received (the byte is the signal's number: 2 for Ctrl-C, 15 for
/// SIGTERM), and its hanging up is SIGHUP. The reply carries the exit status: the command's, or 128 + the signal when
/// the command does not handle it (it would have ended the process in-process).
public enum DaemonProtocol {
    /// Bumped whenever a request or a reply changes shape: `DaemonWire.version`, the one number the front shares.
    public static let version = DaemonWire.version
    /// The longest request line taken (arguments and environment included): a longer one is answered with an error
    /// naming this limit, and the front (which reads the same `DaemonWire.maximumRequest`) does not send one but runs
    /// the command in-process.
    public static let maximumRequest = DaemonWire.maximumRequest
}

/// One request.
public struct DaemonRequest: Codable, Sendable, Hashable {
    /// What to do: report `DaemonStatus`, stop after answering (with the status it had), or run a command.
    public enum Operation: String, Codable, Sendable { case status, stop, run }

    /// The protocol version of the asking CLI.
    public var version: Int
    /// What it asks for.
    public var op: Operation
    /// For `run`: the command's arguments, without the program name.
    public var arguments: [String]?
    /// For `run`: the CLI's environment.
    public var environment: [String: String]?
    /// For `run`: the CLI's working directory.
    public var directory: String?
    /// For `run`: the CLI's process id.
    public var pid: Int32?

    /// A request of this build's protocol.
    public init(_ op: Operation) { (version, self.op) = (DaemonProtocol.version, op) }

    /// A `run` request of this build's protocol.
    public init(run arguments: [String], environment: [String: String], directory: String, pid: Int32) {
        (version, op) = (DaemonProtocol.version, .run)
        (self.arguments, self.environment, self.directory, self.pid) = (arguments, environment, directory, pid)
    }
}

/// One reply.
public struct DaemonReply: Codable, Sendable, Hashable {
    /// The daemon's protocol version.
    public var version: Int
    /// Nil when the request was served.
    public var error: String?
    /// The status, for `status` and `stop`.
    public var status: DaemonStatus?
    /// The command's exit status, for `run`.
    public var exit: Int32?
}

/// What `xclaw daemon status` reports.
public struct DaemonStatus: Codable, Sendable, Hashable {
    /// The daemon's process id.
    public var pid: Int32
    /// Its socket.
    public var socket: String
    /// xclaw's version.
    public var version: String
    /// Seconds since it started.
    public var uptime_s: Double
    /// The displays it holds connections to.
    public var displays: [String]
    /// Its resident memory, in bytes.
    public var rss_bytes: Int
    /// Commands it is running now.
    public var running: Int?
    /// Text blocks held in the OCR caches of its displays (each cache keeps at most `OCRCache.capacity` after
    /// trimming, 6,000 by default).
    public var ocr_blocks: Int?
    /// Full reads of accessibility trees so far (a warm snapshot with no tree event in between reads none).
    public var tree_reads: Int?
    /// The web view, when it runs (`daemon start --web`).
    public var web: DaemonWebStatus?
    /// Its X connections: open, dropped after their server went away, reconnects, and its recycles.
    public var x_connections: DaemonConnectionStatus?
    /// Seconds without a command after which it leaves (a daemon a command started); absent: it stays.
    public var idle_exit_s: Double?
}

/// The daemon's X connections, so a leak across X server restarts shows.
public struct DaemonConnectionStatus: Codable, Sendable, Hashable {
    /// Connections open in the daemon (its kept displays', the web view's screens', selection owners').
    public var open: Int
    /// Connections whose server went away, in this image of the daemon: each closed its socket and XCB's buffers,
    /// and left Xlib's structure (40 to 85 KB of resident memory each; freeing it after a loss corrupted the heap).
    /// One per loss of a connection, no descriptor. Back to 0 after a recycle, which gives that memory back.
    public var dropped: Int
    /// Times a kept display was opened again after its server went away, over the daemon's life (recycles
    /// included).
    public var reconnects: Int
    /// Times the daemon re-executed itself (same pid) to give back what `dropped` connections hold.
    public var recycles: Int?
    /// The `dropped` count at which it does (`XCLAW_DAEMON_RECYCLE_AFTER`, 256 by default).
    public var recycle_after: Int?

    /// A count.
    public init(open: Int, dropped: Int, reconnects: Int, recycles: Int? = nil, recycle_after: Int? = nil) {
        (self.open, self.dropped, self.reconnects) = (open, dropped, reconnects)
        (self.recycles, self.recycle_after) = (recycles, recycle_after)
    }
}

/// Where the daemon's web view (and MCP over HTTP) listens, and its token. Only the daemon's own user can ask
/// (the socket is 0600 and checked), so the token may travel here.
public struct DaemonWebStatus: Codable, Sendable, Hashable {
    /// The dashboard's address to open, the token in its fragment (`http://127.0.0.1:PORT/#token=TOKEN`): a
    /// browser never sends a fragment, and the page keeps the token in its own origin's storage, never a cookie.
    public var url: String
    /// The token every request needs (`Authorization: Bearer`; the page sends it so).
    public var token: String
    /// MCP over streamable HTTP (`Authorization: Bearer TOKEN`).
    public var mcp: String

    /// A status for the server at `base` (`http://HOST:PORT/`).
    public init(base: String, token: String) {
        (self.url, self.token) = (base + "#token=" + token, token)
        mcp = base + "mcp"
    }

    /// The server's address without the token.
    public var base: String { url.split(separator: "#", maxSplits: 1).first.map(String.init) ?? url }

    /// The text status's line: the address without the token (text output lands in logs and scrollback).
    public var summary: String { "web view: \(base) (web.url of `xclaw daemon status --json` carries the token)" }
}

/// Where the daemon of this user listens: `daemon.sock` in the checked state directory (`$XCLAW_STATE_DIR`, else
/// `$XDG_RUNTIME_DIR/xclaw`, else `/tmp/xclaw-UID`), which only this user can write.
public enum DaemonPaths {
    /// The socket path; throws when the state directory is planted.
    public static func socket() throws -> String {
        try PrivateFiles.directory(XclawPaths.stateDirectory()).appendingPathComponent("daemon.sock").path
    }

    /// Takes the lock that makes starts one at a time (`daemon.start.lock`, waited for); close the descriptor to
    /// release it. Close-on-exec, so the daemon a start spawns does not hold it.
    public static func takeStartLock() throws -> Int32 {
        let path = try PrivateFiles.directory(XclawPaths.stateDirectory()).appendingPathComponent("daemon.start.lock")
            .path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw DaemonError.failed("cannot open \(path): \(Errno.current)", log: path) }
        while flock(fd, LOCK_EX) != 0 && errno == EINTR {}
        return fd
    }

    /// Where a daemon started in the background writes its log.
    public static func log() throws -> String {
        try PrivateFiles.directory(XclawPaths.stateDirectory()).appendingPathComponent("daemon.log").path
    }

    /// The web view's token (0600).
    public static func webToken() throws -> String {
        try PrivateFiles.directory(XclawPaths.stateDirectory()).appendingPathComponent("web.token").path
    }

    /// There while the daemon's web view runs: the front then hands even plain input to the daemon, so the web
    /// view's action log shows it.
    public static func webMarker() throws -> String {
        try PrivateFiles.directory(XclawPaths.stateDirectory()).appendingPathComponent("web.on").path
    }

    /// Where the daemon's scheduled runs write what they print.
    public static func scheduleLog() throws -> String {
        try PrivateFiles.directory(XclawPaths.stateDirectory()).appendingPathComponent("schedule.log").path
    }
}
