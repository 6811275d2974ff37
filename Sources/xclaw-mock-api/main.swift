// xclaw-mock-api: the loopback Messages API server as a program, for demos and benchmarks without network access.
import Dispatch
import Foundation
import Glibc
import Synchronization
import XclawBase
import XclawMockAPI

let usageText = """
    usage: xclaw-mock-api --script FILE [--port N] [--record FILE]
      --script FILE   JSON: {"replies": [...], "repeat": false} (see MockScript for the reply format)
      --port N        port on 127.0.0.1 (default 0: any free port)
      --record FILE   write every request as one JSON line (x-api-key redacted)
    Prints the base URL (http://127.0.0.1:PORT) on stdout once listening; logs requests on stderr.
    """

/// Argument errors exit 2, as every xclaw program does.
func usageError(_ message: String) -> Never {
    FileHandle.standardError.write(Data("xclaw-mock-api: \(message)\n\(usageText)\n".utf8))
    exit(2)
}

/// Writes whole lines to the record file under a lock, since connections run on their own threads.
final class Recorder: Sendable {
    private let fd: Int32
    private let lock = Mutex(())

    init?(path: String) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if fd < 0 { return nil }
    }

    func record(_ request: RecordedRequest) {
        var headers = request.headers
        for secret in ["x-api-key", "authorization"] where headers[secret] != nil {
            headers[secret] = "<redacted>"
        }
        var object: [String: Any] = [
            "index": request.index, "request_id": request.requestID, "method": request.method, "path": request.path,
            "time": request.receivedAt.timeIntervalSince1970, "headers": headers,
            "body": request.json() ?? String(decoding: request.body, as: UTF8.self),
        ]
        if let query = request.query { object["query"] = query }
        guard
            var data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        data.append(0x0A)
        lock.withLock { _ in
            data.withUnsafeBytes { raw in
                var at = 0
                while at < raw.count {
                    let n = write(fd, raw.baseAddress! + at, raw.count - at)
                    if n <= 0 { if errno == EINTR { continue } else { return } }
                    at += n
                }
            }
        }
    }
}

/// One stderr line per request: enough to follow a demo without opening the record file.
func logLine(_ request: RecordedRequest) -> String {
    var parts = ["\(request.requestID) \(request.method) \(request.path)"]
    if let model = request.model { parts.append("model=\(model)") }
    if request.object != nil {
        parts.append("messages=\(request.messageCount)")
        let tools = request.toolNames
        if !tools.isEmpty { parts.append("tools=\(tools.joined(separator: ","))") }
        let results = request.toolResults
        if !results.isEmpty { parts.append("tool_results=\(results.count)") }
    }
    parts.append("bytes=\(request.body.count)")
    return "xclaw-mock-api: " + parts.joined(separator: " ") + "\n"
}

func main() -> Never {
    // A stop signal ends it at once and cleanly (exit 0: each request was recorded as it came), by a handler in place
    // from the start: a dispatch signal source ignored the signal until its manager thread registered it, and a
    // harness's SIGTERM in between was lost.
    for sig in [SIGTERM, SIGINT] { signal(sig) { _ in _exit(0) } }
    var scriptPath: String?
    var port = 0
    var recordPath: String?
    var args = Array(CommandLine.arguments.dropFirst())[...]
    while let arg = args.popFirst() {
        var name = arg
        var inline: String?
        if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
            name = String(arg[..<eq])
            inline = String(arg[arg.index(after: eq)...])
        }
        func value() -> String {
            if let inline { return inline }
            guard let next = args.popFirst() else { usageError("\(name) needs a value") }
            return next
        }
        switch name {
        case "--script": scriptPath = value()
        case "--record": recordPath = value()
        case "--port":
            let text = value()
            guard let n = Int(text), (0...65535).contains(n) else { usageError("--port: \"\(text)\" is not a port") }
            port = n
        case "-h", "--help":
            FileHandle.standardOutput.write(Data((usageText + "\n").utf8))
            exit(0)
        default: usageError("unknown argument \"\(arg)\"")
        }
    }
    guard let scriptPath else { usageError("--script is required") }
    let script: MockScript
    do { script = try MockScript(contentsOfFile: scriptPath) } catch { usageError("\(scriptPath): \(error)") }
    var recorder: Recorder?
    if let recordPath {
        guard let r = Recorder(path: recordPath) else {
            usageError("--record: cannot open \(recordPath): \(errnoString())")
        }
        recorder = r
    }

    let server: MockMessagesServer
    do {
        if script.repeats && !script.replies.isEmpty {
            let replies = script.replies
            let counter = Atomic<Int>(0)
            server = try MockMessagesServer(port: port) { _, _ in
                replies[(counter.add(1, ordering: .relaxed).newValue - 1) % replies.count]
            }
        } else {
            server = try MockMessagesServer(replies: script.replies, port: port)
        }
    } catch {
        FileHandle.standardError.write(Data("xclaw-mock-api: \(error)\n".utf8))
        exit(1)
    }
    let sink = recorder
    server.onRequest = { request in
        FileHandle.standardError.write(Data(logLine(request).utf8))
        sink?.record(request)
    }

    signal(SIGPIPE, SIG_IGN)
    FileHandle.standardOutput.write(Data("\(server.baseURL)\n".utf8))
    dispatchMain()
}

func errnoString() -> String { Errno.current.description }

main()
