/// The mapping between the screen and the downscaled screenshot a model sees.
///
/// Claude resizes any image whose long edge exceeds 1568 px or whose area exceeds ~1.15 MP, by
/// `min(1, 1568 / long_edge, sqrt(1_150_000 / (w * h)))`. Scaling before sending, to a size within both limits,
/// means the model sees exactly our pixels, so coordinates can be mapped back exactly.
///
/// The two axes are mapped separately with integer arithmetic (the factor rounds differently per axis), which
/// keeps the mapping exact for any aspect ratio: every model pixel maps to the screen pixel under its centre, and
/// that screen pixel maps back to the same model pixel.
public struct ScreenGeometry: Sendable, Hashable, Codable {
    /// The real screen (or captured region) size.
    public let screen: Size
    /// The size the model sees; advertise it as `display_width_px` / `display_height_px`.
    public let model: Size

    /// Claude's long-edge limit.
    public static let defaultMaxLongEdge = 1568
    /// Claude's area limit in pixels.
    public static let defaultMaxPixels = 1_150_000

    /// Computes the model size for a screen under the given limits.
    public init(screen: Size, maxLongEdge: Int = defaultMaxLongEdge, maxPixels: Int = defaultMaxPixels) {
        self.screen = screen
        let w = Double(screen.width), h = Double(screen.height)
        let factor = min(1, Double(maxLongEdge) / max(w, h), (Double(maxPixels) / (w * h)).squareRoot())
        var mw = max(1, Int((w * factor).rounded(.down)))
        var mh = max(1, Int((h * factor).rounded(.down)))
        // Floating-point rounding could leave the product a pixel over the limit: never let the model rescale.
        while mw * mh > maxPixels || max(mw, mh) > maxLongEdge {
            if mw >= mh { mw -= 1 } else { mh -= 1 }
        }
        model = Size(width: min(mw, screen.width), height: min(mh, screen.height))
    }

    /// True when the model sees the screen at full size.
    public var isIdentity: Bool { model == screen }

    /// The overall factor (model / screen) along the long edge, for display.
    public var factor: Double {
        screen.width >= screen.height
            ? Double(model.width) / Double(screen.width) : Double(model.height) / Double(screen.height)
    }

    /// Whether a model coordinate lies inside the model's image: bounds are checked in model space.
    public func modelContains(_ p: Point) -> Bool {
        p.x >= 0 && p.y >= 0 && p.x < model.width && p.y < model.height
    }

    /// The screen pixel under the centre of a model pixel: `floor((m + 0.5) * screen / model)`.
    public func toScreen(_ p: Point) -> Point {
        Point(
            x: Self.map(p.x, from: model.width, to: screen.width),
            y: Self.map(p.y, from: model.height, to: screen.height))
    }

    /// The model pixel under the centre of a screen pixel.
    public func toModel(_ p: Point) -> Point {
        Point(
            x: Self.map(p.x, from: screen.width, to: model.width),
            y: Self.map(p.y, from: screen.height, to: model.height))
    }

    /// The screen rectangle that a model rectangle covers (every screen pixel any part of it touches), clamped to
    /// the screen; for zooming into the full-resolution frame.
    public func toScreen(_ r: Rect) -> Rect {
        // Clamped to the model first: coordinates come from a model and may be anything.
        let x0m = max(0, min(model.width, r.x)), y0m = max(0, min(model.height, r.y))
        let x1m = max(x0m, min(model.width, r.x.addingReportingOverflow(r.width).partialValue))
        let y1m = max(y0m, min(model.height, r.y.addingReportingOverflow(r.height).partialValue))
        func lower(_ v: Int, _ m: Int, _ s: Int) -> Int { max(0, min(s, v * s / m)) }
        func upper(_ v: Int, _ m: Int, _ s: Int) -> Int { max(0, min(s, (v * s + m - 1) / m)) }
        let x0 = lower(x0m, model.width, screen.width), y0 = lower(y0m, model.height, screen.height)
        let x1 = upper(x1m, model.width, screen.width)
        let y1 = upper(y1m, model.height, screen.height)
        return Rect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }

    /// `floor((2v + 1) * to / (2 * from))`, clamped: the pixel centre of `v` carried across, in integers.
    private static func map(_ v: Int, from: Int, to: Int) -> Int {
        guard from > 0, to > 0 else { return 0 }
        let clamped = max(0, min(from - 1, v))
        return min(to - 1, (2 * clamped + 1) * to / (2 * from))
    }
}

extension ScreenCapturer {
    /// Captures and scales the frame for the model in one step; the geometry maps the model's coordinates back.
    public func captureForModel(
        _ region: Rect? = nil, maxLongEdge: Int = ScreenGeometry.defaultMaxLongEdge,
        maxPixels: Int = ScreenGeometry.defaultMaxPixels
    ) throws -> (Frame, ScreenGeometry) {
        let frame = try capture(region)
        let geometry = ScreenGeometry(screen: frame.size, maxLongEdge: maxLongEdge, maxPixels: maxPixels)
        return (try frame.downscaled(to: geometry.model), geometry)
    }
}
