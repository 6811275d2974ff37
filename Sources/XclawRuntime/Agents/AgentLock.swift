import Foundation
import XclawBase

/// Why an agent's lock file could not be used.
public enum AgentLockError: ClassifiedError {
    /// The lock file beside the database cannot be created or opened.
    case cannotOpen(path: String, reason: String)

    /// The machine's to fix, not the input's.
    public var exitStatus: ExitStatus { .internal }

    /// The message, with what to do.
    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason):
            return "cannot open the agent lock \(path): \(reason); make its directory writable or use another "
                + "database (--db or XCLAW_DB)"
        }
    }
}

/// A per-agent lock shared by every xclaw process on one database: the in-process queue keeps one run per agent,
/// and this keeps it across processes, so two `xclaw send` to the same agent at once run one after the other
/// instead of building on each other's half-written turns. An advisory `flock`, released by the kernel when a
/// process dies, so a killed run never leaves it held.
/// Safe because its only state is an immutable file descriptor, and flock on it is safe from any thread.
final class AgentLock: @unchecked Sendable {
    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    /// Waits (polling every 20 ms, so cancellation is noticed) until the lock of `agent` is free and takes it.
    static func acquire(database: String, agent: String) async throws -> AgentLock {
        let dir = database + ".locks"
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let path = dir + "/" + agent + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AgentLockError.cannotOpen(path: path, reason: Errno.current.description) }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            do { try await Task.sleep(for: .milliseconds(20)) } catch {
                close(fd)
                throw error
            }
        }
        return AgentLock(fd: fd)
    }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
