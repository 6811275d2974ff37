import Foundation
import XCTest
import XclawTesting

/// The runnable examples under `examples/`, run end to end against the built `xclaw`: each starts its own display
/// and real Debian apps (zenity, xcalc, xterm), checks its own result and exits 0 only when it holds.
final class ExamplesTests: XCTestCase {
    func testZenityAnswer() throws { try runExample("zenity-answer.sh") }

    func testXcalcCompute() throws { try runExample("xcalc-compute.sh") }

    func testWaitForTerminal() throws { try runExample("wait-for-terminal.sh") }

    /// Runs `examples/<name>` with `XCLAW` set to the built binary and asserts it exits 0, showing its output
    /// (stdout and stderr interleaved) when it does not. A script still running after `timeout` is stopped.
    private func runExample(
        _ name: String, timeout: TimeInterval = 60, file: StaticString = #filePath,
        line: UInt = #line
    ) throws {
        let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("examples")
        let script = examples.appendingPathComponent(name)
        let run = try ScriptRun(script: script, xclaw: productsDirectory.appendingPathComponent("xclaw"))
        let started = Date()
        let finished = run.wait(timeout: timeout)
        let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
        if !finished {
            run.stop()
            XCTFail(
                "\(name) still running after \(Int(timeout)) s; stopped it. Output:\n\(run.output)",
                file: file, line: line)
            return
        }
        if run.status == 0 {
            print("\(name): ok in \(seconds) s")
        } else {
            XCTFail("\(name) exited \(run.status) after \(seconds) s. Output:\n\(run.output)", file: file, line: line)
        }
    }
}

/// One example script running under bash, its stdout and stderr collected in one buffer as they arrive.
/// Safe because the output buffer is touched only under `lock`; the process and pipe are set up before it runs.
private final class ScriptRun: @unchecked Sendable {
    private let process = Process()
    private let pipe = Pipe()
    private let lock = NSLock()
    private var buffer = Data()

    init(script: URL, xclaw: URL) throws {
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script.path]
        process.environment = ProcessInfo.processInfo.environment.merging(["XCLAW": xclaw.path]) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = pipe
        process.standardError = pipe
        // Read as data arrives rather than to EOF: apps the script started in the background hold the pipe open.
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock { self.buffer.append(data) }
        }
        try process.run()
    }

    var status: Int32 { process.terminationStatus }

    var output: String {
        // Kept: nothing tells when the handler took what the script wrote last (apps the script left in the
        // background hold the pipe open, so no end of file comes).
        Thread.sleep(forTimeInterval: 0.2)
        return lock.withLock { String(decoding: buffer, as: UTF8.self) }
    }

    /// Waits for the script to exit; false if it is still running at the timeout.
    func wait(timeout: TimeInterval) -> Bool {
        process.exits(within: .seconds(timeout))
    }

    /// Stops a hung script so that its EXIT trap still runs (and stops its display and apps): SIGTERM to bash, which
    /// acts on it once its foreground command ends, and to its children, which ends that command. SIGKILL to all that
    /// is left after 10 s.
    func stop() {
        let pid = process.processIdentifier
        kill(pid, SIGTERM)
        for child in Self.descendants(of: pid) { kill(child, SIGTERM) }
        if wait(timeout: 10) { return }
        for child in Self.descendants(of: pid) { kill(child, SIGKILL) }
        kill(pid, SIGKILL)
        _ = wait(timeout: 5)
    }

    /// Every process below `root`, children before grandchildren, from the parent pids in /proc.
    private static func descendants(of root: pid_t) -> [pid_t] {
        var parents: [pid_t: pid_t] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After "pid (comm)": state, then the parent pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = pid_t(fields[1]) { parents[pid] = parent }
        }
        var found: [pid_t] = []
        var frontier = [root]
        while !frontier.isEmpty {
            let children = parents.filter { frontier.contains($0.value) }.map(\.key)
            found += children
            frontier = children
        }
        return found
    }

    deinit {
        pipe.fileHandleForReading.readabilityHandler = nil
        if process.isRunning { stop() }
    }
}
