import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawScreen

extension WindowState: ExpressibleByArgument {}

/// The selection flags `windows` and every `--window` take, as `xdotool search` does; all given must hold.
struct WindowSelection: ParsableArguments {
    @Option(name: .customLong("class"), help: "WM_CLASS class name, whole and in any case (XTerm, Firefox).")
    var className: String?
    @Option(help: "WM_CLASS instance name, whole and in any case (xterm, navigator).") var instance: String?
    @Option(help: "The process id the window sets in _NET_WM_PID.") var pid: Int?
    @Option(
        name: [.customLong("regex"), .customLong("name")],
        help: "Regular expression (ICU syntax, any case) found anywhere in the title (--name, as xdotool names it).")
    var regex: String?
    @Flag(help: "Only windows that are mapped and viewable (not minimized, not withdrawn).") var visible = false

    /// The flags as a filter.
    var filter: WindowFilter {
        WindowFilter(className: className, instance: instance, pid: pid, titlePattern: regex, visibleOnly: visible)
    }

    func validate() throws {
        try requireRange(pid, 1...Int(Int32.max), "--pid", "")
        for (name, value) in [("--class", className), ("--instance", instance)] where value?.isEmpty == true {
            throw ValidationError("\(name) needs a name")
        }
        do { _ = try filter.compiledPattern() } catch { throw ValidationError("\(error)") }
    }

    /// Whether a window is named at all: by `--window` or by a flag.
    func names(_ window: String?) -> Bool { window != nil || !filter.isEmpty }

    /// The one window `window` and the flags pick.
    func resolve(_ window: String?, _ manager: WindowManager) throws -> WindowInfo {
        try manager.find(window, matching: filter)
    }
}

/// One line per window, as `windows` lists them.
func windowRow(_ w: WindowInfo) -> String {
    [
        w.hexID, "\(w.frame.width)x\(w.frame.height)+\(w.frame.x)+\(w.frame.y)",
        w.active ? "active" : (w.visible ? "visible" : (w.mapped ? "offscreen" : "hidden")),
        // Titles and classes are the apps' words: escaped, the title quoted, never a second line.
        w.className.isEmpty ? "-" : UntrustedText.escaped(w.className), w.pid.map(String.init) ?? "-",
        UntrustedText.quoted(w.title),
    ]
    .joined(separator: "\t")
}

/// `xclaw windows`.
struct Windows: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "windows",
        abstract: "List top-level windows, top-most first (--class, --pid, --regex … select as `xdotool search`).",
        discussion: """
            Exit: 0 listed; 1 a selection (--class, --instance, --pid, --regex/--name, --visible) matched no window, \
            as `xdotool search` exits, so `if xclaw windows --name Editor; then …` works (nothing on stdout; with \
            --json the error object); \
            2 bad usage; 3 display. --ids prints the ids alone, one a line, as `xdotool search` prints them; \
            --sync waits until the selection matches (1 after --timeout).

            Examples:
              xclaw windows --class XTerm --visible  # id, geometry, state, class, pid, title; top-most first
              xclaw windows --sync --name '^Editor$' --ids  # waits, then prints ids as xdotool search --sync does
            """)
    @OptionGroup var target: DisplayOptions
    @OptionGroup var select: WindowSelection
    @Flag(help: "Include unmapped windows.") var all = false
    @Flag(help: "Print only the window ids (0x…), one a line.") var ids = false
    @Flag(help: "Wait until the selection matches a window (as xdotool search --sync), at most --timeout.")
    var sync = false
    @Option(help: "With --sync: give up after this many seconds (exit 1; default 30).") var timeout: Double?
    @Flag var json = false

    func validate() throws {
        if ids && json { throw ValidationError("--ids prints plain ids: give --ids or --json, not both") }
        if sync && select.filter.isEmpty {
            throw ValidationError("--sync waits for a selection: give --name, --class, --instance or --pid")
        }
        try requireRange(timeout, 0.001...86_400, "--timeout", "seconds")
        if timeout != nil && !sync { throw ValidationError("--timeout is how long --sync waits: give it with --sync") }
    }

    func run() throws {
        let manager = WindowManager(connection: try target.connect())
        let list = {
            select.filter.isEmpty
                ? try manager.list(includeHidden: all) : try manager.list(matching: select.filter, includeHidden: all)
        }
        var windows = try list()
        if sync && windows.isEmpty {
            let described = WindowManager.describe(nil, select.filter)
            let limit = timeout ?? 30
            windows = try ProgressLine.during("a window \(described)", timeout: limit, json: json) {
                let deadline = ContinuousClock.now + .milliseconds(Int(limit * 1000))
                while ContinuousClock.now < deadline {
                    // Ctrl-C ends the wait as an interrupt (130), not as "no window" (1).
                    if Interrupt.requested { throw CancellationError() }
                    Thread.sleep(forTimeInterval: 0.02)
                    let found = try list()
                    if !found.isEmpty { return found }
                }
                return []
            }
        }
        guard !windows.isEmpty || select.filter.isEmpty else {
            throw ScreenError.windowNotFound(WindowManager.describe(nil, select.filter))
        }
        try emit(windows, json: json) { windows.map(ids ? \.hexID : windowRow).joined(separator: "\n") }
    }
}

