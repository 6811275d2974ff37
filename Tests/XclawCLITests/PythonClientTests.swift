import Foundation
import XCTest
import XclawBase
import XclawTesting

/// The Python client (`clients/python`, package `xclaw`): its pytest suite against this build's `xclaw` (real Xvfb
/// servers, a Tk form, a daemon it starts, the loopback Messages API), and `pip install ./clients/python` into a
/// fresh venv, offline.
final class PythonClientTests: XCTestCase {
    /// The client's folder in this checkout.
    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("clients/python")

    var work: URL!

    override func setUpWithError() throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-python-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        chmod(work.path, 0o700)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: work)
    }

    func testThePytestSuitePassesAgainstThisBuild() throws {
        let python = try PythonVenv.testClients()
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONPATH"] = Self.client.appendingPathComponent("src").path
        environment["XCLAW_BIN"] = productsDirectory.appendingPathComponent("xclaw").path
        // Nothing written into the checkout: no bytecode beside the sources, no .pytest_cache, temp files here.
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        let outcome = try Subprocess.run(
            [
                python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs",
                "--basetemp=" + work.appendingPathComponent("pytest").path,
                Self.client.appendingPathComponent("tests").path,
            ], timeout: .seconds(300), environment: environment)
        let output = String(decoding: outcome.stdout + outcome.stderr, as: UTF8.self)
        XCTAssertEqual(outcome.ending, .exited(0), "pytest failed:\n" + String(output.suffix(20_000)))
        let summary = output.split(separator: "\n").last { $0.contains(" passed") }.map(String.init) ?? ""
        // "35 passed in 17.2s", or "2 failed, 35 passed in 15.9s": the number right before " passed".
        let passed = summary.components(separatedBy: " passed").first?.split(separator: " ").last.flatMap { Int($0) }
        XCTAssertGreaterThan(passed ?? 0, 20, "pytest ran too few tests: \(summary)")
        for word in ["failed", "skipped", "error", "xfail"] {
            XCTAssertFalse(summary.contains(word), "pytest: \(summary)")
        }
    }

    func testPipInstallsTheClientIntoAFreshVenvOffline() throws {
        // A copy, so the build's own files (build/, *.egg-info) land in the temporary directory, not the checkout.
        let source = work.appendingPathComponent("python")
        try FileManager.default.copyItem(at: Self.client, to: source)
        let venv = work.appendingPathComponent("venv").path
        // Debian's own setuptools and wheel (python3-pip depends on them) build it: no index is asked.
        for step in [
            ["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv],
            [
                venv + "/bin/python", "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation",
                source.path,
            ],
        ] {
            let outcome = try Subprocess.run(step, timeout: .seconds(300))
            XCTAssertEqual(
                outcome.ending, .exited(0),
                "\(step.joined(separator: " ")): " + String(decoding: outcome.stderr, as: UTF8.self))
        }
        // -I: the installed package, not one on PYTHONPATH or in the working directory.
        let imported = try Subprocess.run(
            [
                venv + "/bin/python", "-I", "-c",
                "import os, xclaw; print(xclaw.__version__); print(xclaw.__file__); "
                    + "print(os.path.exists(os.path.join(os.path.dirname(xclaw.__file__), 'py.typed'))); "
                    + "print(callable(xclaw.connect) and callable(xclaw.connect_async))",
            ], timeout: .seconds(60))
        let lines = String(decoding: imported.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        XCTAssertEqual(imported.ending, .exited(0), String(decoding: imported.stderr, as: UTF8.self))
        XCTAssertEqual(lines.count, 4, "\(lines)")
        guard lines.count == 4 else { return }
        XCTAssertEqual(lines[0], try runCLI(["--version"]).text.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertTrue(lines[1].hasPrefix(venv + "/lib/"), lines[1])
        XCTAssertEqual(Array(lines[2...]), ["True", "True"])
    }
}
