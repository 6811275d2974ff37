import Foundation
import XclawBase

/// USD prices per million tokens.
public struct ModelPrice: Sendable, Hashable, Codable {
    /// Uncached input.
    public var input: Double
    /// Output.
    public var output: Double
    /// 5-minute cache writes.
    public var cacheWrite: Double
    /// Cache reads.
    public var cacheRead: Double

    enum CodingKeys: String, CodingKey {
        case input, output
        case cacheWrite = "cache_write"
        case cacheRead = "cache_read"
    }

    /// The USD cost of a token count at these prices.
    public func cost(of usage: Usage) -> Double {
        (Double(usage.inputTokens) * input + Double(usage.outputTokens) * output
            + Double(usage.cacheCreationInputTokens) * cacheWrite + Double(usage.cacheReadInputTokens) * cacheRead)
            / 1_000_000
    }
}

/// What xclaw needs to know about a model: which computer-use tool it was trained on, the beta header that tool
/// needs, whether it sees images, its output limit and prices.
public struct ModelInfo: Sendable, Hashable, Codable {
    /// The API model id.
    public var id: String
    /// Other ids that name the same model.
    public var aliases: [String]?
    /// Human name.
    public var name: String
    /// `computer_20250124` or `computer_20251124`.
    public var computerTool: String
    /// The `anthropic-beta` value the computer tool needs.
    public var beta: String
    /// Whether the model accepts images.
    public var vision: Bool
    /// Largest `max_tokens` the model accepts.
    public var maxOutput: Int
    /// `enabled` (budget_tokens), `adaptive`, or `always` (thinking is always on: the parameter is never sent, not
    /// even `disabled`, which such a model refuses).
    public var thinking: String?
    /// Prices per MTok.
    public var price: ModelPrice
    /// The model takes high-resolution screenshots (long edge up to 2576 px, 3.75 MP), its coordinates 1:1 with the
    /// image's pixels; others see images within the 1568 px / 1568-tile rule.
    public var highRes: Bool?
    /// The effort levels the model accepts (`output_config.effort`); nil or empty: none.
    public var effort: [String]?
    /// Its context window in tokens.
    public var maxInput: Int?
    /// The successor to use when the model is retired (the API no longer serves it).
    public var retired: String?
    /// It thinks when the request says nothing of thinking, so `--thinking off` must send `disabled` (Opus 5).
    public var thinksByDefault: Bool?
    /// It takes server-side compaction (`compact_20260112`); others get xclaw's own summary of old turns.
    public var compaction: Bool?

    /// `level` when the model takes it; the error names the levels it does take.
    public func checkEffort(_ level: String) throws -> String {
        let levels = effort ?? []
        guard levels.contains(level) else { throw CatalogError.effort(level, model: id, levels: levels) }
        return level
    }

    enum CodingKeys: String, CodingKey {
        case id, aliases, name
        case computerTool = "computer_tool"
        case beta, vision
        case maxOutput = "max_output"
        case thinking, price
        case highRes = "high_res"
        case effort
        case maxInput = "max_input"
        case retired
        case thinksByDefault = "thinks_by_default"
        case compaction
    }
}

/// Failures loading or querying the catalog.
public enum CatalogError: ClassifiedError, Equatable {
    /// The model id is not in the catalog.
    case unknownModel(String, known: [String])
    /// A catalog file could not be read or parsed.
    case unreadable(path: String, reason: String)
    /// The model is retired: the API no longer serves it.
    case retired(String, successor: String)
    /// The effort level is not one the model takes.
    case effort(String, model: String, levels: [String])
    /// The thinking setting is not one the model takes (or not a setting at all).
    case thinking(model: String?, why: String)

    /// A wrong model id or catalog file is the user's to fix.
    public var exitStatus: ExitStatus { .usage }

