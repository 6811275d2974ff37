import Glibc
import Synchronization

/// The signals of one served command: the daemon's front forwards Ctrl-C and SIGTERM as bytes, and its hanging up as
/// SIGHUP. A command that handles interrupts (an agent run cancels its turn, `chat` its reply, a held key releases)
/// watches here; one that does not is abandoned at once, as a signal would have ended it in-process.
public final class InterruptHub: Sendable {
    private struct State {
        var raised: Int32 = 0
        var handlers: [Int: @Sendable (Int32) -> Bool] = [:]
        var next = 0
        var abandoned = false
    }
    private let state = Mutex(State())
    /// Called once when the command is given up on, with its exit status (128 + the signal): the daemon answers the
    /// asker with it, so the asker exits as it would have in-process.
    private let onAbandon: @Sendable (Int32) -> Void

    /// Readable once the command is abandoned: a served read of the asker's stdin or terminal polls it too, so a
    /// command blocked reading (`chat`, `type -`) ends instead of taking what is typed into the asker's shell later.
    private let wake: (read: Int32, write: Int32)?

    /// A hub that reports abandonment through `onAbandon`.
    public init(onAbandon: @escaping @Sendable (Int32) -> Void) {
        self.onAbandon = onAbandon
        wake = try? Subprocess.pipe()
    }

    deinit {
        if let wake { (close(wake.read), close(wake.write)) }
    }

    /// The descriptor that becomes readable when the command is abandoned.
    public var abandonment: Int32? { wake?.read }

    /// The last signal forwarded; 0 while none was.
    public var raised: Int32 { state.withLock { $0.raised } }

    /// Whether the command was given up on: its asker has gone.
    public var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Calls `handler` for each signal forwarded until `unwatch(token)`; it returns whether it handled the signal.
    public func watch(_ handler: @escaping @Sendable (Int32) -> Bool) -> Int {
        state.withLock { state in
            state.next += 1
            state.handlers[state.next] = handler
            return state.next
        }
    }

    /// Stops calling the handler of `token`.
    public func unwatch(_ token: Int) { _ = state.withLock { $0.handlers.removeValue(forKey: token) } }

    /// A forwarded signal: the watching handlers get it; when none handles it, the command is abandoned. SIGHUP (the
    /// asker is gone) always abandons it after its handlers ran.
    public func raise(_ signal: Int32) {
        let handlers = state.withLock { state in
            state.raised = signal
            return Array(state.handlers.values)
        }
        let handled = handlers.map { $0(signal) }.contains(true)
        if !handled || signal == SIGHUP { abandon(status: 128 + signal) }
    }

    /// Gives the command up with `status` (a second Ctrl-C, which in-process exits at once).
    public func abandon(status: Int32) {
        let first = state.withLock { state in
            defer { state.abandoned = true }
            return !state.abandoned
        }
        guard first else { return }
        // The asker is answered before the command is woken: woken, it ends (a blocked read returns nothing) and
        // the daemon would answer first with the command's own status instead of the signal's.
        onAbandon(status)
        if let wake {
            var byte: UInt8 = 1
            _ = Glibc.write(wake.write, &byte, 1)
        }
    }
}
