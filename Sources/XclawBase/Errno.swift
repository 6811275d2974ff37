import Glibc

/// A POSIX error number, typed (on apple/swift-system's model), so a failed system call becomes an error value with
/// its system text instead of a string built at each call site.
public struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    /// The number, as in `<errno.h>`.
    public let rawValue: Int32

    /// The error with this number.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno`, read right after the call that failed.
    public static var current: Errno { Errno(rawValue: errno) }

    /// The system's text for it (`strerror`), e.g. "No such file or directory".
    public var description: String { String(cString: strerror(rawValue)) }

    /// EINTR: a signal arrived; the call is retried.
    public static let interrupted = Errno(rawValue: EINTR)
    /// EAGAIN: nothing to read yet.
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    /// ENOENT.
    public static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// EACCES.
    public static let permissionDenied = Errno(rawValue: EACCES)
    /// EEXIST.
    public static let fileExists = Errno(rawValue: EEXIST)
    /// ESRCH: the process is gone.
    public static let noSuchProcess = Errno(rawValue: ESRCH)
    /// ECHILD: not our child, or already reaped.
    public static let noChildProcess = Errno(rawValue: ECHILD)
    /// EMFILE: this process has no descriptor left.
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
}
