import ArgumentParser
import Foundation
import Logging
import Synchronization
import XclawBase
import XclawScreen

/// Runs a root command the way every xclaw binary does.
public enum CommandRunner {
    /// The whole life of an xclaw binary: locale, logging to stderr (`XCLAW_LOG` sets the level), `prepare` (signal
    /// handlers), the command, its documented exit status. Never returns.
    public static func main(_ root: any ParsableCommand.Type, prepare: () -> Void = {}) -> Never {
        setlocale(LC_ALL, "")
        setlocale(LC_CTYPE, "C.UTF-8")  // the probe window decodes key events as UTF-8 whatever the user's locale
        LoggingSystem.bootstrap { InvocationLogHandler(label: $0) }
        prepare()
        let status = run(root)
        // _exit, not exit: run/send/chat leave worker threads (X connections, SQLite, the concurrency pool) winding
        // down, and exit()'s library destructors racing them crashed a finished run now and then. Everything a
        // command must write is written by now; only stdio buffers remain.
        fflush(nil)  // every output stream
        _exit(status)
    }

    /// Parses the arguments, runs the command, and maps every outcome to a documented exit status.
    /// With `--json`, a failure also prints one JSON error object on stdout (`JSONErrorObject`), unless the command
    /// already printed its JSON result.
    public static func run(_ root: any ParsableCommand.Type, arguments: [String]? = nil) -> Int32 {
        let arguments = arguments ?? Array(CommandLine.arguments.dropFirst())
        let mark = JSONResultMark()
        var json: Bool?
        do {
            var command = try parse(root, arguments: arguments)
            json = JSONFlag.isSet(in: command)
            try JSONResultMark.$current.withValue(mark) { try command.run() }
            return ExitStatus.ok.rawValue
        } catch {
            let failure = failure(of: error, root: root)
            if let output = failure.output { writeOut(output + "\n") }
            if let message = failure.message { printError(message) }
            if failure.status != ExitStatus.ok.rawValue, !mark.isSet,
                json ?? JSONFlag.isAsked(in: arguments, root: root)
            {
                writeOut(failure.jsonError.line)
            }
            return failure.status
        }
    }

    /// The command `arguments` name (the process's own when nil), rewritten and parsed (validation included) as
    /// `run` does, so tests can parse in-process exactly what the binary would.
    package static func parse(_ root: any ParsableCommand.Type, arguments: [String]? = nil) throws
        -> any ParsableCommand
    {
        var arguments = arguments
        if let rewriter = root as? any RewritesArguments.Type {
            arguments = rewriter.rewrite(arguments ?? Array(CommandLine.arguments.dropFirst()))
        }
        return try root.parseAsRoot(arguments)
    }

    /// How a command that threw `error` ends: the one mapping from errors to documented exit statuses, shared by
    /// `run` and the tests that check it without starting a process.
    package static func failure(of error: any Error, root: any ParsableCommand.Type) -> CommandFailure {
        if let error = error as? ClassifiedError {
            return CommandFailure(status: error.exitStatus.rawValue, output: nil, message: "xclaw: \(error)")
        }
        let code = root.exitCode(for: error)
        if code == .success {  // --help, --version
            // Examples last, whole: ArgumentParser puts the discussion, where they are written, before USAGE.
            return CommandFailure(
                status: ExitStatus.ok.rawValue, output: HelpExamples.movedToEnd(root.fullMessage(for: error)),
                message: nil)
        }
        if let exit = error as? ExitCode { return CommandFailure(status: exit.rawValue, output: nil, message: nil) }
        // ArgumentParser reports bad usage as 64 (EX_USAGE); xclaw documents 2.
        let status =
            code == .validationFailure || error is ValidationError
            ? ExitStatus.usage.rawValue
            : ExitStatus.internal.rawValue
        return CommandFailure(status: status, output: nil, message: root.fullMessage(for: error))
    }
}

