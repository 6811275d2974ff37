import Foundation

/// Text xclaw did not write — window titles, OCR lines, accessibility names and values, the model's replies — made
/// safe for where it goes: one quoted token in a line-based listing (so it can never start a line or close its
/// quotes), or visible characters on a terminal (so it can never move the cursor, clear the screen or retitle it).
public enum UntrustedText {
    /// True for the characters that control a terminal or reorder text instead of showing: C0 controls (other than
    /// the ones `keeping` names), DEL, C1 controls (CSI among them) and the bidirectional overrides and isolates.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        return v < 0x20 || (0x7f...0x9f).contains(v) || (0x202a...0x202e).contains(v) || (0x2066...0x2069).contains(v)
            || v == 0x2028 || v == 0x2029
    }

    /// The visible form of a control character: `\n`, `\t`, `\r`, else `\x1b` or `\u{202e}`.
    public static func visible(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\n": return "\\n"
        case "\t": return "\\t"
        case "\r": return "\\r"
        default:
            return scalar.value <= 0xff
                ? "\\x" + hex(scalar.value, width: 2) : "\\u{" + hex(scalar.value, width: 4) + "}"
        }
    }

    /// `text` as one double-quoted token: backslashes and quotes escaped, every control character (newlines too)
    /// in its visible form; longer than `limit` characters of content, it is cut and ends in `…` inside the quotes.
    public static func quoted(_ text: String, limit: Int = .max) -> String {
        var out = "\""
        var count = 0
        for character in text {
            if count >= limit {
                out += "…"
                break
            }
            for scalar in character.unicodeScalars {
                if scalar == "\"" {
                    out += "\\\""
                } else if scalar == "\\" {
                    out += "\\\\"
                } else if isControl(scalar) {
                    out += visible(scalar)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
            count += 1
        }
        return out + "\""
    }

    /// `text` escaped as inside `quoted`, without the quotes: for a field that is not the last of its line.
    public static func escaped(_ text: String, limit: Int = .max) -> String {
        String(quoted(text, limit: limit).dropFirst().dropLast())
    }

    /// `text` with its control characters shown instead of obeyed; newlines (and tabs, unless `tabs` is false) are
    /// kept, as a terminal shows them harmlessly.
    public static func forTerminal(_ text: String, tabs: Bool = true) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) && $0 != "\n" && !(tabs && $0 == "\t") }) else {
            return text
        }
        var out = ""
        out.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            if isControl(scalar) && scalar != "\n" && !(tabs && scalar == "\t") {
                out += visible(scalar)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// JSON text with the control characters JSON encoders leave raw (C1, such as CSI U+009B; the line and
    /// paragraph separators; bidi overrides) written as `\uXXXX` escapes: the same JSON value, safe on a terminal.
    /// They can only occur inside strings, where the escape means the same character.
    public static func jsonForTerminal(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: { isControl($0) && $0.value >= 0x7f }) else { return json }
        var out = ""
        for scalar in json.unicodeScalars {
            if isControl(scalar) && scalar.value >= 0x7f {
                out += "\\u" + hex(scalar.value, width: 4)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Screen text handed to the model inside `<screen_data source="…">` … `</screen_data>`, so the model can tell
    /// what the screen says from what xclaw says; a closing tag inside the text is broken so it cannot end the block
    /// early.
    public static func screenData(_ body: String, source: String) -> String {
        block("screen_data", body, source: source)
    }

    /// A fetched web page's text inside `<web_data source="URL">` … `</web_data>`, for the same reason: a page is
    /// written by anyone, and nothing inside the block is from xclaw or the user.
    public static func webData(_ body: String, source: String) -> String {
        block("web_data", body, source: escaped(source, limit: 500))
    }

    /// What a desktop service answered (a D-Bus reply, a notification's text) inside `<service_data source="…">` …
    /// `</service_data>`: another program wrote it, so it is data, as screen text is.
    public static func serviceData(_ body: String, source: String) -> String {
        block("service_data", body, source: escaped(source, limit: 500))
    }

    /// `body` inside `<tag source="…">` … `</tag>`, with any closing tag inside it broken.
    private static func block(_ tag: String, _ body: String, source: String) -> String {
        let safe = body.replacingOccurrences(of: "</\(tag)", with: "<\\/\(tag)", options: .caseInsensitive)
        return "<\(tag) source=\"\(source)\">\n\(safe)\n</\(tag)>"
    }

    private static func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
