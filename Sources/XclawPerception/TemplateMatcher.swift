import CXclawShim
import Foundation
import XclawBase
import XclawScreen

/// Why an image or colour search failed, with what the user can do about it.
public enum ImageSearchError: Error, CustomStringConvertible, Equatable, ClassifiedError {
    /// The template file is missing, unreadable, not a PNG, or a PNG libpng cannot decode.
    case unreadableTemplate(path: String, reason: String)
    /// The template is one colour: correlation is undefined for it (every window would match, or none).
    case flatTemplate(path: String, color: RGB)
    /// The template (at every scale asked for) is larger than the area searched.
    case templateTooLarge(path: String, template: Size, area: Rect)
    /// No position scores `confidence`; `best` is the best one scoring at least `floor`, if any does.
    case belowConfidence(path: String, confidence: Double, best: ImageMatch?, floor: Double)
    /// Several places match equally and nothing tells them apart.
    case ambiguous(path: String, candidates: [ImageMatch])
    /// `--nth` asks for more equally good matches than there are.
    case fewerMatches(path: String, nth: Int, count: Int)
    /// No pixel of the area has the colour.
    case colorNotFound(color: RGB, tolerance: Int, area: Rect)
    /// The search could not allocate its buffers.
    case outOfMemory

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .unreadableTemplate(let path, let reason):
            return "cannot use \(path) as a template: \(reason); give a PNG file, e.g. one made with "
                + "`xclaw capture --region X,Y,W,H -o \(URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent).png`"
        case .flatTemplate(let path, let color):
            return "\(path) is one flat colour (\(color.hex)), which matches anywhere or nowhere; capture something "
                + "with an edge in it, or search for the colour with `xclaw find --color \(color.hex)`"
        case .templateTooLarge(let path, let template, let area):
            return "\(path) (\(template)) is larger than the area searched (\(area.width)x\(area.height) at "
                + "\(area.x),\(area.y)); widen --region or --window, or use a smaller template or --scales"
        case .belowConfidence(let path, let confidence, let best, let floor):
            let seen =
                best.map { "the best is \(String(format: "%.4f", $0.score)) at \($0.summary)" }
                ?? "no place even scores \(String(format: "%.2f", floor))"
            return
                "nothing on screen matches \(path) with --confidence \(String(format: "%.3g", confidence)) (\(seen)); "
                + "lower --confidence, try --grayscale or --scales for a changed theme or size, or capture the "
                + "template again"
        case .ambiguous(let path, let candidates):
            return "\(path) matches \(candidates.count) places equally; pick one with --nth N (reading order), "
                + "--region or --window, or list them with --all:\n  "
                + candidates.map(\.summary).joined(separator: "\n  ")
        case .fewerMatches(let path, let nth, let count):
            return "--nth \(nth) asks for more than the \(count) equally good match\(count == 1 ? "" : "es") of \(path)"
        case .colorNotFound(let color, let tolerance, let area):
            return "no pixel is \(color.hex)" + (tolerance > 0 ? " ± \(tolerance)" : "")
                + " in \(area.width)x\(area.height) at \(area.x),\(area.y); check with `xclaw pixel X,Y`, or "
                + "allow --tolerance N"
        case .outOfMemory: return "the image search could not allocate its buffers (out of memory)"
        }
    }

    /// Bad files are bad input (2); no match, a tie or no such colour is "not found" (1).
    public var exitStatus: ExitStatus {
        switch self {
        case .unreadableTemplate, .flatTemplate, .templateTooLarge: return .usage
        case .belowConfidence, .ambiguous, .fewerMatches, .colorNotFound: return .notFound
        case .outOfMemory: return .internal
        }
    }
}

/// An image to look for on screen (PyAutoGUI's locateOnScreen, SikuliX's find): a PNG, alpha ignored.
public struct ImageTemplate: Sendable {
    /// The path as the user gave it, for messages.
    public let path: String
    /// Its pixels.
    public let frame: Frame

    /// The largest template file read: a screen-sized PNG is far smaller.
    public static let maximumFileBytes = 64 << 20

