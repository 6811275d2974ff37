import Foundation
import XclawMCP

/// What a command the web view ran did: its exit status and what it wrote.
public struct WebCommandResult: Sendable {
    /// The exit status (ExitStatus's codes).
    public var status: Int32
    /// What it printed on stdout (JSON for `--json` commands).
    public var stdout: Data
    /// What it printed on stderr: the error message when it failed.
    public var stderr: String

    /// A result.
    public init(status: Int32, stdout: Data, stderr: String) {
        (self.status, self.stdout, self.stderr) = (status, stdout, stderr)
    }
}

/// How the web view acts: by running xclaw's own commands, the same ones a person types, so a page cannot drift from
/// the CLI (the surface that starts the web view gives it one; the web module knows no command).
public protocol WebBackend: Sendable {
    /// Runs an xclaw command line (arguments without the program name) with its output captured.
    func run(_ arguments: [String]) async -> WebCommandResult
    /// Runs one, handing what it prints on stdout to `output` as it comes; `cancellation` interrupts it as Ctrl-C
    /// would. `needsKeys`: the command talks to the model (`send`) and gets the daemon's API keys; other commands
    /// never see them.
    func stream(
        _ arguments: [String], needsKeys: Bool, cancellation: MCPCancellation,
        output: @escaping @Sendable (Data) -> Void
    ) async -> WebCommandResult
}
