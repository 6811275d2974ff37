import Foundation
import XclawBase
import XclawScreen

/// What is on screen, as elements with stable refs; the model's compact view of the screen.
public struct Snapshot: Codable, Sendable {
    /// The screen size.
    public var screen: Size
    /// The monitors.
    public var monitors: [Monitor]
    /// The ref of the active window.
    public var activeWindow: String?
    /// The area the elements were taken from.
    public var area: Rect
    /// Windows first (top-most first), then the elements in reading order.
    public var elements: [Element]
    /// OCR work done for this snapshot.
    public var ocr: TextReading.Stats
    /// What the accessibility tree gave, when it was read.
    public var accessibility: AccessibilityStats? = nil
    /// What went wrong on the way without stopping the snapshot (the accessibility tree was unreadable, so OCR
    /// stood in); the CLI prints them on stderr.
    public var warnings: [String]? = nil

    /// snake_case, as every xclaw JSON output.
    enum CodingKeys: String, CodingKey {
        case screen, monitors, area, elements, ocr, accessibility, warnings
        case activeWindow = "active_window"
    }

    /// The element a point acts on: the smallest interactive one containing it, else the smallest of any kind
    /// (windows aside). The approval gate, the step recorder and a replay's checks all judge a point by it.
    public func element(at p: Point) -> Element? {
        elements.filter { $0.role != .window && $0.box.contains(p) }
            .min { a, b in
                (a.role.isInteractive ? 0 : 1, a.box.width * a.box.height)
                    < (b.role.isInteractive ? 0 : 1, b.box.width * b.box.height)
            }
    }

    /// What reading the accessibility tree cost and gave.
    public struct AccessibilityStats: Codable, Sendable, Equatable {
        /// Applications on the bus.
        public var apps: Int
        /// Nodes the helper reported (visible ones and their containers).
        public var nodes: Int
        /// Windows whose contents came from the tree.
        public var windows: Int
        /// Elements taken from the tree.
        public var elements: Int
        /// Wall time of the helper run, in milliseconds.
        public var milliseconds: Double
    }

    /// The text rendering: a header, then one element per line. Windows and controls are always listed; text lines
    /// are listed in reading order until the rendering reaches `budget` characters (~4 per token), and the rest are
    /// counted per window, so a screen full of text still fits a model's context (`xclaw ocr` reads it all).
    public func render(interactiveOnly: Bool = false, budget: Int = 7_500) -> String {
        var lines: [String] = []
        let monitorText = monitors.map { "\($0.name) \($0.frame.width)x\($0.frame.height)+\($0.frame.x)+\($0.frame.y)" }
            .joined(separator: ", ")
        lines.append(
            "screen \(screen.width)x\(screen.height); monitors: \(monitorText); active: \(activeWindow ?? "none")")
        lines.append(
            "# ref role \"label\" [= value] @centre WxH [states] in window; + = new or moved since the last "
                + "snapshot; a window's [atspi] or [ocr] says where its elements come from")
        let fixed = elements.filter { $0.role == .window || $0.role.isInteractive }
        var used = (lines + fixed.map { $0.line() }).reduce(0) { $0 + $1.count + 1 }
        var omitted: [String: Int] = [:]
        for element in elements {
            if element.role == .window || element.role.isInteractive {
                lines.append(element.line())
            } else if !interactiveOnly {
                let line = element.line()
                if used + line.count + 1 <= budget {
                    lines.append(line)
                    used += line.count + 1
                } else {
                    omitted[element.window ?? "the desktop", default: 0] += 1
                }
            }
        }
        for (window, count) in omitted.sorted(by: { $0.key < $1.key }) {
            lines.append("… \(count) more text lines in \(window) (read them with `xclaw ocr`)")
        }
        return lines.joined(separator: "\n")
    }
}
