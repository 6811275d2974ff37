import Foundation
import XCTest
import XclawBase
import XclawDaemon
import XclawTesting

/// The daemon's lifecycle through the real binary: one per user, a 0600 socket, status, a stale socket after
/// `kill -9`, a refusal of other users (SO_PEERCRED) and of another protocol version.
final class DaemonCLITests: XCTestCase {
    private var state: URL!
    private var env: [String: String] { ["XCLAW_STATE_DIR": state.path] }

    override func setUpWithError() throws {
        state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-daemon-\(UUID().uuidString)")
    }

    override func tearDown() {
        _ = try? runCLI(["daemon", "stop"], environment: env)
        try? FileManager.default.removeItem(at: state)
    }

    func testStartStatusStopAndOnlyOneDaemonPerUser() throws {
        let none = try runCLI(["daemon", "status"], environment: env)
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.stderr.contains("no daemon is running"), none.stderr)
        let started = try runCLI(["daemon", "start", "--json"], environment: env)
        XCTAssertEqual(started.status, 0, started.stderr)
        let status = try JSONDecoder().decode(DaemonStatus.self, from: started.stdout)
        XCTAssertTrue(Subprocess.isRunning(status.pid))
        XCTAssertEqual(status.socket, state.appendingPathComponent("daemon.sock").path)
        XCTAssertEqual(status.version, "0.1.0")
        XCTAssertGreaterThan(status.rss_bytes, 1 << 20)
        var info = stat()
        XCTAssertEqual(lstat(status.socket, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFSOCK)
        XCTAssertEqual(info.st_mode & 0o777, 0o600, "only this user may connect")
        let second = try runCLI(["daemon", "start"], environment: env)
        XCTAssertEqual(second.status, 1)
        XCTAssertTrue(second.stderr.contains("already running (pid \(status.pid)"), second.stderr)
        let again = try runCLI(["daemon", "status", "--json"], environment: env)
        XCTAssertEqual(try JSONDecoder().decode(DaemonStatus.self, from: again.stdout).pid, status.pid)
        let stopped = try runCLI(["daemon", "stop"], environment: env)
        XCTAssertEqual(stopped.status, 0, stopped.stderr)
        XCTAssertFalse(Subprocess.isRunning(status.pid))
        XCTAssertFalse(FileManager.default.fileExists(atPath: status.socket), "the socket is removed")
        XCTAssertEqual(try runCLI(["daemon", "stop"], environment: env).status, 1)
    }

    func testADaemonKilledWithSIGKILLLeavesAStaleSocketThatIsReplaced() throws {
        let first = try JSONDecoder().decode(
            DaemonStatus.self, from: try runCLI(["daemon", "start", "--json"], environment: env).stdout)
        kill(first.pid, SIGKILL)
        _ = Subprocess.waitForExit(first.pid, deadline: .now + .seconds(5))
        XCTAssertTrue(FileManager.default.fileExists(atPath: first.socket), "kill -9 leaves the socket behind")
        let status = try runCLI(["daemon", "status"], environment: env)
        XCTAssertEqual(status.status, 1, status.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: first.socket), "the stale socket was removed")
        let restarted = try runCLI(["daemon", "start", "--json"], environment: env)
        XCTAssertEqual(restarted.status, 0, restarted.stderr)
        XCTAssertNotEqual(try JSONDecoder().decode(DaemonStatus.self, from: restarted.stdout).pid, first.pid)
    }

    func testOtherUsersAndOtherProtocolVersionsAreRefused() throws {
        // The seam: only the daemon's own uid is served.
        XCTAssertTrue(DaemonServer.authorize(peer: 1000, owner: 1000))
        XCTAssertFalse(DaemonServer.authorize(peer: 65534, owner: 1000))
        XCTAssertFalse(DaemonServer.authorize(peer: 0, owner: 1000))
        // A server in this process on a socket others can reach, so a second uid can really try it.
        let open = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-peer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: open) }
        chmod(open.path, 0o755)
        let path = open.appendingPathComponent("d.sock").path
        let server = try DaemonServer(socketPath: path, version: "test", execute: { _ in 0 })
        let thread = Thread { server.run() }
        thread.start()
        defer { server.stop() }
        // Another protocol version gets a message that says so, not a misreading.
        let socket = try UnixSocket.connect(path: path)
        socket.write(Data(#"{"version": 99, "op": "status", "future": true}"#.utf8 + [0x0a]))
        let reply = try JSONDecoder().decode(DaemonReply.self, from: try XCTUnwrap(socket.readLine()))
        XCTAssertTrue(reply.error?.contains("protocol version 99") ?? false, "\(reply)")
        XCTAssertNil(reply.status)
        // A real second user, where this test runs as root: `nobody` connects and is refused by SO_PEERCRED.
        let candidates: [String] = ["/usr/bin/setpriv", "/bin/setpriv"]
        guard getuid() == 0, let setpriv = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { return }
        chmod(path, 0o666)  // past the file mode, so the refusal below is the daemon's own check
        let script = """
            import socket; s = socket.socket(socket.AF_UNIX); s.connect("\(path)")
            s.sendall(b'{"version": 2, "op": "status"}\\n'); print(s.makefile().readline().strip())
            """
        let child = try Subprocess.spawn(
            [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script])
        let output = child.read(until: .now + .seconds(10))
        let (stdout, stderr) = (
            String(decoding: output.stdout, as: UTF8.self), String(decoding: output.stderr, as: UTF8.self)
        )
        XCTAssertEqual(child.wait(deadline: .now + .seconds(5)), Subprocess.Termination.exited(0), stderr)
        XCTAssertTrue(stdout.contains("refused: uid 65534"), stdout + stderr)
        XCTAssertFalse(stdout.contains("\"pid\""), "nothing about the daemon was told")
    }
}
