/// The "Examples:" block every command's discussion ends with: a line `Examples:`, then one example a line, each
/// indented two spaces and starting with `xclaw ` (an optional `  # comment` after it). The man pages are generated
/// from it, and `--help` shows it last, whole, where ArgumentParser would have put it before USAGE, wrapped.
public enum HelpExamples {
    /// The block's first line.
    public static let heading = "Examples:"
    /// How every example line starts.
    public static let prefix = "  xclaw "

    /// The example lines of `discussion`'s trailing block, as written (indented), or [] when it does not end with one.
    public static func lines(ofDiscussion discussion: String) -> [String] {
        let lines = discussion.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.lastIndex(of: heading) else { return [] }
        let block = Array(lines[(start + 1)...])
        guard !block.isEmpty, block.allSatisfy({ $0.hasPrefix(prefix) }) else { return [] }
        return block
    }

    /// ArgumentParser's help text with the examples moved from the discussion (before USAGE) to the end, each on
    /// one line again: a wrapped example's continuation lines are joined back with the one space the wrap took.
    /// Help without an examples block, and `--version`'s text, come back as they were.
    public static func movedToEnd(_ help: String) -> String {
        var lines = help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let usage = lines.firstIndex { $0.hasPrefix("USAGE: ") } ?? lines.count
        guard let start = lines[..<usage].lastIndex(of: heading) else { return help }
        let end = lines[(start + 1)...].firstIndex(of: "") ?? lines.count
        var examples: [String] = []
        for line in lines[(start + 1)..<end] {
            if line.hasPrefix(prefix) || examples.isEmpty {
                examples.append(line)
            } else {
                examples[examples.count - 1] += " " + line
            }
        }
        lines.removeSubrange(start..<end)
        // The blank line that set the block apart goes with it when another one follows (before USAGE).
        if start > 0, lines[start - 1].isEmpty, start < lines.count, lines[start].isEmpty {
            lines.remove(at: start - 1)
        }
        var body = lines.joined(separator: "\n")
        let trailing = body.reversed().prefix { $0 == "\n" }.count
        body.removeLast(trailing)
        return body + "\n\n" + ([heading] + examples).joined(separator: "\n") + String(repeating: "\n", count: trailing)
    }
}
