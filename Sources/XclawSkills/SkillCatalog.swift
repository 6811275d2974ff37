import Foundation
import XclawAgent
import XclawBase
import XclawClient
import XclawMessages
import XclawScreen
import XclawServices

/// Why the skills could not be set up, with what the user can do about it.
public enum SkillError: ClassifiedError, Equatable {
    /// `--tools` named tools that do not exist.
    case unknownTools([String], valid: [String])
    /// A tool needs a vision model and none was provided.
    case visionUnavailable(String)
    /// Tesseract's English data is missing.
    case ocrDataMissing(searched: [String])
    /// A screen tool was built without a screen session.
    case noScreen(String)
    /// `dbus_call` was asked for with an empty allow-list: it could call nothing.
    case noBusAllowList

    /// Usage errors for bad tool lists; a missing OCR install is the machine's problem, not the user's input.
    public var exitStatus: ExitStatus {
        switch self {
        case .unknownTools, .visionUnavailable, .noBusAllowList: return .usage
        case .ocrDataMissing, .noScreen: return .internal
        }
    }

    /// The message, saying what to change or install.
    public var description: String {
        switch self {
        case .unknownTools(let names, let valid):
            return
                "unknown tool name\(names.count == 1 ? "" : "s") \(names.map { "\"\($0)\"" }.joined(separator: ", ")); "
                + "valid names: \(valid.joined(separator: ", "))"
        case .visionUnavailable(let tool):
            return "\(tool) needs a vision model to ask, and none is configured; leave \(tool) out of the tool list "
                + "or run with a Claude client"
        case .ocrDataMissing(let searched):
            return
                "tesseract's English OCR data (eng.traineddata) is missing (looked in \(searched.joined(separator: ", "))); "
                + "install it with scripts/install-deps.sh or `apt-get install tesseract-ocr-eng`, or set "
                + "TESSDATA_PREFIX to the directory holding eng.traineddata"
        case .noScreen(let tool):
            return "\(tool) works on a screen, and it was built without a screen session (a bug: please report it)"
        case .noBusAllowList:
            return "dbus_call may call only the bus names its agent allows, and none are: name them with "
                + "--dbus-allow (e.g. --dbus-allow org.mpris.MediaPlayer2.*), or leave dbus_call out of the tool list"
        }
    }
}

/// What a tool's factory may use: the screen session the tools share (nil when only tools that need no screen are
/// built), the computer-tool version of the model, the vision asker (nil when no model can be asked), where the memory
/// tool keeps its notes and how the web tools reach the web.
public struct ToolDependencies: Sendable {
    /// The session every screen tool works through; nil for an agent without screen tools.
    public var session: ScreenSession?
    /// The computer-use tool version the model was trained on.
    public var computerVersion: ComputerToolVersion
    /// Asks a vision model about a screenshot; nil when none is configured.
    public var vision: VisionAsker?
    /// The memory tool's notes.
    public var memory: any MemoryBackend
    /// The web tools' key, limits and private-address policy.
    public var web: WebConfiguration
    /// The bus names `dbus_call` may reach (the agent's `--dbus-allow`); empty: it cannot be built.
    public var busAllow: BusAllowList

    /// Dependencies for building tools; without a session only the tools that need no screen can be built.
    public init(
        session: ScreenSession?, computerVersion: ComputerToolVersion = .v20250124, vision: VisionAsker? = nil,
        memory: any MemoryBackend = MemoryStore(), web: WebConfiguration = WebConfiguration(),
        busAllow: BusAllowList = BusAllowList()
    ) {
        self.busAllow = busAllow
        self.session = session
        self.computerVersion = computerVersion
        self.vision = vision
        self.memory = memory
        self.web = web
    }
}

/// One row of the tool table: everything xclaw knows about a tool before building it.
public struct ToolEntry: Sendable {
    /// The name the model and `--tools` use.
    public let name: String
    /// Where the tool stands in the safe default set (nil: not in it); the default set is offered in this order.
    public let defaultPosition: Int?
    /// Reads text, so tesseract's English data must be installed.
    public let needsOCR: Bool
    /// Asks a vision model of its own (costs a request per use).
    public let needsVision: Bool
    /// Works on a display (all but the `offScreen` rows), so an agent with it needs a screen session.
    public let needsScreen: Bool
    /// Reaches the web, so its configuration (the Brave key, the private-address policy) is read for it.
    public let needsWeb: Bool
    /// Builds the tool.
    let make: @Sendable (ToolDependencies) throws -> any AgentTool