/// What `CommandRunner` prints and returns for an error, kept apart from the printing so tests can read it.
package struct CommandFailure: Equatable, Sendable {
    /// The exit status.
    package let status: Int32
    /// Help or version text for stdout, written as it is.
    package let output: String?
    /// The message for stderr, written through `printError` (control characters shown).
    package let message: String?

    /// The JSON error object a `--json` command prints for this failure: stderr's message, or one naming the status
    /// when the failure printed none.
    package var jsonError: JSONErrorObject {
        JSONErrorObject(status: status, message: message ?? JSONErrorObject.silentMessage(status: status))
    }
}

/// A root command that rewrites its arguments before they are parsed: for an option whose value may be left out
/// (`launch --wait-window [SECONDS]`), which ArgumentParser's options cannot express.
public protocol RewritesArguments {
    /// The arguments as ArgumentParser should see them.
    static func rewrite(_ arguments: [String]) -> [String]
}

/// Writes a line to stderr, with control characters shown instead of obeyed: messages quote model and screen text,
/// which must not be able to clear the terminal or draw a fake prompt.
public func printError(_ message: String) {
    ProgressLine.endCurrent()
    Invocation.current.write(.stderr, Data((UntrustedText.forTerminal(message) + "\n").utf8))
}

/// Writes text to the command's stdout as it is: xclaw's own text, which needs no escaping.
public func writeOut(_ text: String) {
    ProgressLine.endCurrent()
    Invocation.current.write(.stdout, Data(text.utf8))
}

/// Writes bytes to the command's stdout (a PNG, raw text).
public func writeOut(_ data: Data) {
    ProgressLine.endCurrent()
    Invocation.current.write(.stdout, data)
}

/// How text that xclaw did not write (the model's, the screen's) reaches stdout.
public enum TerminalOutput {
    /// True when such text goes out byte for byte: only when `--raw` was asked for and stdout is not a terminal.
    public static func passesRaw(_ raw: Bool) -> Bool { raw && !Invocation.current.isTerminal(.stdout) }

    /// `text` as it may be printed: control characters escaped unless `passesRaw(raw)`.
    public static func clean(_ text: String, raw: Bool = false) -> String {
        passesRaw(raw) ? text : UntrustedText.forTerminal(text)
    }
}

/// The `--raw` flag of the commands that print model or screen text.
public struct RawOption: ParsableArguments {
    /// Not raw.
    public init() {}

    /// Print model and screen text byte for byte (only when stdout is not a terminal).
    @Flag(
        help: """
            Print model and screen text byte for byte, control characters included (only when stdout is not a \
            terminal; on a terminal they are always shown escaped).
            """)
    public var raw = false
}

/// Options every command that touches a display takes.
public struct DisplayOptions: ParsableArguments {
    /// No display named: `$DISPLAY`.
    public init() {}

    /// The display to use; nil: `$DISPLAY`.
    @Option(name: .long, help: "X display to use (default: $DISPLAY). Start a private one with `xclaw display start`.")
    public var display: String?

    /// Opens the connection the options name.
    public func connect() throws -> DisplayConnection {
        try Hosting.current.connection(display)
    }
}

/// Prints a result: JSON when asked, else the text, whose control characters are escaped unless `raw` passes
/// (`TerminalOutput`): results quote screen text.
public func emit<T: Encodable>(_ value: T, json: Bool, raw: Bool = false, text: () -> String) throws {
    if json {
        let text = String(decoding: try JSONEncoder.xclaw.encode(value), as: UTF8.self)
        writeOut(UntrustedText.jsonForTerminal(text) + "\n")
        JSONResultMark.current?.set()
    } else {
        let out = text()
        if !out.isEmpty { writeOut(TerminalOutput.clean(out, raw: raw) + "\n") }
    }
}

/// Refuses an option value outside `range` as bad usage (exit 2) naming the range. NaN is outside every range; an
/// absurd value (`nan`, `Int.max` milliseconds) would otherwise trap deep inside `Duration` arithmetic.
public func requireRange<T: Comparable>(_ value: T?, _ range: ClosedRange<T>, _ option: String, _ unit: String)
    throws
{
    guard let value, !range.contains(value) else { return }
    throw ValidationError(
        "\(option) must be from \(range.lowerBound) to \(range.upperBound)\(unit.isEmpty ? "" : " " + unit), not \(value)"
    )
}

