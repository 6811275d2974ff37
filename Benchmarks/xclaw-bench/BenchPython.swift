import ArgumentParser
import Foundation
import XclawBase

/// `xclaw bench python`: `desk.tap(LABEL)` through the Python client against `xclaw tap LABEL` through the same
/// daemon, on one screen in one run (issue 35's target: at most 1.5x). The measuring is the client's own script,
/// `clients/python/bench/tap.py`, run with the `xclaw` beside this binary, so both sides are timed the same way.
struct BenchPython: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "python",
        abstract: "Benchmark a tap through the Python client against the CLI's through the same daemon.")
    @Option(help: "Timed taps each way.") var iterations = 40
    @Flag(help: "Print one JSON object.") var json = false

    func validate() throws {
        guard (1...10_000).contains(iterations) else { throw ValidationError("--iterations takes 1 to 10000") }
    }

    func run() throws {
        // The checkout this bench was built from: the script lives there, not beside the binary.
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("clients/python/bench/tap.py").path
        guard FileManager.default.fileExists(atPath: script), let xclaw = xclawExecutable() else {
            throw ValidationError("needs \(script) and xclaw beside xclaw-bench (scripts/bench.sh builds both)")
        }
        var arguments = ["/usr/bin/python3", script, "--binary", xclaw, "--iterations", String(iterations)]
        if json { arguments.append("--json") }
        fflush(nil)
        let argv = arguments.map { strdup($0) } + [nil]
        execv(arguments[0], argv)
        throw ValidationError("cannot run \(arguments[0]): \(Errno.current)")
    }
}
