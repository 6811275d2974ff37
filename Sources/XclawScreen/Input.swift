import CX11
import CXTest
import Foundation
import Synchronization

/// A mouse button.
public enum MouseButton: String, Sendable, CaseIterable, Codable {
    case left, middle, right
    /// The X button number.
    public var number: UInt32 {
        switch self {
        case .left: 1
        case .middle: 2
        case .right: 3
        }
    }
}

/// A scroll direction; X sends scrolling as presses of buttons 4–7.
public enum ScrollDirection: String, Sendable, CaseIterable, Codable {
    case up, down, left, right
    /// The X button number.
    public var button: UInt32 {
        switch self {
        case .up: 4
        case .down: 5
        case .left: 6
        case .right: 7
        }
    }
}

/// Synthetic mouse and keyboard input through XTest, in process: no helper program, no sleeps.
/// Every point is checked against the screen first; modifiers are released even when an action fails.
public final class InputController: Sendable {
    /// The connection input goes through.
    public let connection: DisplayConnection
    /// The screen size last seen: points inside it need no round trip to the server.
    private let cachedScreen: Mutex<Size>
    /// The keyboard, made on first use.
    private let madeKeyboard = Mutex<Keyboard?>(nil)

    /// The most intermediate points of a drag: more is no smoother, and an absurd count would never end.
    public static let maximumSteps = 10_000
    /// The longest drag: an hour is already far past any real gesture.
    public static let maximumDuration: Duration = .seconds(3600)
    /// The most notches one scroll sends.
    public static let maximumScroll = 1_000

    /// Checks for XTEST; the keymap is read on first use of `keyboard` (a click does not need it).
    public init(connection: DisplayConnection) throws {
        self.connection = connection
        try connection.requireXTest()
        cachedScreen = Mutex(try connection.screenSize())
    }

    /// Keys and typing; made on first use.
    public var keyboard: Keyboard {
        get throws {
            try madeKeyboard.withLock { made in
                if let made { return made }
                let keyboard = try Keyboard(connection: connection)
                made = keyboard
                return keyboard
            }
        }
    }

    /// Throws `outOfBounds` unless the point is on the screen (asks the server again before refusing, in case
    /// the screen grew).
    public func checkOnScreen(_ p: Point) throws {
        if Rect(size: cachedScreen.withLock { $0 }).contains(p) { return }
        let screen = try connection.screenSize()
        cachedScreen.withLock { $0 = screen }
        guard Rect(size: screen).contains(p) else {
            throw ScreenError.outOfBounds(x: p.x, y: p.y, width: screen.width, height: screen.height)
        }
    }

    /// Where the pointer is (`XQueryPointer`).
    public func cursorPosition() throws -> Point {
        try connection.trapped { display in
            var rootReturn: Window = 0, child: Window = 0
            var rx: Int32 = 0, ry: Int32 = 0, wx: Int32 = 0, wy: Int32 = 0
            var mask: UInt32 = 0
            XQueryPointer(display, connection.root, &rootReturn, &child, &rx, &ry, &wx, &wy, &mask)
            return Point(x: Int(rx), y: Int(ry))
        }
    }

    /// Moves the pointer.
    public func move(to p: Point) throws {
        try checkOnScreen(p)
        try connection.checkAlive()
        connection.fakeMotion(x: p.x, y: p.y)
        connection.flush()
        try connection.checkAlive()
    }

    /// Clicks `count` times at `point` (nil: where the pointer is), holding `modifiers` (keysyms, e.g. from
    /// `KeyCombo.parse("ctrl+shift")`) meanwhile. Back to back, 2 and 3 are a double and a triple click; `interval`
    /// spaces the clicks (then up to `maximumClicks`, separate clicks to the app) and `hold` keeps each press down.
    public func click(
        at point: Point?, button: MouseButton = .left, count: Int = 1, modifiers: [KeySym] = [],
        interval: Duration = .zero, hold: Duration = .zero, interrupted: () -> Bool = { false }
    ) throws {
        let most = interval > .zero ? Self.maximumClicks : 3
        guard (1...most).contains(count) else {
            throw ScreenError.invalidArgument("click count must be 1 to \(most), not \(count)")
        }
        guard interval >= .zero, interval <= .seconds(60), hold >= .zero, hold <= .seconds(60) else {
            throw ScreenError.invalidArgument("click interval and hold must be 0 to 60 s")
        }
        // A held press is covered while it lasts: if this process is killed mid-hold, its guard releases it.
        let covered =
            hold > .zero
            ? InputGuard.cover(
                display: connection.name, keys: (try? keyboard.modifierKeycodes(modifiers)) ?? [],
                buttons: [button.number]) : nil
        defer { InputGuard.uncover(covered) }
        try withModifiers(modifiers, at: point) {
            for index in 0..<count where !interrupted() {
                if index > 0, interval > .zero { try pause(interval, interrupted: interrupted) }
                connection.fakeButton(button.number, down: true)
                defer { connection.fakeButton(button.number, down: false) }
                if hold > .zero { try pause(hold, interrupted: interrupted) }
            }
        }
        report("click", at: point, detail: button.rawValue + (count > 1 ? " ×\(count)" : ""))
    }

    /// Tells a listening surface what was sent (`InputObserver`); a click without a point is where the pointer is.
    private func report(_ action: String, at point: Point?, detail: String?) {
        guard InputObserver.isListened else { return }
        let place = point ?? (try? cursorPosition())
        InputObserver.report { InputEvent(display: connection.name, action: action, point: place, detail: detail) }
    }

    /// The most clicks one spaced `click` sends.
    public static let maximumClicks = 100

