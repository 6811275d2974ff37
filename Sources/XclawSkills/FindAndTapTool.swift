import Foundation
import XclawAgent
import XclawMessages
import XclawPerception
import XclawScreen

/// `find_and_tap`: clicks something described in words. OCR first (fast, exact, free): a single strong match on a
/// snapshot is tapped; otherwise Claude's vision is asked for the point on a screenshot, which is bounds-checked in
/// the screenshot's pixels and mapped back to the screen exactly.
public struct FindAndTapTool: RecordingTool {
    /// The screen.
    public let session: ScreenSession
    /// Locates what OCR cannot.
    public let vision: VisionAsker
    /// The lowest OCR match score taken without asking vision (0.8 = equal once OCR look-alikes are folded).
    public static let ocrThreshold = 0.8

    /// Creates the tool.
    public init(session: ScreenSession, vision: @escaping VisionAsker) {
        self.session = session
        self.vision = vision
    }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Click something described in words: a label (\"Save\") or a description (\"the gear icon at the top "
            + "right\"). Visible text is matched by OCR first; otherwise a vision model locates it on a screenshot. "
            + "Reports which way it was found and where it clicked."
    }

    /// The description and how to click.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["description"],
            "properties": [
                "description": [
                    "type": "string", "description": "The element's visible text, or what it looks like and where.",
                ],
                "button": ["type": "string", "enum": ["left", "right", "middle"], "description": "Default left."],
                "double": ["type": "boolean", "description": "Double-click (default false)."],
            ],
        ]
    }

    /// Where a search led: an OCR match, or a screenshot for vision.
    private enum Lookup: Sendable {
        case ocr(Match)
        case vision(Screenshot, ScreenGeometry)
    }

    /// OCR, else vision; then gate, click, settle, report.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let wanted = input["description"]?.string?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard !wanted.isEmpty else { throw ToolError("description is required: the text or look of what to click") }
        let button = try mouseButton(input)
        let double = input["double"]?.bool ?? false
        let lookup: Lookup
        do {
            lookup = try await session.perform { session -> Lookup in
                let settled = try session.settle()
                let snapshot = try session.snapshot()
                let matches = Finder.find(wanted, in: snapshot).filter { $0.score >= Self.ocrThreshold }
                if let top = matches.first, matches.filter({ abs($0.score - top.score) < 0.001 }).count == 1 {
                    return .ocr(top)
                }
                // None, or several equally good: vision sees the whole picture.
                return .vision(try session.encodeForModel(settled.frame, as: .png), session.geometry)
            }
        } catch {
            throw modelError(error)
        }

        let point: Point
        let how: String
        var box: Rect?
        switch lookup {
        case .ocr(let match):
            point = match.point
            box = match.box
            how =
                "found by OCR: \(match.ref) \(match.role.rawValue) \(quoted(match.text)) score "
                + String(format: "%.2f", match.score)
        case .vision(let shot, let geometry):
            let model = try await locate(wanted, in: shot)
            point = geometry.toScreen(model)
            how =
                "located by vision at (\(model.x), \(model.y)) in the \(shot.size.width)x\(shot.size.height) "
                + "screenshot"
        }
        let record = ActionRecord(
            tool: name, action: double ? .doubleTap : .tap, x: point.x, y: point.y,
            text: wanted, result: "pending")
        let describe = "\(double ? "double-click" : "click") \(quoted(wanted)) at (\(point.x), \(point.y)) (\(how))"
        do {
            // The gate classifies what the model asked for (vision's point has no element of its own).
            let outcome = try await session.runInput(
                record, describe: describe, context: context,
                subject: isGenericAnswer(wanted) ? nil : ActionSubject(label: wanted, role: "button")
            ) { session in
                try session.input.click(at: point, button: button, count: double ? 2 : 1)
            }
            switch outcome {
            case .skipped(let text): return .text(text)
            case .done(_, let settle, _, _):
                return .text(
                    "tapped \(quoted(wanted)) at \(normalizedText(point, screen: session.geometry.screen)) "
                        + tapPlacement(point, box: box, screen: session.geometry.screen) + "; \(how)"
                        + settleNote(settle))
            }
        } catch {
            throw modelError(error)
        }
    }

    /// Asks vision for the point, in the screenshot's pixels; refuses answers that are not a point on it.
    private func locate(_ wanted: String, in shot: Screenshot) async throws -> Point {
        let W = shot.size.width, H = shot.size.height
        let prompt = """
            Locate this on the screenshot: \(wanted)
            The screenshot is \(W)x\(H) pixels. Answer with only a JSON object and no other text: \
            {"x": <integer>, "y": <integer>}, the pixel coordinates of the centre of that element in this screenshot \
            (0 <= x < \(W), 0 <= y < \(H)). If it is not visible, answer {"found": false}.
            """
        let answer: String
        do {
            answer = try await vision(prompt, shot.base64, shot.size)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ToolError(
                "find_and_tap: OCR found no single match for \(quoted(wanted)) and the vision model "
                    + "failed (\(error)); try tap_element with a visible label, or tap_xy")
        }
        guard let object = Self.firstJSONObject(in: answer) else {
            throw ToolError(
                "find_and_tap: OCR found no single match for \(quoted(wanted)) and the vision model's "
                    + "answer had no point in it (\(quoted(answer, limit: 120))); describe it differently or use tap_xy"
            )
        }
        if object["found"]?.bool == false {
            throw ToolError(
                "\(quoted(wanted)) is not on screen (OCR found no match, vision did not see it); "
                    + "scroll or open the right window first, or describe it differently")
        }
        func number(_ key: String) -> Int? {
            let v =
                object[key]?.double ?? object[key]?.string.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard let v, v.isFinite, abs(v) < 1e9 else { return nil }
            return Int(v.rounded())
        }
        guard let x = number("x"), let y = number("y") else {
            throw ToolError(
                "find_and_tap: the vision model answered without x and y (\(quoted(answer, limit: 120))); "
                    + "describe the target differently or use tap_xy")
        }
        guard x >= 0, y >= 0, x < W, y < H else {
            throw ToolError(
                "find_and_tap: the vision model pointed at (\(x), \(y)), outside the \(W)x\(H) "
                    + "screenshot; nothing was clicked. Describe the target differently or use tap_xy.")
        }
        return Point(x: x, y: y)
    }

    /// The first balanced `{…}` in `text` that parses as a JSON object (answers may wrap it in prose or fences).
    static func firstJSONObject(in text: String) -> JSONValue? {
        let chars = Array(text)
        var start = 0
        while let open = chars[start...].firstIndex(of: "{") {
            var depth = 0, inString = false, escaped = false
            var end: Int?
            for i in open..<chars.count {
                let c = chars[i]
                if inString {
                    if escaped {
                        escaped = false
                    } else if c == "\\" {
                        escaped = true
                    } else if c == "\"" {
                        inString = false
                    }
                    continue
                }
                if c == "\"" {
                    inString = true
                } else if c == "{" {
                    depth += 1
                } else if c == "}" {
                    depth -= 1
                    if depth == 0 { end = i; break }
                }
            }
            if let end, let value = try? JSONValue.parse(String(chars[open...end])), value.object != nil {
                return value
            }
            start = open + 1
        }
        return nil
    }
}

extension FindAndTapTool {
    /// The tool's name.
    public static var toolName: String { "find_and_tap" }

    /// Its taps and double taps, clicks on the element found again.
    public static var playbacks: [RecordedAction: any ActionPlayback] {
        [.tap: ClickPlayback(), .doubleTap: ClickPlayback(count: 2)]
    }

    /// The element's box and the point tapped, from the result.
    public static func overlay(_ call: inout OverlayCall) -> OverlayAction { call.tapOverlay() }
}