/// Parses modifier names (`ctrl+shift`) to keysyms.
public func parseModifiers(_ text: String?) throws -> [UInt] {
    guard let text, !text.isEmpty else { return [] }
    let combo = try KeyCombo.parse(text)
    return combo.modifiers + [combo.key]
}

/// Ctrl-C and SIGTERM end the process at once, except inside `Interrupt.guarded`, where they set a flag so the
/// running action can release held keys and buttons first.
public enum Interrupt {
    private static let state = SignalState()

    /// Installs the handlers.
    public static func install() {
        catchSignal(SIGINT)
        catchSignal(SIGTERM)
    }

    /// Points `signal` at `SignalState.raise`; the state is created first: a lazy global's first use inside a signal
    /// handler could allocate.
    private static func catchSignal(_ signal: Int32) {
        _ = state
        Glibc.signal(signal) { signal in Interrupt.state.raise(signal) }
    }

    /// Runs `body` with signals deferred; `body` polls `requested` and stops early. A signal that arrived ends the
    /// command afterwards with 128 + its number (130 for Ctrl-C), as shells expect.
    public static func guarded<T>(_ body: () throws -> T) throws -> T {
        if let hub = Invocation.current.interrupts {
            // Served: the asker waits while held keys are released, then gets the status a signal would give.
            let token = hub.watch { _ in true }
            defer { hub.unwatch(token) }
            let result = try body()
            if hub.raised != 0 { throw ExitCode(128 + hub.raised) }
            return result
        }
        state.guarding.store(true, ordering: .sequentiallyConsistent)
        defer { state.guarding.store(false, ordering: .sequentiallyConsistent) }
        let result = try body()
        let signal = state.raised.load(ordering: .sequentiallyConsistent)
        if signal != 0 { throw ExitCode(128 + signal) }
        return result
    }

    /// True once a signal arrived inside `guarded`; for a served request, once its asker is interrupted or gone.
    public static var requested: Bool {
        if Invocation.isServed { return Invocation.current.cancelled() }
        return state.raised.load(ordering: .sequentiallyConsistent) != 0
    }

    /// Calls `handler` on a global queue for each of `signals` that arrives until `stop` is called
    /// on the result, instead of the signal ending the command. Served, the asker's forwarded signals come instead,
    /// and the process's own signals are left to the daemon. `handler` runs in the command's world.
    public static func watch(_ signals: Set<Int32>, _ handler: @escaping @Sendable (Int32) -> Void) -> SignalWatch {
        let invocation = Invocation.current
        if let hub = invocation.interrupts {
            let token = hub.watch { signal in
                guard signals.contains(signal) else { return false }
                Invocation.serve(invocation) { handler(signal) }
                return true
            }
            // A signal that came before the watch (while the command was starting) is handled now, not lost.
            let early = hub.raised
            if early != 0, signals.contains(early) { Invocation.serve(invocation) { handler(early) } }
            return SignalWatch { hub.unwatch(token) }
        }
        // Not a dispatch signal source: it set the signal to SIG_IGN at once and installed its own handler later, on
        // its manager thread, and a signal in between was dropped (`send` under load ran on after its SIGTERM). The
        // watch is in place when this returns: the process's own handler hands watched signals to a pipe.
        let token = state.watch(signals, handler)
        for signal in signals { catchSignal(signal) }
        return SignalWatch { state.unwatch(token) }
    }

    /// Ends the command now as `signal` would have (128 + its number): in-process the process exits; served, the
    /// asker is answered with that status and the command's further output is dropped.
    public static func exitNow(_ signal: Int32) {
        if let hub = Invocation.current.interrupts { hub.abandon(status: 128 + signal) } else { _exit(128 + signal) }
    }
}

/// A running `Interrupt.watch`.
public final class SignalWatch: Sendable {
    private let end: @Sendable () -> Void
    init(_ end: @escaping @Sendable () -> Void) { self.end = end }
    /// Stops watching.
    public func stop() { end() }
}

