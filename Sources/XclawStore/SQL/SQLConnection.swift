import Foundation

/// Which SQL a connection speaks. The store's queries are shared; the few places where SQLite and PostgreSQL differ
/// (JSON functions, the row id of a table without one) ask the dialect.
enum SQLDialect: String, Sendable {
    /// SQLite through GRDB: the embedded default.
    case sqlite
    /// PostgreSQL through libpq: the fleet's shared store.
    case postgres
}

/// One connection inside a transaction (or an autocommit statement) of the store: what every query of the store is
/// written against, so one implementation of the aggregates serves both backends. Not thread-safe: the store hands
/// it to one closure at a time.
protocol SQLConnection: AnyObject {
    /// The SQL this connection speaks.
    var dialect: SQLDialect { get }

    /// Runs a statement that returns no rows; `?` placeholders bind `arguments` in order.
    func execute(sql: String, arguments: SQLArguments, cached: Bool) throws

    /// Runs a query and returns its rows.
    func rows(sql: String, arguments: SQLArguments, cached: Bool) throws -> [SQLRow]

    /// Rows the last `execute` inserted, updated or deleted.
    var changesCount: Int { get }

    /// The id the last INSERT into a table with an identity column gave its row.
    var lastInsertedRowID: Int64 { get throws }
}

extension SQLConnection {
    /// Runs a statement (parsed anew each time: DDL and rare writes).
    func execute(sql: String, arguments: SQLArguments = []) throws {
        try execute(sql: sql, arguments: arguments, cached: false)
    }

    /// A statement the connection keeps prepared, for the hot paths (GRDB's statement cache on SQLite).
    func cachedStatement(sql: String) -> SQLStatement { SQLStatement(db: self, sql: sql) }
}

/// A statement to run through its connection's cache.
struct SQLStatement {
    /// The connection.
    let db: any SQLConnection
    /// The SQL.
    let sql: String

    /// Runs it.
    func execute(arguments: SQLArguments = []) throws { try db.execute(sql: sql, arguments: arguments, cached: true) }
}
