/// The sizes a window accepts, from its `WM_NORMAL_HINTS` (ICCCM 4.1.2.3): a minimum and maximum, and steps of
/// `increment` from `base` (a terminal's character cells). A window manager keeps a window to them; with none, the
/// client may snap back to them itself. So a resize asks for the nearest size they allow, and is done on reaching it.
public struct SizeHints: Sendable, Hashable {
    /// The smallest size (`PMinSize`).
    public var minimum: Size?
    /// The largest size (`PMaxSize`).
    public var maximum: Size?
    /// Where the steps count from (`PBaseSize`; the minimum when absent, as ICCCM says).
    public var base: Size?
    /// The steps (`PResizeInc`).
    public var increment: Size?

    /// Hints that accept any size.
    public init(minimum: Size? = nil, maximum: Size? = nil, base: Size? = nil, increment: Size? = nil) {
        (self.minimum, self.maximum, self.base, self.increment) = (minimum, maximum, base, increment)
    }

    /// The accepted size nearest `size` on each axis: on a step from the base (halves round up), within the
    /// minimum and maximum, at least 1.
    public func nearest(to size: Size) -> Size {
        // ICCCM: each stands in for the other when one is missing.
        let low = minimum ?? base
        return Size(
            width: Self.axis(size.width, low?.width, maximum?.width, (base ?? minimum)?.width, increment?.width),
            height: Self.axis(size.height, low?.height, maximum?.height, (base ?? minimum)?.height, increment?.height))
    }

    /// What they say, for a message: "steps of 6x13 from 4x4".
    public var spoken: String {
        var parts: [String] = []
        if let increment, increment.width > 1 || increment.height > 1 {
            let from = base ?? minimum ?? Size(width: 0, height: 0)
            parts.append("sizes in steps of \(increment.width)x\(increment.height) from \(from.width)x\(from.height)")
        }
        if let minimum { parts.append("at least \(minimum.width)x\(minimum.height)") }
        if let maximum { parts.append("at most \(maximum.width)x\(maximum.height)") }
        return parts.isEmpty ? "any size" : parts.joined(separator: ", ")
    }

    private static func axis(_ value: Int, _ low: Int?, _ high: Int?, _ base: Int?, _ step: Int?) -> Int {
        let origin = max(0, base ?? 0)
        let step = max(1, step ?? 1)
        var result = value
        if step > 1 {
            let steps = Int((Double(value - origin) / Double(step)).rounded(.toNearestOrAwayFromZero))
            result = origin + max(0, steps) * step
        }
        // The bounds, kept on a step: the first step at or above the minimum, the last at or below the maximum.
        if let low, result < low { result = origin + Int((Double(low - origin) / Double(step)).rounded(.up)) * step }
        if let high, high >= max(1, low ?? 1), result > high {
            result = origin + Int((Double(high - origin) / Double(step)).rounded(.down)) * step
        }
        return min(32767, max(1, result))
    }
}
