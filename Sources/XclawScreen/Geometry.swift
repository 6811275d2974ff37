import Foundation

/// A point in screen pixels (root-window coordinates).
public struct Point: Codable, Sendable, Hashable, CustomStringConvertible {
    /// Pixels from the left edge.
    public var x: Int
    /// Pixels from the top edge.
    public var y: Int
    /// Creates a point.
    public init(x: Int, y: Int) { self.x = x; self.y = y }
    /// `x,y`, as the CLI takes it.
    public var description: String { "\(x),\(y)" }

    /// Parses `X,Y` as the CLI takes it, within the same bounds as `Rect(parsing:)`.
    public init(parsing text: String) throws {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let x = parts[0], let y = parts[1],
            abs(x) <= Rect.coordinateLimit, abs(y) <= Rect.coordinateLimit
        else {
            throw ScreenError.invalidArgument("\"\(text)\" is not a point X,Y (two integers, e.g. 100,200)")
        }
        self.init(x: x, y: y)
    }
}

/// A size in pixels.
public struct Size: Codable, Sendable, Hashable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Creates a size.
    public init(width: Int, height: Int) { self.width = width; self.height = height }
    /// `WxH`, as the CLI takes it.
    public var description: String { "\(width)x\(height)" }

    /// Parses `WIDTHxHEIGHT` (e.g. `1920x1080`).
    public init(parsing text: String) throws {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), (1...32767).contains(w),
            (1...32767).contains(h)
        else {
            throw ScreenError.invalidArgument(
                "invalid size \"\(text)\": expected WIDTHxHEIGHT such as 1920x1080, each 1 to 32767")
        }
        self.init(width: w, height: h)
    }
}

