import Foundation
import Synchronization
import XclawBase
import XclawScreen

/// The bound on what X server restarts cost a long-lived daemon. Each connection whose server went away keeps
/// Xlib's structure for good (40 to 85 KB of resident memory each, measured; freeing it after a loss corrupted the
/// heap, see `DisplayConnection.deinit`), and only a new process image gives that memory back. So once `limit` of
/// them were dropped, the daemon re-executes itself at its first idle moment: same pid, same socket (inherited, its
/// backlog holding whoever asks meanwhile), same web view address and token.
public enum DaemonRecycling {
    /// The variable that sets the limit: a positive integer.
    public static let limitVariable = "XCLAW_DAEMON_RECYCLE_AFTER"

    /// 256 lost connections: at most some 21 MB (38 KB each measured with `windows` after each restart, 84 KB with
    /// snapshots), less than half an idle daemon's own ~50 MB, and reached only after a hundred or more X server
    /// restarts (each loses one connection per display the daemon keeps, plus its selection owners and watched
    /// screens). A lower limit would re-execute more often for little memory: each recycle stops the web view for a
    /// moment and starts the caches cold (reloaded from disk).
    public static let defaultLimit = 256

    /// Names the inherited descriptors for the next image, `LISTENER,STATE`; read and unset by it at once.
    static let handoverVariable = "XCLAW_DAEMON_HANDOVER"

    /// The limit `environment` sets (`XCLAW_DAEMON_RECYCLE_AFTER`), else the default; anything but a positive
    /// integer is refused (`DaemonError.badRecycleLimit`, exit 2).
    public static func limit(_ environment: [String: String]) throws -> Int {
        guard let text = environment[limitVariable] else { return defaultLimit }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)), value > 0 else {
            throw DaemonError.badRecycleLimit(text)
        }
        return value
    }
}

/// What one image of the daemon hands the next when it re-executes itself, in an in-memory file (never argv, the
/// environment or a log: the surface's part carries the web view's token, the selections what was copied).
public struct DaemonHandover: Codable, Sendable {
    /// How many times the daemon re-executed itself, this time included.
    public var recycles: Int
    /// Seconds the daemon had run when it re-executed (its uptime goes on from there).
    public var uptime: Double
    /// Reconnects of kept displays so far (reported across recycles).
    public var reconnects: Int
    /// The descriptors the daemon's first image inherited from its parent (open, not close-on-exec): each image
    /// passes them on, and nothing else it opened.
    var descriptors: [Int32]
    /// The displays it kept, opened again by the next image (those that still answer).
    var displays: [String]
    /// The selections the daemon owned, taken again by the next image.
    var selections: [HeldSelection]
    /// What the surface (`onRecycle`'s `prepare`) handed over, for its next image.
    public var surface: Data?
}

/// A selection the daemon owned when it re-executed itself: the next image takes it again with the same contents.
struct HeldSelection: Codable, Sendable {
    var display: String
    var selection: ClipboardSelection
    var type: ClipboardType
    var data: Data
}

/// The daemon's work in flight, counted so it re-executes itself only when idle: served requests (from accept to
/// the connection's close), scheduled runs, the web view's and MCP's commands. Once the daemon decided to
/// re-execute, new work is refused (`begin` false) until the exec failed or the new image serves it.
public final class DaemonActivity: Sendable {
    private struct State {
        var busy = 0
        var closed = false
    }
    private let state = Mutex(State())
    /// Written a byte when the last work in flight ends: the listener's thread then looks whether to recycle.
    private let wake: Int32

    init(wake: Int32) { self.wake = wake }

    /// Marks work begun; false when the daemon is about to re-execute itself (the caller refuses the work, saying
    /// to try again: the new image serves it a moment later).
    public func begin() -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.busy += 1
            return true
        }
    }

    /// Marks work ended; the last one wakes the listener's thread.
    public func end() {
        let idle = state.withLock { state in
            state.busy -= 1
            return state.busy == 0
        }
        if idle { poke() }
    }

    /// Runs `body` as work; nil (not run) when the daemon is about to re-execute itself.
    public func run<T>(_ body: () throws -> T) rethrows -> T? {
        guard begin() else { return nil }
        defer { end() }
        return try body()
    }

    /// How much work is in flight.
    var busy: Int { state.withLock { $0.busy } }

    /// Refuses new work from now on, if none is in flight; false (nothing changed) otherwise.
    func closeIfIdle() -> Bool {
        state.withLock { state in
            guard state.busy == 0 else { return false }
            state.closed = true
            return true
        }
    }

    /// Takes work again (the exec failed).
    func reopen() { state.withLock { $0.closed = false } }

    /// Wakes the listener's thread (a full pipe already will).
    func poke() {
        var byte: UInt8 = 1
        _ = write(wake, &byte, 1)
    }
}

/// What the surface does around a recycle (`DaemonServer.onRecycle`).
struct DaemonRecycleHook: Sendable {
    var prepare: @Sendable () -> Data?
    var resume: @Sendable () -> Void
}
