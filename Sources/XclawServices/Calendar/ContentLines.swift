import Foundation

/// A parameter of a content line (`TZID=Europe/Berlin`, `TYPE=WORK,VOICE`): its name upper-cased, its values
/// unquoted.
public struct ContentParameter: Sendable, Hashable {
    /// The name, upper-cased (`TZID`).
    public var name: String
    /// The values, unquoted, in order.
    public var values: [String]

    /// A parameter.
    public init(_ name: String, _ values: [String]) { (self.name, self.values) = (name.uppercased(), values) }
}

/// One property of iCalendar (RFC 5545) or vCard (RFC 6350): `NAME;PARAM=VALUE:VALUE`, unfolded.
public struct ContentLine: Sendable, Hashable {
    /// The property's name, upper-cased (`DTSTART`, `X-XCLAW-KEY`).
    public var name: String
    /// Its parameters, in order.
    public var parameters: [ContentParameter]
    /// The value as written (for a TEXT value, escaped: `text` reads it).
    public var value: String

    /// A property with a raw value.
    public init(name: String, parameters: [ContentParameter] = [], value: String) {
        (self.name, self.parameters, self.value) = (name.uppercased(), parameters, value)
    }

    /// A property with a TEXT value, escaped as the formats require.
    public init(name: String, parameters: [ContentParameter] = [], text: String) {
        self.init(name: name, parameters: parameters, value: ContentLines.escape(text))
    }

    /// The value read as TEXT (escapes undone).
    public var text: String { ContentLines.unescape(value) }

    /// The value read as a structured TEXT value (`N`, `ORG`, `ADR`): split on unescaped `;`, each part unescaped.
    public var parts: [String] { ContentLines.split(value, on: ";").map(ContentLines.unescape) }

    /// The first value of parameter `name`, if present.
    public func parameter(_ name: String) -> String? {
        parameters.first { $0.name == name.uppercased() }?.values.first
    }

    /// Every value of parameter `name` (`TYPE=WORK,VOICE;TYPE=PREF` gives three).
    public func parameterValues(_ name: String) -> [String] {
        parameters.filter { $0.name == name.uppercased() }.flatMap(\.values)
    }

    /// Reads one unfolded line; nil when it has no `:` or no name (not a property).
    public static func parse(_ line: String) -> ContentLine? {
        let scalars = Array(line.unicodeScalars)
        var index = 0
        func take(until stops: Set<Unicode.Scalar>) -> String {
            var out = String.UnicodeScalarView()
            while index < scalars.count, !stops.contains(scalars[index]) {
                out.append(scalars[index])
                index += 1
            }
            return String(out)
        }
        let name = take(until: [";", ":"]).trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, index < scalars.count else { return nil }
        var parameters: [ContentParameter] = []
        while index < scalars.count, scalars[index] == ";" {
            index += 1
            let key = take(until: ["=", ";", ":"])
            var values: [String] = []
            if index < scalars.count, scalars[index] == "=" {
                index += 1
                repeat {
                    if index < scalars.count, scalars[index] == "," { index += 1 }
                    if index < scalars.count, scalars[index] == "\"" {
                        index += 1
                        values.append(ContentLines.decodeParameter(take(until: ["\""])))
                        if index < scalars.count { index += 1 }  // the closing quote
                        _ = take(until: [",", ";", ":"])  // anything after it is not the value's
                    } else {
                        values.append(ContentLines.decodeParameter(take(until: [",", ";", ":"])))
                    }
                } while index < scalars.count && scalars[index] == ","
            }
            parameters.append(ContentParameter(key, values))
        }
        guard index < scalars.count, scalars[index] == ":" else { return nil }
        var value = String.UnicodeScalarView()
        value.append(contentsOf: scalars[(index + 1)...])
        return ContentLine(name: name, parameters: parameters, value: String(value))
    }

    /// The line as written, unfolded (no CRLF): parameter values quoted when they hold `:`, `;` or `,`.
    public var unfolded: String {
        var out = name
        for parameter in parameters {
            out += ";" + parameter.name
            guard !parameter.values.isEmpty else { continue }
            out +=
                "="
                + parameter.values.map { value -> String in
                    let encoded = ContentLines.encodeParameter(value)
                    return encoded.contains(where: { ":;,".contains($0) }) ? "\"\(encoded)\"" : encoded
                }.joined(separator: ",")
        }
        return out + ":" + value
    }
}

