import Foundation
import Synchronization
import XclawBase

/// On a terminal, a long wait says what it waits for, the time elapsed and its timeout on one stderr line, redrawn
/// four times a second and cleared when the wait ends: `watch`, `find`/`tap --timeout`, `wait-stable` and
/// `launch --wait-window` would otherwise print nothing until they end. Nothing when stderr is not a terminal, with
/// `--json`, or for a wait shorter than half a second.
public final class ProgressLine: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    /// The line of the wait under way: anything the command writes (`writeOut`, `printError`) ends it first, so the
    /// output never lands on the same terminal line.
    @TaskLocal static var current: ProgressLine?

    /// Runs `body` with the line shown while it waits (`timeout` in seconds; nil: no timeout is said).
    public static func during<T>(_ what: String, timeout: Double?, json: Bool, _ body: () throws -> T) rethrows -> T {
        let invocation = Invocation.current
        guard !json, invocation.isTerminal(.stderr) else { return try body() }
        let line = ProgressLine(what, timeout: timeout, stderr: invocation.descriptors.error)
        defer { line.stop() }
        return try $current.withValue(line) { try body() }
    }

    /// Ends the wait's line, if one is shown, before the command writes.
    static func endCurrent() { current?.stop() }

    private init(_ what: String, timeout: Double?, stderr: Int32) {
        let start = ContinuousClock.now
        let shown = UntrustedText.forTerminal(what.count > 70 ? String(what.prefix(69)) + "…" : what)
        let limit = timeout.map { " of " + Self.seconds($0) + " s" } ?? ""
        Thread { [self] in
            var drawn = false
            defer {
                // Cleared, so the command's own output starts on a clean line.
                if drawn { Self.write("\r\u{1b}[K", to: stderr) }
                done.signal()
            }
            while !stopped.load(ordering: .acquiring) {
                let elapsed = (ContinuousClock.now - start).seconds
                if elapsed >= 0.5 {
                    Self.write(
                        "\r\u{1b}[Kxclaw: waiting for \(shown): \(Self.seconds(elapsed)) s\(limit)", to: stderr)
                    drawn = true
                }
                Thread.sleep(forTimeInterval: 0.25)
            }
        }.start()
    }

    /// Ends the line (cleared when it was drawn) before the command writes anything more.
    private func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        done.wait()
    }

    private static func seconds(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func write(_ text: String, to fd: Int32) {
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
    }
}
