import CX11
import CXTest
import CXclawShim
import Foundation
import Synchronization
import XclawBase

/// A protocol error recorded by the process-wide Xlib error handler.
struct XProtocolErrorRecord: Sendable {
    /// The serial number of the request that failed.
    var serial: UInt
    var code: Int
    var request: Int
    var resource: UInt
    var text: String
}

/// Xlib's error handlers are process-wide C function pointers that cannot capture context, so they record into
/// these tables, keyed by the `Display*` they fired for.
private let pendingProtocolErrors = Mutex<[UInt: [XProtocolErrorRecord]]>([:])
private let lostDisplays = Mutex<Set<UInt>>([])

private func displayKey(_ display: OpaquePointer?) -> UInt { UInt(bitPattern: display) }

/// How many connections are open (from `XOpenDisplay` to their close), and how many lost their server and were
/// dropped with Xlib's structure kept (`xclaw_display_drop_lost`): a long-lived process (the daemon) reports both.
private let connectionCensus = Mutex<(open: Int, dropped: Int)>((0, 0))

/// True when a loss is recorded for the connection at `address`; lets tests see that nothing outlives a close.
func lossRecorded(at address: UInt) -> Bool { lostDisplays.withLock { $0.contains(address) } }

/// Drops the loss and pending errors recorded for `display`: its address may be handed to the next connection.
private func forgetState(of display: OpaquePointer) {
    let key = displayKey(display)
    _ = lostDisplays.withLock { $0.remove(key) }
    _ = pendingProtocolErrors.withLock { $0.removeValue(forKey: key) }
}

/// Installs the handlers once per process. `XSetIOErrorHandler` alone is not enough: Xlib calls `exit(1)` after
/// it returns unless the per-display `XSetIOErrorExitHandler` (libX11 >= 1.7) is set too (see `open`).
private let installErrorHandlers: Void = {
    // libX11 >= 1.8 locks itself; older ones need this before any other call for connections shared by threads.
    _ = XInitThreads()
    _ = XSetErrorHandler { display, event in
        guard let event else { return 0 }
        var buffer = [CChar](repeating: 0, count: 160)
        XGetErrorText(display, Int32(event.pointee.error_code), &buffer, Int32(buffer.count))
        let record = XProtocolErrorRecord(
            serial: UInt(event.pointee.serial), code: Int(event.pointee.error_code),
            request: Int(event.pointee.request_code), resource: UInt(event.pointee.resourceid),
            text: String(nulTerminated: buffer))
        pendingProtocolErrors.withLock { table in
            // Bounded: errors of untrapped requests that nobody collects must not pile up.
            var list = table[displayKey(display), default: []]
            if list.count >= 32 { list.removeFirst() }
            list.append(record)
            table[displayKey(display)] = list
        }
        return 0
    }
    _ = XSetIOErrorHandler { display in
        _ = lostDisplays.withLock { $0.insert(displayKey(display)) }
        return 0
    }
}()

/// One connection to an X server: owns the Xlib `Display*` (opened with `XOpenDisplay`, closed with
/// `XCloseDisplay`) and turns Xlib's error callbacks into thrown `ScreenError`s.
///
/// When the server dies the connection is marked lost instead of the process exiting; every later call throws
/// `ScreenError.displayLost` and a long-lived caller opens a new connection (`DisplayConnection.reconnect`).
/// Safe because Xlib is initialised thread-safe (XInitThreads), error traps are serialised by `trapLock`, and the atom
/// cache is a Mutex.
public final class DisplayConnection: @unchecked Sendable {
    /// The display name as given (`:41`, `host:0.0`).
    public let name: String
    /// The Xlib handle. Never escapes the package: only the screen module and the test support's event probe use it.
    package let handle: OpaquePointer
    /// The default screen number.
    package let screenNumber: Int32
    /// The root window of the default screen.
    package let root: Window
    /// Serialises error trapping so an error lands in the call that caused it, and every request against the check
    /// that the server is alive (`request`); recursive because a trapped body makes requests too.
    private let trapLock = NSRecursiveLock()
    private let atoms = Mutex<[String: Atom]>([:])

