import Foundation
import XclawMessages

/// A point in a screenshot's pixels (fractional: marks are drawn at pixel centres).
public struct ImagePoint: Sendable, Hashable {
    /// From the left edge.
    public var x: Double
    /// From the top edge.
    public var y: Double

    /// Creates a point.
    public init(x: Double, y: Double) { (self.x, self.y) = (x, y) }
}

/// A shape a run report draws over the screenshot a step's action was decided on, in that image's pixels.
public enum OverlayMark: Sendable, Hashable {
    /// A click (or press, tap, move): a ring with a crosshair.
    case click(ImagePoint)
    /// The element a tap aimed at (`tap_element`, `find_and_tap`), or a zoomed region: a dashed rectangle.
    case box(x: Double, y: Double, width: Double, height: Double)
    /// A drag from one point to another: a line ending in an arrowhead.
    case drag(from: ImagePoint, to: ImagePoint)
    /// Wheel clicks at a point: an arrow pointing the way the content moves under the wheel.
    case scroll(at: ImagePoint, direction: String, amount: Int)
}

/// The marks and the one-line caption of one tool call, as the report draws and lists it.
public struct OverlayAction: Sendable, Hashable {
    /// Shapes on the screenshot (none for screenshots, keys and typing).
    public var marks: [OverlayMark]
    /// What the call did, in words (typed text and keys included), shown on the image and under it.
    public var caption: String
}

/// Turns tool calls into overlay marks in the screenshot's pixels, and marks into SVG. Coordinates come in three
/// spaces: the computer tool's are the scaled screenshot's own pixels (drawn as they are); `tap_xy`, `swipe` and
/// `scroll` take fractions of the screen (× the image size); `tap_element` and `find_and_tap` report the screen
/// point and element box together with the screen size (× image size / screen size), else the point as fractions.
/// The screen size is read from the result itself, so no step needs another to be mapped.
public enum ReportOverlay {
    /// The overlay's colour: magenta, which desktop screenshots rarely contain, over a white halo.
    public static let color = "#ff00ff"

    /// The marks and caption for one call; `pointer` (fractions of the image) is where the pointer was left by the
    /// calls before, for actions "at the pointer", and is moved by this one.
    public static func action(
        tool: String, input: JSONValue, result: String?, image: (width: Int, height: Int),
        pointer: inout (x: Double, y: Double)?
    ) -> OverlayAction {
        let w = Double(image.width), h = Double(image.height)
        func fromImage(_ x: Double, _ y: Double) -> ImagePoint {
            ImagePoint(x: min(max(x, 0), w), y: min(max(y, 0), h))
        }
        func fromFractions(_ fx: Double, _ fy: Double) -> ImagePoint { fromImage(fx * w, fy * h) }
        func coordinate(_ key: String) -> ImagePoint? {
            guard let pair = input[key]?.array, pair.count == 2, let x = pair[0].double, let y = pair[1].double,
                x.isFinite, y.isFinite
            else { return nil }
            return fromImage(x.rounded() + 0.5, y.rounded() + 0.5)
        }
        func fraction(_ key: String) -> Double? {
            guard let v = input[key]?.double, v.isFinite else { return nil }
            return min(max(v, 0), 1)
        }
        func atPointer() -> ImagePoint? { pointer.map { fromFractions($0.x, $0.y) } }
        func move(_ p: ImagePoint) { pointer = (w > 0 ? p.x / w : 0, h > 0 ? p.y / h : 0) }
        func text(_ key: String) -> String { input[key]?.string ?? "" }

        switch tool {
        case "computer":
            let action = text("action")
            switch action {
            case "left_click", "right_click", "middle_click", "double_click", "triple_click", "left_mouse_down",
                "left_mouse_up", "mouse_move":
                let point = coordinate("coordinate") ?? atPointer()
                if let point { move(point) }
                let held = input["text"]?.string.map { " holding \($0)" } ?? ""
                return OverlayAction(
                    marks: point.map { [.click($0)] } ?? [],
                    caption: action.replacingOccurrences(of: "_", with: " ") + held
                        + (coordinate("coordinate") == nil ? " at the pointer" : ""))
            case "left_click_drag":
                guard let from = coordinate("start_coordinate"), let to = coordinate("coordinate") else {
                    return OverlayAction(marks: [], caption: "drag")
                }
                move(to)
                return OverlayAction(marks: [.drag(from: from, to: to)], caption: "drag")
            case "scroll":
                let point = coordinate("coordinate") ?? atPointer()
                if let point { move(point) }
                let direction = text("scroll_direction"), amount = input["scroll_amount"]?.int ?? 0
                return OverlayAction(
                    marks: point.map { [.scroll(at: $0, direction: direction, amount: amount)] } ?? [],
                    caption: "scroll \(direction) \(amount)")
            case "type":
                return OverlayAction(marks: [], caption: "type " + shown(text("text")))
            case "key", "hold_key":
                return OverlayAction(marks: [], caption: (action == "key" ? "key " : "hold ") + text("text"))
            case "zoom":
                guard let r = input["region"]?.array?.compactMap(\.double), r.count == 4 else {
                    return OverlayAction(marks: [], caption: "zoom")
                }
                let a = fromImage(r[0], r[1]), b = fromImage(r[2], r[3])
                return OverlayAction(
                    marks: [.box(x: a.x, y: a.y, width: b.x - a.x, height: b.y - a.y)], caption: "zoom")
            default:
                return OverlayAction(marks: [], caption: action.isEmpty ? "computer" : action)
            }
        case "tap_xy":
            guard let x = fraction("x"), let y = fraction("y") else { return OverlayAction(marks: [], caption: tool) }
            let point = fromFractions(x, y)
            move(point)
            return OverlayAction(marks: [.click(point)], caption: "tap")
        case "swipe":
            guard let fx = fraction("from_x"), let fy = fraction("from_y"), let tx = fraction("to_x"),
                let ty = fraction("to_y")
            else { return OverlayAction(marks: [], caption: "swipe") }
            let to = fromFractions(tx, ty)
            move(to)
            return OverlayAction(marks: [.drag(from: fromFractions(fx, fy), to: to)], caption: "swipe")
        case "scroll":
            let direction = text("direction"), amount = input["amount"]?.int ?? 3
            let point = fraction("x").flatMap { x in fraction("y").map { fromFractions(x, $0) } } ?? atPointer()
            if let point { move(point) }
            return OverlayAction(
                marks: point.map { [.scroll(at: $0, direction: direction, amount: amount)] } ?? [],
                caption: "scroll \(direction) \(amount)")
        case "tap_element", "find_and_tap":
            let wanted = input["label"]?.string ?? input["ref"]?.string ?? input["description"]?.string ?? ""
            let caption = "tap " + shown(wanted)
            guard let result, let tap = tapped(result, image: image) else {
                return OverlayAction(marks: [], caption: caption)
            }
            move(tap.point)
            var marks: [OverlayMark] = []
            if let box = tap.box { marks.append(box) }
            marks.append(.click(tap.point))
            return OverlayAction(marks: marks, caption: caption)
        case "type_text":
            let into = input["into"]?.string.map { " into " + shown($0) } ?? ""
            let submit = input["submit"]?.bool == true ? " and Return" : ""
            return OverlayAction(marks: [], caption: "type " + shown(text("text")) + into + submit)
        case "press_button":
            return OverlayAction(marks: [], caption: "press " + text("name"))
        default:
            return OverlayAction(marks: [], caption: tool)
        }
    }

