import Foundation

/// One result row, read by column name (case-insensitive, as both backends fold unquoted names).
struct SQLRow: Sendable {
    /// The result's column names, shared by its rows.
    final class Columns: Sendable {
        /// Lowercased name → position; the first column of a name wins, as with `SELECT s.*, r.x`.
        let index: [String: Int]

        init(_ names: [String]) {
            var index: [String: Int] = [:]
            for (position, name) in names.enumerated() where index[name.lowercased()] == nil {
                index[name.lowercased()] = position
            }
            self.index = index
        }
    }

    /// The names.
    let columns: Columns
    /// The values, in column order.
    let values: [SQLValue]

    /// The raw value of a column; NULL for a column the query did not select (a caller bug the tests catch).
    func value(_ name: String) -> SQLValue {
        guard let position = columns.index[name.lowercased()], values.indices.contains(position) else { return .null }
        return values[position]
    }

    /// A column that may be NULL.
    subscript<T: SQLReadable>(_ name: String) -> T? { T.read(value(name)) }

    /// A column the schema declares NOT NULL. A NULL or a value of another class there means the database was edited
    /// by hand or by a newer xclaw: that stops the process with the column's name, as GRDB did before this layer.
    subscript<T: SQLReadable>(_ name: String) -> T {
        guard let read = T.read(value(name)) else {
            fatalError("the store's column \(name) holds \(value(name)), not \(T.self): the database was edited")
        }
        return read
    }
}

extension SQLRow {
    /// Every row of a query.
    static func fetchAll(_ db: any SQLConnection, sql: String, arguments: SQLArguments = []) throws -> [SQLRow] {
        try db.rows(sql: sql, arguments: arguments, cached: false)
    }

    /// Every row of a cached statement.
    static func fetchAll(_ statement: SQLStatement, arguments: SQLArguments = []) throws -> [SQLRow] {
        try statement.db.rows(sql: statement.sql, arguments: arguments, cached: true)
    }

    /// The first row of a query, if any.
    static func fetchOne(_ db: any SQLConnection, sql: String, arguments: SQLArguments = []) throws -> SQLRow? {
        try db.rows(sql: sql, arguments: arguments, cached: false).first
    }
}

extension SQLReadable {
    /// The first column of every row; NULLs are left out.
    static func fetchAll(_ db: any SQLConnection, sql: String, arguments: SQLArguments = []) throws -> [Self] {
        try db.rows(sql: sql, arguments: arguments, cached: false).compactMap { $0.values.first.flatMap(read) }
    }

    /// The first column of the first row; nil when there is no row or it is NULL.
    static func fetchOne(_ db: any SQLConnection, sql: String, arguments: SQLArguments = []) throws -> Self? {
        try db.rows(sql: sql, arguments: arguments, cached: false).first?.values.first.flatMap(read)
    }

    /// `fetchOne` through a cached statement, for the hot paths.
    static func fetchOne(_ statement: SQLStatement, arguments: SQLArguments = []) throws -> Self? {
        try statement.db.rows(sql: statement.sql, arguments: arguments, cached: true).first?.values.first.flatMap(read)
    }
}
