import Foundation
import XclawBase
import XclawScreen

/// A Python virtual environment with packages from PyPI, for the peers and clients the benchmarks and tests drive
/// (PyAutoGUI, the official MCP client). Made once in the state directory, then reused: a marker file says the
/// install finished.
public enum PythonVenv {
    /// The venv's python, making `name` with `packages` first when it is not there yet. Throws, saying what to
    /// install, when venv or pip fail.
    public static func python(_ name: String, packages: [String]) throws -> String {
        let directory = VirtualDisplay.stateDirectory.appendingPathComponent(name)
        let python = directory.appendingPathComponent("bin/python").path
        let ready = directory.appendingPathComponent(".installed")
        if FileManager.default.fileExists(atPath: ready.path) { return python }
        for (step, arguments, limit) in [
            ("python3 -m venv", ["/usr/bin/python3", "-m", "venv", directory.path], 120),
            (
                "pip install \(packages.joined(separator: " "))",
                [python, "-m", "pip", "install", "--quiet"] + packages, 900
            ),
        ] {
            let outcome = try Subprocess.run(arguments, timeout: .seconds(limit))
            guard outcome.ending == .exited(0) else {
                throw ScreenError.invalidArgument(
                    "\(step) failed (\(outcome.ending)): "
                        + String(decoding: outcome.stderr.suffix(400), as: UTF8.self)
                        + "; run scripts/install-deps.sh (python3-venv, python3-pip)")
            }
        }
        _ = FileManager.default.createFile(atPath: ready.path, contents: Data())
        return python
    }
}
