import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawPerception
import XclawScreen
import XclawServices

/// Where a perception command looks: `--region` or `--window`, else the whole screen.
struct AreaOptions: ParsableArguments {
    @Option(help: "Region X,Y,W,H in screen pixels.") var region: String?
    @Option(help: "Window id (0x…) or title substring.") var window: String?
    @OptionGroup var select: WindowSelection

    func validate() throws {
        if region != nil && select.names(window) { throw ValidationError("give --region or --window, not both") }
        try checkParses(region) { try Rect(parsing: $0) }
    }

    /// The area on `perceiver`'s screen.
    func area(_ perceiver: Perceiver) throws -> Rect {
        try perceiver.area(
            region: region.map(Rect.init(parsing:)), window: window, matching: select.filter)
    }
}

/// Rejects a malformed option value as a usage error (exit 2) with the parser's message; ArgumentParser would
/// otherwise report an error thrown from `validate()` as an internal failure.
func checkParses<T>(_ value: String?, _ parse: (String) throws -> T) throws {
    guard let value else { return }
    do { _ = try parse(value) } catch { throw ValidationError("\(error)") }
}

/// Opens perception for a CLI call with the shared on-disk OCR cache, runs `body`, and saves the cache after.
/// The daemon keeps its perceiver and cache warm instead, and saves the cache after replying when it grew.
func withPerceiver<T>(
    _ target: DisplayOptions, noCache: Bool = false, languages: LanguageOption? = nil, _ body: (Perceiver) throws -> T
) throws -> T {
    let perceiver =
        noCache
        ? try Perceiver(connection: target.connect(), cache: OCRCache()) : try Hosting.current.perceiver(target.display)
    // Every command that reads text sets its languages: the daemon's kept recognizer serves commands with different
    // ones. (Image and colour searches read none.)
    if languages != nil || !noCache {
        try perceiver.recognizer.use(languages?.languages() ?? OCRLanguages.configured())
    }
    if noCache { return try body(perceiver) }
    let result = try body(perceiver)
    if !Invocation.isServed { try? perceiver.recognizer.cache.save(to: Perceiver.cacheFile) }
    return result
}

/// `--lang`: the tesseract languages a command reads with.
struct LanguageOption: ParsableArguments {
    @Option(
        help: """
            OCR languages, tesseract codes joined by + (eng+deu+fra); default: XCLAW_OCR_LANG, else ocr_lang in \
            the config file, else the locale's language and eng (LANG=de_DE.UTF-8: deu+eng; eng when its data is \
            missing). Each needs its Debian package (tesseract-ocr-deu…).
            """)
    var lang: String?

    /// Rejects a malformed list before anything runs (exit 2).
    func validate() throws {
        do { _ = try languages() } catch { throw ValidationError("\(error)") }
    }

    /// The languages given, else the configured ones.
    func languages() throws -> OCRLanguages {
        try lang.map(OCRLanguages.init(parsing:)) ?? OCRLanguages.configured()
    }
}

/// `xclaw ocr`: the text on screen, in reading order, or as JSON with boxes.
struct Ocr: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ocr",
        abstract: "Read the text on the screen, a region or a window (tesseract, in-process).",
        discussion: """
            Prints one line of output per visual row. With --json: lines and words with boxes in screen pixels and \
            confidence (0-100). Results are cached by content in the state directory, so unchanged text is not \
            read twice.
            Examples:
              xclaw ocr --window Terminal
              xclaw ocr --region 0,0,960,540 --lang eng+deu --json  # words with boxes and confidence
            """)
    @OptionGroup var target: DisplayOptions
    @OptionGroup var area: AreaOptions
    @Flag(help: "Print JSON: region, lines with words, boxes and confidence.") var json = false
    @Flag(help: "Ignore and do not update the OCR cache.") var noCache = false
    @OptionGroup var rawOption: RawOption
    @OptionGroup var languages: LanguageOption

    func run() throws {
        let reading = try withPerceiver(target, noCache: noCache, languages: languages) { try $0.read(area.area($0)) }
        try emit(reading, json: json, raw: rawOption.raw) { reading.text }
    }
}

extension Role: ExpressibleByArgument {}
extension SnapshotSource: ExpressibleByArgument {}

/// Takes a snapshot with refs carried over from this display's previous one, and saves the refs for the next call.
/// What went wrong without stopping it (an unreadable accessibility tree) is printed on stderr.
func takeSnapshot(_ perceiver: Perceiver, area: Rect?, source: SnapshotSource = .auto) throws -> Snapshot {
    let refs = try Hosting.current.refs(perceiver)
    let snapshot = try Snapshotter(perceiver: perceiver).snapshot(area: area, refs: refs, source: source)
    // The daemon saves the refs it handed out once the command returns (`RequestHost.saveRefs`), before replying.
    if !Invocation.isServed { try? refs.save(display: perceiver.connection.name) }
    for warning in snapshot.warnings ?? [] { printError("warning: \(warning)") }
    return snapshot
}

