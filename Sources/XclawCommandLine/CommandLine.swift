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
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            let level = ProcessInfo.processInfo.environment["XCLAW_LOG"].flatMap {
                Logger.Level(rawValue: $0.lowercased())
            }
            handler.logLevel = level ?? .info
            return handler
        }
        prepare()
        let status = run(root)
        // _exit, not exit: run/send/chat leave worker threads (X connections, SQLite, the concurrency pool) winding
        // down, and exit()'s library destructors racing them crashed a finished run now and then. Everything a
        // command must write is written by now; only stdio buffers remain.
        fflush(nil)  // every output stream
        _exit(status)
    }

    /// Parses the arguments, runs the command, and maps every outcome to a documented exit status.
    public static func run(_ root: any ParsableCommand.Type, arguments: [String]? = nil) -> Int32 {
        do {
            var command = try root.parseAsRoot(arguments)
            try command.run()
            return ExitStatus.ok.rawValue
        } catch let error as ClassifiedError {
            printError("xclaw: \(error)")
            return error.exitStatus.rawValue
        } catch {
            let code = root.exitCode(for: error)
            if code == .success {  // --help, --version
                print(root.fullMessage(for: error))
                return ExitStatus.ok.rawValue
            }
            if let exit = error as? ExitCode { return exit.rawValue }
            printError(root.fullMessage(for: error))
            // ArgumentParser reports bad usage as 64 (EX_USAGE); xclaw documents 2.
            return code == .validationFailure || error is ValidationError
                ? ExitStatus.usage.rawValue
                : ExitStatus.internal.rawValue
        }
    }
}

/// Writes a line to stderr, with control characters shown instead of obeyed: messages quote model and screen text,
/// which must not be able to clear the terminal or draw a fake prompt.
public func printError(_ message: String) {
    FileHandle.standardError.write(Data((UntrustedText.forTerminal(message) + "\n").utf8))
}

/// How text that xclaw did not write (the model's, the screen's) reaches stdout.
public enum TerminalOutput {
    /// True when such text goes out byte for byte: only when `--raw` was asked for and stdout is not a terminal.
    public static func passesRaw(_ raw: Bool) -> Bool { raw && isatty(STDOUT_FILENO) == 0 }

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
    public func connect() throws -> DisplayConnection { try DisplayConnection(name: display) }
}

/// Prints a result: JSON when asked, else the text, whose control characters are escaped unless `raw` passes
/// (`TerminalOutput`): results quote screen text.
public func emit<T: Encodable>(_ value: T, json: Bool, raw: Bool = false, text: () -> String) throws {
    if json {
        let text = String(decoding: try JSONEncoder.xclaw.encode(value), as: UTF8.self)
        FileHandle.standardOutput.write(Data((UntrustedText.jsonForTerminal(text) + "\n").utf8))
    } else {
        let out = text()
        if !out.isEmpty { print(TerminalOutput.clean(out, raw: raw)) }
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
        _ = state  // created now: a lazy global's first use inside a signal handler could allocate
        signal(SIGINT) { signal in Interrupt.state.raise(signal) }
        signal(SIGTERM) { signal in Interrupt.state.raise(signal) }
    }

    /// Runs `body` with signals deferred; `body` polls `requested` and stops early. A signal that arrived ends the
    /// command afterwards with 128 + its number (130 for Ctrl-C), as shells expect.
    public static func guarded<T>(_ body: () throws -> T) throws -> T {
        state.guarding.store(true, ordering: .sequentiallyConsistent)
        defer { state.guarding.store(false, ordering: .sequentiallyConsistent) }
        let result = try body()
        let signal = state.raised.load(ordering: .sequentiallyConsistent)
        if signal != 0 { throw ExitCode(128 + signal) }
        return result
    }

    /// True once a signal arrived inside `guarded`.
    public static var requested: Bool { state.raised.load(ordering: .sequentiallyConsistent) != 0 }
}

/// Signal state; atomics are async-signal-safe, and so is `_exit`.
final class SignalState: Sendable {
    let guarding = Atomic<Bool>(false)
    let raised = Atomic<Int32>(0)
    func raise(_ signal: Int32) {
        if guarding.load(ordering: .sequentiallyConsistent) {
            raised.store(signal, ordering: .sequentiallyConsistent)
        } else {
            _exit(128 + signal)
        }
    }
}
