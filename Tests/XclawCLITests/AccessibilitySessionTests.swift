import Foundation
import XCTest
import XclawBase
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// `--accessibility`: the D-Bus session bus and AT-SPI accessibility bus xclaw starts for a display it owns, with a
/// real Xvfb, real daemons and a real GTK app.
final class AccessibilitySessionTests: XCTestCase {
    private var display: TestDisplay?
    private var apps: [Process] = []
    private var cliDisplays: [VirtualDisplay] = []
    private var stateDirectory: URL?

    override func tearDown() {
        // Everything a test started goes, whether it passed or not.
        for app in apps { app.end() }
        apps = []
        display?.stop()
        display = nil
        for started in cliDisplays { try? started.stop() }
        cliDisplays = []
        if let stateDirectory { try? FileManager.default.removeItem(at: stateDirectory) }
        super.tearDown()
    }

    func testBusesServeAnAppAndStopWithTheDisplay() throws {
        let display = try TestDisplay(accessibility: true)
        self.display = display
        let bus = try XCTUnwrap(display.server.accessibility)

        XCTAssertEqual(try WindowManager(connection: display.connect()).rootText("AT_SPI_BUS"), bus.a11yAddress)
        XCTAssertTrue(bus.a11yAddress.hasPrefix("unix:"), bus.a11yAddress)
        XCTAssertEqual(display.environment["DISPLAY"], display.name)
        XCTAssertEqual(display.environment["DBUS_SESSION_BUS_ADDRESS"], bus.sessionAddress)
        XCTAssertNil(display.environment["AT_SPI_BUS_ADDRESS"], "GTK finds the bus through the root property")

        let names = try Self.dbusSend(
            bus: bus.sessionAddress, destination: "org.freedesktop.DBus", path: "/",
            method: "org.freedesktop.DBus.ListNames")
        XCTAssertEqual(names.status, 0, names.output)
        XCTAssertTrue(names.output.contains("\"org.a11y.Bus\""), names.output)
        let enabled = try Self.dbusSend(
            bus: bus.sessionAddress, destination: "org.a11y.Bus", path: "/org/a11y/bus",
            method: "org.freedesktop.DBus.Properties.Get",
            arguments: ["string:org.a11y.Status", "string:IsEnabled"])
        XCTAssertTrue(enabled.output.contains("boolean true"), enabled.output)

        // A GTK app launched with the display's environment registers with the registry.
        apps.append(try Self.launch(["/usr/bin/zenity", "--info", "--text", "hello"], on: display.server))
        var appNames: [String] = []
        try eventually("zenity registers with the registry", within: .seconds(5), every: .milliseconds(50)) {
            appNames = try Self.registeredApps(on: bus.a11yAddress)
            return appNames.contains("zenity")
        }
        XCTAssertTrue(appNames.contains("zenity"), "registered apps: \(appNames)")

        // Stopping the display ends both daemons and everything they started (the registry, the accessibility
        // dbus-daemon), and the launcher takes its root property with it.
        let spawned = Self.processes(inGroups: [bus.launcherPID, bus.daemonPID])
        XCTAssertFalse(spawned.isEmpty)
        for app in apps { app.end() }
        display.stop()
        for pid in [bus.daemonPID, bus.launcherPID] + spawned {
            XCTAssertTrue(Self.waitGone(pid), "pid \(pid) (\(Self.commandLine(pid))) still runs after stop")
        }
    }

    func testCLIStartsPrintsEnvironmentAndStops() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-a11y-state-\(UUID())")
        stateDirectory = state
        let env = ["XCLAW_STATE_DIR": state.path]

        // Without --json stdout holds the name alone, for `D=$(xclaw display start --accessibility)`.
        let plain = try runCLI(["display", "start", "--size", "640x480", "--accessibility"], environment: env)
        XCTAssertEqual(plain.status, 0, plain.stderr)
        let plainName = plain.text.trimmingCharacters(in: .newlines)
        XCTAssertTrue(plainName.hasPrefix(":") && !plainName.contains("\n"), plain.text)
        if let record = VirtualDisplayRecords.find(plainName, in: state) { cliDisplays.append(record) }
        XCTAssertEqual(try runCLI(["display", "stop", plainName], environment: env).status, 0)

