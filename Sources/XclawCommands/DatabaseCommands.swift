import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawStore

/// `xclaw db`: the database itself: where it is and its schema.
struct DatabaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db", abstract: "Show the database (SQLite file or PostgreSQL) and bring its schema up to date.",
        discussion: """
            Examples:
              xclaw db  # which database, its tables and migrations (as xclaw db info)
              xclaw db migrate --db postgres://xclaw@db.internal/xclaw
            """,
        subcommands: [DatabaseInfo.self, DatabaseMigrate.self], defaultSubcommand: DatabaseInfo.self)
}

/// One database's description, as `db info --json` and `db migrate --json` print it.
private struct DatabaseRow: Encodable {
    var database, backend: String
    var tables, migrations: [String]
    var journal_mode, synchronous: String
    var foreign_keys: Bool

    init(_ info: StoreInfo) {
        (database, backend, tables, migrations) = (info.path, info.backend, info.tables, info.migrations)
        (journal_mode, synchronous, foreign_keys) = (info.journalMode, info.synchronous, info.foreignKeys)
    }

    /// The database of `options`, opened (and so migrated), described.
    static func open(_ options: StoreOptions) throws -> DatabaseRow {
        DatabaseRow(try options.open(reportRecovered: false, recover: false).info())
    }

    /// The text form.
    var text: String {
        "\(backend) \(database): \(tables.count) tables, migrations \(migrations.joined(separator: ", "))"
    }
}

/// `xclaw db info`.
struct DatabaseInfo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Say which database xclaw uses (a URL without its password), its tables and migrations.",
        discussion: """
            --json: database, backend (sqlite or postgresql), tables, migrations, journal_mode, synchronous, \
            foreign_keys.
            Examples:
              xclaw db info
              xclaw db info --db ~/work.sqlite --json
            """)
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let row = try DatabaseRow.open(storeOptions)
        try emit(row, json: json) { row.text }
    }
}

/// `xclaw db migrate`: for a deployment's migration step (a Kubernetes Job) before workers start.
struct DatabaseMigrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Create the database's tables or bring them up to date, then describe it (as `db info`).",
        discussion: """
            Every command migrates on first use; this does only that, for a deployment's migration step. Exit 5 when \
            the database cannot be reached or written.
            Examples:
              xclaw db migrate  # a deployment's migration step, before its workers start
              xclaw db migrate --db postgres://xclaw@db.internal/xclaw --json
            """)
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON (as `db info --json`).") var json = false

    func run() throws {
        let row = try DatabaseRow.open(storeOptions)
        try emit(row, json: json) { "migrated: " + row.text }
    }
}
