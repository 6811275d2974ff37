import CXclawShim
import Foundation
import XclawBase
import XclawScreen

/// What `watch` waits for.
public enum WatchCondition: Sendable, CustomStringConvertible {
    /// Text matching the label is on screen (in the area).
    case textAppears(String)
    /// No text matching the label is on screen (in the area).
    case textGone(String)
    /// The area's pixels differ from when the watch began.
    case change
    /// The area's pixels have not changed for this long.
    case stable(Duration)
    /// The pixel has this colour (screen coordinates), each channel within `tolerance` (0–255) of it, as AutoHotkey's
    /// PixelSearch variation: themes and antialiasing shift colours by a few units.
    case pixel(Point, RGB, tolerance: Int = 0)
    /// The template matches somewhere in the area (a score of at least the options' confidence).
    case imageAppears(ImageTemplate, ImageSearchOptions)
    /// The template matches nowhere in the area.
    case imageGone(ImageTemplate, ImageSearchOptions)
    /// A window whose id or title matches is on screen (xdotool `search --sync`).
    case windowAppears(String)
    /// No window matches any more.
    case windowGone(String)
    /// A matching window has the input focus.
    case windowActive(String)

    /// The condition in words, for messages and `--json`.
    public var description: String {
        switch self {
        case .textAppears(let t): return "text \"\(t)\" to appear"
        case .textGone(let t): return "text \"\(t)\" to vanish"
        case .change: return "a change"
        case .stable(let d): return "the screen to be stable for \(Int(d.milliseconds)) ms"
        case .pixel(let p, let c, let tolerance):
            return "pixel \(p.x),\(p.y) to be \(c.hex)" + (tolerance > 0 ? " ± \(tolerance)" : "")
        case .imageAppears(let t, _): return "image \(t.path) to appear"
        case .imageGone(let t, _): return "image \(t.path) to vanish"
        case .windowAppears(let w): return "window \"\(w)\" to appear"
        case .windowGone(let w): return "window \"\(w)\" to vanish"
        case .windowActive(let w): return "window \"\(w)\" to be active"
        }
    }
}

/// How a watch ended.
public struct WatchResult: Codable, Sendable {
    /// The condition, in words.
    public var condition: String
    /// Milliseconds from the start until the condition held.
    public var elapsedMs: Double
    /// Frames compared.
    public var polls: Int
    /// OCR passes run (only when pixels changed).
    public var ocrPasses: Int
    /// For text conditions: the match that appeared (or the last one seen before it vanished).
    public var match: Match?
    /// For pixel conditions: the colour seen.
    public var colour: String?
    /// For image conditions: where it appeared (or was last seen before it vanished).
    public var image: ImageMatch? = nil
    /// For window conditions: the window (for `windowGone`, as last seen).
    public var window: WindowInfo? = nil

    /// snake_case, as every xclaw JSON output; the pixel's colour is `color`, as `pixel` and `find --color` say.
    enum CodingKeys: String, CodingKey {
        case condition, polls, match, image, window
        case elapsedMs = "elapsed_ms"
        case ocrPasses = "ocr_passes"
        case colour = "color"
    }
}

/// Polls the screen cheaply: each poll captures the area and compares a hash of its pixels with the last one; OCR
/// runs only when they changed (and then only on the blocks that changed, through the recognizer's cache).
public struct Watcher {
    /// The perception objects of the display.
    public let perceiver: Perceiver
    /// Time between polls.
    public var interval: Duration

    /// What time is measured and waited on: the real clock, or a test clock for the timing logic.
    public var clock: any Clock<Duration>
    /// Where frames of an area come from: the screen unless a test gives a fixed sequence.
    public var frames: @Sendable (Rect) throws -> Frame

    /// Creates a watcher polling every `interval` (default 50 ms).
    public init(
        perceiver: Perceiver, interval: Duration = .milliseconds(50),
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.perceiver = perceiver
        self.interval = interval
        self.clock = clock
        let capturer = perceiver.capturer
        frames = { try capturer.capture($0) }
    }

    /// Waits until `condition` holds in `area` (default: the screen) or `timeout` passes; a timeout throws
    /// `PerceptionError.timedOut` with what was last observed.
    public func wait(for condition: WatchCondition, area: Rect? = nil, timeout: Duration) throws -> WatchResult {
        let fixed = try area ?? perceiver.connection.screenRect()
        return try wait(for: condition, timeout: timeout) { fixed }
    }

