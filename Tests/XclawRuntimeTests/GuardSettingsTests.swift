import Foundation
import XCTest
import XclawAgent
import XclawRuntime

/// The emergency stop and approval settings read from a real config file: defaults, each key, and malformed values
/// refused with the key and the file named.
final class GuardSettingsTests: XCTestCase {
    private func settings(_ text: String?) throws -> GuardSettings {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-guard-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("xclaw"), withIntermediateDirectories: true)
        if let text {
            try text.write(to: dir.appendingPathComponent("xclaw/config"), atomically: true, encoding: .utf8)
        }
        return try GuardSettings.fromConfig(environment: ["XDG_CONFIG_HOME": dir.path, "HOME": dir.path])
    }

    func testDefaultsAndEachKey() throws {
        let defaults = try settings(nil)
        XCTAssertEqual(defaults.stopKey, "ctrl+alt+Pause")
        XCTAssertFalse(defaults.failsafe)
        XCTAssertEqual(defaults.policy, .all)
        XCTAssertEqual(defaults.approvalTimeout, .seconds(900))
        let set = try settings(
            "stop_key = super+Escape\nfailsafe = on\napproval = delete,pay\napproval_timeout = 1.5\n")
        XCTAssertEqual(set.stopKey, "super+Escape")
        XCTAssertTrue(set.failsafe)
        XCTAssertEqual(set.policy.kinds, [.delete, .pay])
        XCTAssertEqual(set.approvalTimeout, .milliseconds(1500))
        XCTAssertNil(try settings("stop_key = none\n").stopKey)
    }

    func testMalformedValuesNameTheKeyAndTheFile() {
        for (text, key) in [
            ("stop_key = ctrl+Nokey\n", "stop_key"), ("failsafe = maybe\n", "failsafe"),
            ("approval = everything\n", "approval"), ("approval_timeout = -3\n", "approval_timeout"),
        ] {
            XCTAssertThrowsError(try settings(text), text) { error in
                XCTAssertTrue("\(error)".contains(key) && "\(error)".contains("/xclaw/config"), "\(error)")
                XCTAssertEqual((error as? GuardError)?.exitStatus, .usage)
            }
        }
    }
}
