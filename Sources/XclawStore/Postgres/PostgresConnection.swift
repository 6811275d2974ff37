import CPostgres
import Foundation

/// One libpq connection to the fleet's PostgreSQL server: the thin Swift wrapper over libpq's C API (all of its
/// unsafety stays in this file). Queries use the store's `?` placeholders, rewritten to `$1…`; values are sent with
/// their types (text, int8, float8, bytea) so the server never guesses, and read back by column type.
final class PostgresConnection: SQLConnection {
    /// libpq's handle; nil once closed.
    private var handle: OpaquePointer?
    /// The URL without its password, for errors.
    let location: String
    /// Rows changed by the last command.
    private(set) var changesCount = 0
    /// Whether the connection broke (the server went away): the pool drops it instead of reusing it.
    private(set) var isBroken = false
    /// A transaction's opening statements, sent with the first statement after them, in its round trip (a pipeline):
    /// a transaction whose body runs nothing sends nothing.
    private var opening: [String] = []
    /// Whether the opening statements were sent.
    private(set) var opened = false
    /// The first value of the last opening statement's result, once sent (a write transaction's id).
    private(set) var openingValue: String?
    /// A COMMIT sent and not waited for (a read-only transaction's): its answer is read before the next statement.
    private var commitInFlight = false
    /// The statements prepared on this connection (parsed and planned once, not at every run), by their SQL and
    /// argument types: the store's queries are a fixed set, run again and again by a daemon or a worker.
    private var prepared: [PreparedKey: String] = [:]
    /// At most this many prepared statements are kept; statements past them run unprepared.
    private static let preparedLimit = 512

    /// A prepared statement's key: its text and its arguments' types (a NULL leaves the type to the server).
    private struct PreparedKey: Hashable {
        let sql: String
        let types: [Oid]
    }

    var dialect: SQLDialect { .postgres }

