import Dispatch
import Foundation
import XclawAgent
import XclawBase
import XclawMessages

/// How a tool that works a desktop service (not the screen) runs: its bus calls on a thread outside Swift's
/// cooperative pool (a call may wait for its timeout), and each action it takes (not a read) through the run's gates
/// as input is: dry run, the terminal's confirmation, the approval gate, which classifies the action's label by its
/// words ("delete event Dentist").
enum ServiceAction {
    /// Runs blocking work (bus calls) on a global queue and hands back its result.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Asks the gates for the action `verb` (`create_event`) that `label` names ("create event Dentist"); runs
    /// `act` off the pool when they allow it and returns its text, else the text that tells the model what
    /// happened instead. The action is logged with its result either way.
    static func perform(
        tool: String, verb: String, label: String, text: String?, context: ToolContext,
        act: @escaping @Sendable () throws -> String
    ) async throws -> String {
        let record = ActionRecord(tool: tool, action: .other(verb), text: text, result: "pending")
        let shown = UntrustedText.escaped(label, limit: 200)
        switch await context.permit(
            record, describe: shown, subject: ActionSubject(label: label, role: "service"))
        {
        case .go: break
        case .dryRun: return "dry run: would \(shown); nothing was changed"
        case .declined:
            return "the user declined \(shown); nothing was done. Do not repeat it: ask the user or try another way."
        case .denied(let why): return why
        }
        if context.isCancelled() { throw CancellationError() }
        let start = ContinuousClock.now
        var done = record
        do {
            let result = try await offPool(act)
            done.result = "ok"
            done.ms = milliseconds(since: start)
            context.log(done)
            return result
        } catch {
            done.result = "error: \(error)"
            done.ms = milliseconds(since: start)
            context.log(done)
            throw ToolError("\(error)")
        }
    }

    private static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
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
            return try await offPool(body)
        } catch let error as ToolError {
            throw error
        } catch {
            throw ToolError("\(error)")
        }
    }
}
