import Foundation
import XclawAgent
import XclawBase

/// What the tools over the desktop's services share: the run's gates in front of every action they take on a service
/// (reads are not gated), and their blocking work (a script, a bus call waiting on a job) on a thread of its own.
enum ServiceAction {
    /// Gates one action on a service as input is gated (dry run, the terminal's confirmation, the approval policy,
    /// which classifies `label`'s words: name the real verb and its object, "restart unit backup.service"). Nil: go
    /// on; else the text the model reads (the refusal is logged by the gate).
    static func permit(
        tool: String, verb: String, label: String, text: String? = nil, describe: String, context: ToolContext
    ) async -> String? {
        let record = ActionRecord(tool: tool, action: .other(verb), text: text, result: "pending")
        let subject = ActionSubject(label: label, role: "service")
        switch await context.permit(record, describe: describe, subject: subject) {
        case .go: return nil
        case .dryRun: return "dry run: would \(describe)"
        case .declined:
            return
                "the user declined to \(describe); nothing was done. Do not repeat it: ask the user or try another way."
        case .denied(let why): return why
        }
    }

    /// Logs an action that was done, with how it ended ("ok", "error: …").
    static func log(
        tool: String, verb: String, text: String?, result: String, since start: ContinuousClock.Instant,
        context: ToolContext
    ) {
        let ms = (ContinuousClock.now - start) / .milliseconds(1)
        context.log(ActionRecord(tool: tool, action: .other(verb), text: text, result: result, ms: ms))
    }

    /// Runs `body` on a thread of its own and waits for it without holding a thread of the concurrency pool: a
    /// script may run for minutes.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }
}
