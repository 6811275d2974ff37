import Foundation

/// A home of a test's own for the desktop's services: shortcuts of both kinds (scripts in
/// `$XDG_CONFIG_HOME/xclaw/shortcuts/` and an application whose `.desktop` file has actions, in
/// `$XDG_DATA_HOME/applications/`), and a default handler for the `xclawtest:` URI scheme and for `text/plain` files
/// in the test's `mimeapps.list` (nothing comes from the machine's data directories). Each script, action and
/// handler leaves a trace in `directory` the tests read.
public final class TestDesktopHome: @unchecked Sendable {
    /// The temporary directory holding it all; removed by `remove()`.
    public let directory: URL
    /// HOME, XDG_CONFIG_HOME, XDG_DATA_HOME (applications) and XDG_DATA_DIRS (empty) under `directory`, PATH.
    public let environment: [String: String]
    /// `$XDG_CONFIG_HOME/xclaw/shortcuts`.
    public let scripts: URL
    /// `$XDG_DATA_HOME/applications`.
    public let applications: URL

    /// The application's name and desktop id.
    public static let application = (name: "Probe Browser", id: "xclaw-probe.desktop")
    /// The file the "New Window" action appends its arguments and `DISPLAY` to, one a line.
    public var actionTrace: URL { directory.appendingPathComponent("action.trace") }
    /// The file the default handler appends each argument it was given to, one a line.
    public var openTrace: URL { directory.appendingPathComponent("open.trace") }
    /// The file `backup-notes` writes its working directory to.
    public var backupTrace: URL { directory.appendingPathComponent("backup.trace") }
    /// The files `slow` writes its own pid and its child's (`sleep 30`) to.
    public var slowPIDs: (script: URL, child: URL) {
        (directory.appendingPathComponent("slow.pid"), directory.appendingPathComponent("slow.child"))
    }

    /// Writes the standard shortcuts: `backup-notes.sh`, `shout.sh` (input in, output out), `fails.sh` (exit 3),
    /// `slow.sh` (prints, then sleeps in a child), `draft.sh` (not executable), a hidden file and an editor backup
    /// (not shortcuts); and Probe Browser with its actions "New Window" (a script that records its arguments) and
    /// "Terminal Here" (an xterm titled "xclaw probe" and its input).
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-shortcuts-\(UUID().uuidString.prefix(8))")
        let home = directory.appendingPathComponent("home")
        let config = directory.appendingPathComponent("config")
        let data = directory.appendingPathComponent("data")
        scripts = config.appendingPathComponent("xclaw/shortcuts")
        applications = data.appendingPathComponent("applications")
        for url in [home, scripts, applications, directory.appendingPathComponent("nodata")] {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        environment = [
            "HOME": home.path, "XDG_CONFIG_HOME": config.path, "XDG_DATA_HOME": data.path,
            "XDG_DATA_DIRS": directory.appendingPathComponent("nodata").path, "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
        ]
        let dir = directory.path
        try script(
            "backup-notes.sh",
            "#!/bin/sh\n\n# Backs up the notes folder\n# (a second comment line is not the description)\n"
                + "pwd > '\(dir)/backup.trace'\necho 'backed up 3 notes'\n")
        try script(
            "shout.sh",
            "#!/bin/sh\n# Shouts its input back\ntext=$(cat)\nprintf '%s\\n' \"$text\" | tr a-z A-Z\n"
                + "echo \"shouted ${#text} characters\" >&2\necho done\n")
        try script("fails.sh", "#!/bin/sh\n# Always fails\necho 'about to fail' >&2\nexit 3\n")
        try script(
            "slow.sh",
            "#!/bin/sh\n# Takes its time\necho $$ > '\(dir)/slow.pid'\necho started\nsleep 30 &\n"
                + "echo $! > '\(dir)/slow.child'\nwait\necho never\n")
        try script("draft.sh", "#!/bin/sh\n# Not ready yet\necho draft\n", executable: false)
        try script(".hidden.sh", "#!/bin/sh\necho hidden\n")
        try script("backup-notes.sh~", "#!/bin/sh\necho backup\n")

        let probe = directory.appendingPathComponent("probe-action").path
        try
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> '\(dir)/action.trace'; done\necho \"DISPLAY=$DISPLAY\" >> '\(dir)/action.trace'\n"
            .write(toFile: probe, atomically: true, encoding: .utf8)
        chmod(probe, 0o755)
        try """
        [Desktop Entry]
        Type=Application
        Name=\(Self.application.name)
        Comment=Browses probes
        Exec=\(probe) main
        Actions=new-window;terminal-here;missing;

        [Desktop Action new-window]
        Name=New Window
        Exec=\(probe) new-window %u

        [Desktop Action terminal-here]
        Name=Terminal Here
        Exec=xterm -T "xclaw probe %u"

        [Desktop Action unlisted]
        Name=Not Listed In Actions
        Exec=\(probe) unlisted
        """.write(
            to: applications.appendingPathComponent(Self.application.id), atomically: true, encoding: .utf8)
    }

    /// Installs the default handler of `xclawtest:` URIs and `text/plain` files (`$XDG_CONFIG_HOME/mimeapps.list`):
    /// an application whose Exec records its arguments in `openTrace`.
    public func installOpenHandler() throws {
        let handler = directory.appendingPathComponent("open-handler").path
        try "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> '\(openTrace.path)'; done\n"
            .write(toFile: handler, atomically: true, encoding: .utf8)
        chmod(handler, 0o755)
        // xdg-open's own Exec reader (no desktop environment) splits on spaces: no quoting in this line.
        try """
        [Desktop Entry]
        Type=Application
        Name=Xclaw Test Handler
        Exec=\(handler) %u
        MimeType=x-scheme-handler/xclawtest;text/plain;
        NoDisplay=true
        """.write(
            to: applications.appendingPathComponent("xclawtest-handler.desktop"), atomically: true, encoding: .utf8)
        try """
        [Default Applications]
        x-scheme-handler/xclawtest=xclawtest-handler.desktop
        text/plain=xclawtest-handler.desktop
        """.write(
            toFile: environment["XDG_CONFIG_HOME"]! + "/mimeapps.list", atomically: true, encoding: .utf8)
    }

    /// Writes a script (executable unless said otherwise) into the shortcuts directory; its path.
    @discardableResult
    public func script(_ file: String, _ body: String, executable: Bool = true) throws -> String {
        let path = scripts.appendingPathComponent(file).path
        try body.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, executable ? 0o755 : 0o644)
        return path
    }

    /// A pid a script wrote to `file`.
    public func pid(in file: URL) -> pid_t? {
        (try? String(contentsOf: file, encoding: .utf8)).flatMap {
            pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// The processes of group `group` that still run (zombies left out: an orphan killed with its group stays one
    /// until init reaps it, seconds later), from /proc.
    public static func liveMembers(ofGroup group: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pid in
            // "pid (comm) STATE ppid pgrp …": the command may hold spaces and parentheses.
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 2 && fields[0] != "Z" && fields[0] != "X" && pid_t(fields[2]) == group
        }
    }

    /// Removes the directory.
    public func remove() { try? FileManager.default.removeItem(at: directory) }
}
