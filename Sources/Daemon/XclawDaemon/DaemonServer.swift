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
    private let started: ContinuousClock.Instant
    private let stopping = Atomic<Bool>(false)
    private let running = Atomic<Int>(0)
    private let logger = Logger(label: "xclaw.daemon")
    /// The displays it keeps.
    public let displays = ResidentDisplays()
    /// The web view, once the surface started one.
    public let web = Mutex<DaemonWebStatus?>(nil)
    /// Runs one command's arguments and returns its exit status, inside the request's `Invocation` and host.
    private let execute: @Sendable ([String]) -> Int32
    /// Lost X connections after which it re-executes itself (`DaemonRecycling`); nil: never (a server in a test).
    public let recycleAfter: Int?
    /// What the previous image handed over, when this one was started by a recycle.
    public let inherited: DaemonHandover?
    /// Its work in flight: what the surface runs in the daemon (the web view, MCP, the scheduler) marks itself here,
    /// so a recycle waits for it.
    public let activity: DaemonActivity
    /// The listener's thread waits on this pipe too: a byte when work ended or `stop` was called.
    private let wake: (read: Int32, write: Int32)
    /// Dropped connections at which it next re-executes itself (raised by the limit after a failed exec).
    private let threshold: Atomic<Int>
    private let hook = Mutex<DaemonRecycleHook?>(nil)
    /// Held by a recycle from its last look at `stopping` through the exec, and by `stop` to set it: a stop never
    /// falls between the two, to be lost in the exec.
    private let execGate = Mutex(())
    /// The signals that stop the daemon: held blocked across the exec, so one that arrives meanwhile stops the new
    /// image.
    private static let stopSignals = [SIGTERM, SIGINT]
    /// What the first image inherited from its parent (descriptors not close-on-exec): passed on at each recycle
    /// as it came, e.g. a harness's lifeline whose closing tells it the daemon exited.
    private let passedOn: [Int32]
    /// How long it stays with no command asked of it (a daemon a command started); nil: until stopped.
    public let idleExit: Duration?
    /// Connections being served now.
    private let connections = Atomic<Int>(0)
    /// When the last connection ended (or the daemon started).
    private let lastRequest = Mutex(ContinuousClock.now)
    /// What keeps an idle daemon alive beyond its commands: schedules still to fire, a fleet worker's duty.
    private let keepers = Mutex<[@Sendable () -> Bool]>([])
    /// The socket file this daemon bound (device and inode): on leaving it removes that file only, never one a
    /// newer daemon bound at the same path meanwhile.
    private let boundSocket: (device: UInt, inode: UInt)?

    /// Takes the socket: refuses (`alreadyRunning`) when a daemon answers there, removes a stale one; or, in an
    /// image a recycle started (`XCLAW_DAEMON_HANDOVER`), the listening socket it inherited and the state handed
    /// over with it. `execute` runs a command line (the surface's own parser, so a served command is the same
    /// command); `recycleAfter`: lost X connections after which it re-executes itself (nil: never).
    public init(
        socketPath: String, version: String, recycleAfter: Int? = nil, idleExit: Duration? = nil,
        execute: @escaping @Sendable ([String]) -> Int32
    ) throws {
        self.execute = execute
        self.idleExit = idleExit
        let pipe = try Subprocess.pipe()
        _ = fcntl(pipe.write, F_SETFL, O_NONBLOCK)  // a full pipe already wakes the thread: never wait to add
        wake = pipe
        activity = DaemonActivity(wake: pipe.write)
        // In the first image, what is open without close-on-exec now came from the parent (nothing of the
        // daemon's own is opened so).
        let (inheritedListener, handover) = Self.takeHandover(logger: logger)
        passedOn = handover?.descriptors ?? ProcessImage.descriptorsPassedOnExec()
        if let inheritedListener {
            listener = inheritedListener
        } else {
            if let running = try DaemonClient(socketPath: socketPath).status() {
                throw DaemonError.alreadyRunning(pid: running.pid, socket: socketPath)
            }
            // The state directory is this user's alone (checked), so the file there is ours to replace.
            unlink(socketPath)
            listener = try UnixSocket.listen(path: socketPath)
        }
        inherited = handover
        boundSocket = Self.identity(of: socketPath)
        started = ContinuousClock.now - .seconds(handover?.uptime ?? 0)
        self.socketPath = socketPath
        self.version = version
        self.recycleAfter = recycleAfter
        threshold = Atomic(recycleAfter ?? Int.max)
        // Keys `keydown` left down go with the daemon: it does not leave while they are held.
        let kept = displays
        keepers.withLock { $0.append { kept.holdInput } }
        if let handover {
            // Before any request: a selection taken again must not override one a new request sets.
            displays.resume(handover.selections, displays: handover.displays, reconnects: handover.reconnects)
            ProcessImage.reapWhenTheyEnd(ProcessImage.children())
            if ProcessImage.takePendingSignals(Self.stopSignals) {
                logger.info("a stop signal arrived during the recycle: stopping")
                stop()
            }
        }
    }

    /// The listener and state an earlier image handed over (`XCLAW_DAEMON_HANDOVER=LISTENER,STATE`), unset at
    /// once so nothing this image starts sees it; (nil, nil) when there are none, or they are not what they should
    /// be (then the daemon starts afresh).
    private static func takeHandover(logger: Logger) -> (UnixSocket?, DaemonHandover?) {
        guard let value = getenv(DaemonRecycling.handoverVariable).map({ String(cString: $0) }) else {
            return (nil, nil)
        }
        unsetenv(DaemonRecycling.handoverVariable)
        let numbers = value.split(separator: ",").compactMap { Int32($0) }
        guard numbers.count == 2, let listener = UnixSocket.adopt(listening: numbers[0]) else {
            logger.warning(
                "\(DaemonRecycling.handoverVariable) names no inherited listening socket; starting afresh",
                metadata: ["value": "\(value)"])
            return (nil, nil)
        }
        do {
            guard numbers[1] > 2 else { throw ProcessImageError.inherited("descriptor \(numbers[1])") }
            let data = try ProcessImage.readAndClose(numbers[1])
            return (listener, try JSONDecoder().decode(DaemonHandover.self, from: data))
        } catch {
            // The socket is kept whatever else was lost: whoever waits in its backlog is served.
            logger.error("the recycled daemon lost its handed-over state", metadata: ["error": "\(error)"])
            return (
                listener,
                DaemonHandover(
                    recycles: 1, uptime: 0, reconnects: 0, descriptors: ProcessImage.descriptorsPassedOnExec(),
                    displays: [], selections: [], surface: nil)
            )
        }
    }

    /// Sets what the surface does around a recycle: `prepare` runs on the listener's thread with no work in
    /// flight, stops what must not outlive this image (the web view, so the next image can listen on its port
    /// again) and returns what the next image's surface gets back as `inherited?.surface` (in an in-memory file:
    /// never argv, the environment or a log); `resume` restarts what `prepare` stopped when the exec failed.
    public func onRecycle(prepare: @escaping @Sendable () -> Data?, resume: @escaping @Sendable () -> Void) {
        hook.withLock { $0 = DaemonRecycleHook(prepare: prepare, resume: resume) }
    }

    /// Whether a peer of `uid` may talk to a daemon of `owner`: only the same user. The seam the tests use for a
    /// second user when the machine has none to switch to.
    public static func authorize(peer uid: uid_t, owner: uid_t = getuid()) -> Bool { uid == owner }

    /// Serves until `stop` (a request, or SIGTERM/SIGINT through the caller); each connection on its own thread.
    /// Between connections, once the lost X connections reach `recycleAfter` and nothing is in flight, it
    /// re-executes itself (`recycle`).
    public func run() {
        logger.info(
            inherited == nil ? "listening" : "listening again after a recycle",
            metadata: ["socket": "\(socketPath)", "pid": "\(getpid())"])
        // Leaving when idle: the socket file is gone, so no new asker finds this daemon (a command then starts a new
        // one), and whoever connected before it went is still served before the listener closes.
        var leaving = false
        while !isStopping {
            var fds = [
                pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
            ]
            // Every few seconds too: a connection dropped outside any work (a watched screen's) counts as well; and
            // when the idle time runs out.
            let ready = poll(&fds, 2, leaving ? 20 : pollTimeout())
            if isStopping { break }
            if ready < 0 {
                if errno != EINTR { Thread.sleep(forTimeInterval: 0.01) }
                continue
            }
            if fds[1].revents != 0 {
                var bytes = [UInt8](repeating: 0, count: 64)
                _ = read(wake.read, &bytes, bytes.count)
            }
            if fds[0].revents != 0 {
                guard let connection = listener.accept() else { break }
                if isStopping {
                    connection.close()
                    break
                }
                // Never refused: only this thread closes the gate, and it is here.
                _ = activity.begin()
                connections.add(1, ordering: .sequentiallyConsistent)
                Thread {
                    self.serve(connection)
                    self.connections.subtract(1, ordering: .sequentiallyConsistent)
                    self.activity.end()
                }.start()
                continue
            }
            if leaving {
                // Nothing served and nothing of its own running (a scheduled run that began meanwhile ends first).
                if connections.load(ordering: .sequentiallyConsistent) == 0, running.load(ordering: .relaxed) == 0 {
                    stop()
                }
                continue
            }
            recycleIfDue()
            if idleExitDue() {
                logger.info("no command for \(idleExit.map { "\($0)" } ?? ""): leaving (`daemon_idle_exit`)")
                unlinkOwnSocket()
                leaving = true
            }
        }
        listener.close()
        unlinkOwnSocket()
        displays.close()
        logger.info("stopped")
    }

    /// The device and inode of the file at `path`; nil when there is none.
    private static func identity(of path: String) -> (device: UInt, inode: UInt)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt(info.st_dev), UInt(info.st_ino))
    }

    /// Removes the socket file this daemon bound, if it is still the one at the path.
    private func unlinkOwnSocket() {
        guard let bound = boundSocket, let now = Self.identity(of: socketPath), bound == now else { return }
        unlink(socketPath)
    }

    /// Keeps the daemon while `condition` holds, however long no command came (idle exit only).
    public func keepAlive(while condition: @escaping @Sendable () -> Bool) {
        keepers.withLock { $0.append(condition) }
    }

    /// Whether it has been idle for `idleExit`: no connection, no run of its own, nothing keeping it.
    private func idleExitDue() -> Bool {
        guard let idleExit, connections.load(ordering: .sequentiallyConsistent) == 0,
            running.load(ordering: .relaxed) == 0, ContinuousClock.now - lastRequest.withLock({ $0 }) >= idleExit
        else { return false }
        return !keepers.withLock { $0 }.contains { $0() }
    }

    /// The listener's wait: 5 s, or less when the idle time runs out sooner.
    private func pollTimeout() -> Int32 {
        guard let idleExit else { return 5000 }
        let left = idleExit - (ContinuousClock.now - lastRequest.withLock { $0 })
        return Int32(max(10, min(5000, left.milliseconds.rounded(.up))))
    }

    /// Re-executes the daemon when the connections dropped reached the threshold and nothing is in flight: the
    /// surface's `prepare`, the displays readied, the state written to an in-memory file, then `execve` of
    /// `/proc/self/exe` with the same arguments, the listening socket and that file inherited. Returns only when
    /// it was not due, or the exec failed (logged; it goes on serving and tries again after `recycleAfter` more).
    private func recycleIfDue() {
        guard let limit = recycleAfter else { return }
        let dropped = DisplayConnection.census.dropped
        guard dropped >= threshold.load(ordering: .relaxed), activity.closeIfIdle() else { return }
        let recycles = (inherited?.recycles ?? 0) + 1
        logger.info(
            "recycling: re-executing in place to free what lost X connections hold",
            metadata: [
                "recycle": "\(recycles)", "dropped": "\(dropped)", "limit": "\(limit)",
                "rss_bytes": "\(Self.residentBytes())",
            ])
        let surface = hook.withLock { $0 }?.prepare()
        let handover = DaemonHandover(
            recycles: recycles, uptime: (ContinuousClock.now - started) / .seconds(1),
            reconnects: displays.reconnects, descriptors: passedOn, displays: displays.names,
            selections: displays.prepareForRecycle(), surface: surface)
        do {
            let state = try ProcessImage.memoryFile(
                named: "xclaw-daemon-handover", holding: try JSONEncoder().encode(handover))
            defer { close(state) }
            var environment = ProcessInfo.processInfo.environment
            environment[DaemonRecycling.handoverVariable] = "\(listener.descriptor),\(state)"
            try execGate.withLock { _ in
                // A stop (SIGTERM, `daemon stop` cannot: nothing is accepted now) while it prepared: no exec.
                guard !isStopping else { return }
                try ProcessImage.reexecute(
                    arguments: CommandLine.arguments, environment: environment,
                    keeping: [listener.descriptor, state] + passedOn, holding: Self.stopSignals)
            }
            logger.info("stopping instead of recycling")
        } catch {
            logger.error(
                "the recycle failed; serving on, to try again after \(limit) more lost connections",
                metadata: ["error": "\(error)"])
            threshold.store(dropped + limit, ordering: .relaxed)
            hook.withLock { $0 }?.resume()
            activity.reopen()
        }
    }

    /// Whether `stop` was called: the daemon's own threads (the scheduler) end at their next look.
    public var isStopping: Bool { stopping.load(ordering: .sequentiallyConsistent) }

    /// Runs a command the daemon starts itself (a scheduled task's run, a fleet run) as a served one, with its
    /// displays kept warm: stdin empty, stdout and stderr appended to `log`, this process's environment with
    /// `environment` over it. Returns its exit status.
    public func runOwn(_ arguments: [String], log: Int32, environment: [String: String] = [:]) -> Int32 {
        let empty = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { if empty >= 0 { close(empty) } }
        let invocation = Invocation(
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 }, directory: "/",
            descriptors: (empty, log, log),
            terminal: nil, pid: getpid(), interrupts: InterruptHub(onAbandon: { _ in }))
        // A scheduled run is inside the scheduler's own work (`activity`): this only counts it, and is refused
        // only when called outside one while a recycle is under way.
        guard activity.begin() else { return ExitStatus.internal.rawValue }
        defer { activity.end() }
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
        guard !execGate.withLock({ _ in stopping.exchange(true, ordering: .sequentiallyConsistent) }) else { return }
        unlinkOwnSocket()
        // The listener's thread is woken before the socket closes, so it never polls a number reused meanwhile.
        activity.poke()
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
                reconnects: displays.reconnects, recycles: inherited?.recycles ?? 0, recycle_after: recycleAfter),
            idle_exit_s: idleExit?.seconds)
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
            // Only commands count as use: a status poller does not keep an idle daemon.
            lastRequest.withLock { $0 = .now }
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
    /// `XCLAW_DAEMON_RECYCLE_AFTER` is not a positive integer.
    case badRecycleLimit(String)
    /// `daemon start --auto` while the config file says `daemon = off` (or `XCLAW_DAEMON=off`).
    case autoStartOff(config: String)

    /// Already running and not running are conditions (1); a refusal is bad usage (2); a start that failed, 5.
    public var exitStatus: ExitStatus {
        switch self {
        case .alreadyRunning, .notRunning, .autoStartOff: return .notFound
        case .refused, .badRecycleLimit: return .usage
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
        case .badRecycleLimit(let text):
            return "\(DaemonRecycling.limitVariable)=\(text): give a positive integer (lost X connections after which "
                + "the daemon re-executes itself; \(DaemonRecycling.defaultLimit) when unset), or unset it"
        case .autoStartOff(let config):
            return "commands start no daemon: daemon = off in \(config) or XCLAW_DAEMON=off (`xclaw daemon start` "
                + "starts one anyway)"
        }
    }
}