    /// Sends what is buffered, then waits: the events before a pause must reach the app before it. Polled every
    /// 10 ms as `Keyboard.hold` is, so an interrupt or a server that dies ends a held button at once (a hold may be
    /// 60 s).
    private func pause(_ duration: Duration, interrupted: () -> Bool) throws {
        connection.flush()
        try connection.checkAlive()
        let deadline = ContinuousClock.now + duration
        while !interrupted() {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return }
            Thread.sleep(forTimeInterval: min(0.01, left.seconds))
            try connection.poll()
        }
    }

    /// Moves the pointer by an offset from where it is.
    @discardableResult
    public func move(by offset: Point) throws -> Point {
        let now = try cursorPosition()
        let target = Point(x: now.x + offset.x, y: now.y + offset.y)
        try move(to: target)
        return target
    }

    /// Presses a button and keeps it down (`mouse down`).
    public func buttonDown(_ button: MouseButton = .left, at point: Point? = nil) throws {
        try withModifiers([], at: point) { connection.fakeButton(button.number, down: true) }
        report("button-down", at: point, detail: button.rawValue)
    }

    /// Releases a button (`mouse up`).
    public func buttonUp(_ button: MouseButton = .left, at point: Point? = nil) throws {
        try withModifiers([], at: point) { connection.fakeButton(button.number, down: false) }
        report("button-up", at: point, detail: button.rawValue)
    }

    /// Drags from one point to another with the button held, passing through `steps` intermediate points
    /// spread over `duration` (toolkits need motion between press and release to start a drag). When
    /// `interrupted` turns true the button is released where the pointer is.
    public func drag(
        from start: Point, to end: Point, button: MouseButton = .left, steps: Int = 16,
        duration: Duration = .zero, modifiers: [KeySym] = [],
        interrupted: () -> Bool = { false }
    ) throws {
        try drag(
            path: [start, end], button: button, steps: steps, duration: duration, modifiers: modifiers,
            interrupted: interrupted)
    }

    /// Drags through waypoints: pressed at the first, `steps` intermediate points on each leg, released at the
    /// last; `duration` is shared by the legs in proportion to their length.
    public func drag(
        path: [Point], button: MouseButton = .left, steps: Int = 16, duration: Duration = .zero,
        modifiers: [KeySym] = [], interrupted: () -> Bool = { false }
    ) throws {
        guard path.count >= 2, path.count <= Self.maximumWaypoints else {
            throw ScreenError.invalidArgument(
                "a drag path needs 2 to \(Self.maximumWaypoints) points, not \(path.count)")
        }
        for point in path { try checkOnScreen(point) }
        guard steps <= Self.maximumSteps else {
            throw ScreenError.invalidArgument("drag steps must be 1 to \(Self.maximumSteps), not \(steps)")
        }
        guard duration >= .zero, duration <= Self.maximumDuration else {
            throw ScreenError.invalidArgument("drag duration must be 0 to \(Self.maximumDuration.seconds) s")
        }
        let steps = max(1, steps)
        // Typed out: as one inferred closure this took the type checker 11 s (of a 6-minute cold build).
        let legs: [(start: Point, end: Point, length: Double)] = zip(path, path.dropFirst()).map {
            (a: Point, b: Point) -> (start: Point, end: Point, length: Double) in
            let manhattan: Int = abs(b.x - a.x) + abs(b.y - a.y)
            return (a, b, max(1.0, Double(manhattan)))
        }
        let total: Double = legs.reduce(0.0) { $0 + $1.length }
        try withModifiers(modifiers, at: path[0]) {
            connection.fakeButton(button.number, down: true)
            defer { connection.fakeButton(button.number, down: false) }
            for (start, end, length) in legs where !interrupted() {
                let pause = duration.seconds * length / total / Double(steps)
                for i in 1...steps where !interrupted() {
                    let x = start.x + (end.x - start.x) * i / steps, y = start.y + (end.y - start.y) * i / steps
                    connection.fakeMotion(x: x, y: y)
                    if pause > 0 { try self.pause(.nanoseconds(Int64(pause * 1e9)), interrupted: interrupted) }
                }
            }
        }
        if let last = path.last {
            report("drag", at: last, detail: "from \(path[0].x),\(path[0].y)")
        }
    }

    /// The most waypoints one drag takes.
    public static let maximumWaypoints = 1_000

    /// Scrolls `amount` notches at `point` (nil: where the pointer is), optionally holding modifiers
    /// (`ctrl` + scroll zooms in many apps).
    public func scroll(
        _ direction: ScrollDirection, amount: Int = 1, at point: Point? = nil,
        modifiers: [KeySym] = []
    ) throws {
        guard (1...Self.maximumScroll).contains(amount) else {
            throw ScreenError.invalidArgument("scroll amount must be 1 to \(Self.maximumScroll), not \(amount)")
        }
        try withModifiers(modifiers, at: point) {
            for _ in 0..<amount {
                connection.fakeButton(direction.button, down: true)
                connection.fakeButton(direction.button, down: false)
            }
        }
        report("scroll", at: point, detail: "\(direction) \(amount)")
    }

    /// Waits until the server has handled everything sent (`XSync`).
    public func sync() throws { try connection.sync() }

    /// Moves to `point`, presses `modifiers`, runs `body`, releases the modifiers in reverse order (always), flushes.
    private func withModifiers(_ modifiers: [KeySym], at point: Point?, _ body: () throws -> Void) throws {
        if let point { try checkOnScreen(point) }
        try connection.checkAlive()
        let codes = modifiers.isEmpty ? [] : try keyboard.modifierKeycodes(modifiers)
        if let point { connection.fakeMotion(x: point.x, y: point.y) }
        for code in codes { connection.fakeKey(code, down: true) }
        defer {
            for code in codes.reversed() { connection.fakeKey(code, down: false) }
            connection.flush()
        }
        try body()
        connection.flush()
        try connection.checkAlive()
    }
}
