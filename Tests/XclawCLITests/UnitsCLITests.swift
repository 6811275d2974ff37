import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawTesting
import XclawTimeTesting

/// `xclaw units` and `xclaw unit status|start|stop|restart` against a real systemd user manager (`TestUserManager`),
/// with `systemctl --user` as the oracle, their JSON against the schemas; and exit 5 where no manager is on the bus.
final class UnitsCLITests: XCTestCase {
    func testListStartStatusStopAgainstARealUserManager() throws {
        let manager = try TestUserManager()
        defer { manager.stop() }
        try manager.writeUnit("sleeper.service", "[Unit]\nDescription=Sleeps\n[Service]\nExecStart=/bin/sleep 300\n")
        let xclaw = { (arguments: [String]) in try runCLI(arguments, environment: manager.environment) }

        let all = try xclaw(["units", "--all", "--json"])
        XCTAssertEqual(all.status, 0, all.stderr)
        let listed = try XCTUnwrap(JSONValue.parse(all.stdout).array)
        XCTAssertTrue(listed.contains { $0["name"]?.string == "sleeper.service" }, all.text)

        let started = try xclaw(["unit", "start", "sleeper", "--wait", "--json"])
        XCTAssertEqual(started.status, 0, started.stderr)
        let pid = try XCTUnwrap(JSONValue.parse(started.stdout)["status"]?["main_pid"]?.int, started.text)
        defer { kill(pid_t(pid), SIGKILL) }
        XCTAssertEqual(try manager.systemctl(["show", "-p", "MainPID", "--value", "sleeper"]).output, "\(pid)\n")
        let active = try xclaw(["units"])
        XCTAssertTrue(active.text.contains("sleeper.service\tactive (running)\t"), active.text)
        let status = try xclaw(["unit", "status", "sleeper"])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertTrue(
            status.text.hasPrefix("sleeper.service: active (running)\ndescription: \"Sleeps\"\nmain pid: \(pid)\n"),
            status.text)
        let statusJSON = try xclaw(["unit", "status", "sleeper.service", "--json"])
        let restarted = try xclaw(["unit", "restart", "sleeper", "--wait", "--json"])
        XCTAssertEqual(restarted.status, 0, restarted.stderr)
        let stopped = try xclaw(["unit", "stop", "sleeper", "--wait"])
        XCTAssertEqual(stopped.status, 0, stopped.stderr)
        XCTAssertEqual(stopped.text, "sleeper.service: inactive (dead)\n")
        XCTAssertEqual(try manager.systemctl(["is-active", "sleeper"]).output, "inactive\n")
        let queued = try xclaw(["unit", "start", "sleeper", "--json"])
        XCTAssertEqual(try JSONValue.parse(queued.stdout)["result"]?.string, "queued")
        let stopAgain = try xclaw(["unit", "stop", "sleeper", "--wait", "--json"])

        let missing = try xclaw(["unit", "status", "nosuch"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(
            missing.stderr.contains("the systemd user manager has no unit \"nosuch.service\""), missing.stderr)
        let errors = try JSONSchemas.errors([
            .init(name: "units", schema: "units", stdout: all.stdout),
            .init(name: "unit start", schema: "unit-start", stdout: started.stdout),
            .init(name: "unit start (queued)", schema: "unit-start", stdout: queued.stdout),
            .init(name: "unit status", schema: "unit-status", stdout: statusJSON.stdout),
            .init(name: "unit restart", schema: "unit-restart", stdout: restarted.stdout),
            .init(name: "unit stop", schema: "unit-stop", stdout: stopAgain.stdout),
        ])
        XCTAssertTrue(errors.isEmpty, errors.joined(separator: "\n"))
    }

    func testNoUserManagerIsExitFive() throws {
        let bus = try TestSessionBus()
        let result = try runCLI(["units"], environment: bus.environment)
        XCTAssertEqual(result.status, 5)
        XCTAssertTrue(
            result.stderr.hasPrefix("xclaw: no systemd user manager runs on this session bus"), result.stderr)
        let noBus = try runCLI(
            ["unit", "status", "x"], environment: ["XDG_RUNTIME_DIR": bus.directory + "/nothing"],
            removing: ["DBUS_SESSION_BUS_ADDRESS"])
        XCTAssertEqual(noBus.status, 5)
        XCTAssertTrue(noBus.stderr.contains("no D-Bus session bus"), noBus.stderr)
    }
}
