import XclawBase

/// How large a screenshot a model takes, by the API's rules: the reference rule (long edge ≤ 1568 px and ≤ 1568 tiles
/// of 28x28 px, as Anthropic's `target_image_size` ports it), or high resolution (long edge ≤ 2576 px and ≤ 3.75 MP,
/// coordinates 1:1 with the image), each optionally capped further by the user (`--screenshot-size`).
public struct ImageSizing: Sendable, Hashable, Codable {
    /// The longest edge the model takes.
    public var maxLongEdge: Int
    /// The most 28x28 tiles the model takes (the reference rule), or nil.
    public var maxTiles: Int?
    /// The most pixels the model takes (high resolution), or nil.
    public var maxPixels: Int?
    /// A box the image must also fit in (`1080p`: 1920x1080), or nil for the model's own limit.
    public var cap: Size?

    /// Creates a sizing.
    public init(maxLongEdge: Int, maxTiles: Int? = nil, maxPixels: Int? = nil, cap: Size? = nil) {
        (self.maxLongEdge, self.maxTiles, self.maxPixels, self.cap) = (maxLongEdge, maxTiles, maxPixels, cap)
    }

    /// The API's reference rule: long edge ≤ 1568 px, ≤ 1568 tiles of 28x28 px (1920x1080 → 1456x819).
    public static let reference = ImageSizing(maxLongEdge: 1568, maxTiles: 1568)
    /// High-resolution models (Opus 4.7 and later, Sonnet 5, Fable 5): long edge ≤ 2576 px, ≤ 3.75 MP.
    public static let highRes = ImageSizing(maxLongEdge: 2576, maxPixels: 3_750_000)
    /// The side of a vision tile.
    public static let tile = 28

    /// The same sizing, also fitting `cap`.
    public func capped(_ cap: Size?) -> ImageSizing {
        var copy = self
        copy.cap = cap
        return copy
    }

    /// The input tokens an image of `size` costs, by the API's estimate: width × height / 750, rounded up.
    public static func tokens(_ size: Size) -> Int { PNGHeader.tokens(width: size.width, height: size.height) }

    /// Tiles an image of `w`x`h` costs: ceil(w/28)·ceil(h/28).
    public static func tiles(_ w: Int, _ h: Int) -> Int { ((w - 1) / tile + 1) * ((h - 1) / tile + 1) }

    /// Whether an image of `w`x`h` is within every limit.
    public func fits(_ w: Int, _ h: Int) -> Bool {
        guard w >= 1, h >= 1, max(w, h) <= maxLongEdge else { return false }
        if let maxTiles, Self.tiles(w, h) > maxTiles { return false }
        if let maxPixels, w * h > maxPixels { return false }
        if let cap, w > cap.width || h > cap.height { return false }
        return true
    }

    /// The largest size with the screen's aspect within every limit: the screen itself when it fits, else a binary
    /// search over the long edge with the short one rounded (the reference algorithm; portrait screens transposed).
    public func target(for screen: Size) -> Size {
        let (width, height) = (max(1, screen.width), max(1, screen.height))
        if fits(width, height) { return Size(width: width, height: height) }
        if height > width {
            var transposed = self
            transposed.cap = cap.map { Size(width: $0.height, height: $0.width) }
            let t = transposed.target(for: Size(width: height, height: width))
            return Size(width: t.height, height: t.width)
        }
        let aspect = Double(width) / Double(height)
        var (lo, hi) = (1, width)  // lo always fits (or is 1), hi never does
        while lo + 1 < hi {
            let mid = (lo + hi) / 2
            if fits(mid, max(Int((Double(mid) / aspect).rounded()), 1)) { lo = mid } else { hi = mid }
        }
        return Size(width: lo, height: max(Int((Double(lo) / aspect).rounded()), 1))
    }
}

extension ImageSizing {
    /// The box `--screenshot-size` names: `native` (nil: the model's own limit), `1080p` (1920x1080), `720p`
    /// (1280x720) or `WxH`.
    public static func cap(parsing text: String) throws -> Size? {
        switch text.lowercased() {
        case "native": return nil
        case "1080p": return Size(width: 1920, height: 1080)
        case "720p": return Size(width: 1280, height: 720)
        default:
            let parts = text.lowercased().split(separator: "x")
            guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), (64...8192).contains(w),
                (64...8192).contains(h)
            else {
                throw ScreenError.invalidArgument(
                    "a screenshot size is native, 1080p, 720p or WxH (64 to 8192 each, e.g. 1600x900), not \(text)")
            }
            return Size(width: w, height: h)
        }
    }

    /// The configured cap: `screenshot_size` in the config file (default: native).
    public static func configuredCap(environment: [String: String] = XclawPaths.environment) throws -> Size? {
        guard let text = ConfigValues.value("screenshot_size", environment: environment) else { return nil }
        return try cap(parsing: text)
    }
}

/// The mapping between the screen and the downscaled screenshot a model sees.
///
/// The API resizes any image over its limits again before the model sees it, and the model then answers in a space
/// xclaw never saw. Scaling before sending, to a size within the limits (`ImageSizing`), means the model sees
/// exactly our pixels, so coordinates can be mapped back exactly.
///
/// The two axes are mapped separately with integer arithmetic (the factor rounds differently per axis), which
/// keeps the mapping exact for any aspect ratio: every model pixel maps to the screen pixel under its centre, and
/// that screen pixel maps back to the same model pixel.
public struct ScreenGeometry: Sendable, Hashable, Codable {
    /// The real screen (or captured region) size.
    public let screen: Size
    /// The size the model sees; advertise it as `display_width_px` / `display_height_px`.
    public let model: Size

    /// Computes the model size for a screen under `sizing` (default: the reference rule).
    public init(screen: Size, sizing: ImageSizing = .reference) {
        self.screen = screen
        let target = sizing.target(for: screen)
        model = Size(width: min(target.width, screen.width), height: min(target.height, screen.height))
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
    public func captureForModel(_ region: Rect? = nil, sizing: ImageSizing = .reference) throws -> (
        Frame, ScreenGeometry
    ) {
        let frame = try capture(region)
        let geometry = ScreenGeometry(screen: frame.size, sizing: sizing)
        return (try frame.downscaled(to: geometry.model), geometry)
    }
}
