import Foundation
import XCTest
import XclawScreen
import XclawTesting

/// `xclaw apps` and `xclaw launch` against .desktop entries the test writes, on a real Xvfb, with xprop and xwininfo
/// as the oracles for the window that came up.
final class AppCLITests: XCTestCase {
    private var root: URL!
    private var launched: [Int32] = []

    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-launch-\(getpid())-\(UUID())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    override func tearDown() {
        for pid in launched { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(at: root)
        super.tearDown()
    }

    /// Writes an application entry under `dir/applications/`.
    @discardableResult
    private func entry(_ dir: String, _ file: String, _ body: String) throws -> URL {
        let url = root.appendingPathComponent(dir).appendingPathComponent("applications").appendingPathComponent(file)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try ("[Desktop Entry]\nType=Application\n" + body + "\n").write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    private struct Launched: Decodable {
        var pid: Int32
        var window: String?
        var app: String?
    }

    func testAppsListsEntriesAndLaunchStartsOneAndWaitsForItsWindow() throws {
        let display = try TestDisplay(size: Size(width: 800, height: 600))
        defer { display.stop() }
        try entry(
            "home", "launch-probe.desktop",
            "Name=Launch Probe\nGenericName=Probe Terminal\nExec=xterm -T \"xclaw launched\" %U")
        try entry("home", "menu-less.desktop", "Name=Menu Less\nNoDisplay=true\nExec=xterm")
        try entry("sys", "twin-a.desktop", "Name=Twin\nExec=xterm")
        try entry("sys", "twin-b.desktop", "Name=twin\nExec=xterm")
        let missing = try entry("sys", "missing.desktop", "Name=Missing Program\nExec=no-such-program-xclaw %f")
        let env = [
            "XDG_DATA_HOME": root.appendingPathComponent("home").path,
            "XDG_DATA_DIRS": root.appendingPathComponent("sys").path,
        ]
        let d = ["--display", display.name]

        let listed = try runCLI(["apps", "--json"], environment: env)
        XCTAssertEqual(listed.status, 0, listed.stderr)
        let apps = try JSONDecoder().decode([DesktopEntry].self, from: listed.stdout)
        XCTAssertEqual(
            apps.map(\.id).sorted(), ["launch-probe.desktop", "missing.desktop", "twin-a.desktop", "twin-b.desktop"])
        let all = try runCLI(["apps", "--all"], environment: env)
        XCTAssertTrue(all.text.contains("menu-less.desktop\tMenu Less"), all.text)

        // By Name: pid and window, the window the X server says is that process's, with the title Exec gave it.
        let started = try runCLI(["launch", "launch probe", "--wait-window", "--json"] + d, environment: env)
        XCTAssertEqual(started.status, 0, started.stderr)
        let result = try JSONDecoder().decode(Launched.self, from: started.stdout)
        launched.append(result.pid)
        XCTAssertEqual(result.app, "launch-probe.desktop")
        let window = try XCTUnwrap(result.window)
        let pidProperty = try toolOutput("/usr/bin/xprop", ["-display", display.name, "-id", window, "_NET_WM_PID"])
        XCTAssertTrue(pidProperty.hasSuffix("= \(result.pid)\n"), pidProperty)
        let info = try toolOutput("/usr/bin/xwininfo", ["-display", display.name, "-id", window])
        XCTAssertTrue(info.contains("\"xclaw launched\""), info)
        // The process is detached: a session of its own.
        XCTAssertEqual(getsid(result.pid), result.pid)

        // By file, and a command after --, plain output: "PID WINDOW".
        let byFile = try runCLI(
            [
                "launch", root.appendingPathComponent("home/applications/launch-probe.desktop").path, "--wait-window",
                "20",
            ]
                + d, environment: env)
        XCTAssertEqual(byFile.status, 0, byFile.stderr)
        let fields = byFile.text.split(separator: " ")
        XCTAssertEqual(fields.count, 2, byFile.text)
        launched += fields.first.flatMap { Int32($0) }.map { [$0] } ?? []
        XCTAssertTrue(fields.last?.hasPrefix("0x") == true, byFile.text)
        let command = try runCLI(["launch"] + d + ["--", "xterm", "-T", "by command"], environment: env)
        XCTAssertEqual(command.status, 0, command.stderr)
        let commandPid = try XCTUnwrap(Int32(command.text.trimmingCharacters(in: .whitespacesAndNewlines)))
        launched.append(commandPid)

        // Refusals: ambiguous and unknown names (1), a program that is not installed (2), no window in time (1).
        let twin = try runCLI(["launch", "twin"] + d, environment: env)
        XCTAssertEqual(twin.status, 1)
        XCTAssertTrue(twin.stderr.contains("twin-a.desktop, twin-b.desktop"), twin.stderr)
        let unknown = try runCLI(["launch", "nothing like it"] + d, environment: env)
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("xclaw apps"), unknown.stderr)
        let notInstalled = try runCLI(["launch", missing.path] + d, environment: env)
        XCTAssertEqual(notInstalled.status, 2)
        XCTAssertTrue(notInstalled.stderr.contains("no-such-program-xclaw is not installed"), notInstalled.stderr)
        let windowless = try runCLI(["launch", "--wait-window", "0.3"] + d + ["--", "sleep", "5"], environment: env)
        XCTAssertEqual(windowless.status, 1)
        XCTAssertTrue(windowless.stderr.contains("no window of pid"), windowless.stderr)
        let badWait = try runCLI(["launch", "--wait-window", "0"] + d + ["--", "sleep", "5"], environment: env)
        XCTAssertEqual(badWait.status, 2, badWait.stderr)
        let nothing = try runCLI(["launch"] + d, environment: env)
        XCTAssertEqual(nothing.status, 2, nothing.stderr)
    }
}
