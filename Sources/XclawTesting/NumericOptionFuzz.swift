import Foundation
import XclawBase

/// The hostile and random values of every numeric option, in one table: the in-process parse tests refuse the
/// out-of-range ones without a process, and the CLI hardening test runs the rest (and a refusal per option) through
/// the binary, so the two halves never drift apart.
package enum NumericOptionFuzz {
    /// One command line and whether xclaw must refuse it as bad usage (exit 2).
    package struct Case: Sendable {
        /// The arguments after `xclaw`, without `--display`.
        package let arguments: [String]
        /// True when a value lies outside its documented range (or is no number at all).
        package let mustRefuse: Bool
        /// For a refusal, false when xclaw checks the value only once the command runs, so only a process can show
        /// the refusal.
        package let refusedWhileParsing: Bool
    }

    /// The run's seed: `XCLAW_FUZZ_SEED` replays a failed run, else a fresh one.
    package static func seed() -> UInt64 {
        ProcessInfo.processInfo.environment["XCLAW_FUZZ_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
    }

    /// NaN, infinities, the integer limits, numbers too long for any type, negative zero, and words.
    private static let hostile = [
        "nan", "-nan", "inf", "-inf", "infinity", "9223372036854775807", "-9223372036854775808",
        "9223372036854775808", "18446744073709551616", "1e308", "-1e308", "1e999", "-1", "-0",
        "99999999999999999999999999999", "ten", "", " ", "1.5e3x", "4294967296", "2147483648",
    ]

    /// An option: the arguments around it, its documented range, the small part of it sampled (a valid value runs
    /// the command), and whether it takes integers.
    private typealias Numeric = (
        before: [String], option: String, documented: ClosedRange<Double>, sample: ClosedRange<Double>,
        integer: Bool
    )

    private static let day = 86_400_000.0

    private static let options: [Numeric] = [
        (["key", "shift"], "--hold", 0...3600, 0...0.05, false),
        (["type", "x"], "--delay", 0...10_000, 0...2, true),
        (["drag", "1", "1", "3", "3"], "--steps", 1...10_000, 1...4, true),
        (["drag", "1", "1", "3", "3"], "--duration", 0...600_000, 0...20, true),
        (["scroll", "down"], "--amount", 1...1000, 1...3, true),
        (["click", "1", "1"], "--count", 1...3, 1...3, true),
        (["wait-stable", "--timeout", "0.05"], "--ms", 1...day, 1...30, true),
        (["wait-stable", "--ms", "10"], "--timeout", 0.001...86_400, 0.001...0.05, false),
        (["wait-stable", "--ms", "10", "--timeout", "0.05"], "--interval", 1...60_000, 1...20, true),
        (["watch", "--timeout", "0.05"], "--stable", 1...day, 1...30, true),
        (["watch", "--stable", "10"], "--timeout", 0.001...86_400, 0.001...0.05, false),
        (["watch", "--stable", "10", "--timeout", "0.05"], "--interval", 1...60_000, 1...20, true),
        (["find", "nothing-here-at-all", "--source", "ocr"], "--nth", 1...100_000, 1...3, true),
        (["history", "nobody", "--db", "/nonexistent/x.sqlite"], "--last", 0...Double(Int.max), 0...3, true),
        (["run", "task", "--max-steps", "0"], "--settle-ms", 1...5000, 1...5000, true),
        (["run", "task", "--settle-ms", "0"], "--max-steps", 1...100_000, 1...5, true),
        (["run", "task", "--max-steps", "0"], "--keep-screenshots", 1...1000, 1...5, true),
        (["run", "task", "--max-steps", "0"], "--max-tokens", 1...1_000_000, 1...5, true),
    ]

    /// Integer pairs and tuples parsed from one string, and whether `validate()` parses them (`scroll --at` and
    /// `capture --region` are parsed when the command runs).
    private static let tupleOptions: [(before: [String], option: String, parts: Int, parsed: Bool)] = [
        (["scroll", "down"], "--at", 2, false), (["capture", "-o", "/dev/null"], "--region", 4, false),
        (["ocr"], "--region", 4, true), (["watch", "--color", "#ffffff", "--timeout", "0.05"], "--pixel", 2, true),
        (["watch", "--timeout", "0.05"], "--change", 4, true), (["display", "start"], "--size", 2, true),
    ]

    /// Every case of the run `seed` starts, in the same order for the same seed.
    package static func cases(seed: UInt64) -> [Case] {
        var random = SplitMix64(seed: seed)
        var cases: [Case] = []
        for entry in options {
            for value in hostile {
                // Exactly what Swift parses: an integer option takes integers only.
                let number = entry.integer ? Int(value).map(Double.init) : Double(value)
                let inRange = number.map { entry.documented.contains($0) } ?? false
                cases.append(
                    Case(
                        arguments: entry.before + [entry.option, value], mustRefuse: !inRange, refusedWhileParsing: true
                    ))
            }
            for _ in 0..<3 {  // random values inside the range (the command may succeed or not find anything)
                let v = Double.random(in: entry.sample, using: &random)
                let text = entry.integer ? String(Int(v.rounded())) : String(v)
                cases.append(
                    Case(arguments: entry.before + [entry.option, text], mustRefuse: false, refusedWhileParsing: true))
            }
        }
        for entry in tupleOptions {
            for _ in 0..<8 {
                let parts = (0..<entry.parts).map { _ in hostile.randomElement(using: &random) ?? "nan" }
                let separator = entry.option == "--size" ? "x" : ","
                // Small integers ("-0", "-1") can make a valid point; anything else must be refused. No hostile
                // part makes a valid size, so `display start` never starts a server here.
                let refuse =
                    entry.option == "--size" || parts.contains { Int($0).map { $0.magnitude > 32767 } ?? true }
                cases.append(
                    Case(
                        arguments: entry.before + [entry.option, parts.joined(separator: separator)],
                        mustRefuse: refuse, refusedWhileParsing: entry.parsed))
            }
        }
        return cases
    }
}
