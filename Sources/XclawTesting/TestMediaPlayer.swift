import Foundation
import XclawBase
import XclawPolling

/// A real MPRIS player for the tests: mpv with Debian's MPRIS plugin on a test's session bus, playing a generated
/// tone with no audio or video device, looping. Its IPC socket is the oracle of what it does (`property`), read
/// without the bus the code under test uses.
public final class TestMediaPlayer: @unchecked Sendable {
    /// The player's bus name.
    public let busName = "org.mpris.MediaPlayer2.mpv"
    /// mpv's IPC socket.
    public let ipc: String
    private let process: Subprocess

    /// Starts mpv on `bus` with `title` as the media title; returns once its name is on the bus.
    public init(on bus: TestSessionBus, title: String = "Test tone") throws {
        ipc = bus.directory + "/mpv-\(UUID().uuidString.prefix(6)).sock"
        process = try bus.start(
            [
                "/usr/bin/mpv", "--no-config", "--script=/etc/mpv/scripts/mpris.so", "--ao=null", "--vo=null",
                "--idle=no", "--loop-file=inf", "--force-media-title=" + title, "--input-ipc-server=" + ipc,
                "av://lavfi:sine=frequency=440",
            ], log: "mpv")
        let ready = poll(within: .seconds(20)) { (try? self.property("pause")) != nil }
        let named =
            ready
            && poll(within: .seconds(20)) {
                let out = try? Subprocess.run(
                    [
                        "/usr/bin/dbus-send", "--bus=" + bus.address, "--print-reply", "--dest=org.freedesktop.DBus",
                        "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", "string:" + self.busName,
                    ], timeout: .seconds(10))
                return out.map { String(decoding: $0.stdout, as: UTF8.self).contains("boolean true") } ?? false
            }
        guard named else {
            throw TestSessionBus.Failure(description: "mpv did not start on the test bus: \(bus.log("mpv"))")
        }
    }

    /// mpv's own answer to `get_property NAME` (`pause`, `time-pos`, `media-title`); nil when it gave none.
    public func property(_ name: String) throws -> Any? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(ipc.utf8.prefix(raw.count - 1)) + [0])
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { return nil }
        let request = Array("{\"command\":[\"get_property\",\"\(name)\"],\"request_id\":7}\n".utf8)
        guard write(fd, request, request.count) == request.count else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var text = ""
        // mpv may send event lines first; the reply is the line with our request id.
        while true {
            for line in text.split(separator: "\n") where line.contains("\"request_id\":7") {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                return object?["data"]
            }
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { return nil }
            text += String(decoding: buffer[0..<n], as: UTF8.self)
        }
    }

    /// Whether mpv says it is paused.
    public var isPaused: Bool? { (try? property("pause")) as? Bool }

    /// mpv's playback position in seconds.
    public var position: Double? { (try? property("time-pos")) as? Double }

    /// Ends mpv.
    public func stop() { _ = process.kill() }
}
