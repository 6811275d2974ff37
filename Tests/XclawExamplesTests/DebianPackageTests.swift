import Foundation
import XCTest
import XclawTesting

/// The Debian package as `scripts/package-deb.sh` makes it, from the binaries this test bundle was built with: what
/// it holds (layout, man pages that groff reads without a warning, completions that name `xclaw`, the unit, the
/// control fields), and what apt does with it (`scripts/try-deb.sh`): installed into overlays of this system in a
/// private mount namespace with the Swift toolchain hidden, the demo run from its installed copy against
/// /usr/bin/xclaw, then purged with nothing of it left. The test build links the Swift runtime dynamically, so the
/// script copies that runtime into /usr/lib/xclaw (`--bundle-swift-runtime`); a release package links it in and is
/// otherwise the same package, made by the same script.
final class DebianPackageTests: XCTestCase {
    /// The package, made once for the class; nil (with the reason) when the script failed.
    private nonisolated(unsafe) static var built: (deb: URL?, failure: String?) = (nil, nil)
    private nonisolated(unsafe) static var workDirectory: URL?

    override class func setUp() {
        super.setUp()
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-deb-test-\(getpid())")
        try? FileManager.default.removeItem(at: work)
        workDirectory = work
        do {
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            let result = try Command.run(
                [
                    "bash", repository.appendingPathComponent("scripts/package-deb.sh").path, "--from",
                    productsDirectory.path,
                    "--bundle-swift-runtime", "--compression", "none", "--out", work.path,
                ],
                in: work, environment: ["TMPDIR": work.path])
            let path = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            built =
                result.status == 0 && path.hasSuffix(".deb")
                ? (URL(fileURLWithPath: path), nil)
                : (nil, "package-deb.sh exited \(result.status), stdout \(result.stdout):\n\(result.stderr)")
        } catch {
            built = (nil, "could not run package-deb.sh: \(error)")
        }
    }

    override class func tearDown() {
        if let work = workDirectory { try? FileManager.default.removeItem(at: work) }
        super.tearDown()
    }

    /// The package file, or an error that fails the test with the script's output.
    private func package() throws -> URL {
        if let deb = Self.built.deb { return deb }
        throw NoPackage(reason: Self.built.failure ?? "no package")
    }

