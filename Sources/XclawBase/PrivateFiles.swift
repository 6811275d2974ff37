import Foundation

/// Files that hold screen text or conversations (the OCR cache, refs, exports): private to the user, and never read
/// from or written into a place another user planted. Checked on the opened descriptor (`O_NOFOLLOW` + `fstat`),
/// not by path, so a symlink swapped in between cannot redirect them.
public enum PrivateFiles {
    /// Writes `data` to `path` with mode 0600: atomically onto a regular file or a new path (a new temporary file
    /// beside it, `O_EXCL` so nothing planted is reused, then a rename, which replaces a symlink at `path` instead of
    /// following it), and through a device, a FIFO of this user or the command's own stdout (`OutputFile`).
    public static func write(_ data: Data, to path: String) throws {
        do { try OutputFile.write(data, to: path, permissions: 0o600, privateData: true) } catch let error
            as OutputFileError
        {
            throw PrivateFileError(path: path, reason: error.reason)
        }
    }

    /// The contents of `path` when it is a regular file of this user (a symlink is not followed); nil when it does
    /// not exist. A planted file (another owner, a symlink) is refused.
    public static func read(_ path: String) throws -> Data? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw PrivateFileError(path: path, reason: errno == ELOOP ? "it is a symlink" : "\(Errno.current)")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw PrivateFileError(path: path, reason: "it is not a regular file")
        }
        guard info.st_uid == getuid() else {
            throw PrivateFileError(path: path, reason: "it belongs to uid \(info.st_uid), not to you")
        }
        return FileHandle(fileDescriptor: fd, closeOnDealloc: false).readDataToEndOfFile()
    }

    /// What tells one version of the file at `path` from another (inode, size, modification time to the nanosecond),
    /// without reading it; nil when there is none.
    public static func stamp(_ path: String) -> FileStamp? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return FileStamp(
            inode: UInt64(info.st_ino), size: Int64(info.st_size), seconds: Int64(info.st_mtim.tv_sec),
            nanoseconds: Int64(info.st_mtim.tv_nsec))
    }

    /// `url` as a directory of this user that no one else can write, created (mode 0700, parents too) when
    /// missing. Refuses one another user made, one writable by others, and a symlink: the fallback `/tmp/xclaw-UID`
    /// is in a directory everyone can write, so someone could have made it first to read what xclaw puts there.
    @discardableResult
    public static func directory(_ url: URL) throws -> URL {
        let path = url.path
        if mkdir(path, 0o700) != 0 && errno == ENOENT {
            try? FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            _ = mkdir(path, 0o700)
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = errno == ELOOP || errno == ENOTDIR ? "it is a symlink or not a directory" : "\(Errno.current)"
            throw PrivateFileError(path: path, reason: reason)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw PrivateFileError(path: path, reason: "\(Errno.current)") }
        guard info.st_uid == getuid() else {
            throw PrivateFileError(path: path, reason: "it belongs to uid \(info.st_uid), not to you")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw PrivateFileError(
                path: path, reason: "others can write into it (mode \(String(info.st_mode & 0o777, radix: 8)))")
        }
        return url
    }
}

/// One version of a file, as `PrivateFiles.stamp` tells it: an atomic write (a new file renamed over the old) changes
/// the inode, an edit in place the size or the time.
public struct FileStamp: Hashable, Sendable {
    /// The inode number.
    public var inode: UInt64
    /// The size in bytes.
    public var size: Int64
    /// The modification time, seconds part.
    public var seconds: Int64
    /// The modification time, nanoseconds part.
    public var nanoseconds: Int64
}

/// A private file or directory that cannot be used safely; exit 2, with what to do.
public struct PrivateFileError: ClassifiedError, Hashable {
    /// The file or directory.
    public var path: String
    /// What is wrong with it.
    public var reason: String
    /// Bad input from the environment: the user fixes it.
    public var exitStatus: ExitStatus { .usage }
    /// The message, saying what to do.
    public var description: String {
        "refusing \(path): \(reason). Remove it, or set XCLAW_STATE_DIR to a directory only you can write"
    }
}
