import Foundation
import Logging
import Synchronization
import XclawBase
import XclawCommandLine
import XclawScreen

/// The resident xclaw process: listens on the user's socket, answers only its own user (SO_PEERCRED), and serves
/// requests until it is asked to stop or gets SIGTERM. One per user: a live socket means one is running; a
/// socket nobody answers on is stale and is replaced.
public final class DaemonServer: Sendable {
    /// The socket it listens on.
    public let socketPath: String
    /// xclaw's version, reported by `status`.
    public let version: String
    private let listener: UnixSocket
    private let started = ContinuousClock.now
    private let stopping = Atomic<Bool>(false)
    private let running = Atomic<Int>(0)
    private let logger = Logger(label: "xclaw.daemon")
    /// The displays it keeps.
    public let displays = ResidentDisplays()
    /// The web view, once the surface started one.
    public let web = Mutex<DaemonWebStatus?>(nil)
    /// Runs one command's arguments and returns its exit status, inside the request's `Invocation` and host.
    private let execute: @Sendable ([String]) -> Int32

    /// Takes the socket: refuses (`alreadyRunning`) when a daemon answers there, removes a stale one. `execute`
    /// runs a command line (the surface's own parser, so a served command is the same command).
    public init(socketPath: String, version: String, execute: @escaping @Sendable ([String]) -> Int32) throws {
        self.execute = execute
        if let running = try DaemonClient(socketPath: socketPath).status() {
            throw DaemonError.alreadyRunning(pid: running.pid, socket: socketPath)
        }
        // The state directory is this user's alone (checked), so the file there is ours to replace.
        unlink(socketPath)
        listener = try UnixSocket.listen(path: socketPath)
        self.socketPath = socketPath
        self.version = version
    }

    /// Whether a peer of `uid` may talk to a daemon of `owner`: only the same user. The seam the tests use for a
    /// second user when the machine has none to switch to.
    public static func authorize(peer uid: uid_t, owner: uid_t = getuid()) -> Bool { uid == owner }

    /// Serves until `stop` (a request, or SIGTERM/SIGINT through the caller); each connection on its own thread.
    public func run() {
        logger.info("listening", metadata: ["socket": "\(socketPath)", "pid": "\(getpid())"])
        while let connection = listener.accept() {
            if stopping.load(ordering: .sequentiallyConsistent) { connection.close(); break }
            Thread { self.serve(connection) }.start()
        }
        unlink(socketPath)
        displays.close()
        logger.info("stopped")
    }

    /// Whether `stop` was called: the daemon's own threads (the scheduler) end at their next look.
    public var isStopping: Bool { stopping.load(ordering: .sequentiallyConsistent) }

    /// Runs a command the daemon starts itself (a scheduled task's run) as a served one, with its displays kept
    /// warm: stdin empty, stdout and stderr appended to `log`, this process's environment. Returns its exit status.
    public func runOwn(_ arguments: [String], log: Int32) -> Int32 {
        let empty = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { if empty >= 0 { close(empty) } }
        let invocation = Invocation(
            environment: ProcessInfo.processInfo.environment, directory: "/", descriptors: (empty, log, log),
            terminal: nil, pid: getpid(), interrupts: InterruptHub(onAbandon: { _ in }))
        let host = displays.host()
        running.add(1, ordering: .relaxed)
        let status = Invocation.serve(invocation) { Hosting.$served.withValue(host) { execute(arguments) } }
        running.subtract(1, ordering: .relaxed)
        host.saveRefs()
        host.end()
        return status
    }

    /// Stops accepting and removes the socket; `run` returns.
    public func stop() {
        guard !stopping.exchange(true, ordering: .sequentiallyConsistent) else { return }
        unlink(socketPath)
        listener.close()
    }

