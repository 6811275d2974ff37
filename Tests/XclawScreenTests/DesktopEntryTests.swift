import Foundation
import XCTest

@testable import XclawScreen

/// Desktop entries as the Desktop Entry Specification writes them: groups, localised keys, escapes, lists, Exec
/// quoting and field codes, and which entries a menu shows. Files only, no display.
final class DesktopEntryTests: XCTestCase {
    private func entry(_ body: String, id: String = "test.desktop") throws -> DesktopEntry {
        try XCTUnwrap(DesktopEntries.parse("[Desktop Entry]\n" + body, id: id, path: "/x/\(id)"))
    }

    func testKeysListsEscapesAndGroups() throws {
        let e = try entry(
            """
            Type=Application
            Name[de]=Rechner
            Name=Calculator
            GenericName=Desk\\sCalculator
            Keywords=math;sum;
            OnlyShowIn=GNOME;Unity;
            Exec=calc
            # a comment
            [Desktop Action New]
            Name=Not this one
            Exec=other
            """)
        XCTAssertEqual(e.name, "Calculator", "the untranslated Name, not Name[de], nor the action's")
        XCTAssertEqual(e.genericName, "Desk Calculator")
        XCTAssertEqual(e.keywords, ["math", "sum"])
        XCTAssertEqual(e.exec, "calc")
        XCTAssertFalse(e.isShown(on: []), "OnlyShowIn another desktop")
        XCTAssertTrue(e.isShown(on: ["GNOME"]))
        XCTAssertNil(DesktopEntries.parse("[Desktop Entry]\nType=Link\nName=Web\nURL=x", id: "l", path: "/l"))
        XCTAssertNil(
            DesktopEntries.parse("[Desktop Entry]\nType=Application\nName=Gone\nHidden=true", id: "h", path: "/h"))
        XCTAssertNil(DesktopEntries.parse("[Other]\nType=Application\nName=X", id: "o", path: "/o"))
        XCTAssertFalse(try entry("Type=Application\nName=N\nNoDisplay=true").isShown(on: []))
    }

    func testExecQuotingAndFieldCodes() throws {
        let cases: [(String, [String])] = [
            ("xterm %U", ["xterm"]),
            (
                "\"/opt/My App/run\" --title \"A \\\"quoted\\\" name\" %f",
                ["/opt/My App/run", "--title", "A \"quoted\" name"]
            ),
            ("app --progress=100%% --file=%f -x", ["app", "--progress=100%", "--file=", "-x"]),
            ("  spaced   out  ", ["spaced", "out"]),
            ("app \"\" end", ["app", "", "end"]),
        ]
        for (exec, expected) in cases {
            XCTAssertEqual(
                try DesktopEntries.command(try entry("Type=Application\nName=N\nExec=\(exec)")), expected, exec)
        }
        for bad in ["\"unclosed", "%U", ""] {
            XCTAssertThrowsError(try DesktopEntries.command(try entry("Type=Application\nName=N\nExec=\(bad)")), bad) {
                XCTAssertEqual(($0 as? AppError)?.exitStatus, .usage)
            }
        }
        // A terminal program runs in a terminal.
        let vim = try entry("Type=Application\nName=Vim\nTerminal=true\nExec=vim %F")
        let command = try DesktopEntries.command(vim, environment: ["PATH": "/usr/bin:/bin"])
        XCTAssertEqual(Array(command.suffix(2)), ["-e", "vim"])
        XCTAssertTrue(command[0].hasSuffix("xterm") || command[0].hasSuffix("x-terminal-emulator"), "\(command)")
    }

