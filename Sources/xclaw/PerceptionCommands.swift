import ArgumentParser
import Foundation
import XclawPerception
import XclawScreen

/// Where a perception command looks: `--region` or `--window`, else the whole screen.
struct AreaOptions: ParsableArguments {
    @Option(help: "Region X,Y,W,H in screen pixels.") var region: String?
    @Option(help: "Window id (0x…) or title substring.") var window: String?

    func validate() throws {
        if region != nil && window != nil { throw ValidationError("give --region or --window, not both") }
        try checkParses(region) { try Rect(parsing: $0) }
    }

    /// The area on `perceiver`'s screen.
    func area(_ perceiver: Perceiver) throws -> Rect {
        try perceiver.area(region: region.map(Rect.init(parsing:)), window: window)
    }
}

/// Rejects a malformed option value as a usage error (exit 2) with the parser's message; ArgumentParser would
/// otherwise report an error thrown from `validate()` as an internal failure.
func checkParses<T>(_ value: String?, _ parse: (String) throws -> T) throws {
    guard let value else { return }
    do { _ = try parse(value) } catch { throw ValidationError("\(error)") }
}

/// Opens perception for a CLI call with the shared on-disk OCR cache, runs `body`, and saves the cache after.
func withPerceiver<T>(_ target: DisplayOptions, noCache: Bool = false, _ body: (Perceiver) throws -> T) throws -> T {
    let cache = noCache ? OCRCache() : OCRCache.load(from: Perceiver.cacheFile)
    let perceiver = try Perceiver(connection: target.connect(), cache: cache)
    let result = try body(perceiver)
    if !noCache { try? cache.save(to: Perceiver.cacheFile) }
    return result
}

/// `xclaw ocr`: the text on screen, in reading order, or as JSON with boxes.
struct Ocr: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read the text on the screen, a region or a window (tesseract, in-process).",
        discussion: """
            Prints one line of output per visual row. With --json: lines and words with boxes in screen pixels and \
            confidence (0-100). Results are cached by content in the state directory, so unchanged text is not \
            read twice.
            """)
    @OptionGroup var target: DisplayOptions
    @OptionGroup var area: AreaOptions
    @Flag(help: "Print JSON: region, lines with words, boxes and confidence.") var json = false
    @Flag(help: "Ignore and do not update the OCR cache.") var noCache = false

    func run() throws {
        let reading = try withPerceiver(target, noCache: noCache) { try $0.read(area.area($0)) }
        try emit(reading, json: json) { reading.text }
    }
}

extension Role: ExpressibleByArgument {}

/// Takes a snapshot with refs carried over from this display's previous one, and saves the refs for the next call.
func takeSnapshot(_ perceiver: Perceiver, area: Rect?) throws -> Snapshot {
    let refs = RefStore.load(display: perceiver.connection.name, server: try perceiver.windows.serverToken())
    let snapshot = try Snapshotter(perceiver: perceiver).snapshot(area: area, refs: refs)
    try? refs.save(display: perceiver.connection.name)
    return snapshot
}

/// `xclaw snapshot`: what is on screen as elements with stable refs.
struct SnapshotCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "List what is on screen: windows, text and controls, each with a ref that stays stable.",
        discussion: """
            One element per line: ref, role (window, button, field, checkbox, menuitem, text), "label", @centre x,y, size, \
            and the window it is in. A leading + marks elements that are new or moved since the previous snapshot \
            of this display. Refs can be passed to `xclaw tap`.
            """)
    @OptionGroup var target: DisplayOptions
    @OptionGroup var area: AreaOptions
    @Flag(help: "Only windows and controls (buttons, fields, checkboxes, menu items).") var interactive = false
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let snapshot = try withPerceiver(target) { p in try takeSnapshot(p, area: area.area(p)) }
        var shown = snapshot
        if interactive { shown.elements = snapshot.elements.filter { $0.role == .window || $0.role.isInteractive } }
        try emit(shown, json: json) { snapshot.render(interactiveOnly: interactive) }
    }
}

