import Foundation
import XclawBase
import XclawMCP
import XclawMessages

/// How a tool argument is spelled on the command line of the command the tool runs.
enum MCPSpelling: Sendable {
    /// `--name=value` (the `=` form: a value starting with `-` stays a value).
    case option(String)
    /// `--name` when true.
    case flag(String)
    /// A positional argument, after `--` (a label starting with `-` stays a label).
    case positional
    /// Handled by the tool itself.
    case custom
}

/// What a tool does to the desktop, which sets its hints, whether it takes the display's input lock, and whether it
/// needs a display at all.
enum MCPToolKind: Sendable {
    /// Reads the screen (or the installed applications): nothing changes.
    case read
    /// Sends input: clicks, keys, text. It may do anything the user could, so destructive.
    case input
    /// Raises and focuses a window: changes what is on top, loses nothing, the same twice.
    case focus
    /// Starts a program, an open world of its own.
    case launch

    var annotations: MCPToolAnnotations {
        switch self {
        case .read: MCPToolAnnotations(readOnly: true, destructive: false, idempotent: true, openWorld: false)
        case .input: MCPToolAnnotations(readOnly: false, destructive: true, idempotent: false, openWorld: false)
        case .focus: MCPToolAnnotations(readOnly: false, destructive: false, idempotent: true, openWorld: false)
        case .launch: MCPToolAnnotations(readOnly: false, destructive: false, idempotent: false, openWorld: true)
        }
    }
}

/// One xclaw command offered as an MCP tool: the tool's name is the command's, its arguments are the command's
/// options, and a call runs the command itself (`MCPCommandRunner`), so the tool does exactly what the command does.
struct MCPCommandTool: Sendable {
    var name: String
    var title: String
    var description: String
    var kind: MCPToolKind
    var arguments: [(MCPParameter, MCPSpelling)]
    /// The command's words before its options; default: the name.
    var command: [String]? = nil
    /// The words from the call instead, for a tool whose subcommand is an argument (`clipboard`'s `action`).
    var commandFor: (@Sendable (MCPCall) throws -> [String])? = nil
    /// False for the tools that need no screen (`apps`).
    var usesDisplay = true
    /// The reply is the PNG the command writes to stdout.
    var image = false
    /// Extra words, or a refusal, from the arguments spelled `.custom`.
    var custom: @Sendable (MCPCall) throws -> (options: [String], positionals: [String], stdin: Data?) = { _ in
        ([], [], nil)
    }

    /// The command line for `call`.
    func commandLine(_ call: MCPCall, display: String?) throws -> (arguments: [String], stdin: Data?) {
        var options = try commandFor?(call) ?? command ?? [name]
        if let display { options.append("--display=\(display)") }
        var positionals: [String] = []
        for (parameter, spelling) in arguments {
            guard let value = call.arguments[parameter.name], value != .null else { continue }
            switch (spelling, value) {
            case (.option(let flag), _): options.append("\(flag)=\(Self.word(value))")
            case (.flag(let flag), .bool(true)): options.append(flag)
            case (.positional, .array(let items)): positionals += items.compactMap(\.string)
            case (.positional, _): positionals.append(Self.word(value))
            default: break
            }
        }
        let extra = try custom(call)
        options += extra.options
        positionals += extra.positionals
        return (options + (positionals.isEmpty ? [] : ["--"] + positionals), extra.stdin)
    }

