import Glibc

/// Reads `/proc` (and other kernel-made) files, whose size reads as 0, so they are read until EOF.
public enum ProcFiles {
    /// The whole file; nil when it cannot be opened (the process is gone, or not ours).
    public static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            result += buffer[0..<n]
        }
        return result
    }
}