/// A component (`VCALENDAR`, `VEVENT`, `VTODO`, `VALARM`, `VCARD`): its properties and the components inside it,
/// in order, so an item read, changed and written back keeps what xclaw does not know (alarms, attendees, rules).
public struct ContentComponent: Sendable, Hashable {
    /// The name, upper-cased (`VEVENT`).
    public var name: String
    /// Its properties, in order.
    public var properties: [ContentLine]
    /// The components inside it, in order.
    public var components: [ContentComponent]

    /// A component.
    public init(name: String, properties: [ContentLine] = [], components: [ContentComponent] = []) {
        (self.name, self.properties, self.components) = (name.uppercased(), properties, components)
    }

    /// The first property called `name`.
    public func first(_ name: String) -> ContentLine? { properties.first { $0.name == name.uppercased() } }

    /// Every property called `name`.
    public func all(_ name: String) -> [ContentLine] { properties.filter { $0.name == name.uppercased() } }

    /// The first property called `name` read as TEXT, nil when absent.
    public func text(_ name: String) -> String? { first(name)?.text }

    /// Replaces the properties called `name` with `line` (in the first one's place; at the end if none), or removes
    /// them when `line` is nil.
    public mutating func set(_ name: String, _ line: ContentLine?) {
        let upper = name.uppercased()
        let at = properties.firstIndex { $0.name == upper }
        properties.removeAll { $0.name == upper }
        guard let line else { return }
        properties.insert(line, at: min(at ?? properties.count, properties.count))
    }

    /// Sets a TEXT property, or removes it when `text` is nil.
    public mutating func setText(_ name: String, _ text: String?) {
        set(name, text.map { ContentLine(name: name, text: $0) })
    }

    /// The components in `text` (top level: usually one `VCALENDAR`, or bare `VEVENT`s and `VCARD`s as EDS hands
    /// them out). Folded lines, CRLF or LF line ends and blank lines are accepted; a component left open or closed
    /// out of turn is refused.
    public static func parse(_ text: String) throws -> [ContentComponent] {
        var stack: [ContentComponent] = []
        var top: [ContentComponent] = []
        for (number, raw) in ContentLines.unfold(text).enumerated() {
            guard !raw.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
            guard let line = ContentLine.parse(raw) else {
                throw ContentError.malformed(line: number + 1, text: raw)
            }
            switch line.name {
            case "BEGIN":
                stack.append(ContentComponent(name: line.value.trimmingCharacters(in: .whitespaces)))
            case "END":
                let closing = line.value.trimmingCharacters(in: .whitespaces).uppercased()
                guard let done = stack.popLast(), done.name == closing else {
                    throw ContentError.unbalanced(closing)
                }
                if stack.isEmpty { top.append(done) } else { stack[stack.count - 1].components.append(done) }
            default:
                guard !stack.isEmpty else { throw ContentError.outside(line.name) }
                stack[stack.count - 1].properties.append(line)
            }
        }
        if let open = stack.last { throw ContentError.unclosed(open.name) }
        return top
    }

    /// The component as the formats write it: CRLF after every line, lines folded at 75 octets.
    public var serialized: String {
        var out = ContentLines.fold("BEGIN:" + name)
        for property in properties { out += ContentLines.fold(property.unfolded) }
        for component in components { out += component.serialized }
        return out + ContentLines.fold("END:" + name)
    }
}

/// Why text could not be read as iCalendar or vCard.
public enum ContentError: Error, Equatable, CustomStringConvertible {
    /// A line that is not `NAME[;PARAMS]:VALUE`.
    case malformed(line: Int, text: String)
    /// An `END` that closes nothing, or another component than the open one.
    case unbalanced(String)
    /// A component never closed.
    case unclosed(String)
    /// A property outside any component.
    case outside(String)

    /// What is wrong, for the message of whoever handed the text over.
    public var description: String {
        switch self {
        case .malformed(let line, let text): return "line \(line) is not a property: \(text.prefix(80))"
        case .unbalanced(let name): return "END:\(name) closes no open component"
        case .unclosed(let name): return "BEGIN:\(name) is never closed"
        case .outside(let name): return "property \(name) stands outside any component"
        }
    }
}

