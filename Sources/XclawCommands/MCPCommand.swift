import ArgumentParser
import CXclawSystem
import Foundation
import Synchronization
import XclawBase
import XclawCommandLine
import XclawDaemon
import XclawMCP
import XclawScreen

/// `xclaw mcp`: xclaw's tools for an MCP client (Claude Code, Claude Desktop) over stdio.
struct MCPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp",
        abstract: "Serve xclaw's screen tools to an MCP client (Claude Code, Claude Desktop) on stdin and stdout.",
        discussion: """
            Speaks the Model Context Protocol (JSON-RPC 2.0, one message per line) until the client closes stdin. \
            The tools are the commands of the same names: \(MCPTools.names.joined(separator: ", ")). \
            MCP clients start servers without DISPLAY, so each tool but apps takes a display argument; without one, \
            a tool uses --display, else the one display a running daemon holds, else $DISPLAY. A tool that fails \
            answers with isError and the command's message, naming the tool's arguments (nth, not --nth). Logs go \
            to stderr (XCLAW_LOG=debug for each call). Exit: 0 the client closed the connection; 2 bad usage.
            Examples:
              xclaw mcp --display :1  # what an MCP client starts: claude mcp add xclaw -- xclaw mcp --display :1
              xclaw mcp  # each call's display argument, else the daemon's one display, else $DISPLAY
            """)
    @Option(help: "The X display tools use when a call names none, e.g. :1.") var display: String?

    func validate() throws {
        if display?.isEmpty == true { throw ValidationError("--display needs a display, such as :1") }
    }

    func run() throws {
        // A client that goes away mid-reply must not kill the server with SIGPIPE: the write fails and it stops.
        signal(SIGPIPE, SIG_IGN)
        let runner = MCPCommandRunner(defaultDisplay: display)
        MCPStdioTransport(server: MCPTools.server(runner)).run()
        runner.close()
    }
}

/// Runs a tool's command line the way the daemon runs a CLI's: the very same `xclaw` command, in a world of its own
/// (`Invocation`: its output captured, its environment naming the display) on displays kept warm between calls
/// (`ResidentDisplays`: connection, input, OCR engines and cache, refs, accessibility tree). Input on one display takes
/// its `DisplayInputLock`, as agents in every process do: an MCP tap and an agent's click never interleave.
final class MCPCommandRunner: Sendable {
    private let displays: ResidentDisplays
    private let defaultDisplay: String?
    /// The displays a running daemon holds, when the runner is not inside it (asked on its socket).
    private let daemonDisplays: @Sendable () -> [String]?
    /// Inside the daemon, its work in flight: each command counts, so the daemon re-executes itself only between
    /// them (`DaemonRecycling`).
    private let activity: DaemonActivity?

    /// A runner of its own (`xclaw mcp`): its own kept displays, the daemon's asked over its socket.
    convenience init(defaultDisplay: String?) {
        self.init(defaultDisplay: defaultDisplay, displays: ResidentDisplays()) {
            (try? DaemonClient(socketPath: DaemonPaths.socket()).status())?.displays
        }
    }

    /// A runner inside the daemon (MCP over HTTP, the web view): the daemon's kept displays and work count.
    init(
        defaultDisplay: String?, displays: ResidentDisplays, activity: DaemonActivity? = nil,
        daemonDisplays: @escaping @Sendable () -> [String]?
    ) {
        (self.defaultDisplay, self.displays, self.daemonDisplays) = (defaultDisplay, displays, daemonDisplays)
        self.activity = activity
    }

    /// What a command did: its exit status and what it wrote.
    struct Outcome: Sendable {
        var status: Int32
        var stdout: Data
        var stderr: String
    }

