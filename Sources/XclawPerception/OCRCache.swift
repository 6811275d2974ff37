import Foundation
import XclawBase
import XclawScreen

/// Recognised text keyed by a hash of the pixels it was read from, so a block that is still on screen (or has moved,
/// or comes back) is never recognised twice. Lines are stored relative to the block's origin. Least recently used
/// entries are dropped beyond `capacity`. The cache can be saved to a file so separate CLI calls share it.
/// Safe because the entries and the use counter are touched only under `lock`; `capacity` is immutable.
public final class OCRCache: @unchecked Sendable {
    private struct Entry { var lines: [TextLine]; var used: UInt64 }
    private var entries: [UInt64: Entry] = [:]
    private var tick: UInt64 = 0
    /// Entries were stored since the last save (or load).
    private var dirty = false
    private let lock = NSLock()
    /// The most entries kept.
    public let capacity: Int
    /// Bumped whenever recognition changes so results of an older pipeline are not reused.
    static let formatTag = Array("xclaw-ocr-cache 7\n".utf8)

    /// The capacity caches get unless told otherwise: `XCLAW_OCR_CACHE_BLOCKS` (100 to 1,000,000), else 6,000
    /// blocks, which is a few MB of text: the bound on what a long-lived process (the daemon) keeps per display.
    public static func defaultCapacity(_ environment: [String: String] = Invocation.current.environment) -> Int {
        environment["XCLAW_OCR_CACHE_BLOCKS"].flatMap { Int($0) }.map { min(1_000_000, max(100, $0)) } ?? 6000
    }

    /// Creates an empty cache.
    public init(capacity: Int = OCRCache.defaultCapacity()) { self.capacity = max(1, capacity) }

    /// Whether text was recognised since the cache was loaded or last saved: a long-lived owner saves only then.
    public var hasUnsavedEntries: Bool { lock.withLock { dirty } }

    /// How many entries are held.
    public var count: Int { lock.withLock { entries.count } }

    /// The lines stored for `key`, marking them recently used.
    func lookup(_ key: UInt64) -> [TextLine]? {
        lock.withLock {
            guard var entry = entries[key] else { return nil }
            tick += 1
            entry.used = tick
            entries[key] = entry
            return entry.lines
        }
    }

    /// Stores lines for `key`, evicting the least recently used entries when full.
    func store(_ key: UInt64, _ lines: [TextLine]) {
        lock.withLock {
            tick += 1
            dirty = true
            entries[key] = Entry(lines: lines, used: tick)
            if entries.count > capacity + capacity / 4 {
                let keep = entries.sorted { $0.value.used > $1.value.used }.prefix(capacity)
                entries = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
            }
        }
    }

    /// Loads a cache saved by `save(to:)`; a missing or damaged file gives an empty cache, a symlink or another
    /// user's file is refused (read without following links). The caller checks the directory.
    public static func load(from url: URL, capacity: Int = OCRCache.defaultCapacity()) throws -> OCRCache {
        let cache = OCRCache(capacity: capacity)
        guard let data = try PrivateFiles.read(url.path) else { return cache }
        var reader = ByteReader(bytes: [UInt8](data))
        guard reader.take(formatTag.count) == formatTag, let count = reader.u32() else { return cache }
        var loaded: [UInt64: Entry] = [:]
        for index in 0..<Int(count) {
            guard let key = reader.u64(), let lineCount = reader.u16() else { return cache }
            var lines: [TextLine] = []
            for _ in 0..<lineCount {
                guard let wordCount = reader.u16(), wordCount > 0 else { return cache }
                var words: [TextWord] = []
                for _ in 0..<wordCount {
                    guard let x = reader.i32(), let y = reader.i32(), let w = reader.i32(), let h = reader.i32(),
                        let confidence = reader.u16(), let length = reader.u16(),
                        let bytes = reader.take(Int(length))
                    else { return cache }
                    words.append(
                        TextWord(
                            text: String(decoding: bytes, as: UTF8.self),
                            box: Rect(x: Int(x), y: Int(y), width: Int(w), height: Int(h)),
                            confidence: Double(confidence) / 100))
                }
                lines.append(TextLine(words: words))
            }
            loaded[key] = Entry(lines: lines, used: UInt64(index))
        }
        cache.entries = loaded
        cache.tick = UInt64(count)
        return cache
    }

    /// Writes the cache atomically (a rename), so concurrent processes never see half a file.
    public func save(to url: URL) throws {
        var out = OCRCache.formatTag
        lock.withLock {
            dirty = false
            // Oldest first, so a reload keeps the recency order.
            let ordered = entries.sorted { $0.value.used < $1.value.used }
            out.append(u32: UInt32(ordered.count))
            for (key, entry) in ordered {
                out.append(u64: key)
                out.append(u16: UInt16(min(entry.lines.count, Int(UInt16.max))))
                for line in entry.lines.prefix(Int(UInt16.max)) {
                    out.append(u16: UInt16(min(line.words.count, Int(UInt16.max))))
                    for word in line.words.prefix(Int(UInt16.max)) {
                        for v in [word.box.x, word.box.y, word.box.width, word.box.height] {
                            out.append(u32: UInt32(bitPattern: Int32(clamping: v)))
                        }
                        out.append(u16: UInt16(clamping: Int((word.confidence * 100).rounded())))
                        let bytes = Array(word.text.utf8.prefix(Int(UInt16.max)))
                        out.append(u16: UInt16(bytes.count))
                        out.append(contentsOf: bytes)
                    }
                }
            }
        }
        try PrivateFiles.write(Data(out), to: url.path)
    }
}

/// Little-endian reads that return nil instead of trapping at the end of a damaged file.
private struct ByteReader {
    let bytes: [UInt8]
    var offset = 0

    mutating func take(_ n: Int) -> [UInt8]? {
        guard n >= 0, offset + n <= bytes.count else { return nil }
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }
    mutating func uint(_ n: Int) -> UInt64? {
        guard let raw = take(n) else { return nil }
        return raw.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
    }
    mutating func u16() -> UInt16? { uint(2).map { UInt16($0) } }
    mutating func u32() -> UInt32? { uint(4).map { UInt32($0) } }
    mutating func u64() -> UInt64? { uint(8) }
    mutating func i32() -> Int32? { u32().map { Int32(bitPattern: $0) } }
}

extension Array where Element == UInt8 {
    fileprivate mutating func append(u16 v: UInt16) { append(UInt8(v & 0xff)); append(UInt8(v >> 8)) }
    fileprivate mutating func append(u32 v: UInt32) { for i in 0..<4 { append(UInt8((v >> (8 * UInt32(i))) & 0xff)) } }
    fileprivate mutating func append(u64 v: UInt64) { for i in 0..<8 { append(UInt8((v >> (8 * UInt64(i))) & 0xff)) } }
}
