import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawPerception
import XclawScreen

/// `read_screen_text`: OCR of the screen or a region, line by line with positions, so the model can read text
/// exactly (a screenshot's small text is often illegible to it) and tap what it read.
public struct ReadScreenTextTool: AgentTool {
    /// The screen.
    public let session: ScreenSession

    /// Creates the tool.
    public init(session: ScreenSession) { self.session = session }

    /// The tool's name.
    public var name: String { "read_screen_text" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Read the text on the screen (OCR), or in a region of it, in reading order. Each line comes with its centre "
            + "as fractions of the screen (x, y in 0–1, usable with tap_xy) and its box in screen pixels."
    }

    /// An optional normalized region.
    public var inputSchema: JSONValue { ["type": "object", "properties": ["region": regionSchema]] }

    /// Settles, reads the settled frame (no second capture) and lists the lines.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        do {
            let screen = session.geometry.screen
            let area = try screenRegion(input["region"], screen: screen)
            let reading = try await session.perform { session -> TextReading in
                let settled = try session.settle(area: area)
                return try session.perceiver.read(
                    settled.frame, area: settled.area,
                    windows: try session.perceiver.windows.list())
            }
            let place = area.map { "region \($0.x),\($0.y) \($0.width)x\($0.height)" } ?? "the screen"
            guard !reading.lines.isEmpty else { return .text("no text found in \(place)") }
            var out: [String] = []
            for line in reading.lines {
                let b = line.box
                out.append(
                    "\(quoted(line.text, limit: 200)) at \(normalizedText(b.center, screen: screen)) "
                        + "box \(b.x),\(b.y) \(b.width)x\(b.height)")
            }
            let header = "\(reading.lines.count) lines in \(place) (screen \(screen.width)x\(screen.height)):\n"
            return .text(header + UntrustedText.screenData(out.joined(separator: "\n"), source: "ocr"))
        } catch {
            throw modelError(error)
        }
    }
}