    func testActionsAreTheGroupsActionsListsInItsOrder() throws {
        let e = try entry(
            """
            Type=Application
            Name=Browser
            Exec=browser %u
            Actions=private;new-window;no-group;nameless;
            [Desktop Action new-window]
            Name=New Window
            Name[fr]=Nouvelle fenêtre
            Exec=browser --new-window %u
            [Desktop Action private]
            Name=New Private Window
            Icon=private-browsing
            Exec=browser --private "%U"
            [Desktop Action nameless]
            Exec=browser --nameless
            [Desktop Action unlisted]
            Name=Unlisted
            Exec=browser --unlisted
            [Desktop Action new-window]
            Name=A repeated group is ignored
            """)
        XCTAssertEqual(
            e.actions,
            [
                DesktopAction(
                    id: "private", name: "New Private Window", icon: "private-browsing",
                    exec: "browser --private \"%U\""),
                DesktopAction(id: "new-window", name: "New Window", icon: nil, exec: "browser --new-window %u"),
            ])
        XCTAssertEqual(e.exec, "browser %u", "the entry's own Exec, not an action's")
        // An action's Exec, its field codes filled by the targets (none: dropped, as before).
        XCTAssertEqual(
            try DesktopEntries.command(e, action: e.actions[1], targets: ["https://a.example"]),
            ["browser", "--new-window", "https://a.example"])
        XCTAssertEqual(try DesktopEntries.command(e, action: e.actions[1]), ["browser", "--new-window"])
        XCTAssertEqual(
            try DesktopEntries.command(e, action: e.actions[0], targets: ["a", "b"]),
            ["browser", "--private", "a", "b"],
            "a quoted %U is still a whole argument")
        XCTAssertEqual(
            try DesktopEntries.command(
                try entry("Type=Application\nName=N\nExec=app --file=%f --all %F"), targets: ["x"]),
            ["app", "--file=x", "--all", "x"])
        XCTAssertThrowsError(
            try DesktopEntries.command(e, action: DesktopAction(id: "bare", name: "Bare", icon: nil, exec: nil))
        ) { XCTAssertEqual(($0 as? AppError)?.exitStatus, .usage) }
    }

    func testDirectoriesPrecedenceAndLookUp() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-apps-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        func write(_ dir: String, _ file: String, _ body: String) throws {
            let url = root.appendingPathComponent(dir).appendingPathComponent("applications").appendingPathComponent(
                file)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try ("[Desktop Entry]\nType=Application\n" + body).write(to: url, atomically: true, encoding: .utf8)
        }
        try write("home", "editor.desktop", "Name=My Editor\nGenericName=Text Editor\nExec=ed-home")
        try write("sys", "editor.desktop", "Name=System Editor\nExec=ed-sys")  // hidden by the home one (same id)
        try write("sys", "vendor/tool.desktop", "Name=Tool\nExec=tool")  // id vendor-tool.desktop
        try write("sys", "a.desktop", "Name=Twin\nExec=a")
        try write("sys", "b.desktop", "Name=twin\nExec=b")
        try write("home", "gone.desktop", "Name=Gone\nHidden=true\nExec=g")
        try write("sys", "gone.desktop", "Name=Gone\nExec=g")  // hidden for this user by the home file
        let env = [
            "XDG_DATA_HOME": root.appendingPathComponent("home").path,
            "XDG_DATA_DIRS": root.appendingPathComponent("sys").path,
        ]
        let all = DesktopEntries.all(environment: env)
        XCTAssertEqual(all.map(\.id).sorted(), ["a.desktop", "b.desktop", "editor.desktop", "vendor-tool.desktop"])
        XCTAssertEqual(all.first { $0.id == "editor.desktop" }?.exec, "ed-home")
        XCTAssertEqual(try DesktopEntries.find("vendor-tool", environment: env).name, "Tool")
        XCTAssertEqual(try DesktopEntries.find("my editor", environment: env).id, "editor.desktop")
        XCTAssertEqual(try DesktopEntries.find("Text Editor", environment: env).id, "editor.desktop")
        XCTAssertThrowsError(try DesktopEntries.find("twin", environment: env)) {
            XCTAssertEqual($0 as? AppError, .ambiguous("twin", candidates: ["a.desktop", "b.desktop"]))
        }
        XCTAssertThrowsError(try DesktopEntries.find("Gone", environment: env)) {
            guard case .notFound? = $0 as? AppError else { return XCTFail("\($0)") }
        }
    }
}
