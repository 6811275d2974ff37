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
    nonisolated(unsafe) private static var ipc: String!

    override class func setUp() {
        super.setUp()
        do {
            bus = try TestSessionBus()
            ipc = bus.directory + "/mpv.sock"
            try bus.start(
                [
                    "/usr/bin/mpv", "--no-config", "--script=/etc/mpv/scripts/mpris.so", "--ao=null", "--vo=null",
                    "--idle=no", "--loop-file=inf", "--input-ipc-server=" + ipc, "av://lavfi:sine=frequency=440",
                ], log: "mpv")
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

    /// mpv's answer to `get_property NAME` over its IPC socket: what mpv itself says, not the bus.
    private func mpvProperty(_ name: String) throws -> JSONValue? {
        let socket = Foundation.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(Self.ipc.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes + [0])
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { return nil }
        let request = "{\"command\":[\"get_property\",\"\(name)\"]}\n"
        _ = request.withCString { write(socket, $0, strlen($0)) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var text = ""
        while !text.contains("\n") {
            let n = read(socket, &buffer, buffer.count)
            guard n > 0 else { break }
            text += String(decoding: buffer[0..<n], as: UTF8.self)
        }
        // mpv may send event lines first; the reply is the line with "error".
        for line in text.split(separator: "\n") where line.contains("\"error\"") {
            return try JSONValue.parse(String(line))["data"]
        }
        return nil
    }

    private func waitForPlayer() throws -> GuardedBusCall {
        let call = try caller("org.mpris.MediaPlayer2.*")
        XCTAssertTrue(poll(within: .seconds(15)) { (try? call.names().running.contains(self.player)) == true })
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
        XCTAssertEqual(try mpvProperty("pause")?.bool, false)
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
        XCTAssertTrue(poll(within: .seconds(5)) { (try? self.mpvProperty("pause"))??.bool == true })
        let status = try call.call(
            player, path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties", method: "Get",
            arguments: ["org.mpris.MediaPlayer2.Player", "PlaybackStatus"])
        XCTAssertEqual(status.first?.string, "Paused")

        // Seek's offset is an int64 of microseconds: the JSON number is typed by the introspected signature.
        let before = try XCTUnwrap(try mpvProperty("time-pos")?.double)
        _ = try call.call(
            player, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player", method: "Seek",
            arguments: [.number(30_000_000)])
        XCTAssertTrue(
            poll(within: .seconds(5)) { ((try? self.mpvProperty("time-pos"))??.double ?? 0) >= before + 29 })

        _ = try call.call(
            player, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player", method: "Play",
            arguments: [], signature: "")
        XCTAssertTrue(poll(within: .seconds(5)) { (try? self.mpvProperty("pause"))??.bool == false })
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
        XCTAssertEqual(try mpvProperty("pause")?.bool, false)
    }
}
