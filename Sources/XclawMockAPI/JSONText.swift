import Foundation

/// JSON with ordered object keys, so every event carries its fields in the order the real API writes them.
enum JSONText: Sendable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case null
    case array([JSONText])
    case object([(String, JSONText)])

    /// Compact, one-line serialization; strings are escaped by JSONSerialization.
    var serialized: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .string(let s): out += JSONText.quote(s)
        case .int(let i): out += String(i)
        case .bool(let b): out += b ? "true" : "false"
        case .null: out += "null"
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let fields):
            out += "{"
            for (i, (key, value)) in fields.enumerated() {
                if i > 0 { out += "," }
                out += JSONText.quote(key)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    /// A JSON string literal, escaped by JSONSerialization (wrapped in an array: fragments are not portable).
    static func quote(_ s: String) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: [s], options: [.withoutEscapingSlashes]),
            let text = String(data: data, encoding: .utf8), text.count >= 2
        else { return "\"\"" }
        return String(text.dropFirst().dropLast())
    }
}
