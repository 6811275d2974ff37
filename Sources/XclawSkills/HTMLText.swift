import Foundation
import XclawBase

/// The readable text of an HTML page, as fetch_url hands it to the model: the title, then the text with no tags,
/// scripts, styles or comments, entities decoded, and the breaks of paragraphs, headings (`#`), list items (`-`,
/// `1.`) and table rows kept. A tolerant scanner, not a parser: a page is untrusted and often broken, so nothing in it
/// can make this fail, only read less well.
public struct HTMLText: Sendable, Hashable {
    /// The `<title>`, whitespace collapsed; nil when the page has none.
    public var title: String?
    /// The text.
    public var text: String

    /// Elements whose content is never text to read (scripts, styles, fallbacks for no-script, drawings).
    private static let skipped: Set<String> = ["script", "style", "noscript", "template", "svg", "math", "iframe"]
    /// Elements that start and end a paragraph.
    private static let blocks: Set<String> = [
        "p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "form", "fieldset", "figure",
        "figcaption", "blockquote", "address", "table", "details", "summary", "dl", "center", "hr", "pre", "ul", "ol",
        "body", "caption", "legend",
    ]
    /// Elements that end a line.
    private static let lines: Set<String> = ["br", "tr", "dt", "dd", "option"]

    /// Reads `html`.
    public init(html: String) {
        var scanner = Scanner(bytes: Array(html.utf8))
        (title, text) = scanner.run()
    }

    /// `html` as one line of text (a search snippet with `<strong>` around matched words): tags dropped, entities
    /// decoded, whitespace collapsed.
    public static func inline(_ html: String) -> String {
        let read = HTMLText(html: html)
        return read.text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// `text` with its character references (`&amp;`, `&#233;`, `&#x2014;`, the common named ones) decoded; an
    /// unknown or malformed reference stays as written.
    public static func decodeEntities(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            let after = rest[rest.index(after: amp)...]
            if let semi = after.prefix(32).firstIndex(of: ";"), let decoded = entity(after[..<semi]) {
                out += decoded
                rest = after[after.index(after: semi)...]
            } else {
                out += "&"
                rest = after
            }
        }
        return out + rest
    }

    /// The text of one reference's body (`amp`, `#233`, `#x2014`), nil when it is not one.
    private static func entity(_ body: Substring) -> String? {
        if body.hasPrefix("#") {
            let digits = body.dropFirst()
            let value =
                digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
            guard let value else { return nil }
            // NUL, surrogates and values past Unicode become the replacement character, as browsers do.
            guard value != 0, let scalar = Unicode.Scalar(value) else { return "\u{fffd}" }
            return String(Character(scalar))
        }
        return named[String(body)]
    }

