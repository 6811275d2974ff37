import Foundation
import XclawAgent
import XclawMessages
import XclawScreen

/// `capture_screen`: a screenshot for models that use the custom tools instead of the computer tool. The image is
/// scaled to what the model sees unscaled; the text gives both sizes, because custom tools take fractions (0–1).
public struct CaptureScreenTool: AgentTool {
    /// The screen.
    public let session: ScreenSession

    /// Creates the tool.
    public init(session: ScreenSession) { self.session = session }

    /// The tool's name.
    public var name: String { "capture_screen" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Take a screenshot of the whole screen (after it stopped changing). Returns the image and its size. Other "
            + "tools take positions as fractions of the screen (0–1): x = pixel_x / image_width, "
            + "y = pixel_y / image_height."
    }

    /// No input.
    public var inputSchema: JSONValue { ["type": "object", "properties": [:]] }

    /// Settles, captures and returns the model-sized image with "WxH (screen W'xH')".
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        do {
            let shot = try await session.perform { try $0.screenshot() }
            return ToolOutput(content: [
                .text("\(shot.size.width)x\(shot.size.height) (screen \(shot.screen.width)x\(shot.screen.height))"),
                shot.imageBlock,
            ])
        } catch {
            throw modelError(error)
        }
    }
}