    /// What `status` reports now.
    public func status() -> DaemonStatus {
        DaemonStatus(
            pid: getpid(), socket: socketPath, version: version,
            uptime_s: (ContinuousClock.now - started) / .seconds(1), displays: displays.names,
            rss_bytes: Self.residentBytes(), running: running.load(ordering: .relaxed),
            ocr_blocks: displays.ocrBlocks, tree_reads: displays.treeReads, web: web.withLock { $0 },
            x_connections: DaemonConnectionStatus(
                open: DisplayConnection.census.open, dropped: DisplayConnection.census.dropped,
                reconnects: displays.reconnects))
    }

    private func serve(_ connection: UnixSocket) {
        defer { connection.close() }
        let uid = (try? connection.peerUID()) ?? uid_t.max
        guard Self.authorize(peer: uid) else {
            logger.warning("refused a connection", metadata: ["uid": "\(uid)"])
            reply(
                connection,
                DaemonReply(version: DaemonProtocol.version, error: "refused: uid \(uid) is not this daemon's user"))
            return
        }
        guard let line = connection.readLine(limit: DaemonProtocol.maximumRequest, deadline: .now + .seconds(10))
        else {
            // A line past the limit is refused in words (the front then runs the command itself); a silent hang-up
            // would read as a daemon that died during the command.
            if connection.takeBufferedBytes().count >= DaemonProtocol.maximumRequest {
                for fd in connection.takeDescriptors() { close(fd) }
                reply(
                    connection,
                    DaemonReply(
                        version: DaemonProtocol.version,
                        error:
                            "the request is longer than \(DaemonProtocol.maximumRequest) bytes (a large environment?): "
                            + "run the command with --no-daemon"))
            }
            return
        }
        guard let request = try? JSONDecoder().decode(DaemonRequest.self, from: line) else {
            reply(connection, DaemonReply(version: DaemonProtocol.version, error: Self.misunderstood(line)))
            return
        }
        guard request.version == DaemonProtocol.version else {
            reply(
                connection,
                DaemonReply(
                    version: DaemonProtocol.version,
                    error: "protocol version \(request.version) is not this daemon's \(DaemonProtocol.version): "
                        + "use the xclaw that started it, or restart the daemon"))
            return
        }
        switch request.op {
        case .status:
            reply(connection, DaemonReply(version: DaemonProtocol.version, status: status()))
        case .stop:
            reply(connection, DaemonReply(version: DaemonProtocol.version, status: status()))
            stop()
        case .run:
            // Answered once: when the command ends, or earlier when it is abandoned (a signal it does not handle).
            // The reply is written under the lock, so a second caller returns only once the first one's reply is
            // sent: `run` shuts the socket down right after its own call, which would otherwise cut off the
            // listener thread's answer halfway (the asker would see the daemon hang up without one).
            let answered = Mutex<Bool>(false)
            let answer: @Sendable (Int32) -> Void = { status in
                answered.withLock { answered in
                    guard !answered else { return }
                    answered = true
                    self.reply(connection, DaemonReply(version: DaemonProtocol.version, exit: status))
                }
            }
            answer(run(request, on: connection, answer: answer))
        }
    }

