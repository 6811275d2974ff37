import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawClient
import XclawMessages
import XclawPerception
import XclawScreen

/// Asks Claude which label a control that diverged has now: one question with one screenshot, for one step. Its
/// answer is untrusted: it only names a label, which the replay then grounds like any other.
public final class ReplayHealer: Sendable {
    private let client: ClaudeClient
    private let model: ModelInfo
    private let confirm: (@Sendable (String) async -> Bool)?
    private let spentUsage: @Sendable (Usage, Double) -> Void
    private let events: @Sendable (String) -> Void
    private let totals = Mutex<(requests: Int, usd: Double)>((0, 0))

    /// A healer with `model`; `confirm` (for `--heal ask`) is asked before a fix is used; `spent` hears each
    /// request's usage and cost (the run records it).
    public init(
        client: ClaudeClient, model: ModelInfo, confirm: (@Sendable (String) async -> Bool)?,
        events: @escaping @Sendable (String) -> Void, spent: @escaping @Sendable (Usage, Double) -> Void
    ) {
        (self.client, self.model, self.confirm, self.events, self.spentUsage) = (client, model, confirm, events, spent)
    }

    /// Whether `mode` heals: nil (auto) heals only with an API key, `never` never; `auto` and `ask` need a key.
    /// Returns the client configuration to heal with, or nil.
    public static func configuration(mode: String?) throws -> ClientConfiguration? {
        if mode == "never" { return nil }
        do {
            return try ClientConfiguration.load()
        } catch ClientError.noAPIKey {
            if mode == nil { return nil }
            throw ReplayError.healingNeedsKey(mode ?? "auto")
        }
    }

    /// Requests made and their cost.
    public var spent: (requests: Int, usd: Double) { totals.withLock { $0 } }

    /// The text that shows a step's outcome now, when the text the recording saw did not appear: the model is asked
    /// whether the screen shows the same outcome in other words. A divergence when it does not.
    public func reconfirm(
        _ step: RecordedStep, expected: String, perceiver: Perceiver, divergence: ReplayDivergence
    ) throws -> String {
        let did: String
        if let t = step.target, !t.label.isEmpty {
            did =
                "pressed the \(t.role) labelled \"\(t.label)\""
                + (t.windowTitle.map { " in the window \"\($0)\"" } ?? "")
        } else {
            did = "did \(step.action)"
        }
        let question =
            "A recorded step \(did). When it was recorded, the text \"\(expected)\" appeared after it. It has just "
            + "been done again, but that text did not appear. If the screen shows the same outcome in other words, "
            + "answer with the exact visible text that shows it and nothing else; if it does not (an error, nothing "
            + "happened, something else happened), answer NONE."
        guard let text = Self.clean(try ask(question, perceiver: perceiver)) else {
            throw ReplayDivergence(reason: divergence.reason + "; the model did not see the same outcome either")
        }
        events("healed: the outcome \(UntrustedText.quoted(expected)) now reads \(UntrustedText.quoted(text))")
        return text
    }

    /// One question with a screenshot; the answer's text.
    private func ask(_ question: String, perceiver: Perceiver) throws -> String {
        let frame = try perceiver.capturer.capture()
        let png = Data(try PNG.encode(frame)).base64EncodedString()
        let (client, model) = (client, self.model)
        return try Blocking.wait { [self] in
            try await VisionRequest.ask(
                client: client, model: model, question: question, pngBase64: png, width: frame.width,
                height: frame.height
            ) { usage in
                let usd = model.price.cost(of: usage)
                totals.withLock {
                    $0.requests += 1
                    $0.usd += usd
                }
                spentUsage(usage, usd)
            }
        }
    }

    /// The answer as a label: trimmed of quotes; nil for NONE, empty, over-long or control-character answers.
    private static func clean(_ answer: String) -> String? {
        let label = answer.trimmingCharacters(in: .whitespacesAndNewlines)
            .trimmingCharacters(in: CharacterSet(charactersIn: "\"'`."))
        guard !label.isEmpty, label.uppercased() != "NONE", label.count <= 200,
            !label.unicodeScalars.contains(where: UntrustedText.isControl)
        else { return nil }
        return label
    }

    /// The label the control of `anchor` has now, as the model reads the screen; a divergence when it sees none, or
    /// names a control whose press needs approval.
    public func relabel(_ anchor: StepAnchor, perceiver: Perceiver, divergence: ReplayDivergence) throws -> String {
        let question =
            "A recorded step pressed the \(anchor.role) labelled \"\(anchor.label)\""
            + (anchor.windowTitle.map { " in the window \"\($0)\"" } ?? "")
            + ", which is no longer on the screen as it was. Which visible control does the same thing now? Answer "
            + "with its exact visible label and nothing else, or NONE if there is no such control."
        guard let label = Self.clean(try ask(question, perceiver: perceiver)) else {
            throw ReplayDivergence(reason: divergence.reason + "; the model saw no such control either")
        }
        if let kind = ApprovalPolicy.all.classify(ActionSubject(label: label, role: anchor.role)) {
            throw ReplayDivergence(
                reason: divergence.reason
                    + "; the model named \(UntrustedText.quoted(label)), a \(kind.rawValue) action, "
                    + "which a replay does not heal")
        }
        if let confirm {
            let question =
                "xclaw: use \(UntrustedText.quoted(label)) for \(UntrustedText.quoted(anchor.label))? [y/N] "
            let yes: Bool = Blocking.start { await confirm(question) }.1()
            guard yes else {
                throw ReplayDivergence(
                    reason: divergence.reason + "; the fix \(UntrustedText.quoted(label)) was refused")
            }
        }
        events("healed: \(UntrustedText.quoted(anchor.label)) is now \(UntrustedText.quoted(label))")
        return label
    }
}
