import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawDaemon
import XclawDaemonServices
import XclawHandoff
import XclawMCP
import XclawRuntime
import XclawStore
import XclawWeb

/// `xclaw daemon start|stop|status|run`: the resident process, one per user.
struct DaemonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Start, stop or inspect the resident xclaw daemon (one per user, on a socket only you can use).",
        discussion: """
            Exit: 0 done; 1 `start` while one runs, or `stop`/`status` when none runs; 2 refused (another \
            protocol version, a planted state directory, a bad XCLAW_DAEMON_RECYCLE_AFTER); 5 it did not come up.

            Each X connection whose server went away keeps 40 to 85 KB that only a new process image gives back: \
            after XCLAW_DAEMON_RECYCLE_AFTER of them (a positive integer, 256 by default) the daemon re-executes \
            itself at its first idle moment, with the same pid, socket, web address and token. `daemon status \
            --json` shows x_connections: open, dropped (in this image: back to 0 after a recycle), reconnects (over \
            the daemon's life), recycles and recycle_after.
            Examples:
              xclaw daemon start  # in the background; later commands go through it
              xclaw daemon status --json
            """,
        subcommands: [Start.self, Stop.self, Status.self, RunForeground.self])

    /// `xclaw daemon start`: runs `xclaw daemon run` in a session of its own and waits until it answers.
    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "start",
            abstract: "Start the daemon in the background.",
            discussion: """
                --web also serves the web view and MCP over HTTP on ADDR (default 127.0.0.1:7878; HOST:PORT, :PORT, \
                PORT, [::1]:PORT), behind a token: `xclaw daemon status --json` prints web.url and web.token.

                You rarely need this: a command the daemon serves starts one when none runs (`--auto`), which leaves \
                after 15 minutes without a command (daemon_idle_exit = DURATION in the config file, or \
                XCLAW_DAEMON_IDLE_EXIT; 0: never). daemon = off in the config file (or XCLAW_DAEMON=off) turns that \
                off; XCLAW_NO_DAEMON=1 runs every command in-process. One started with `daemon start` stays until \
                `daemon stop` unless given --idle-exit.

                --auto exits 0 when one runs already, and 1 when the config says daemon = off.

                Examples:
                  xclaw daemon start  # prints its pid; exit 1 when one runs already
                  xclaw daemon start --web 127.0.0.1:7878  # also the web view and MCP over HTTP
                """)
        @Flag(help: "Print its status as JSON.") var json = false
        @Flag(help: "Start one as a command does: none when one runs (exit 0), leaving after daemon_idle_exit.")
        var auto = false
        @OptionGroup var idleExit: IdleExitOptions
        @OptionGroup var web: WebOptions

        func validate() throws {
            try web.validate()
            try RunForeground.validateRecycleLimit()
        }

        func run() throws {
            let socket = try DaemonPaths.socket()
            let client = DaemonClient(socketPath: socket)
            var idle = idleExit.seconds
            if auto {
                let policy: AutoStartPolicy
                do { policy = try AutoStartPolicy.load(environment: Invocation.current.environment) } catch {
                    throw ValidationError("\(error)")
                }
                guard policy.mode == .auto else { throw DaemonError.autoStartOff(config: policy.configPath) }
                idle = idle ?? policy.idleExitSeconds
            }
            // One start at a time per user: two commands that found none at once must not start two daemons (the
            // second would take the socket from the first, which then serves nobody until it leaves).
            let lock = try DaemonPaths.takeStartLock()
            defer { close(lock) }
            if let running = try client.status() {
                if auto { return try emit(running, json: json) { "daemon pid \(running.pid) runs already" } }
                throw DaemonError.alreadyRunning(pid: running.pid, socket: socket)
            }
            let log = try DaemonPaths.log()
            let executable = XclawPaths.executableDirectory.appendingPathComponent("xclaw-core").path
            let idleArguments = idle.map { ["--idle-exit", String($0)] } ?? []
            let child = try Subprocess.spawn(
                [executable, "daemon", "run"] + web.arguments + idleArguments, stdout: .appending(toFile: log),
                stderr: .sameAsStdout, group: .newSession)
            // A loaded machine (a CI run building beside it) can take a while to start a process and open the store.
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                let answered: DaemonStatus?
                do { answered = try client.status() } catch {
                    // A daemon that gives up while starting (a port taken) closes its socket on a waiting asker:
                    // its log says why.
                    if let code = Subprocess.waitForExit(child.pid, deadline: .now + .seconds(2)), code != 0 {
                        throw DaemonError.failed(DaemonLog.lastError(log) ?? "exit \(code)", log: log)
                    }
                    throw error
                }
                if let status = answered {
                    try emit(status, json: json) {
                        "started daemon pid \(status.pid) (socket \(status.socket))"
                            + (status.web.map { "\n" + $0.summary } ?? "")
                    }
                    return
                }
                // One that gave up (a port taken) says why in its log: no need to wait the whole time.
                var raw: Int32 = 0
                if waitpid(child.pid, &raw, WNOHANG) == child.pid {
                    throw DaemonError.failed(DaemonLog.lastError(log) ?? "it ended at once", log: log)
                }
                Thread.sleep(forTimeInterval: 0.02)
            }
            throw DaemonError.didNotStart(log: log)
        }
    }

    /// `xclaw daemon stop`.
    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stop", abstract: "Stop the daemon.",
            discussion: """
                Examples:
                  xclaw daemon stop  # exit 1 when none runs
                """)

        func run() throws {
            let socket = try DaemonPaths.socket()
            guard let stopped = try DaemonClient(socketPath: socket).stop() else {
                throw DaemonError.notRunning(socket: socket)
            }
            // Gone when its process is: a command right after this one must not find it still answering.
            _ = Subprocess.waitForExit(stopped.pid, deadline: .now + .seconds(10))
            writeOut("stopped daemon pid \(stopped.pid)\n")
        }
    }

    /// `xclaw daemon status`.
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status", abstract: "Say whether the daemon runs, and what it holds.",
            discussion: """
                Examples:
                  xclaw daemon status
                  xclaw daemon status --json  # pid, socket, displays, web.url and web.token, x_connections
                """)
        @Flag(help: "Print JSON (pid, socket, version, uptime_s, displays, rss_bytes).") var json = false

        func run() throws {
            let socket = try DaemonPaths.socket()
            guard let status = try DaemonClient(socketPath: socket).status() else {
                throw DaemonError.notRunning(socket: socket)
            }
            try emit(status, json: json) {
                "daemon pid \(status.pid), xclaw \(status.version), up \(Int(status.uptime_s)) s, socket "
                    + "\(status.socket), \(status.rss_bytes / 1024) KB resident, displays: "
                    + (status.displays.isEmpty ? "none" : status.displays.joined(separator: ", "))
                    + (status.web.map { "\n" + $0.summary } ?? "")
            }
        }
    }

    /// `xclaw daemon run`: the daemon in the foreground (for systemd), until SIGTERM, SIGINT or `daemon stop`.
    struct RunForeground: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run", abstract: "Run the daemon in the foreground (for systemd: examples/systemd/).",
            discussion: """
                Examples:
                  xclaw daemon run  # in the foreground, as examples/systemd/xclaw.service runs it
                  xclaw daemon run --worker --slots 2 --label zone=eu  # a fleet worker on the PostgreSQL database
                """)
        @Option(help: .hidden) var parent: Int32?
        @OptionGroup var idleExit: IdleExitOptions
        @OptionGroup var web: WebOptions
        @OptionGroup var fleet: WorkerOptions

        func validate() throws {
            try web.validate()
            try fleet.validate()
            try Self.validateRecycleLimit()
        }

        /// `XCLAW_DAEMON_RECYCLE_AFTER`, refused as bad usage before anything starts.
        static func validateRecycleLimit() throws {
            do { _ = try DaemonRecycling.limit(ProcessInfo.processInfo.environment) } catch {
                throw ValidationError("\(error)")
            }
        }

        func run() throws {
            let server = try DaemonServer(
                socketPath: try DaemonPaths.socket(), version: Xclaw.configuration.version,
                recycleAfter: try DaemonRecycling.limit(ProcessInfo.processInfo.environment),
                idleExit: idleExit.duration, execute: { CommandRunner.run(Xclaw.self, arguments: $0) })
            // A marker a killed daemon left would send plain input to a daemon without a web view. (After a recycle
            // it is this daemon's own, and the web view listens again in a moment.)
            if server.inherited == nil, let marker = try? DaemonPaths.webMarker() { unlink(marker) }
            var webView: DaemonWebView?
            if web.web {
                let handed = server.inherited?.surface.flatMap { try? JSONDecoder().decode(WebHandover.self, from: $0) }
                // xclaw's commands and MCP tools, run inside the daemon on its kept displays, counted as its work.
                let runner = MCPCommandRunner(
                    defaultDisplay: nil, displays: server.displays, activity: server.activity
                ) { server.displays.names }
                do {
                    webView = try DaemonWeb.start(
                        on: server, address: web.address, inherited: handed, mcp: MCPTools.server(runner),
                        backend: DaemonWebBackend(runner: runner))
                } catch {
                    // A recycled daemon keeps serving commands: its socket has askers waiting.
                    if server.inherited != nil {
                        DaemonWeb.lost(error)
                    } else {
                        server.stop()
                        throw error
                    }
                }
            }
            if let webView {
                // Its pages and MCP clients are not commands on the socket: a daemon serving them stays.
                server.keepAlive { true }
                server.onRecycle(prepare: { webView.handover() }, resume: { webView.resume() })
            }
            defer { webView.map(DaemonWeb.stop) }
            if let parent {
                // Test harnesses: stop when the process that started us is gone, so no daemon outlives its tests.
                Thread {
                    while kill(parent, 0) == 0 || errno == EPERM { sleep(1) }
                    server.stop()
                }.start()
            }
            DaemonScheduling.start(server)
            let worker: DaemonFleet?
            do { worker = try fleet.start(server) } catch {
                server.stop()
                throw error
            }
            // A worker serves its fleet's queue, not commands on its socket.
            if worker != nil { server.keepAlive { true } }
            signal(SIGPIPE, SIG_IGN)
            // In place when it returns (a dispatch source left a window in which a SIGTERM was ignored).
            let watch = Interrupt.watch([SIGTERM, SIGINT]) { _ in server.stop() }
            server.run()
            watch.stop()
            // A worker lets its runs in flight finish, then leaves the fleet.
            worker?.finish()
        }
    }
}

