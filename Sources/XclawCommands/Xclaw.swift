import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawScreen

/// The root command: `xclaw-core`'s main runs it, and the tests parse with it in-process.
package struct Xclaw: ParsableCommand {
    /// The subcommands in the order `--help` lists them, and the exit-status legend every help page ends with.
    package static let configuration = CommandConfiguration(
        commandName: "xclaw",
        abstract:
            "Desktop automation for Linux/X11: capture, input, windows, OCR and accessibility snapshots, find and tap "
            + "by label, watch conditions, and Claude agents that drive the screen.",
        discussion: ExitStatus.legend + """

            Examples:
              xclaw display start --size 1920x1080  # a private display; prints its name, e.g. :1
              xclaw tap Save --window Editor --display :1
            """,
        version: "0.1.0",
        subcommands: [
            DisplayCommand.self, Capture.self, PixelCommand.self,
            Move.self, Click.self, MouseDown.self, MouseUp.self, Drag.self, Scroll.self, Key.self, TypeText.self,
            KeyDown.self, KeyUp.self, ReleaseAll.self, Cursor.self, Windows.self, Active.self, Activate.self,
            WindowCommand.self, DesktopCommand.self, ClipboardCommand.self, Monitors.self, Apps.self, Launch.self,
            Ocr.self, SnapshotCommand.self, Tree.self, Find.self, Tap.self, Watch.self, WaitStable.self, Run.self,
            Models.self,
            Notify.self, MediaCommand.self,
            AgentCommand.self, Agents.self, Send.self, Chat.self, History.self, Export.self, UsageCommand.self,
            MemoryCommand.self,
            ScheduleCommand.self, Runs.self, ReportCommand.self, ScriptCommand.self, Replay.self, Stop.self,
            Approve.self, Deny.self, Approvals.self, PipelineCommand.self, FleetCommand.self, DatabaseCommand.self,
            DaemonCommand.self, MCPCommand.self, Bench.self, KeymapRestore.self, InputRestore.self, ClipboardServe.self,
            CalendarCommand.self, ContactsCommand.self,
            ShortcutsCommand.self, ShortcutCommand.self, OpenCommand.self, UnitsCommand.self, UnitCommand.self,
        ]
    )

    /// ArgumentParser makes the root through this; nothing else does.
    package init() {}
}

extension Xclaw: RewritesArguments {
    /// `launch --wait-window` without a number waits the default 10 s.
    package static func rewrite(_ arguments: [String]) -> [String] {
        arguments.first == "launch" ? Launch.normalize(arguments) : arguments
    }
}
