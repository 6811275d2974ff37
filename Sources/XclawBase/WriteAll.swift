import Foundation
import Glibc

/// Writes all of `data` to `descriptor`, finishing partial writes and retrying on EINTR (a full pipe takes a large
/// write in pieces); false when a write failed (the reader is gone: EPIPE with SIGPIPE ignored).
@discardableResult
public func writeAll(_ descriptor: Int32, _ data: Data) -> Bool {
    data.withUnsafeBytes { buffer in
        guard let base = buffer.baseAddress else { return true }
        var offset = 0
        while offset < buffer.count {
            let written = Glibc.write(descriptor, base + offset, buffer.count - offset)
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }
}