    /// A tool that works on a display: its factory gets the session.
    init(
        _ name: String, default position: Int? = nil, ocr: Bool = false, vision: Bool = false,
        make: @escaping @Sendable (ScreenSession, ToolDependencies) throws -> any AgentTool
    ) {
        self.name = name
        defaultPosition = position
        needsOCR = ocr
        needsVision = vision
        needsScreen = true
        needsWeb = false
        self.make = { deps in
            guard let session = deps.session else { throw SkillError.noScreen(name) }
            return try make(session, deps)
        }
    }

    /// A tool that needs no display (memory, the application list, the web tools).
    init(
        offScreen name: String, default position: Int? = nil, web: Bool = false,
        make: @escaping @Sendable (ToolDependencies) throws -> any AgentTool
    ) {
        self.name = name
        defaultPosition = position
        needsOCR = false
        needsVision = false
        needsScreen = false
        needsWeb = web
        self.make = make
    }
}

/// The tools, declared once: the catalog, the defaults, `--tools` validation and the help text all come from `table`.
public enum SkillCatalog {
    /// Every tool, in the order `all` offers them and the help lists them.
    public static let table: [ToolEntry] = [
        ToolEntry("computer", default: 0) { ComputerTool(session: $0, version: $1.computerVersion) },
        ToolEntry("computer_batch") {
            ComputerBatchTool(computer: ComputerTool(session: $0, version: $1.computerVersion))
        },
        ToolEntry("capture_screen", default: 8) { session, _ in CaptureScreenTool(session: session) },
        ToolEntry("read_screen_text", default: 2, ocr: true) { session, _ in ReadScreenTextTool(session: session) },
        ToolEntry("screen_snapshot", default: 1, ocr: true) { session, _ in ScreenSnapshotTool(session: session) },
        ToolEntry("tap_element", default: 3, ocr: true) { session, _ in TapElementTool(session: session) },
        ToolEntry("tap_xy") { session, _ in TapXYTool(session: session) },
        ToolEntry("type_text", default: 4) { session, _ in TypeTextTool(session: session) },
        ToolEntry("swipe") { session, _ in SwipeTool(session: session) },
        ToolEntry("scroll", default: 6) { session, _ in ScrollTool(session: session) },
        ToolEntry("press_button", default: 5) { session, _ in PressButtonTool(session: session) },
        ToolEntry("watch_screen", default: 7, ocr: true) { session, _ in WatchScreenTool(session: session) },
        ToolEntry("analyze_screen", vision: true) { session, deps in
            guard let vision = deps.vision else { throw SkillError.visionUnavailable("analyze_screen") }
            return AnalyzeScreenTool(session: session, vision: vision)
        },
        ToolEntry("find_and_tap", ocr: true, vision: true) { session, deps in
            guard let vision = deps.vision else { throw SkillError.visionUnavailable("find_and_tap") }
            return FindAndTapTool(session: session, vision: vision)
        },
        ToolEntry(offScreen: "memory", default: 9) { MemoryTool(backend: $0.memory) },
        // An agent on a bare display has no launcher to click: these open what its task needs.
        ToolEntry(offScreen: "list_apps", default: 10) { _ in ListAppsTool() },
        ToolEntry("launch_app", default: 11) { session, _ in LaunchAppTool(session: session) },
        ToolEntry("clipboard") { session, _ in ClipboardTool(session: session) },
        // The desktop's services (docs/services.md): media players, notifications, named automations, calendar and
        // contacts, opening files and URIs, the user's systemd units. No screen, and the model is told to prefer them
        // to it when they fit.
        ToolEntry(offScreen: "media", default: 12) { _ in MediaTool() },
        ToolEntry(offScreen: "notifications", default: 13) { _ in NotificationsTool() },
        ToolEntry(offScreen: "list_shortcuts", default: 14) { _ in ListShortcutsTool() },
        ToolEntry(offScreen: "run_shortcut", default: 15) { RunShortcutTool(display: $0.session?.connection.name) },
        ToolEntry(offScreen: "calendar", default: 16) { _ in CalendarTool() },
        ToolEntry(offScreen: "contacts", default: 17) { _ in ContactsTool() },
        ToolEntry(offScreen: "open", default: 18) { OpenTool(display: $0.session?.connection.name) },
        ToolEntry(offScreen: "user_units", default: 19) { _ in UserUnitsTool() },
        // Not in the default set: they reach the Internet (and Brave's API costs per search), which a screen agent's
        // task rarely needs; `--tools` or an agent's tool list names them.
        ToolEntry(offScreen: "web_search", web: true) { WebSearchTool(search: BraveSearch(configuration: $0.web)) },
        ToolEntry(offScreen: "fetch_url", web: true) { FetchURLTool(fetcher: WebFetcher(configuration: $0.web)) },
        // Off by default, and only to the bus names the agent allows: a generic call can do anything a service can.
        ToolEntry(offScreen: "dbus_call") { deps in
            guard !deps.busAllow.isEmpty else { throw SkillError.noBusAllowList }
            return DBusCallTool(caller: GuardedBusCall(allow: deps.busAllow))
        },
    ]

