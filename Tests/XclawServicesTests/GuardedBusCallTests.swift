import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawPolling
import XclawTesting

@testable import XclawServices

/// The generic call behind `dbus_call`, against a real MPRIS player (mpv with its MPRIS plugin, playing a generated
/// tone with no audio device) on a private bus: the allow-list, introspection, JSON typed by the method's own
/// signature, and mpv's own IPC as the oracle of what the call did.
final class GuardedBusCallTests: XCTestCase {
    nonisolated(unsafe) private static var bus: TestSessionBus!
    nonisolated(unsafe) private static var mpv: TestMediaPlayer!

    override class func setUp() {
        super.setUp()
        do {
            bus = try TestSessionBus()
            mpv = try TestMediaPlayer(on: bus)
        } catch {
            XCTFail("cannot start the bus and mpv: \(error)")
        }
    }

    override class func tearDown() {
        bus?.stop()
        super.tearDown()
    }

    private let player = "org.mpris.MediaPlayer2.mpv"

    private func caller(_ allow: String) throws -> GuardedBusCall {
        GuardedBusCall(allow: try BusAllowList.parse(allow), environment: Self.bus.environment)
    }

    private func waitForPlayer() throws -> GuardedBusCall {
        let call = try caller("org.mpris.MediaPlayer2.*")
        XCTAssertEqual(try call.names().running, [player])
        return call
    }

    func testANameOffTheListIsRefusedWithHowToAllowIt() throws {
        _ = try waitForPlayer()
        let call = try caller("org.freedesktop.Notifications")
        XCTAssertThrowsError(
            try call.call(
                player, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player", method: "Pause",
                arguments: [])
        ) { error in
            guard case .denied(_, let message) = error as? BusError else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("--dbus-allow org.freedesktop.Notifications,\(player)"), message)
            XCTAssertEqual((error as? BusError)?.exitStatus, .internal)
        }
        XCTAssertThrowsError(try caller("").introspect(player, path: "/")) { error in
            guard case .denied(_, let message) = error as? BusError else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("may call no D-Bus service"), message)
        }
        // Unique names are never allowed, whatever the list says.
        XCTAssertFalse(try BusAllowList.parse("org.mpris.MediaPlayer2.*").allows(":1.1"))
        XCTAssertEqual(Self.mpv.isPaused, false)
    }

    func testAFamilyDoesNotReachTheSecretStoreUnderAnotherOfItsNames() throws {
        // One program owning the secret store's name and another (as gnome-keyring owns org.gnome.keyring too).
        let keyring = try Self.bus.start(
            [
                "/usr/bin/python3", "-c",
                "from gi.repository import Gio; import time; c = Gio.bus_get_sync(Gio.BusType.SESSION); "
                    + "Gio.bus_own_name_on_connection(c, 'org.freedesktop.secrets', 0, None, None); "
                    + "Gio.bus_own_name_on_connection(c, 'org.example.Keyring', 0, None, None); time.sleep(600)",
            ], log: "keyring")
        defer { _ = keyring.kill() }
        let family = try caller("org.example.*")
        XCTAssertTrue(
            poll(within: .seconds(10)) { (try? family.names().running.contains("org.example.Keyring")) == true })
        XCTAssertThrowsError(try family.introspect("org.example.Keyring", path: "/")) { error in
            guard case .denied(_, let message) = error as? BusError else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("same program as org.freedesktop.secrets"), message)
        }
        // Named exactly, it is the person's choice.
        XCTAssertNoThrow(try caller("org.example.Keyring").introspect("org.example.Keyring", path: "/"))
    }

    func testIntrospectionTypesTheArgumentsAndTheCallActs() throws {
        let call = try waitForPlayer()
        let info = try call.introspect(player, path: "/org/mpris/MediaPlayer2")
        XCTAssertEqual(info.method("org.mpris.MediaPlayer2.Player", "Seek")?.input, "x")
        XCTAssertEqual(info.method("org.mpris.MediaPlayer2.Player", "SetPosition")?.input, "ox")
        XCTAssertTrue(info.properties["org.mpris.MediaPlayer2.Player"]?.contains("PlaybackStatus") == true)

        _ = try call.call(
            player, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player", method: "Pause",
            arguments: [])
        XCTAssertTrue(poll(within: .seconds(5)) { Self.mpv.isPaused == true })
        let status = try call.call(
            player, path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties", method: "Get",
            arguments: ["org.mpris.MediaPlayer2.Player", "PlaybackStatus"])
        XCTAssertEqual(status.first?.string, "Paused")

        // Seek's offset is an int64 of microseconds: the JSON number is typed by the introspected signature.
        let before = try XCTUnwrap(Self.mpv.position)
        _ = try call.call(
            player, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player", method: "Seek",
            arguments: [.number(30_000_000)])
        XCTAssertTrue(
            poll(within: .seconds(5)) { (Self.mpv.position ?? 0) >= before + 29 })

        _ = try call.call(
            player, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player", method: "Play",
            arguments: [], signature: "")
        XCTAssertTrue(poll(within: .seconds(5)) { Self.mpv.isPaused == false })
    }

    func testArgumentsThatDoNotFitAreUsageErrors() throws {
        let call = try waitForPlayer()
        func refused(_ arguments: [JSONValue], signature: String? = nil, _ expected: String) {
            XCTAssertThrowsError(
                try call.call(
                    player, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player",
                    method: "Seek", arguments: arguments, signature: signature)
            ) { error in
                guard case .invalidArguments(_, let message) = error as? BusError else { return XCTFail("\(error)") }
                XCTAssertTrue(message.contains(expected), message)
                XCTAssertEqual((error as? BusError)?.exitStatus, .usage)
            }
        }
        refused([.number(1), .number(2)], "it takes 1 argument (x), 2 given")
        refused([.string("ten")], "\"ten\" is not an integer")
        refused([.number(1.5)], "1.5 is not an integer")
        refused([.number(1)], signature: "a{", "it ends in the middle of a type")
        XCTAssertEqual(Self.mpv.isPaused, false)
    }
}
