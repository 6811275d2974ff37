import Foundation
import XclawAgent
import XclawMessages
import XclawPerception
import XclawScreen

/// `watch_screen`: waits for something to happen (text to appear or vanish, any change, stillness) instead of the
/// model polling with screenshots; cheap, because frames are compared by hash and OCR runs only on changed pixels.
public struct WatchScreenTool: AgentTool {
    /// The screen.
    public let session: ScreenSession

    /// Creates the tool.
    public init(session: ScreenSession) { self.session = session }

    /// The tool's name.
    public var name: String { "watch_screen" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Wait until something happens on screen, then report it: condition \"text_appears\" or \"text_gone\" (with "
            + "text, matched like tap_element labels), \"change\" (any pixel changes) or \"stable\" (nothing changed "
            + "for stable_ms). Use it after starting something slow (a download, a build, a dialog) instead of "
            + "taking screenshots repeatedly. Fails with what was last seen when timeout_s passes."
    }

    /// One condition, its parameter, an optional region and the timeout.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["condition"],
            "properties": [
                "condition": [
                    "type": "string", "enum": ["text_appears", "text_gone", "change", "stable"],
                    "description": "What to wait for.",
                ],
                "text": ["type": "string", "description": "For text_appears and text_gone: the text, e.g. \"Saved\"."],
                "stable_ms": [
                    "type": "integer", "minimum": 50, "maximum": 60000,
                    "description": "For stable: how long nothing may change (default 500).",
                ],
                "region": regionSchema,
                "timeout_s": [
                    "type": "number", "minimum": 0.1, "maximum": 120,
                    "description": "Give up after this many seconds (default 10).",
                ],
            ],
        ]
    }

    /// Polls until the condition holds, the timeout passes (a `ToolError` with what was seen) or the run is
    /// cancelled.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let kind = input["condition"]?.string ?? ""
        let text = input["text"]?.string?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let condition: WatchCondition
        switch kind {
        case "text_appears", "text_gone":
            guard !text.isEmpty else { throw ToolError("text is required for \(kind): the text to wait for") }
            condition = kind == "text_appears" ? .textAppears(text) : .textGone(text)
        case "change":
            condition = .change
        case "stable":
            let ms = input["stable_ms"]?.int ?? 500
            guard (50...60_000).contains(ms) else {
                throw ToolError("stable_ms must be a whole number from 50 to 60000")
            }
            condition = .stable(.milliseconds(ms))
        default:
            throw ToolError("condition must be \"text_appears\", \"text_gone\", \"change\" or \"stable\"")
        }
        let timeout = input["timeout_s"]?.double ?? 10
        guard timeout.isFinite, (0.1...120).contains(timeout) else {
            throw ToolError("timeout_s must be a number of seconds from 0.1 to 120")
        }
        let screen = session.geometry.screen
        do {
            let area = try screenRegion(input["region"], screen: screen)
            let cancelled = context.isCancelled
            let result = try await session.perform { session in
                try Self.watch(
                    condition, area: area, timeout: .milliseconds(Int(timeout * 1000)), session: session,
                    cancelled: cancelled)
            }
            var line = "\(result.condition): after \(Int(result.elapsedMs)) ms"
            if let match = result.match {
                line +=
                    " — \(quoted(match.text)) at \(normalizedText(match.point, screen: screen)) (screen "
                    + "\(match.point.x),\(match.point.y))"
            }
            return .text(line)
        } catch let error as PerceptionError {
            if case .timedOut(let what, let last) = error {
                throw ToolError(
                    "timed out after \(timeout) s waiting for \(what); last seen: \(last). If it may take "
                        + "longer, call watch_screen again with a larger timeout_s (up to 120); else look at the screen."
                )
            }
            throw modelError(error)
        } catch {
            throw modelError(error)
        }
    }

    /// How a watch ended.
    private struct Outcome: Sendable {
        var condition: String
        var elapsedMs: Double
        var match: Match?
    }

    /// The watch loop. Text conditions run the perception layer's watcher in short slices so cancellation is seen
    /// within half a second; change and stability compare frame hashes directly.
    private static func watch(
        _ condition: WatchCondition, area: Rect?, timeout: Duration, session: ScreenSession,
        cancelled: @Sendable () -> Bool
    ) throws -> Outcome {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + timeout
        switch condition {
        case .textAppears, .textGone:
            let watcher = Watcher(perceiver: session.perceiver, interval: .milliseconds(50))
            while true {
                if cancelled() { throw CancellationError() }
                let slice = min(.milliseconds(500), max(.zero, deadline - clock.now))
                do {
                    let result = try watcher.wait(for: condition, area: area, timeout: slice)
                    return Outcome(
                        condition: result.condition, elapsedMs: millisecondsSince(start), match: result.match)
                } catch PerceptionError.timedOut(let what, let last) {
                    if clock.now >= deadline { throw PerceptionError.timedOut(condition: what, lastObserved: last) }
                }
            }
        default:
            var first: UInt64?, last: UInt64?
            var lastChange = start
            while true {
                if cancelled() { throw CancellationError() }
                let taken = clock.now
                let hash = Settler.hash(try session.capturer.capture(area))
                func done() -> Outcome {
                    Outcome(condition: condition.description, elapsedMs: millisecondsSince(start), match: nil)
                }
                if case .stable(let quiet) = condition {
                    if hash != last {
                        lastChange = taken
                        last = hash
                    } else if taken - lastChange >= quiet {
                        return done()
                    }
                } else {
                    if let first, hash != first { return done() }
                    if first == nil { first = hash }
                }
                if taken >= deadline {
                    let seen: String
                    if case .stable = condition {
                        seen = "the screen last changed \(Int((clock.now - lastChange) / .milliseconds(1))) ms ago"
                    } else {
                        seen = "no change"
                    }
                    throw PerceptionError.timedOut(condition: condition.description, lastObserved: seen)
                }
                Thread.sleep(forTimeInterval: 0.03)
            }
        }
    }
}
