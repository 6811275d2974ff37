import Foundation
import XclawAgent
import XclawBase
import XclawMessages

/// What the tools over the desktop's services share: the run's gates in front of every action they take on a service
/// (reads are not gated), as input is gated — dry run, the terminal's confirmation, the approval policy, which
/// classifies the action's label by its words ("delete event Dentist") — and their blocking work (a bus call that may
/// wait for its timeout, a script) on a thread of its own.
enum ServiceAction {
    /// Gates one action on a service. Nil: go on; else the text the model reads (the refusal is logged by the gate).
    /// `label` names the real verb and its object ("restart unit backup.service").
    /// `command`: the command line the action runs, so the policy's `command` kind holds it too.
    static func permit(
        tool: String, verb: String, label: String, text: String? = nil, describe: String, command: String? = nil,
        context: ToolContext
    ) async -> String? {
        let record = ActionRecord(tool: tool, action: .other(verb), text: text, result: "pending")
        let subject = ActionSubject(label: label, role: "service", command: command)
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

    /// Runs `body` on a thread of its own and waits for it without holding a thread of the concurrency pool: a bus
    /// call may wait for its timeout, a script may run for minutes.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }

    /// The whole of one action: the gates, then `act` off the pool when they allow it, logged with its result either
    /// way; returns `act`'s text, or the text that tells the model what happened instead. `label` names it ("create
    /// event Dentist"); `describe`, when given, is how the person asked and the model read it (else the label).
    static func perform(
        tool: String, verb: String, label: String, text: String?, describe: String? = nil, context: ToolContext,
        act: @escaping @Sendable () throws -> String
    ) async throws -> String {
        let shown = describe ?? UntrustedText.escaped(label, limit: 200)
        if let refused = await permit(
            tool: tool, verb: verb, label: label, text: text, describe: shown, context: context)
        {
            return refused
        }
        if context.isCancelled() { throw CancellationError() }
        let start = ContinuousClock.now
        do {
            let result = try await blocking(act)
            log(tool: tool, verb: verb, text: text, result: "ok", since: start, context: context)
            return result
        } catch {
            log(tool: tool, verb: verb, text: text, result: "error: \(error)", since: start, context: context)
            throw ToolError("\(error)")
        }
    }

    /// The text field `key` of a tool's input; `ToolError` naming `action` when it is missing or empty.
    static func required(_ input: JSONValue, _ key: String, for action: String) throws -> String {
        guard let value = input[key]?.string, !value.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ToolError("\(action) needs \(key)")
        }
        return value
    }

    /// The text field `key` of a tool's input, nil when missing or empty.
    static func optional(_ input: JSONValue, _ key: String) -> String? {
        input[key]?.string.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// How a create's answer starts: whether it made the item or found it made by an earlier try.
    static func made(_ created: Bool?) -> String {
        created == false ? "already exists (nothing added): " : "created: "
    }

    /// A listing for the model: one line an item, then what could not be read; `none` when there is nothing.
    static func listing(_ lines: [String], warnings: [String], none: String) -> String {
        let all = lines + warnings.map { "(skipped \($0))" }
        return all.isEmpty ? none : all.joined(separator: "\n")
    }

    /// A read's failure as the model should see it (the error's own message: it says what to do).
    static func read<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await blocking(body)
        } catch let error as ToolError {
            throw error
        } catch {
            throw ToolError("\(error)")
        }
    }
}
