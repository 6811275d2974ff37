import CCurl
import Foundation
import Synchronization
import XclawBase
import XclawMessages

/// One curl multi handle. It owns the connection and DNS caches, so keeping it between requests lets the next
/// agent turn reuse the TLS connection instead of paying a new handshake.
/// Safe because one transfer owns it at a time: the client's pool (a Mutex) hands it out and takes it back, and only
/// that transfer's thread touches the handle meanwhile.
final class CurlMulti: @unchecked Sendable {
    /// The raw `CURLM*`; used by one transfer thread at a time (the client's pool guarantees it).
    let handle: UnsafeMutableRawPointer

    init?() {
        guard CurlTransport.globalInit, let h = curl_multi_init() else { return nil }
        handle = h
    }

    deinit { curl_multi_cleanup(handle) }
}

/// What one attempt sends.
struct HTTPRequest: Sendable {
    var url: String
    var headers: [String]
    var body: Data
    var connectTimeout: Duration
    var idleTimeout: Duration
    /// A GET (the body is not sent) instead of a POST.
    var get = false
    /// Set for a page the model named (fetch_url) rather than an API xclaw chose: redirects, a time and size limit,
    /// and the address check on every connection.
    var page: PageRules?
}

/// What a transfer of a model-named page obeys, so an untrusted page cannot make xclaw reach the local network, wait
/// forever or fill memory.
struct PageRules: Sendable {
    /// Redirects followed (http and https only); one more fails with CURLE_TOO_MANY_REDIRECTS.
    var maxRedirects: Int
    /// The whole transfer, redirects included.
    var timeout: Duration
    /// Body bytes kept (after decompression); the transfer stops there and the outcome says `truncated`.
    var byteLimit: Int
    /// Asked for every address a socket is about to connect to, after DNS and on every hop; false refuses it.
    var permits: @Sendable (IPAddress) -> Bool
}

/// What one attempt got back, before the client decides between success, retry and failure.
struct TransferOutcome: Sendable {
    /// The final HTTP status; 0 when no response arrived.
    var status = 0
    /// Response headers of the final response, names lowercased.
    var headers: [String: String] = [:]
    /// True when the body went through the SSE parser (2xx `text/event-stream`).
    var streamed = false
    var assembler = StreamAssembler()
    /// The body of a non-streamed response (error JSON, a plain Message), capped.
    var body: [UInt8] = []
    /// What the assembler threw; the transfer was aborted right there.
    var streamError: (any Error)?
    /// CURLE_OK (0) or curl's failure code.
    var curlCode: UInt32 = 0
    /// curl's detailed message for `curlCode`.
    var curlMessage = ""
    /// The caller's Task was cancelled; the transfer was aborted.
    var cancelled = false
    /// Nothing was sent or received for the idle timeout.
    var idleTimedOut = false
    /// The body reached the page's byte limit and the transfer stopped there (not a failure).
    var truncated = false
    /// The URL of the last hop, after redirects.
    var effectiveURL: String?
    /// An address the page's rules refused a connection to (the transfer then failed to connect).
    var refusedAddress: IPAddress?
}

/// The mutable state curl's C callbacks write into; lives on the transfer thread only.
private final class TransferContext {
    let easy: UnsafeMutableRawPointer
    let cancel: CancelFlag
    let onEvent: @Sendable (StreamEvent) -> Void
    let page: PageRules?
    var outcome = TransferOutcome()
    var parser = SSEParser()
    var decided = false
    var bytesReceived = 0
    static let bodyLimit = 64 << 20

    init(
        easy: UnsafeMutableRawPointer, cancel: CancelFlag, page: PageRules?,
        onEvent: @escaping @Sendable (StreamEvent) -> Void
    ) {
        self.easy = easy
        self.cancel = cancel
        self.page = page
        self.onEvent = onEvent
    }

    /// A socket for `address`, or -1 (CURL_SOCKET_BAD) when the page's rules refuse the address.
    func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        let family = address.pointee.family
        let target = withUnsafePointer(to: &address.pointee.addr) { IPAddress(family: family, sockaddr: $0) }
        if let page {
            // Not an IP socket (none is asked for over http/https) is refused too: nothing to check it against.
            guard let target, page.permits(target) else {
                outcome.refusedAddress = target
                return -1
            }
        }
        // Close-on-exec, so a program an agent launches never inherits the connection.
        return socket(family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
    }