/// The help text of `--source`.
let sourceHelp: ArgumentHelp = """
    Where elements come from: auto (the accessibility tree for apps that expose one, OCR for the rest), ocr, or \
    atspi (the tree only).
    """

/// `xclaw snapshot`: what is on screen as elements with stable refs.
struct SnapshotCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "List what is on screen: windows, text and controls, each with a ref that stays stable.",
        discussion: """
            One element per line: ref, role, "label", = value, @centre x,y, size, [states], and the window it is in. \
            Windows whose app exposes an accessibility tree (GTK, Qt; see `xclaw display start --accessibility`) \
            give exact roles (button, field, checkbox, radio, combobox, slider, spinbutton, tab, item, link, \
            menuitem, image, text), names, states and extents; the others are read by OCR (window, button, field, \
            checkbox, menuitem, text). A window's [atspi] or [ocr] says which; --json gives each element's source. \
            A leading + marks elements that are new or moved since the previous snapshot of this display. Refs can \
            be passed to `xclaw tap`. When the tree cannot be read, OCR stands in and a warning goes to stderr.
            Examples:
              xclaw snapshot  # e.g. e7 button "Save" @1720,62 80x32 in w3
              xclaw snapshot --interactive --window Editor --json  # only windows and controls
            """)
    @OptionGroup var target: DisplayOptions
    @OptionGroup var area: AreaOptions
    @Option(help: sourceHelp) var source: SnapshotSource = .auto
    @Flag(help: "Only windows and controls (buttons, fields, checkboxes, menu items…).") var interactive = false
    @OptionGroup var languages: LanguageOption
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let snapshot = try withPerceiver(target, languages: languages) { p in
            try takeSnapshot(p, area: area.area(p), source: source)
        }
        var shown = snapshot
        if interactive { shown.elements = snapshot.elements.filter { $0.role == .window || $0.role.isInteractive } }
        try emit(shown, json: json) { snapshot.render(interactiveOnly: interactive) }
    }
}

/// Options shared by `find` and `tap` for choosing among matches.
struct SelectionOptions: ParsableArguments {
    @Option(help: "Take the Nth of equally good matches, in reading order (1-based).") var nth: Int?
    @Option(help: "Prefer the match nearest to this label.") var near: String?
    @Option(
        help:
            "Only elements of this role: button, field, checkbox, radio, combobox, slider, spinbutton, tab, item, link, menuitem, image, text."
    )
    var role: Role?
    @Option(help: sourceHelp) var source: SnapshotSource = .auto

    func validate() throws {
        try requireRange(nth, 1...100_000, "--nth", "(it counts from 1)")
        if role == .window { throw ValidationError("--role window is not matchable; use --window to scope") }
    }

    var selection: Selection { Selection(nth: nth, near: near, role: role) }
}

/// Runs `body` on the area once, or with `timeout` (seconds) until it finds its target: `find`/`tap --timeout` wait
/// through the watcher (a window that does not exist yet is waited for too; a target is taken once its pixels
/// settled). What counts as "not yet": nothing matches, matches tie or are only guesses, the image scores too low.
func waiting<T>(
    _ p: Perceiver, timeout: Double?, for what: String, json: Bool, area: () throws -> Rect,
    _ body: (Rect) throws -> T
) throws -> T {
    guard let timeout else { return try body(try area()) }
    return try ProgressLine.during(what, timeout: timeout, json: json) {
        try stoppableWatcher(p, interval: 50).retry(
            what, timeout: .milliseconds(Int(timeout * 1000)), area: area,
            retryable: Watcher.isNotYet, attempt: body)
    }
}

