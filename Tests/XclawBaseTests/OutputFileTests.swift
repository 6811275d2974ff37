import Foundation
import XCTest
import XclawBase

/// Outputs a user names: written through devices, FIFOs and the command's own stdout, atomically onto regular files,
/// and never a rename over a device node (as root that turned `/dev/null` into a regular file).
final class OutputFileTests: XCTestCase {
    private var root: URL!

    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-output-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: root) }

    private func type(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : 0
    }

    func testDevNullIsWrittenThroughAndStaysTheNullDevice() throws {
        for write in [
            { try OutputFile.write(Data("png bytes".utf8), to: "/dev/null") },
            { try OutputFile.write(Data("script".utf8), to: "/dev/null", permissions: 0o777) },
            { try PrivateFiles.write(Data("a private export".utf8), to: "/dev/null") },
        ] {
            try write()
            var info = stat()
            XCTAssertEqual(lstat("/dev/null", &info), 0)
            XCTAssertEqual(info.st_mode & S_IFMT, S_IFCHR, "/dev/null is still a character device")
            XCTAssertEqual(info.st_mode & 0o7777, 0o666, "and its mode is unchanged")
            XCTAssertEqual(info.st_rdev, 0x103, "and it is still device 1,3")
        }
        // No temporary file was left in /dev.
        XCTAssertFalse(
            try FileManager.default.contentsOfDirectory(atPath: "/dev").contains { $0.hasPrefix(".xclaw-") })
        let fd = try XCTUnwrap(Optional(try OutputFile.openForAppending("/dev/null")))
        XCTAssertEqual(write(fd, "line\n", 5), 5)
        close(fd)
        XCTAssertEqual(type("/dev/null"), S_IFCHR)
    }

    func testAFIFOGetsTheBytesAndStaysAFIFO() throws {
        let fifo = root.appendingPathComponent("out.fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let payload = Data((0..<300_000).map { UInt8($0 % 251) })  // more than a pipe holds: the writer must wait
        let received = expectation(description: "read")
        nonisolated(unsafe) var got = Data()
        Thread {
            got = FileHandle(forReadingAtPath: fifo)?.readDataToEndOfFile() ?? Data()
            received.fulfill()
        }.start()
        try OutputFile.write(payload, to: fifo)
        wait(for: [received], timeout: 30)
        XCTAssertEqual(got, payload)
        XCTAssertEqual(type(fifo), S_IFIFO)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: root.path), ["out.fifo"])
    }

    func testAPrivateWriteRefusesAnotherUsersFIFO() throws {
        // The suite runs as root (only root can give a file away); elsewhere this fails, saying why.
        guard getuid() == 0 else { return XCTFail("needs root to give the FIFO away") }
        let fifo = root.appendingPathComponent("planted.fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o666), 0)
        XCTAssertEqual(chown(fifo, 65534, 65534), 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)  // a reader is there: only the owner check refuses
        defer { close(reader) }
        XCTAssertThrowsError(try PrivateFiles.write(Data("conversation".utf8), to: fifo)) { error in
            XCTAssertTrue("\(error)".contains("it belongs to uid 65534"), "\(error)")
            XCTAssertEqual((error as? ClassifiedError)?.exitStatus, .usage)
        }
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertLessThanOrEqual(read(reader, &buffer, 16), 0, "nothing reached the planted FIFO")
        // A plain output (a PNG to someone's FIFO) is the user's choice and goes through.
        try OutputFile.write(Data("ok".utf8), to: fifo)
        XCTAssertEqual(read(reader, &buffer, 16), 2)
    }

    func testDevStdoutIsTheCommandsOwnStdout() throws {
        // The daemon serves a command with the asker's descriptors: /dev/stdout there is the asker's stdout.
        var pipe: [Int32] = [0, 0]
        XCTAssertEqual(Glibc.pipe(&pipe), 0)
        defer { close(pipe[0]) }
        let invocation = Invocation(
            environment: [:], directory: root.path, descriptors: (0, pipe[1], 2), terminal: nil, pid: getpid(),
            interrupts: nil)
        try Invocation.serve(invocation) {
            try OutputFile.write(Data("to stdout".utf8), to: "/dev/stdout")
            try PrivateFiles.write(Data(" and private".utf8), to: "/dev/fd/1")
            let log = try OutputFile.openForAppending("/dev/stdout")
            XCTAssertNotEqual(log, pipe[1], "a duplicate, which the log may close")
            XCTAssertEqual(write(log, " and a log", 10), 10)
            close(log)
        }
        close(pipe[1])
        let text = String(decoding: FileHandle(fileDescriptor: pipe[0]).readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(text, "to stdout and private and a log")
    }

    func testEverySpellingOfTheStandardStreamsIsTheCommandsOwnAndTheDaemonsAreRefused() throws {
        var pipe: [Int32] = [0, 0]
        XCTAssertEqual(Glibc.pipe(&pipe), 0)
        defer { close(pipe[0]) }
        let served = Invocation(
            environment: [:], directory: "/dev", descriptors: (0, pipe[1], 2), terminal: nil, pid: getpid(),
            interrupts: nil)
        try Invocation.serve(served) {
            // Relative to a command run in /dev, with dots and doubled slashes: still the asker's stdout.
            XCTAssertEqual(OutputFile.normalized("./stdout"), "/dev/stdout")
            XCTAssertEqual(OutputFile.normalized("//dev/./stdout"), "/dev/stdout")
            XCTAssertEqual(OutputFile.normalized("/dev/../dev/fd/1"), "/dev/fd/1")
            for spelling in ["stdout", "./stdout", "/dev/./stdout", "//dev/stdout", "/dev/../dev/fd/1"] {
                try OutputFile.write(Data("[\(spelling)]".utf8), to: spelling)
            }
            // Another descriptor of "this process" would be the daemon's own; a terminal the asker did not pass is
            // not there: both are refused at once, neither waits.
            for refused in ["/dev/fd/5", "/proc/self/fd/7", "/proc/self/environ", "/dev/tty"] {
                XCTAssertThrowsError(try OutputFile.write(Data("x".utf8), to: refused), refused) { error in
                    XCTAssertEqual((error as? ClassifiedError)?.exitStatus, .usage, "\(error)")
                }
            }
            // Nothing new is ever made in /dev.
            XCTAssertThrowsError(try OutputFile.write(Data("x".utf8), to: "/dev/xclaw-test-\(getpid())")) { error in
                XCTAssertTrue("\(error)".contains("no new file in /dev"), "\(error)")
            }
        }
        close(pipe[1])
        let text = String(decoding: FileHandle(fileDescriptor: pipe[0]).readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(text, "[stdout][./stdout][/dev/./stdout][//dev/stdout][/dev/../dev/fd/1]")
        XCTAssertNil(try? FileManager.default.attributesOfItem(atPath: "/dev/xclaw-test-\(getpid())"))
        XCTAssertEqual(type("/dev/stdout"), S_IFLNK, "/dev/stdout is still the link it was")
    }

    func testRegularFilesAreReplacedAtomicallyWithTheirPermissions() throws {
        let path = root.appendingPathComponent("shot.png").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        try OutputFile.write(Data("new".utf8), to: path)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "new")
        let script = root.appendingPathComponent("task.sh").path
        try OutputFile.write(Data("#!/bin/sh\n".utf8), to: script, permissions: 0o777)
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: script)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o100, 0o100, "a shell export is executable as it is created")
        // Relative paths resolve against the command's directory, not the process's.
        let invocation = Invocation(
            environment: [:], directory: root.path, descriptors: (0, 1, 2), terminal: nil, pid: getpid(),
            interrupts: nil)
        try Invocation.serve(invocation) { try OutputFile.write(Data("rel".utf8), to: "relative.txt") }
        XCTAssertEqual(
            try String(contentsOfFile: root.appendingPathComponent("relative.txt").path, encoding: .utf8), "rel")
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: root.path).sorted(),
            ["relative.txt", "shot.png", "task.sh"], "no temporary file is left behind")
    }

    func testSocketsAndDirectoriesAreRefusedAndLeftAlone() throws {
        let socketPath = root.appendingPathComponent("s.sock").path
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in socketPath.utf8.enumerated() where i < raw.count - 1 { raw[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertThrowsError(try OutputFile.write(Data("x".utf8), to: socketPath)) { error in
            XCTAssertTrue("\(error)".contains("it is a socket"), "\(error)")
            XCTAssertEqual((error as? ClassifiedError)?.exitStatus, .usage)
        }
        XCTAssertEqual(type(socketPath), S_IFSOCK, "the socket is still there")
        XCTAssertThrowsError(try OutputFile.write(Data("x".utf8), to: root.path)) { error in
            XCTAssertTrue("\(error)".contains("it is a directory"), "\(error)")
        }
        XCTAssertEqual(type(root.path), S_IFDIR)
    }
}
