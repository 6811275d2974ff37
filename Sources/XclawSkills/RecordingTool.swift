import Foundation
import XclawAgent
import XclawMessages

/// A tool whose calls act on the screen owns what becomes of them: how its records become replayable steps, how each
/// action it records is done again (`ActionPlayback`), and how a call is drawn on a run report. Static, since a
/// replay, a script export and a report have the records but no session to make the tool with.
public protocol RecordingTool: AgentTool {
    /// The name its records carry (`name` says the same).
    static var toolName: String { get }
    /// Every action its records carry, with how a replay and a script do it again.
    static var playbacks: [RecordedAction: any ActionPlayback] { get }
    /// Completes the step recorded from one of its records, where the record's text means something to a replay
    /// (modifier keys, a button). The default keeps the step as the record made it.
    static func recorded(_ step: inout RecordedStep, from record: ActionRecord)
    /// The marks and caption of one of its calls over the screenshot it was decided on; moves `call.pointer`
    /// where the call left the pointer.
    static func overlay(_ call: inout OverlayCall) -> OverlayAction
    /// Whether a call with this input acts on the screen, so a run keeps the frame it acted on (the computer tool's
    /// screenshot, zoom, cursor_position and wait only look). The default: every call acts.
    static func acts(_ input: JSONValue) -> Bool
}

extension RecordingTool {
    /// The name the model calls it by is the one its records carry.
    public var name: String { Self.toolName }

    /// Most records are the step as they are.
    public static func recorded(_ step: inout RecordedStep, from record: ActionRecord) {}

    /// Most tools act with every call.
    public static func acts(_ input: JSONValue) -> Bool { true }
}

/// The tools that record input actions, and the lookups the replayer, the script export, the step recorder and the
/// report make through them.
public enum RecordingTools {
    /// Every tool that records input actions; a new one is added here.
    public static let all: [any RecordingTool.Type] = [
        ComputerTool.self, TapElementTool.self, FindAndTapTool.self, TapXYTool.self, TypeTextTool.self,
        PressButtonTool.self, ScrollTool.self, SwipeTool.self, LaunchAppTool.self,
    ]

    /// Actions only older records carry, which no tool records any more but a replay still does.
    static let older: [RecordedAction: any ActionPlayback] = [
        .click: ClickPlayback(), .typeText: TypePlayback(exported: false),
    ]

    /// Every action's playback by its name alone, for steps whose tool records it no more (or is unknown): the first
    /// tool in `all` that records it.
    private static let playbacks: [RecordedAction: any ActionPlayback] = all.reduce(into: older) { table, tool in
        table.merge(tool.playbacks) { first, _ in first }
    }

    /// How `action`, recorded by the tool called `tool`, is done again: that tool's own playback of it, else the
    /// playback of whichever tool records the action, else a refusal (`NoPlayback`), so an unknown name from an older
    /// or newer log is refused at replay with its name.
    public static func playback(for action: RecordedAction, tool: String) -> any ActionPlayback {
        self.tool(named: tool)?.playbacks[action] ?? playbacks[action] ?? NoPlayback()
    }

    /// The tool called `name`, when it records input actions.
    public static func tool(named name: String) -> (any RecordingTool.Type)? {
        all.first { $0.toolName == name }
    }
}

extension RecordingTool {
    /// A call with nothing to mark is listed by the tool's name.
    public static func overlay(_ call: inout OverlayCall) -> OverlayAction {
        OverlayAction(marks: [], caption: toolName)
    }
}