    /// The class's package could not be made; every test fails with why.
    private struct NoPackage: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// A fresh directory under the class's work directory.
    private func directory(_ name: String) throws -> URL {
        let url = try XCTUnwrap(Self.workDirectory).appendingPathComponent(name)
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func testTheControlFieldsNameTheLibrariesTheOCRDataAndTheVersionOfTheBinaries() throws {
        let deb = try package()
        let work = try XCTUnwrap(Self.workDirectory)
        let field = { (name: String) throws -> String in
            try Command.run(["dpkg-deb", "-f", deb.path, name], in: work).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let version = try Command.run(
            [productsDirectory.appendingPathComponent("xclaw-core").path, "--version"], in: work
        )
        .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let arch = try Command.run(["dpkg", "--print-architecture"], in: work).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try field("Package"), "xclaw")
        XCTAssertEqual(try field("Version"), "\(version)-1")
        XCTAssertEqual(try field("Architecture"), arch)
        XCTAssertEqual(deb.lastPathComponent, "xclaw_\(version)-1_\(arch).deb")
        let depends = try field("Depends").split(separator: ",").map {
            String($0.trimmingCharacters(in: .whitespaces).split(separator: " ")[0])
        }
        // What xclaw-core, the front and the helper link, found by dpkg-shlibdeps, and the English OCR data.
        for name in [
            "libc6", "libx11-6", "libxtst6", "libtesseract5", "libcurl4", "libsqlite3-0", "libpq5",
            "libatspi2.0-0", "tesseract-ocr-eng",
        ] {
            XCTAssertTrue(depends.contains(name), "Depends lacks \(name): \(depends)")
        }
        XCTAssertFalse(depends.contains { $0.contains("swift") }, "a Swift toolchain package in Depends: \(depends)")
        let recommends = try field("Recommends")
        for name in ["xvfb", "dbus-daemon", "at-spi2-core", "fonts-dejavu-core"] {
            XCTAssertTrue(recommends.contains(name), "Recommends lacks \(name): \(recommends)")
        }
    }

    func testTheLayoutPutsTheFrontOnPathItsHelpersBesideItAndTheUnitRunsIt() throws {
        let deb = try package()
        let root = try directory("layout")
        XCTAssertEqual(try Command.run(["dpkg-deb", "-x", deb.path, root.path], in: root).status, 0)
        let fm = FileManager.default
        XCTAssertEqual(
            try fm.destinationOfSymbolicLink(atPath: root.appendingPathComponent("usr/bin/xclaw").path),
            "../lib/xclaw/xclaw")
        for binary in ["xclaw", "xclaw-core", "xclaw-atspi", "xclaw-mock-api"] {
            XCTAssertTrue(
                fm.isExecutableFile(atPath: root.appendingPathComponent("usr/lib/xclaw/\(binary)").path), binary)
        }
        XCTAssertFalse(fm.fileExists(atPath: root.appendingPathComponent("usr/lib/xclaw/xclaw-bench").path))
        for path in [
            "usr/share/doc/xclaw/copyright", "usr/share/doc/xclaw/changelog.Debian.gz",
            "usr/share/doc/xclaw/README.md.gz",
            "usr/share/doc/xclaw/examples/demo.sh", "usr/share/doc/xclaw/examples/agent/answer-dialog.json",
            "usr/share/doc/xclaw/json/defs.schema.json", "usr/share/man/man1/xclaw.1.gz",
        ] {
            XCTAssertTrue(fm.fileExists(atPath: root.appendingPathComponent(path).path), path)
        }
        let unit = try String(
            contentsOf: root.appendingPathComponent("usr/lib/systemd/user/xclaw.service"), encoding: .utf8)
        XCTAssertTrue(unit.contains("\nExecStart=/usr/bin/xclaw daemon run\n"), unit)
        let worker = try String(
            contentsOf: root.appendingPathComponent("usr/share/doc/xclaw/examples/systemd/xclaw-worker.service"),
            encoding: .utf8)
        XCTAssertFalse(worker.contains("/usr/local/bin"), worker)
        XCTAssertTrue(worker.contains("ExecStart=/usr/bin/xclaw daemon run --worker"), worker)
    }

    func testEveryCommandHasAManPageThatGroffReadsWithoutAWarning() throws {
        let deb = try package()
        let root = try directory("man")
        XCTAssertEqual(try Command.run(["dpkg-deb", "-x", deb.path, root.path], in: root).status, 0)
        let man = root.appendingPathComponent("usr/share/man/man1")
        let pages = Set(try FileManager.default.contentsOfDirectory(atPath: man.path))
        let commands = try commandTree()
        for command in commands {
            XCTAssertTrue(pages.contains(command.page + ".1.gz"), "no page for `\(command.words)`")
        }
        // Besides xclaw.1, no page of a command that is hidden or gone.
        XCTAssertEqual(pages.count, commands.count + 1, "\(pages.count) pages, \(commands.count) commands")
        XCTAssertTrue(pages.contains("xclaw-window-resize.1.gz"))

        // -ww: every warning; -z: no output but the warnings. One shell for all pages.
        let check = try Command.run(
            [
                "bash", "-c",
                "for f in *.1.gz; do zcat \"$f\" | groff -man -Tutf8 -ww -z 2>&1 | sed \"s|^|$f: |\"; done",
            ],
            in: man)
        XCTAssertEqual(check.status, 0)
        XCTAssertEqual(check.stdout, "", "groff warnings")

        let root1 = try render(man.appendingPathComponent("xclaw.1.gz"))
        for section in [
            "NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES",
            "SEE ALSO",
        ] {
            XCTAssertTrue(root1.contains("\n\(section)\n"), "xclaw(1) lacks \(section)")
        }
        for command in commands {
            XCTAssertTrue(root1.contains(command.page + "(1)"), "xclaw(1) does not list \(command.page)")
        }
        let resize = try render(man.appendingPathComponent("xclaw-window-resize.1.gz"))
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"] {
            XCTAssertTrue(resize.contains("\n\(section)\n"), "xclaw-window-resize(1) lacks \(section)")
        }
        XCTAssertTrue(resize.contains("xclaw-window-resize - Resize"), resize)
        XCTAssertTrue(resize.contains("--display"), resize)
        XCTAssertTrue(resize.contains("xclaw(1), xclaw-window(1)"), resize)
        // The exit codes every command shares, read from the root's help, on every page.
        XCTAssertTrue(resize.contains("130") && resize.contains("interrupted"), resize)

        // Examples in a command's help (a trailing "Examples:" block, or lines that start with `xclaw `) are its
        // page's EXAMPLES.
        var withExamples = 0
        for command in commands where !command.examples.isEmpty {
            withExamples += 1
            let page = try render(man.appendingPathComponent(command.page + ".1.gz"))
            XCTAssertTrue(page.contains("\nEXAMPLES\n"), "\(command.page) has examples in its help but no EXAMPLES")
            for example in command.examples {
                XCTAssertTrue(page.contains(example), "\(command.page) lacks the example \(example)")
            }
        }
        XCTAssertGreaterThan(withExamples, 0)
    }

