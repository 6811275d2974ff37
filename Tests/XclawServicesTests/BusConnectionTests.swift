import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawPolling
import XclawTesting

@testable import XclawServices

/// The session-bus client against a real private `dbus-daemon`: calls, typed arguments, replies as JSON, the
/// classification of failures, signals and a monitor.
final class BusConnectionTests: XCTestCase {
    private let dbus = BusService(name: "org.freedesktop.DBus", what: "message bus", hint: "")

    func testCallsTheBusAndReadsItsReplyAsJSON() throws {
        let bus = try TestSessionBus()
        let connection = try BusConnection.session(environment: bus.environment)
        XCTAssertTrue(connection.uniqueName.hasPrefix(":"))
        let names = try connection.names()
        XCTAssertTrue(names.contains("org.freedesktop.DBus"))
        XCTAssertTrue(names.contains(connection.uniqueName))
        XCTAssertTrue(try connection.hasOwner(connection.uniqueName))
        XCTAssertFalse(try connection.hasOwner("org.example.Nobody"))
        let id = try connection.call(
            dbus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", method: "GetId")
        XCTAssertEqual(id.first?.string?.count, 32)
    }

    func testTypedArgumentsRoundTripThroughGVariantText() throws {
        let value = BusValue.tuple([
            .string("it's \\ \"q\"\n"), .uint32(7), .int64(-3), .bool(true), .double(1.5), .objectPath("/a/b"),
            .strings([]), .vardict([("k", .string("v")), ("n", .int32(2))]),
        ])
        XCTAssertEqual(value.signature, "(suxbdoasa{sv})")
        XCTAssertEqual(
            value.gvariantText,
            #"('it\'s \\ "q"\n', uint32 7, int64 -3, true, double 1.5, objectpath '/a/b', @as [], "#
                + #"@a{sv} {'k': <'v'>, 'n': <int32 2>})"#)
        XCTAssertEqual(BusValue.tuple([.string("x")]).gvariantText, "('x',)")
    }

    func testAnAbsentServiceSaysWhatToDoAndExitsFive() throws {
        let bus = try TestSessionBus(activation: .none)
        let connection = try BusConnection.session(environment: bus.environment)
        let notifications = BusService(
            name: "org.freedesktop.Notifications", what: "notification server",
            hint: "start one (dunst, xfce4-notifyd) or use the screen")
        XCTAssertThrowsError(
            try connection.call(
                notifications, path: "/org/freedesktop/Notifications", interface: "org.freedesktop.Notifications",
                method: "GetServerInformation")
        ) { error in
            XCTAssertEqual(error as? BusError, .absent(notifications))
            XCTAssertEqual((error as? BusError)?.exitStatus, .internal)
            XCTAssertEqual(
                "\(error)",
                "no notification server runs on this session bus (nothing owns org.freedesktop.Notifications): "
                    + "start one (dunst, xfce4-notifyd) or use the screen")
        }
    }

    func testBadArgumentsAreRefusedAsUsage() throws {
        let bus = try TestSessionBus()
        let connection = try BusConnection.session(environment: bus.environment)
        XCTAssertThrowsError(
            try connection.call(
                dbus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", method: "NameHasOwner",
                [.uint32(3)])
        ) { error in
            guard case .invalidArguments = error as? BusError else { return XCTFail("\(error)") }
            XCTAssertEqual((error as? BusError)?.exitStatus, .usage)
        }
    }

    func testAServiceThatQuitsWithoutAnsweringIsGoneNotSlow() {
        let player = BusService(name: "org.mpris.MediaPlayer2.mpv", what: "media player", hint: "start one")
        let quit = BusConnection.classify(
            name: "org.freedesktop.DBus.Error.NoReply",
            message: "Message recipient disconnected from message bus without replying", call: "Stop",
            milliseconds: 3000, service: player)
        XCTAssertEqual(quit, .absent(player))
        let slow = BusConnection.classify(
            name: "org.freedesktop.DBus.Error.NoReply", message: "Timeout was reached", call: "Stop",
            milliseconds: 3000, service: player)
        XCTAssertEqual(slow, .timedOut(call: "Stop", milliseconds: 3000))
    }

    func testNoSessionBusIsAClearError() throws {
        XCTAssertThrowsError(try BusConnection.session(environment: ["HOME": "/nonexistent"])) { error in
            XCTAssertEqual(error as? BusError, .noSessionBus)
        }
        XCTAssertThrowsError(
            try BusConnection.session(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
        ) { error in
            guard case .unreachable = error as? BusError else { return XCTFail("\(error)") }
        }
    }

    func testABusThatNeverAnswersIsGivenUpOnAtTheDeadline() throws {
        // A socket that listens and never speaks: the connection is made, the authentication never answered.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-mute-\(getpid()).sock").path
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer {
            close(fd)
            unlink(path)
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(listen(fd, 4), 0)
        XCTAssertThrowsError(
            try BusConnection.session(
                environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=" + path], timeout: .milliseconds(300))
        ) { error in
            XCTAssertEqual(
                error as? BusError,
                .unreachable(address: "unix:path=" + path, reason: "the bus did not answer within 300 ms"))
            XCTAssertEqual((error as? BusError)?.exitStatus, .internal)
        }
    }

    func testABusThatAuthenticatesButNeverSaysHelloIsGivenUpOnAtTheDeadline() throws {
        // The SASL handshake answered, then nothing: GDBus's own Hello would wait 25 s.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-nohello-\(getpid()).sock").path
        unlink(path)
        defer { unlink(path) }
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4); print("ready", flush=True)
            held = []
            while True:
                c, _ = s.accept(); held.append(c); buf = b""
                while b"BEGIN" not in buf:
                    data = c.recv(4096)
                    if not data: break
                    buf += data
                    while b"\\r\\n" in buf:
                        line, buf = buf.split(b"\\r\\n", 1)
                        line = line.lstrip(b"\\0")
                        if line == b"AUTH": c.sendall(b"REJECTED EXTERNAL\\r\\n")
                        elif line.startswith(b"AUTH"): c.sendall(b"OK 0123456789abcdef0123456789abcdef\\r\\n")
                        elif line.startswith(b"NEGOTIATE_UNIX_FD"): c.sendall(b"AGREE_UNIX_FD\\r\\n")
                        elif line.startswith(b"BEGIN"): buf = b"BEGIN"; break
            """
        let fake = try Subprocess.spawn(["/usr/bin/python3", "-c", script, path], stderr: .null)
        defer { _ = fake.kill() }
        let ready = fake.read(until: .now + .seconds(10)) { String(decoding: $0, as: UTF8.self).contains("ready") }
        XCTAssertTrue(String(decoding: ready.stdout, as: UTF8.self).contains("ready"))
        XCTAssertThrowsError(
            try BusConnection.session(
                environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=" + path], timeout: .milliseconds(300))
        ) { error in
            XCTAssertEqual(
                error as? BusError,
                .unreachable(address: "unix:path=" + path, reason: "the bus did not answer within 300 ms"))
        }
    }

    func testConnectionsLeaveNoDescriptorBehind() throws {
        let bus = try TestSessionBus()
        func descriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0 }
        // Warm: GDBus's worker thread and its own descriptors stay for the process's life.
        for _ in 0..<3 { _ = try BusConnection.session(environment: bus.environment).names() }
        let before = descriptors()
        for i in 0..<40 {
            let connection =
                i % 2 == 0
                ? try BusConnection.session(environment: bus.environment)
                : try BusConnection.monitor(rules: [], environment: bus.environment)
            XCTAssertTrue(connection.uniqueName.hasPrefix(":1."))
        }
        XCTAssertLessThanOrEqual(descriptors(), before + 2, "40 connections opened and closed")
    }

    func testAServiceThatNeverAnswersTimesOut() throws {
        let bus = try TestSessionBus()
        // A name owned by a process that is then stopped, so the call waits in its queue unanswered.
        let owner = try bus.start(
            [
                "/usr/bin/python3", "-c",
                "from gi.repository import Gio; import time; c = Gio.bus_get_sync(Gio.BusType.SESSION); "
                    + "Gio.bus_own_name_on_connection(c, 'org.example.Silent', 0, None, None); time.sleep(600)",
            ], log: "silent")
        let caller = try BusConnection.session(environment: bus.environment)
        XCTAssertTrue(poll(within: .seconds(10)) { (try? caller.hasOwner("org.example.Silent")) == true })
        kill(owner.pid, SIGSTOP)
        defer { kill(owner.pid, SIGCONT) }
        // The signal is queued at once but takes effect when the kernel next schedules it.
        XCTAssertTrue(poll(within: .seconds(5)) { Subprocess.processState(owner.pid) == "T" })
        let silent = BusService(name: "org.example.Silent", what: "silent service", hint: "")
        XCTAssertThrowsError(
            try caller.call(
                silent, path: "/", interface: "org.example.Silent", method: "Hello", timeout: .milliseconds(200))
        ) { error in
            guard case .timedOut(_, 200) = error as? BusError else { return XCTFail("\(error)") }
            XCTAssertEqual((error as? BusError)?.exitStatus, .notFound)
        }
    }

    func testSignalsSubscribedToArriveAndAMonitorSeesMethodCalls() throws {
        let bus = try TestSessionBus()
        let listener = try BusConnection.session(environment: bus.environment)
        try listener.subscribe("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged'")
        let monitor = try BusConnection.monitor(
            rules: ["type='method_call',interface='org.freedesktop.DBus',member='GetNameOwner'"],
            environment: bus.environment)
        let other = try BusConnection.session(environment: bus.environment)
        _ = try other.call(
            dbus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", method: "GetNameOwner",
            [.string("org.freedesktop.DBus")])

        var joined: BusMessage?
        while joined == nil, let message = try listener.next(timeout: .seconds(5)) {
            if message.member == "NameOwnerChanged", message.body.first?.string == other.uniqueName {
                joined = message
            }
        }
        XCTAssertEqual(joined?.body.count, 3)
        let seen = try monitor.next(timeout: .seconds(5))
        XCTAssertEqual(seen?.type, "method_call")
        XCTAssertEqual(seen?.member, "GetNameOwner")
        XCTAssertEqual(seen?.sender, other.uniqueName)
        XCTAssertEqual(seen?.body.first?.string, "org.freedesktop.DBus")
    }
}
