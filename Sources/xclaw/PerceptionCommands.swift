import ArgumentParser
import Foundation
import XclawPerception
import XclawScreen

/// Where a perception command looks: `--region` or `--window`, else the whole screen.
struct AreaOptions: ParsableArguments {
    @Option(help: "Region X,Y,W,H in screen pixels.") var region: String?
    @Option(help: "Window id (0x…) or title substring.") var window: String?

    func validate() throws {
        if region != nil && window != nil { throw ValidationError("give --region or --window, not both") }
        if let region { _ = try Rect(parsing: region) }
    }

    /// The area on `perceiver`'s screen.
    func area(_ perceiver: Perceiver) throws -> Rect {
        try perceiver.area(region: region.map(Rect.init(parsing:)), window: window)
    }
}

/// Opens perception for a CLI call with the shared on-disk OCR cache, runs `body`, and saves the cache after.
func withPerceiver<T>(_ target: DisplayOptions, noCache: Bool = false, _ body: (Perceiver) throws -> T) throws -> T {
    let cache = noCache ? OCRCache() : OCRCache.load(from: Perceiver.cacheFile)
    let perceiver = try Perceiver(connection: target.connect(), cache: cache)
    let result = try body(perceiver)
    if !noCache { try? cache.save(to: Perceiver.cacheFile) }
    return result
}

/// `xclaw ocr`: the text on screen, in reading order, or as JSON with boxes.
struct Ocr: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read the text on the screen, a region or a window (tesseract, in-process).",
        discussion: """
            Prints one line of output per visual row. With --json: lines and words with boxes in screen pixels and \
            confidence (0-100). Results are cached by content in the state directory, so unchanged text is not \
            read twice.
            """)
    @OptionGroup var target: DisplayOptions
    @OptionGroup var area: AreaOptions
    @Flag(help: "Print JSON: region, lines with words, boxes and confidence.") var json = false
    @Flag(help: "Ignore and do not update the OCR cache.") var noCache = false

    func run() throws {
        let reading = try withPerceiver(target, noCache: noCache) { try $0.read(area.area($0)) }
        try emit(reading, json: json) { reading.text }
    }
}