    /// The named references pages use most; the rest of HTML's 2,000 are rare in text.
    private static let named: [String: String] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": " ", "ensp": " ", "emsp": " ",
        "thinsp": " ", "copy": "©", "reg": "®", "trade": "™", "hellip": "…", "mdash": "—", "ndash": "–", "minus": "−",
        "lsquo": "‘", "rsquo": "’", "sbquo": "‚", "ldquo": "“", "rdquo": "”", "bdquo": "„", "laquo": "«",
        "raquo": "»", "lsaquo": "‹", "rsaquo": "›", "bull": "•", "middot": "·", "deg": "°", "plusmn": "±",
        "times": "×", "divide": "÷", "frac12": "½", "frac14": "¼", "frac34": "¾", "sup2": "²", "sup3": "³",
        "micro": "µ", "para": "¶", "sect": "§", "euro": "€", "pound": "£", "yen": "¥", "cent": "¢", "shy": "",
        "zwj": "", "zwnj": "", "larr": "←", "rarr": "→", "uarr": "↑", "darr": "↓", "harr": "↔", "check": "✓",
        "eacute": "é", "egrave": "è", "ecirc": "ê", "euml": "ë", "aacute": "á", "agrave": "à", "acirc": "â",
        "auml": "ä", "aring": "å", "atilde": "ã", "ccedil": "ç", "iacute": "í", "igrave": "ì", "iuml": "ï",
        "oacute": "ó", "ograve": "ò", "ocirc": "ô", "ouml": "ö", "otilde": "õ", "oslash": "ø", "uacute": "ú",
        "ugrave": "ù", "ucirc": "û", "uuml": "ü", "ntilde": "ñ", "szlig": "ß", "Eacute": "É", "Auml": "Ä",
        "Ouml": "Ö", "Uuml": "Ü", "Ccedil": "Ç", "Ntilde": "Ñ", "aelig": "æ", "AElig": "Æ", "iexcl": "¡",
        "iquest": "¿", "dagger": "†", "Dagger": "‡", "permil": "‰", "prime": "′", "Prime": "″",
    ]

    /// One pass over the page's bytes (tags are ASCII, so text runs between them are whole UTF-8 sequences).
    private struct Scanner {
        let bytes: [UInt8]
        var at = 0
        var out = Writer()
        var title: String?
        var preDepth = 0
        /// Open lists, innermost last: nil for `ul`, the next number for `ol`.
        var lists: [Int?] = []

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func run() -> (String?, String) {
            while at < bytes.count {
                guard let lt = bytes[at...].firstIndex(of: UInt8(ascii: "<")) else {
                    text(at..<bytes.count)
                    break
                }
                if lt > at { text(at..<lt) }
                at = lt
                tag()
            }
            return (title, out.finished())
        }

        mutating func text(_ range: Range<Int>) {
            let raw = String(decoding: bytes[range], as: UTF8.self)
            out.append(HTMLText.decodeEntities(raw[...]), keepSpaces: preDepth > 0)
        }

        /// Handles the markup at `at` (a `<`) and moves past it; a `<` that starts no markup is text.
        mutating func tag() {
            if starts(with: "<!--") {
                at = end(of: "-->", from: at + 4)
                return
            }
            let next = at + 1 < bytes.count ? bytes[at + 1] : 0
            if next == UInt8(ascii: "!") || next == UInt8(ascii: "?") {
                at = end(of: ">", from: at + 2)
                return
            }
            let closing = next == UInt8(ascii: "/")
            var i = at + (closing ? 2 : 1)
            let nameStart = i
            while i < bytes.count, isNameByte(bytes[i]) { i += 1 }
            guard i > nameStart, isLetter(bytes[nameStart]) else {
                text(at..<at + 1)
                at += 1
                return
            }
            let name = String(decoding: bytes[nameStart..<i], as: UTF8.self).lowercased()
            at = endOfTag(from: i)
            if closing {
                close(name)
            } else if name == "title" || HTMLText.skipped.contains(name) {
                let contentEnd = closingTag(name, from: at)
                if name == "title", title == nil {
                    let raw = String(decoding: bytes[at..<contentEnd], as: UTF8.self)
                    let words = HTMLText.decodeEntities(raw[...]).split(whereSeparator: \.isWhitespace)
                    if !words.isEmpty { title = words.joined(separator: " ") }
                }
                at = endOfTag(from: contentEnd)
            } else {
                open(name)
            }
        }

        mutating func open(_ name: String) {
            switch name {
            case "h1", "h2", "h3", "h4", "h5", "h6":
                out.paragraph()
                out.prefix(String(repeating: "#", count: Int(String(name.dropFirst())) ?? 1) + " ")
            case "li":
                out.line()
                if let number = lists.last ?? nil {
                    out.prefix("\(number). ")
                    lists[lists.count - 1] = number + 1
                } else {
                    out.prefix("- ")
                }
            case "td", "th": out.separate(" | ")
            case "ul": lists.append(nil)
            case "ol": lists.append(1)
            default: break
            }
            if name == "pre" { preDepth += 1 }
            if HTMLText.blocks.contains(name) { out.paragraph() }
            if HTMLText.lines.contains(name) { out.line() }
        }

        mutating func close(_ name: String) {
            switch name {
            case "h1", "h2", "h3", "h4", "h5", "h6": out.paragraph()
            case "ul", "ol": if !lists.isEmpty { lists.removeLast() }
            case "pre": preDepth = max(0, preDepth - 1)
            case "li": out.line()
            default: break
            }
            if HTMLText.blocks.contains(name) { out.paragraph() }
            if HTMLText.lines.contains(name) { out.line() }
        }

        func starts(with text: String) -> Bool {
            bytes[at...].starts(with: text.utf8)
        }

        /// Just past the first `marker` at or after `from` (the page's end when there is none).
        func end(of marker: String, from: Int) -> Int {
            let needle = Array(marker.utf8)
            var i = from
            while i + needle.count <= bytes.count {
                if bytes[i] == needle[0], bytes[i..<i + needle.count].elementsEqual(needle) { return i + needle.count }
                i += 1
            }
            return bytes.count
        }

        /// Just past the `>` that ends a tag whose name ends at `from`, skipping quoted attribute values.
        func endOfTag(from: Int) -> Int {
            var quote: UInt8?
            var i = from
            while i < bytes.count {
                let b = bytes[i]
                if let q = quote {
                    if b == q { quote = nil }
                } else if b == UInt8(ascii: "\"") || b == UInt8(ascii: "'") {
                    quote = b
                } else if b == UInt8(ascii: ">") {
                    return i + 1
                }
                i += 1
            }
            return bytes.count
        }

        /// Where `</name` starts at or after `from`, any case (the page's end when it is never closed).
        func closingTag(_ name: String, from: Int) -> Int {
            let needle = Array("</\(name)".utf8)
            var i = from
            while i + needle.count <= bytes.count {
                if bytes[i] == UInt8(ascii: "<"), bytes[i + 1] == UInt8(ascii: "/"),
                    zip(bytes[i..<i + needle.count], needle).allSatisfy({ lower($0) == $1 })
                {
                    return i
                }
                i += 1
            }
            return bytes.count
        }

        func lower(_ b: UInt8) -> UInt8 { (65...90).contains(b) ? b + 32 : b }
        func isLetter(_ b: UInt8) -> Bool { (65...90).contains(b) || (97...122).contains(b) }
        func isNameByte(_ b: UInt8) -> Bool { isLetter(b) || (48...57).contains(b) || b == UInt8(ascii: "-") }
    }

    /// Builds the text: whitespace collapsed outside `<pre>`, and at most one blank line between paragraphs.
    private struct Writer {
        var text = ""
        /// 0: none; 1: a line break; 2: a blank line, owed before the next text.
        var owedBreak = 0
        /// A space is owed before the next word on this line.
        var owedSpace = false
        /// Nothing but a prefix has been written on the current line.
        var lineStart = true

        mutating func append(_ chunk: String, keepSpaces: Bool) {
            for character in chunk {
                // Controls that move a terminal's cursor or reorder text are not text to read.
                if character.unicodeScalars.contains(where: {
                    UntrustedText.isControl($0) && !"\n\t\r".unicodeScalars.contains($0)
                }) {
                    continue
                }
                if keepSpaces {
                    if character == "\n" || character == "\r\n" {
                        owedBreak = max(owedBreak, 1)
                        flushBreak()
                        continue
                    }
                } else if character.isWhitespace {
                    if !lineStart { owedSpace = true }
                    continue
                }
                flushBreak()
                if owedSpace, !lineStart { text.append(" ") }
                owedSpace = false
                lineStart = false
                text.append(character)
            }
        }

        mutating func flushBreak() {
            guard owedBreak > 0 else { return }
            if !text.isEmpty { text += owedBreak >= 2 ? "\n\n" : "\n" }
            owedBreak = 0
            owedSpace = false
            lineStart = true
        }

        mutating func line() { if !text.isEmpty { owedBreak = max(owedBreak, 1) } }
        mutating func paragraph() { if !text.isEmpty { owedBreak = 2 } }

        /// Starts a line with `marker` (`# `, `- `, `2. `).
        mutating func prefix(_ marker: String) {
            flushBreak()
            text += marker
            owedSpace = false
            lineStart = true
        }

        /// Separates table cells on one line.
        mutating func separate(_ separator: String) {
            guard !lineStart, owedBreak == 0 else { return }
            text += separator
            owedSpace = false
            lineStart = true
        }

        func finished() -> String { text.trimmingCharacters(in: .whitespacesAndNewlines) }
    }
}
