import Foundation
import XCTest

@testable import XclawAgent
@testable import XclawMessages

/// The model catalog: the compiled-in copy matches Models/models.json, every entry is usable, overlays work.
final class ModelCatalogTests: XCTestCase {
    /// The repository's Models/models.json, found from this file's path.
    static let modelsFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Models/models.json")

    func testBuiltInCopyIsModelsJSONVerbatim() throws {
        let file = try String(contentsOf: Self.modelsFile, encoding: .utf8)
        XCTAssertEqual(
            ModelCatalog.builtinJSON, file.trimmingCharacters(in: .newlines),
            "Models/models.json changed: copy it into Sources/XclawAgent/BuiltinCatalog.swift")
    }

    func testEveryModelHasAKnownToolVersionItsBetaAndPrices() throws {
        let catalog = try ModelCatalog.load(overlay: "/nonexistent")
        let betas = ["computer_20250124": "computer-use-2025-01-24", "computer_20251124": "computer-use-2025-11-24"]
        XCTAssertNoThrow(try catalog.model(catalog.default))
        for m in catalog.models {
            XCTAssertEqual(betas[m.computerTool], m.beta, m.id)
            XCTAssertTrue(m.vision, m.id)
            XCTAssertGreaterThan(m.price.output, m.price.input, m.id)
            XCTAssertEqual(m.price.cacheRead, m.price.input / 10, accuracy: 1e-9, m.id)
            XCTAssertEqual(m.price.cacheWrite, m.price.input * 1.25, accuracy: 1e-9, m.id)
        }
        XCTAssertEqual(try catalog.model("claude-sonnet-4-5").id, "claude-sonnet-4-5-20250929", "aliases resolve")
        XCTAssertThrowsError(try catalog.model("claude-nonexistent-9")) { error in
            XCTAssertTrue("\(error)".contains("claude-sonnet-4-6"), "lists the known ids: \(error)")
            XCTAssertTrue("\(error)".contains("models.json"), "says how to add one: \(error)")
        }
    }

    func testUserOverlayAddsAndReplacesModels() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-catalog-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("models.json").path
        try """
        {"default": "claude-future-1", "models": [
          {"id": "claude-future-1", "name": "Future", "computer_tool": "computer_20251124", "beta": "computer-use-2025-11-24",
           "vision": true, "max_output": 1000, "price": {"input": 1, "output": 2, "cache_write": 1.25, "cache_read": 0.1}},
          {"id": "claude-sonnet-4-6", "name": "Sonnet (discounted)", "computer_tool": "computer_20251124",
           "beta": "computer-use-2025-11-24", "vision": true, "max_output": 64000,
           "price": {"input": 2, "output": 10, "cache_write": 2.5, "cache_read": 0.2}}
        ]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let catalog = try ModelCatalog.load(overlay: path)
        XCTAssertEqual(catalog.default, "claude-future-1")
        XCTAssertEqual(try catalog.model("claude-future-1").maxOutput, 1000)
        XCTAssertEqual(try catalog.model("claude-sonnet-4-6").price.input, 2)
        XCTAssertEqual(catalog.models.filter { $0.id == "claude-sonnet-4-6" }.count, 1)
        XCTAssertNoThrow(try catalog.model("claude-opus-4-6"), "bundled models stay")
        try "{ not json".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try ModelCatalog.load(overlay: path)) { XCTAssertTrue("\($0)".contains(path)) }
        // Valid JSON of the wrong shape is not ignored either: the error names the file and the expected shape.
        for (text, words) in [
            ("[1,2,3]", "not an object"), ("{}", "empty"), (#"{"modles": []}"#, "unknown key(s) modles"),
            ("42", "not an object"),
        ] {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            XCTAssertThrowsError(try ModelCatalog.load(overlay: path), text) { error in
                XCTAssertTrue("\(error)".contains(path), "\(error)")
                XCTAssertTrue("\(error)".contains(words), "\(error)")
            }
        }
    }
}