    /// A value as the command line spells it.
    static func word(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): text
        case .number(let number): number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : "\(number)"
        case .bool(let flag): flag ? "true" : "false"
        default: value.jsonText
        }
    }

    /// The MCP tool: arguments checked, the display chosen, the command run, its output or its error returned.
    func tool(_ runner: MCPCommandRunner) -> MCPTool {
        let display = MCPParameter(
            "display", .string,
            "X display, e.g. \":1\" (default: the server's own, `xclaw mcp --display`, else the running daemon's "
                + "one display, else $DISPLAY).")
        let parameters = arguments.map(\.0) + (usesDisplay ? [display] : [])
        return MCPTool(
            name: name, title: title, description: description, parameters: parameters,
            annotations: kind.annotations
        ) { call in
            do {
                let target = usesDisplay ? try runner.display(for: call) : nil
                let (line, stdin) = try commandLine(call, display: target)
                let outcome = await runner.run(
                    line, display: target, stdin: stdin, exclusive: kind == .input || kind == .focus,
                    cancellation: call.cancellation)
                return result(outcome)
            } catch {
                return .failure("\(error)")
            }
        }
    }

    /// The most of a failed command's message a tool result carries.
    static let failureLimit = 2_000

    /// A command's outcome as a tool result: its output, or its error message with the exit status (the same
    /// statuses as the command line's: 1 not found or timed out, 2 bad input, 3 no display, 5 internal).
    func result(_ outcome: MCPCommandRunner.Outcome) -> MCPToolResult {
        // The command line's usage lines name its --options, not the tool's arguments: the message alone helps, in
        // the tool's words.
        let stderr = MCPToolText.rendered(
            outcome.stderr.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.hasPrefix("Usage: ") && !$0.hasPrefix("  See 'xclaw ") }
                .joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines),
            arguments: MCPToolText.arguments(of: self), tools: MCPTools.names)
        guard outcome.status == 0 else {
            // A command's error may quote its argument (a 10 MB label): the message is cut, never the whole echo.
            let message = stderr.count > Self.failureLimit ? String(stderr.prefix(Self.failureLimit)) + "…" : stderr
            return .failure((message.isEmpty ? "\(name) failed" : message) + "\n(exit status \(outcome.status))")
        }
        var content: [MCPContent] = []
        if image {
            content.append(.image(outcome.stdout, mimeType: "image/png"))
            let size = PNGHeader.size(outcome.stdout).map { "\($0.width)x\($0.height) " } ?? ""
            content.append(.text("\(size)PNG, \(outcome.stdout.count) bytes"))
        } else {
            let text = String(decoding: outcome.stdout, as: UTF8.self).trimmingCharacters(in: .newlines)
            content.append(.text(text.isEmpty ? "done" : text))
        }
        if !stderr.isEmpty { content.append(.text(stderr)) }  // warnings: an unreadable tree, OCR instead
        return MCPToolResult(content)
    }
}

/// The tools `xclaw mcp` offers, one per command of the same name.
enum MCPTools {
    /// What the client's model is told about them.
    static let instructions = """
        xclaw drives a Linux/X11 desktop. Start with snapshot: it lists windows, text and controls with refs \
        (e7) that stay stable: a control keeps its ref while it stays on screen in the same window with the same \
        role and label, where it was or where its window moved it, across menus opening and other windows \
        changing; a ref never passes to an element of another window, role or label. tap clicks an element by its \
        label or ref; type, key, click, scroll and drag send \
        input; watch waits for text, an image, a window or a still screen instead of sleeping; capture returns a \
        PNG. Tools refuse (isError) rather than guess: several equal matches are listed, not clicked.
        """

    // Arguments several tools share.
    private static let window = MCPParameter("window", .string, "Window id (0x…) or title substring to look in.")
    private static let region = MCPParameter("region", .string, "Region X,Y,W,H in screen pixels.")
    private static let lang = MCPParameter("lang", .string, "OCR languages, tesseract codes joined by + (eng+deu).")
    private static let json = MCPParameter("json", .boolean, "Answer JSON instead of text.")
    private static let source = MCPParameter(
        "source", .choice(["auto", "ocr", "atspi"]),
        "Where elements come from: auto (the accessibility tree where an app has one, OCR for the rest), ocr, atspi.")
    private static let role = MCPParameter(
        "role",
        .choice([
            "button", "field", "checkbox", "radio", "combobox", "slider", "spinbutton", "tab", "item", "link",
            "menuitem", "image", "text",
        ]), "Only elements of this role.")
    private static let button = MCPParameter("button", .choice(["left", "middle", "right"]), "Mouse button.")
    private static let modifiers = MCPParameter("modifiers", .string, "Modifiers held, e.g. ctrl+shift.")
    private static let nth = MCPParameter("nth", .integer, "Take the Nth of equally good matches (1-based).")
    private static let near = MCPParameter("near", .string, "Prefer the match nearest to this label.")
    private static let timeout = MCPParameter(
        "timeout", .number, "Wait up to this many seconds for the target (and its window); default: look once.")
    private static let image = MCPParameter("image", .string, "A PNG file to look for instead of a label.")
    private static let confidence = MCPParameter(
        "confidence", .number, "With image: the lowest score that counts, 0.01–1 (default 0.9).")
    private static let grayscale = MCPParameter("grayscale", .boolean, "With image: compare grey levels.")
    private static let scales = MCPParameter(
        "scales", .string, "With image: the sizes to try it at, e.g. 0.8,1,1.25 (default 1).")

    /// The tools' names, in the table's order.
    static let names = table.map(\.name)

    /// Every tool, run by `runner`.
    static func all(_ runner: MCPCommandRunner) -> [MCPTool] { table.map { $0.tool(runner) } }