/// Signal state; atomics are async-signal-safe, and so are `write` and `_exit`.
final class SignalState: Sendable {
    let guarding = Atomic<Bool>(false)
    let raised = Atomic<Int32>(0)
    /// The signals a watch takes, bit n for signal n: they go down `pipe` to the watches' thread instead.
    private let watched = Atomic<UInt64>(0)
    /// The pipe's write end; -1 until the first watch opens it.
    private let pipeWrite = Atomic<Int32>(-1)
    private struct Watches {
        var next = 0
        var handlers: [Int: (signals: Set<Int32>, handler: @Sendable (Int32) -> Void)] = [:]
    }
    private let watches = Mutex(Watches())

    /// The signal handler's work: a watched signal is written down the pipe; else, inside `guarded`, it is
    /// recorded; else the process ends as the signal would have ended it.
    func raise(_ signal: Int32) {
        if signal < 64, watched.load(ordering: .sequentiallyConsistent) & (1 << UInt64(signal)) != 0 {
            let saved = errno
            var byte = UInt8(truncatingIfNeeded: signal)
            _ = Glibc.write(pipeWrite.load(ordering: .sequentiallyConsistent), &byte, 1)
            errno = saved
        } else if guarding.load(ordering: .sequentiallyConsistent) {
            raised.store(signal, ordering: .sequentiallyConsistent)
        } else {
            _exit(128 + signal)
        }
    }

    /// Sends `signals` to `handler` (on a global queue) from now until `unwatch(token)`.
    func watch(_ signals: Set<Int32>, _ handler: @escaping @Sendable (Int32) -> Void) -> Int {
        watches.withLock { watches in
            if pipeWrite.load(ordering: .sequentiallyConsistent) < 0, let pipe = try? Subprocess.pipe() {
                pipeWrite.store(pipe.write, ordering: .sequentiallyConsistent)
                let read = pipe.read
                Thread.detachNewThread { [self] in deliver(from: read) }
            }
            watches.next += 1
            watches.handlers[watches.next] = (signals, handler)
            publish(watches)
            return watches.next
        }
    }

    /// Ends a watch: its signals go back to ending the process unless another watch takes them.
    func unwatch(_ token: Int) {
        watches.withLock { watches in
            watches.handlers.removeValue(forKey: token)
            publish(watches)
        }
    }

    private func publish(_ watches: Watches) {
        let mask = watches.handlers.values.flatMap(\.signals).filter { $0 > 0 && $0 < 64 }
            .reduce(UInt64(0)) { $0 | 1 << UInt64($1) }
        watched.store(mask, ordering: .sequentiallyConsistent)
    }

    /// The watches' thread: each byte read is a signal, handed to every watch that takes it.
    private func deliver(from pipe: Int32) {
        var byte: UInt8 = 0
        while true {
            let count = Glibc.read(pipe, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { return }
            let signal = Int32(byte)
            let handlers = watches.withLock { $0.handlers.values.filter { $0.signals.contains(signal) }.map(\.handler) }
            for handler in handlers { DispatchQueue.global().async { handler(signal) } }
        }
    }
}

/// Logs to the running command's stderr (the asking CLI's, in the daemon) at the level its `XCLAW_LOG` sets, so a
/// served command's warnings reach the terminal that asked and the daemon's own go to its log.
public struct InvocationLogHandler: LogHandler {
    /// The logger's label.
    public let label: String
    /// Extra metadata set on the logger.
    public var metadata: Logger.Metadata = [:]

    /// A handler for `label`.
    public init(label: String) { self.label = label }

    /// `XCLAW_LOG` of the running command, else info; setting it has no effect.
    public var logLevel: Logger.Level {
        get {
            Invocation.current.environment["XCLAW_LOG"].flatMap { Logger.Level(rawValue: $0.lowercased()) } ?? .info
        }
        set {}
    }

    /// Extra metadata by key.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes `timestamp level label : metadata message` on one line.
    public func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields =
            all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: " ")
        let line = "\(Self.timestamp()) \(event.level) \(label) :\(fields) \(event.message)\n"
        // During a wait's progress line: that line cleared first, then drawn again.
        if ProgressLine.interject(line) { return }
        Invocation.current.write(.stderr, Data(line.utf8))
    }

    private static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        var buffer = [Int8](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
