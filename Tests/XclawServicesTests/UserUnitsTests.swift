import Foundation
import XCTest
import XclawBase
import XclawTesting
import XclawTimeTesting

@testable import XclawServices

/// The user's systemd units through a real user manager the test starts (`TestUserManager`: systemd --user in a
/// private mount namespace, on its own bus), with `systemctl --user` and /proc as the oracles; and the clear error
/// where no manager is on the bus.
final class UserUnitsTests: XCTestCase {
    func testStartsShowsRestartsAndStopsAUnitThroughTheManagersBus() throws {
        let host = TestUserManager.hostRunSystemd()
        let manager = try TestUserManager()
        var sleeperPIDs: [Int] = []
        defer {
            manager.stop()
            XCTAssertEqual(manager.leftAfterExit, [], "the manager stopped everything it started")
            for pid in sleeperPIDs { XCTAssertFalse(Subprocess.isRunning(pid_t(pid)), "sleep 300 (\(pid)) is gone") }
            XCTAssertEqual(TestUserManager.hostRunSystemd(), host, "the host's /run/systemd is as it was")
        }
        try manager.writeUnit(
            "sleeper.service", "[Unit]\nDescription=Sleeps for the test\n[Service]\nExecStart=/bin/sleep 300\n")
        try manager.writeUnit(
            "broken.service", "[Unit]\nDescription=Fails at once\n[Service]\nType=oneshot\nExecStart=/bin/false\n")
        let units = UserUnits(connection: try BusConnection.session(environment: manager.environment))

        XCTAssertFalse(try units.list(all: false).contains { $0.name == "sleeper.service" }, "not active: not listed")
        let file = try XCTUnwrap(try units.list(all: true).first { $0.name == "sleeper.service" })
        XCTAssertEqual(file.activeState, "inactive")

        let started = try units.change(.start, "sleeper", wait: .seconds(20))
        XCTAssertEqual(started.name, "sleeper.service")
        XCTAssertEqual(started.result, "done")
        XCTAssertTrue(started.job.hasPrefix("/org/freedesktop/systemd1/job/"), started.job)
        XCTAssertEqual(started.status.activeState, "active")
        XCTAssertEqual(started.status.subState, "running")
        let pid = try XCTUnwrap(started.status.mainPID)
        sleeperPIDs.append(pid)
        // The oracles: systemctl over the manager's private socket, and the process itself.
        XCTAssertEqual(
            try manager.systemctl(["show", "-p", "MainPID", "--value", "sleeper.service"]).output, "\(pid)\n")
        XCTAssertEqual(try manager.systemctl(["is-active", "sleeper.service"]).output, "active\n")
        XCTAssertEqual(try String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8), "/bin/sleep\u{0}300\u{0}")

        let status = try units.status("sleeper.service")
        XCTAssertEqual(status.description, "Sleeps for the test")
        XCTAssertEqual(status.mainPID, pid)
        XCTAssertEqual(status.fragmentPath, manager.unitDirectory + "/sleeper.service")
        XCTAssertNotNil(status.activeSince)
        XCTAssertEqual(status.lines.first, "sleeper.service: active (running)")
        XCTAssertTrue(try units.list(all: false).contains { $0.name == "sleeper.service" && $0.subState == "running" })

        let restarted = try units.change(.restart, "sleeper", wait: .seconds(20))
        let second = try XCTUnwrap(restarted.status.mainPID)
        sleeperPIDs.append(second)
        XCTAssertNotEqual(second, pid)
        eventually("the first sleep gone") { !Subprocess.isRunning(pid_t(pid)) }

        let stopped = try units.change(.stop, "sleeper.service", wait: .seconds(20))
        XCTAssertEqual(stopped.status.activeState, "inactive")
        XCTAssertNil(stopped.status.mainPID)
        XCTAssertEqual(try manager.systemctl(["is-active", "sleeper.service"]).output, "inactive\n")
        eventually("the second sleep gone") { !Subprocess.isRunning(pid_t(second)) }

        // Without waiting: the job is queued, and it ends on its own.
        let queued = try units.change(.start, "sleeper", wait: nil)
        XCTAssertEqual(queued.result, "queued")
        let third = try XCTUnwrap(
            eventually("started") { try? units.status("sleeper").mainPID })
        sleeperPIDs.append(third)

        XCTAssertThrowsError(try units.change(.start, "broken", wait: .seconds(20))) { error in
            XCTAssertEqual(error as? UnitError, .jobFailed("broken.service", action: .start, result: "failed"))
            XCTAssertEqual((error as? UnitError)?.exitStatus, .notFound)
        }
        XCTAssertEqual(try units.status("broken").activeState, "failed")
        XCTAssertThrowsError(try units.status("sleepr")) { error in
            guard case .notFound("sleepr.service", let closest) = error as? UnitError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(closest.first, "sleeper.service")
        }
    }

    func testNoUserManagerOnTheBusIsExitFiveAndSaysSo() throws {
        let bus = try TestSessionBus()
        let units = UserUnits(connection: try BusConnection.session(environment: bus.environment))
        XCTAssertThrowsError(try units.list(all: false)) { error in
            XCTAssertEqual(error as? BusError, .absent(UserUnits.manager))
            XCTAssertEqual((error as? BusError)?.exitStatus, .internal)
            XCTAssertTrue("\(error)".hasPrefix("no systemd user manager runs on this session bus"), "\(error)")
        }
    }
}
