/// A command's message as an MCP tool's caller reads it. The command line names its options (`pick one with --nth N,
/// --near LABEL`), the tool its arguments (`pick one with nth, near`): a model told to pass `--nth` passes an
/// argument the tool does not have. The rewrite is made here, from the tool's row in `MCPTools.table` (the one place
/// that knows both spellings), rather than in the errors: perception's shared errors and the commands' usage checks
/// stay the command line's, every message they ever gain is rewritten without a change, and an option a tool does
/// not offer keeps its command-line spelling, which is still true of the command.
enum MCPToolText {
    /// `message` with each option of `tool` named as the tool's argument, and `xclaw NAME` in backticks as the tool
    /// `NAME` when the server has one (`tools`). Quoted text ("…", an echo of a label or a title) and other
    /// backticked command lines (a shell command for the user, such as `xclaw display start --accessibility`) stay.
    static func rendered(_ message: String, arguments: [String: String], tools: [String]) -> String {
        var out = ""
        var rest = Substring(message)
        while let first = rest.first {
            switch first {
            case "`":
                let body = rest.dropFirst()
                guard let close = body.firstIndex(of: "`") else {
                    out += rest
                    return out
                }
                let span = body[..<close]
                let words = span.split(separator: " ")
                if words.count == 2, words[0] == "xclaw", tools.contains(String(words[1])) {
                    out += "the \(words[1]) tool"
                } else {
                    out += "`\(span)`"
                }
                rest = body[body.index(after: close)...]
            case "\"":
                let end = quotedEnd(rest)
                out += rest[..<end]
                rest = rest[end...]
            case "-" where rest.hasPrefix("--") && !(out.last.map(isWordCharacter) ?? false):
                let name = rest.prefix { $0 == "-" || $0.isLowercase || $0.isNumber }
                if let argument = arguments[String(name)], name.count > 2, name.dropFirst(2).first?.isLetter == true {
                    out += argument
                    rest = droppingPlaceholder(rest[name.endIndex...])
                } else {
                    out += name
                    rest = rest[name.endIndex...]
                }
            default:
                out.append(first)
                rest = rest.dropFirst()
            }
        }
        return out
    }

    /// The arguments of `tool` by the option each is passed as (`--with`: `modifiers`), `--display` included.
    static func arguments(of tool: MCPCommandTool) -> [String: String] {
        var names: [String: String] = tool.usesDisplay ? ["--display": "display"] : [:]
        for (parameter, spelling) in tool.arguments {
            switch spelling {
            case .option(let flag), .flag(let flag): names[flag] = parameter.name
            case .positional, .custom: break
            }
        }
        return names
    }

    /// Where the quoted text at the start of `text` ends: after its closing quote (a `\"` inside does not close it),
    /// or at the end when it has none.
    private static func quotedEnd(_ text: Substring) -> Substring.Index {
        var index = text.index(after: text.startIndex)
        while index < text.endIndex {
            switch text[index] {
            case "\\":
                index = text.index(after: index)
                if index < text.endIndex { index = text.index(after: index) }
            case "\"": return text.index(after: index)
            default: index = text.index(after: index)
            }
        }
        return text.endIndex
    }

    /// `text` without a leading placeholder for the option's value (` N`, ` LABEL`, ` X,Y,W,H`, ` SECONDS`): the
    /// argument's name says what it takes. A real value (`--nth 3`, `--role window`) stays.
    private static func droppingPlaceholder(_ text: Substring) -> Substring {
        guard text.first == " " else { return text }
        // Capitals (and digits, `_`) from a capital on, joined by commas: `X,Y,W,H`; a comma after it is the text's.
        var end = text.index(after: text.startIndex)
        while end < text.endIndex, text[end].isUppercase {
            end = text[end...].firstIndex { !($0.isUppercase || $0.isNumber || $0 == "_") } ?? text.endIndex
            guard end < text.endIndex, text[end] == ",", text.index(after: end) < text.endIndex,
                text[text.index(after: end)].isUppercase
            else { break }
            end = text.index(after: end)
        }
        guard end > text.index(after: text.startIndex), !(text[end...].first.map(isWordCharacter) ?? false) else {
            return text
        }
        return text[end...]
    }

    /// A letter, digit, `-` or `_`: a `--` after one is inside a word, not an option.
    private static func isWordCharacter(_ character: Character) -> Bool {
        character.isLetter || character.isNumber || character == "-" || character == "_"
    }
}