    /// xclaw's MCP server with every tool, run by `runner`: `xclaw mcp`'s, and the daemon's over HTTP.
    static func server(_ runner: MCPCommandRunner) -> MCPServer {
        MCPServer(name: "xclaw", version: Xclaw.configuration.version, instructions: instructions, tools: all(runner))
    }

    /// The table: name, what it does, its arguments and how the command spells them.
    static let table: [MCPCommandTool] = [
        MCPCommandTool(
            name: "snapshot", title: "Snapshot the screen",
            description: """
                List what is on screen: windows, text and controls, one per line: ref, role, "label", = value, \
                @centre x,y, size, [states], and the window it is in. Refs (e7) stay stable across snapshots (same \
                window, role and label, moved with its window; a ref in a refusal holds for the next call) and can \
                be passed to tap; a leading + marks elements new or moved since the previous snapshot.
                """,
            kind: .read,
            arguments: [
                (region, .option("--region")), (window, .option("--window")), (source, .option("--source")),
                (
                    MCPParameter("interactive", .boolean, "Only windows and controls (buttons, fields, checkboxes…)."),
                    .flag("--interactive")
                ),
                (lang, .option("--lang")), (json, .flag("--json")),
            ]),
        MCPCommandTool(
            name: "find", title: "Find on screen",
            description: """
                Find a label (exact, then case-insensitive, then OCR look-alikes), an image (a PNG file) or a colour \
                (#rrggbb) on screen; prints the candidates best first. Fails, naming the closest labels, when \
                nothing matches.
                """,
            kind: .read,
            arguments: [
                (MCPParameter("label", .string, "The label to look for (or give image or color)."), .positional),
                (image, .option("--image")),
                (MCPParameter("color", .string, "Find the first pixel of this colour, #rrggbb."), .option("--color")),
                (
                    MCPParameter("tolerance", .integer, "With color: how far each channel may differ (0–255)."),
                    .option("--tolerance")
                ),
                (window, .option("--window")), (region, .option("--region")), (nth, .option("--nth")),
                (near, .option("--near")), (role, .option("--role")), (source, .option("--source")),
                (MCPParameter("all", .boolean, "With image: every match, best first."), .flag("--all")),
                (confidence, .option("--confidence")), (grayscale, .flag("--grayscale")), (scales, .option("--scales")),
                (timeout, .option("--timeout")), (lang, .option("--lang")), (json, .flag("--json")),
            ]),
        MCPCommandTool(
            name: "tap", title: "Tap an element",
            description: """
                Click the element a label or a ref (from snapshot) names, or press it through its toolkit (action). \
                Refuses, listing them, when several match equally: pick one with nth, near, role, window or its ref. \
                A covered element is never clicked.
                """,
            kind: .input,
            arguments: [
                (MCPParameter("label", .string, "The element's label."), .positional),
                (
                    MCPParameter("ref", .string, "The element's ref from snapshot, e.g. e12 (instead of label)."),
                    .custom
                ),
                (image, .option("--image")), (confidence, .option("--confidence")), (grayscale, .flag("--grayscale")),
                (scales, .option("--scales")),
                (MCPParameter("region", .string, "With image: only search this region X,Y,W,H."), .option("--region")),
                (window, .option("--window")), (nth, .option("--nth")), (near, .option("--near")),
                (role, .option("--role")), (source, .option("--source")),
                (
                    MCPParameter("action", .boolean, "Press through the toolkit's action instead of clicking."),
                    .flag("--action")
                ),
                (
                    MCPParameter("action_name", .string, "Press through this toolkit action (e.g. Toggle)."),
                    .option("--action-name")
                ),
                (MCPParameter("double", .boolean, "Double-click."), .flag("--double")),
                (button, .option("--button")), (modifiers, .option("--with")),
                (
                    MCPParameter("offset", .string, "Click this far from the centre, DX,DY (e.g. 120,0)."),
                    .option("--offset")
                ),
                (timeout, .option("--timeout")), (lang, .option("--lang")), (json, .flag("--json")),
            ],
            custom: { call in
                guard let ref = call.string("ref") else { return ([], [], nil) }
                if call.string("label") != nil { throw MCPToolFailure("give label or ref, not both") }
                return ([], [ref], nil)
            }),
        MCPCommandTool(
            name: "type", title: "Type text",
            description: """
                Type any Unicode text exactly into the focused window (newline = Return, tab = Tab), or into the \
                field into names (a label or ref), focused first: fields are asked before other elements, so a \
                caption never ties with its own field; nth, near, role and source pick among fields as for tap.
                """,
            kind: .input,
            arguments: [
                (MCPParameter("text", .string, "The text.", required: true), .custom),
                (MCPParameter("delay", .integer, "Milliseconds between characters (0–10000)."), .option("--delay")),
                (MCPParameter("into", .string, "Focus this field first: a label or a ref."), .option("--into")),
                (MCPParameter("window", .string, "With into: the window to look in."), .option("--window")),
                (nth, .option("--nth")), (near, .option("--near")), (role, .option("--role")),
                (source, .option("--source")),
            ],
            // Through stdin, as `type -`: any text, also one that looks like an option.
            custom: { call in ([], ["-"], Data((call.string("text") ?? "").utf8)) }),
        MCPCommandTool(
            name: "key", title: "Press keys",
            description: """
                Press key combinations in order, xdotool syntax: ctrl+shift+t, Return, alt+Tab, super, F5. Every \
                name is checked before anything is pressed.
                """,
            kind: .input,
            arguments: [
                (MCPParameter("keys", .strings, "The combinations, pressed in order.", required: true), .positional),
                (MCPParameter("hold", .number, "Hold the (single) combination this many seconds."), .option("--hold")),
            ]),
        MCPCommandTool(
            name: "click", title: "Click",
            description: "Click at a point (screen pixels), or where the pointer is.",
            kind: .input,
            arguments: [
                (MCPParameter("x", .integer, "X (give x and y, or neither)."), .positional),
                (MCPParameter("y", .integer, "Y."), .positional),
                (button, .option("--button")),
                (MCPParameter("count", .integer, "1, 2 (double) or 3 (triple)."), .option("--count")),
                (modifiers, .option("--with")),
            ]),
        MCPCommandTool(
            name: "scroll", title: "Scroll",
            description: "Scroll up, down, left or right, at a point or where the pointer is.",
            kind: .input,
            arguments: [
                (
                    MCPParameter(
                        "direction", .choice(["up", "down", "left", "right"]), "The direction.", required: true),
                    .positional
                ),
                (MCPParameter("amount", .integer, "Notches (default 1)."), .option("--amount")),
                (MCPParameter("x", .integer, "Scroll at this X (with y)."), .custom),
                (MCPParameter("y", .integer, "Scroll at this Y (with x)."), .custom),
                (modifiers, .option("--with")),
            ],
            custom: { call in
                switch (call.arguments["x"], call.arguments["y"]) {
                case (nil, nil): return ([], [], nil)
                case (let x?, let y?):
                    return (["--at=\(MCPCommandTool.word(x)),\(MCPCommandTool.word(y))"], [], nil)
                default: throw MCPToolFailure("give both x and y, or neither")
                }
            }),
        MCPCommandTool(
            name: "drag", title: "Drag",
            description: "Drag from one point to another with a button held, through intermediate points.",
            kind: .input,
            arguments: [
                (MCPParameter("x1", .integer, "Start X.", required: true), .positional),
                (MCPParameter("y1", .integer, "Start Y.", required: true), .positional),
                (MCPParameter("x2", .integer, "End X.", required: true), .positional),
                (MCPParameter("y2", .integer, "End Y.", required: true), .positional),
                (button, .option("--button")),
                (MCPParameter("steps", .integer, "Intermediate motion events (default 16)."), .option("--steps")),
                (MCPParameter("duration", .integer, "Milliseconds the motion takes."), .option("--duration")),
                (modifiers, .option("--with")),
            ]),
        MCPCommandTool(
            name: "capture", title: "Capture the screen",
            description: "A PNG of the screen, a region or a window.",
            kind: .read,
            arguments: [
                (region, .option("--region")), (window, .option("--window")),
                (
                    MCPParameter("scale_for_model", .boolean, "Downscale to the size Claude sees (long edge ≤ 1568)."),
                    .flag("--scale-for-model")
                ),
            ],
            command: ["capture", "--output=-"], image: true),
        MCPCommandTool(
            name: "ocr", title: "Read the screen's text",
            description: "The text on the screen, a region or a window, in reading order (tesseract).",
            kind: .read,
            arguments: [
                (region, .option("--region")), (window, .option("--window")), (lang, .option("--lang")),
                (json, .flag("--json")),
            ]),
        MCPCommandTool(
            name: "watch", title: "Wait for a condition",
            description: """
                Wait until text or an image appears (or with gone vanishes), a region changes, the screen is still \
                for stable ms, a pixel has a colour, or (window alone) a window appears, vanishes or has the focus. \
                Fails on timeout, saying what was last seen.
                """,
            kind: .read,
            arguments: [
                (MCPParameter("text", .string, "Wait for this text."), .option("--text")),
                (
                    MCPParameter("gone", .boolean, "With text, image or window alone: wait for it to vanish."),
                    .flag("--gone")
                ),
                (image, .option("--image")), (confidence, .option("--confidence")), (grayscale, .flag("--grayscale")),
                (scales, .option("--scales")),
                (MCPParameter("change", .string, "Wait for this region X,Y,W,H to change."), .option("--change")),
                (MCPParameter("stable", .integer, "Wait until nothing changed for this many ms."), .option("--stable")),
                (MCPParameter("pixel", .string, "Wait for pixel X,Y to have color."), .option("--pixel")),
                (MCPParameter("color", .string, "With pixel: the colour, #rrggbb."), .option("--color")),
                (
                    MCPParameter("tolerance", .integer, "With pixel: how far each channel may differ."),
                    .option("--tolerance")
                ),
                (region, .option("--region")),
                (
                    MCPParameter("window", .string, "Window id or title substring; alone, wait for such a window."),
                    .option("--window")
                ),
                (
                    MCPParameter("active", .boolean, "With window alone: wait for it to have the focus."),
                    .flag("--active")
                ),
                (
                    MCPParameter("timeout", .number, "Give up after this many seconds (default 10)."),
                    .option("--timeout")
                ),
                (MCPParameter("interval", .integer, "Milliseconds between polls (default 50)."), .option("--interval")),
                (lang, .option("--lang")), (json, .flag("--json")),
            ]),
        MCPCommandTool(
            name: "windows", title: "List windows",
            description: "Top-level windows, top-most first: id, geometry, state, class, pid, title.",
            kind: .read,
            arguments: [
                (MCPParameter("all", .boolean, "Include unmapped windows."), .flag("--all")), (json, .flag("--json")),
            ]),
        MCPCommandTool(
            name: "activate", title: "Activate a window",
            description: "Raise and focus a window by id (0x…) or title substring; answers its id.",
            kind: .focus,
            arguments: [(MCPParameter("window", .string, "Window id or title substring.", required: true), .positional)]
        ),
        MCPCommandTool(
            name: "launch", title: "Launch an application",
            description: """
                Start an application by name, id or .desktop file (apps lists them), or a command, detached on the \
                display; answers its pid, and with wait_window its first window's id.
                """,
            kind: .launch,
            arguments: [
                (MCPParameter("app", .string, "An application name or id, or a .desktop file."), .positional),
                (MCPParameter("command", .strings, "Instead of app: a program and its arguments."), .positional),
                (
                    MCPParameter("wait_window", .number, "Wait up to this many seconds (0.1–3600) for its window."),
                    .option("--wait-window")
                ),
                (json, .flag("--json")),
            ],
            custom: { call in
                if call.string("app") != nil && call.arguments["command"] != nil {
                    throw MCPToolFailure("give app or command, not both")
                }
                return ([], [], nil)
            }),
        MCPCommandTool(
            name: "clipboard", title: "Read or set the clipboard",
            description: """
                get: the clipboard's text (or the PRIMARY selection's); set: put text on it, which stays there for \
                other apps to paste while this server runs. Destructive: set replaces what the user had copied.
                """,
            kind: .input,
            arguments: [
                (MCPParameter("action", .choice(["get", "set"]), "get or set.", required: true), .custom),
                (MCPParameter("text", .string, "With set: the text."), .custom),
                (
                    MCPParameter("primary", .boolean, "The PRIMARY selection (the last text selected) instead."),
                    .flag("--primary")
                ),
                (
                    MCPParameter(
                        "type", .choice(["text/plain", "text/html"]), "The type to get or set (default text/plain)."),
                    .option("--type")
                ),
            ],
            commandFor: { call in ["clipboard", call.string("action") == "set" ? "set" : "get"] },
            custom: { call in
                guard call.string("action") == "set" else {
                    if call.string("text") != nil { throw MCPToolFailure("text goes with action set") }
                    return ([], [], nil)
                }
                guard let text = call.string("text") else { throw MCPToolFailure("action set needs text") }
                return ([], ["-"], Data(text.utf8))  // through stdin, as `clipboard set -`: any text
            }),
        MCPCommandTool(
            name: "apps", title: "List applications",
            description: "Installed applications (.desktop entries): id, name, generic name, command.",
            kind: .read,
            arguments: [
                (MCPParameter("all", .boolean, "Also those not meant for menus."), .flag("--all")),
                (json, .flag("--json")),
            ],
            usesDisplay: false),
    ]
}