    /// Reads the PNG at `resolved` (`path` resolved against the caller's directory); every failure is an
    /// `unreadableTemplate` or `flatTemplate` error naming `path`.
    public init(path: String, resolved: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: resolved, isDirectory: &isDirectory) else {
            throw ImageSearchError.unreadableTemplate(path: path, reason: "no such file")
        }
        if isDirectory.boolValue { throw ImageSearchError.unreadableTemplate(path: path, reason: "it is a directory") }
        guard let handle = FileHandle(forReadingAtPath: resolved) else {
            throw ImageSearchError.unreadableTemplate(path: path, reason: "it cannot be opened (permission denied?)")
        }
        defer { try? handle.close() }
        let data: Data
        do { data = try handle.read(upToCount: Self.maximumFileBytes + 1) ?? Data() } catch {
            throw ImageSearchError.unreadableTemplate(
                path: path, reason: "reading failed: \(error.localizedDescription)")
        }
        if data.count > Self.maximumFileBytes {
            throw ImageSearchError.unreadableTemplate(path: path, reason: "it is larger than 64 MB")
        }
        let signature: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
        guard data.count >= 8, Array(data.prefix(8)) == signature else {
            throw ImageSearchError.unreadableTemplate(
                path: path, reason: data.isEmpty ? "the file is empty" : "it is not a PNG file")
        }
        let frame: Frame
        do { frame = try PNG.decode([UInt8](data)) } catch {
            throw ImageSearchError.unreadableTemplate(path: path, reason: "\(error)")
        }
        try self.init(frame: frame, path: path)
    }

    /// A template from pixels already in memory (a crop of a capture, in tests and benches).
    public init(frame: Frame, path: String) throws {
        guard frame.width * frame.height <= 1 << 20, frame.width <= 4096, frame.height <= 4096 else {
            throw ImageSearchError.unreadableTemplate(
                path: path, reason: "\(frame.size) is larger than a template may be (1 megapixel, 4096 pixels a side)")
        }
        if let first = frame.pixel(x: 0, y: 0), Self.isFlat(frame) {
            throw ImageSearchError.flatTemplate(path: path, color: first)
        }
        self.path = path
        self.frame = frame
    }

    /// Whether every pixel has the first pixel's colour (the X byte ignored).
    static func isFlat(_ frame: Frame) -> Bool {
        frame.bgrx.withUnsafeBytes { raw in
            let pixels = raw.bindMemory(to: UInt32.self)
            guard let first = pixels.first else { return true }
            return pixels.allSatisfy { $0 & 0x00ff_ffff == first & 0x00ff_ffff }
        }
    }
}

/// A place on screen where a template matches, with how well.
public struct ImageMatch: Codable, Sendable, Hashable {
    /// Where the template lies, in screen pixels.
    public var box: Rect
    /// The point a tap clicks: the box's centre.
    public var center: Point
    /// Normalised cross-correlation, -1 to 1 (1: the same pixels up to brightness and contrast).
    public var score: Double
    /// The template's scale for this match (1 unless `--scales` was given).
    public var scale: Double

    /// Creates a match; the centre follows from the box.
    public init(box: Rect, score: Double, scale: Double = 1) {
        self.box = box; self.center = box.center; self.score = score; self.scale = scale
    }

    /// One line for listings: `@cx,cy WxH at x,y score 0.9987`.
    public var summary: String {
        "@\(center.x),\(center.y) \(box.width)x\(box.height) at \(box.x),\(box.y) score "
            + String(format: "%.4f", score) + (scale == 1 ? "" : " scale \(scale)")
    }
}

/// How an image search matches.
public struct ImageSearchOptions: Sendable, Hashable {
    /// The lowest score that counts as a match. 0.9: a template captured from the screen scores 1 where it came
    /// from, anti-aliasing or a slightly changed colour costs a few hundredths, and different content of the same
    /// kind (another icon, other text) rarely passes 0.8. PyAutoGUI asks 0.999 by default, SikuliX 0.7.
    public var confidence: Double
    /// Match grey levels instead of colour: a recoloured accent still matches, and the search is a little faster.
    public var grayscale: Bool
    /// Template sizes to try, as factors (1: as captured).
    public var scales: [Double]

    /// The default confidence, documented in docs/perception.md ("Images and colours").
    public static let defaultConfidence = 0.9

    /// Creates options.
    public init(confidence: Double = defaultConfidence, grayscale: Bool = false, scales: [Double] = [1]) {
        self.confidence = confidence; self.grayscale = grayscale; self.scales = scales
    }
}

