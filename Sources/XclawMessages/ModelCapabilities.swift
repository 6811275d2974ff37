import Foundation
import XclawBase

/// What the API says a model can do (`GET /v1/models`), cached by `xclaw models --refresh` and laid over the built-in
/// catalog, so limits and levels follow the API rather than this release's table.
public struct ModelCapabilities: Codable, Sendable, Hashable {
    /// The model id.
    public var id: String
    /// Its context window.
    public var maxInput: Int?
    /// Its largest `max_tokens`.
    public var maxTokens: Int?
    /// It takes images.
    public var imageInput: Bool?
    /// `adaptive` or `enabled`, the thinking form it takes (adaptive preferred); nil when it takes none.
    public var thinking: String?
    /// The effort levels it takes.
    public var effort: [String]
    /// It supports server-side compaction (`compact_20260112`).
    public var compaction: Bool?

    /// Reads one model object of the API's list; nil without an id.
    public init?(api model: JSONValue) {
        guard let id = model["id"]?.string, !id.isEmpty else { return nil }
        self.id = id
        maxInput = model["max_input_tokens"]?.int
        maxTokens = model["max_tokens"]?.int
        let caps = model["capabilities"]
        imageInput = caps?["image_input"]?["supported"]?.bool
        let types = caps?["thinking"]?["types"]
        if types?["adaptive"]?["supported"]?.bool == true {
            thinking = "adaptive"
        } else if types?["enabled"]?["supported"]?.bool == true {
            thinking = "enabled"
        }
        effort = ["low", "medium", "high", "xhigh", "max"].filter { caps?["effort"]?[$0]?["supported"]?.bool == true }
        compaction = caps?["context_management"]?["compact_20260112"]?["supported"]?.bool
    }

    /// The cached capabilities file: `models-cache.json` in the user's state directory.
    public static func cachePath(environment: [String: String] = XclawPaths.environment) -> String {
        XclawPaths.userStateDirectory(environment) + "/models-cache.json"
    }

    /// The cache as written by `write`, or empty when there is none; an unreadable one is reported, not guessed at.
    public static func cached(environment: [String: String] = XclawPaths.environment) throws -> [ModelCapabilities] {
        let path = cachePath(environment: environment)
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        do { return try JSONDecoder().decode(Cache.self, from: data).models } catch {
            throw CatalogError.unreadable(
                path: path, reason: "\(error); run `xclaw models --refresh` again, or delete the file")
        }
    }

    /// Writes the cache (private to the user), atomically.
    public static func write(_ models: [ModelCapabilities], environment: [String: String] = XclawPaths.environment)
        throws
    {
        let path = cachePath(environment: environment)
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        try PrivateFiles.write(try encoder.encode(Cache(fetched: Date(), models: models)), to: path)
    }

    /// The file's shape.
    struct Cache: Codable {
        var fetched: Date
        var models: [ModelCapabilities]

        init(fetched: Date, models: [ModelCapabilities]) { (self.fetched, self.models) = (fetched, models) }

        init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            models = try c.decode([ModelCapabilities].self, forKey: .models)
            fetched = (try? c.decode(Date.self, forKey: .fetched)) ?? Date.distantPast
        }
    }
}

extension ModelInfo {
    /// This entry with what the API says of it: its limits, vision, thinking form (a model whose thinking is always on
    /// keeps `always`), effort levels and whether it compacts.
    public func updated(with caps: ModelCapabilities) -> ModelInfo {
        var m = self
        if let t = caps.maxTokens { m.maxOutput = t }
        if let i = caps.maxInput { m.maxInput = i }
        if let v = caps.imageInput { m.vision = v }
        if m.thinking != "always" { m.thinking = caps.thinking }
        m.effort = caps.effort
        if let c = caps.compaction { m.compaction = c }
        return m
    }
}
