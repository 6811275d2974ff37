import CPNG
import CXclawShim
import Foundation

/// PNG encoding and decoding with libpng.
public enum PNG {
    /// How to trade encode speed against size. The default was chosen by `xclaw bench capture` (docs/benchmarks.md):
    /// on UI screenshots, no row filter with zlib level 1 is both fast and about as small as adaptive filters, and
    /// deflating row stripes on every core divides the time again.
    public struct Options: Sendable, Hashable, CustomStringConvertible {
        /// Which encoder writes the file.
        public enum Encoder: String, Sendable, Hashable {
            /// xclaw's own writer over zlib: filter "none", row stripes deflated in parallel.
            case striped
            /// libpng's classic writer: any row filter, one thread. The reference.
            case libpng
        }
        /// The encoder.
        public var encoder: Encoder
        /// zlib level 0–9.
        public var level: Int32
        /// zlib strategy: 0 default, 1 filtered, 2 Huffman only, 3 RLE.
        public var strategy: Int32
        /// PNG row filters as libpng's mask (0x08 none, 0x20 up, 0xf8 adaptive); `.striped` always uses none.
        public var filters: Int32
        /// Threads for `.striped`.
        public var threads: Int
        /// Creates options.
        public init(
            encoder: Encoder = .libpng, level: Int32, strategy: Int32 = 0, filters: Int32 = 0x08,
            threads: Int = 1
        ) {
            self.encoder = encoder; self.level = level; self.strategy = strategy; self.filters = filters
            self.threads = threads
        }
        /// The default: level 1, no filter, striped over up to 4 cores.
        public static let fast = Options(
            encoder: .striped, level: 1,
            threads: max(1, min(4, ProcessInfo.processInfo.activeProcessorCount)))
        /// libpng's own default (level 6, adaptive filters): the size baseline.
        public static let libpngDefault = Options(encoder: .libpng, level: 6, filters: 0xf8)
        /// The message, saying what failed.
        public var description: String {
            let strategies = ["default", "filtered", "huffman", "rle", "fixed"]
            let s = strategy >= 0 && Int(strategy) < strategies.count ? strategies[Int(strategy)] : "\(strategy)"
            if encoder == .striped { return "striped ×\(threads), level \(level), \(s), filter none" }
            let f = filters == 0x08 ? "none" : filters == 0xf8 ? "adaptive" : "0x" + String(filters, radix: 16)
            return "libpng, level \(level), \(s), filter \(f)"
        }
    }

    /// Encodes a frame as 8-bit RGB PNG.
    public static func encode(_ frame: Frame, options: Options = .fast) throws -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 200)
        let rc = frame.bgrx.withUnsafeBufferPointer { src in
            switch options.encoder {
            case .striped:
                xclaw_png_encode_bgrx_fast(
                    src.baseAddress, Int32(frame.width), Int32(frame.height), options.level, options.strategy,
                    Int32(options.threads), &out, &length, &message, message.count)
            case .libpng:
                xclaw_png_encode_bgrx(
                    src.baseAddress, Int32(frame.width), Int32(frame.height), options.level, options.strategy,
                    options.filters, &out, &length, &message, message.count)
            }
        }
        guard rc == 0, let out else {
            throw ScreenError.image("PNG encoding failed: \(String(nulTerminated: message))")
        }
        defer { xclaw_free(out) }
        return [UInt8](UnsafeBufferPointer(start: out, count: length))
    }

    /// Decodes any PNG libpng reads into a frame (alpha is dropped; composite it yourself if it matters).
    public static func decode(_ data: [UInt8]) throws -> Frame {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        let begun = data.withUnsafeBytes { png_image_begin_read_from_memory(&image, $0.baseAddress, $0.count) }
        guard begun != 0 else { throw ScreenError.image("not a readable PNG: \(imageMessage(&image))") }
        defer { png_image_free(&image) }
        image.format = UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA | PNG_FORMAT_FLAG_BGR)
        let width = Int(image.width), height = Int(image.height)
        guard width > 0, height > 0, width * height <= 1 << 28 else {
            throw ScreenError.image("PNG of \(width)x\(height) is empty or too large")
        }
        var failure: String?
        let frame = Frame(width: width, height: height) { dst in
            if png_image_finish_read(&image, nil, dst, 0, nil) == 0 { failure = imageMessage(&image) }
        }
        if let failure { throw ScreenError.image("PNG decoding failed: \(failure)") }
        return frame
    }

    private static func imageMessage(_ image: inout png_image) -> String {
        withUnsafeBytes(of: &image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
