import ArgumentParser
import XCTest
import XclawCommandLine

@testable import XclawCommands

/// Every command a user can see ends its help with one or two examples a user would run, in the one format the man
/// pages are generated from; each example parses (validation included) as the very command it documents.
final class HelpExamplesTests: XCTestCase {
    /// A visible command and the words that name it (`window move`; the root's are empty).
    private struct Documented {
        var words: [String]
        var type: any ParsableCommand.Type
        /// The commands an example of it may run: itself, and for a group any command under it.
        var runs: Set<ObjectIdentifier>
        var name: String { (["xclaw"] + words).joined(separator: " ") }
    }

    /// The whole tree from the root, hidden commands left out.
    private static let commands: [Documented] = {
        var found: [Documented] = []
        @discardableResult
        func walk(_ type: any ParsableCommand.Type, _ words: [String]) -> Set<ObjectIdentifier> {
            let index = found.count
            found.append(Documented(words: words, type: type, runs: []))
            var runs: Set<ObjectIdentifier> = [ObjectIdentifier(type)]
            for sub in type.configuration.subcommands where sub.configuration.shouldDisplay {
                runs.formUnion(walk(sub, words + [sub.configuration.commandName ?? "?"]))
            }
            found[index].runs = runs
            return runs
        }
        walk(Xclaw.self, [])
        return found
    }()

    func testEveryHelpEndsWithOneOrTwoExamples() {
        XCTAssertGreaterThan(Self.commands.count, 90, "the tree lost its commands")
        for command in Self.commands {
            let examples = HelpExamples.lines(ofDiscussion: command.type.configuration.discussion)
            XCTAssertTrue((1...2).contains(examples.count), "\(command.name): \(examples.count) examples")
            // As `--help` prints it, at the width of a terminal and at a narrow one that wraps long examples: the
            // block last, each example on one line, and nowhere else.
            for columns in [80, 50] {
                let help = HelpExamples.movedToEnd(Xclaw.helpMessage(for: command.type, columns: columns))
                let block = "\n\n" + ([HelpExamples.heading] + examples).joined(separator: "\n")
                let trimmed = String(help.reversed().drop { $0 == "\n" }.reversed())
                XCTAssertTrue(trimmed.hasSuffix(block), "\(command.name) at \(columns) columns:\n\(help)")
                XCTAssertEqual(
                    help.components(separatedBy: "\n" + HelpExamples.heading + "\n").count, 2,
                    "\(command.name): one examples block\n\(help)")
                XCTAssertTrue(help.contains("USAGE: "), command.name)
            }
        }
    }

    func testEveryExampleParsesAsTheCommandItDocuments() throws {
        for command in Self.commands {
            for line in HelpExamples.lines(ofDiscussion: command.type.configuration.discussion) {
                let (words, comment) = try Self.shellWords(line)
                if let comment {
                    XCTAssertTrue(line.contains("  # " + comment), "\(line): a comment is set off by `  # `")
                    XCTAssertFalse(comment.isEmpty, line)
                }
                XCTAssertEqual(words.first, "xclaw", line)
                do {
                    let parsed = try CommandRunner.parse(Xclaw.self, arguments: Array(words.dropFirst()))
                    XCTAssertTrue(
                        command.runs.contains(ObjectIdentifier(type(of: parsed))),
                        "\(line) runs \(type(of: parsed)), not \(command.name)")
                } catch {
                    let failure = CommandRunner.failure(of: error, root: Xclaw.self)
                    XCTFail("\(command.name): \(line) does not parse: \(failure.message ?? failure.output ?? "?")")
                }
            }
        }
    }

    func testTheHelpTheBinaryPrintsEndsWithTheExamples() throws {
        for arguments in [["display", "start", "--help"], ["help", "window", "move"], ["--help"]] {
            do {
                // ArgumentParser hands `help` and `--help` back as a command whose run throws the help request.
                var command = try CommandRunner.parse(Xclaw.self, arguments: arguments)
                try command.run()
                XCTFail("\(arguments) ran")
            } catch {
                let failure = CommandRunner.failure(of: error, root: Xclaw.self)
                XCTAssertEqual(failure.status, 0)
                let output = try XCTUnwrap(failure.output, "\(arguments)")
                let last = try XCTUnwrap(output.split(separator: "\n").last, output)
                XCTAssertTrue(last.hasPrefix(HelpExamples.prefix), "\(arguments):\n\(output)")
                XCTAssertLessThan(
                    try XCTUnwrap(output.range(of: "USAGE: ")).lowerBound,
                    try XCTUnwrap(output.range(of: "\n\(HelpExamples.heading)\n")).lowerBound, "\(arguments)")
            }
        }
        // Version text has no examples block and comes back as it was.
        do {
            var command = try CommandRunner.parse(Xclaw.self, arguments: ["--version"])
            try command.run()
            XCTFail("--version ran")
        } catch {
            XCTAssertEqual(
                CommandRunner.failure(of: error, root: Xclaw.self).output, Xclaw.configuration.version)
        }
    }

