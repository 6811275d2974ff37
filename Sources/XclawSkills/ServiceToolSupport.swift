import Dispatch
import Foundation
import XclawAgent
import XclawBase
import XclawServices

/// What the tools over desktop services (media, notifications) share: bus calls block, so they run off the
/// concurrency pool; an action on a service passes the run's gates as input does, named by a verb phrase the approval
/// policy can classify ("send notification …", "pause media player mpv").
enum ServiceToolSupport {
    /// Runs blocking bus work on a thread outside Swift's cooperative pool (a call waits up to its timeout), with its
    /// errors turned into what the model should read.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global(qos: .userInitiated).async { continuation.resume(with: Result { try body() }) }
            }
        } catch let error as ClassifiedError {
            throw ToolError(error.description)
        }
    }

    /// Asks the run's gates for a service action; nil to go ahead, else the text the model reads (nothing was done).
    /// `label` names the action and its object, for the person asked and the approval policy.
    static func refusal(
        _ context: ToolContext, tool: String, verb: String, label: String, text: String?
    ) async -> String? {
        let record = ActionRecord(tool: tool, action: .other(verb), text: text, result: "pending")
        switch await context.permit(record, describe: label, subject: ActionSubject(label: label, role: "service")) {
        case .go: return nil
        case .dryRun: return "dry run: would \(label)"
        case .declined:
            return "the user declined to \(label); nothing was done. Do not repeat it: ask the user or try another way."
        case .denied(let why): return why
        }
    }

    /// Logs how a service action that went ahead ended.
    static func log(
        _ context: ToolContext, tool: String, verb: String, text: String?, since start: ContinuousClock.Instant,
        error: (any Error)? = nil
    ) {
        context.log(
            ActionRecord(
                tool: tool, action: .other(verb), text: text, result: error.map { "error: \($0)" } ?? "ok",
                ms: millisecondsSince(start)))
    }
}
