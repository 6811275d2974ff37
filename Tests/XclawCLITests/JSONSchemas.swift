import Foundation
import XCTest
import XclawBase
import XclawTesting

/// The schemas of every `--json` output (`docs/json`), and the check of real output against them: PyPI's
/// `jsonschema` (draft 2020-12) in a venv the tests make once (`PythonVenv`), driven by `json/validate.py`.
enum JSONSchemas {
    /// `docs/json` in the source tree.
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/json")
    /// The validator script.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("json/validate.py")
    /// The venv's python, or why there is none.
    private static let python: Result<String, any Error> = Result {
        try PythonVenv.testClients()
    }

    /// One output to check: what it was, the schema it must follow (`find` for `docs/json/find.schema.json`), and
    /// the stdout it printed.
    struct Check {
        var name: String
        var schema: String
        var stdout: Data
    }

    /// What is wrong with each output (nothing: an empty list).
    static func errors(_ checks: [Check]) throws -> [String] {
        let request: [String: Any] = [
            "schemas": directory.path,
            "checks": checks.map {
                ["name": $0.name, "schema": $0.schema, "stdout": String(decoding: $0.stdout, as: UTF8.self)]
            },
        ]
        return try run(request)["errors"] as? [String] ?? ["the validator answered without errors"]
    }

    /// What is wrong with the schemas themselves (valid 2020-12, strict objects), and how many there are.
    static func lint() throws -> (errors: [String], count: Int) {
        let answer = try run(["schemas": directory.path, "lint": true])
        return (answer["errors"] as? [String] ?? ["no answer"], answer["schemas"] as? Int ?? 0)
    }

    private static func run(_ request: [String: Any]) throws -> [String: Any] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-schema-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: request).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let outcome = try Subprocess.run([try python.get(), script.path, file.path], timeout: .seconds(120))
        guard outcome.ending == .exited(0),
            let answer = try JSONSerialization.jsonObject(with: outcome.stdout) as? [String: Any]
        else {
            throw ValidationFailure(
                "validate.py failed (\(outcome.ending)): " + String(decoding: outcome.stderr, as: UTF8.self))
        }
        return answer
    }
}

/// The validator could not run.
struct ValidationFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