/// The line syntax iCalendar and vCard share: folding, unfolding and the escapes of TEXT values and parameters.
public enum ContentLines {
    /// The longest line in octets, CRLF not counted (RFC 5545 3.1, RFC 6350 3.2).
    public static let lineOctets = 75

    /// The logical lines of `text`: a line break followed by a space or tab continues the line before it (the
    /// break and that one character removed); CRLF, LF and lone CR all end lines.
    public static func unfold(_ text: String) -> [String] {
        var lines: [String] = []
        var current = String.UnicodeScalarView()
        var scalars = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = scalars.next()
        var atBreak = false
        while let scalar = pending {
            pending = scalars.next()
            if scalar == "\r" || scalar == "\n" {
                if scalar == "\r", pending == "\n" { pending = scalars.next() }
                atBreak = true
                continue
            }
            if atBreak {
                atBreak = false
                if scalar == " " || scalar == "\t" { continue }
                lines.append(String(current))
                current = String.UnicodeScalarView()
            }
            current.append(scalar)
        }
        if !current.isEmpty { lines.append(String(current)) }
        return lines
    }

    /// One logical line folded to at most 75 octets a line (a continuation's leading space counted), never inside a
    /// UTF-8 sequence, each line ending in CRLF.
    public static func fold(_ line: String) -> String {
        var out = ""
        var width = 0
        for scalar in line.unicodeScalars {
            let octets = String(scalar).utf8.count
            if width + octets > lineOctets {
                out += "\r\n "
                width = 1
            }
            out.unicodeScalars.append(scalar)
            width += octets
        }
        return out + "\r\n"
    }

    /// A TEXT value escaped: `\` `;` `,` get a backslash, line breaks become `\n`.
    public static func escape(_ text: String) -> String {
        var out = ""
        var scalars = text.unicodeScalars.makeIterator()
        var pending = scalars.next()
        while let scalar = pending {
            pending = scalars.next()
            switch scalar {
            case "\\": out += "\\\\"
            case ";": out += "\\;"
            case ",": out += "\\,"
            case "\r":
                if pending == "\n" { pending = scalars.next() }
                out += "\\n"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A TEXT value read: `\n` and `\N` are line breaks, `\\` `\;` `\,` (and `\:`, which some writers emit) the
    /// character; any other backslash is kept as written.
    public static func unescape(_ value: String) -> String {
        guard value.contains("\\") else { return value }
        var out = ""
        var scalars = value.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            guard scalar == "\\" else {
                out.unicodeScalars.append(scalar)
                continue
            }
            guard let next = scalars.next() else {
                out += "\\"
                break
            }
            switch next {
            case "n", "N": out += "\n"
            case "\\", ";", ",", ":": out.unicodeScalars.append(next)
            default: out += "\\" + String(next)
            }
        }
        return out
    }

    /// `value` split on `separator` where it is not escaped by a backslash (the escapes are kept for `unescape`).
    public static func split(_ value: String, on separator: Character) -> [String] {
        var parts: [String] = []
        var current = ""
        var escaped = false
        for character in value {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                current.append(character)
                escaped = true
            } else if character == separator {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        parts.append(current)
        return parts
    }

    /// A parameter value written (RFC 6868): `^` `"` and line breaks as `^^` `^'` `^n`.
    static func encodeParameter(_ value: String) -> String {
        guard value.contains(where: { "^\"\n\r".contains($0) }) else { return value }
        var out = ""
        for character in value {
            switch character {
            case "^": out += "^^"
            case "\"": out += "^'"
            case "\n", "\r\n", "\r": out += "^n"
            default: out.append(character)
            }
        }
        return out
    }

    /// A parameter value read (RFC 6868's `^^`, `^'`, `^n`; any other `^` kept).
    static func decodeParameter(_ value: String) -> String {
        guard value.contains("^") else { return value }
        var out = ""
        var characters = value.makeIterator()
        while let character = characters.next() {
            guard character == "^" else {
                out.append(character)
                continue
            }
            switch characters.next() {
            case "^": out += "^"
            case "'": out += "\""
            case "n": out += "\n"
            case let other?: out += "^" + String(other)
            case nil: out += "^"
            }
        }
        return out
    }
}
