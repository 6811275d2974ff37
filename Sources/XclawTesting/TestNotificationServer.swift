import Foundation
import XclawBase
import XclawPolling
import XclawScreen

/// A real notification server for a test: dunst on the test's Xvfb and private session bus, with a config of the
/// test's own (nothing system-wide is read or touched). Its context menu, which dunst opens through the `dmenu`
/// program its config names, is a script that picks the action the test chose: the path a person takes when they
/// choose a notification's action from dunst's menu. dunst's own `dunstctl` is the oracle of what it received.
public final class TestNotificationServer: @unchecked Sendable {
    /// The bus it serves.
    public let bus: TestSessionBus
    private let directory: String
    private let process: Subprocess

    /// Starts dunst on `display` and `bus`, and waits until it owns `org.freedesktop.Notifications`.
    public init(bus: TestSessionBus, display: String) throws {
        self.bus = bus
        directory = bus.directory + "/dunst"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // dunst writes the menu's lines (`#Label (Summary) [ID,ACTION]`) to the program's stdin and invokes the
        // action of the line it prints back.
        let chooser = directory + "/choose.sh"
        try """
        #!/bin/sh
        cat > '\(directory)/menu.txt'
        grep -F -- "$(cat '\(directory)/about')" '\(directory)/menu.txt' | grep -F -- ",$(cat '\(directory)/choice')]" \\
            | head -n 1
        """.write(toFile: chooser, atomically: true, encoding: .utf8)
        chmod(chooser, 0o755)
        for file in ["about", "choice"] {
            try "".write(toFile: "\(directory)/\(file)", atomically: true, encoding: .utf8)
        }
        // Notifications stay until closed (timeout 0), so a test decides how each one ends.
        let config = directory + "/dunstrc"
        try """
        [global]
            dmenu = \(chooser)
            browser = /bin/true
            font = Monospace 8
        [urgency_low]
            timeout = 0
        [urgency_normal]
            timeout = 0
        [urgency_critical]
            timeout = 0
        """.write(toFile: config, atomically: true, encoding: .utf8)
        process = try bus.start(["/usr/bin/dunst", "-config", config], log: "dunst", extra: ["DISPLAY": display])
        let up = poll(within: .seconds(10), every: .milliseconds(20)) {
            (try? self.ctl(["is-paused"])) != nil || !self.process.isRunning ? true : nil
        }
        guard up == true, process.isRunning else {
            throw TestSessionBus.Failure(
                description: "dunst did not start: \(bus.log("dunst")); run scripts/install-deps.sh (dunst)")
        }
    }

    /// Runs `dunstctl` on the bus; its stdout, or a failure with its stderr.
    @discardableResult
    public func ctl(_ arguments: [String]) throws -> String {
        let outcome = try Subprocess.run(
            ["/usr/bin/dunstctl"] + arguments, timeout: .seconds(10), environment: bus.environment)
        guard outcome.ending == .exited(0) else {
            throw TestSessionBus.Failure(
                description: "dunstctl \(arguments.joined(separator: " ")): \(outcome.ending) "
                    + String(decoding: outcome.stderr, as: UTF8.self))
        }
        return String(decoding: outcome.stdout, as: UTF8.self)
    }

    /// How many notifications dunst shows now.
    public func displayed() throws -> Int {
        Int(try ctl(["count", "displayed"]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// One notification of dunst's history (the closed ones), as dunst reports it.
    public struct Entry: Sendable, Hashable {
        /// Its id.
        public var id: Int
        /// Its application's name.
        public var appName: String
        /// The summary.
        public var summary: String
        /// The body.
        public var body: String
    }

    /// The notifications dunst closed, newest first (`dunstctl history`).
    public func history() throws -> [Entry] {
        let json = try JSONSerialization.jsonObject(with: Data(try ctl(["history"]).utf8)) as? [String: Any]
        let groups = json?["data"] as? [[[String: Any]]] ?? []
        return groups.flatMap { $0 }.map { item in
            func field(_ key: String) -> Any? { (item[key] as? [String: Any])?["data"] }
            return Entry(
                id: field("id") as? Int ?? -1, appName: field("appname") as? String ?? "",
                summary: field("summary") as? String ?? "", body: field("body") as? String ?? "")
        }
    }

    /// Chooses `action` of notification `id` through dunst's context menu, as a person would.
    public func choose(_ action: String, of id: UInt32) throws { try choose(action, lineWith: "[\(id),") }

    /// Chooses `action` of the notification whose summary is `summary`.
    public func choose(_ action: String, ofNotificationTitled summary: String) throws {
        try choose(action, lineWith: "(\(summary)) [")
    }

    /// Opens dunst's context menu (`dunstctl context`), whose program picks the line holding `about` and `action`.
    private func choose(_ action: String, lineWith about: String) throws {
        try about.write(toFile: directory + "/about", atomically: true, encoding: .utf8)
        try action.write(toFile: directory + "/choice", atomically: true, encoding: .utf8)
        try ctl(["context"])
    }

    /// Closes every notification shown, as a person dismissing them (reason: dismissed).
    public func dismissAll() throws { try ctl(["close-all"]) }

    /// Ends dunst (the bus ends it too).
    public func stop() { _ = process.kill() }
}

/// A display, a session bus and dunst serving it: what a notification test class starts once.
public final class NotificationScene: StoppableScene, @unchecked Sendable {
    /// The Xvfb dunst shows its notifications on.
    public let display: TestDisplay
    /// The private session bus.
    public let bus: TestSessionBus
    /// dunst.
    public let dunst: TestNotificationServer

    /// Starts all three.
    public init() throws {
        display = try TestDisplay(size: Size(width: 800, height: 600))
        bus = try TestSessionBus(display: display.name)
        dunst = try TestNotificationServer(bus: bus, display: display.name)
    }

    /// Ends all three.
    public func stop() {
        dunst.stop()
        bus.stop()
        display.stop()
    }
}
