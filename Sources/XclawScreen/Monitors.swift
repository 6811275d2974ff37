import CX11
import CXRandR

/// A monitor (a RandR 1.5 monitor: one or more outputs shown as one area).
public struct Monitor: Codable, Sendable, Hashable {
    /// The monitor's name (`HDMI-1`, `screen` on Xvfb).
    public var name: String
    /// Geometry in root coordinates.
    public var frame: Rect
    /// The primary monitor (the first one when RandR names none).
    public var primary: Bool
}

extension DisplayConnection {
    /// The active monitors (`XRRGetMonitors`); one spanning the screen when RandR is missing or reports none.
    public func monitors() throws -> [Monitor] {
        let screen = try screenRect()
        var eventBase: Int32 = 0, errorBase: Int32 = 0
        let fallback = [Monitor(name: "screen", frame: screen, primary: true)]
        guard XRRQueryExtension(handle, &eventBase, &errorBase) != 0 else { return fallback }
        let monitors: [Monitor] = try trapped { display in
            var count: Int32 = 0
            guard let list = XRRGetMonitors(display, root, 1, &count) else { return [] }
            defer { XRRFreeMonitors(list) }
            return (0..<Int(count)).map { i in
                let m = list[i]
                var name = ""
                if let raw = XGetAtomName(display, m.name) {
                    name = String(cString: raw)
                    XFree(raw)
                }
                return Monitor(
                    name: name,
                    frame: Rect(
                        x: Int(m.x), y: Int(m.y), width: Int(m.width),
                        height: Int(m.height)), primary: m.primary != 0)
            }
        }
        guard !monitors.isEmpty else { return fallback }
        // With no primary set (Xvfb, many bare servers) the first monitor is the primary, as desktops treat it.
        if !monitors.contains(where: \.primary) {
            var marked = monitors
            marked[0].primary = true
            return marked
        }
        return monitors
    }
}
