import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawScreen

/// Why the skills could not be set up, with what the user can do about it.
public enum SkillError: ClassifiedError, Equatable {
    /// `--tools` named tools that do not exist.
    case unknownTools([String], valid: [String])
    /// A tool needs a vision model and none was provided.
    case visionUnavailable(String)
    /// Tesseract's English data is missing.
    case ocrDataMissing(searched: [String])

    /// Usage errors for bad tool lists; a missing OCR install is the machine's problem, not the user's input.
    public var exitStatus: ExitStatus {
        switch self {
        case .unknownTools, .visionUnavailable: return .usage
        case .ocrDataMissing: return .internal
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
        }
    }
}

/// What a tool's factory may use: the screen session the tools share, the computer-tool version of the model, the
/// vision asker (nil when no model can be asked) and where the memory tool keeps its notes.
public struct ToolDependencies: Sendable {
    /// The session every screen tool works through.
    public var session: ScreenSession
    /// The computer-use tool version the model was trained on.
    public var computerVersion: ComputerToolVersion
    /// Asks a vision model about a screenshot; nil when none is configured.
    public var vision: VisionAsker?
    /// The memory tool's notes.
    public var memory: any MemoryBackend
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
    /// Works on a display (all but memory), so an agent with it needs a screen session.
    public let needsScreen: Bool
    /// Builds the tool.
    let make: @Sendable (ToolDependencies) throws -> any AgentTool

    init(
        _ name: String, default position: Int? = nil, ocr: Bool = false, vision: Bool = false, screen: Bool = true,
        make: @escaping @Sendable (ToolDependencies) throws -> any AgentTool
    ) {
        self.name = name
        defaultPosition = position
        needsOCR = ocr
        needsVision = vision
        needsScreen = screen
        self.make = make
    }
}

/// The tools, declared once: the catalog, the defaults, `--tools` validation and the help text all come from `table`.
public enum SkillCatalog {
    /// Every tool, in the order `all` offers them and the help lists them.
    public static let table: [ToolEntry] = [
        ToolEntry("computer", default: 0) { ComputerTool(session: $0.session, version: $0.computerVersion) },
        ToolEntry("computer_batch") {
            ComputerBatchTool(computer: ComputerTool(session: $0.session, version: $0.computerVersion))
        },
        ToolEntry("capture_screen", default: 8) { CaptureScreenTool(session: $0.session) },
        ToolEntry("read_screen_text", default: 2, ocr: true) { ReadScreenTextTool(session: $0.session) },
        ToolEntry("screen_snapshot", default: 1, ocr: true) { ScreenSnapshotTool(session: $0.session) },
        ToolEntry("tap_element", default: 3, ocr: true) { TapElementTool(session: $0.session) },
        ToolEntry("tap_xy") { TapXYTool(session: $0.session) },
        ToolEntry("type_text", default: 4) { TypeTextTool(session: $0.session) },
        ToolEntry("swipe") { SwipeTool(session: $0.session) },
        ToolEntry("scroll", default: 6) { ScrollTool(session: $0.session) },
        ToolEntry("press_button", default: 5) { PressButtonTool(session: $0.session) },
        ToolEntry("watch_screen", default: 7, ocr: true) { WatchScreenTool(session: $0.session) },
        ToolEntry("analyze_screen", vision: true) { deps in
            guard let vision = deps.vision else { throw SkillError.visionUnavailable("analyze_screen") }
            return AnalyzeScreenTool(session: deps.session, vision: vision)
        },
        ToolEntry("find_and_tap", ocr: true, vision: true) { deps in
            guard let vision = deps.vision else { throw SkillError.visionUnavailable("find_and_tap") }
            return FindAndTapTool(session: deps.session, vision: vision)
        },
        ToolEntry("memory", default: 9, screen: false) { MemoryTool(backend: $0.memory) },
        // An agent on a bare display has no launcher to click: these open what its task needs.
        ToolEntry("list_apps", default: 10, screen: false) { _ in ListAppsTool() },
        ToolEntry("launch_app", default: 11) { LaunchAppTool(session: $0.session) },
    ]

    /// Every tool this layer offers.
    public static let allToolNames = table.map(\.name)

    /// The safe default: no vision calls of their own (cost), no coordinate-only taps beside the computer tool.
    public static let defaultToolNames = table.filter { $0.defaultPosition != nil }
        .sorted { ($0.defaultPosition ?? 0) < ($1.defaultPosition ?? 0) }.map(\.name)

    /// The tools that read text (need OCR data).
    public static let ocrToolNames = Set(table.filter(\.needsOCR).map(\.name))

    /// The tools that work on a display (all but memory).
    public static let screenToolNames = Set(table.filter(\.needsScreen).map(\.name))

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
        memory: any MemoryBackend = MemoryStore()
    ) throws -> [any AgentTool] {
        var seen = Set<String>()
        let wanted = names.map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty && seen.insert($0).inserted
        }
        let entries = wanted.compactMap(entry)
        guard entries.count == wanted.count else {
            throw SkillError.unknownTools(wanted.filter { entry($0) == nil }, valid: allToolNames)
        }
        if vision == nil, let needy = entries.first(where: \.needsVision) {
            throw SkillError.visionUnavailable(needy.name)
        }
        let deps = ToolDependencies(session: session, computerVersion: computerVersion, vision: vision, memory: memory)
        return try entries.map { try $0.make(deps) }
    }
}