    /// The display a call acts on: its `display` argument, else `--display`, else the running daemon's one display,
    /// else `$DISPLAY`.
    func display(for call: MCPCall) throws -> String {
        // The caller's word opens only a display of this machine (its Unix socket): a name with a host would make
        // the server connect to that host's X server. The user's own --display and $DISPLAY are theirs to choose.
        if let named = call.string("display"), !named.isEmpty {
            guard DisplayConnection.isLocal(named) else { throw ScreenError.notLocal(named) }
            return named
        }
        if let defaultDisplay { return defaultDisplay }
        if let held = daemonDisplays() {
            if held.count == 1 { return held[0] }
            if held.count > 1 {
                throw MCPToolFailure(
                    "the daemon holds several displays (\(held.joined(separator: ", "))): pass display")
            }
        }
        if let environment = ProcessInfo.processInfo.environment["DISPLAY"], !environment.isEmpty { return environment }
        throw MCPToolFailure(
            "no display: pass display (e.g. \":1\") to the tool, or start the server as `xclaw mcp --display :1` "
                + "(MCP clients start servers without DISPLAY); `xclaw display start` starts a private one")
    }

    /// Runs `arguments` as an `xclaw` command on a thread of its own (commands block on X), with `stdin` as its
    /// standard input; `exclusive`: input, one at a time on `display`. Cancelling the call interrupts the command
    /// as Ctrl-C would (a held key is released, a watch stops).
    func run(
        _ arguments: [String], display: String?, stdin: Data? = nil, exclusive: Bool, cancellation: MCPCancellation
    ) async -> Outcome {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    returning: self.runNow(
                        arguments, display: display, stdin: stdin, exclusive: exclusive, cancellation: cancellation))
            }
        }
    }

    /// Runs `arguments` handing what it prints on stdout to `output` as it comes (a pipe read on a thread of its own),
    /// for the web view's chat. `keepSecrets`: the command gets the daemon's keys (a `send` needs the API key);
    /// otherwise they are stripped as for a tool.
    func stream(
        _ arguments: [String], keepSecrets: Bool, cancellation: MCPCancellation,
        output: @escaping @Sendable (Data) -> Void
    ) async -> Outcome {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var fds: [Int32] = [-1, -1]
                // Both ends close-on-exec from the start: a program another thread starts meanwhile must not keep the
                // write end open (the reader would never see the end).
                guard xclaw_pipe_cloexec(&fds) == 0 else {
                    continuation.resume(
                        returning: Outcome(
                            status: ExitStatus.internal.rawValue, stdout: Data(),
                            stderr: "xclaw: cannot make a pipe: \(Errno.current)"))
                    return
                }
                let (readEnd, writeEnd) = (fds[0], fds[1])
                let done = DispatchSemaphore(value: 0)
                let reader = Thread {
                    defer { done.signal() }
                    var buffer = [UInt8](repeating: 0, count: 16384)
                    while true {
                        let count = read(readEnd, &buffer, buffer.count)
                        if count < 0 && errno == EINTR { continue }
                        guard count > 0 else { break }
                        output(Data(buffer[0..<count]))
                    }
                    Glibc.close(readEnd)
                }
                reader.start()
                let outcome = self.runNow(
                    arguments, display: nil, stdin: nil, exclusive: false, cancellation: cancellation,
                    stdout: writeEnd, keepSecrets: keepSecrets)
                Glibc.close(writeEnd)
                // The reader ends at the pipe's end: everything printed is handed on before the outcome. (A program the
                // command started keeps no copy: the pipe's ends are close-on-exec.)
                done.wait()
                continuation.resume(returning: outcome)
            }
        }
    }

    private func runNow(
        _ arguments: [String], display: String?, stdin: Data?, exclusive: Bool, cancellation: MCPCancellation,
        stdout: Int32? = nil, keepSecrets: Bool = false
    ) -> Outcome {
        if let activity, !activity.begin() {
            return Outcome(
                status: ExitStatus.internal.rawValue, stdout: Data(),
                stderr: "xclaw: the daemon is re-executing itself (a recycle, see `xclaw daemon status --json`): "
                    + "nothing ran; try again in a moment")
        }
        defer { activity?.end() }
        do {
            // Input takes the display's turn, the one agents in this and every other process take too.
            let lock =
                try exclusive
                ? display.flatMap(Self.lockable).map {
                    try DisplayInputLock.acquire($0) { cancellation.isCancelled }
                } : nil
            defer { lock?.release() }
            let (input, output, error) = try (ScratchFile(stdin ?? Data()), ScratchFile(), ScratchFile())
            // No tool needs a key or a token: the command never sees one, whatever the client passed the server
            // (the web view's chat runs `send`, which does: it keeps them). The database's URL it keeps: it is
            // where the store is.
            var environment =
                keepSecrets
                ? ProcessInfo.processInfo.environment
                : SecretEnvironment.stripped(ProcessInfo.processInfo.environment, keeping: SecretEnvironment.database)
            if let display { environment["DISPLAY"] = display }
            let hub = InterruptHub(onAbandon: { _ in })
            cancellation.onCancel { hub.raise(SIGINT) }
            let invocation = Invocation(
                environment: environment, directory: FileManager.default.currentDirectoryPath,
                descriptors: (input.descriptor, stdout ?? output.descriptor, error.descriptor), terminal: nil,
                pid: getpid(),
                interrupts: hub)
            let host = displays.host()
            let status = Invocation.serve(invocation) {
                Hosting.$served.withValue(host) { CommandRunner.run(Xclaw.self, arguments: arguments) }
            }
            host.end()
            return Outcome(
                status: status, stdout: output.contents(), stderr: String(decoding: error.contents(), as: UTF8.self))
        } catch is CancellationError {
            // Cancelled while it waited for the display's turn: nothing ran.
            return Outcome(status: 130, stdout: Data(), stderr: "xclaw: cancelled before it ran")
        } catch let error as ClassifiedError {
            return Outcome(status: error.exitStatus.rawValue, stdout: Data(), stderr: "xclaw: \(error)")
        } catch {
            return Outcome(status: ExitStatus.internal.rawValue, stdout: Data(), stderr: "xclaw: \(error)")
        }
    }

    /// `display` when its input lock may be taken: a local display only while its server's socket exists, so names
    /// callers pass that open nothing leave no lock file behind (the call fails without one); another machine's only
    /// reaches here as the server's own `--display` or `$DISPLAY`.
    private static func lockable(_ display: String) -> String? {
        guard DisplayConnection.isLocal(display) else { return display }
        let number = DisplayInputLock.key(display).dropFirst()
        return FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") ? display : nil
    }

    /// Restores the keymaps and saves the OCR caches of the displays used.
    func close() { displays.close() }
}