        let started = try runCLI(
            ["display", "start", "--size", "800x600", "--accessibility", "--json"],
            environment: env)
        XCTAssertEqual(started.status, 0, started.stderr)
        let display = try JSONDecoder.xclaw.decode(VirtualDisplay.self, from: started.stdout)
        cliDisplays.append(display)
        let bus = try XCTUnwrap(display.accessibility, started.text)
        XCTAssertTrue(display.isRunning)
        XCTAssertEqual(
            try WindowManager(connection: DisplayConnection(name: display.name)).rootText("AT_SPI_BUS"), bus.a11yAddress
        )

        let listed = try runCLI(["display", "list"], environment: env)
        XCTAssertTrue(
            listed.text.hasPrefix("\(display.name)\t800x600x24") && listed.text.contains("\ta11y"),
            listed.text)

        let shell = try runCLI(["display", "env", display.name], environment: env)
        XCTAssertEqual(shell.status, 0, shell.stderr)
        XCTAssertTrue(shell.text.contains("export DISPLAY=\(display.name)\n"), shell.text)
        XCTAssertTrue(shell.text.contains("export DBUS_SESSION_BUS_ADDRESS='\(bus.sessionAddress)'"), shell.text)
        XCTAssertFalse(shell.text.contains("AT_SPI_BUS_ADDRESS="), shell.text)
        // What a shell gets from eval.
        let evaluated = try Self.runShell(
            "eval \"$(\"$XCLAW\" display env \(display.name))\"; echo \"$DISPLAY|$DBUS_SESSION_BUS_ADDRESS\"",
            environment: env.merging(["XCLAW": productsDirectory.appendingPathComponent("xclaw").path]) { $1 })
        XCTAssertEqual(evaluated, "\(display.name)|\(bus.sessionAddress)\n")
        let json = try runCLI(["display", "env", display.name, "--json"], environment: env)
        XCTAssertEqual(try JSONDecoder().decode([String: String].self, from: json.stdout), display.environment)

        let unknown = try runCLI(["display", "env", ":65000"], environment: env)
        XCTAssertEqual(unknown.status, 3)
        XCTAssertTrue(unknown.stderr.contains("xclaw display list"), unknown.stderr)

        // The bus dies behind xclaw's back: snapshots say so (and use OCR), `tree` fails with what to do.
        let spawned = Self.processes(inGroups: [bus.launcherPID, bus.daemonPID])
        kill(bus.launcherPID, SIGTERM)
        let windows = try WindowManager(connection: DisplayConnection(name: display.name))
        eventually("the launcher's root property is gone", within: .seconds(5)) {
            (try? windows.rootText("AT_SPI_BUS")) == nil
        }
        XCTAssertNil(try windows.rootText("AT_SPI_BUS"), "the launcher removes its property when it ends")
        let lost = try runCLI(
            ["snapshot", "--display", display.name], environment: env,
            removing: ["AT_SPI_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS"])
        XCTAssertEqual(lost.status, 0, lost.stderr)
        XCTAssertTrue(lost.stderr.contains("warning:") && lost.stderr.contains("is gone"), lost.stderr)
        let tree = try runCLI(
            ["tree", "--display", display.name], environment: env,
            removing: ["AT_SPI_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS"])
        XCTAssertEqual(tree.status, 1, tree.stderr)
        XCTAssertTrue(tree.stderr.contains("is gone") && tree.stderr.contains("--accessibility"), tree.stderr)

