import Foundation

@_implementationOnly import GRDB

/// The SQLite backend's connection: GRDB's `Database` for the duration of one `read`/`write` closure.
final class GRDBConnection: SQLConnection {
    /// GRDB's connection, valid only inside the closure that made this.
    private let db: Database

    init(_ db: Database) { self.db = db }

    var dialect: SQLDialect { .sqlite }

    func execute(sql: String, arguments: SQLArguments, cached: Bool) throws {
        let statement = cached ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
        try statement.execute(arguments: Self.arguments(arguments))
    }

    func rows(sql: String, arguments: SQLArguments, cached: Bool) throws -> [SQLRow] {
        let statement = cached ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
        let columns = SQLRow.Columns(statement.columnNames)
        return try GRDB.Row.fetchAll(statement, arguments: Self.arguments(arguments)).map { row in
            SQLRow(columns: columns, values: row.databaseValues.map(Self.value))
        }
    }

    var changesCount: Int { db.changesCount }

    var lastInsertedRowID: Int64 { db.lastInsertedRowID }

    /// GRDB's arguments for ours.
    private static func arguments(_ arguments: SQLArguments) -> StatementArguments {
        StatementArguments(
            arguments.values.map { value -> (any DatabaseValueConvertible)? in
                switch value {
                case .null: return nil
                case .integer(let v): return v
                case .real(let v): return v
                case .text(let v): return v
                case .blob(let v): return v
                }
            })
    }

    /// Our value for GRDB's.
    private static func value(_ value: DatabaseValue) -> SQLValue {
        switch value.storage {
        case .null: return .null
        case .int64(let v): return .integer(v)
        case .double(let v): return .real(v)
        case .string(let v): return .text(v)
        case .blob(let v): return .blob(v)
        }
    }
}