    /// Waits as `wait(for:area:timeout:)` does, asking `area` again at each poll: a window's area follows the window.
    /// An app's window can exist before it has its place (xterm's is 1×1 at 0,0 until it maps), and a watch that
    /// kept that first rectangle looked at one pixel until its timeout.
    public func wait(
        for condition: WatchCondition, timeout: Duration, area: () throws -> Rect
    ) throws -> WatchResult {
        let clock = self.clock  // a local, so the existential opens for the generic call
        return try poll(for: condition, area: area, timeout: timeout, on: clock)
    }

    private func poll<C: Clock<Duration>>(
        for condition: WatchCondition, area currentArea: () throws -> Rect, timeout: Duration,
        on clock: C
    ) throws -> WatchResult {
        let start = clock.now
        let deadline = start.advanced(by: timeout)
        var polls = 0, ocrPasses = 0
        var firstHash: UInt64?, lastHash: UInt64?
        var lastChange = start
        var lastText = ""
        var lastMatch: Match?
        var lastImage: ImageMatch?
        func result(
            match: Match? = nil, colour: String? = nil, image: ImageMatch? = nil, window: WindowInfo? = nil
        ) -> WatchResult {
            WatchResult(
                condition: condition.description, elapsedMs: start.duration(to: clock.now).milliseconds, polls: polls,
                ocrPasses: ocrPasses, match: match, colour: colour, image: image, window: window)
        }
        var lastWindow: WindowInfo?
        while true {
            let now = clock.now
            // Window conditions read the window list, not pixels.
            switch condition {
            case .windowAppears(let name), .windowGone(let name), .windowActive(let name):
                polls += 1
                var found: WindowInfo?
                do { found = try perceiver.windows.find(name) } catch ScreenError.windowNotFound(_) { found = nil }
                switch condition {
                case .windowAppears: if let found { return result(window: found) }
                case .windowGone:
                    if found == nil { return result(window: lastWindow) }
                    lastWindow = found
                default:
                    if let found, found.active { return result(window: found) }
                }
                lastText =
                    found.map {
                        "window \(String(format: "0x%x", $0.id)) \"\($0.title)\""
                            + ($0.active ? " active" : " not active")
                    }
                    ?? "no window matches \"\(name)\""
                if now >= deadline {
                    throw PerceptionError.timedOut(condition: condition.description, lastObserved: lastText)
                }
                ClockSleep.until(min(deadline, clock.now.advanced(by: interval)), on: clock)
                continue
            default: break
            }
            let area = try currentArea()
            let frame: Frame
            if case .pixel(let p, _, _) = condition {
                frame = try frames(Rect(x: p.x, y: p.y, width: 1, height: 1))
            } else {
                frame = try frames(area)
            }
            polls += 1
            let hash = Self.hash(frame)
            let changed = hash != lastHash
            if changed { lastChange = now }
            defer { lastHash = hash }
            switch condition {
            case .pixel(let p, let colour, let tolerance):
                let seen = frame.pixel(x: 0, y: 0)
                if let seen, seen.within(tolerance, of: colour) { return result(colour: seen.hex) }
                lastText = "pixel \(p.x),\(p.y) is \(seen?.hex ?? "off screen")"
            case .change:
                if firstHash == nil { firstHash = hash } else if hash != firstHash { return result() }
                lastText = "no change in \(area)"
            case .stable(let quiet):
                if lastHash != nil && lastChange.duration(to: now) >= quiet { return result() }
                lastText = "last change \(Int(lastChange.duration(to: now).milliseconds)) ms ago"
            case .imageAppears(let template, let options), .imageGone(let template, let options):
                // Pixels that did not change cannot change the answer: search only when they did.
                if changed {
                    let found = try TemplateMatcher.find(
                        template, in: frame, origin: Point(x: area.x, y: area.y), options: options
                    ).first
                    lastText =
                        found.map { "matched \($0.summary)" }
                        ?? "no match scoring \(String(format: "%.2f", options.confidence))"
                    if case .imageAppears = condition, let found { return result(image: found) }
                    if case .imageGone = condition {
                        if found == nil { return result(image: lastImage) }
                        lastImage = found
                    }
                }
            case .windowAppears, .windowGone, .windowActive:
                break  // answered above
            case .textAppears(let label), .textGone(let label):
                if changed {
                    ocrPasses += 1
                    let reading = try perceiver.read(frame, area: area, windows: try perceiver.windows.list())
                    let snapshot = Snapshot(
                        screen: frame.size, monitors: [], activeWindow: nil, area: area,
                        elements: reading.lines.enumerated().map { i, line in
                            Element(
                                ref: "t\(i)", role: .text, label: line.text, box: line.box,
                                window: nil, windowID: nil, changed: false, active: nil,
                                className: nil, confidence: line.confidence, words: line.words)
                        }, ocr: reading.stats)
                    let found = Finder.find(label, in: snapshot).first { $0.score >= 0.9 }
                    lastText = reading.text.isEmpty ? "no text" : "text: " + String(reading.text.prefix(300))
                    if case .textAppears = condition, let found { return result(match: found) }
                    if case .textGone = condition {
                        if found == nil { return result(match: lastMatch) }
                        lastMatch = found
                    }
                }
            }
            if now >= deadline {
                throw PerceptionError.timedOut(condition: condition.description, lastObserved: lastText)
            }
            ClockSleep.until(min(deadline, clock.now.advanced(by: interval)), on: clock)
        }
    }

