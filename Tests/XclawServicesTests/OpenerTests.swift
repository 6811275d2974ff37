import Foundation
import XCTest
import XclawBase
import XclawScreen
import XclawTesting
import XclawTimeTesting

@testable import XclawServices

/// Opening URIs and files with the default handler of the test's own `mimeapps.list` (an application whose Exec
/// records its arguments), through xdg-open with no desktop environment (its generic path) on a real display. No
/// desktop portal is installed here: the portal route is checked against a stand-in that speaks the portal's
/// documented protocol (OpenURI returns the request object named by the handle token; `Response` is emitted on it)
/// and hands the URI to the default handler through GIO as the portal does; the real xdg-desktop-portal is not.
final class OpenerTests: XCTestCase {
    private var home: TestDesktopHome!

    override func setUpWithError() throws {
        home = try TestDesktopHome()
        try home.installOpenHandler()
    }

    override func tearDown() { home?.remove() }

    private var opened: String { (try? String(contentsOf: home.openTrace, encoding: .utf8)) ?? "" }

    func testTargetsAreURIsOrFilesThatExist() throws {
        let opener = Opener(environment: home.environment, directory: home.directory.path)
        let note = home.directory.appendingPathComponent("note.txt")
        try "a note\n".write(to: note, atomically: true, encoding: .utf8)
        XCTAssertEqual(try opener.resolve("https://example.org/x?y=1").uri, "https://example.org/x?y=1")
        XCTAssertNil(try opener.resolve("mailto:someone@example.org").file)
        XCTAssertEqual(try opener.resolve("note.txt").file, note.path)
        XCTAssertEqual(try opener.resolve("note.txt").uri, note.absoluteString)
        XCTAssertEqual(try opener.resolve(note.absoluteString).file, note.path)
        for missing in ["nope.txt", "/nonexistent/file", "file:///nonexistent/file"] {
            XCTAssertThrowsError(try opener.resolve(missing), missing) { error in
                guard case .missingFile = error as? OpenError else { return XCTFail("\(error)") }
                XCTAssertEqual((error as? OpenError)?.exitStatus, .notFound)
            }
        }
        XCTAssertTrue(Opener.hasScheme("x-scheme+1.a:rest"))
        XCTAssertFalse(Opener.hasScheme("1abc:rest"))
        XCTAssertFalse(Opener.hasScheme("no scheme"))
    }

    func testAURIAndAFileReachTheirDefaultHandlerThroughXDGOpen() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        // A session bus with no portal on it: xdg-open is the route.
        let bus = try TestSessionBus()
        var environment = home.environment.merging(bus.environment.filter { $0.key == "DBUS_SESSION_BUS_ADDRESS" }) {
            $1
        }
        environment["DISPLAY"] = display.name
        let opener = Opener(environment: environment, directory: home.directory.path)
        let uri = try opener.open("xclawtest://hello/world", timeout: .seconds(20))
        XCTAssertEqual(
            uri,
            OpenResult(
                target: "xclawtest://hello/world", opened: "xclawtest://hello/world",
                via: "xdg-open", stillRunning: false))
        let note = home.directory.appendingPathComponent("note.txt")
        try "a note\n".write(to: note, atomically: true, encoding: .utf8)
        let file = try opener.open("note.txt", timeout: .seconds(20))
        XCTAssertEqual(file.opened, note.path)
        XCTAssertEqual(opened, "xclawtest://hello/world\n\(note.path)\n")

        // A scheme nobody handles: xdg-open's own failure, as exit 1.
        XCTAssertThrowsError(try opener.open("xclawnobody://x", timeout: .seconds(20))) { error in
            guard case .notOpened(_, let status, _) = error as? OpenError else { return XCTFail("\(error)") }
            XCTAssertNotEqual(status, 0)
            XCTAssertEqual((error as? OpenError)?.exitStatus, .notFound)
        }
    }

    /// A stand-in for xdg-desktop-portal's OpenURI (python3-gi): the request's path from the caller's unique name and
    /// its handle token, the reply, then `Response` (0, or 2 when GIO finds no handler) addressed to the caller.
    static let portalStandIn = """
        import gi
        gi.require_version('Gio', '2.0')
        from gi.repository import Gio, GLib
        node = Gio.DBusNodeInfo.new_for_xml('<node><interface name="org.freedesktop.portal.OpenURI">'
            '<method name="OpenURI"><arg type="s" direction="in"/><arg type="s" direction="in"/>'
            '<arg type="a{sv}" direction="in"/><arg type="o" direction="out"/></method></interface></node>')
        def call(conn, sender, path, iface, method, params, invocation):
            parent, uri, options = params.unpack()
            handle = '/org/freedesktop/portal/desktop/request/%s/%s' % (
                sender[1:].replace('.', '_'), options.get('handle_token', 't'))
            invocation.return_value(GLib.Variant('(o)', (handle,)))
            try:
                response = 0 if Gio.AppInfo.launch_default_for_uri(uri, None) else 2
            except GLib.Error:
                response = 2
            conn.emit_signal(sender, handle, 'org.freedesktop.portal.Request', 'Response',
                             GLib.Variant('(ua{sv})', (response, {})))
        conn = Gio.bus_get_sync(Gio.BusType.SESSION)
        conn.register_object('/org/freedesktop/portal/desktop', node.interfaces[0], call)
        Gio.bus_own_name_on_connection(conn, 'org.freedesktop.portal.Desktop', 0, None, None)
        GLib.MainLoop().run()
        """

    func testAURIGoesThroughThePortalWhenOneIsOnTheBusAndAFileStillThroughXDGOpen() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let bus = try TestSessionBus()
        var environment = home.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        environment["DISPLAY"] = display.name
        try bus.start(["/usr/bin/python3", "-c", Self.portalStandIn], log: "portal", extra: environment)
        let connection = try BusConnection.session(environment: environment)
        eventually("the portal on the bus") { (try? connection.hasOwner(Opener.portal.name)) == true }
        let opener = Opener(environment: environment, directory: home.directory.path)

        let uri = try opener.open("xclawtest://via-portal", timeout: .seconds(20))
        XCTAssertEqual(uri.via, "portal")
        eventually("the handler ran") { self.opened == "xclawtest://via-portal\n" }
        XCTAssertThrowsError(try opener.open("xclawnobody://x", timeout: .seconds(20))) { error in
            XCTAssertEqual(error as? OpenError, .portalRefused("xclawnobody://x", response: 2))
        }
        // A file is not the portal's (OpenFile takes a descriptor): xdg-open opens it.
        let note = home.directory.appendingPathComponent("note.txt")
        try "a note\n".write(to: note, atomically: true, encoding: .utf8)
        XCTAssertEqual(try opener.open(note.path, timeout: .seconds(20)).via, "xdg-open")
        XCTAssertEqual(opened, "xclawtest://via-portal\n\(note.path)\n", bus.log("portal"))
    }
}
