import Foundation
import XCTest
import XclawBase
import XclawTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The web tests' daemon (`WebViewDaemon`, in a temporary state directory removed at the end), with a way to ask it
/// over HTTP as a browser or a script would.
final class WebDaemon {
    private let daemon: WebViewDaemon
    var url: String { daemon.url }
    var token: String { daemon.token }
    /// The port it listens on.
    var port: Int { URL(string: daemon.url)?.port ?? 0 }
    /// Its process id.
    var pid: Int32 { daemon.pid }
    /// The environment it runs with (its state directory, database), for CLI commands that must reach it.
    var environment: [String: String] { daemon.environment }
    /// What it logged.
    var logText: String { daemon.logText }

    /// Starts one with `environment` over the test's, through `launcher` when given (`prlimit …`).
    init(environment: [String: String] = [:], launcher: [String] = []) throws {
        daemon = try WebViewDaemon(
            state: FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-web-\(UUID().uuidString)"),
            environment: environment, launcher: launcher)
    }

    /// A raw connection to its web port, for what URLSession will not send (malformed heads, idle connections).
    func connect() throws -> RawConnection { try RawConnection(port: port) }

    /// One raw request: what came back until the server closed or `timeout` passed.
    func raw(_ request: String, timeout: Double = 5) throws -> (text: String, closed: Bool) {
        let connection = try connect()
        guard connection.send(request) else { throw WebDaemonError("the request could not be sent") }
        return connection.receive(timeout: timeout)
    }

    /// Stops it and removes its state.
    func stop() {
        daemon.stop()
        try? FileManager.default.removeItem(at: daemon.state)
    }

    /// One HTTP exchange with it: status, headers (lowercased names), body.
    func request(
        _ path: String, method: String = "GET", headers: [String: String] = [:], body: Data? = nil,
        token: String? = nil, followRedirects: Bool = false
    ) throws -> (status: Int, headers: [String: String], body: Data) {
        let target = try XCTUnwrap(URL(string: url + (path.hasPrefix("/") ? String(path.dropFirst()) : path)))
        var request = URLRequest(url: target)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let delegate = RedirectPolicy(follow: followRedirects)
        let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        session.dataTask(with: request) { data, response, error in
            box.set(data, response as? HTTPURLResponse, error)
            done.signal()
        }.resume()
        guard done.wait(timeout: .now() + 60) == .success else {
            throw WebDaemonError("\(method) \(path): no answer in 60 s")
        }
        let (data, response, error) = box.get()
        if let error { throw error }
        let http = try XCTUnwrap(response)
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return (http.statusCode, fields, data ?? Data())
    }
}

/// Whether a test's request follows redirects (the token's 303 is checked as it is).
private final class RedirectPolicy: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    // Safe because: immutable after init.
    let follow: Bool
    init(follow: Bool) { self.follow = follow }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(follow ? request : nil)
    }
}

/// A data task's result, handed from its queue to the test's thread.
private final class ResultBox: @unchecked Sendable {
    // Safe because: every access holds `lock`.
    private let lock = NSLock()
    private var value: (Data?, HTTPURLResponse?, (any Error)?) = (nil, nil, nil)
    func set(_ data: Data?, _ response: HTTPURLResponse?, _ error: (any Error)?) {
        lock.withLock { value = (data, response, error) }
    }
    func get() -> (Data?, HTTPURLResponse?, (any Error)?) { lock.withLock { value } }
}

/// A raw TCP connection to 127.0.0.1:PORT, closed when released.
final class RawConnection {
    let descriptor: Int32

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw WebDaemonError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = errno
            Glibc.close(descriptor)
            throw WebDaemonError("connect to port \(port): errno \(error)")
        }
    }

    deinit { Glibc.close(descriptor) }

    /// Sends all of `text`; false when the server is gone.
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            == bytes.count
    }

    /// What the server sends until it closes the connection or `timeout` passes, and whether it closed.
    func receive(timeout: Double) -> (text: String, closed: Bool) {
        var data: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&ready, 1, Int32(max(1, left * 1000))) >= 0 else { break }
            guard ready.revents != 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { return (String(decoding: data, as: UTF8.self), true) }
            data += buffer[0..<count]
        }
        return (String(decoding: data, as: UTF8.self), false)
    }
}

/// The web daemon did not do what a test needs of it.
struct WebDaemonError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
