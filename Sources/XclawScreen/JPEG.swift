import CXclawShim
import Foundation
import XclawBase

/// JPEG encoding (libjpeg-turbo, through the C shim) and the size of a JPEG from its header: screenshots as JPEG cut
/// a request's bytes several times over; the model's tokens follow the pixels, not the bytes.
public enum JPEG {
    /// Encodes a frame at `quality` (1-100).
    public static func encode(_ frame: Frame, quality: Int) throws -> [UInt8] {
        guard (1...100).contains(quality) else {
            throw ScreenError.invalidArgument("JPEG quality is 1 to 100, not \(quality)")
        }
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: 200)
        let rc = frame.bgrx.withUnsafeBufferPointer { src in
            xclaw_jpeg_encode_bgrx(
                src.baseAddress, Int32(frame.width), Int32(frame.height), Int32(quality), &out, &length, &message,
                message.count)
        }
        guard rc == 0, let out else {
            throw ScreenError.image("JPEG encoding failed: \(String(nulTerminated: message))")
        }
        defer { xclaw_free(out) }
        return [UInt8](UnsafeBufferPointer(start: out, count: length))
    }

    /// Width and height from a JPEG's start-of-frame marker; nil when the data is not a JPEG with a sane one.
    public static func size(of data: Data) -> Size? {
        let b = [UInt8](data.prefix(1 << 20))
        guard b.count > 4, b[0] == 0xFF, b[1] == 0xD8 else { return nil }
        var i = 2
        while i + 9 < b.count {
            guard b[i] == 0xFF else { return nil }
            let marker = b[i + 1]
            if marker == 0xFF {
                i += 1
                continue
            }
            let length = Int(b[i + 2]) << 8 | Int(b[i + 3])
            // SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC) carry the frame's size.
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                let h = Int(b[i + 5]) << 8 | Int(b[i + 6])
                let w = Int(b[i + 7]) << 8 | Int(b[i + 8])
                guard (1...65535).contains(w), (1...65535).contains(h) else { return nil }
                return Size(width: w, height: h)
            }
            guard length >= 2 else { return nil }
            i += 2 + length
        }
        return nil
    }
}

/// How screenshots go to the model: PNG (exact pixels, the default) or JPEG at a quality (several times fewer bytes;
/// the same tokens, which follow the pixels).
public enum ImageEncoding: Sendable, Hashable, CustomStringConvertible {
    /// PNG.
    case png
    /// JPEG at this quality (1-100).
    case jpeg(quality: Int)

    /// The content block's media type.
    public var mediaType: String {
        switch self {
        case .png: return "image/png"
        case .jpeg: return "image/jpeg"
        }
    }

    /// `png`, or `jpeg:Q`.
    public var description: String {
        switch self {
        case .png: return "png"
        case .jpeg(let q): return "jpeg:\(q)"
        }
    }

    /// Encodes a frame this way.
    public func encode(_ frame: Frame) throws -> [UInt8] {
        switch self {
        case .png: return try PNG.encode(frame)
        case .jpeg(let q): return try JPEG.encode(frame, quality: q)
        }
    }

    /// `png`, `jpeg` (quality 80) or `jpeg:Q` (1-100).
    public static func parse(_ text: String) throws -> ImageEncoding {
        let t = text.lowercased()
        if t == "png" { return .png }
        if t == "jpeg" || t == "jpg" { return .jpeg(quality: 80) }
        if t.hasPrefix("jpeg:") || t.hasPrefix("jpg:"), let q = Int(t.split(separator: ":")[1]), (1...100).contains(q) {
            return .jpeg(quality: q)
        }
        throw ScreenError.invalidArgument("a screenshot format is png, jpeg or jpeg:QUALITY (1-100), not \(text)")
    }

    /// `screenshot_format` in the config file (default: png).
    public static func configured(environment: [String: String] = XclawPaths.environment) throws -> ImageEncoding {
        try ConfigValues.value("screenshot_format", environment: environment).map(parse) ?? .png
    }
}