/// An axis-aligned rectangle in pixels; `x`/`y` is the top-left corner.
public struct Rect: Codable, Sendable, Hashable, CustomStringConvertible {
    /// Left edge.
    public var x: Int
    /// Top edge.
    public var y: Int
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Creates a rectangle.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }
    /// The rectangle `(0, 0, size)`.
    public init(origin: Point = Point(x: 0, y: 0), size: Size) {
        self.init(x: origin.x, y: origin.y, width: size.width, height: size.height)
    }
    /// `x,y,w,h`, as the CLI takes it.
    public var description: String { "\(x),\(y),\(width),\(height)" }
    /// True when the rectangle covers no pixel.
    public var isEmpty: Bool { width <= 0 || height <= 0 }
    /// The rectangle's size.
    public var size: Size { Size(width: width, height: height) }
    /// The pixel nearest the centre, used as the click point of an element.
    public var center: Point { Point(x: x + width / 2, y: y + height / 2) }

    /// Parses `X,Y,W,H` as the CLI takes it.
    public init(parsing text: String) throws {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 4, let x = parts[0], let y = parts[1], let w = parts[2], let h = parts[3] else {
            throw ScreenError.invalidRegion("\"\(text)\" is not X,Y,W,H (four integers, e.g. 0,0,640,480)")
        }
        guard w > 0, h > 0 else {
            throw ScreenError.invalidRegion("\"\(text)\" is empty: width and height must be positive")
        }
        // X coordinates are 16-bit; bounding them here keeps every later sum far from overflow.
        guard [x, y, w, h].allSatisfy({ abs($0) <= Self.coordinateLimit }) else {
            throw ScreenError.invalidRegion("\"\(text)\" is out of range (each value within ±\(Self.coordinateLimit))")
        }
        self.init(x: x, y: y, width: w, height: h)
    }

    /// The largest coordinate or size accepted from outside.
    public static let coordinateLimit = 1 << 20

    /// Whether the point lies inside.
    public func contains(_ p: Point) -> Bool { p.x >= x && p.y >= y && p.x < x + width && p.y < y + height }

    /// Whether `other` lies wholly inside.
    public func contains(_ other: Rect) -> Bool {
        other.x >= x && other.y >= y && other.x + other.width <= x + width && other.y + other.height <= y + height
    }

    /// The overlap of two rectangles (empty when they do not meet).
    public func intersection(_ other: Rect) -> Rect {
        let x0 = max(x, other.x), y0 = max(y, other.y)
        let x1 = min(x + width, other.x + other.width), y1 = min(y + height, other.y + other.height)
        return Rect(x: x0, y: y0, width: max(0, x1 - x0), height: max(0, y1 - y0))
    }

    /// The smallest rectangle covering both.
    public func union(_ other: Rect) -> Rect {
        let x0 = min(x, other.x), y0 = min(y, other.y)
        let x1 = max(x + width, other.x + other.width), y1 = max(y + height, other.y + other.height)
        return Rect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }

    /// The same rectangle moved by `dx`, `dy`.
    public func offset(dx: Int, dy: Int) -> Rect { Rect(x: x + dx, y: y + dy, width: width, height: height) }

    /// What is left of this rectangle once `other` is cut out: up to four disjoint rectangles, full-width bands
    /// above and below `other` and the parts beside it, so a row of text beside a cut stays in one piece.
    public func subtracting(_ other: Rect) -> [Rect] {
        let cut = intersection(other)
        guard !cut.isEmpty else { return isEmpty ? [] : [self] }
        let parts = [
            Rect(x: x, y: y, width: width, height: cut.y - y),  // above
            Rect(x: x, y: cut.y + cut.height, width: width, height: y + height - cut.y - cut.height),  // below
            Rect(x: x, y: cut.y, width: cut.x - x, height: cut.height),  // left
            Rect(x: cut.x + cut.width, y: cut.y, width: x + width - cut.x - cut.width, height: cut.height),  // right
        ]
        return parts.filter { !$0.isEmpty }
    }

    /// Disjoint free `pieces` (what is left of an area once holes are cut out) grown into each other: a piece grows
    /// across a neighbour that spans its whole side, as far as that neighbour goes, until none can. Cutting holes
    /// leaves bands whose edges run through whatever stands beside a hole (a list's row beside a button was cut in
    /// two at the button's edge); grown pieces keep such rows whole, cover nothing that was not free, and are
    /// disjoint again (the largest kept whole).
    public static func coalesced(_ pieces: [Rect]) -> [Rect] {
        var out = pieces.filter { !$0.isEmpty }
        var grew = true
        while grew {
            grew = false
            for i in out.indices {
                for j in out.indices where j != i {
                    let a = out[i], b = out[j]
                    let grown: Rect?
                    if b.x <= a.x && b.x + b.width >= a.x + a.width && (b.y == a.y + a.height || b.y + b.height == a.y)
                    {
                        grown = a.union(Rect(x: a.x, y: b.y, width: a.width, height: b.height))
                    } else if b.y <= a.y && b.y + b.height >= a.y + a.height
                        && (b.x == a.x + a.width || b.x + b.width == a.x)
                    {
                        grown = a.union(Rect(x: b.x, y: a.y, width: b.width, height: a.height))
                    } else {
                        grown = nil
                    }
                    guard let grown, !out.contains(where: { $0.contains(grown) }) else { continue }
                    out[i] = grown
                    grew = true
                }
            }
            // Pieces another one now covers are gone.
            out = out.enumerated().filter { index, piece in
                !out.enumerated().contains {
                    $0.offset != index && $0.element.contains(piece) && ($0.element != piece || $0.offset < index)
                }
            }.map(\.element)
        }
        // Disjoint again, the largest first: what overlaps a larger piece is cut out of the smaller one.
        var disjoint: [Rect] = []
        for piece in out.sorted(by: { $0.width * $0.height > $1.width * $1.height }) {
            var bits = [piece]
            for taken in disjoint { bits = bits.flatMap { $0.subtracting(taken) } }
            disjoint += bits
        }
        return disjoint
    }

    /// Splits `area` into the parts each of `layers` shows (top-most first) and what is left of the area below them,
    /// as disjoint rectangles: where windows overlap, each pixel belongs to the one on top.
    public static func visibleParts(of layers: [Rect], within area: Rect) -> [Rect] {
        var covered: [Rect] = []
        var parts: [Rect] = []
        for layer in layers + [area] {
            var pieces = [layer.intersection(area)].filter { !$0.isEmpty }
            for above in covered { pieces = pieces.flatMap { $0.subtracting(above) } }
            parts += pieces
            covered.append(layer)
        }
        return parts
    }
}

extension String {
    /// Decodes a NUL-terminated C buffer filled by a C call (error texts and the like).
    init(nulTerminated buffer: [CChar]) {
        self = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