    /// An example's words as a POSIX shell splits them: quotes honoured, a backslash escaping the next character,
    /// `# comment` dropped (and returned), a redirection or pipe ending the command's words (`- < a.png`), and `$(…)`
    /// or `$NAME` standing for a plausible value, "1".
    static func shellWords(_ line: String) throws -> (words: [String], comment: String?) {
        var words: [String] = []
        var word: String?
        var characters = Array(line)[...]
        func substitution() {
            characters = characters.dropFirst()  // the $
            if characters.first == "(" {
                var depth = 0
                while let next = characters.popFirst() {
                    if next == "(" { depth += 1 }
                    if next == ")" { depth -= 1 }
                    if depth == 0 { break }
                }
            } else {
                if characters.first == "{" { characters = characters.drop { $0 != "}" }.dropFirst() }
                characters = characters.drop { $0.isLetter || $0.isNumber || $0 == "_" }
            }
            word = (word ?? "") + "1"
        }
        while let character = characters.first {
            switch character {
            case " ":
                if let finished = word { words.append(finished) }
                word = nil
                characters = characters.dropFirst()
            case "#" where word == nil:
                return (words, String(characters.dropFirst()).trimmingCharacters(in: .whitespaces))
            case "<", ">", "|", ";", "&":
                if let finished = word { words.append(finished) }
                let rest = String(characters).components(separatedBy: "  # ")
                return (words, rest.count > 1 ? rest.last : nil)
            case "'":
                characters = characters.dropFirst()
                guard let close = characters.firstIndex(of: "'") else { throw ShellError.unclosed(line) }
                word = (word ?? "") + String(characters[..<close])
                characters = characters[(close + 1)...]
            case "\"":
                characters = characters.dropFirst()
                word = word ?? ""
                while let next = characters.first, next != "\"" {
                    if next == "$" {
                        substitution()
                        continue
                    }
                    if next == "\\", characters.count > 1 {
                        characters = characters.dropFirst()
                    }
                    word?.append(characters.first ?? next)
                    characters = characters.dropFirst()
                }
                guard characters.first == "\"" else { throw ShellError.unclosed(line) }
                characters = characters.dropFirst()
            case "\\":
                characters = characters.dropFirst()
                word = (word ?? "") + String(characters.first.map { String($0) } ?? "")
                characters = characters.dropFirst()
            case "$":
                substitution()
            default:
                word = (word ?? "") + String(character)
                characters = characters.dropFirst()
            }
        }
        if let finished = word { words.append(finished) }
        return (words, nil)
    }

    /// An example the shell could not split.
    enum ShellError: Error {
        case unclosed(String)
    }

    func testTheExampleSplitterSplitsAsAShellDoes() throws {
        XCTAssertEqual(
            try Self.shellWords(#"xclaw type --into Name 'Zoë Müller'  # focus it"#).words,
            ["xclaw", "type", "--into", "Name", "Zoë Müller"])
        XCTAssertEqual(try Self.shellWords(#"xclaw a  # b c"#).comment, "b c")
        XCTAssertEqual(
            try Self.shellWords(#"xclaw x "a \"b\" $(xclaw display start)" --d=$D 'it''s'"#).words,
            ["xclaw", "x", #"a "b" 1"#, "--d=1", "its"])
        XCTAssertEqual(
            try Self.shellWords("xclaw clipboard set --type image/png - < a.png  # from stdin").words,
            ["xclaw", "clipboard", "set", "--type", "image/png", "-"])
        XCTAssertEqual(
            try Self.shellWords("xclaw run 'x' --setup 'xterm &'").words, ["xclaw", "run", "x", "--setup", "xterm &"])
        XCTAssertThrowsError(try Self.shellWords("xclaw type 'open"))
    }
}