    /// The errors that mean "not yet" while waiting for a target (nothing matches, matches tie or are only
    /// guesses, the window does not exist yet, the image scores too low): `retry` goes on after them.
    public static func isNotYet(_ error: Error) -> Bool {
        switch error {
        case PerceptionError.notFound, PerceptionError.ambiguous, PerceptionError.uncertain,
            ScreenError.windowNotFound, ImageSearchError.belowConfidence, ImageSearchError.ambiguous,
            ImageSearchError.colorNotFound:
            return true
        default: return false
        }
    }

    /// Waits for something to be on screen, for `find`/`tap --timeout`: `attempt` runs on the area (a window may not
    /// exist yet: `area` is asked again each poll) at once, then each time its pixels changed and have been still for
    /// `settle`, so a target drawn mid-animation is not taken. An error `retryable` accepts (not found, not yet sure)
    /// means "not yet"; any other ends the wait. On timeout: `timedOut`, naming the last error seen.
    public func retry<T>(
        _ what: String, timeout: Duration, settle: Duration = .milliseconds(150), area: () throws -> Rect,
        retryable: (Error) -> Bool, attempt: (Rect) throws -> T
    ) throws -> T {
        let clock = self.clock
        return try retry(
            what, timeout: timeout, settle: settle, area: area, retryable: retryable, attempt: attempt, on: clock)
    }

    private func retry<T, C: Clock<Duration>>(
        _ what: String, timeout: Duration, settle: Duration, area: () throws -> Rect, retryable: (Error) -> Bool,
        attempt: (Rect) throws -> T, on clock: C
    ) throws -> T {
        let deadline = clock.now.advanced(by: timeout)
        var lastError: Error?
        var seen: UInt64?, tried: UInt64?
        var lastChange = clock.now
        var first = true
        while true {
            let now = clock.now
            do {
                let rect = try area()
                let hash = Self.hash(try frames(rect))
                if hash != seen { (seen, lastChange) = (hash, now) }
                if first || (hash != tried && lastChange.duration(to: now) >= settle) {
                    first = false
                    tried = hash
                    return try attempt(rect)
                }
            } catch  where retryable(error) {
                lastError = error
            }
            if now >= deadline {
                throw PerceptionError.timedOut(
                    condition: what,
                    lastObserved: lastError.map { "\($0)".split(separator: "\n").prefix(4).joined(separator: "; ") }
                        ?? "nothing")
            }
            ClockSleep.until(min(deadline, clock.now.advanced(by: interval)), on: clock)
        }
    }

    /// Waits until the area has not changed for `quiet` (settle detection after an action); bounded by `timeout`.
    public func waitUntilStable(
        area: Rect? = nil, quiet: Duration = .milliseconds(300),
        timeout: Duration = .seconds(5)
    ) throws -> WatchResult {
        try wait(for: .stable(quiet), area: area, timeout: timeout)
    }

    /// A content hash of a frame's pixels (the X padding byte included: it is always 0).
    static func hash(_ frame: Frame) -> UInt64 {
        frame.bgrx.withUnsafeBufferPointer {
            xclaw_hash_gray($0.baseAddress, Int32(frame.width * 4), 0, 0, Int32(frame.width * 4), Int32(frame.height))
        }
    }
}