        let stopped = try runCLI(["display", "stop", display.name], environment: env)
        XCTAssertEqual(stopped.status, 0, stopped.stderr)
        for pid in [bus.daemonPID, bus.launcherPID, display.pid] + spawned {
            XCTAssertTrue(Self.waitGone(pid), "pid \(pid) (\(Self.commandLine(pid))) still runs after stop")
        }
        XCTAssertEqual(try runCLI(["display", "list"], environment: env).text, "")
    }

    // MARK: - Helpers

    /// The environment for an app on `display`: ours without what would send it elsewhere, plus the display's.
    private static func appEnvironment(_ display: VirtualDisplay) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in display.environmentToRemove + ["NO_AT_BRIDGE", "GTK_A11Y"] { env.removeValue(forKey: key) }
        return env.merging(display.environment) { $1 }
    }

    /// Starts an app on `display` with output discarded.
    private static func launch(_ arguments: [String], on display: VirtualDisplay) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.environment = appEnvironment(display)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs a command to its end (killed after 10 s) and returns its status and stdout.
    private static func capture(
        _ executable: String, _ arguments: [String],
        environment: [String: String]? = nil
    ) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let box = DataBox()
        let reader = Thread { box.set(out.fileHandleForReading.readDataToEndOfFile()) }
        reader.start()
        if !process.exits(within: .seconds(10)) { kill(process.processIdentifier, SIGKILL) }
        process.exits(within: .seconds(10))
        box.wait(within: .seconds(5))
        return (process.terminationStatus, String(decoding: box.data, as: UTF8.self))
    }

    /// `sh -c script`'s stdout.
    private static func runShell(_ script: String, environment: [String: String]) throws -> String {
        try capture("/bin/sh", ["-c", script], environment: environment).output
    }

    /// One `dbus-send --print-reply` call on the bus at `bus`.
    private static func dbusSend(
        bus: String, destination: String, path: String, method: String,
        arguments: [String] = []
    ) throws -> (status: Int32, output: String) {
        try capture(
            "/usr/bin/dbus-send",
            [
                "--bus=\(bus)", "--reply-timeout=3000", "--print-reply",
                "--dest=\(destination)", path, method,
            ] + arguments)
    }

    /// The names of the apps the registry on the accessibility bus lists as the desktop's children.
    private static func registeredApps(on a11yAddress: String) throws -> [String] {
        let reply = try dbusSend(
            bus: a11yAddress, destination: "org.a11y.atspi.Registry",
            path: "/org/a11y/atspi/accessible/root",
            method: "org.a11y.atspi.Accessible.GetChildren")
        guard reply.status == 0 else { return [] }
        // Each child is a struct { string ":1.N"; object path "/org/a11y/atspi/accessible/root" }.
        let quoted = reply.output.split(separator: "\n").compactMap { line -> (Bool, String)? in
            let parts = line.split(separator: "\"")
            guard parts.count >= 2 else { return nil }
            return (line.contains("object path"), String(parts[1]))
        }
        var names: [String] = []
        for (index, item) in quoted.enumerated() where !item.0 && index + 1 < quoted.count && quoted[index + 1].0 {
            let name = try dbusSend(
                bus: a11yAddress, destination: item.1, path: quoted[index + 1].1,
                method: "org.freedesktop.DBus.Properties.Get",
                arguments: ["string:org.a11y.atspi.Accessible", "string:Name"])
            if let value = name.output.split(separator: "\"").dropFirst().first { names.append(String(value)) }
        }
        return names
    }

    /// The live processes whose process group is one of `groups` (what the launcher and the daemon spawned).
    private static func processes(inGroups groups: [Int32]) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap(Int32.init).filter { pid in
            guard let stat = procStat(pid), stat.state != "Z" else { return false }
            return groups.contains(stat.group)
        }
    }

    /// Waits up to 3 s until `pid` is gone. A zombie counts as gone: an orphan waits for init to reap it, which
    /// here happens only every second or two.
    private static func waitGone(_ pid: Int32) -> Bool {
        poll(within: .seconds(3)) { kill(pid, 0) != 0 || procStat(pid)?.state == "Z" }
    }

    /// State letter and process group from `/proc/PID/stat`.
    private static func procStat(_ pid: Int32) -> (state: Character, group: Int32)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count >= 3, let state = fields[0].first, let group = Int32(fields[2]) else { return nil }
        return (state, group)
    }

    /// For failure messages.
    private static func commandLine(_ pid: Int32) -> String {
        let data = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
        return String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
    }
}

/// Reads the records `xclaw display start` wrote into a state directory, so a test can stop what it started.
private enum VirtualDisplayRecords {
    static func find(_ name: String, in state: URL) -> VirtualDisplay? {
        let number = name.dropFirst()
        let url = state.appendingPathComponent("displays/\(number).json")
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder.xclaw.decode(VirtualDisplay.self, from: data)
    }
}
