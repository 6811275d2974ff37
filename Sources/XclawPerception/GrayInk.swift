import CXclawShim
import XclawScreen

/// Ink on a gray frame, as the OCR passes that look again at what tesseract read see it: a rectangle's background
/// level, and which of its columns hold ink.
enum GrayInk {
    /// The most common gray level of `rect` (its background).
    static func background(_ gray: [UInt8], stride: Int, rect: Rect) -> Int {
        gray.withUnsafeBufferPointer {
            Int(
                xclaw_background_level(
                    $0.baseAddress, Int32(stride), Int32(rect.x), Int32(rect.y), Int32(rect.width), Int32(rect.height)))
        }
    }

    /// Whether each column of `rect` has a pixel more than 40 levels from `background`, left to right.
    static func columns(_ gray: [UInt8], stride: Int, rect: Rect, background: Int) -> [Bool] {
        (rect.x..<(rect.x + rect.width)).map { x in
            (rect.y..<(rect.y + rect.height)).contains { abs(Int(gray[$0 * stride + x]) - background) > 40 }
        }
    }
}
