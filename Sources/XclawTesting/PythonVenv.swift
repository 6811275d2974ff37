import Foundation
import Glibc
import XclawBase
import XclawScreen

/// A Python virtual environment with packages from PyPI, for the peers and clients the benchmarks and tests drive
/// (PyAutoGUI, the official MCP client). Made once, then reused: a marker file says the install finished.
public enum PythonVenv {
    /// The one venv of the tests' clients (the MCP client, jsonschema, websockets), with the packages
    /// scripts/test-clients.txt names (scripts/test-venv.sh makes the same venv while the build runs).
    public static func testClients() throws -> String {
        let list = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/test-clients.txt")
        let packages = try String(contentsOf: list, encoding: .utf8).split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
        return try python("test-clients", packages: packages)
    }

    /// The venv's python, making `name` with `packages` first when it is not there yet, in `XCLAW_TEST_VENVS` when
    /// set (scripts/run-tests.py: one folder of the build tree for all its jobs, which each have their own state
    /// directory and made the venvs again, at 5-15 CPU-seconds each), else in the state directory. Processes that
    /// want one venv at once take turns on a lock file; the first makes it. The marker file lists the packages
    /// installed, so a venv made from an older list gets the packages added since. Throws, saying what to install,
    /// when venv or pip fail.
    public static func python(_ name: String, packages: [String]) throws -> String {
        let base =
            ProcessInfo.processInfo.environment["XCLAW_TEST_VENVS"].map { URL(fileURLWithPath: $0) }
            ?? VirtualDisplay.stateDirectory
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        let directory = base.appendingPathComponent(name)
        let python = directory.appendingPathComponent("bin/python").path
        let ready = directory.appendingPathComponent(".installed")
        let wanted = packages.map { $0 + "\n" }.joined()
        let lock = open(base.appendingPathComponent("\(name).lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else {
            throw ScreenError.invalidArgument("cannot open the lock of venv \(name): \(Errno.current)")
        }
        defer { close(lock) }  // closing the descriptor lets the lock go
        while flock(lock, LOCK_EX) != 0 && errno == EINTR {}
        if (try? String(contentsOf: ready, encoding: .utf8)) == wanted { return python }
        var steps: [(String, [String], Int)] = [
            (
                "pip install \(packages.joined(separator: " "))",
                [python, "-m", "pip", "install", "--quiet"] + packages, 900
            )
        ]
        if !FileManager.default.isExecutableFile(atPath: python) {
            steps.insert(("python3 -m venv", ["/usr/bin/python3", "-m", "venv", directory.path], 120), at: 0)
        }
        for (step, arguments, limit) in steps {
            let outcome = try Subprocess.run(arguments, timeout: .seconds(limit))
            guard outcome.ending == .exited(0) else {
                throw ScreenError.invalidArgument(
                    "\(step) failed (\(outcome.ending)): "
                        + String(decoding: outcome.stderr.suffix(400), as: UTF8.self)
                        + "; run scripts/install-deps.sh (python3-venv, python3-pip)")
            }
        }
        _ = FileManager.default.createFile(atPath: ready.path, contents: Data(wanted.utf8))
        return python
    }
}
