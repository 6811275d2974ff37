import CPNG
import CXclawShim
import Foundation

/// PNG encoding and decoding with libpng.
public enum PNG {
    /// How to trade encode speed against size. The default was chosen by `xclaw bench capture` (see README):
    /// on UI screenshots, no row filter with fast zlib settings is both faster and about as small as adaptive filters.
    public struct Options: Sendable, Hashable, CustomStringConvertible {
        /// zlib level 0–9.
        public var level: Int32
        /// zlib strategy: 0 default, 1 filtered, 2 Huffman only, 3 RLE.
        public var strategy: Int32
        /// PNG row filters as libpng's mask: 0x08 none, 0x10 sub, 0x20 up, 0xf8 all (adaptive).
        public var filters: Int32
        /// Creates options.
        public init(level: Int32, strategy: Int32, filters: Int32) {
            self.level = level; self.strategy = strategy; self.filters = filters
        }
        /// The fastest setting that still compresses UI content well.
        public static let fast = Options(level: 1, strategy: 0, filters: 0x08)
        /// libpng's own default (level 6, adaptive filters): the size baseline.
        public static let libpngDefault = Options(level: 6, strategy: 0, filters: 0xf8)
        public var description: String {
            let strategies = ["default", "filtered", "huffman", "rle", "fixed"]
            let s = strategy >= 0 && Int(strategy) < strategies.count ? strategies[Int(strategy)] : "\(strategy)"
            let f = filters == 0x08 ? "none" : filters == 0xf8 ? "adaptive" : "0x" + String(filters, radix: 16)
            return "level \(level), \(s), filter \(f)"
        }
    }

    /// Encodes a frame as 8-bit RGB PNG.
    public static func encode(_ frame: Frame, options: Options = .fast) throws -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 200)
        let rc = frame.bgrx.withUnsafeBufferPointer { src in
            xclaw_png_encode_bgrx(
                src.baseAddress, Int32(frame.width), Int32(frame.height), options.level, options.strategy,
                options.filters, &out, &length, &message, message.count)
        }
        guard rc == 0, let out else { throw ScreenError.image("PNG encoding failed: \(String(nulTerminated: message))") }
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
