import Foundation
import XclawMessages
import XclawSkills

/// Turns tool calls into overlay marks in the screenshot's pixels, and marks into SVG. Each tool that acts draws its
/// own calls (`RecordingTool.overlay`, in the skills, with the marks' vocabulary: `OverlayCall`, `OverlayMark`);
/// a call of any other tool is listed by its name.
public enum ReportOverlay {
    /// The overlay's colour: magenta, which desktop screenshots rarely contain, over a white halo.
    public static let color = "#ff00ff"

    /// The marks and caption for one call; `pointer` (fractions of the image) is where the pointer was left by the
    /// calls before, for actions "at the pointer", and is moved by this one.
    public static func action(
        tool: String, input: JSONValue, result: String?, image: (width: Int, height: Int),
        pointer: inout (x: Double, y: Double)?
    ) -> OverlayAction {
        var call = OverlayCall(input: input, result: result, image: image, pointer: pointer)
        defer { pointer = call.pointer }
        return RecordingTools.tool(named: tool)?.overlay(&call) ?? OverlayAction(marks: [], caption: tool)
    }

    // MARK: - SVG

    /// The SVG drawn over an image of `width`×`height` pixels (its viewBox), each action's marks numbered as the
    /// list under the image numbers them, and the captions stacked at the top left. All text is escaped.
    public static func svg(_ actions: [(number: Int, action: OverlayAction)], width: Int, height: Int) -> String {
        let unit = max(2, Double(max(width, height)) / 360)  // the stroke width; the rest scales with it
        var body = ""
        for (number, action) in actions {
            for mark in action.marks { body += shape(mark, unit: unit) }
            if let anchor = action.marks.compactMap(labelAnchor).last {
                body += label("\(number)", at: ImagePoint(x: anchor.x + 5 * unit, y: anchor.y - 4 * unit), unit: unit)
            }
        }
        let captions = actions.filter { !$0.action.caption.isEmpty }
        if !captions.isEmpty {
            let size = 4.5 * unit, line = size * 1.35
            let longest = captions.map { "\($0.number) \($0.action.caption)".count }.max() ?? 0
            let boxWidth = min(Double(width), Double(longest) * size * 0.62 + 2 * unit)
            body +=
                "<rect x=\"0\" y=\"0\" width=\"\(f(boxWidth))\" height=\"\(f(Double(captions.count) * line + unit))\" "
                + "fill=\"#000\" fill-opacity=\"0.7\"/>"
            for (i, entry) in captions.enumerated() {
                body +=
                    "<text x=\"\(f(unit))\" y=\"\(f(Double(i + 1) * line - 0.3 * size))\" font-size=\"\(f(size))\" "
                    + "font-family=\"sans-serif\" fill=\"#fff\">"
                    + "<tspan fill=\"\(color)\" font-weight=\"bold\">\(entry.number)</tspan> "
                    + ReportHTML.escape(entry.action.caption) + "</text>"
            }
        }
        return
            "<svg class=\"overlay\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(width) \(height)\" "
            + "preserveAspectRatio=\"none\" aria-hidden=\"true\">" + body + "</svg>"
    }

    /// Where a mark's number goes.
    private static func labelAnchor(_ mark: OverlayMark) -> ImagePoint? {
        switch mark {
        case .click(let p): return p
        case .drag(_, let to): return to
        case .scroll(let at, _, _): return at
        case .box(let x, let y, let w, _): return ImagePoint(x: x + w, y: y)
        }
    }