/// `xclaw find`: where a label, an image or a colour is on screen.
struct Find: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find",
        abstract: "Find a label, an image (--image) or a colour (--color) on screen.",
        discussion: """
            A label matches a word or a phrase of one line: exact, case-insensitive, then fuzzy (OCR look-alikes \
            l/1/I, O/0, rn/m). Prints the candidates best first; exits 1 and prints the closest labels when nothing \
            matches.
            --image FILE looks for a PNG by normalised cross-correlation (1: the same pixels up to brightness and \
            contrast) and prints the best match: @centre, size, top-left and score. Exits 1 when nothing scores \
            --confidence (saying the best score and where), and when two places tie (unless --all or --nth). \
            --color #rrggbb prints the first pixel of that colour in reading order, X,Y #rrggbb; exits 1 if none.
            Examples:
              xclaw find 'Save as' --window Editor  # ranked candidates, best first
              xclaw find --image save.png --all  # every match of a PNG cut from the screen
            """)
    @OptionGroup var target: DisplayOptions
    @Argument(help: "The label to look for (or give --image or --color).") var label: String?
    @Option(help: "Window id (0x…) or title substring to search in.") var window: String?
    @OptionGroup var select: WindowSelection
    @Option(help: "Only search this region X,Y,W,H.") var region: String?
    @OptionGroup var image: ImageOptions
    @Flag(help: "With --image: print every match (overlapping ones suppressed), best first.") var all = false
    @Option(help: "Find the first pixel of this colour, #rrggbb (AutoHotkey's PixelSearch).") var color: String?
    @Option(help: "With --color: how far each channel may differ (0–255; default 0).") var tolerance: Int?
    @OptionGroup var choose: SelectionOptions
    @Option(help: "Wait up to this many seconds for the target (and its window) to appear; default: look once.")
    var timeout: Double?
    @OptionGroup var languages: LanguageOption
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        try requireRange(timeout, 0.001...86_400, "--timeout", "seconds")
        let targets = [label != nil, image.image != nil, color != nil].filter { $0 }.count
        guard targets == 1 else { throw ValidationError("give one of a label, --image FILE or --color #rrggbb") }
        if region != nil && select.names(window) { throw ValidationError("give --region or --window, not both") }
        try checkParses(region) { try Rect(parsing: $0) }
        try checkParses(color) { try RGB(hex: $0) }
        if tolerance != nil && color == nil { throw ValidationError("--tolerance goes with --color") }
        try requireRange(tolerance, 0...255, "--tolerance", "")
        if all && image.image == nil { throw ValidationError("--all goes with --image") }
        if all && choose.nth != nil { throw ValidationError("give --all or --nth, not both") }
        if label == nil && (choose.near != nil || choose.role != nil) {
            throw ValidationError("--near and --role go with a label")
        }
        if color != nil && choose.nth != nil { throw ValidationError("--nth does not go with --color") }
    }

    func run() throws {
        if let color {
            let rgb = try RGB(hex: color)
            let hit = try withImagePerceiver(target) { p in
                try waiting(
                    p, timeout: timeout, for: "colour \(color)", json: json,
                    area: {
                        try p.area(
                            region: region.map(Rect.init(parsing:)), window: window, matching: select.filter)
                    }
                ) { try findColor(p, area: $0, color: rgb, tolerance: tolerance ?? 0) }
            }
            return try emit(hit, json: json) { "\(hit.x),\(hit.y) \(hit.color)" }
        }
        if let template = try image.template() {
            let found = try withImagePerceiver(target) { p -> [ImageMatch] in
                try waiting(
                    p, timeout: timeout, for: "image \(template.path)", json: json,
                    area: {
                        try p.area(
                            region: region.map(Rect.init(parsing:)), window: window, matching: select.filter)
                    }
                ) { area in
                    let search = try ImageSearch(p, area: area, template: template, options: image.options)
                    return all ? try search.all() : [try search.chosen(nth: choose.nth)]
                }
            }
            return try emit(found, json: json) { found.map(\.summary).joined(separator: "\n") }
        }
        let label = self.label ?? ""
        let matches = try withPerceiver(target, languages: languages) { p -> [Match] in
            try waiting(
                p, timeout: timeout, for: "\"\(label)\" to appear", json: json,
                area: {
                    try p.area(region: region.map(Rect.init(parsing:)), window: window, matching: select.filter)
                }
            ) { area in
                let snapshot = try takeSnapshot(p, area: area, source: choose.source)
                var found = Finder.find(label, in: snapshot, role: choose.role)
                if choose.nth != nil || choose.near != nil {
                    found = [try choose.selection.resolve(label, in: snapshot, acting: false)]
                }
                guard !found.isEmpty else {
                    throw PerceptionError.notFound(label: label, closest: Finder.closest(label, in: snapshot))
                }
                return found
            }
        }
        try emit(matches, json: json) { matches.map(\.summary).joined(separator: "\n") }
    }
}