    /// One header line; a new status line (after a proxy's CONNECT reply or a 1xx) starts a new header set.
    func header(_ bytes: UnsafeRawBufferPointer) {
        bytesReceived += bytes.count
        let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if line.hasPrefix("HTTP/") {
            outcome.headers = [:]
            decided = false
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            outcome.headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }

    /// Body bytes; returns false to make curl abort (cancelled, or the stream carried an error).
    func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytesReceived += bytes.count
        if cancel.isSet { return false }
        if !decided {
            decided = true
            var code = 0
            _ = xclaw_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &code)
            outcome.status = code
            let type = outcome.headers["content-type"]?.lowercased() ?? ""
            outcome.streamed = page == nil && (200..<300).contains(code) && type.contains("text/event-stream")
        }
        if outcome.streamed {
            return deliver(parser.feed(bytes))
        }
        if let limit = page?.byteLimit, outcome.body.count + bytes.count > limit {
            outcome.body.append(contentsOf: bytes.prefix(limit - outcome.body.count))
            outcome.truncated = true
            return false
        }
        if outcome.body.count < Self.bodyLimit { outcome.body.append(contentsOf: bytes) }
        return true
    }

    /// Applies parsed events in order and hands each StreamEvent to the caller at once.
    func deliver(_ events: [SSEEvent]) -> Bool {
        for event in events {
            do {
                for e in try outcome.assembler.apply(event) { onEvent(e) }
            } catch {
                outcome.streamError = error
                return false
            }
        }
        return true
    }
}

/// libcurl's multi interface on a dedicated thread per transfer: the Swift cooperative pool (2 threads here) is
/// never blocked, and the 50 ms poll lets a cancelled Task stop the transfer promptly.
enum CurlTransport {
    /// `curl_global_init` exactly once per process (a static let initialises once, thread-safely).
    static let globalInit: Bool = xclaw_curl_global_init() == CURLE_OK

    /// Longest wait in `curl_multi_poll` between cancel and idle checks.
    static let pollMilliseconds: Int32 = 50

