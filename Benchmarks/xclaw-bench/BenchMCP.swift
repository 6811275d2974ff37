import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawPerception
import XclawScreen
import XclawTesting

/// `xclaw bench mcp`: tool calls through `xclaw mcp` as an MCP client makes them, timed by the official Python
/// client (PyPI `mcp`), on the snapshot bench's scene.
struct BenchMCP: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp",
        abstract:
            "Benchmark MCP tool calls (snapshot, windows, capture) through the official Python MCP client: over "
            + "stdio (`xclaw mcp`) and over streamable HTTP (the daemon's `--web`), side by side.")
    @OptionGroup var options: SnapshotBenchOptions
    @Option(help: "A Python with the `mcp` package (default: a venv the bench and the tests make once).")
    var python: String?

    func run() throws {
        try runOnScene(options, table: \.table) {
            try MCPBench(scene: $0, calls: options.iterations, python: python).run()
        }
    }
}

/// The rows of `xclaw bench mcp` on one scene.
struct MCPBench {
    let scene: SnapshotScene
    let calls: Int
    let python: String?

    /// The client script the tests use, in the source tree.
    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Tests/XclawCLITests/mcp/client.py").standardized.path

    func run() throws -> BenchReport {
        let connection = try DisplayConnection(name: scene.name)
        var report = BenchReport(benchmark: "mcp", display: scene.name, screen: try connection.screenSize())
        report.notes += try scene.populate(try Perceiver(connection: connection))
        guard let xclaw = xclawExecutable() else {
            throw ScreenError.invalidArgument("xclaw and xclaw-core must be built beside xclaw-bench")
        }
        let python = try self.python ?? PythonVenv.python("mcp-client", packages: ["mcp"])
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-mcp-\(getpid())")
        try FileManager.default.createDirectory(
            at: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: state) }
        let tools = ["snapshot", "windows", "capture"]
        let stdio = try client(python: python, xclaw: xclaw, tools: tools, state: state, http: nil)
        // The same calls through a daemon's MCP over streamable HTTP (its own state directory and web port).
        let daemon = try WebViewDaemon(state: state.appendingPathComponent("daemon"))
        defer { daemon.stop() }
        let http = try client(
            python: python, xclaw: xclaw, tools: tools, state: state,
            http: ["url": daemon.url + "mcp", "token": daemon.token])
        for tool in tools {
            for (transport, result) in [("xclaw mcp (stdio)", stdio), ("the daemon's MCP over HTTP", http)] {
                let times = (result[tool] as? [String: Any])?["times_ms"] as? [Double] ?? []
                guard !times.isEmpty else { continue }
                report.rows.append(
                    BenchRow(
                        "mcp round trip (Python client → \(transport) → reply)", "\(tool), unchanged screen",
                        times.map { Sample(elapsed: .microseconds(Int($0 * 1000))) }))
            }
        }
        report.notes.append("target: snapshot ≤ 25 ms median; \(calls) calls per tool after 3 untimed")
        return report
    }

    /// The client script's `bench` scenario over stdio (`http` nil) or a daemon's MCP over HTTP.
    private func client(python: String, xclaw: String, tools: [String], state: URL, http: [String: String]?) throws
        -> [String: Any]
    {
        var config: [String: Any] = [
            "display": scene.name, "calls": calls, "tools": tools, "env": ["XCLAW_STATE_DIR": state.path],
        ]
        if let http { config["http"] = http }
        let outcome = try Subprocess.run(
            [
                python, Self.client, xclaw, "bench",
                String(decoding: try JSONSerialization.data(withJSONObject: config), as: UTF8.self),
            ], timeout: .seconds(600))
        guard outcome.ending == .exited(0),
            let result = try JSONSerialization.jsonObject(with: outcome.stdout) as? [String: Any]
        else {
            throw ScreenError.invalidArgument(
                "the MCP client ended \(outcome.ending): " + String(decoding: outcome.stderr.suffix(600), as: UTF8.self)
            )
        }
        if let error = result["error"] { throw ScreenError.invalidArgument("a tool call failed: \(error)") }
        return result
    }
}
