import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine

/// `xclaw bench …`: hands over to `xclaw-bench` beside this binary, so the product links none of the benchmarks'
/// code (they are their own target, `Benchmarks/xclaw-bench`).
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract:
            "Benchmark capture, input, OCR, the agent step, the runtime, snapshots and image search against their peers "
            + "(runs xclaw-bench beside this binary: `xclaw-bench --help` lists the benchmarks, `xclaw bench capture --help` one's options).",
        discussion: """
            Examples:
              xclaw bench capture  # medians and p90 in ms, beside scrot when it is installed
              xclaw bench snapshot --json
            """
    )

    @Argument(parsing: .captureForPassthrough, help: "The benchmark and its options, as `xclaw-bench` takes them.")
    var arguments: [String] = []

    func run() throws {
        guard let bench = XclawPaths.sibling("xclaw-bench") else {
            throw BenchMissing(path: XclawPaths.executableDirectory.appendingPathComponent("xclaw-bench").path)
        }
        fflush(nil)
        let argv = [bench] + arguments
        let cArgs = argv.map { strdup($0) } + [nil]
        execv(bench, cArgs)
        throw BenchMissing(path: bench, errno: errno)
    }
}

/// `xclaw-bench` is not beside `xclaw` (a build of the product alone), or could not be started.
struct BenchMissing: ClassifiedError {
    var path: String
    var errno: Int32? = nil
    var exitStatus: ExitStatus { .internal }
    var description: String {
        if let errno { return "cannot start \(path): \(Errno(rawValue: errno))" }
        return "the benchmarks are their own binary and \(path) is not built; run `bash scripts/bench.sh`, or "
            + "`swift build -c release --product xclaw-bench` and then `xclaw bench` again"
    }
}
