import Foundation
import XCTest
import XclawBase
import XclawPolling
import XclawTesting
import XclawTimeTesting

@testable import XclawServices

/// Notifications against a real server: dunst on the class's Xvfb and private session bus, its own `dunstctl` the
/// oracle of what it received, its context menu the way an action is chosen. The monitor watches `notify-send`, a
/// program of its own.
final class NotificationServiceTests: XCTestCase {
    /// The class's scene, started by its first test, or why it could not start (each test fails with it).
    private static let scene = ClassScene { try NotificationScene() }

    override class func tearDown() {
        scene.stop()
        super.tearDown()
    }

    private var dunst: TestNotificationServer { get throws { try Self.scene.get().dunst } }
    private var bus: TestSessionBus { get throws { try Self.scene.get().bus } }
    private var notifier: Notifier {
        get throws { try Notifier(connection: BusConnection.session(environment: try bus.environment)) }
    }

    func testANotificationReachesTheServerWithWhatWasSent() throws {
        let dunst = try dunst
        let notifier = try notifier
        XCTAssertTrue(try notifier.capabilities().contains("actions"))
        let id = try notifier.send(
            NotificationRequest(
                title: "Backup done", body: "412 files, 3 GB", urgency: .critical, appName: "backup-tool"))
        XCTAssertGreaterThan(id, 0)
        XCTAssertGreaterThanOrEqual(try dunst.displayed(), 1)
        // Dismissed by the person (dunstctl close-all): reason 2, and dunst keeps it in its history.
        try dunst.dismissAll()
        XCTAssertEqual(try notifier.wait(for: id, timeout: .seconds(10)), .closed(.dismissed))
        let entry = try XCTUnwrap(try dunst.history().first { $0.id == Int(id) })
        XCTAssertEqual(entry.summary, "Backup done")
        XCTAssertEqual(entry.body, "412 files, 3 GB")
        XCTAssertEqual(entry.appName, "backup-tool")
    }

    func testTheActionChosenInTheServersMenuIsReported() throws {
        let dunst = try dunst
        let notifier = try notifier
        let id = try notifier.send(
            NotificationRequest(
                title: "Deploy?", actions: [.init(id: "yes", label: "Deploy"), .init(id: "no", label: "Cancel")]))
        // Another client's forged ActionInvoked for the same id (ids are small and sequential) is not the answer.
        let forged = try Subprocess.run(
            [
                "/usr/bin/dbus-send", "--bus=" + (try bus.address), "--type=signal", "/org/freedesktop/Notifications",
                "org.freedesktop.Notifications.ActionInvoked", "uint32:\(id)", "string:yes",
            ], timeout: .seconds(10))
        XCTAssertEqual(forged.ending, .exited(0), String(decoding: forged.stderr, as: UTF8.self))
        try dunst.choose("no", of: id)
        XCTAssertEqual(try notifier.wait(for: id, timeout: .seconds(10)), .action("no"))
        try dunst.dismissAll()
    }

    func testExpiryAndCloseNotificationAreReportedAsSuch() throws {
        let notifier = try notifier
        let expiring = try notifier.send(NotificationRequest(title: "Short-lived", expireMilliseconds: 100))
        XCTAssertEqual(try notifier.wait(for: expiring, timeout: .seconds(10)), .closed(.expired))
        let closed = try notifier.send(NotificationRequest(title: "Closed by xclaw"))
        try notifier.close(closed)
        XCTAssertEqual(try notifier.wait(for: closed, timeout: .seconds(10)), .closed(.closedByCall))
        // Nothing more comes for it: a wait runs out and says so with nil.
        XCTAssertNil(try notifier.wait(for: closed, timeout: .milliseconds(50)))
    }

    func testTheMonitorSeesWhatAnotherProgramSends() throws {
        let bus = try bus
        let monitor = try NotificationMonitor(environment: bus.environment)
        let mail = try Subprocess.run(
            ["/usr/bin/notify-send", "-a", "mail", "New message", "from Bob"], timeout: .seconds(10),
            environment: bus.environment)
        XCTAssertEqual(mail.ending, .exited(0), String(decoding: mail.stderr, as: UTF8.self))
        let sent = try Subprocess.run(
            ["/usr/bin/notify-send", "-a", "builder", "Build finished", "All 412 tests passed"], timeout: .seconds(10),
            environment: bus.environment)
        XCTAssertEqual(sent.ending, .exited(0), String(decoding: sent.stderr, as: UTF8.self))
        // Another program's, which does not match, is counted and passed over.
        var others = 0
        let seen = try XCTUnwrap(
            try monitor.wait(for: "TESTS PASSED", from: "build", timeout: .seconds(10), counting: { others += 1 }))
        XCTAssertEqual(seen.appName, "builder")
        XCTAssertEqual(seen.summary, "Build finished")
        XCTAssertEqual(seen.body, "All 412 tests passed")
        XCTAssertEqual(others, 1, "the mail notification, seen first and passed over")
        XCTAssertTrue(seen.matches("finished"))
        XCTAssertFalse(seen.matches("finished", from: "mail"))
        try dunst.dismissAll()
    }

    func testAnAbsentServerIsAnErrorAtOnceAndTheMonitorStillSeesTheCall() throws {
        let empty = try TestSessionBus(activation: .none)
        let monitor = try NotificationMonitor(environment: empty.environment)
        let notifier = try Notifier(connection: BusConnection.session(environment: empty.environment))
        XCTAssertThrowsError(try notifier.send(NotificationRequest(title: "Anyone?"))) { error in
            XCTAssertEqual(error as? BusError, .absent(NotificationService.service))
            XCTAssertEqual((error as? BusError)?.exitStatus, .internal)
            XCTAssertTrue("\(error)".contains("no notification server runs on this session bus"), "\(error)")
            XCTAssertTrue("\(error)".contains("dunst"), "\(error)")
        }
        // The call passed on the bus on its way to nobody: a monitor needs no server.
        XCTAssertEqual(try monitor.wait(for: "anyone", timeout: .seconds(5))?.summary, "Anyone?")
    }

    func testActionsAreParsedAsTheCommandLineGivesThem() {
        XCTAssertEqual(
            NotificationAction(parsing: "yes=Deploy now"), NotificationAction(id: "yes", label: "Deploy now"))
        XCTAssertEqual(NotificationAction(parsing: "ok"), NotificationAction(id: "ok", label: "ok"))
        XCTAssertEqual(NotificationAction(parsing: "a=b=c"), NotificationAction(id: "a", label: "b=c"))
        XCTAssertNil(NotificationAction(parsing: "=label"))
        XCTAssertEqual(
            NotificationRequest(title: "T", actions: [.init(id: "y", label: "Y")], urgency: .low).arguments
                .map(\.gvariantText),
            ["'xclaw'", "uint32 0", "''", "'T'", "''", "@as ['y', 'Y']", "@a{sv} {'urgency': <byte 0>}", "int32 -1"])
    }
}
