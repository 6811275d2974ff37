import Foundation
import XclawScreen

// Scenes the tests of several layers share.

/// A fixture window with known text in several fonts, sizes and themes, buttons, check boxes, an empty field beside
/// its label and a repeated label.
public let perceptionWidgets: [String] = [
    "--text", "20,20,9x15,#000000:Plain label nine",
    "--text", "20,60,6x13,#000000:small six thirteen",
    "--text", "20,100,12x24,#000000:Large twelve",
    "--text", "20,150,10x20,#ffffff,#202020:Dark Mode Label",
    "--text", "20,200,9x15bold,#1a1a80:Bold blue words",
    "--button", "300,20,100,30:Save",
    "--button", "420,20,100,30:Cancel",
    "--checkbox", "300,130:Remember me",
    "--checkbox", "300,158:Keep me posted",
    "--text", "300,80,9x15,#000000:Name",
    "--field", "360,74,200,28",
    "--text", "20,250,9x15,#000000:Repeat",
    "--text", "300,250,9x15,#000000:Repeat",
]

/// The widget fixture on a 1280x800 display, painted and ready to read.
public final class WidgetScene: Sendable {
    /// Where the fixture window's top-left corner is.
    public static let origin = Point(x: 100, y: 80)
    /// The display.
    public let display: TestDisplay
    /// The widget window.
    public let fixture: Fixture

    /// Starts both; painted once the fixture reported ready.
    public init() throws {
        display = try TestDisplay(size: Size(width: 1280, height: 800))
        fixture = try Fixture(
            display: display.name, title: "widgets",
            frame: Rect(x: Self.origin.x, y: Self.origin.y, width: 640, height: 300),
            extra: perceptionWidgets)
    }
}

/// Known rectangles on a dark window, for pixel-exact capture checks.
public enum CaptureScene {
    /// The window, on screen.
    public static let frame = Rect(x: 100, y: 50, width: 300, height: 200)
    /// The window's background.
    public static let background = "#202830"
    /// The rectangles, in window coordinates, and their colours.
    public static let rects: [(Rect, String)] = [
        (Rect(x: 10, y: 10, width: 40, height: 30), "#ff0000"), (Rect(x: 60, y: 10, width: 40, height: 30), "#00ff00"),
        (Rect(x: 110, y: 10, width: 40, height: 30), "#0000ff"), (Rect(x: 10, y: 100, width: 1, height: 1), "#123456"),
        (Rect(x: 200, y: 150, width: 99, height: 49), "#fedcba"),
    ]

    /// A display with the window on it.
    public static func start() throws -> Scene {
        try Scene(title: "capture target", frame: frame, background: background, rects: rects)
    }

    /// One pixel to compare: where, what a frame shows there, and what the scene painted.
    public struct PixelCheck {
        /// Which pixel, for the failure message.
        public var what: String
        /// The frame's pixel (nil: outside the frame).
        public var seen: RGB?
        /// The painted colour.
        public var expected: RGB
    }

    /// The pixels to check in a frame whose top-left is at `origin` on screen: each rectangle's corners, a pixel of
    /// background just outside each, and the black root beside the window when the frame reaches that far.
    public static func pixelChecks(_ image: Frame, origin: Point) throws -> [PixelCheck] {
        var checks: [PixelCheck] = []
        for (rect, hex) in rects {
            let expected = try RGB(hex: hex)
            for (dx, dy) in [(0, 0), (rect.width - 1, 0), (0, rect.height - 1), (rect.width - 1, rect.height - 1)] {
                let x = frame.x + rect.x + dx - origin.x, y = frame.y + rect.y + dy - origin.y
                checks.append(
                    PixelCheck(what: "\(hex) at \(x),\(y)", seen: image.pixel(x: x, y: y), expected: expected))
            }
            // Just outside the rectangle is background.
            checks.append(
                PixelCheck(
                    what: "background beside \(hex)",
                    seen: image.pixel(x: frame.x + rect.x - 1 - origin.x, y: frame.y + rect.y - origin.y),
                    expected: try RGB(hex: background)))
        }
        // The root window outside the fixture is black on Xvfb (when the frame reaches that far).
        if let outside = image.pixel(x: frame.x - 1 - origin.x, y: frame.y - origin.y) {
            checks.append(PixelCheck(what: "root beside the window", seen: outside, expected: RGB(r: 0, g: 0, b: 0)))
        }
        return checks
    }
}
