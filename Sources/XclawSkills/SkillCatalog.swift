import Foundation
import XclawAgent
import XclawBase
import XclawScreen
import XclawMessages

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
            return "unknown tool name\(names.count == 1 ? "" : "s") \(names.map { "\"\($0)\"" }.joined(separator: ", ")); "
                + "valid names: \(valid.joined(separator: ", "))"
        case .visionUnavailable(let tool):
            return "\(tool) needs a vision model to ask, and none is configured; leave \(tool) out of the tool list "
                + "or run with a Claude client"
        case .ocrDataMissing(let searched):
            return "tesseract's English OCR data (eng.traineddata) is missing (looked in \(searched.joined(separator: ", "))); "
                + "install it with scripts/install-deps.sh or `apt-get install tesseract-ocr-eng`, or set "
                + "TESSDATA_PREFIX to the directory holding eng.traineddata"
        }
    }
}

/// The names of the screen tools and how to build them, for `--tools` and the agent's setup.
public enum SkillCatalog {
    /// Every tool this layer offers.
    public static let allToolNames = [
        "computer", "capture_screen", "read_screen_text", "screen_snapshot", "tap_element", "tap_xy", "type_text",
        "swipe", "scroll", "press_button", "watch_screen", "analyze_screen", "find_and_tap", "memory",
    ]

    /// The safe default: no vision calls of their own (cost), no coordinate-only taps beside the computer tool.
    public static let defaultToolNames = [
        "computer", "screen_snapshot", "read_screen_text", "tap_element", "type_text", "press_button", "scroll",
        "watch_screen", "capture_screen", "memory",
    ]

    /// The tools that read text (need OCR data).
    public static let ocrToolNames: Set<String> = [
        "read_screen_text", "screen_snapshot", "tap_element", "watch_screen", "find_and_tap",
    ]

    /// Builds the named tools in the order given (duplicates dropped). Unknown names, and vision tools without a
    /// `vision` asker, are refused before anything is built.
    public static func tools(named names: [String], session: ScreenSession,
                             computerVersion: ComputerToolVersion = .v20250124, vision: VisionAsker? = nil,
                             memory: any MemoryBackend = MemoryStore()) throws -> [any AgentTool] {
        var seen = Set<String>()
        let wanted = names.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && seen.insert($0).inserted }
        let unknown = wanted.filter { !allToolNames.contains($0) }
        guard unknown.isEmpty else { throw SkillError.unknownTools(unknown, valid: allToolNames) }
        return try wanted.map { name -> any AgentTool in
            switch name {
            case "computer": return ComputerTool(session: session, version: computerVersion)
            case "capture_screen": return CaptureScreenTool(session: session)
            case "read_screen_text": return ReadScreenTextTool(session: session)
            case "screen_snapshot": return ScreenSnapshotTool(session: session)
            case "tap_element": return TapElementTool(session: session)
            case "tap_xy": return TapXYTool(session: session)
            case "type_text": return TypeTextTool(session: session)
            case "swipe": return SwipeTool(session: session)
            case "scroll": return ScrollTool(session: session)
            case "press_button": return PressButtonTool(session: session)
            case "watch_screen": return WatchScreenTool(session: session)
            case "memory": return MemoryTool(backend: memory)
            case "analyze_screen":
                guard let vision else { throw SkillError.visionUnavailable(name) }
                return AnalyzeScreenTool(session: session, vision: vision)
            case "find_and_tap":
                guard let vision else { throw SkillError.visionUnavailable(name) }
                return FindAndTapTool(session: session, vision: vision)
            default:
                throw SkillError.unknownTools([name], valid: allToolNames)
            }
        }
    }
}
