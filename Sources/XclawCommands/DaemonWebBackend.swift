import Foundation
import XclawMCP
import XclawWeb

/// The web view's commands, run like the MCP server's: inside the daemon, captured.
struct DaemonWebBackend: WebBackend {
    let runner: MCPCommandRunner

    func run(_ arguments: [String]) async -> WebCommandResult {
        let outcome = await runner.run(arguments, display: nil, exclusive: false, cancellation: MCPCancellation())
        return WebCommandResult(status: outcome.status, stdout: outcome.stdout, stderr: outcome.stderr)
    }

    func stream(
        _ arguments: [String], needsKeys: Bool, cancellation: MCPCancellation,
        output: @escaping @Sendable (Data) -> Void
    ) async -> WebCommandResult {
        let outcome = await runner.stream(
            arguments, keepSecrets: needsKeys, cancellation: cancellation, output: output)
        return WebCommandResult(status: outcome.status, stdout: outcome.stdout, stderr: outcome.stderr)
    }
}