/// `--worker` and its settings, of `daemon run`: the daemon joins the fleet of its PostgreSQL database.
struct WorkerOptions: ParsableArguments {
    @Flag(help: "Join the fleet of the PostgreSQL database (XCLAW_DATABASE_URL or `database`) as a worker.")
    var worker = false
    @Option(help: "The worker's name, unique in the fleet (default: the host name).") var name: String?
    @Option(
        name: .customLong("label"), help: ArgumentHelp("A label runs can ask for (repeatable).", valueName: "key=value")
    )
    var labels: [String] = []
    @Option(help: "How many runs it takes at once (1-64).") var slots = 1
    @Option(
        name: .customLong("display-size"),
        help: ArgumentHelp("A display size it can start (repeatable; default 1920x1080).", valueName: "WxH"))
    var displaySizes: [String] = []
    @Option(
        name: .customLong("app"),
        help: ArgumentHelp(
            "An application it has (repeatable; default: the known ones on its PATH).", valueName: "name"))
    var apps: [String] = []

    func validate() throws {
        let settings = name != nil || !labels.isEmpty || slots != 1 || !displaySizes.isEmpty || !apps.isEmpty
        if settings && !worker {
            throw ValidationError("--name, --label, --slots, --display-size and --app are a worker's: add --worker")
        }
        guard (1...64).contains(slots) else { throw ValidationError("--slots must be from 1 to 64, not \(slots)") }
        if let name, name.isEmpty || name.count > 64 || name.contains(where: { $0.isWhitespace || $0 == "/" }) {
            throw ValidationError("--name must be 1-64 characters without spaces or '/', not \"\(name)\"")
        }
        _ = try parsedLabels()
        for size in displaySizes where (try? RunDisplay.privateSize("new:" + size)) == nil {
            throw ValidationError("--display-size takes WIDTHxHEIGHT (e.g. 1920x1080), not \"\(size)\"")
        }
        do { _ = try FleetWorkerOptions.lostAfter(ProcessInfo.processInfo.environment) } catch {
            throw ValidationError("\(error)")
        }
    }

