import Foundation
import Synchronization
import XclawBase

/// On a terminal, a long wait says what it waits for, the time elapsed and its timeout on one stderr line, redrawn
/// four times a second and cleared when the wait ends: `watch`, `find`/`tap --timeout`, `wait-stable`,
/// `windows --sync` and `launch --wait-window` would otherwise print nothing until they end. Nothing when stderr is
/// not a terminal, with `--json`, or for a wait shorter than half a second.
public final class ProgressLine: Sendable {
    /// Whether the line is on screen now, and whether it has ended; the terminal is written only under this lock.
    private struct State {
        var drawn = false
        var ended = false
    }
    private let state = Mutex(State())
    /// Signalled to end the wait between two redraws at once.
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let stderr: Int32

    /// The line of the wait under way: anything the command writes (`writeOut`, `printError`) ends it first, and a
    /// log line clears it for a moment, so output never lands on the same terminal line.
    @TaskLocal static var current: ProgressLine?

    /// Runs `body` with the line shown while it waits (`timeout` in seconds; nil: no timeout is said).
    public static func during<T>(_ what: String, timeout: Double?, json: Bool, _ body: () throws -> T) rethrows -> T {
        let invocation = Invocation.current
        guard !json, invocation.isTerminal(.stderr) else { return try body() }
        let line = ProgressLine(what, timeout: timeout, invocation: invocation)
        defer { line.stop() }
        return try $current.withValue(line) { try body() }
    }

    /// Ends the wait's line, if one is shown, before the command writes.
    static func endCurrent() { current?.stop() }

    /// Writes `text` (a log line) with the wait's line cleared first; it is drawn again at its next tick.
    static func interject(_ text: String) -> Bool {
        guard let line = current else { return false }
        line.state.withLock { state in
            if state.drawn { Self.write("\r\u{1b}[K", to: line.stderr) }
            state.drawn = false
            Invocation.current.write(.stderr, Data(text.utf8))
        }
        return true
    }

    private init(_ what: String, timeout: Double?, invocation: Invocation) {
        stderr = invocation.descriptors.error
        let start = ContinuousClock.now
        let shown = UntrustedText.forTerminal(what.count > 70 ? String(what.prefix(69)) + "…" : what)
        let limit = timeout.map { " of " + Self.seconds($0) + " s" } ?? ""
        Thread { [self] in
            defer { done.signal() }
            while true {
                let elapsed = (ContinuousClock.now - start).seconds
                // A command given up (Ctrl-C through the daemon: the asker has its prompt back) draws no more.
                let cancelled = invocation.cancelled()
                let ended = state.withLock { state -> Bool in
                    // Given up, the asker has its prompt back: not a byte more, not even a clear.
                    if cancelled { return true }
                    if state.ended {
                        if state.drawn { Self.write("\r\u{1b}[K", to: stderr) }
                        state.drawn = false
                        return true
                    }
                    if elapsed >= 0.5 {
                        Self.write(
                            "\r\u{1b}[Kxclaw: waiting for \(shown): \(Self.seconds(elapsed)) s\(limit)", to: stderr)
                        state.drawn = true
                    }
                    return false
                }
                if ended { return }
                _ = wake.wait(timeout: .now() + 0.25)
            }
        }.start()
    }

    /// Ends the line (cleared when it was drawn) before the command writes anything more.
    private func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.ended = true }
            return !state.ended
        }
        guard first else { return }
        wake.signal()
        done.wait()
    }

    private static func seconds(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func write(_ text: String, to fd: Int32) {
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
    }
}