/// `xclaw tap`: click an element by label or ref, or press it through its toolkit.
struct Tap: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tap",
        abstract: "Click the element a label or ref names, or press it through its toolkit (--action).",
        discussion: """
            Clicks the centre of the best match; matches from the accessibility tree (exact role and name) win over \
            OCR's. When several match equally and nothing tells them apart, refuses (exit 1) and lists them: a \
            wrong click is worse than none. --image FILE clicks the centre of the best match of a PNG (see `xclaw \
            find --image`), refusing ties the same way. A ref (e12) comes from `xclaw snapshot` and must still be on screen. \
            --action presses an element from the accessibility tree with its toolkit's own action ("click" in GTK, \
            "Press" or "Toggle" in Qt) without moving the mouse, even when another window covers it. A covered \
            element is never clicked: the click would land on the window above.
            Examples:
              xclaw tap Save --window Editor --timeout 30  # waits for the window and the button, then clicks
              xclaw tap Repeat --nth 2  # the second of two equal matches, in reading order
            """)
    @OptionGroup var target: DisplayOptions
    @Argument(help: "A label, or a ref such as e12 (or give --image).") var label: String?
    @Option(help: "Window id (0x…) or title substring to search in.") var window: String?
    @OptionGroup var select: WindowSelection
    @Option(help: "With --image: only search this region X,Y,W,H.") var region: String?
    @OptionGroup var image: ImageOptions
    @OptionGroup var choose: SelectionOptions
    @Flag(help: "Press through the toolkit's first action instead of clicking (accessibility elements only).")
    var action = false
    @Option(
        name: .customLong("action-name"), help: "Press through this toolkit action (e.g. Toggle) instead of clicking.")
    var actionName: String?
    @Flag(help: "Double-click.") var double = false
    @Option(help: "left, middle or right.") var button: MouseButton = .left
    @Option(name: .customLong("with"), help: "Modifiers held during the click, e.g. ctrl+shift.") var modifiers: String?
    @Option(
        parsing: .unconditional,
        help: "Click this far from the match's centre, DX,DY (e.g. 120,0: the field right of a \"Name:\" label).")
    var offset: String?
    @Option(help: "Wait up to this many seconds for the target (and its window) to appear; default: look once.")
    var timeout: Double?
    @OptionGroup var languages: LanguageOption
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        try requireRange(timeout, 0.001...86_400, "--timeout", "seconds")
        guard (label != nil) != (image.image != nil) else { throw ValidationError("give a label or --image FILE") }
        if image.image != nil && (action || actionName != nil) {
            throw ValidationError("--action presses accessibility elements; an image match is clicked")
        }
        if image.image != nil && (choose.near != nil || choose.role != nil) {
            throw ValidationError("--near and --role go with a label")
        }
        if region != nil && image.image == nil { throw ValidationError("--region goes with --image (use --window)") }
        if region != nil && select.names(window) { throw ValidationError("give --region or --window, not both") }
        try checkParses(region) { try Rect(parsing: $0) }
        if (action || actionName != nil) && (double || button != .left || offset != nil) {
            throw ValidationError(
                "--action presses through the toolkit; --double, --button and --offset are for clicks")
        }
        try checkParses(offset) { try Point(parsing: $0) }
    }

    func run() throws {
        if let template = try image.template() { return try tapImage(template) }
        let label = self.label ?? ""
        var performed: String?
        var clicked: Point?
        let match = try withPerceiver(target, languages: languages) { p -> Match in
            let match = try waiting(
                p, timeout: timeout, for: "\"\(label)\" to appear", json: json,
                area: { try p.area(window: window, matching: select.filter) }
            ) { area in
                try choose.selection.resolve(label, in: takeSnapshot(p, area: area, source: choose.source))
            }
            if action || actionName != nil {
                guard let node = match.node else {
                    throw PerceptionError.invalidArgument(
                        "\(match.ref) \"\(match.text)\" was read by OCR, so it has no toolkit action; tap it without --action"
                    )
                }
                performed = try p.press(node, action: actionName)
            } else {
                if match.covered == true {
                    throw PerceptionError.covered(match.summary)
                }
                clicked = try click(p, at: match.point, what: match.ref)
            }
            return match
        }
        try emit(match, json: json) {
            (performed.map { "pressed (\($0)) " } ?? "tapped ") + match.summary
                + (clicked.map { " (clicked at \($0.x),\($0.y))" } ?? "")
        }
    }

    /// Clicks `point`, moved by `--offset` when given (refused off the screen); returns the point when it moved.
    private func click(_ p: Perceiver, at point: Point, what: String) throws -> Point? {
        var point = point
        var moved: Point?
        if let offset {
            // Only an offset can leave the screen (a match is on it): no round trip for a plain tap.
            let shift = try Point(parsing: offset)
            point = Point(x: point.x + shift.x, y: point.y + shift.y)
            let screen = try p.connection.screenRect()
            guard screen.contains(point) else {
                throw ScreenError.invalidArgument(
                    "--offset \(shift) from \(what) puts the click at \(point), off the "
                        + "\(screen.width)x\(screen.height) screen")
            }
            moved = point
        }
        try InputController(connection: p.connection).click(
            at: point, button: button, count: double ? 2 : 1, modifiers: try parseModifiers(modifiers))
        return moved
    }

    /// `tap --image`: clicks the centre of the one best match; a tie or no match clicks nothing.
    private func tapImage(_ template: ImageTemplate) throws {
        var clicked: Point?
        let match = try withImagePerceiver(target) { p -> ImageMatch in
            let match = try waiting(
                p, timeout: timeout, for: "image \(template.path)", json: json,
                area: {
                    try p.area(region: region.map(Rect.init(parsing:)), window: window, matching: select.filter)
                }
            ) { area in
                try ImageSearch(p, area: area, template: template, options: image.options).chosen(nth: choose.nth)
            }
            clicked = try click(p, at: match.center, what: "the match at \(match.center)")
            return match
        }
        try emit(match, json: json) {
            "tapped " + match.summary + (clicked.map { " (clicked at \($0.x),\($0.y))" } ?? "")
        }
    }
}