    /// Runs a command with the CLI's descriptors, environment and directory. Each byte the CLI sends while it runs
    /// is a signal it received (Ctrl-C, SIGTERM), and its hanging up is SIGHUP: they reach the command through its
    /// `InterruptHub`, which gives up on (and answers for) a command that does not handle them.
    private func run(_ request: DaemonRequest, on connection: UnixSocket, answer: @escaping @Sendable (Int32) -> Void)
        -> Int32
    {
        let fds = connection.takeDescriptors()
        guard fds.count >= 3, let arguments = request.arguments, let environment = request.environment,
            let directory = request.directory
        else {
            for fd in fds { close(fd) }
            logger.warning("a run request without arguments, environment, directory or 3 descriptors")
            return ExitStatus.usage.rawValue
        }
        let hub = InterruptHub(onAbandon: answer)
        let listened = DispatchSemaphore(value: 0)
        let early = connection.takeBufferedBytes()  // signals sent right behind the request, read with it
        Thread {
            defer { listened.signal() }
            for byte in early { hub.raise(Int32(byte)) }
            var byte: UInt8 = 0
            while true {
                let count = recv(connection.descriptor, &byte, 1, 0)
                if count < 0 && errno == EINTR { continue }
                guard count == 1 else { break }
                hub.raise(Int32(byte))
            }
            hub.raise(SIGHUP)
        }.start()
        let invocation = Invocation(
            environment: environment, directory: directory, descriptors: (fds[0], fds[1], fds[2]),
            terminal: fds.count > 3 ? fds[3] : nil, pid: request.pid ?? 0, interrupts: hub)
        let host = displays.host()
        running.add(1, ordering: .relaxed)
        let status = Invocation.serve(invocation) { Hosting.$served.withValue(host) { execute(arguments) } }
        running.subtract(1, ordering: .relaxed)
        // The refs before the reply (the next command may name one); the asker's descriptors closed before it too,
        // so a pipe reading its output ends now, not after the caches are saved.
        host.saveRefs()
        for fd in fds { close(fd) }
        answer(status)
        // Then the listener is woken and waited for, so the socket closes under no reader; then the kept perceiver
        // is given back and its OCR cache saved if it grew.
        shutdown(connection.descriptor, Int32(SHUT_RDWR))
        listened.wait()
        host.end()
        return status
    }

    /// Why a line that is not a request of this build is refused: another protocol version says so; anything else
    /// (not JSON, JSON without a version) is not an xclaw request at all.
    static func misunderstood(_ line: Data) -> String {
        let expected =
            "send one JSON object per line with \"version\": \(DaemonProtocol.version) (the protocol of the xclaw "
            + "that started the daemon)"
        guard let version = try? JSONValueVersion.decode(line) else {
            return "not an xclaw request: this is xclaw's daemon socket; \(expected)"
        }
        return version != DaemonProtocol.version
            ? "protocol version \(version) is not this daemon's \(DaemonProtocol.version): use the xclaw that started it"
            : "a request this daemon does not understand: \(expected)"
    }

    private func reply(_ connection: UnixSocket, _ reply: DaemonReply) {
        guard let data = try? JSONEncoder().encode(reply) else { return }
        connection.write(data + Data("\n".utf8))
    }

    /// Resident memory from `/proc/self/statm` (pages × page size).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// Reads just the `version` of a request this build cannot decode, to tell the asker what differs.
private enum JSONValueVersion {
    struct Versioned: Decodable { var version: Int }
    static func decode(_ data: Data) throws -> Int { try JSONDecoder().decode(Versioned.self, from: data).version }
}

/// Why the daemon could not start or answer.
public enum DaemonError: ClassifiedError, Hashable {
    /// A daemon already answers on the socket.
    case alreadyRunning(pid: Int32, socket: String)
    /// None answers.
    case notRunning(socket: String)
    /// It answered with an error (another protocol version, a refusal).
    case refused(String)
    /// It did not come up in time.
    case didNotStart(log: String)
    /// It gave up while starting, saying why.
    case failed(String, log: String)

    /// Already running and not running are conditions (1); a refusal is bad usage (2); a start that failed, 5.
    public var exitStatus: ExitStatus {
        switch self {
        case .alreadyRunning, .notRunning: return .notFound
        case .refused: return .usage
        case .didNotStart, .failed: return .internal
        }
    }

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .alreadyRunning(let pid, let socket):
            return "a daemon is already running (pid \(pid), socket \(socket)); `xclaw daemon stop` stops it"
        case .notRunning(let socket): return "no daemon is running (socket \(socket)); `xclaw daemon start` starts one"
        case .refused(let why): return "the daemon refused: \(why)"
        case .didNotStart(let log): return "the daemon did not start within 30 s; see \(log)"
        case .failed(let why, let log): return "the daemon did not start: \(why) (\(log))"
        }
    }
}
