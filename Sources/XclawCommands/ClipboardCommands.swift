import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawScreen

extension ClipboardType: ExpressibleByArgument {}
extension ClipboardSelection: ExpressibleByArgument {}

/// Which selection and type a clipboard command works on.
struct ClipboardOptions: ParsableArguments {
    @OptionGroup var target: DisplayOptions
    @Flag(help: "The PRIMARY selection (select, then middle-click) instead of CLIPBOARD (ctrl+c, ctrl+v).")
    var primary = false
    @Option(help: "text/plain (default), text/html or image/png.") var type: ClipboardType = .text

    /// The selection named.
    var selection: ClipboardSelection { primary ? .primary : .clipboard }

    /// The display's name, resolved in the command's environment (the daemon's is not the caller's).
    func display() throws -> String { try DisplayConnection.resolveName(target.display) }
}

/// `xclaw clipboard get|set`.
struct ClipboardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clipboard", abstract: "Read or set the clipboard (or the PRIMARY selection), as xclip does.",
        discussion: """
            Examples:
              xclaw clipboard set 'some text'
              xclaw clipboard get --primary  # the text last selected
            """,
        subcommands: [ClipboardGet.self, ClipboardSet.self])
}

/// `xclaw clipboard get`.
struct ClipboardGet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the clipboard's contents: bytes as they are to a file or pipe; text escaped on a terminal.",
        discussion: """
            Exits 1 when the selection is empty or its owner offers no such type (the message lists what it offers).
            Examples:
              xclaw clipboard get
              xclaw clipboard get --type image/png > shot.png  # the bytes as they are
            """)
    @OptionGroup var options: ClipboardOptions
    @Flag(help: "One JSON object: type, bytes, and text (text types) or base64 (image/png).") var json = false

    func run() throws {
        let data = try SelectionReader.read(options.selection, type: options.type, display: options.display())
        if json {
            struct Reply: Encodable {
                var selection: ClipboardSelection, type: ClipboardType, bytes: Int, text: String?, base64: String?
            }
            let binary = options.type == .png
            let text = binary ? nil : String(decoding: data, as: UTF8.self)
            try emit(
                Reply(
                    selection: options.selection, type: options.type, bytes: data.count, text: text,
                    base64: binary ? data.base64EncodedString() : nil), json: true
            ) { "" }
        } else if Invocation.current.isTerminal(.stdout) {
            // Another app's bytes never drive the terminal: text is escaped, an image is not printed at all.
            guard options.type != .png else {
                throw ScreenError.invalidArgument(
                    "stdout is a terminal: redirect the PNG to a file (`xclaw clipboard get --type image/png > a.png`)")
            }
            writeOut(TerminalOutput.clean(String(decoding: data, as: UTF8.self)))
        } else {
            writeOut(data)
        }
    }
}

/// `xclaw clipboard set TEXT|-`.
struct ClipboardSet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set the clipboard to TEXT, or to stdin with - (binary-safe, e.g. --type image/png - < a.png).",
        discussion: """
            The selection stays set after the command returns: the daemon holds it when one runs, else a detached \
            `xclaw-core clipboard-serve` does (as xclip forks one), until another app takes the clipboard.
            Examples:
              xclaw clipboard set 'some text'  # then ctrl+v pastes it in any app
              xclaw clipboard set --type image/png - < shot.png
            """)
    @OptionGroup var options: ClipboardOptions
    @Argument(help: "The contents, or - to read them from stdin.") var contents: String

    func run() throws {
        let data = contents == "-" ? Invocation.current.readAll() : Data(contents.utf8)
        switch options.type {
        case .png:
            guard data.starts(with: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) else {
                throw ScreenError.invalidArgument("the contents are not a PNG (no PNG signature); nothing was set")
            }
        case .text, .html:
            guard String(data: data, encoding: .utf8) != nil else {
                throw ScreenError.invalidArgument("the contents are not UTF-8 text; nothing was set")
            }
        }
        try Hosting.current.serveSelection(
            options.selection, type: options.type, data: data, display: options.display())
    }
}

/// `xclaw-core clipboard-serve` (hidden): the detached owner `clipboard set` leaves when no daemon runs. Reads the
/// contents from stdin, takes the selection, says `ready`, and serves until another client takes it.
struct ClipboardServe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clipboard-serve", abstract: "Hold a selection until another client takes it (internal).",
        shouldDisplay: false)
    @OptionGroup var target: DisplayOptions
    @Option var selection: ClipboardSelection = .clipboard
    @Option var type: ClipboardType = .text

    func run() throws {
        let data = Invocation.current.readAll()
        let owner = try SelectionOwner.start(
            display: try DisplayConnection.resolveName(target.display), selection: selection, type: type, data: data)
        writeOut("ready\n")
        // Nothing more is written: let the parent's pipes reach their end so it returns at once.
        let null = open("/dev/null", O_RDWR)
        if null >= 0 {
            dup2(null, 1)
            dup2(null, 2)
            close(null)
        }
        owner.waitUntilDone()
    }
}