    func testEveryVariableTheSourcesReadIsInTheManualOrNamedInternal() throws {
        let deb = try package()
        let root = try directory("environment")
        XCTAssertEqual(try Command.run(["dpkg-deb", "-x", deb.path, root.path], in: root).status, 0)
        let page = try render(root.appendingPathComponent("usr/share/man/man1/xclaw.1.gz"))
        let environment = try XCTUnwrap(page.range(of: "\nENVIRONMENT\n")).upperBound
        let files = try XCTUnwrap(page.range(of: "\nFILES\n")).lowerBound
        let documented = String(page[environment..<files])
        let generator = try String(contentsOf: repository.appendingPathComponent("scripts/gen-man.py"), encoding: .utf8)
        let listStart = try XCTUnwrap(generator.range(of: "INTERNAL = [")).upperBound
        let internalList = generator[listStart...].prefix { $0 != "]" }
        let pattern = try NSRegularExpression(pattern: "\"(XCLAW_[A-Z0-9_]+)\"")
        var names = Set<String>()
        let sources = repository.appendingPathComponent("Sources")
        let walk = try XCTUnwrap(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        for case let file as URL in walk {
            guard file.pathExtension == "swift", let text = try? String(contentsOf: file, encoding: .utf8) else {
                continue
            }
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                names.insert(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        XCTAssertGreaterThan(names.count, 10)
        for name in names.sorted() {
            XCTAssertTrue(
                documented.contains(name) || internalList.contains("\"\(name)\""),
                "\(name) is read by the sources but neither in xclaw(1)'s ENVIRONMENT nor in gen-man.py's INTERNAL")
        }
    }

    func testTheCompletionsCompleteXclawNotXclawCore() throws {
        let deb = try package()
        let root = try directory("completions")
        XCTAssertEqual(try Command.run(["dpkg-deb", "-x", deb.path, root.path], in: root).status, 0)
        let bash = root.appendingPathComponent("usr/share/bash-completion/completions/xclaw")
        let loaded = try Command.run(["bash", "-c", "source \"$1\" && complete -p xclaw", "bash", bash.path], in: root)
        XCTAssertEqual(loaded.stdout, "complete -o filenames -F _xclaw xclaw\n", loaded.stderr)
        let zsh = try String(
            contentsOf: root.appendingPathComponent("usr/share/zsh/vendor-completions/_xclaw"), encoding: .utf8)
        XCTAssertTrue(zsh.hasPrefix("#compdef xclaw\n"), String(zsh.prefix(80)))
        let fish = try String(
            contentsOf: root.appendingPathComponent("usr/share/fish/vendor_completions.d/xclaw.fish"), encoding: .utf8)
        XCTAssertTrue(fish.contains("\ncomplete -c 'xclaw' "), String(fish.prefix(200)))
        for text in [try String(contentsOf: bash, encoding: .utf8), zsh, fish] {
            XCTAssertFalse(text.contains("xclaw-core"))
        }
    }

    func testAptInstallsItTheInstalledDemoRunsAndPurgeLeavesNothingBehind() throws {
        let deb = try package()
        let home = try directory("home")
        let results = try directory("results")
        // A home and XDG directories of its own, so the demo's agent run and display records stay in the test's
        // directory, and no daemon of another test (or of the machine's user) takes the installed front's commands.
        var environment = ["HOME": home.path, "TMPDIR": home.path]
        for (name, sub) in [
            ("XDG_RUNTIME_DIR", "run"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"),
            ("XDG_CONFIG_HOME", "config"), ("XDG_CACHE_HOME", "cache"),
        ] {
            let dir = home.appendingPathComponent(sub)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            environment[name] = dir.path
        }
        let run = try Command.run(
            [
                "bash", repository.appendingPathComponent("scripts/try-deb.sh").path, "--demo", "--results",
                results.path,
                deb.path,
            ],
            in: home, environment: environment, removing: ["DISPLAY", "XCLAW_STATE_DIR", "XCLAW_DB", "XCLAW_NO_DAEMON"])
        let read = { (name: String) -> String in
            (try? String(contentsOf: results.appendingPathComponent(name), encoding: .utf8)) ?? "(no \(name))"
        }
        XCTAssertEqual(run.status, 0, "try-deb.sh:\n\(run.stderr)")
        XCTAssertTrue(read("apt-install").contains("0 upgraded, 1 newly installed"), read("apt-install"))
        // The binaries find every library, and the Swift runtime in the package rather than the hidden toolchain.
        let hidden = read("hidden").trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertFalse(hidden.isEmpty)
        let ldd = read("ldd")
        XCTAssertTrue(ldd.contains("== /usr/lib/xclaw/xclaw-core"), ldd)
        XCTAssertFalse(ldd.contains("not found"), ldd)
        XCTAssertFalse(ldd.contains(hidden), ldd)
        XCTAssertTrue(ldd.contains("libswiftCore.so => /usr/lib/xclaw/libswiftCore.so"), ldd)
        let version = try Command.run(
            [productsDirectory.appendingPathComponent("xclaw-core").path, "--version"], in: home)
        XCTAssertEqual(read("version"), version.stdout)
        XCTAssertEqual(
            read("man"), "/usr/share/man/man1/xclaw.1.gz\n/usr/share/man/man1/xclaw-window-resize.1.gz\n")
        XCTAssertEqual(read("complete"), "complete -o filenames -F _xclaw xclaw\n")
        XCTAssertEqual(read("unit"), "", "systemd-analyze verify --user on the installed unit")
        XCTAssertEqual(read("demo.status"), "0\n", read("demo.out"))
        let demo = read("demo.out")
        XCTAssertTrue(demo.contains("demo: running /usr/bin/xclaw"), demo)
        XCTAssertTrue(demo.contains("12. the agent pressed \"Delete\""), demo)
        XCTAssertTrue(read("files").contains("/usr/lib/xclaw/xclaw-core\n"), read("files"))
        XCTAssertTrue(read("purge").contains("Removing xclaw"), read("purge"))
        XCTAssertEqual(read("left-package"), "", "files of the package left after the purge")
        XCTAssertEqual(read("left-other"), "", "files outside dpkg's, apt's and man-db's state left after the purge")
    }

    /// A man page as `man` shows it, 200 columns wide so that lines are not broken inside what is looked for.
    private func render(_ page: URL) throws -> String {
        let result = try Command.run(
            ["bash", "-c", "zcat \"$1\" | MANWIDTH=200 man -l - 2>&1", "bash", page.path],
            in: page.deletingLastPathComponent(),
            environment: ["MANPAGER": "cat", "MAN_KEEP_FORMATTING": "", "LC_ALL": "C.UTF-8"])
        return result.stdout
    }

    /// One visible command of the tree: its words, page name and the example lines of its help.
    private struct CommandEntry {
        let words: String
        let page: String
        let examples: [String]
    }

    /// Every visible command below the root (not ArgumentParser's `help`), from the built xclaw-core's own tree.
    private func commandTree() throws -> [CommandEntry] {
        let dump = try Command.run(
            [productsDirectory.appendingPathComponent("xclaw-core").path, "--experimental-dump-help"],
            in: try XCTUnwrap(Self.workDirectory))
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let root = try XCTUnwrap(json["command"] as? [String: Any])
        var all: [CommandEntry] = []
        func walk(_ command: [String: Any], _ path: [String]) {
            for sub in command["subcommands"] as? [[String: Any]] ?? [] {
                let name = sub["commandName"] as? String ?? ""
                guard sub["shouldDisplay"] as? Bool ?? true, name != "help" else { continue }
                let words = path + [name]
                let examples = (sub["discussion"] as? String ?? "").split(separator: "\n").compactMap {
                    line -> String? in
                    let text = line.trimmingCharacters(in: .whitespaces)
                    guard text.hasPrefix("xclaw ") else { return nil }
                    // The command without a trailing `# comment` (a `#` after blanks, as the shell reads it).
                    return text.replacingOccurrences(of: "\\s+#(\\s.*)?$", with: "", options: .regularExpression)
                }
                all.append(
                    CommandEntry(
                        words: words.joined(separator: " "), page: words.joined(separator: "-"), examples: examples))
                walk(sub, words)
            }
        }
        walk(root, ["xclaw"])
        return all
    }

    /// The repository: three levels above this file.
    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    private var repository: URL { Self.repository }
}

/// A command run to its end, its stdout and stderr kept in files (no pipe to fill while the other is read).
private struct Command {
    let status: Int32
    let stdout: String
    let stderr: String

    /// Runs `arguments` (the first found on PATH) in `directory`, the process environment with `environment` laid
    /// over it and `removing` taken out.
    static func run(
        _ arguments: [String], in directory: URL, environment: [String: String] = [:], removing: [String] = []
    ) throws -> Command {
        let out = directory.appendingPathComponent(".stdout-\(UUID().uuidString)")
        let err = directory.appendingPathComponent(".stderr-\(UUID().uuidString)")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        FileManager.default.createFile(atPath: err.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: out)
            try? FileManager.default.removeItem(at: err)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var env = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        for name in removing { env[name] = nil }
        process.environment = env
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        process.waitUntilExit()
        return Command(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
    }
}
