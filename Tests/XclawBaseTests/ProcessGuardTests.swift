import Foundation
import Glibc
import XCTest
import XclawBase

/// The process guard with real processes: an owner killed with SIGKILL, a pid and a group id handed on purpose to
/// strangers after the guard was told about them. The owner and everything it starts live in a pid namespace of their
/// own (`unshare --pid`), so the test can pick pids (`ns_last_pid`) without touching any process it did not start:
/// when the namespace's first process ends, the kernel ends everything left in it.
final class ProcessGuardTests: XCTestCase {
    /// Where the owner role (below) reports; set only for the copy of this bundle the reuse test starts.
    private static let ownerVariable = "XCLAW_GUARD_TEST_OWNER"

    /// A watched process that still runs is ended when its owner is killed; a stranger that got the pid of a watched
    /// process, or the id of a watched group, after those were reaped, is not.
    func testAStrangerWithAReusedPidOrGroupIdSurvivesTheOwnersDeath() throws {
        // The suite runs as root with util-linux (install-deps): a machine without either fails here, saying why,
        // rather than skipping the check.
        guard access("/usr/bin/unshare", X_OK) == 0 else { return XCTFail("unshare (util-linux) is not installed") }
        let probe = try Subprocess.run(
            ["/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "/bin/true"], timeout: .seconds(10))
        guard probe.ending == .exited(0) else {
            return XCTFail("this machine refuses a pid namespace (unshare --pid needs root: CAP_SYS_ADMIN)")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-guard-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let bundle = try XCTUnwrap(Self.executable())
        // The namespace's init: start the owner (this bundle, running only the owner role), wait until it has
        // handed the pids on, kill it, give its guard time to act (SIGTERM, SIGKILL 2 s later), then say which of
        // the three still run (a zombie counts as ended).
        let script = """
            "$0" XclawBaseTests.ProcessGuardTests/testOwnerRoleOfTheReuseTest > "$1/owner.log" 2>&1 &
            owner=$!
            i=0
            while [ ! -s "$1/ready" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
            [ -s "$1/ready" ] || { echo "no ready file"; cat "$1/owner.log"; exit 1; }
            read stranger group live < "$1/ready"
            kill -KILL $owner
            wait $owner
            sleep 3
            for p in $stranger $group $live; do
              state=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null)
              if [ -n "$state" ] && [ "$state" != Z ]; then echo "$p runs"; else echo "$p ended"; fi
            done
            """
        var environment = ProcessInfo.processInfo.environment
        environment[Self.ownerVariable] = dir.path
        let result = try Subprocess.run(
            ["/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c", script, bundle, dir.path],
            timeout: .seconds(60), environment: environment)
        let output = String(decoding: result.stdout, as: UTF8.self)
        let errors = String(decoding: result.stderr, as: UTF8.self)
        let ready = try String(contentsOf: dir.appendingPathComponent("ready"), encoding: .utf8)
            .split(separator: " ").map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }
        XCTAssertEqual(ready.count, 3, output + errors)
        guard ready.count == 3 else { return }
        XCTAssertEqual(
            output, "\(ready[0]) runs\n\(ready[1]) runs\n\(ready[2]) ended\n",
            "the strangers must run on, the watched process must end\n\(errors)")
    }

    /// The owner's part of the test above, run in its pid namespace; does nothing in an ordinary test run.
    func testOwnerRoleOfTheReuseTest() throws {
        guard let dir = ProcessInfo.processInfo.environment[Self.ownerVariable] else { return }
        let processGuard = try ProcessGuard()
        let reaped = try Subprocess.spawn(["/bin/sleep", "300"], stdout: .null, stderr: .null)
        let leader = try Subprocess.spawn(["/bin/sleep", "300"], stdout: .null, stderr: .null, group: .newSession)
        let live = try Subprocess.spawn(["/bin/sleep", "300"], stdout: .null, stderr: .null)
        processGuard.watch(pid: reaped.pid)
        processGuard.watch(group: leader.pid)
        processGuard.watch(pid: live.pid)
        reaped.kill()
        leader.kill()
        // The next process started gets the pid after ns_last_pid: the freed pid, then the freed group id, for a
        // process that leads a group of its own (as a shell's job or a daemon does).
        let stranger = try Self.spawn(pid: reaped.pid, group: .inherited)
        let groupStranger = try Self.spawn(pid: leader.pid, group: .newSession)
        XCTAssertEqual(stranger.pid, reaped.pid)
        XCTAssertEqual(groupStranger.pid, leader.pid)
        try "\(stranger.pid) \(groupStranger.pid) \(live.pid)\n".write(
            toFile: dir + "/ready", atomically: true, encoding: .utf8)
        Thread.sleep(forTimeInterval: 120)  // until the test kills this process
    }

    /// A `sleep` started so that it gets `pid` (in this pid namespace).
    private static func spawn(pid: pid_t, group: Subprocess.Group) throws -> Subprocess {
        try "\(pid - 1)".write(toFile: "/proc/sys/kernel/ns_last_pid", atomically: false, encoding: .utf8)
        return try Subprocess.spawn(["/bin/sleep", "300"], stdout: .null, stderr: .null, group: group)
    }

    /// This test bundle's executable.
    private static func executable() -> String? {
        var buffer = [Int8](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