/// `xclaw active`.
struct Active: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "active",
        abstract: "Print the active window (_NET_ACTIVE_WINDOW with a window manager, else the focused top-level).",
        discussion: """
            Examples:
              xclaw active
              xclaw active --json
            """)
    @OptionGroup var target: DisplayOptions
    @Flag var json = false

    func run() throws {
        let window = try WindowManager(connection: try target.connect()).active()
        try emit(window, json: json) { windowRow(window) }
    }
}

/// `xclaw activate`.
struct Activate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activate", abstract: "Raise and focus a window by id or title substring.",
        discussion: """
            Examples:
              xclaw activate Terminal  # the top-most window whose title contains Terminal
              xclaw activate --class Firefox
            """)
    @OptionGroup var target: DisplayOptions
    @OptionGroup var select: WindowSelection
    @Argument(help: "Window id (0x…) or title substring (optional with --class, --pid …).") var window: String?

    func validate() throws {
        if window == nil && select.filter.isEmpty {
            throw ValidationError("name a window, or select one with --class …")
        }
    }

    func run() throws {
        let manager = WindowManager(connection: try target.connect())
        let info = try select.resolve(window, manager)
        try manager.activate(info)
        writeOut(info.hexID + "\n")
    }
}

/// `xclaw monitors`.
struct Monitors: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitors", abstract: "List monitors (RandR).",
        discussion: """
            Examples:
              xclaw monitors
              xclaw monitors --json
            """)
    @OptionGroup var target: DisplayOptions
    @Flag var json = false

    func run() throws {
        let monitors = try target.connect().monitors()
        try emit(monitors, json: json) {
            monitors.map {
                "\($0.name)\t\($0.frame.width)x\($0.frame.height)+\($0.frame.x)+\($0.frame.y)\($0.primary ? "\tprimary" : "")"
            }
            .joined(separator: "\n")
        }
    }
}

/// `xclaw desktop [N]`.
struct DesktopCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "desktop",
        abstract: "Print the current virtual desktop (from 0), or switch to desktop N (needs a window manager).",
        discussion: """
            Examples:
              xclaw desktop  # the current one
              xclaw desktop 1  # switch to the second
            """)
    @OptionGroup var target: DisplayOptions
    @Argument(help: "The desktop to switch to, from 0.") var number: Int?
    @Flag var json = false

    func validate() throws { try requireRange(number, 0...1023, "desktop", "") }

    func run() throws {
        let manager = WindowManager(connection: try target.connect())
        if let number { try manager.switchDesktop(to: number) }
        let desktops = try manager.desktops()
        try emit(desktops, json: json) { "\(desktops.current)" }
    }
}

/// `xclaw window ACTION …`: control one window.
struct WindowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "window",
        abstract: "Move, resize, close, kill, minimize, maximize, raise or lower a window, or send it to a desktop.",
        discussion: """
            The window is an id (0x…), a title substring or a class name, or picked by --class, --instance, --pid, \
            --regex and --visible (then the id may be left out). With a window manager the requests are EWMH \
            client messages; with none they are made directly. Each action waits up to 2 s for its effect and \
            exits 1 if the window manager ignored it.
            Examples:
              xclaw window move Editor 100 80
              xclaw window maximize --class XTerm
            """,
        subcommands: [
            WindowMove.self, WindowResize.self, WindowClose.self, WindowKill.self, WindowMinimize.self,
            WindowSetState.Maximize.self, WindowSetState.Fullscreen.self, WindowSetState.Above.self, WindowRaise.self,
            WindowLower.self, WindowDesktop.self,
        ])
}

