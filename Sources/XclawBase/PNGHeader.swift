import Foundation

/// What a PNG's first 24 bytes say, and what an image costs a model: read in the store, reports, the context rules,
/// the MCP server and the loopback API, so there is one parser of the header and one token estimate.
public enum PNGHeader {
    /// Width and height from a PNG's signature and IHDR chunk, when they are plausible.
    public static func size(_ data: Data) -> (width: Int, height: Int)? {
        let b = [UInt8](data.prefix(24))
        guard b.count == 24, b[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
            b[12..<16].elementsEqual(Array("IHDR".utf8))
        else { return nil }
        func be(_ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
        let (w, h) = (be(16), be(20))
        guard (1...32768).contains(w), (1...32768).contains(h) else { return nil }
        return (w, h)
    }

    /// The same from base64 text, decoding only the 32 characters that hold the header.
    public static func size(base64: String) -> (width: Int, height: Int)? {
        Data(base64Encoded: String(base64.prefix(32))).flatMap(size)
    }

    /// The input tokens an image of `width`x`height` costs, by the API's estimate: pixels / 750, rounded up.
    public static func tokens(width: Int, height: Int) -> Int { (width * height + 749) / 750 }
}
