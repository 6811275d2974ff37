import Foundation
import XclawMessages

// How a tool's call is drawn over the screenshot it was decided on: the shapes a run report knows, and what a tool
// reads from its call to place them. Each `RecordingTool` draws its own calls (`overlay`); the report turns the
// marks into SVG (`ReportOverlay`, runtime).

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

    /// Creates an action's drawing.
    public init(marks: [OverlayMark], caption: String) { (self.marks, self.caption) = (marks, caption) }
}

/// One tool call as a report draws it: its input and result, the screenshot's size, and where the calls before it
/// left the pointer (fractions of the image), for actions "at the pointer". Coordinates come in three spaces: the
/// computer tool's are the scaled screenshot's own pixels (drawn as they are); `tap_xy`, `swipe` and `scroll` take
/// fractions of the screen (× the image size); `tap_element` and `find_and_tap` report the screen point and element
/// box together with the screen size (× image size / screen size), else the point as fractions.
public struct OverlayCall {
    /// The call's input, as the model sent it.
    public let input: JSONValue
    /// The text of its result, when it was answered.
    public let result: String?
    /// The screenshot's size in pixels.
    public let image: (width: Int, height: Int)
    /// Where the pointer is, in fractions of the image; a call that moves it moves this.
    public var pointer: (x: Double, y: Double)?

    /// A call to draw.
    public init(input: JSONValue, result: String?, image: (width: Int, height: Int), pointer: (x: Double, y: Double)?) {
        (self.input, self.result, self.image, self.pointer) = (input, result, image, pointer)
    }

    /// The image's width.
    var w: Double { Double(image.width) }
    /// The image's height.
    var h: Double { Double(image.height) }

    /// A point in image pixels, kept on the image.
    func fromImage(_ x: Double, _ y: Double) -> ImagePoint { ImagePoint(x: min(max(x, 0), w), y: min(max(y, 0), h)) }

    /// A point given as fractions of the image.
    func fromFractions(_ fx: Double, _ fy: Double) -> ImagePoint { fromImage(fx * w, fy * h) }

    /// The input's `[x, y]` in screenshot pixels at `key`, at the pixel's centre.
    func coordinate(_ key: String) -> ImagePoint? {
        guard let pair = input[key]?.array, pair.count == 2, let x = pair[0].double, let y = pair[1].double,
            x.isFinite, y.isFinite
        else { return nil }
        return fromImage(x.rounded() + 0.5, y.rounded() + 0.5)
    }

    /// The input's fraction at `key`, kept in 0...1.
    func fraction(_ key: String) -> Double? {
        guard let v = input[key]?.double, v.isFinite else { return nil }
        return min(max(v, 0), 1)
    }

    /// Where the pointer is, in image pixels.
    func atPointer() -> ImagePoint? { pointer.map { fromFractions($0.x, $0.y) } }

    /// The pointer is now at `p`.
    mutating func move(_ p: ImagePoint) { pointer = (w > 0 ? p.x / w : 0, h > 0 ? p.y / h : 0) }

    /// The input's string at `key`, or "".
    func text(_ key: String) -> String { input[key]?.string ?? "" }

    /// A tap on an element (`tap_element`, `find_and_tap`): its box and point from the result, captioned with what
    /// was asked for.
    mutating func tapOverlay() -> OverlayAction {
        let wanted = input["label"]?.string ?? input["ref"]?.string ?? input["description"]?.string ?? ""
        let button = input["button"]?.string.flatMap { ["right", "middle"].contains($0) ? $0 + " " : nil } ?? ""
        let caption = (input["double"]?.bool == true ? "double " : "") + button + "tap " + Self.shown(wanted)
        guard let result, let tap = Self.tapped(result, image: image) else {
            return OverlayAction(marks: [], caption: caption)
        }
        move(tap.point)
        var marks: [OverlayMark] = []
        if let box = tap.box { marks.append(box) }
        marks.append(.click(tap.point))
        return OverlayAction(marks: marks, caption: caption)
    }

    /// Wheel clicks at `point` (else at the pointer, which moves there).
    mutating func scrollOverlay(at point: ImagePoint?, direction: String, amount: Int) -> OverlayAction {
        let point = point ?? atPointer()
        if let point { move(point) }
        return OverlayAction(
            marks: point.map { [.scroll(at: $0, direction: direction, amount: amount)] } ?? [],
            caption: "scroll \(direction) \(amount)")
    }

    /// Text for a caption: quoted, control characters visible, at most 80 characters.
    public static func shown(_ text: String) -> String {
        let flat = text.replacingOccurrences(of: "\n", with: "⏎")
        return "“" + (flat.count > 80 ? String(flat.prefix(79)) + "…" : flat) + "”"
    }

    /// Where a `tap_element`/`find_and_tap` result says it tapped: the last "(screen X,Y[; box X,Y WxH] of WxH)" in
    /// it (the last, so a label that contains the pattern cannot move the mark), scaled from the screen to the image;
    /// else its "at x=0.512 y=0.233" fractions.
    public static func tapped(_ result: String, image: (width: Int, height: Int)) -> (
        point: ImagePoint, box: OverlayMark?
    )? {
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
}
