import Foundation
import XclawMessages

/// FIFO turns per display, so agents sharing one never interleave input and capture; not reentrant. Across
/// processes, each input action also takes the display's `DisplayInputLock` (the skills' `runInput`), as MCP calls do.
public actor DisplayLocks {
    /// The process-wide locks, so every tool on a display shares one queue.
    public static let shared = DisplayLocks()

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct Entry {
        var waiters: [Waiter] = []
    }

    /// Displays whose lock is held, with their queued waiters in arrival order.
    private var held: [String: Entry] = [:]
    private var nextID: UInt64 = 0

    /// Separate instances are independent, for tests and for runtimes that must not share turns.
    public init() {}

    /// Runs `body` in the display's turn (FIFO); a cancelled waiter leaves the queue and throws `CancellationError`.
    public nonisolated func withLock<T: Sendable>(display: String, _ body: @Sendable () async throws -> T)
        async throws -> T
    {
        try await acquire(display)
        let result: T
        do {
            result = try await body()
        } catch {
            await release(display)
            throw error
        }
        await release(display)
        return result
    }

    /// Waiters queued behind the holder (for tests that need a waiter in place before acting).
    func queuedCount(display: String) -> Int { held[display]?.waiters.count ?? 0 }

    private func acquire(_ display: String) async throws {
        guard held[display] != nil else {
            held[display] = Entry()
            return
        }
        nextID &+= 1
        let id = nextID
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    held[display, default: Entry()].waiters.append(Waiter(id: id, continuation: continuation))
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(display, id: id) }
        }
        // Granted the lock, but cancelled meanwhile: hand it on instead of acting for a cancelled run.
        if Task.isCancelled {
            release(display)
            throw CancellationError()
        }
    }

    private func cancelWaiter(_ display: String, id: UInt64) {
        guard var entry = held[display], let index = entry.waiters.firstIndex(where: { $0.id == id }) else { return }
        let waiter = entry.waiters.remove(at: index)
        held[display] = entry
        waiter.continuation.resume(throwing: CancellationError())
    }

    /// Hands the lock to the first waiter, or frees it.
    private func release(_ display: String) {
        guard var entry = held[display] else { return }
        if entry.waiters.isEmpty {
            held[display] = nil
        } else {
            let next = entry.waiters.removeFirst()
            held[display] = entry
            next.continuation.resume()
        }
    }
}

/// Runs a tool's whole `execute` (act, settle, capture) in its display's turn, so agents sharing a display take turns.
public struct LockedTool: AgentTool {
    /// The tool that does the work.
    public let base: any AgentTool
    /// The display whose turn `execute` waits for.
    public let display: String
    /// The lock set to use; `.shared` unless a test needs isolation.
    public let locks: DisplayLocks

    /// Wraps `base`; the wrapper is indistinguishable from it to the model.
    public init(_ base: any AgentTool, display: String, locks: DisplayLocks = .shared) {
        self.base = base
        self.display = display
        self.locks = locks
    }

    /// Forwarded, so the model sees the wrapped tool.
    public var name: String { base.name }
    /// Forwarded, so the model sees the wrapped tool.
    public var description: String { base.description }
    /// Forwarded, so the model sees the wrapped tool.
    public var inputSchema: JSONValue { base.inputSchema }
    /// Forwarded, so built-in tool shapes (the computer tool) survive wrapping.
    public var definition: JSONValue { base.definition }
    /// Forwarded, so the request still carries the wrapped tool's beta header.
    public var betas: [String] { base.betas }

    /// Runs the wrapped tool inside the display's lock.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let base = self.base
        return try await locks.withLock(display: display) {
            try await base.execute(input, context: context)
        }
    }
}