/// What every `window` action takes: the display, the selection flags, the window and the action's numbers.
/// Numbers may be negative (`-20`), so the operands are taken as they come and parsed here.
struct WindowOperands: ParsableArguments {
    @OptionGroup var target: DisplayOptions
    @OptionGroup var select: WindowSelection
    @Flag var json = false
    @Argument(parsing: .allUnrecognized, help: "ID|NAME (optional with selection flags), then the action's numbers.")
    var operands: [String] = []

    /// Splits the operands into the window query and `count` integers; a wrong count or a non-number is exit 2.
    func split(numbers count: Int, names: String) throws -> (window: String?, numbers: [Int]) {
        let operands = self.operands.filter { $0 != "--" }
        // Negative numbers come through as operands, and so would an unknown option: name it.
        if let unknown = operands.first(where: { $0.hasPrefix("--") }) {
            throw ValidationError("unknown option \(unknown)")
        }
        let needsWindow = select.filter.isEmpty
        let expected = count + (needsWindow ? 1 : 0)
        guard operands.count == expected || (!needsWindow && operands.count == count + 1) else {
            throw ValidationError(
                "expected \(needsWindow ? "ID|NAME" : "[ID|NAME]")\(names.isEmpty ? "" : " " + names), "
                    + "got \(operands.count) operand\(operands.count == 1 ? "" : "s")")
        }
        let window = operands.count > count ? operands[0] : nil
        let numbers = try operands.suffix(count).map { text -> Int in
            guard let value = Int(text), abs(value) <= Rect.coordinateLimit else {
                throw ValidationError("\"\(text)\" is not a number (an integer within ±\(Rect.coordinateLimit))")
            }
            return value
        }
        return (window, numbers)
    }

    /// The manager and the one window chosen.
    func window(_ query: String?) throws -> (WindowManager, WindowInfo) {
        let manager = WindowManager(connection: try target.connect())
        return (manager, try select.resolve(query, manager))
    }

    /// Prints the window: its row, or JSON.
    func report(_ window: WindowInfo) throws { try emit(window, json: json) { windowRow(window) } }
}

/// `xclaw window move ID X Y`.
struct WindowMove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "move", abstract: "Move a window's content area to X Y (xwininfo's Absolute upper-left).",
        discussion: """
            Examples:
              xclaw window move Editor 100 80
              xclaw window move --class XTerm 0 0
            """)
    @OptionGroup var options: WindowOperands

    func validate() throws { _ = try options.split(numbers: 2, names: "X Y") }

    func run() throws {
        let (query, numbers) = try options.split(numbers: 2, names: "X Y")
        let (manager, window) = try options.window(query)
        try options.report(try manager.move(window, to: Point(x: numbers[0], y: numbers[1])))
    }
}

/// `xclaw window resize ID W H`.
struct WindowResize: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resize", abstract: "Resize a window's content area to W H (as xwininfo reports it).",
        discussion: """
            Examples:
              xclaw window resize --class XTerm 800 600
              xclaw window resize Editor 1280 720 --json  # the window as it is after
            """)
    @OptionGroup var options: WindowOperands

    func validate() throws {
        let numbers = try options.split(numbers: 2, names: "W H").numbers
        try requireRange(numbers[0], 1...32767, "W", "pixels")
        try requireRange(numbers[1], 1...32767, "H", "pixels")
    }

    func run() throws {
        let (query, numbers) = try options.split(numbers: 2, names: "W H")
        let (manager, window) = try options.window(query)
        try options.report(try manager.resize(window, to: Size(width: numbers[0], height: numbers[1])))
    }
}

/// The actions that take only a window.
protocol PlainWindowAction: ParsableCommand {
    var options: WindowOperands { get }
    func act(_ manager: WindowManager, _ window: WindowInfo) throws
}

extension PlainWindowAction {
    func validate() throws { _ = try options.split(numbers: 0, names: "") }

    func run() throws {
        let (manager, window) = try options.window(try options.split(numbers: 0, names: "").window)
        try act(manager, window)
        try emit(window, json: options.json) { window.hexID }
    }
}

/// `xclaw window close ID`.
struct WindowClose: PlainWindowAction {
    static let configuration = CommandConfiguration(
        commandName: "close",
        abstract: "Ask a window to close (_NET_CLOSE_WINDOW, or WM_DELETE_WINDOW with no window manager).",
        discussion: """
            Examples:
              xclaw window close Editor  # as its close button does: the app may ask to save first
            """)
    @OptionGroup var options: WindowOperands
    func act(_ manager: WindowManager, _ window: WindowInfo) throws { try manager.close(window) }
}

