import Foundation
import XclawBase
import XclawStore

/// A per-agent lock shared by every xclaw process on one database (every host of a fleet on PostgreSQL): the
/// in-process queue keeps one run per agent, and this keeps it across processes, so two `xclaw send` to the same
/// agent at once run one after the other instead of building on each other's half-written turns. The store's
/// `AgentHold`, which the system releases when a process dies, so a killed run never leaves it held.
final class AgentLock: Sendable {
    private let hold: AgentHold

    private init(hold: AgentHold) { self.hold = hold }

    /// Waits (polling every 20 ms, so cancellation is noticed) until the lock of `agent` is free and takes it.
    static func acquire(store: any StoreBackend, agent: String) async throws -> AgentLock {
        while true {
            if let hold = try store.tryHoldAgent(agent) { return AgentLock(hold: hold) }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