/// Normalised cross-correlation template matching (OpenCV's TM_CCOEFF_NORMED) through the C kernel in
/// CXclawShim, which scores exactly every position its bounds cannot rule out: as the exhaustive search, but faster.
public enum TemplateMatcher {
    /// One position's score, top-left corner in the searched frame's pixels.
    public struct Hit: Sendable, Hashable {
        /// Left edge in the frame.
        public var x: Int
        /// Top edge in the frame.
        public var y: Int
        /// The score.
        public var score: Double
    }

    /// What one kernel run found.
    public struct RawSearch: Sendable {
        /// Every position scoring at least the threshold, in no order.
        public var hits: [Hit]
        /// The best position scored exactly (at least the best hit; nil when none was scored).
        public var best: Hit?
        /// Positions looked at, left after the first bound, and scored exactly.
        public var positions: Int, stage2: Int, exact: Int
    }

    /// Every position of `template` in `frame` scoring at least `threshold`; `exhaustive` scores all of them (the
    /// reference for tests). Throws `templateTooLarge` (with a placeholder path) when the template does not fit.
    public static func search(
        _ template: Frame, in frame: Frame, threshold: Double, grayscale: Bool, exhaustive: Bool = false
    ) throws -> RawSearch {
        var capacity = 4096
        while true {
            var hits = [xclaw_match_hit](repeating: xclaw_match_hit(), count: capacity)
            var best = xclaw_match_hit()
            var stats = xclaw_match_stats()
            let count = frame.bgrx.withUnsafeBufferPointer { image in
                template.bgrx.withUnsafeBufferPointer { tpl in
                    hits.withUnsafeMutableBufferPointer { out in
                        xclaw_match_template(
                            image.baseAddress, Int32(frame.width), Int32(frame.height), tpl.baseAddress,
                            Int32(template.width), Int32(template.height), grayscale ? 1 : 0, threshold,
                            exhaustive ? 1 : 0, out.baseAddress, Int32(capacity), &best, &stats)
                    }
                }
            }
            switch Int(count) {
            case XCLAW_MATCH_TOO_LARGE:
                throw ImageSearchError.templateTooLarge(
                    path: "the template", template: template.size, area: Rect(size: frame.size))
            case XCLAW_MATCH_FLAT:
                throw ImageSearchError.flatTemplate(
                    path: "the template", color: template.pixel(x: 0, y: 0) ?? RGB(r: 0, g: 0, b: 0))
            case XCLAW_MATCH_NO_MEMORY: throw ImageSearchError.outOfMemory
            case ..<0:
                throw ImageSearchError.unreadableTemplate(
                    path: "the template", reason: "\(template.size) cannot be searched for")
            default: break
            }
            // More hits than room: search again with room for all (the same positions, deterministically).
            if Int(count) > capacity {
                guard Int(count) <= 1 << 22 else { throw ImageSearchError.outOfMemory }
                capacity = Int(count)
                continue
            }
            return RawSearch(
                hits: hits.prefix(Int(count)).map { Hit(x: Int($0.x), y: Int($0.y), score: $0.score) },
                best: best.score < -1.5 ? nil : Hit(x: Int(best.x), y: Int(best.y), score: best.score),
                positions: stats.positions, stage2: stats.stage2, exact: stats.exact)
        }
    }

    /// The template resized by `scale` (area-averaged down, bilinear up); nil when that leaves it empty.
    public static func scaled(_ template: Frame, by scale: Double) throws -> Frame? {
        if scale == 1 { return template }
        let size = Size(
            width: Int((Double(template.width) * scale).rounded()),
            height: Int((Double(template.height) * scale).rounded()))
        guard size.width >= 1, size.height >= 1 else { return nil }
        if size.width <= template.width && size.height <= template.height { return try template.downscaled(to: size) }
        let smaller = Size(width: min(size.width, template.width), height: min(size.height, template.height))
        let source = try template.downscaled(to: smaller)
        let pixels = [UInt8](unsafeUninitializedCapacity: size.width * size.height * 4) { buffer, count in
            source.bgrx.withUnsafeBufferPointer { src in
                _ = xclaw_upscale_bgrx(
                    src.baseAddress, Int32(source.width), Int32(source.height), buffer.baseAddress,
                    Int32(size.width), Int32(size.height))
            }
            count = size.width * size.height * 4
        }
        return try Frame(width: size.width, height: size.height, bgrx: pixels)
    }

