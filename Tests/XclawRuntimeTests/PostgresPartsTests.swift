import Foundation
import XCTest

@testable import XclawStore

/// The PostgreSQL backend's pure parts: the placeholder rewriting that lets one SQL text serve both backends, the
/// redaction that keeps a URL's passwords out of every message, and bytea's hex decoding.
final class PostgresPartsTests: XCTestCase {
    func testPlaceholdersAreNumberedOutsideLiteralsNamesAndComments() {
        XCTAssertEqual(PostgresConnection.numberedPlaceholders("SELECT ? , ?"), "SELECT $1 , $2")
        XCTAssertEqual(
            PostgresConnection.numberedPlaceholders("WHERE CAST(?1 AS TEXT) IS NULL OR a = ?1 LIMIT ?2"),
            "WHERE CAST($1 AS TEXT) IS NULL OR a = $1 LIMIT $2", "SQLite's ?NNN keeps its number")
        XCTAssertEqual(
            PostgresConnection.numberedPlaceholders("SELECT '?' || \"a?b\" || ? -- why?\n, ?"),
            "SELECT '?' || \"a?b\" || $1 -- why?\n, $2")
        XCTAssertEqual(
            PostgresConnection.numberedPlaceholders("jsonb_path_query(x, 'lax $.** ? (@.t == $t)') = ?"),
            "jsonb_path_query(x, 'lax $.** ? (@.t == $t)') = $1")
        XCTAssertEqual(PostgresConnection.numberedPlaceholders("SELECT 'it''s ?', ?"), "SELECT 'it''s ?', $1")
    }

    func testEveryPasswordOfAURLIsRedactedAndScrubbed() throws {
        let secret = "s3" + "cr" + "et"
        let plain = try PostgresURL("postgres://xclaw:\(secret)@db.example:5432/fleet")
        XCTAssertEqual(plain.redacted, "postgres://xclaw:***@db.example:5432/fleet")
        XCTAssertEqual("\(plain)", plain.redacted)
        let query = try PostgresURL(
            "postgresql://xclaw@db/fleet?sslmode=require&password=\(secret)&sslpassword=\(secret)x")
        XCTAssertEqual(query.redacted, "postgresql://xclaw@db/fleet?sslmode=require&password=***&sslpassword=***")
        XCTAssertEqual(query.scrub("FATAL: bad \(secret) and \(secret)x"), "FATAL: bad *** and ***")
        let encoded = try PostgresURL("postgres://u:p%40ss@h/d")
        XCTAssertEqual(encoded.redacted, "postgres://u:***@h/d")
        XCTAssertEqual(encoded.scrub("no p@ss here, p%40ss neither"), "no *** here, *** neither")
        XCTAssertEqual(
            try PostgresURL("postgres:///t1?host=/tmp/x&user=xclaw").redacted, "postgres:///t1?host=/tmp/x&user=xclaw")
        XCTAssertThrowsError(try PostgresURL("mysql://u:\(secret)@h/d")) { error in
            XCTAssertFalse("\(error)".contains(secret), "\(error)")
            XCTAssertEqual((error as? StoreError)?.exitStatus, .usage)
        }
    }

    func testByteaHexDecodes() {
        XCTAssertEqual(PostgresConnection.hexBytes("\\x00ff10Aa"), Data([0x00, 0xFF, 0x10, 0xAA]))
        XCTAssertEqual(PostgresConnection.hexBytes("\\x"), Data())
    }
}