/// `xclaw tree`: the raw accessibility tree of a window or of every application.
struct Tree: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tree",
        abstract: "Print the accessibility tree (AT-SPI2) of a window, or of every application on the display.",
        discussion: """
            One node per line, indented by depth: role, "name", = value, [states], @x,y WxH (screen pixels), and \
            the toolkit's actions. Hidden nodes are included with --all. Needs an accessibility bus: displays \
            started with `xclaw display start --accessibility`, or a desktop session with AT-SPI running. \
            Exits 1 when the display has none.
            Examples:
              xclaw tree --window Question
              xclaw tree --all --json  # every application, hidden nodes too
            """)
    @OptionGroup var target: DisplayOptions
    @Option(help: "Window id (0x…) or title substring: only that window's subtree.") var window: String?
    @OptionGroup var select: WindowSelection
    @Flag(help: "Include hidden and off-screen nodes.") var all = false
    @Flag(help: "Print JSON: the nodes in tree order, each with its parent's id.") var json = false

    func run() throws {
        let connection = try target.connect()
        let windows = WindowManager(connection: connection)
        guard let location = AccessibilityReader.locate(display: connection.name, windows: windows) else {
            throw AccessibilityReader.missingBus(display: connection.name)
        }
        let reader = AccessibilityReader()
        var tree = try reader.tree(at: location, all: all, actions: true)
        if select.names(window) {
            let info = try select.resolve(window, windows)
            tree = try Self.subtree(of: info, in: tree, all: all)
        }
        try emit(tree, json: json) { Self.render(tree) }
    }

    /// The part of `tree` under the top-level node that shows `window`.
    static func subtree(of window: WindowInfo, in tree: AccessibleTree, all: Bool) throws -> AccessibleTree {
        guard let top = tree.topLevel(of: window) else {
            throw PerceptionError.notFound(
                label: "the accessibility tree of window \"\(window.title)\"",
                closest: tree.apps.map { "\($0.name) (pid \($0.pid))" })
        }
        var keep: Set<Int> = [top.id]
        var nodes: [AccessibleNode] = []
        for node in tree.nodes where node.id == top.id || keep.contains(node.parent) {
            keep.insert(node.id)
            nodes.append(node)
        }
        var result = tree
        result.apps = tree.apps.filter { $0.id == top.app }
        result.nodes = nodes
        return result
    }

    /// The indented text form; names, values, roles, states and actions are the apps' words, escaped so none can
    /// start a line of its own.
    static func render(_ tree: AccessibleTree) -> String {
        var depth: [Int: Int] = [:]
        var lines: [String] = []
        let apps = Dictionary(tree.apps.map { ($0.root, $0) }, uniquingKeysWith: { a, _ in a })
        for node in tree.nodes {
            let level = node.parent < 0 ? 0 : (depth[node.parent] ?? -1) + 1
            depth[node.id] = level
            var line =
                String(repeating: "  ", count: level) + UntrustedText.escaped(node.role) + " "
                + UntrustedText.quoted(node.name)
            if let app = apps[node.id] { line += " pid \(app.pid) (\(app.route), \(app.nodes) nodes)" }
            if let value = node.value, !value.isEmpty { line += " = " + UntrustedText.quoted(value, limit: 60) }
            let states = node.states.filter { !["enabled", "sensitive", "visible", "showing"].contains($0) }
            if !states.isEmpty { line += " [" + states.map { UntrustedText.escaped($0) }.joined(separator: ",") + "]" }
            if let r = node.rect { line += " @\(r.x),\(r.y) \(r.width)x\(r.height)" }
            if let actions = node.actions, !actions.isEmpty {
                line += " actions: " + actions.map { UntrustedText.escaped($0) }.joined(separator: ",")
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

/// `xclaw watch`: wait for text to appear or vanish, a region to change, a pixel colour, or stability.
struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract:
            "Wait until text or an image appears or vanishes, a region changes, a pixel has a colour, the screen "
            + "is still, or an application sends a notification.",
        discussion: """
            Polls by comparing frames; OCR (or the image search of --image FILE, see `xclaw find --image`) runs \
            only when pixels changed. Exits 0 when the condition holds, 1 on timeout with what was last observed.
            --notification TEXT needs no display: it watches the caller's session bus for the Notify calls \
            applications make (a bus monitor), so it sees a notification whichever server shows it, and prints its \
            application, summary and body. It sees nothing an application does not send: most (notify-send among \
            them) send nothing when no notification server runs. Exits 5 when there is no session bus or it refuses \
            monitoring.
            Examples:
              xclaw watch --window Calculator --timeout 10  # until such a window exists, as xdotool search --sync
              xclaw watch --notification 'build finished' --timeout 600  # what any app notifies, no screenshot
            """)
    @OptionGroup var target: DisplayOptions
    @Option(help: "Wait for this text.") var text: String?
    @Flag(help: "With --text or --image: wait for it to vanish instead.") var gone = false
    @OptionGroup var image: ImageOptions
    @Option(help: "Wait for this region X,Y,W,H to change.") var change: String?
    @Option(help: "Wait until nothing changed for MS milliseconds.") var stable: Int?
    @Option(help: "Wait for pixel X,Y …") var pixel: String?
    @Option(help: "… to have this colour (#rrggbb).") var color: String?
    @Option(help: "With --pixel: how far each channel may differ from --color (0–255; default 0).") var tolerance: Int?
    @Option(help: "Only look at this region X,Y,W,H (text, image and stable conditions).") var region: String?
    @Option(
        help: """
            Window id (0x…) or title substring to look at; alone, wait for such a window to appear (with --gone: to \
            vanish; with --active: to have the focus), as xdotool search --sync.
            """)
    var window: String?
    @OptionGroup var select: WindowSelection
    @Flag(help: "With --window alone: wait for the window to have the input focus.") var active = false
    @OptionGroup var languages: LanguageOption
    @Option(
        help: """
            Wait for a notification whose summary or body contains this text (any case; empty: any), sent by any \
            application; needs no display.
            """)
    var notification: String?
    @Option(help: "With --notification: only from an application whose name contains this (any case).")
    var from: String?
    @Option(help: "Give up after this many seconds.") var timeout: Double = 10
    @Option(help: "Milliseconds between polls.") var interval: Int = 50
    @Flag(help: "Print JSON.") var json = false

    /// `--window` with no other condition: the window itself is waited for.
    var watchesWindow: Bool {
        select.names(window) && [text, change, pixel, notification].allSatisfy { $0 == nil } && stable == nil
            && image.image == nil
    }

    func validate() throws {
        let count = [text != nil, change != nil, stable != nil, pixel != nil, image.image != nil, notification != nil]
            .filter { $0 }.count
        guard count == 1 || watchesWindow else {
            throw ValidationError(
                "give exactly one of --text, --image, --change, --stable, --pixel, --notification, or --window alone")
        }
        if from != nil && notification == nil { throw ValidationError("--from goes with --notification") }
        if notification != nil {
            // The bus, not the screen: none of the screen's options applies.
            let screen = [
                (region != nil, "--region"), (select.names(window), "--window and the window flags"),
                (languages.lang != nil, "--lang"),
            ]
            if let (_, option) = screen.first(where: { $0.0 }) {
                throw ValidationError("--notification watches the session bus, not the screen: leave out \(option)")
            }
        }
        if gone && text == nil && image.image == nil && !watchesWindow {
            throw ValidationError("--gone goes with --text, --image or --window alone")
        }
        if active && (!watchesWindow || gone) { throw ValidationError("--active goes with --window alone, not --gone") }
        if (pixel == nil) != (color == nil) { throw ValidationError("--pixel and --color go together") }
        if tolerance != nil && pixel == nil { throw ValidationError("--tolerance goes with --pixel") }
        try requireRange(tolerance, 0...255, "--tolerance", "")
        if region != nil && select.names(window) { throw ValidationError("give --region or --window, not both") }
        try requireRange(timeout, 0.001...86_400, "--timeout", "seconds")
        try requireRange(interval, 1...60_000, "--interval", "ms")
        try requireRange(stable, 1...86_400_000, "--stable", "ms")
        try checkParses(change) { try Rect(parsing: $0) }
        try checkParses(region) { try Rect(parsing: $0) }
        try checkParses(pixel) { try Point(parsing: $0) }
        try checkParses(color) { try RGB(hex: $0) }
    }

    /// What `watch` prints for a window picked by the selection flags (the fields of `WatchResult` it has).
    struct SelectedWindowResult: Encodable {
        var condition: String
        var elapsedMs: Double
        var window: WindowInfo?

        /// As `WatchResult` names them.
        enum CodingKeys: String, CodingKey {
            case condition, window
            case elapsedMs = "elapsed_ms"
        }
    }

    /// `--window` alone with selection flags: polls the window list until one window the flags (and the name) pick
    /// appears, has the focus (`--active`), or until none does (`--gone`), as `xdotool search --sync`.
    private func watchSelected() throws {
        let manager = WindowManager(connection: try target.connect())
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(timeout * 1000))
        let what = gone ? "gone" : (active ? "active" : "appears")
        let described = "window \(window.map { "\"\($0)\" " } ?? "")matching the flags \(what)"
        while true {
            var found: WindowInfo?
            var several = false
            do { found = try select.resolve(window, manager) } catch ScreenError.windowNotFound {
                found = nil
            } catch ScreenError.ambiguousWindow { several = true }
            let holds = gone ? (found == nil && !several) : (active ? found?.active == true : (found != nil || several))
            if holds {
                let result = SelectedWindowResult(
                    condition: described, elapsedMs: (ContinuousClock.now - start).milliseconds, window: found)
                return try emit(result, json: json) {
                    "\(result.condition): after \(Int(result.elapsedMs)) ms"
                        + (found.map { " (\($0.hexID) \(UntrustedText.quoted($0.title, limit: 60)))" } ?? "")
                }
            }
            guard ContinuousClock.now < deadline else {
                throw PerceptionError.timedOut(
                    condition: described,
                    lastObserved: several ? "several windows match" : (found.map(\.title) ?? "no such window"))
            }
            if Interrupt.requested { throw CancellationError() }
            Thread.sleep(forTimeInterval: Double(interval) / 1000)
        }
    }

    func run() throws {
        try ProgressLine.during(described, timeout: timeout, json: json) {
            try notification.map(watchNotification) ?? watchForCondition()
        }
    }

    /// What `--notification` prints: the condition, the time, and the notification seen.
    struct NotificationResult: Encodable {
        var condition: String
        var elapsedMs: Double
        var notification: SeenNotification

        /// As `WatchResult` names them.
        enum CodingKeys: String, CodingKey {
            case condition, notification
            case elapsedMs = "elapsed_ms"
        }
    }

    /// `--notification`: a monitor of the caller's session bus until a matching `Notify` call passes; no display.
    private func watchNotification(_ text: String) throws {
        let start = ContinuousClock.now
        let monitor = try NotificationMonitor(environment: Invocation.current.environment)
        var seen = 0
        let found = try monitor.wait(
            for: text, from: from, timeout: .milliseconds(Int(timeout * 1000)),
            cancelled: { Interrupt.requested }, counting: { seen += 1 })
        if Interrupt.requested { throw CancellationError() }
        guard let found else {
            let others = "\(seen) notification\(seen == 1 ? "" : "s") came, none matching"
            throw PerceptionError.timedOut(
                condition: described, lastObserved: seen == 0 ? "no notification was sent" : others)
        }
        let result = NotificationResult(
            condition: described, elapsedMs: (ContinuousClock.now - start).milliseconds, notification: found)
        try emit(result, json: json) {
            let body = found.body.isEmpty ? "" : " — " + UntrustedText.quoted(found.body, limit: 400)
            let summary = UntrustedText.quoted(found.summary, limit: 200)
            return "notification from \(UntrustedText.quoted(found.appName, limit: 60)): \(summary)\(body) "
                + "(after \(Int(result.elapsedMs)) ms)"
        }
    }

    /// What the wait is for, as the progress line says it.
    var described: String {
        if let notification {
            return "a notification containing \"\(notification)\"" + (from.map { " from \"\($0)\"" } ?? "")
        }
        let target = select.names(window) ? " in window \(window ?? "matching the flags")" : ""
        if let text { return "text \"\(text)\"\(target)\(gone ? " to go" : "")" }
        if let path = image.image { return "image \(path)\(target)\(gone ? " to go" : "")" }
        if let change { return "region \(change) to change" }
        if let stable { return "the screen to be still for \(stable) ms" }
        if let pixel, let color { return "pixel \(pixel) to be \(color)" }
        let what = gone ? "to go" : (active ? "to have the focus" : "to appear")
        return "window \(window.map { "\"\($0)\" " } ?? "matching the flags ")\(what)"
    }

    private func watchForCondition() throws {
        let template = try image.template()  // a bad file is refused before any waiting
        if watchesWindow, !select.filter.isEmpty {
            return try watchSelected()
        }
        if watchesWindow, let window {
            let condition: WatchCondition =
                active ? .windowActive(window) : (gone ? .windowGone(window) : .windowAppears(window))
            let result = try withPerceiver(target) { p in
                try stoppableWatcher(p, interval: interval)
                    .wait(for: condition, timeout: .milliseconds(Int(timeout * 1000)))
            }
            return try emit(result, json: json) {
                "\(result.condition): after \(Int(result.elapsedMs)) ms"
                    + (result.window.map {
                        " (\(String(format: "0x%x", $0.id)) \(UntrustedText.quoted($0.title, limit: 60)))"
                    } ?? "")
            }
        }
        let result = try withPerceiver(target, languages: languages) { p -> WatchResult in
            let condition: WatchCondition
            let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
            // A watched window may not exist yet (the app is starting): wait for it within the same timeout.
            var area: Rect
            while true {
                do {
                    area = try p.area(
                        region: region.map(Rect.init(parsing:)), window: window, matching: select.filter)
                    break
                } catch ScreenError.windowNotFound(let name) {
                    guard ContinuousClock.now < deadline else {
                        throw PerceptionError.timedOut(condition: "window \"\(name)\"", lastObserved: "no such window")
                    }
                    Thread.sleep(forTimeInterval: Double(interval) / 1000)
                }
            }
            if let text {
                condition = gone ? .textGone(text) : .textAppears(text)
            } else if let template {
                condition = gone ? .imageGone(template, image.options) : .imageAppears(template, image.options)
            } else if let change {
                condition = .change; area = try p.area(region: Rect(parsing: change))
            } else if let stable {
                condition = .stable(.milliseconds(stable))
            } else if let pixel, let color {
                let point = try Point(parsing: pixel)
                guard try p.connection.screenRect().contains(point) else {
                    throw PerceptionError.invalidArgument("pixel \(pixel) is outside the screen")
                }
                condition = .pixel(point, try RGB(hex: color), tolerance: tolerance ?? 0)
            } else {
                throw ValidationError("nothing to watch")
            }
            // A watched window's area is asked again at each poll: one that was still starting when it was found
            // (xterm's is 1×1 at 0,0 until it maps) or that moves is followed. Gone or ambiguous for a moment: its
            // last place.
            let follows = select.names(window) && change == nil
            return try stoppableWatcher(p, interval: interval)
                .wait(for: condition, timeout: max(.zero, deadline - ContinuousClock.now)) {
                    guard follows else { return area }
                    do {
                        area = try p.area(window: window, matching: select.filter)
                    } catch ScreenError.windowNotFound, ScreenError.ambiguousWindow {}
                    return area
                }
        }
        try emit(result, json: json) {
            "\(result.condition): after \(Int(result.elapsedMs)) ms" + (result.match.map { " at " + $0.summary } ?? "")
                + (result.image.map { " at " + $0.summary } ?? "")
        }
    }
}

