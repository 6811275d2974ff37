import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawPerception
import XclawScreen

/// The screen skill: the computer tool and the custom screen tools over one session, with the prerequisites
/// (a reachable display, OCR data) checked before a run instead of failing in the middle of a task.
public struct ScreenSkill: Skill {
    /// The session the tools share.
    public let session: ScreenSession
    /// The tools, in the order they are offered.
    public let tools: [any AgentTool]

    /// The skill's name, for `--tools` and messages.
    public var name: String { "screen" }

    /// Builds the named tools over `session` (see `SkillCatalog.tools`).
    public init(
        session: ScreenSession, toolNames: [String] = SkillCatalog.defaultToolNames,
        computerVersion: ComputerToolVersion = .v20250124, vision: VisionAsker? = nil,
        memory: any MemoryBackend = MemoryStore()
    ) throws {
        self.session = session
        tools = try SkillCatalog.tools(
            named: toolNames, session: session, computerVersion: computerVersion,
            vision: vision, memory: memory)
    }

    /// Checks that the display still answers and, when a tool reads text, that tesseract's English data is there.
    public func setup() throws {
        guard session.connection.isAlive else { throw ScreenError.displayLost(session.connection.name) }
        _ = try session.connection.screenSize()
        if tools.contains(where: { SkillCatalog.ocrToolNames.contains($0.name) }) {
            _ = try Self.requireOCRData()
        }
    }

    /// Opens `display` (nil: `$DISPLAY`) once, for a check before a session exists; the error names
    /// `xclaw display start` when there is no display.
    public static func checkDisplay(_ display: String?) throws {
        _ = try DisplayConnection(name: display).screenSize()
    }

    /// Where tesseract will find `eng.traineddata`, as `OCREngine` loads it: `TESSDATA_PREFIX` (the directory
    /// itself, or its `tessdata` subdirectory) when set, else the distribution's built-in locations.
    public static func requireOCRData() throws -> String {
        var candidates: [String] = []
        if let prefix = Invocation.current.environment["TESSDATA_PREFIX"], !prefix.isEmpty {
            candidates = [prefix, (prefix as NSString).appendingPathComponent("tessdata")]
        } else {
            candidates = [
                "/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata",
                "/usr/share/tessdata", "/usr/local/share/tessdata", "/usr/local/share/tesseract-ocr/tessdata",
            ]
        }
        for dir in candidates {
            let file = (dir as NSString).appendingPathComponent("eng.traineddata")
            if FileManager.default.isReadableFile(atPath: file) { return file }
        }
        throw SkillError.ocrDataMissing(searched: candidates)
    }
}