    /// Runs one transfer; returns when it ended, failed, was cancelled or went idle.
    static func perform(
        _ request: HTTPRequest, multi: CurlMulti,
        onEvent: @escaping @Sendable (StreamEvent) -> Void
    ) async -> TransferOutcome {
        let cancel = CancelFlag()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<TransferOutcome, Never>) in
                let thread = Thread {
                    continuation.resume(returning: run(request, multi: multi, cancel: cancel, onEvent: onEvent))
                }
                thread.name = "xclaw-curl"
                thread.start()
            }
        } onCancel: {
            cancel.set()
        }
    }

    /// The blocking transfer loop, on the transfer thread.
    private static func run(
        _ request: HTTPRequest, multi: CurlMulti, cancel: CancelFlag,
        onEvent: @escaping @Sendable (StreamEvent) -> Void
    ) -> TransferOutcome {
        guard let easy = curl_easy_init() else {
            var failed = TransferOutcome()
            failed.curlCode = CURLE_FAILED_INIT.rawValue
            failed.curlMessage = "libcurl could not create a handle"
            return failed
        }
        let context = TransferContext(easy: easy, cancel: cancel, page: request.page, onEvent: onEvent)
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let body = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, request.body.count), alignment: 1)
        request.body.copyBytes(to: body)
        var headerList: UnsafeMutablePointer<curl_slist>?
        for h in request.headers { headerList = curl_slist_append(headerList, h) }
        defer {
            curl_easy_cleanup(easy)
            curl_slist_free_all(headerList)
            body.deallocate()
            errorBuffer.deallocate()
        }

        let opaque = Unmanaged.passUnretained(context).toOpaque()
        _ = xclaw_curl_setopt_string(easy, CURLOPT_URL, request.url)
        _ = xclaw_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = xclaw_curl_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1)
        _ = xclaw_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, milliseconds(request.connectTimeout))
        _ = xclaw_curl_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList)
        if request.get {
            _ = xclaw_curl_setopt_long(easy, CURLOPT_HTTPGET, 1)
        } else {
            _ = xclaw_curl_setopt_long(easy, CURLOPT_POST, 1)
            _ = xclaw_curl_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
            _ = xclaw_curl_setopt_pointer(easy, CURLOPT_POSTFIELDS, body.baseAddress)
        }
        _ = xclaw_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = xclaw_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, opaque)
        _ = xclaw_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, opaque)
        // Non-capturing literals: a capturing closure converted to a C function pointer crashes Swift 6.3.1.
        _ = xclaw_curl_setopt_write_function(easy, CURLOPT_WRITEFUNCTION) { ptr, size, count, userdata in
            guard let ptr, let userdata else { return 0 }
            let n = size * count
            let ctx = Unmanaged<TransferContext>.fromOpaque(userdata).takeUnretainedValue()
            return ctx.body(UnsafeRawBufferPointer(start: ptr, count: n)) ? n : 0
        }
        _ = xclaw_curl_setopt_write_function(easy, CURLOPT_HEADERFUNCTION) { ptr, size, count, userdata in
            guard let ptr, let userdata else { return 0 }
            let n = size * count
            let ctx = Unmanaged<TransferContext>.fromOpaque(userdata).takeUnretainedValue()
            ctx.header(UnsafeRawBufferPointer(start: ptr, count: n))
            return n
        }
        if let page = request.page { limit(easy, to: page, context: opaque) }

        return withExtendedLifetime(context) { () -> TransferOutcome in
            let m = multi.handle
            guard curl_multi_add_handle(m, easy) == CURLM_OK else {
                context.outcome.curlCode = CURLE_FAILED_INIT.rawValue
                context.outcome.curlMessage = "libcurl could not start the transfer"
                return context.outcome
            }
            var running: Int32 = 1
            var lastProgress = -1
            var lastActivity = ContinuousClock.now
            var multiError: CURLMcode?
            while true {
                if cancel.isSet { context.outcome.cancelled = true; break }
                let mc = curl_multi_perform(m, &running)
                if mc != CURLM_OK { multiError = mc; break }
                if running == 0 { break }
                var uploaded: curl_off_t = 0
                _ = xclaw_curl_getinfo_offset(easy, CURLINFO_SIZE_UPLOAD_T, &uploaded)
                let progress = context.bytesReceived + Int(uploaded)
                let now = ContinuousClock.now
                if progress != lastProgress {
                    lastProgress = progress
                    lastActivity = now
                } else if now - lastActivity >= request.idleTimeout {
                    context.outcome.idleTimedOut = true
                    break
                }
                var ready: Int32 = 0
                let pc = curl_multi_poll(m, nil, 0, pollMilliseconds, &ready)
                if pc != CURLM_OK { multiError = pc; break }
            }
            if cancel.isSet { context.outcome.cancelled = true }

            var result = CURLE_OK
            var left: Int32 = 0
            while let msg = curl_multi_info_read(m, &left) {
                if msg.pointee.msg == CURLMSG_DONE, msg.pointee.easy_handle == easy {
                    result = xclaw_curl_msg_result(msg)
                }
            }
            curl_multi_remove_handle(m, easy)

            var code = 0
            _ = xclaw_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &code)
            if code != 0 { context.outcome.status = code }
            var effective: UnsafePointer<CChar>?
            if xclaw_curl_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK, let effective {
                context.outcome.effectiveURL = String(cString: effective)
            }
            // Stopping at the byte limit aborts the write; that is the page's end, not a failure.
            if context.outcome.truncated, result == CURLE_WRITE_ERROR { result = CURLE_OK }
            if let multiError {
                context.outcome.curlCode = CURLE_FAILED_INIT.rawValue
                context.outcome.curlMessage = String(cString: curl_multi_strerror(multiError))
            } else if result != CURLE_OK {
                context.outcome.curlCode = result.rawValue
                let detail = String(cString: errorBuffer)
                context.outcome.curlMessage = detail.isEmpty ? String(cString: curl_easy_strerror(result)) : detail
            }
            if context.outcome.streamed, context.outcome.streamError == nil, !context.outcome.cancelled {
                _ = context.deliver(context.parser.finish())
            }
            return context.outcome
        }
    }

    /// Applies a page's rules: redirects over http/https only, a deadline, no proxy (through one, the address a
    /// socket reaches could not be checked), any compression curl decodes, and the address check on every socket.
    private static func limit(_ easy: UnsafeMutableRawPointer, to page: PageRules, context: UnsafeMutableRawPointer) {
        _ = xclaw_curl_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = xclaw_curl_setopt_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        _ = xclaw_curl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, page.maxRedirects > 0 ? 1 : 0)
        _ = xclaw_curl_setopt_long(easy, CURLOPT_MAXREDIRS, page.maxRedirects)
        _ = xclaw_curl_setopt_long(easy, CURLOPT_TIMEOUT_MS, milliseconds(page.timeout))
        _ = xclaw_curl_setopt_string(easy, CURLOPT_PROXY, "")
        _ = xclaw_curl_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, "")
        _ = xclaw_curl_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, context)
        _ = xclaw_curl_setopt_opensocket_function(easy) { userdata, _, address in
            guard let userdata, let address else { return -1 }
            return Unmanaged<TransferContext>.fromOpaque(userdata).takeUnretainedValue().openSocket(address)
        }
    }

    private static func milliseconds(_ d: Duration) -> Int {
        let c = d.components
        return max(1, Int(c.seconds) * 1000 + Int(c.attoseconds / 1_000_000_000_000_000))
    }

    /// curl codes that no retry can fix: the URL, the protocol or the TLS trust setup is wrong.
    static func isPermanent(curlCode: UInt32) -> Bool {
        let permanent: [CURLcode] = [
            CURLE_UNSUPPORTED_PROTOCOL, CURLE_FAILED_INIT, CURLE_URL_MALFORMAT, CURLE_NOT_BUILT_IN,
            CURLE_OUT_OF_MEMORY, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE,
            CURLE_SSL_ENGINE_NOTFOUND, CURLE_BAD_FUNCTION_ARGUMENT,
        ]
        return permanent.contains { $0.rawValue == curlCode }
    }
}