    /// One mark: drawn twice, a wide white halo under the coloured stroke, so it shows on light and dark screens.
    private static func shape(_ mark: OverlayMark, unit: Double) -> String {
        var paths: [String] = []  // SVG elements without stroke attributes
        switch mark {
        case .click(let p):
            let r = 4 * unit
            paths.append("<circle cx=\"\(f(p.x))\" cy=\"\(f(p.y))\" r=\"\(f(r))\" fill=\"none\"")
            for (dx, dy) in [(1.0, 0.0), (-1, 0), (0, 1), (0, -1)] {
                paths.append(
                    "<line x1=\"\(f(p.x + dx * r * 0.4))\" y1=\"\(f(p.y + dy * r * 0.4))\" "
                        + "x2=\"\(f(p.x + dx * r * 1.8))\" y2=\"\(f(p.y + dy * r * 1.8))\"")
            }
        case .box(let x, let y, let w, let h):
            paths.append(
                "<rect x=\"\(f(x))\" y=\"\(f(y))\" width=\"\(f(max(w, 1)))\" height=\"\(f(max(h, 1)))\" fill=\"none\" "
                    + "stroke-dasharray=\"\(f(3 * unit)) \(f(2 * unit))\"")
        case .drag(let from, let to):
            paths.append("<circle cx=\"\(f(from.x))\" cy=\"\(f(from.y))\" r=\"\(f(2 * unit))\" fill=\"none\"")
            paths += arrow(from: from, to: to, unit: unit)
        case .scroll(let at, let direction, let amount):
            let length = unit * (8 + 3 * Double(min(max(amount, 1), 10)))
            let (dx, dy): (Double, Double) =
                switch direction {
                case "up": (0, -1)
                case "left": (-1, 0)
                case "right": (1, 0)
                default: (0, 1)
                }
            paths.append("<circle cx=\"\(f(at.x))\" cy=\"\(f(at.y))\" r=\"\(f(2 * unit))\" fill=\"none\"")
            paths += arrow(
                from: ImagePoint(x: at.x + dx * 2 * unit, y: at.y + dy * 2 * unit),
                to: ImagePoint(x: at.x + dx * length, y: at.y + dy * length), unit: unit)
        }
        let halo = paths.map { $0 + " stroke=\"#fff\" stroke-width=\"\(f(unit * 2.2))\" stroke-opacity=\"0.8\"/>" }
        let ink = paths.map { $0 + " stroke=\"\(color)\" stroke-width=\"\(f(unit))\"/>" }
        return (halo + ink).joined()
    }

    /// A shaft and a filled arrowhead ending at `to`.
    private static func arrow(from: ImagePoint, to: ImagePoint, unit: Double) -> [String] {
        let dx = to.x - from.x, dy = to.y - from.y
        let length = max((dx * dx + dy * dy).squareRoot(), 0.001)
        let (ux, uy) = (dx / length, dy / length)
        let head = min(5 * unit, length * 0.6)
        let base = ImagePoint(x: to.x - ux * head, y: to.y - uy * head)
        let (px, py) = (-uy * head * 0.5, ux * head * 0.5)
        return [
            "<line x1=\"\(f(from.x))\" y1=\"\(f(from.y))\" x2=\"\(f(base.x))\" y2=\"\(f(base.y))\"",
            "<polygon points=\"\(f(to.x)),\(f(to.y)) \(f(base.x + px)),\(f(base.y + py)) "
                + "\(f(base.x - px)),\(f(base.y - py))\" fill=\"\(color)\"",
        ]
    }

    /// A mark's number: coloured, bold, haloed.
    private static func label(_ text: String, at p: ImagePoint, unit: Double) -> String {
        "<text x=\"\(f(p.x))\" y=\"\(f(p.y))\" font-size=\"\(f(6 * unit))\" font-family=\"sans-serif\" "
            + "font-weight=\"bold\" fill=\"\(color)\" stroke=\"#fff\" stroke-width=\"\(f(unit * 0.8))\" "
            + "paint-order=\"stroke\">\(ReportHTML.escape(text))</text>"
    }

    /// A coordinate with at most one decimal, as SVG reads it.
    private static func f(_ v: Double) -> String {
        // Marks are drawn within a screenshot: a value far outside any (or not a number) is clamped, never trapped on.
        let r = ((v.isFinite ? min(max(v, -1e6), 1e6) : 0) * 10).rounded() / 10
        return r == r.rounded() ? String(Int(r)) : String(r)
    }
}