    /// The message, with what to do.
    public var description: String {
        switch self {
        case .unknownModel(let id, let known):
            return "unknown model \"\(id)\": xclaw needs to know its computer-use tool version and prices. "
                + "Known: \(known.joined(separator: ", ")). Add it to ~/.config/xclaw/models.json "
                + "(same shape as Models/models.json) if it is newer than this catalog."
        case .effort(let level, let model, let levels):
            return levels.isEmpty
                ? "\(model) takes no effort setting: leave --effort out, or use a model that does (`xclaw models`)"
                : "\(model) takes effort \(levels.joined(separator: ", ")), not \(level)"
        case .thinking(_, let why):
            return why
        case .retired(let id, let successor):
            return "\(id) is retired: Anthropic no longer serves it. Use \(successor) (`--model \(successor)`; for an "
                + "agent, `xclaw agent set NAME --model \(successor)`)"
        case .unreadable(let path, let reason):
            return "cannot read the model catalog \(path): \(reason). Fix its JSON (same shape as Models/models.json) "
                + "or remove the file"
        }
    }
}

/// The model catalog: `Models/models.json` (compiled in), overlaid by the user's `~/.config/xclaw/models.json`, whose
/// entries replace bundled ones with the same id, so a new model works without a new xclaw.
public struct ModelCatalog: Sendable, Hashable, Codable {
    /// The model `xclaw run` uses without `--model`.
    public var `default`: String
    /// The models, newest first.
    public var models: [ModelInfo]

    /// Parses a catalog file's JSON.
    public static func parse(_ data: Data, path: String) throws -> ModelCatalog {
        do { return try JSONDecoder().decode(ModelCatalog.self, from: data) } catch {
            throw CatalogError.unreadable(path: path, reason: "\(error)")
        }
    }

    /// The bundled catalog merged with the user's overlay (if the file exists).
    public static func load(
        overlay: String? = nil,
        environment: [String: String] = Invocation.current.environment
    ) throws -> ModelCatalog {
        var catalog = try parse(Data(builtinJSON.utf8), path: "Models/models.json (built in)")
        let overlayPath = overlay ?? Self.userCatalogPath(environment: environment)
        if FileManager.default.fileExists(atPath: overlayPath) {
            let user: ModelCatalog
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: overlayPath))
                // The overlay may carry only `models`; take the default from it when given.
                let object = try JSONValue.parse(data)
                // A file of another shape must not be ignored without a word: the user meant it to do something.
                guard var filled = object.object else {
                    throw CatalogError.unreadable(
                        path: overlayPath,
                        reason: "it holds \(object.jsonText.prefix(40)), not an object with \"models\"")
                }
                let unknown = filled.keys.filter { $0 != "default" && $0 != "models" }.sorted()
                guard unknown.isEmpty, !filled.isEmpty else {
                    let what = unknown.isEmpty ? "it is empty" : "unknown key(s) \(unknown.joined(separator: ", "))"
                    throw CatalogError.unreadable(
                        path: overlayPath, reason: "\(what); it takes \"models\" (a list) and \"default\"")
                }
                if filled["default"] == nil { filled["default"] = .string(catalog.default) }
                if filled["models"] == nil { filled["models"] = [] }
                user = try parse(Data(JSONValue.object(filled).jsonText.utf8), path: overlayPath)
            } catch let error as CatalogError { throw error } catch {
                throw CatalogError.unreadable(path: overlayPath, reason: "\(error)")
            }
            let replaced = Set(user.models.map(\.id))
            catalog.models = user.models + catalog.models.filter { !replaced.contains($0.id) }
            catalog.default = user.default
        }
        // What the API said last (`xclaw models --refresh`) wins over the table.
        let cached = try ModelCapabilities.cached(environment: environment)
        if !cached.isEmpty {
            catalog.models = catalog.models.map { m in
                let names = [m.id] + (m.aliases ?? [])
                return cached.first { names.contains($0.id) }.map { m.updated(with: $0) } ?? m
            }
        }
        return catalog
    }

    /// `$XDG_CONFIG_HOME/xclaw/models.json` or `~/.config/xclaw/models.json`.
    public static func userCatalogPath(environment: [String: String]) -> String {
        XclawPaths.configDirectory(environment) + "/models.json"
    }

    /// The model with this id or alias; a retired one is an error that names its successor.
    public func model(_ id: String) throws -> ModelInfo {
        if let m = models.first(where: { $0.id == id || ($0.aliases ?? []).contains(id) }) {
            if let successor = m.retired { throw CatalogError.retired(m.id, successor: successor) }
            return m
        }
        throw CatalogError.unknownModel(id, known: models.filter { $0.retired == nil }.map(\.id))
    }
}
