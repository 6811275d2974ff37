import XCTest
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// The same under a real EWMH window manager (openbox): clients inside frames, `_NET_CLIENT_LIST_STACKING`,
/// activation through `_NET_ACTIVE_WINDOW`.
final class WindowManagerTests: XCTestCase {
    func testListAndActivateUnderOpenbox() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        // The clients first: their windows map at once, and the manager adopts them when it starts. (Started after
        // it, a client's map waited on the manager's own start-up, which twice took over 20 s in a full suite run.)
        let name = display.name
        let one = try Fixture(display: name, title: "managed one", frame: Rect(x: 100, y: 100, width: 200, height: 150))
        defer { one.stop() }
        let two = try Fixture(display: name, title: "managed two", frame: Rect(x: 400, y: 300, width: 200, height: 150))
        defer { two.stop() }
        let wm = Process()
        wm.executableURL = URL(fileURLWithPath: "/usr/bin/openbox")
        wm.arguments = ["--sm-disable"]
        wm.environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": display.name]) { $1 }
        wm.standardOutput = FileHandle.nullDevice
        wm.standardError = FileHandle.nullDevice
        try wm.run()
        defer { if wm.isRunning { wm.terminate(); wm.waitUntilExit() } }
        let manager = WindowManager(connection: try display.connect())
        let started = try eventually("openbox starts", within: .seconds(30), every: .milliseconds(50)) {
            try manager.hasWindowManager()
        }
        guard started else { return }
        // Wait until the manager has framed both (they appear in its client list).
        var listed: [WindowInfo] = []
        let framed = try eventually(
            "both clients listed, listed: \(listed)", within: .seconds(30), every: .milliseconds(50)
        ) {
            listed = try manager.list()
            return Set(listed.map(\.id)) == Set([one.window, two.window])
        }
        guard framed else { return }
        // Clients, not frames: our ids, titles and sizes, in root coordinates.
        let first = try XCTUnwrap(listed.first { $0.id == one.window })
        XCTAssertEqual(first.title, "managed one")
        XCTAssertEqual(first.frame.size, Size(width: 200, height: 150))
        for target in [one, two, one] {
            try manager.activate(try manager.window(id: target.window))  // returns once the manager made it active
            XCTAssertEqual(try manager.activeWindow(), target.window, "_NET_ACTIVE_WINDOW")
            XCTAssertEqual(try manager.list().first?.id, target.window, "raised to the top of the stacking order")
        }
        // A window captured through the manager's frame shows the client's pixels at the client's position.
        let window = try manager.window(id: one.window)
        let frame = try ScreenCapturer(connection: try display.connect()).capture(window: window)
        XCTAssertEqual(frame.pixel(x: 10, y: 10), RGB(r: 255, g: 255, b: 255))

        // The manager dies and leaves its root properties behind: they must not be trusted any more.
        kill(wm.processIdentifier, SIGKILL)
        wm.waitUntilExit()
        let xprop = Process()
        xprop.executableURL = URL(fileURLWithPath: "/usr/bin/xprop")
        xprop.arguments = ["-display", display.name, "-root", "_NET_CLIENT_LIST_STACKING", "_NET_SUPPORTING_WM_CHECK"]
        let out = Pipe()
        xprop.standardOutput = out
        try xprop.run()
        let props = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        xprop.waitUntilExit()
        XCTAssertTrue(props.contains("window id #"), "stale EWMH properties expected on the root: \(props)")
        let three = try Fixture(
            display: display.name, title: "after the manager", frame: Rect(x: 10, y: 10, width: 80, height: 60))
        defer { three.stop() }
        XCTAssertFalse(try manager.hasWindowManager())
        XCTAssertTrue(try manager.list().contains { $0.id == three.window })
        try manager.activate(try manager.find("after the manager"))
        XCTAssertEqual(try manager.activeWindow(), three.window)
    }
}
