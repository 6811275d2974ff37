import Foundation

/// A typed D-Bus value, written out as GVariant text for the call: D-Bus is typed where JSON is not (`u` and `x` are
/// both numbers), so arguments are built with their types and replies come back as JSON.
public indirect enum BusValue: Sendable, Hashable {
    /// `s`
    case string(String)
    /// `o`
    case objectPath(String)
    /// `b`
    case bool(Bool)
    /// `y`
    case byte(UInt8)
    /// `n`
    case int16(Int16)
    /// `q`
    case uint16(UInt16)
    /// `i`
    case int32(Int32)
    /// `u`
    case uint32(UInt32)
    /// `x`
    case int64(Int64)
    /// `t`
    case uint64(UInt64)
    /// `d`
    case double(Double)
    /// `g`
    case signature(String)
    /// `v`: a value wrapped with its type.
    case variant(BusValue)
    /// `aT`: the element type is needed for an empty array, so it is always given.
    case array(element: String, [BusValue])
    /// `a{KV}`: entries in the order given.
    case dictionary(key: String, value: String, [(BusValue, BusValue)])
    /// `(…)`
    case tuple([BusValue])

    /// `as` from strings.
    public static func strings(_ values: [String]) -> BusValue { .array(element: "s", values.map(BusValue.string)) }

    /// `a{sv}` from string keys.
    public static func vardict(_ entries: [(String, BusValue)]) -> BusValue {
        .dictionary(key: "s", value: "v", entries.map { (.string($0.0), .variant($0.1)) })
    }

    /// The D-Bus type signature.
    public var signature: String {
        switch self {
        case .string: return "s"
        case .objectPath: return "o"
        case .bool: return "b"
        case .byte: return "y"
        case .int16: return "n"
        case .uint16: return "q"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .signature: return "g"
        case .variant: return "v"
        case .array(let element, _): return "a" + element
        case .dictionary(let key, let value, _): return "a{\(key)\(value)}"
        case .tuple(let items): return "(" + items.map(\.signature).joined() + ")"
        }
    }

    /// GVariant text (`g_variant_parse`), every number and container annotated with its type so nothing is guessed.
    public var gvariantText: String {
        switch self {
        case .string(let s): return Self.quoted(s)
        case .objectPath(let s): return "objectpath " + Self.quoted(s)
        case .bool(let b): return b ? "true" : "false"
        case .byte(let n): return "byte \(n)"
        case .int16(let n): return "int16 \(n)"
        case .uint16(let n): return "uint16 \(n)"
        case .int32(let n): return "int32 \(n)"
        case .uint32(let n): return "uint32 \(n)"
        case .int64(let n): return "int64 \(n)"
        case .uint64(let n): return "uint64 \(n)"
        case .double(let d): return "double " + (d.isFinite ? "\(d)" : "0")
        case .signature(let s): return "signature " + Self.quoted(s)
        case .variant(let inner): return "<\(inner.gvariantText)>"
        case .array(let element, let items):
            return "@a\(element) [" + items.map(\.gvariantText).joined(separator: ", ") + "]"
        case .dictionary(let key, let value, let entries):
            return "@a{\(key)\(value)} {"
                + entries.map { "\($0.0.gvariantText): \($0.1.gvariantText)" }.joined(separator: ", ") + "}"
        case .tuple(let items):
            // A one-element tuple needs its comma, as in Python.
            return "(" + items.map(\.gvariantText).joined(separator: ", ") + (items.count == 1 ? ",)" : ")")
        }
    }

    /// A string in GVariant's quoting: single quotes, with backslash escapes for quotes, backslashes and controls.
    static func quoted(_ s: String) -> String {
        var out = "'"
        for scalar in s.unicodeScalars {
            switch scalar {
            case "'": out += "\\'"
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "'"
    }

    /// Equal when the texts are: the dictionary's tuple entries keep the enum from deriving it.
    public static func == (a: BusValue, b: BusValue) -> Bool { a.gvariantText == b.gvariantText }

    /// Hashes the text, matching `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(gvariantText) }
}