    /// Every match of `template` in `frame` (captured at `origin` on screen) scoring at least `threshold` (default:
    /// the options' confidence), at every scale asked for, overlapping ones suppressed: best first, equal scores in
    /// reading order.
    public static func find(
        _ template: ImageTemplate, in frame: Frame, origin: Point, options: ImageSearchOptions,
        threshold: Double? = nil
    ) throws -> [ImageMatch] {
        var candidates: [ImageMatch] = []
        var fitted = false
        for scale in options.scales {
            guard let image = try scaled(template.frame, by: scale),
                image.width <= frame.width, image.height <= frame.height, !ImageTemplate.isFlat(image)
            else { continue }
            fitted = true
            let raw = try search(
                image, in: frame, threshold: threshold ?? options.confidence, grayscale: options.grayscale)
            candidates += raw.hits.map {
                ImageMatch(
                    box: Rect(x: origin.x + $0.x, y: origin.y + $0.y, width: image.width, height: image.height),
                    score: $0.score, scale: scale)
            }
        }
        guard fitted else {
            throw ImageSearchError.templateTooLarge(
                path: template.path, template: template.frame.size, area: Rect(origin: origin, size: frame.size))
        }
        return suppressed(candidates)
    }

    /// Non-maximum suppression: the best candidates first, each kept only if it overlaps none kept before it.
    public static func suppressed(_ candidates: [ImageMatch]) -> [ImageMatch] {
        let ranked = candidates.sorted {
            ($0.score, -$0.box.y, -$0.box.x, $0.scale) > ($1.score, -$1.box.y, -$1.box.x, $1.scale)
        }
        var kept: [ImageMatch] = []
        for candidate in ranked where !kept.contains(where: { !$0.box.intersection(candidate.box).isEmpty }) {
            kept.append(candidate)
        }
        return kept
    }

    /// How close two scores must be to count as a tie: then a tap would be a guess.
    public static let tieMargin = 0.001

    /// The one match to act on: the best, or with `nth` the Nth (reading order) of those tied with it; refuses a
    /// tie without `nth` (`ambiguous`), and throws `belowConfidence` when there is no match at all.
    public static func choose(
        _ matches: [ImageMatch], nth: Int?, template: ImageTemplate, confidence: Double,
        best: () throws -> ImageMatch?
    ) throws -> ImageMatch {
        guard let top = matches.first else {
            throw ImageSearchError.belowConfidence(
                path: template.path, confidence: confidence, best: try best(), floor: floorScore(confidence))
        }
        let tied = matches.filter { top.score - $0.score <= tieMargin }
            .sorted { ($0.box.y, $0.box.x) < ($1.box.y, $1.box.x) }
        if let nth {
            guard nth <= tied.count else {
                throw ImageSearchError.fewerMatches(path: template.path, nth: nth, count: tied.count)
            }
            return tied[nth - 1]
        }
        guard tied.count == 1 else { throw ImageSearchError.ambiguous(path: template.path, candidates: tied) }
        return top
    }

    /// The lowest score the "best below the confidence" message looks for: searching all the way down would
    /// make the failure path slow for little use.
    public static func floorScore(_ confidence: Double) -> Double { max(0.3, confidence - 0.4) }

    /// The best place scoring at least `floorScore(confidence)`, for the message of a failed search.
    public static func bestBelow(
        _ template: ImageTemplate, in frame: Frame, origin: Point, options: ImageSearchOptions
    ) throws -> ImageMatch? {
        try find(template, in: frame, origin: origin, options: options, threshold: floorScore(options.confidence))
            .first
    }
}

/// AutoHotkey's PixelSearch: the first pixel of a colour, in reading order.
public enum ColorSearch {
    /// The first pixel of `frame` (captured at `origin`) whose every channel is within `tolerance` of `color`, in
    /// screen coordinates, and its colour; nil when there is none.
    public static func first(_ color: RGB, tolerance: Int, in frame: Frame, origin: Point) -> (Point, RGB)? {
        var x: Int32 = 0, y: Int32 = 0
        let found = frame.bgrx.withUnsafeBufferPointer {
            xclaw_find_color(
                $0.baseAddress, Int32(frame.width), Int32(frame.height), Int32(color.r), Int32(color.g),
                Int32(color.b), Int32(tolerance), &x, &y)
        }
        guard found == 1, let seen = frame.pixel(x: Int(x), y: Int(y)) else { return nil }
        return (Point(x: origin.x + Int(x), y: origin.y + Int(y)), seen)
    }
}