    /// `--label` values as a dictionary; a value without `=` or with an empty key is refused.
    func parsedLabels() throws -> [String: String] {
        var parsed: [String: String] = [:]
        for label in labels {
            guard let eq = label.firstIndex(of: "="), eq != label.startIndex else {
                throw ValidationError("--label takes KEY=VALUE, not \"\(label)\"")
            }
            parsed[String(label[..<eq])] = String(label[label.index(after: eq)...])
        }
        return parsed
    }

    /// Joins the fleet when `--worker` was given: the database must be PostgreSQL.
    func start(_ server: DaemonServer) throws -> DaemonFleet? {
        guard worker else { return nil }
        let environment = ProcessInfo.processInfo.environment
        let store = try AgentStore.at(AgentStore.defaultPath())
        let host = ProcessInfo.processInfo.hostName
        let info = WorkerInfo(
            name: name ?? host, host: host, pid: getpid(), version: Xclaw.configuration.version,
            labels: try parsedLabels(), slots: slots,
            displays: displaySizes.isEmpty
                ? ["\(RunDisplay.defaultSize.width)x\(RunDisplay.defaultSize.height)"] : displaySizes,
            apps: apps.isEmpty ? FleetWorkerOptions.installedApplications(environment) : apps)
        return try DaemonFleet.start(
            server, store: store,
            options: FleetWorkerOptions(info: info, lostAfter: try FleetWorkerOptions.lostAfter(environment)))
    }
}

