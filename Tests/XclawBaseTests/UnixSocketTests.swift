import Foundation
import Synchronization
import XCTest
import XclawTimeTesting

@testable import XclawBase

/// The daemon's socket as its clients find it.
final class UnixSocketTests: XCTestCase {
    /// A client that finds the socket file must find a listener behind it: one refused took the socket for a dead
    /// daemon's and removed it, and the daemon being started listened on a name nobody could reach.
    func testTheSocketFileAppearsOnlyOnceItListens() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-sock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("d.sock").path
        let done = Atomic<Bool>(false)
        let refused = Atomic<Int>(0)
        let connected = Atomic<Int>(0)
        let prober = Thread {
            while !done.load(ordering: .acquiring) {
                do {
                    _ = try UnixSocket.connect(path: path)
                    connected.add(1, ordering: .relaxed)
                } catch let error as UnixSocketError where error.errno.rawValue == ECONNREFUSED {
                    // (Once done, the listeners close under a connect waiting on a full backlog: not counted.)
                    if !done.load(ordering: .acquiring) { refused.add(1, ordering: .relaxed) }
                } catch {}  // no file yet
            }
        }
        prober.start()
        // Listeners stay open until the end: one closed under a connect that had found its file would refuse, as a
        // stopped daemon's stale file does, and that is not what is tested. At least 300 starts, and until the
        // prober (scheduled when it is) has met one.
        var listeners: [UnixSocket] = []
        let deadline = Date().addingTimeInterval(30)
        while listeners.count < 300 || connected.load(ordering: .relaxed) == 0, Date() < deadline,
            listeners.count < 3000
        {
            let listener = try UnixSocket.listen(path: path)
            XCTAssertTrue(FileManager.default.fileExists(atPath: path))
            unlink(path)
            listeners.append(listener)
        }
        done.store(true, ordering: .releasing)
        for listener in listeners { listener.close() }  // wakes a connect that waits on a full backlog
        eventually("the prober ends", every: .milliseconds(1)) { !prober.isExecuting }
        XCTAssertEqual(refused.load(ordering: .relaxed), 0, "a client found the file before its listener")
        XCTAssertGreaterThan(connected.load(ordering: .relaxed), 0, "the prober reached the listeners")
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: directory.path), [], "no staging name is left behind")
    }

    /// A file already at the path stays an error, as with a bind there.
    func testListeningWhereAFileIsFails() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-sock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("d.sock").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        XCTAssertThrowsError(try UnixSocket.listen(path: path)) {
            XCTAssertEqual(($0 as? UnixSocketError)?.errno.rawValue, EEXIST)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["d.sock"])
    }
}