    /// Picks the display to use: the explicit name, else `$DISPLAY`, else fails naming `xclaw display start`.
    public static func resolveName(_ explicit: String?) throws -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let env = Invocation.current.environment["DISPLAY"], !env.isEmpty { return env }
        throw ScreenError.noDisplay
    }

    /// Whether `name` is a display of this machine's X server reached through its Unix socket (`:N`, `:N.S`,
    /// `unix:N`, `unix:N.S`): the one rule for names that come from a caller (MCP, the web view), since any other
    /// name makes Xlib open a TCP connection to whatever host and port it spells.
    public static func isLocal(_ name: String) -> Bool {
        let bare = name.hasPrefix("unix:") ? String(name.dropFirst(4)) : name
        guard bare.hasPrefix(":") else { return false }
        let parts = bare.dropFirst().split(separator: ".", omittingEmptySubsequences: false)
        return (1...2).contains(parts.count)
            && parts.allSatisfy { !$0.isEmpty && $0.count <= 9 && $0.allSatisfy { ("0"..."9").contains($0) } }
    }

    /// Opens a connection (`XOpenDisplay`). `name` nil means `$DISPLAY`. `localOnly`: only a display of this machine
    /// (`isLocal`), through its Unix socket and nothing else: for `:N` without a socket Xlib would try TCP on
    /// localhost:6000+N, a port anyone may listen on.
    public init(name: String? = nil, localOnly: Bool = false) throws {
        _ = installErrorHandlers
        let resolved = try Self.resolveName(name)
        if localOnly && !Self.isLocal(resolved) { throw ScreenError.notLocal(resolved) }
        let target = localOnly && !resolved.hasPrefix("unix:") ? "unix" + resolved : resolved
        guard let display = XOpenDisplay(target) else { throw ScreenError.cannotOpen(resolved) }
        // A new connection may reuse the address of a closed one whose close recorded a loss; it is alive.
        forgetState(of: display)
        // The handler only records the loss (see `installErrorHandlers`) and returns, so the process survives.
        XSetIOErrorExitHandler(
            display,
            { display, _ in
                _ = lostDisplays.withLock { $0.insert(displayKey(display)) }
                // Xlib took the display's user lock for the `exit` it expected and released the display's mutex,
                // yet the call that met the loss unwinds as if it held that mutex and releases it again. Left so,
                // a later `XCloseDisplay` waited forever for the user lock, and another thread could enter Xlib on
                // this Display while this one still unwinds in it. Both are put back as the caller expects; this leans on libX11 1.8's `_XIOError` (Debian 12 ships 1.8.4), and ServerDeathTests and
                // DaemonCLITests' restart test would catch a libX11 that changed it.
                xclaw_display_io_error_returning(display)
            }, nil)
        connectionCensus.withLock { $0.open += 1 }
        self.name = resolved
        self.handle = display
        self.screenNumber = XDefaultScreen(display)
        self.root = XRootWindow(display, screenNumber)
    }

    /// Opens a new connection to `name`, retrying every 200 ms until `timeout`; for callers whose server restarts.
    public static func reconnect(name: String, timeout: Duration = .seconds(5)) throws -> DisplayConnection {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                return try DisplayConnection(name: name)
            } catch let error as ScreenError {
                if ContinuousClock.now >= deadline { throw error }
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
    }

    deinit {
        let handle = self.handle
        // A server that died unnoticed is asked of the socket first: its close would be Xlib's close of a lost
        // connection, which corrupted the heap (see `xclaw_display_drop_lost`).
        _ = try? poll()
        if isAlive {
            XCloseDisplay(handle)
            // A death between the check and the close records the loss in the close: forgotten after it.
            forgetState(of: handle)
            connectionCensus.withLock { $0.open -= 1 }
        } else {
            // The socket and XCB's buffers are freed; Xlib's structure (some 70 KB) stays, so its address is never
            // handed to another connection and its recorded loss can go.
            xclaw_display_drop_lost(handle)
            forgetState(of: handle)
            connectionCensus.withLock { ($0.open, $0.dropped) = ($0.open - 1, $0.dropped + 1) }
        }
    }

    /// Connections open in this process, and how many lost their server and were dropped with Xlib's structure kept
    /// (some 70 KB each, no descriptor): the daemon's status reports both.
    public static var census: (open: Int, dropped: Int) {
        let now = connectionCensus.withLock { $0 }
        return (now.open, now.dropped)
    }

    /// False once the server has gone away; the connection is then useless.
    public var isAlive: Bool { !lostDisplays.withLock { $0.contains(displayKey(handle)) } }

    /// Throws `displayLost` when the server has gone away.
    package func checkAlive() throws {
        if !isAlive { throw ScreenError.displayLost(name) }
    }

    /// Runs `body` and makes the first protocol error one of its requests caused a thrown
    /// `ScreenError.protocolError`. Errors are matched by request serial (from `XNextRequest` on), so an error of an
    /// earlier request is never blamed on `body`; `XSync` makes every answer arrive before the check.
    @discardableResult
    func trapped<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        try checkAlive()
        trapLock.lock()
        defer { trapLock.unlock() }
        let key = displayKey(handle)
        let firstSerial = XNextRequest(handle)
        let result = try body(handle)
        _ = request { XSync($0, 0) }
        try checkAlive()
        let caused: XProtocolErrorRecord? = pendingProtocolErrors.withLock { table in
            let mine = table[key, default: []].first { $0.serial >= firstSerial }
            table[key] = nil  // everything up to this sync is answered: older errors had their chance
            return mine
        }
        if let error = caused {
            throw ScreenError.protocolError(
                code: error.code, request: error.request, resource: error.resource, text: error.text)
        }
        return result
    }

    /// Waits until the server has processed every request sent so far (`XSync`).
    public func sync() throws {
        try checkAlive()
        _ = request { XSync($0, 0) }
        try checkAlive()
    }

    /// Sends buffered requests without waiting (`XFlush`); nothing once the server is gone.
    package func flush() { _ = request { XFlush($0) } }

    /// Runs `body`, which must make at most one request, only while the connection lives; false when it is gone.
    /// After a loss Xlib hands out no request buffer and XTest (and most of Xlib) writes through the null pointer it
    /// gets: a SIGSEGV where the contract is exit 3. `trapLock` keeps another thread from finding the server gone
    /// between the check and the request. (Not `XLockDisplay`: a loss inside its section left Xlib's lock held,
    /// and the `XCloseDisplay` of the dead connection then waited forever.)
    @discardableResult
    package func request(_ body: (OpaquePointer) -> Void) -> Bool {
        trapLock.lock()
        defer { trapLock.unlock() }
        guard isAlive else { return false }
        body(handle)
        return true
    }

    /// Presses or releases a key through XTest, if the server is still there.
    package func fakeKey(_ code: UInt32, down: Bool) { request { XTestFakeKeyEvent($0, code, down ? 1 : 0, 0) } }

    /// Sends a key press or release to `window` as a synthetic event (`XSendEvent`, as xdotool's `--window` does),
    /// with `state` as its modifier mask, if the server is still there. Apps may ignore such events (xterm does
    /// unless allowSendEvents is set).
    package func sendKey(_ code: UInt32, down: Bool, state: UInt32, to window: UInt) {
        request { display in
            var event = XEvent()
            event.xkey.type = down ? KeyPress : KeyRelease
            event.xkey.display = display
            event.xkey.window = Window(window)
            event.xkey.root = XDefaultRootWindow(display)
            event.xkey.subwindow = 0
            event.xkey.time = 0  // CurrentTime
            (event.xkey.x, event.xkey.y, event.xkey.x_root, event.xkey.y_root) = (1, 1, 1, 1)
            event.xkey.state = state
            event.xkey.keycode = code
            event.xkey.same_screen = 1
            _ = XSendEvent(display, Window(window), 1, down ? KeyPressMask : KeyReleaseMask, &event)
        }
    }

    /// Presses or releases a mouse button through XTest, if the server is still there.
    package func fakeButton(_ button: UInt32, down: Bool) {
        request { XTestFakeButtonEvent($0, button, down ? 1 : 0, 0) }
    }

    /// Moves the pointer through XTest, if the server is still there.
    package func fakeMotion(x: Int, y: Int) {
        request { XTestFakeMotionEvent($0, screenNumber, Int32(clamping: x), Int32(clamping: y), 0) }
    }

    /// Notices a server that died while nothing was being sent (a key held down) and throws `displayLost` then. It
    /// asks the socket, not Xlib: an `XPending` that met the loss on one thread left Xlib's lock waiting forever in
    /// the later `XCloseDisplay`.
    package func poll() throws {
        try checkAlive()
        if socketPeerClosed(XConnectionNumber(handle)) { _ = lostDisplays.withLock { $0.insert(displayKey(handle)) } }
        try checkAlive()
    }

    /// The root window's size, asked of the server (`XGetGeometry`) so RandR resizes are seen.
    public func screenSize() throws -> Size {
        try trapped { display in
            var rootReturn: Window = 0
            var x: Int32 = 0, y: Int32 = 0
            var width: UInt32 = 0, height: UInt32 = 0, border: UInt32 = 0, depth: UInt32 = 0
            XGetGeometry(display, root, &rootReturn, &x, &y, &width, &height, &border, &depth)
            return Size(width: Int(width), height: Int(height))
        }
    }

    /// The screen as a rectangle at the origin.
    public func screenRect() throws -> Rect { Rect(size: try screenSize()) }

    /// Interns an atom once and caches it (`XInternAtom`).
    package func atom(_ atomName: String) -> Atom {
        if let cached = atoms.withLock({ $0[atomName] }) { return cached }
        var value: Atom = 0  // None on a lost connection: no request is made on a dead display
        request { value = XInternAtom($0, atomName, 0) }
        if value != 0 { atoms.withLock { $0[atomName] = value } }
        return value
    }

    /// Throws `extensionMissing` unless the server offers XTEST, which all synthetic input needs.
    /// Like every round trip, only on a live connection and under `trapLock`: a keyboard made lazily after another
    /// thread had met the server's death waited forever inside this call (Xlib's reply wait on a dead display).
    func requireXTest() throws {
        var event: Int32 = 0, error: Int32 = 0, major: Int32 = 0, minor: Int32 = 0
        var present = false
        guard request({ present = XTestQueryExtension($0, &event, &error, &major, &minor) != 0 }) else {
            throw ScreenError.displayLost(name)
        }
        try checkAlive()
        guard present else { throw ScreenError.extensionMissing("XTEST") }
    }
}