/// `--web [ADDR]` of `daemon start` and `daemon run`.
struct WebOptions: ParsableArguments {
    @Flag(help: "Serve the web view and MCP over HTTP too.") var web = false
    @Argument(help: ArgumentHelp("Where the web view listens, with --web (default 127.0.0.1:7878).", valueName: "addr"))
    var address: String?

    func validate() throws {
        if address != nil && !web {
            throw ValidationError("an address is for --web: xclaw daemon start --web \(address ?? "")")
        }
        if web {
            do {
                _ = try WebConfiguration.address(address)
                _ = try DaemonWeb.limits(ProcessInfo.processInfo.environment)
            } catch { throw ValidationError("\(error)") }
        }
    }

    /// The arguments that pass them on to `daemon run`.
    var arguments: [String] { web ? ["--web"] + (address.map { [$0] } ?? []) : [] }
}

/// The daemon's log, read back for the reason a start failed.
enum DaemonLog {
    /// The last line of `path` that says what went wrong.
    static func lastError(_ path: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return text.split(separator: "\n").last { $0.hasPrefix("xclaw: ") }.map { String($0.dropFirst(7)) }
    }
}

/// `--idle-exit DURATION`, of `daemon start` and `daemon run`.
struct IdleExitOptions: ParsableArguments {
    @Option(
        name: .customLong("idle-exit"),
        help: ArgumentHelp(
            "Leave after this long without a command (900, 90s, 15m, 2h; 0: never).", valueName: "DURATION"))
    var text: String?

    /// Refused as bad usage before anything starts.
    func validate() throws {
        guard let text, AutoStartPolicy.parseDuration(text) == nil else { return }
        throw ValidationError("--idle-exit \(text): give a duration such as 900, 90s, 15m or 2h (0: never)")
    }

    /// The seconds given; nil when none were.
    var seconds: Int? { text.flatMap(AutoStartPolicy.parseDuration) }

    /// The seconds given as a duration; nil for none or 0 (never).
    var duration: Duration? { seconds.flatMap { $0 > 0 ? .seconds($0) : nil } }
}