/// `xclaw window kill ID`.
struct WindowKill: PlainWindowAction {
    static let configuration = CommandConfiguration(
        commandName: "kill", abstract: "End the client that owns a window (XKillClient), as `xdotool windowkill`.",
        discussion: """
            Examples:
              xclaw window kill 'Not Responding'  # when window close is ignored
            """)
    @OptionGroup var options: WindowOperands
    func act(_ manager: WindowManager, _ window: WindowInfo) throws { try manager.kill(window) }
}

/// `xclaw window minimize ID`.
struct WindowMinimize: PlainWindowAction {
    static let configuration = CommandConfiguration(
        commandName: "minimize", abstract: "Minimize (iconify) a window; `xclaw activate` brings it back.",
        discussion: """
            Examples:
              xclaw window minimize Editor  # back with: xclaw activate Editor
            """)
    @OptionGroup var options: WindowOperands
    func act(_ manager: WindowManager, _ window: WindowInfo) throws { try manager.minimize(window) }
}

/// `xclaw window raise ID`.
struct WindowRaise: PlainWindowAction {
    static let configuration = CommandConfiguration(
        commandName: "raise", abstract: "Raise a window to the top of its layer (without focusing it).",
        discussion: """
            Examples:
              xclaw window raise Editor
            """)
    @OptionGroup var options: WindowOperands
    func act(_ manager: WindowManager, _ window: WindowInfo) throws { try manager.restack(window, raise: true) }
}

/// `xclaw window lower ID`.
struct WindowLower: PlainWindowAction {
    static let configuration = CommandConfiguration(
        commandName: "lower", abstract: "Lower a window to the bottom of its layer.",
        discussion: """
            Examples:
              xclaw window lower Editor
            """)
    @OptionGroup var options: WindowOperands
    func act(_ manager: WindowManager, _ window: WindowInfo) throws { try manager.restack(window, raise: false) }
}

/// `xclaw window maximize|fullscreen|above ID [--off]`.
enum WindowSetState {
    /// The shared body: set or clear one state.
    struct Body: ParsableArguments {
        @OptionGroup var options: WindowOperands
        @Flag(help: "Clear the state instead of setting it.") var off = false

        func validate() throws { _ = try options.split(numbers: 0, names: "") }

        func run(_ state: WindowState) throws {
            let (manager, window) = try options.window(try options.split(numbers: 0, names: "").window)
            try manager.setState(state, on: !off, for: window)
            try options.report(try manager.window(id: window.id))
        }
    }

    /// `window maximize`.
    struct Maximize: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "maximize",
            abstract: "Maximize a window (_NET_WM_STATE; with no window manager it covers the screen); --off restores.",
            discussion: """
                Examples:
                  xclaw window maximize Editor
                  xclaw window maximize Editor --off  # back to its size before
                """)
        @OptionGroup var body: Body
        func run() throws { try body.run(.maximized) }
    }

    /// `window fullscreen`.
    struct Fullscreen: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "fullscreen", abstract: "Make a window fullscreen; --off restores it.",
            discussion: """
                Examples:
                  xclaw window fullscreen --class Firefox
                  xclaw window fullscreen --class Firefox --off
                """)
        @OptionGroup var body: Body
        func run() throws { try body.run(.fullscreen) }
    }

    /// `window above`.
    struct Above: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "above", abstract: "Keep a window above the others (needs a window manager); --off stops.",
            discussion: """
                Examples:
                  xclaw window above Notes  # stays on top while you work in other windows
                  xclaw window above Notes --off
                """)
        @OptionGroup var body: Body
        func run() throws { try body.run(.above) }
    }
}

/// `xclaw window desktop ID N`.
struct WindowDesktop: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "desktop", abstract: "Move a window to virtual desktop N (from 0; needs a window manager).",
        discussion: """
            Examples:
              xclaw window desktop Editor 2  # the third desktop
            """)
    @OptionGroup var options: WindowOperands

    func validate() throws {
        try requireRange(try options.split(numbers: 1, names: "N").numbers[0], 0...1023, "N", "")
    }

    func run() throws {
        let (query, numbers) = try options.split(numbers: 1, names: "N")
        let (manager, window) = try options.window(query)
        try manager.moveWindow(window, toDesktop: numbers[0])
        try options.report(try manager.window(id: window.id))
    }
}