    /// Connects; `StoreError.unreachable` when the server cannot be reached or refuses the login.
    init(url: PostgresURL, timeoutSeconds: Int = 5) throws {
        location = url.redacted
        // The URL as given, then keywords that override it: a connect timeout, and TCP keepalives so a server that
        // vanished without closing the socket is noticed in seconds, not the kernel's two hours.
        let keywords = [
            "dbname", "connect_timeout", "application_name", "client_encoding", "keepalives", "keepalives_idle",
            "keepalives_interval", "keepalives_count",
        ]
        let values = [url.text, String(timeoutSeconds), "xclaw", "UTF8", "1", "10", "5", "3"]
        handle = withCStrings(keywords) { keys in
            withCStrings(values) { vals in PQconnectdbParams(keys, vals, 1) }
        }
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let detail = handle.map { Self.message(PQerrorMessage($0)) } ?? "out of memory"
            if let handle { PQfinish(handle) }
            self.handle = nil
            throw StoreError.unreachable(url: location, detail: url.scrub(detail))
        }
        // libpq prints the server's notices ("already exists, skipping") on stderr by default: stderr is for xclaw's
        // own logs, and these are not news to anyone.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        // Screenshots come back as bytea in hex whatever the server's default; a session cut off inside a transaction
        // (its client gone) lets go of its locks within a minute instead of holding the fleet's write lock.
        do {
            try executeScript("SET bytea_output = 'hex'; SET idle_in_transaction_session_timeout = '60s'")
        } catch {
            PQfinish(handle)
            self.handle = nil
            throw error
        }
    }

    deinit { if let handle { PQfinish(handle) } }

    func execute(sql: String, arguments: SQLArguments, cached: Bool) throws {
        _ = try run(sql: sql, arguments: arguments)
    }

    func rows(sql: String, arguments: SQLArguments, cached: Bool) throws -> [SQLRow] {
        try run(sql: sql, arguments: arguments)
    }

    var lastInsertedRowID: Int64 {
        get throws { try Int64.fetchOne(self, sql: "SELECT lastval()") ?? 0 }
    }

    /// Runs several statements without arguments in one round trip (the schema, transaction control).
    func executeScript(_ sql: String) throws { _ = try scalar(sql) }

    /// Opens a transaction with `statements` (each one statement without arguments), sent only with the first
    /// statement that follows, in its round trip.
    func open(lazily statements: [String]) {
        (opening, opened, openingValue) = (statements, false, nil)
    }

    /// Forgets opening statements that were never sent (the transaction ran nothing).
    func dropOpening() { opening = [] }

    /// Sends COMMIT without waiting for its answer, which the next statement reads first: for a read-only
    /// transaction, whose COMMIT changes nothing and cannot fail on its own; a lost connection shows on that next
    /// statement, whose transaction then runs again.
    func commitLater() throws {
        guard let handle else { throw closed() }
        guard PQsendQuery(handle, "COMMIT") == 1 else {
            isBroken = true
            throw StoreError.unreachable(url: location, detail: Self.message(PQerrorMessage(handle)))
        }
        commitInFlight = true
    }

    /// Reads the answer of a COMMIT sent without waiting, if one is in flight.
    private func settle() throws {
        guard commitInFlight, let handle else { return }
        commitInFlight = false
        var failure: (any Error)?
        while let result = PQgetResult(handle) {
            if failure == nil {
                do { try check(result, sql: "COMMIT") } catch { failure = error }
            }
            PQclear(result)
        }
        if let failure { throw failure }
    }

    /// Sends the opening statements on their own (before a statement that is not pipelined).
    private func sendOpening() throws {
        try settle()
        guard !opening.isEmpty else { return }
        let statements = opening
        opening = []
        // Opened even if one of them fails half-way: the transaction is then rolled back, not left open.
        opened = true
        openingValue = try scalar(statements.joined(separator: "; "))
    }

    /// Runs statements without arguments in one round trip and returns the first value of the last one's result.
    func scalar(_ sql: String) throws -> String? {
        guard let handle else { throw closed() }
        try sendOpening()
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, sql: sql)
        return Self.firstValue(result)
    }

    /// The first column of a result's first row as text; nil when there is none or it is NULL.
    private static func firstValue(_ result: OpaquePointer?) -> String? {
        guard PQntuples(result) > 0, PQnfields(result) > 0, PQgetisnull(result, 0, 0) == 0,
            let value = PQgetvalue(result, 0, 0)
        else { return nil }
        return String(cString: value)
    }

    /// Whether the connection is outside any transaction, so the pool can hand it to the next user.
    var isIdle: Bool { commitInFlight || (handle.map { PQtransactionStatus($0) == PQTRANS_IDLE } ?? false) }

    /// The connection's socket, for waiting on notifications.
    var socket: Int32 { handle.map { PQsocket($0) } ?? -1 }

    /// Reads what the server sent (notifications) without blocking and returns the pending notifications' channels
    /// and payloads.
    func notifications() throws -> [(channel: String, payload: String)] {
        guard let handle else { throw closed() }
        if PQconsumeInput(handle) == 0 {
            isBroken = true
            throw StoreError.unreachable(url: location, detail: Self.message(PQerrorMessage(handle)))
        }
        var found: [(String, String)] = []
        while let notice = PQnotifies(handle) {
            found.append((String(cString: notice.pointee.relname), String(cString: notice.pointee.extra)))
            PQfreemem(notice)
        }
        return found
    }

    // MARK: - Running a statement

    /// Sends one statement with its arguments and reads its rows.
    private func run(sql: String, arguments: SQLArguments) throws -> [SQLRow] {
        guard let handle else { throw closed() }
        try settle()
        let values = arguments.values
        var types: [Oid] = []
        var formats: [Int32] = []
        var encoded: [[UInt8]?] = []
        for value in values {
            switch value {
            case .null:
                types.append(0)
                formats.append(0)
                encoded.append(nil)
            case .integer(let v):
                types.append(20)
                formats.append(0)
                encoded.append(Array(String(v).utf8) + [0])
            case .real(let v):
                types.append(701)
                formats.append(0)
                encoded.append(Array(Self.realText(v).utf8) + [0])
            case .text(let v):
                types.append(25)
                formats.append(0)
                // PostgreSQL text cannot hold NUL; the store never writes one (its text is JSON or names).
                encoded.append(Array(v.utf8.filter { $0 != 0 }) + [0])
            case .blob(let v):
                types.append(17)
                formats.append(1)
                encoded.append([UInt8](v))
            }
        }
        let lengths = encoded.map { Int32($0?.count ?? 0) }
        let count = Int32(values.count)
        let name = try prepare(sql, types: types)
        let result: OpaquePointer?
        switch (name, opening.isEmpty) {
        case (let name?, true):
            result = withPointers(encoded) { PQexecPrepared(handle, name, count, $0, lengths, formats, 0) }
        case (let name?, false):
            result = try pipelined(handle) { handle in
                withPointers(encoded) { PQsendQueryPrepared(handle, name, count, $0, lengths, formats, 0) }
            }
        case (nil, true):
            let text = Self.numberedPlaceholders(sql)
            result = withPointers(encoded) { PQexecParams(handle, text, count, types, $0, lengths, formats, 0) }
        case (nil, false):
            let text = Self.numberedPlaceholders(sql)
            result = try pipelined(handle) { handle in
                withPointers(encoded) { PQsendQueryParams(handle, text, count, types, $0, lengths, formats, 0) }
            }
        }
        defer { PQclear(result) }
        try check(result, sql: sql)
        changesCount = Int(String(cString: PQcmdTuples(result))) ?? 0
        guard PQresultStatus(result) == PGRES_TUPLES_OK else { return [] }
        return Self.rows(of: result)
    }

    /// The name of `sql` (with `?` placeholders) prepared with `types` on this connection, preparing it first if it
    /// is not yet; nil past `preparedLimit` (the statement then runs unprepared). A statement the server refuses
    /// throws as running it would.
    private func prepare(_ sql: String, types: [Oid]) throws -> String? {
        let key = PreparedKey(sql: sql, types: types)
        if let name = prepared[key] { return name }
        guard prepared.count < Self.preparedLimit, let handle else { return nil }
        let name = "xclaw_\(prepared.count + 1)"
        let result = PQprepare(handle, name, Self.numberedPlaceholders(sql), Int32(types.count), types)
        defer { PQclear(result) }
        try check(result, sql: sql)
        prepared[key] = name
        return name
    }

    /// Sends the opening statements and the statement `send` sends in one pipeline (one round trip), and returns the
    /// statement's result; an opening statement's error is thrown.
    private func pipelined(_ handle: OpaquePointer, _ send: (OpaquePointer) -> Int32) throws -> OpaquePointer? {
        let statements = opening
        opening = []
        guard PQenterPipelineMode(handle) == 1 else {
            throw StoreError.database(path: location, detail: Self.message(PQerrorMessage(handle)))
        }
        var sent = statements.allSatisfy { PQsendQueryParams(handle, $0, 0, nil, nil, nil, nil, 0) == 1 }
        sent = sent && send(handle) == 1 && PQpipelineSync(handle) == 1
        guard sent else {
            isBroken = true
            throw StoreError.unreachable(url: location, detail: Self.message(PQerrorMessage(handle)))
        }
        // Each statement's result, then the NULL that ends it; then the sync's own result.
        var results: [OpaquePointer] = []
        var broken = false
        for _ in 0...statements.count {
            guard let result = PQgetResult(handle) else {
                broken = true
                break
            }
            results.append(result)
            while let extra = PQgetResult(handle) { PQclear(extra) }
        }
        if !broken, let sync = PQgetResult(handle) { PQclear(sync) }
        // It leaves pipeline mode once every result is read; a connection that cannot is not used again.
        if PQexitPipelineMode(handle) != 1 {
            results.forEach { PQclear($0) }
            isBroken = true
            throw StoreError.unreachable(url: location, detail: Self.message(PQerrorMessage(handle)))
        }
        opened = true
        let main = broken ? nil : results.last
        let openings = broken ? results : Array(results.dropLast())
        defer { openings.forEach { PQclear($0) } }
        do {
            for (statement, result) in zip(statements, openings) { try check(result, sql: statement) }
            if broken {
                isBroken = true
                throw StoreError.unreachable(url: location, detail: Self.message(PQerrorMessage(handle)))
            }
        } catch {
            PQclear(main)
            throw error
        }
        if let last = openings.last { openingValue = Self.firstValue(last) }
        return main
    }

    /// The result's rows, each value by its column's type.
    private static func rows(of result: OpaquePointer?) -> [SQLRow] {
        let count = Int(PQntuples(result))
        let width = Int(PQnfields(result))
        let names = (0..<width).map { String(cString: PQfname(result, Int32($0))) }
        let kinds = (0..<width).map { PQftype(result, Int32($0)) }
        let columns = SQLRow.Columns(names)
        var rows: [SQLRow] = []
        rows.reserveCapacity(count)
        for row in 0..<count {
            var values: [SQLValue] = []
            values.reserveCapacity(width)
            for column in 0..<width {
                if PQgetisnull(result, Int32(row), Int32(column)) != 0 {
                    values.append(.null)
                    continue
                }
                let length = Int(PQgetlength(result, Int32(row), Int32(column)))
                let text =
                    PQgetvalue(result, Int32(row), Int32(column)).map {
                        String(
                            decoding: UnsafeBufferPointer(
                                start: UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self), count: length),
                            as: UTF8.self)
                    } ?? ""
                values.append(value(text, type: kinds[column]))
            }
            rows.append(SQLRow(columns: columns, values: values))
        }
        return rows
    }

    /// A value in libpq's text format, by the column's type oid.
    private static func value(_ text: String, type: Oid) -> SQLValue {
        switch type {
        case 16: return .integer(text == "t" ? 1 : 0)  // bool
        case 20, 21, 23, 26: return Int64(text).map(SQLValue.integer) ?? .text(text)  // int8, int2, int4, oid
        case 700, 701: return Double(text).map(SQLValue.real) ?? .text(text)  // float4, float8
        case 1700:  // numeric (SUM of integers): whole values stay integers
            if let whole = Int64(text) { return .integer(whole) }
            return Double(text).map(SQLValue.real) ?? .text(text)
        case 17: return .blob(hexBytes(text))  // bytea, hex output (set for every connection)
        default: return .text(text)
        }
    }

    /// bytea's hex output (`\x0a1b…`) as bytes.
    static func hexBytes(_ text: String) -> Data {
        var bytes = Data()
        let digits = Array(text.utf8.dropFirst(2))
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index + 1 < digits.count {
            if let high = hexDigit(digits[index]), let low = hexDigit(digits[index + 1]) {
                bytes.append(high << 4 | low)
            }
            index += 2
        }
        return bytes
    }

    /// One hex digit's value.
    private static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 97...102: return c - 87
        case 65...70: return c - 55
        default: return nil
        }
    }

    /// A double as PostgreSQL reads it back exactly (`Double.description` round-trips; infinities are named).
    private static func realText(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "Infinity" : "-Infinity" }
        return v.description
    }

    /// `?` → `$1, $2…` and SQLite's `?NNN` → `$NNN`, outside string literals, quoted names and comments.
    static func numberedPlaceholders(_ sql: String) -> String {
        let chars = Array(sql)
        var out = ""
        out.reserveCapacity(sql.utf8.count + 16)
        var number = 0
        var quote: Character?
        var lineComment = false
        var index = 0
        while index < chars.count {
            let c = chars[index]
            index += 1
            if lineComment {
                if c == "\n" { lineComment = false }
            } else if let q = quote {
                if c == q { quote = nil }
            } else if c == "'" || c == "\"" {
                quote = c
            } else if c == "-", index < chars.count, chars[index] == "-" {
                lineComment = true
            } else if c == "?" {
                var digits = ""
                while index < chars.count, chars[index].isASCII, chars[index].isNumber {
                    digits.append(chars[index])
                    index += 1
                }
                if digits.isEmpty {
                    number += 1
                    digits = String(number)
                }
                out += "$" + digits
                continue
            }
            out.append(c)
        }
        return out
    }

    // MARK: - Errors

    /// Throws the server's error for a failed result, mapped to what the user can act on.
    private func check(_ result: OpaquePointer?, sql: String) throws {
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY { return }
        guard let handle else { throw closed() }
        if PQstatus(handle) != CONNECTION_OK {
            isBroken = true
            throw StoreError.unreachable(url: location, detail: Self.message(PQerrorMessage(handle)))
        }
        let state = PQresultErrorField(result, 67).map { String(cString: $0) } ?? ""  // PG_DIAG_SQLSTATE
        let detail = PQresultErrorMessage(result).map { Self.message($0) } ?? "unknown error"
        // No SQLSTATE (libpq's own "server closed the connection unexpectedly"), a connection exception (08…) or the
        // server shutting down or starting (57P01-57P03): the connection is gone, whatever PQstatus says yet.
        if state.isEmpty || state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state) {
            isBroken = true
            throw StoreError.unreachable(url: location, detail: detail)
        }
        // "cached plan must not change result type": a newer xclaw migrated the schema under this connection's
        // prepared statements. The connection is dropped with them, and the transaction (which the error aborted,
        // so nothing of it stands) runs again on a fresh one.
        // (Known by the server function that raises it, which is never translated, unlike the message.)
        let function = PQresultErrorField(result, 82).map { String(cString: $0) }  // PG_DIAG_SOURCE_FUNCTION
        if state == "0A000", !prepared.isEmpty, function == "RevalidateCachedQuery" || detail.contains("cached plan") {
            isBroken = true
            throw StoreError.unreachable(url: location, detail: detail)
        }
        throw PostgresError(state: state, message: detail)
    }

    /// libpq's message without its trailing newline.
    private static func message(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "" }
        return String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The error for a closed connection.
    private func closed() -> StoreError { .unreachable(url: location, detail: "the connection is closed") }
}

/// A statement the server refused, with its SQLSTATE (`23505` unique violation…), for `AgentStore` to map.
struct PostgresError: Error, CustomStringConvertible {
    /// The five-character SQLSTATE code.
    let state: String
    /// The server's message.
    let message: String

    var description: String { message }

}

/// Calls `body` with C strings for `strings`, NULL-terminated as libpq's keyword arrays are.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return body(copies.map { UnsafePointer($0) } + [nil])
}

/// Calls `body` with one pointer per buffer (nil for NULL values), valid during the call.
private func withPointers<R>(_ buffers: [[UInt8]?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = buffers.map { buffer in
        guard let buffer else { return nil }
        let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(buffer.count, 1))
        buffer.withUnsafeBytes { raw in
            if let base = raw.baseAddress {
                copy.update(from: base.assumingMemoryBound(to: CChar.self), count: buffer.count)
            }
        }
        return copy
    }
    defer { copies.forEach { $0?.deallocate() } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}