/// Options shared by `find` and `tap` for choosing among matches.
struct SelectionOptions: ParsableArguments {
    @Option(help: "Take the Nth of equally good matches, in reading order (1-based).") var nth: Int?
    @Option(help: "Prefer the match nearest to this label.") var near: String?
    @Option(help: "Only elements of this role: button, field, checkbox, menuitem, text.") var role: Role?

    func validate() throws {
        if let nth, nth < 1 { throw ValidationError("--nth counts from 1") }
        if role == .window { throw ValidationError("--role window is not matchable; use --window to scope") }
    }

    var selection: Selection { Selection(nth: nth, near: near, role: role) }
}

/// `xclaw find`: where a label is on screen.
struct Find: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find a label on screen: ranked candidates with boxes and scores.",
        discussion: """
            Matches a word or a phrase of one line: exact, case-insensitive, then fuzzy (OCR look-alikes l/1/I, \
            O/0, rn/m). Prints the candidates best first; exits 1 and prints the closest labels when nothing matches.
            """)
    @OptionGroup var target: DisplayOptions
    @Argument(help: "The label to look for.") var label: String
    @Option(help: "Window id (0x…) or title substring to search in.") var window: String?
    @OptionGroup var choose: SelectionOptions
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let matches = try withPerceiver(target) { p -> [Match] in
            let snapshot = try takeSnapshot(p, area: p.area(window: window))
            var found = Finder.find(label, in: snapshot, role: choose.role)
            if choose.nth != nil || choose.near != nil { found = [try choose.selection.resolve(label, in: snapshot)] }
            guard !found.isEmpty else {
                throw PerceptionError.notFound(label: label, closest: Finder.closest(label, in: snapshot))
            }
            return found
        }
        try emit(matches, json: json) { matches.map(\.summary).joined(separator: "\n") }
    }
}

/// `xclaw tap`: click an element by label or ref.
struct Tap: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Click the element a label or ref names.",
        discussion: """
            Clicks the centre of the best match. When several match equally and nothing tells them apart, refuses \
            (exit 1) and lists them: a wrong click is worse than none. A ref (e12) comes from `xclaw snapshot` and \
            must still be on screen.
            """)
    @OptionGroup var target: DisplayOptions
    @Argument(help: "A label, or a ref such as e12.") var label: String
    @Option(help: "Window id (0x…) or title substring to search in.") var window: String?
    @OptionGroup var choose: SelectionOptions
    @Flag(help: "Double-click.") var double = false
    @Option(help: "left, middle or right.") var button: MouseButton = .left
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let match = try withPerceiver(target) { p -> Match in
            let snapshot = try takeSnapshot(p, area: p.area(window: window))
            let match = try choose.selection.resolve(label, in: snapshot)
            try InputController(connection: p.connection).click(at: match.point, button: button, count: double ? 2 : 1)
            return match
        }
        try emit(match, json: json) { "tapped " + match.summary }
    }
}