    /// Text for a caption: quoted, control characters visible, at most 80 characters.
    static func shown(_ text: String) -> String {
        let flat = text.replacingOccurrences(of: "\n", with: "⏎")
        return "“" + (flat.count > 80 ? String(flat.prefix(79)) + "…" : flat) + "”"
    }

    /// Where a `tap_element`/`find_and_tap` result says it tapped: the last "(screen X,Y[; box X,Y WxH] of WxH)" in
    /// it (the last, so a label that contains the pattern cannot move the mark), scaled from the screen to the image;
    /// else its "at x=0.512 y=0.233" fractions.
    static func tapped(_ result: String, image: (width: Int, height: Int)) -> (point: ImagePoint, box: OverlayMark?)? {
        let w = Double(image.width), h = Double(image.height)
        // At most 6 digits a number: screen text that mimics the placement cannot make an absurd one.
        let placement =
            #"\(screen (\d{1,6}),(\d{1,6})(?:; box (\d{1,6}),(\d{1,6}) (\d{1,6})x(\d{1,6}))? of (\d{1,6})x(\d{1,6})\)"#
        if let regex = try? NSRegularExpression(pattern: placement),
            let match = regex.matches(in: result, range: NSRange(result.startIndex..., in: result)).last
        {
            func number(_ i: Int) -> Double? {
                Range(match.range(at: i), in: result).flatMap { Double(result[$0]) }
            }
            if let x = number(1), let y = number(2), let sw = number(7), let sh = number(8), sw > 0, sh > 0 {
                let (fx, fy) = (w / sw, h / sh)
                let point = ImagePoint(x: (x + 0.5) * fx, y: (y + 0.5) * fy)
                var box: OverlayMark?
                if let bx = number(3), let by = number(4), let bw = number(5), let bh = number(6) {
                    box = .box(x: bx * fx, y: by * fy, width: bw * fx, height: bh * fy)
                }
                return (point, box)
            }
        }
        let fractions = #"at x=([0-9.]+) y=([0-9.]+)"#
        if let regex = try? NSRegularExpression(pattern: fractions),
            let match = regex.matches(in: result, range: NSRange(result.startIndex..., in: result)).last,
            let xr = Range(match.range(at: 1), in: result), let yr = Range(match.range(at: 2), in: result),
            let fx = Double(result[xr]), let fy = Double(result[yr]), (0...1).contains(fx), (0...1).contains(fy)
        {
            return (ImagePoint(x: fx * w, y: fy * h), nil)
        }
        return nil
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
