import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawTesting
import XclawTimeTesting

/// `xclaw notify` and `xclaw watch --notification` against dunst on the class's Xvfb and private session bus: dunst's
/// `dunstctl` is the oracle of what it received, its context menu the way a person chooses an action, and
/// `notify-send` the other application whose notification is watched for.
final class NotificationCLITests: XCTestCase {
    /// The class's scene, started by its first test, or why it could not start (each test fails with it).
    private static let scene = ClassScene { try NotificationScene() }

    override class func tearDown() {
        scene.stop()
        super.tearDown()
    }

    private var dunst: TestNotificationServer { get throws { try Self.scene.get().dunst } }
    private var environment: [String: String] { get throws { try Self.scene.get().bus.environment } }

    override func tearDownWithError() throws { try dunst.dismissAll() }

    func testNotifyPrintsTheIdOfWhatTheServerShows() throws {
        let dunst = try dunst
        let shown = try runCLI(
            ["notify", "Backup done", "412 files", "--app-name", "backup-tool", "--urgency", "critical", "--json"],
            environment: try environment)
        XCTAssertEqual(shown.status, 0, shown.stderr)
        let id = try XCTUnwrap(JSONValue.parse(shown.stdout)["id"]?.int)
        let plain = try runCLI(["notify", "Second"], environment: try environment)
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(Int(plain.text.trimmingCharacters(in: .newlines)), id + 1)
        XCTAssertEqual(try dunst.displayed(), 2)
        try dunst.dismissAll()
        let entry = try XCTUnwrap(try dunst.history().first { $0.id == id })
        XCTAssertEqual([entry.summary, entry.body, entry.appName], ["Backup done", "412 files", "backup-tool"])
        let errors = try JSONSchemas.errors([.init(name: "notify --json", schema: "notify", stdout: shown.stdout)])
        XCTAssertEqual(errors, [])
    }

    func testWaitPrintsTheActionChosenInTheServersMenu() throws {
        let dunst = try dunst
        let out = Pipe()
        let waiting = try launchCLI(
            ["notify", "Deploy now?", "--action", "yes=Deploy", "--action", "no=Cancel", "--wait", "--timeout", "60"],
            environment: try environment, stdout: out)
        defer { waiting.end() }
        XCTAssertTrue(try eventually("dunst shows the question") { try dunst.displayed() == 1 })
        try dunst.choose("no", ofNotificationTitled: "Deploy now?")
        XCTAssertTrue(waiting.exits(within: .seconds(20)))
        XCTAssertEqual(waiting.terminationStatus, 0)
        XCTAssertEqual(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), "no\n")
    }

    func testWaitReportsHowANotificationClosedAndClosesAnUnansweredOne() throws {
        let dunst = try dunst
        let expired = try runCLI(
            ["notify", "Short-lived", "--expire", "100", "--wait", "--timeout", "30", "--json"],
            environment: try environment)
        XCTAssertEqual(expired.status, 0, expired.stderr)
        XCTAssertEqual(try JSONValue.parse(expired.stdout)["closed"]?.string, "expired")
        XCTAssertEqual(
            try JSONSchemas.errors([.init(name: "notify --wait --json", schema: "notify", stdout: expired.stdout)]),
            [])

        let unanswered = try runCLI(
            ["notify", "Nobody answers", "--wait", "--timeout", "0.3"], environment: try environment)
        XCTAssertEqual(unanswered.status, 1)
        XCTAssertTrue(unanswered.stderr.contains("nobody answered notification"), unanswered.stderr)
        XCTAssertEqual(unanswered.text, "")
        // Closed by xclaw: dunst shows nothing and keeps it in its history.
        XCTAssertEqual(try dunst.displayed(), 0)
        XCTAssertTrue(try dunst.history().contains { $0.summary == "Nobody answers" })
    }

    func testWatchSeesANotificationAnotherProgramSends() throws {
        let environment = try environment
        let out = Pipe()
        let watching = try launchCLI(
            ["watch", "--notification", "TESTS PASSED", "--from", "build", "--timeout", "30", "--json"],
            environment: environment, stdout: out)
        defer { watching.end() }
        // The monitor is in place some time after the start: notify-send again until the watch has seen one.
        XCTAssertTrue(
            try eventually("watch sees notify-send", within: .seconds(20), every: .milliseconds(250)) {
                _ = try Subprocess.run(
                    ["/usr/bin/notify-send", "-a", "builder", "Build finished", "All 412 tests passed"],
                    timeout: .seconds(10), environment: environment)
                return !watching.isRunning
            })
        XCTAssertEqual(watching.terminationStatus, 0)
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let seen = try XCTUnwrap(
            JSONValue.parse(stdout)["notification"]?.object, String(decoding: stdout, as: UTF8.self))
        XCTAssertEqual(seen["app_name"]?.string, "builder")
        XCTAssertEqual(seen["summary"]?.string, "Build finished")
        XCTAssertEqual(seen["body"]?.string, "All 412 tests passed")
        XCTAssertEqual(
            try JSONSchemas.errors([.init(name: "watch --notification", schema: "watch", stdout: stdout)]), [])
    }

    func testWatchTimesOutWithExitOneAndNeedsNoDisplay() throws {
        let result = try runCLI(
            ["watch", "--notification", "never sent", "--timeout", "0.3"],
            environment: try environment.filter { $0.key != "DISPLAY" }, removing: ["DISPLAY"])
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(
            result.stderr.contains("timed out waiting for a notification containing \"never sent\""), result.stderr)
    }

    func testNoServerIsExitFiveWithWhatToDo() throws {
        let empty = try TestSessionBus(activation: .none)
        for arguments in [["notify", "Anyone?"], ["notify", "Anyone?", "--action", "ok=OK", "--wait"]] {
            let result = try runCLI(arguments, environment: empty.environment)
            XCTAssertEqual(result.status, 5, "\(arguments): \(result.stderr)")
            XCTAssertTrue(
                result.stderr.contains(
                    "no notification server runs on this session bus (nothing owns org.freedesktop.Notifications): "
                        + "start one (dunst, xfce4-notifyd"), result.stderr)
        }
    }
}
