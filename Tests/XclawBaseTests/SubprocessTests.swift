import Foundation
import Glibc
import XCTest
import XclawBase
import XclawTimeTesting

/// The one way xclaw starts processes, with real children (/bin/sh, cat, sleep).
final class SubprocessTests: XCTestCase {
    func testAChildSeenEndedStillTellsHowItEnded() throws {
        // ReplayApps asked `Subprocess.isRunning(pid)` whether zenity was up, which reaps the child, and its later
        // wait() could only answer `.unknown`. The instance's own question keeps the ending.
        let child = try Subprocess.spawn(["/bin/sh", "-c", "exit 3"], stdout: .null, stderr: .null)
        XCTAssertTrue(poll(within: .seconds(5), every: .milliseconds(5)) { child.isRunning ? nil : true } ?? false)
        XCTAssertFalse(child.isRunning, "asked twice")
        XCTAssertEqual(child.wait(), .exited(3))
    }

    func testOutputStatusAndStreamsAreKeptApart() throws {
        let result = try Subprocess.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], timeout: .seconds(5))
        XCTAssertEqual(result.ending, .exited(3))
        XCTAssertEqual(String(decoding: result.stdout, as: UTF8.self), "out\n")
        XCTAssertEqual(String(decoding: result.stderr, as: UTF8.self), "err\n")
        XCTAssertEqual(try Subprocess.run(["/bin/true"], timeout: .seconds(5)).ending, .exited(0))
    }

    func testLargeOutputOnBothPipesDoesNotDeadlock() throws {
        // 4 MB on each pipe, far past a pipe's 64 KB buffer: reading one pipe only would block the child forever.
        let script = "head -c 4194304 /dev/zero; head -c 4194304 /dev/zero >&2"
        let result = try Subprocess.run(["/bin/sh", "-c", script], timeout: .seconds(20))
        XCTAssertEqual(result.ending, .exited(0))
        XCTAssertEqual(result.stdout.count, 4_194_304)
        XCTAssertEqual(result.stderr.count, 4_194_304)
    }

    func testASignalDeathIsReportedAsSuch() throws {
        let result = try Subprocess.run(["/bin/sh", "-c", "echo partial; kill -ABRT $$"], timeout: .seconds(5))
        XCTAssertEqual(result.ending, .signalled(SIGABRT))
        XCTAssertEqual(String(decoding: result.stdout, as: UTF8.self), "partial\n")
    }

    func testTheDeadlineKillsAndReapsTheChild() throws {
        let start = ContinuousClock.now
        let child = try Subprocess.spawn(["/bin/sleep", "30"])
        let read = child.read(until: .now + .milliseconds(200))
        XCTAssertFalse(read.complete)
        XCTAssertEqual(child.kill(), .timedOut)
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
        // Reaped: no zombie is left, and the pid is no longer ours to wait for.
        XCTAssertNil(Subprocess.processState(child.pid))
        var status: Int32 = 0
        XCTAssertEqual(waitpid(child.pid, &status, WNOHANG), -1)
        XCTAssertFalse(Subprocess.isRunning(child.pid))
        // `wait` after a kill reports the same ending and does not wait again.
        XCTAssertEqual(child.wait(), .timedOut)
    }

    func testWaitReportsExitAndIsRunningFollowsTheChild() throws {
        let child = try Subprocess.spawn(["/bin/sleep", "30"], stdout: .null, stderr: .null)
        XCTAssertTrue(Subprocess.isRunning(child.pid))
        XCTAssertEqual(child.wait(deadline: .now + .milliseconds(100)), .timedOut)
        XCTAssertFalse(Subprocess.isRunning(child.pid))
        // stdin is /dev/null, so the shell's read ends at once and it exits with its own status.
        let reader = try Subprocess.spawn(["/bin/sh", "-c", "read line; exit 7"], stdout: .null, stderr: .null)
        XCTAssertEqual(reader.wait(deadline: .now + .seconds(5)), .exited(7))
        XCTAssertFalse(Subprocess.isRunning(reader.pid))
    }

    func testTheEnvironmentIsTheOneGiven() throws {
        let result = try Subprocess.run(["/usr/bin/env"], timeout: .seconds(5), environment: ["ONLY": "this"])
        XCTAssertEqual(String(decoding: result.stdout, as: UTF8.self), "ONLY=this\n")
        let inherited = try Subprocess.run(["/usr/bin/env"], timeout: .seconds(5))
        XCTAssertTrue(String(decoding: inherited.stdout, as: UTF8.self).contains("PATH="))
    }

    func testNoDescriptorOfOursLeaksIntoTheChild() throws {
        // A pipe without close-on-exec, as a careless caller would leave it: the child must not get it. Its ends are
        // moved to high numbers: a low one (3) could be what `ls` opens in the child to list its descriptors.
        var raw: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&raw), 0)
        let fds = raw.map { fcntl($0, F_DUPFD, 100) }
        raw.forEach { close($0) }
        XCTAssertTrue(fds.allSatisfy { $0 >= 100 }, "\(fds)")
        defer { fds.forEach { close($0) } }
        let result = try Subprocess.run(["/bin/ls", "/proc/self/fd"], timeout: .seconds(5))
        let open = String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
        // 0, 1, 2, and the directory ls itself opened to list them.
        XCTAssertFalse(open.contains(fds[0]), "\(open)")
        XCTAssertFalse(open.contains(fds[1]), "\(open)")
        XCTAssertLessThanOrEqual(open.count, 4, "\(open)")
    }

    func testAnExtraDescriptorAndAFileReachTheChild() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("subprocess-\(UUID().uuidString).log")
            .path
        defer { try? FileManager.default.removeItem(atPath: file) }
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]) }
        let child = try Subprocess.spawn(
            ["/bin/sh", "-c", "echo ready >&3; echo logged; echo also >&2"],
            stdout: .appending(toFile: file), stderr: .sameAsStdout,
            descriptors: [3: fds[1]])
        close(fds[1])
        XCTAssertEqual(child.wait(deadline: .now + .seconds(5)), .exited(0))
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = read(fds[0], &buffer, buffer.count)
        XCTAssertEqual(String(decoding: buffer[0..<max(0, n)], as: UTF8.self), "ready\n")
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), "logged\nalso\n")
        var info = stat()
        XCTAssertEqual(stat(file, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
    }

    func testReadingStopsWhenTheOutputSaysEnough() throws {
        // A daemon that prints its address and keeps running (and keeps the pipe open): read until two lines.
        let child = try Subprocess.spawn(["/bin/sh", "-c", "echo unix:path=/x; echo 42; exec sleep 30"])
        let read = child.read(until: .now + .seconds(5)) { $0.filter { $0 == 0x0A }.count >= 2 }
        XCTAssertTrue(read.complete)
        XCTAssertEqual(String(decoding: read.stdout, as: UTF8.self), "unix:path=/x\n42\n")
        XCTAssertEqual(child.kill(), .timedOut)
    }

    func testSessionsAndGroups() throws {
        let own = try Subprocess.spawn(["/bin/sleep", "30"], stdout: .null, stderr: .null, group: .own)
        defer { own.kill() }
        XCTAssertEqual(getpgid(own.pid), own.pid)
        let session = try Subprocess.spawn(["/bin/sleep", "30"], stdout: .null, stderr: .null, group: .newSession)
        defer { session.kill() }
        XCTAssertEqual(getsid(session.pid), session.pid)
        let inherited = try Subprocess.spawn(["/bin/sleep", "30"], stdout: .null, stderr: .null)
        defer { inherited.kill() }
        XCTAssertEqual(getpgid(inherited.pid), getpgrp())
    }

    /// A shell that ignores SIGTERM, started and past its `trap` (it says "ready") before the test goes on.
    private func stubbornChild(group: Subprocess.Group = .inherited) throws -> Subprocess {
        let child = try Subprocess.spawn(
            ["/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"], stderr: .null, group: group)
        XCTAssertTrue(child.read(until: .now + .seconds(10)) { $0.contains(0x0A) }.complete, "the shell never started")
        return child
    }

    func testTerminateAsksFirstKillsTheStubbornAndReapsBoth() throws {
        let polite = try Subprocess.spawn(["/bin/sleep", "30"], stdout: .null, stderr: .null)
        let stubborn = try stubbornChild()
        let ending = Subprocess.terminate([polite.pid, stubborn.pid], grace: .milliseconds(300))
        XCTAssertEqual(ending.killed, [stubborn.pid], "only the one that ignored SIGTERM needed SIGKILL")
        for pid in [polite.pid, stubborn.pid] {
            var status: Int32 = 0
            XCTAssertEqual(waitpid(pid, &status, WNOHANG), -1, "\(pid) was left unreaped")
            XCTAssertNil(Subprocess.processState(pid))
        }
    }

    func testTerminateWithoutEscalationOnlyAsksAndAGroupTakesItsMembers() throws {
        let stubborn = try stubbornChild()
        XCTAssertEqual(Subprocess.terminate([stubborn.pid], grace: .milliseconds(100), escalate: false).killed, [])
        XCTAssertTrue(Subprocess.isRunning(stubborn.pid), "asked only, it should still run")
        XCTAssertEqual(stubborn.kill(), .timedOut)
        // A group leader with a child of its own: the group's signal reaches the child too.
        let leader = try Subprocess.spawn(
            ["/bin/sh", "-c", "sleep 30 & echo $!; wait"], stderr: .null, group: .own)
        let read = leader.read(until: .now + .seconds(10)) { $0.contains(0x0A) }
        let member = try XCTUnwrap(
            Int32(String(decoding: read.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        Subprocess.terminate([leader.pid], groups: [leader.pid], grace: .seconds(5))
        XCTAssertFalse(Subprocess.isRunning(leader.pid))
        // Not our child: init reaps it.
        XCTAssertTrue(
            poll(within: .seconds(5), every: .milliseconds(5)) { !Subprocess.isRunning(member) },
            "the group's other member \(member) outlived the group's SIGTERM")
    }

    func testSpawnFailuresAreTyped() {
        XCTAssertThrowsError(try Subprocess.spawn([])) { XCTAssertEqual($0 as? SubprocessError, .noCommand) }
        XCTAssertThrowsError(try Subprocess.spawn(["/nonexistent/program"])) { error in
            XCTAssertEqual(error as? SubprocessError, .spawn("/nonexistent/program", .noSuchFileOrDirectory))
            XCTAssertEqual("\(error)", "could not start /nonexistent/program: No such file or directory")
            XCTAssertEqual((error as? ClassifiedError)?.exitStatus, .internal)
        }
    }
}

/// Errno, the paths, and the sync-to-async bridge.
final class BasePlumbingTests: XCTestCase {
    func testErrnoIsTypedWithTheSystemsText() {
        errno = ENOENT
        XCTAssertEqual(Errno.current, .noSuchFileOrDirectory)
        XCTAssertEqual(Errno.noSuchFileOrDirectory.description, "No such file or directory")
        XCTAssertEqual(Errno(rawValue: EACCES), .permissionDenied)
        XCTAssertEqual(Errno.interrupted.rawValue, EINTR)
        XCTAssertTrue((Errno.noSuchProcess as Error) is Errno)
    }

    func testStateDirectoryPrecedence() {
        XCTAssertEqual(XclawPaths.stateDirectory(["XCLAW_STATE_DIR": "/s", "XDG_RUNTIME_DIR": "/run/u"]).path, "/s")
        XCTAssertEqual(
            XclawPaths.stateDirectory(["XCLAW_STATE_DIR": "", "XDG_RUNTIME_DIR": "/run/u"]).path,
            "/run/u/xclaw")
        XCTAssertEqual(XclawPaths.stateDirectory([:]).path, "/tmp/xclaw-\(getuid())")
    }

    func testXDGDirectoriesTakeAbsoluteValuesOnly() {
        let home = ["HOME": "/home/u"]
        XCTAssertEqual(XclawPaths.configDirectory(home), "/home/u/.config/xclaw")
        XCTAssertEqual(XclawPaths.dataDirectory(home), "/home/u/.local/share/xclaw")
        XCTAssertEqual(XclawPaths.userStateDirectory(home), "/home/u/.local/state/xclaw")
        let xdg = home.merging(["XDG_CONFIG_HOME": "/c", "XDG_DATA_HOME": "/d", "XDG_STATE_HOME": "/st"]) { $1 }
        XCTAssertEqual(XclawPaths.configDirectory(xdg), "/c/xclaw")
        XCTAssertEqual(XclawPaths.dataDirectory(xdg), "/d/xclaw")
        XCTAssertEqual(XclawPaths.userStateDirectory(xdg), "/st/xclaw")
        // The XDG spec: a relative value is invalid and ignored.
        let relative = home.merging(["XDG_CONFIG_HOME": "c", "XDG_DATA_HOME": "d", "XDG_STATE_HOME": ""]) { $1 }
        XCTAssertEqual(XclawPaths.configDirectory(relative), "/home/u/.config/xclaw")
        XCTAssertEqual(XclawPaths.dataDirectory(relative), "/home/u/.local/share/xclaw")
        XCTAssertEqual(XclawPaths.userStateDirectory(relative), "/home/u/.local/state/xclaw")
    }

    func testTheDatabasePath() {
        XCTAssertEqual(XclawPaths.database(["HOME": "/home/u"]), "/home/u/.local/share/xclaw/xclaw.sqlite")
        XCTAssertEqual(XclawPaths.database(["HOME": "/home/u", "XDG_DATA_HOME": "/d"]), "/d/xclaw/xclaw.sqlite")
        XCTAssertEqual(XclawPaths.database(["HOME": "/home/u", "XCLAW_DB": "~/a.db"]), "/home/u/a.db")
        XCTAssertEqual(XclawPaths.database(["HOME": "/home/u", "XCLAW_DB": "/x/b.db"]), "/x/b.db")
    }

    func testSiblingsAreFoundBesideTheRunningBinary() {
        // The test bundle's products directory, where the package's executables are built, holds the bundle itself.
        XCTAssertNotNil(XclawPaths.sibling("xclawPackageTests.xctest"))
        XCTAssertNil(XclawPaths.sibling("no-such-binary"))
        XCTAssertFalse(XclawPaths.executableDirectory.lastPathComponent.hasSuffix(".xctest"))
    }

    func testBlockingRunsAsyncWorkToItsEndAndPassesErrors() throws {
        XCTAssertEqual(
            try Blocking.wait { () async throws -> Int in
                try await Task.sleep(for: .milliseconds(1))  // kept: async work that suspends, what is bridged
                return 42
            }, 42)
        struct Boom: Error {}
        XCTAssertThrowsError(try Blocking.wait { () async throws -> Int in throw Boom() }) { XCTAssertTrue($0 is Boom) }
        let (task, wait) = Blocking.start { () async -> Bool in
            do { try await Task.sleep(for: .seconds(30)) } catch { return true }  // kept: work long enough to cancel
            return false
        }
        task.cancel()
        XCTAssertTrue(wait(), "a cancelled task ends early")
        let box = ResultBox<Int>()
        XCTAssertNil(box.value)
        box.value = 3
        XCTAssertEqual(box.value, 3)
    }
}
