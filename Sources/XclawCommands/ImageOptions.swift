import ArgumentParser
import Foundation
import Logging
import XclawBase
import XclawCommandLine
import XclawPerception
import XclawScreen

/// `--image FILE` and how it matches, shared by `find`, `tap` and `watch`.
struct ImageOptions: ParsableArguments {
    @Option(help: "Look for this PNG image instead of a label (e.g. one saved by `xclaw capture --region … -o FILE`).")
    var image: String?
    @Option(
        help: """
            With --image: the lowest score that counts as a match, 0.01–1 (normalised cross-correlation; default \
            0.9).
            """)
    var confidence: Double?
    @Flag(help: "With --image: compare grey levels instead of colours.") var grayscale = false
    @Option(help: "With --image: the sizes to try the image at, e.g. 0.8,1,1.25 (each 0.1–10; default 1).")
    var scales: String?

    func validate() throws {
        if image == nil && (confidence != nil || grayscale || scales != nil) {
            throw ValidationError("--confidence, --grayscale and --scales go with --image")
        }
        try requireRange(confidence, 0.01...1, "--confidence", "")
        try checkParses(scales) { try Self.parseScales($0) }
    }

    /// Parses `0.8,1,1.25`: 1 to 16 factors, each 0.1–10, duplicates dropped.
    static func parseScales(_ text: String) throws -> [Double] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard (1...16).contains(parts.count), parts.allSatisfy({ $0.map { (0.1...10).contains($0) } ?? false })
        else {
            throw PerceptionError.invalidArgument(
                "--scales \"\(text)\": expected 1 to 16 factors from 0.1 to 10, such as 0.8,1,1.25")
        }
        var seen: [Double] = []
        for case let scale? in parts where !seen.contains(scale) { seen.append(scale) }
        return seen
    }

    /// The search options the flags ask for.
    var options: ImageSearchOptions {
        ImageSearchOptions(
            confidence: confidence ?? ImageSearchOptions.defaultConfidence, grayscale: grayscale,
            scales: (try? scales.map(Self.parseScales)) ?? [1])
    }

    /// Reads the template, its path resolved against the caller's working directory (the daemon's is elsewhere).
    func template() throws -> ImageTemplate? {
        guard let image else { return nil }
        return try ImageTemplate(path: image, resolved: Invocation.current.resolve(image))
    }
}

/// Perception for an image or colour search: the daemon's kept perceiver (its capture segment is warm), else a fresh
/// one without the OCR cache, which such a search never reads.
func withImagePerceiver<T>(_ target: DisplayOptions, _ body: (Perceiver) throws -> T) throws -> T {
    if Invocation.isServed { return try body(Hosting.current.perceiver(target.display)) }
    return try withPerceiver(target, noCache: true, body)
}

/// Logs the image searches at debug level (`XCLAW_LOG=debug`): how long, and how much the bounds saved.
private let imageLog = Logger(label: "xclaw.image")

/// What one image search of the screen saw: the template, the area and its frame, and the matches, best first.
struct ImageSearch {
    let template: ImageTemplate
    let options: ImageSearchOptions
    let area: Rect
    let frame: Frame
    let matches: [ImageMatch]

    /// Captures `area` and searches it. The template is read before anything else happens, so a bad file costs
    /// nothing and changes nothing.
    init(_ perceiver: Perceiver, area: Rect, template: ImageTemplate, options: ImageSearchOptions) throws {
        self.template = template
        self.options = options
        self.area = area
        let start = ContinuousClock.now
        frame = try perceiver.capturer.capture(area)
        let captured = ContinuousClock.now
        matches = try TemplateMatcher.find(template, in: frame, origin: Point(x: area.x, y: area.y), options: options)
        imageLog.debug(
            "searched \(area.width)x\(area.height) at \(area.x),\(area.y) for \(template.path) (\(template.frame.size))",
            metadata: [
                "capture_ms": "\((captured - start).milliseconds)",
                "match_ms": "\((ContinuousClock.now - captured).milliseconds)", "matches": "\(matches.count)",
            ])
    }

    /// The one match to act on (ties refused unless `nth` picks one); no match throws with the best place seen.
    func chosen(nth: Int?) throws -> ImageMatch {
        try TemplateMatcher.choose(matches, nth: nth, template: template, confidence: options.confidence) {
            try TemplateMatcher.bestBelow(template, in: frame, origin: Point(x: area.x, y: area.y), options: options)
        }
    }

    /// Every match, best first; none throws with the best place seen.
    func all() throws -> [ImageMatch] {
        guard matches.isEmpty else { return matches }
        throw ImageSearchError.belowConfidence(
            path: template.path, confidence: options.confidence,
            best: try TemplateMatcher.bestBelow(
                template, in: frame, origin: Point(x: area.x, y: area.y), options: options),
            floor: TemplateMatcher.floorScore(options.confidence))
    }
}

/// What `find --color` prints with `--json`.
struct ColorHit: Encodable {
    var x, y: Int
    var color: String
}

/// `find --color`: the first pixel of the colour in `area`, in reading order.
func findColor(_ perceiver: Perceiver, area: Rect, color: RGB, tolerance: Int) throws -> ColorHit {
    let frame = try perceiver.capturer.capture(area)
    guard
        let (point, seen) = ColorSearch.first(
            color, tolerance: tolerance, in: frame, origin: Point(x: area.x, y: area.y))
    else { throw ImageSearchError.colorNotFound(color: color, tolerance: tolerance, area: area) }
    return ColorHit(x: point.x, y: point.y, color: seen.hex)
}
