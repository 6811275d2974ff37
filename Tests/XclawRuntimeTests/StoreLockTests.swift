import Foundation
import XCTest
import XclawBase
import XclawStore

/// A second store opened in a process that already has one on the file (the daemon's scheduler, then each scheduled
/// run's own) must not drop the first one's SQLite locks: another process closing its last connection would then
/// delete the WAL under it, and the first store's writes after that would be lost to everyone else.
final class StoreLockTests: XCTestCase {
    func testOpeningASecondStoreKeepsTheFirstOnesWritesVisibleToOtherProcesses() throws {
        let temporary = try TemporaryStore("storelock")
        defer { temporary.remove() }
        let path = temporary.store.path
        try temporary.store.createAgent(AgentConfig(name: "first", model: "m"))
        // A run's store opened and closed again in the same process.
        do { _ = try AgentStore(path: path) }
        // Another process reads and closes its only connection: with this process's locks gone it would take the
        // exclusive lock, checkpoint and delete the WAL.
        let reader = [
            "/usr/bin/env", "python3", "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                + "print(c.execute('select count(*) from agents').fetchone()[0]); c.close()", path,
        ]
        XCTAssertEqual(try Subprocess.run(reader, timeout: .seconds(20)).ending, .exited(0))
        XCTAssertTrue(FileManager.default.fileExists(atPath: path + "-wal"), "the WAL was deleted under the store")
        try temporary.store.createAgent(AgentConfig(name: "second", model: "m"))
        let outcome = try Subprocess.run(reader, timeout: .seconds(20))
        XCTAssertEqual(String(decoding: outcome.stdout, as: UTF8.self), "2\n", "the second write reached the file")
    }
}
