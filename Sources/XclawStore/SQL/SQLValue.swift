import Foundation

/// One value crossing the store's SQL boundary, whichever backend holds it: the five storage classes SQLite has,
/// which PostgreSQL's columns map onto (integers and booleans as `integer`, floats and numerics as `real`, `bytea` as
/// `blob`, the rest as `text`). The store's queries are written once against these, not against either driver.
enum SQLValue: Sendable, Hashable {
    /// SQL NULL.
    case null
    /// A 64-bit integer (also a boolean, 0 or 1).
    case integer(Int64)
    /// A double.
    case real(Double)
    /// Text (dates too: ISO-8601 UTC, see `StoreDate`).
    case text(String)
    /// Bytes (screenshots).
    case blob(Data)
}

/// A Swift value a query can bind as an argument.
protocol SQLBindable {
    /// The value as bound.
    var sqlValue: SQLValue { get }
}

/// A Swift value a query result can be read as: nil when the value is NULL or of another class. `SQLRow`'s optional
/// subscript passes that on; its non-optional one (for NOT NULL columns) stops the process naming the column, as
/// GRDB's did before this layer.
protocol SQLReadable {
    /// The value, or nil when `value` is NULL or cannot be this type.
    static func read(_ value: SQLValue) -> Self?
}

extension Int64: SQLBindable, SQLReadable {
    var sqlValue: SQLValue { .integer(self) }
    static func read(_ value: SQLValue) -> Int64? {
        switch value {
        case .integer(let v): return v
        case .real(let v): return v.rounded() == v && abs(v) < 9.2e18 ? Int64(v) : nil
        case .text(let v): return Int64(v)
        default: return nil
        }
    }
}

extension Int: SQLBindable, SQLReadable {
    var sqlValue: SQLValue { .integer(Int64(self)) }
    static func read(_ value: SQLValue) -> Int? { Int64.read(value).map { Int($0) } }
}

extension Int32: SQLBindable, SQLReadable {
    var sqlValue: SQLValue { .integer(Int64(self)) }
    static func read(_ value: SQLValue) -> Int32? { Int64.read(value).flatMap { Int32(exactly: $0) } }
}

extension Double: SQLBindable, SQLReadable {
    var sqlValue: SQLValue { .real(self) }
    static func read(_ value: SQLValue) -> Double? {
        switch value {
        case .integer(let v): return Double(v)
        case .real(let v): return v
        case .text(let v): return Double(v)
        default: return nil
        }
    }
}

extension Bool: SQLBindable, SQLReadable {
    var sqlValue: SQLValue { .integer(self ? 1 : 0) }
    static func read(_ value: SQLValue) -> Bool? { Int64.read(value).map { $0 != 0 } }
}

extension String: SQLBindable, SQLReadable {
    var sqlValue: SQLValue { .text(self) }
    static func read(_ value: SQLValue) -> String? {
        switch value {
        case .text(let v): return v
        case .integer(let v): return String(v)
        case .real(let v): return String(v)
        case .blob(let v): return String(data: v, encoding: .utf8)
        case .null: return nil
        }
    }
}

extension Data: SQLBindable, SQLReadable {
    var sqlValue: SQLValue { .blob(self) }
    static func read(_ value: SQLValue) -> Data? {
        switch value {
        case .blob(let v): return v
        case .text(let v): return Data(v.utf8)
        default: return nil
        }
    }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
    var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

/// A query's arguments, written as an array literal of bindable values (nil binds NULL).
struct SQLArguments: ExpressibleByArrayLiteral, Sendable {
    /// The values, in placeholder order.
    var values: [SQLValue]

    init(arrayLiteral elements: (any SQLBindable)?...) { values = elements.map { $0?.sqlValue ?? .null } }

    /// Arguments from a list built at run time.
    init(_ elements: [(any SQLBindable)?]) { values = elements.map { $0?.sqlValue ?? .null } }
}
