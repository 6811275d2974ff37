import XclawMessages

/// A D-Bus type parsed from a signature, so JSON arguments (a model's, a user's) become typed values: JSON has one
/// number type where D-Bus has eight.
public indirect enum BusType: Sendable, Hashable {
    /// A basic type: one of `sogbynqiuxtd`.
    case basic(Character)
    /// `v`
    case variant
    /// `aT`
    case array(BusType)
    /// `a{KV}`
    case dictionary(BusType, BusType)
    /// `(…)`
    case tuple([BusType])

    static let basics: Set<Character> = ["s", "o", "g", "b", "y", "n", "q", "i", "u", "x", "t", "d"]

    /// The signature of this one type.
    public var signature: String {
        switch self {
        case .basic(let c): return String(c)
        case .variant: return "v"
        case .array(let element): return "a" + element.signature
        case .dictionary(let key, let value): return "a{\(key.signature)\(value.signature)}"
        case .tuple(let items): return "(" + items.map(\.signature).joined() + ")"
        }
    }

    /// The complete types of `signature` in order (`"sa{sv}u"` → three); a malformed one, or a file descriptor (`h`,
    /// which cannot be passed as text), is refused with the reason.
    public static func parse(_ signature: String) throws -> [BusType] {
        var chars = Array(signature)[...]
        var types: [BusType] = []
        while !chars.isEmpty { types.append(try one(&chars, signature)) }
        return types
    }

    private static func one(_ chars: inout ArraySlice<Character>, _ whole: String) throws -> BusType {
        guard let c = chars.popFirst() else { throw bad(whole, "it ends in the middle of a type") }
        switch c {
        case _ where basics.contains(c): return .basic(c)
        case "v": return .variant
        case "h": throw bad(whole, "file descriptors (h) cannot be passed")
        case "a":
            if chars.first == "{" {
                chars.removeFirst()
                let key = try one(&chars, whole)
                guard case .basic = key else { throw bad(whole, "a dictionary's key must be a basic type") }
                let value = try one(&chars, whole)
                guard chars.popFirst() == "}" else { throw bad(whole, "a dictionary entry has one key and one value") }
                return .dictionary(key, value)
            }
            return .array(try one(&chars, whole))
        case "(":
            var items: [BusType] = []
            while chars.first != ")" {
                guard !chars.isEmpty else { throw bad(whole, "a \"(\" is not closed") }
                items.append(try one(&chars, whole))
            }
            chars.removeFirst()
            guard !items.isEmpty else { throw bad(whole, "an empty tuple \"()\" is not a type") }
            return .tuple(items)
        default: throw bad(whole, "\"\(c)\" is not a D-Bus type code")
        }
    }

    private static func bad(_ signature: String, _ why: String) -> BusError {
        .invalidArguments(call: "signature \"\(signature)\"", message: why)
    }

    /// `json` as a value of this type; a value that does not fit (a string for `u`, 300 for `y`) is refused.
    public func value(_ json: JSONValue) throws -> BusValue {
        func refuse(_ what: String) -> BusError {
            .invalidArguments(call: "argument of type \(signature)", message: "\(json.jsonText) is not \(what)")
        }
        func integer<T: FixedWidthInteger>(_: T.Type) throws -> T {
            guard let d = json.double, d.rounded() == d, let n = T(exactly: d) else {
                throw refuse("an integer in \(T.min)…\(T.max)")
            }
            return n
        }
        switch self {
        case .basic(let c):
            switch c {
            case "s": guard let s = json.string else { throw refuse("a string") }; return .string(s)
            case "o":
                guard let s = json.string, s.hasPrefix("/") else { throw refuse("an object path (\"/…\")") }
                return .objectPath(s)
            case "g": guard let s = json.string else { throw refuse("a signature") }; return .signature(s)
            case "b": guard let b = json.bool else { throw refuse("true or false") }; return .bool(b)
            case "d": guard let d = json.double else { throw refuse("a number") }; return .double(d)
            case "y": return .byte(try integer(UInt8.self))
            case "n": return .int16(try integer(Int16.self))
            case "q": return .uint16(try integer(UInt16.self))
            case "i": return .int32(try integer(Int32.self))
            case "u": return .uint32(try integer(UInt32.self))
            case "x": return .int64(try integer(Int64.self))
            default: return .uint64(try integer(UInt64.self))
            }
        case .variant: return .variant(try Self.inferred(json))
        case .array(let element):
            guard let items = json.array else { throw refuse("an array") }
            return .array(element: element.signature, try items.map(element.value))
        case .dictionary(let key, let value):
            guard let object = json.object else { throw refuse("an object") }
            let entries = try object.keys.sorted().map { name -> (BusValue, BusValue) in
                // Object keys are strings in JSON: a numeric key type reads the string as a number.
                let keyJSON: JSONValue =
                    key == .basic("s") || key == .basic("o") || key == .basic("g")
                    ? .string(name) : (Double(name).map(JSONValue.number) ?? .string(name))
                return (try key.value(keyJSON), try value.value(object[name] ?? .null))
            }
            return .dictionary(key: key.signature, value: value.signature, entries)
        case .tuple(let types):
            guard let items = json.array, items.count == types.count else {
                throw refuse("an array of \(types.count) values")
            }
            return .tuple(try zip(types, items).map { try $0.value($1) })
        }
    }

    /// The type JSON suggests when none is given (inside a variant): strings `s`, whole numbers `i` (or `x` when
    /// larger), other numbers `d`, booleans `b`, arrays of strings `as`, objects `a{sv}`.
    public static func inferred(_ json: JSONValue) throws -> BusValue {
        switch json {
        case .string(let s): return .string(s)
        case .bool(let b): return .bool(b)
        case .number(let d):
            if d.rounded() == d, let n = Int32(exactly: d) { return .int32(n) }
            if d.rounded() == d, let n = Int64(exactly: d) { return .int64(n) }
            return .double(d)
        case .array(let items):
            if items.allSatisfy({ $0.string != nil }) { return .strings(items.compactMap(\.string)) }
            return .array(element: "v", try items.map { .variant(try inferred($0)) })
        case .object(let object):
            return .vardict(try object.keys.sorted().map { ($0, try inferred(object[$0] ?? .null)) })
        case .null:
            throw BusError.invalidArguments(call: "a variant", message: "null has no D-Bus type: give a value")
        }
    }
}
