import ArgumentParser

/// `xclaw bench`: placeholder replaced below.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Benchmarks.")
}
