import CXclawShim
import Foundation

/// A colour as the screen shows it.
public struct RGB: Hashable, Codable, Sendable, CustomStringConvertible {
    /// Red, 0–255.
    public var r: UInt8
    /// Green, 0–255.
    public var g: UInt8
    /// Blue, 0–255.
    public var b: UInt8
    /// Creates a colour.
    public init(r: UInt8, g: UInt8, b: UInt8) { self.r = r; self.g = g; self.b = b }

    /// Parses `#rrggbb` or `rrggbb`.
    public init(hex: String) throws {
        let digits = hex.hasPrefix("#") ? String(hex.dropFirst()) : hex
        guard digits.count == 6, let value = UInt32(digits, radix: 16) else {
            throw ScreenError.invalidArgument("invalid colour \"\(hex)\": expected #rrggbb")
        }
        self.init(r: UInt8(value >> 16), g: UInt8((value >> 8) & 0xff), b: UInt8(value & 0xff))
    }

    /// `#rrggbb`.
    public var hex: String { String(format: "#%02x%02x%02x", r, g, b) }

    /// Whether every channel is within `tolerance` of `other`'s (0: the same colour).
    public func within(_ tolerance: Int, of other: RGB) -> Bool {
        abs(Int(r) - Int(other.r)) <= tolerance && abs(Int(g) - Int(other.g)) <= tolerance
            && abs(Int(b) - Int(other.b)) <= tolerance
    }
    /// `#rrggbb`.
    public var description: String { hex }
}

/// A captured image that owns its pixels (no C pointer escapes the capture call).
///
/// Pixels are BGRX, 4 bytes each, rows packed without padding: the layout X servers use at depth 24/32, kept so
/// capture is one copy. The 4th byte is padding, never alpha: every conversion ignores it.
public struct Frame: Sendable, Equatable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// BGRX bytes, `width * height * 4` of them.
    public internal(set) var bgrx: [UInt8]

    /// Whether `other` has the same size and pixels, by one `memcmp` (or none, when both share their storage).
    public func hasSameBytes(as other: Frame) -> Bool {
        guard width == other.width, height == other.height else { return false }
        return bgrx.withUnsafeBytes { a in
            other.bgrx.withUnsafeBytes { b in
                guard let pa = a.baseAddress, let pb = b.baseAddress else { return a.count == b.count }
                return pa == pb || memcmp(pa, pb, a.count) == 0
            }
        }
    }

    /// Whether the `width * height * 4` bytes at `pointer` are this frame's.
    public func hasSameBytes(as pointer: UnsafeRawPointer) -> Bool {
        bgrx.withUnsafeBytes { mine in
            guard let base = mine.baseAddress else { return false }
            return memcmp(base, pointer, mine.count) == 0
        }
    }

    /// Wraps BGRX bytes; the count must be `width * height * 4`.
    public init(width: Int, height: Int, bgrx: [UInt8]) throws {
        guard width > 0, height > 0, bgrx.count == width * height * 4 else {
            throw ScreenError.image("frame of \(width)x\(height) needs \(width * height * 4) bytes, got \(bgrx.count)")
        }
        self.width = width
        self.height = height
        self.bgrx = bgrx
    }

    /// A frame of one colour, for tests and placeholders.
    public init(size: Size, color: RGB) {
        width = size.width
        height = size.height
        bgrx = [UInt8](repeating: 0, count: max(0, size.width * size.height) * 4)
        for i in stride(from: 0, to: bgrx.count, by: 4) {
            bgrx[i] = color.b; bgrx[i + 1] = color.g; bgrx[i + 2] = color.r
        }
    }

    /// Builds a frame by letting `fill` write exactly `width * height * 4` BGRX bytes.
    init(width: Int, height: Int, fill: (UnsafeMutablePointer<UInt8>) throws -> Void) rethrows {
        self.width = width
        self.height = height
        bgrx = try [UInt8](unsafeUninitializedCapacity: width * height * 4) { buffer, count in
            if let base = buffer.baseAddress { try fill(base) }
            count = width * height * 4
        }
    }

    /// The frame's size.
    public var size: Size { Size(width: width, height: height) }

    /// The colour at a pixel; nil outside the frame.
    public func pixel(x: Int, y: Int) -> RGB? {
        guard x >= 0, y >= 0, x < width, y < height else { return nil }
        let i = (y * width + x) * 4
        return RGB(r: bgrx[i + 2], g: bgrx[i + 1], b: bgrx[i])
    }

    /// A copy of one rectangle of the frame; the rectangle must lie inside it.
    public func cropped(to rect: Rect) throws -> Frame {
        guard !rect.isEmpty, Rect(size: size).contains(rect) else {
            throw ScreenError.invalidRegion("\(rect) is not inside the \(size) frame")
        }
        return bgrx.withUnsafeBufferPointer { src in
            Frame(width: rect.width, height: rect.height) { dst in
                guard let base = src.baseAddress else { return }
                let rowBytes = rect.width * 4
                for row in 0..<rect.height {
                    let from = base + ((rect.y + row) * width + rect.x) * 4
                    (dst + row * rowBytes).update(from: from, count: rowBytes)
                }
            }
        }
    }

    /// Packed RGB, 3 bytes a pixel.
    public func rgb() -> [UInt8] { convert(bytesPerPixel: 3, xclaw_bgrx_to_rgb) }

    /// RGBA with alpha 255 (the X byte never becomes transparency).
    public func rgba() -> [UInt8] { convert(bytesPerPixel: 4, xclaw_bgrx_to_rgba) }

    private func convert(
        bytesPerPixel: Int,
        _ kernel: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?) -> Void
    ) -> [UInt8] {
        let pixels = width * height
        return bgrx.withUnsafeBufferPointer { src in
            [UInt8](unsafeUninitializedCapacity: pixels * bytesPerPixel) { dst, count in
                kernel(src.baseAddress, pixels, dst.baseAddress)
                count = pixels * bytesPerPixel
            }
        }
    }

    /// An area-averaged downscale to `target` (no larger than the frame in either direction): every source
    /// pixel contributes by the area it covers, so thin UI lines and small text survive better than with
    /// nearest-neighbour or bilinear sampling.
    public func downscaled(to target: Size) throws -> Frame {
        if target == size { return self }
        guard target.width > 0, target.height > 0, target.width <= width, target.height <= height else {
            throw ScreenError.invalidArgument("cannot downscale \(size) to \(target)")
        }
        return try bgrx.withUnsafeBufferPointer { src in
            try Frame(width: target.width, height: target.height) { dst in
                guard
                    xclaw_downscale_bgrx(
                        src.baseAddress, Int32(width), Int32(height), dst, Int32(target.width), Int32(target.height))
                        == 0
                else { throw ScreenError.image("downscale to \(target) failed (out of memory?)") }
            }
        }
    }
}