/// `xclaw watch`: wait for text to appear or vanish, a region to change, a pixel colour, or stability.
struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until text appears or vanishes, a region changes, a pixel has a colour, or the screen is still.",
        discussion: """
            Polls by comparing frames; OCR runs only when pixels changed. Exits 0 when the condition holds, 1 on \
            timeout with what was last observed.
            """)
    @OptionGroup var target: DisplayOptions
    @Option(help: "Wait for this text.") var text: String?
    @Flag(help: "With --text: wait for it to vanish instead.") var gone = false
    @Option(help: "Wait for this region X,Y,W,H to change.") var change: String?
    @Option(help: "Wait until nothing changed for MS milliseconds.") var stable: Int?
    @Option(help: "Wait for pixel X,Y …") var pixel: String?
    @Option(help: "… to have this colour (#rrggbb).") var color: String?
    @Option(help: "Only look at this region X,Y,W,H (text and stable conditions).") var region: String?
    @Option(help: "Window id (0x…) or title substring to look at.") var window: String?
    @Option(help: "Give up after this many seconds.") var timeout: Double = 10
    @Option(help: "Milliseconds between polls.") var interval: Int = 50
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        let count = [text != nil, change != nil, stable != nil, pixel != nil].filter { $0 }.count
        guard count == 1 else { throw ValidationError("give exactly one of --text, --change, --stable, --pixel") }
        if gone && text == nil { throw ValidationError("--gone goes with --text") }
        if (pixel == nil) != (color == nil) { throw ValidationError("--pixel and --color go together") }
        if region != nil && window != nil { throw ValidationError("give --region or --window, not both") }
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be in (0, 86400] seconds") }
        guard (1...60_000).contains(interval) else { throw ValidationError("--interval must be 1…60000 ms") }
        if let stable, stable < 1 { throw ValidationError("--stable must be at least 1 ms") }
        try checkParses(change) { try Rect(parsing: $0) }
        try checkParses(region) { try Rect(parsing: $0) }
        try checkParses(pixel) { try Point(parsing: $0) }
        try checkParses(color) { try RGB(hex: $0) }
    }

    func run() throws {
        let result = try withPerceiver(target) { p -> WatchResult in
            let condition: WatchCondition
            let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
            // A watched window may not exist yet (the app is starting): wait for it within the same timeout.
            var area: Rect
            while true {
                do {
                    area = try p.area(region: region.map(Rect.init(parsing:)), window: window)
                    break
                } catch ScreenError.windowNotFound(let name) {
                    guard ContinuousClock.now < deadline else {
                        throw PerceptionError.timedOut(condition: "window \"\(name)\"", lastObserved: "no such window")
                    }
                    Thread.sleep(forTimeInterval: Double(interval) / 1000)
                }
            }
            if let text { condition = gone ? .textGone(text) : .textAppears(text) }
            else if let change { condition = .change; area = try p.area(region: Rect(parsing: change)) }
            else if let stable { condition = .stable(.milliseconds(stable)) }
            else if let pixel, let color {
                let point = try Point(parsing: pixel)
                guard try p.connection.screenRect().contains(point) else {
                    throw PerceptionError.invalidArgument("pixel \(pixel) is outside the screen")
                }
                condition = .pixel(point, try RGB(hex: color))
            } else { throw ValidationError("nothing to watch") }
            return try Watcher(perceiver: p, interval: .milliseconds(interval))
                .wait(for: condition, area: area, timeout: max(.zero, deadline - ContinuousClock.now))
        }
        try emit(result, json: json) {
            "\(result.condition): after \(Int(result.elapsedMs)) ms" + (result.match.map { " at " + $0.summary } ?? "")
        }
    }
}

/// `xclaw wait-stable`: settle detection, instead of a fixed sleep after an action.
struct WaitStable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait-stable",
        abstract: "Wait until the screen (or a region) stops changing.",
        discussion: "Exits 0 once nothing changed for --ms milliseconds; 1 if it is still changing at --timeout.")
    @OptionGroup var target: DisplayOptions
    @Option(help: "How long the screen must stay unchanged, in milliseconds.") var ms: Int = 300
    @Option(help: "Give up after this many seconds.") var timeout: Double = 5
    @Option(help: "Only watch this region X,Y,W,H.") var region: String?
    @Option(help: "Milliseconds between polls.") var interval: Int = 20
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        guard ms >= 1 else { throw ValidationError("--ms must be at least 1") }
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be in (0, 86400] seconds") }
        guard (1...60_000).contains(interval) else { throw ValidationError("--interval must be 1…60000 ms") }
        try checkParses(region) { try Rect(parsing: $0) }
    }

    func run() throws {
        let result = try withPerceiver(target, noCache: true) { p in
            try Watcher(perceiver: p, interval: .milliseconds(interval))
                .waitUntilStable(area: p.area(region: region.map(Rect.init(parsing:))), quiet: .milliseconds(ms),
                                 timeout: .milliseconds(Int(timeout * 1000)))
        }
        try emit(result, json: json) { "stable after \(Int(result.elapsedMs)) ms" }
    }
}