/// A watcher polling every `interval` ms that, in the daemon, stops at the next poll once the asker is gone (a
/// signal it did not handle ended the CLI): in-process the signal ended the process, and a daemon must not go on
/// polling, holding the display's perceiver, for the rest of the timeout.
func stoppableWatcher(_ perceiver: Perceiver, interval: Int) -> Watcher {
    var watcher = Watcher(perceiver: perceiver, interval: .milliseconds(interval))
    if let hub = Invocation.current.interrupts {
        let capture = watcher.frames
        watcher.frames = { area in
            if hub.raised != 0 { throw CancellationError() }
            return try capture(area)
        }
    }
    return watcher
}

/// `xclaw wait-stable`: settle detection, instead of a fixed sleep after an action.
struct WaitStable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait-stable",
        abstract: "Wait until the screen (or a region) stops changing.",
        discussion: """
            Exits 0 once nothing changed for --ms milliseconds; 1 if it is still changing at --timeout.
            Examples:
              xclaw wait-stable --ms 300 --timeout 5  # returns as soon as the screen stopped changing
              xclaw wait-stable --region 0,0,800,600
            """)
    @OptionGroup var target: DisplayOptions
    @Option(help: "How long the screen must stay unchanged, in milliseconds.") var ms: Int = 300
    @Option(help: "Give up after this many seconds.") var timeout: Double = 5
    @Option(help: "Only watch this region X,Y,W,H.") var region: String?
    @Option(help: "Milliseconds between polls.") var interval: Int = 20
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        try requireRange(ms, 1...86_400_000, "--ms", "")
        try requireRange(timeout, 0.001...86_400, "--timeout", "seconds")
        try requireRange(interval, 1...60_000, "--interval", "ms")
        try checkParses(region) { try Rect(parsing: $0) }
    }

    func run() throws {
        let result = try ProgressLine.during("the screen to be still for \(ms) ms", timeout: timeout, json: json) {
            try withPerceiver(target, noCache: true) { p in
                try stoppableWatcher(p, interval: interval)
                    .waitUntilStable(
                        area: p.area(region: region.map(Rect.init(parsing:))), quiet: .milliseconds(ms),
                        timeout: .milliseconds(Int(timeout * 1000)))
            }
        }
        try emit(result, json: json) { "stable after \(Int(result.elapsedMs)) ms" }
    }
}
