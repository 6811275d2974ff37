import Foundation

/// One command's world: its environment, working directory, standard streams, terminal and cancellation. In-process
/// it is the process's own; in the daemon it is the asking CLI's, whose descriptors came over the socket, so a
/// command writes the same bytes to the same files, pipes and terminals either way.
public struct Invocation: Sendable {
    /// The two output streams.
    public enum Stream: Sendable { case stdout, stderr }

    /// The environment the command sees.
    public var environment: [String: String]
    /// Its working directory: where relative paths resolve.
    public var directory: String
    /// Its stdin, stdout and stderr.
    public var descriptors: (input: Int32, output: Int32, error: Int32)
    /// Its controlling terminal, passed by the CLI; nil: open `/dev/tty` when a question needs one.
    public var terminal: Int32?
    /// The process that asked: this one in-process, the CLI's in the daemon (names made unique per process use it).
    public var pid: pid_t
    /// The signals the asker forwards (Ctrl-C, SIGTERM, its hanging up); nil in-process, where real signals arrive.
    public var interrupts: InterruptHub?

    /// A world of the given parts.
    public init(
        environment: [String: String], directory: String, descriptors: (input: Int32, output: Int32, error: Int32),
        terminal: Int32?, pid: pid_t, interrupts: InterruptHub?
    ) {
        (self.environment, self.directory, self.descriptors) = (environment, directory, descriptors)
        (self.terminal, self.pid, self.interrupts) = (terminal, pid, interrupts)
    }

    /// True once the asker is interrupted or gone: long commands stop early.
    public func cancelled() -> Bool { (interrupts?.raised ?? 0) != 0 }

    /// The daemon's per-request world, set for the duration of one request.
    @TaskLocal public static var served: Invocation?

    /// The world of the running command: the served one, else the process's.
    public static var current: Invocation { served ?? process }

    /// Whether the running command is served by the daemon for another process.
    public static var isServed: Bool { served != nil }

    /// This process's own world.
    public static var process: Invocation {
        Invocation(
            environment: ProcessInfo.processInfo.environment, directory: FileManager.default.currentDirectoryPath,
            descriptors: (STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO), terminal: nil, pid: getpid(),
            interrupts: nil)
    }

    /// Runs `body` as the served request `invocation`.
    public static func serve<T>(_ invocation: Invocation, _ body: () throws -> T) rethrows -> T {
        try $served.withValue(invocation) { try body() }
    }

    /// Whether `stream` is a terminal.
    public func isTerminal(_ stream: Stream) -> Bool { isatty(descriptor(stream)) != 0 }

    /// Writes all of `data` to `stream`, unbuffered, so stdout and stderr interleave as written.
    public func write(_ stream: Invocation.Stream, _ data: Data) {
        // An abandoned command (its asker exited on a second Ctrl-C) would have died in-process: it prints nothing more.
        if interrupts?.isAbandoned == true { return }
        writeAll(descriptor(stream), data)
    }

    /// All of stdin, to its end.
    public func readAll() -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(into: &buffer)
            if count <= 0 { return data }
            data.append(contentsOf: buffer[0..<count])
        }
    }

    /// One read of stdin (0 at its end). Served, it also ends (0) once the command is abandoned: its asker is gone.
    private func read(into buffer: inout [UInt8]) -> Int {
        while true {
            if let abandonment = interrupts?.abandonment {
                var fds = [
                    pollfd(fd: descriptors.input, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: abandonment, events: Int16(POLLIN), revents: 0),
                ]
                if poll(&fds, 2, -1) < 0 && errno == EINTR { continue }
                if fds[1].revents != 0 { return 0 }
            }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptors.input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            return max(0, count)
        }
    }

    /// One line of stdin without its newline; nil at its end. A served request reads a byte at a time, so nothing
    /// past the line is taken from a stdin the CLI's caller may go on reading.
    public func readLine() -> String? {
        guard Invocation.isServed else { return Swift.readLine(strippingNewline: true) }
        var line: [UInt8] = []
        var byte: [UInt8] = [0]
        while true {
            if read(into: &byte) <= 0 { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if byte[0] == 0x0A { return String(decoding: line, as: UTF8.self) }
            line.append(byte[0])
        }
    }

    /// `path` against the working directory when it is relative.
    public func resolve(_ path: String) -> String {
        path.hasPrefix("/") ? path : (directory as NSString).appendingPathComponent(path)
    }

    private func descriptor(_ stream: Stream) -> Int32 {
        stream == .stdout ? descriptors.output : descriptors.error
    }
}