/// A tool call refused before its command runs, with what to do instead.
struct MCPToolFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// An unlinked temporary file a command reads from or writes to: a pipe would need a reader thread, and an app the
/// command starts could hold its write end open.
final class ScratchFile: Sendable {
    let descriptor: Int32

    /// A file holding `contents`, positioned at its start.
    init(_ contents: Data = Data()) throws {
        var template = Array((NSTemporaryDirectory() + "/xclaw-mcp-XXXXXX").utf8CString)
        descriptor = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkstemp($0) } ?? -1 }
        guard descriptor >= 0 else {
            throw MCPToolFailure("cannot create a temporary file in \(NSTemporaryDirectory()): \(Errno.current)")
        }
        template.withUnsafeBufferPointer { buffer in _ = buffer.baseAddress.map { unlink($0) } }
        // Not inherited by what a command starts (`launch`): the app would keep the call's output open.
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        if !contents.isEmpty {
            guard writeAll(descriptor, contents) else {
                throw MCPToolFailure("cannot write a temporary file in \(NSTemporaryDirectory()): \(Errno.current)")
            }
            lseek(descriptor, 0, SEEK_SET)
        }
    }

    /// Everything written to it.
    func contents() -> Data {
        let size = lseek(descriptor, 0, SEEK_END)
        guard size > 0 else { return Data() }
        var data = Data(count: Int(size))
        let read = data.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, Int(size), 0) }
        return read == size ? data : data.prefix(max(0, read))
    }

    deinit { close(descriptor) }
}