    /// Every tool this layer offers.
    public static let allToolNames = table.map(\.name)

    /// The safe default: no vision calls of their own (cost), no coordinate-only taps beside the computer tool.
    public static let defaultToolNames = table.filter { $0.defaultPosition != nil }
        .sorted { ($0.defaultPosition ?? 0) < ($1.defaultPosition ?? 0) }.map(\.name)

    /// The tools that read text (need OCR data).
    public static let ocrToolNames = Set(table.filter(\.needsOCR).map(\.name))

    /// The tools that work on a display (all but memory, list_apps and the web tools).
    public static let screenToolNames = Set(table.filter(\.needsScreen).map(\.name))

    /// The tools that act through the desktop's services rather than the screen (the system prompt's "services
    /// first" rule is given to agents that have one).
    public static let serviceToolNames: Set<String> = Set(
        [
            "media", "notifications", "list_shortcuts", "run_shortcut", "calendar", "contacts", "open", "user_units",
            "dbus_call",
        ].filter { name in table.contains { $0.name == name } })

    /// The tools that reach the web.
    public static let webToolNames = Set(table.filter(\.needsWeb).map(\.name))

    /// The row of `name`, if there is one.
    public static func entry(_ name: String) -> ToolEntry? { table.first { $0.name == name } }

    /// The tool names a `--tools` value selects: nil is the safe default set, `all` every tool, else a comma-separated
    /// list (blanks dropped); unknown names are refused with the valid ones.
    public static func select(_ spec: String?) throws -> [String] {
        guard let spec else { return defaultToolNames }
        if spec == "all" { return allToolNames }
        let names = spec.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let unknown = names.filter { entry($0) == nil }
        guard unknown.isEmpty else { throw SkillError.unknownTools(unknown, valid: allToolNames) }
        return names
    }

    /// Builds the named tools in the order given (duplicates dropped). Unknown names, and vision tools without a
    /// `vision` asker, are refused before anything is built.
    public static func tools(
        named names: [String], session: ScreenSession,
        computerVersion: ComputerToolVersion = .v20250124, vision: VisionAsker? = nil,
        memory: any MemoryBackend = MemoryStore(), web: WebConfiguration = WebConfiguration(),
        busAllow: BusAllowList = BusAllowList()
    ) throws -> [any AgentTool] {
        try tools(
            named: names,
            dependencies: ToolDependencies(
                session: session, computerVersion: computerVersion, vision: vision, memory: memory, web: web,
                busAllow: busAllow))
    }

    /// Builds the named tools from `dependencies` in the order given (duplicates dropped); without a session, only
    /// tools that need no screen. Unknown names, and vision tools without an asker, are refused before anything is
    /// built.
    public static func tools(named names: [String], dependencies deps: ToolDependencies) throws -> [any AgentTool] {
        var seen = Set<String>()
        let wanted = names.map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty && seen.insert($0).inserted
        }
        let entries = wanted.compactMap(entry)
        guard entries.count == wanted.count else {
            throw SkillError.unknownTools(wanted.filter { entry($0) == nil }, valid: allToolNames)
        }
        if deps.vision == nil, let needy = entries.first(where: \.needsVision) {
            throw SkillError.visionUnavailable(needy.name)
        }
        return try entries.map { try $0.make(deps) }
    }
}
