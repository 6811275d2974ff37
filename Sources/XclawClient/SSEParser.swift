import XclawMessages

/// One server-sent event: the unit the Messages API streams.
public struct SSEEvent: Sendable, Hashable {
    /// The `event:` field; "message" when the server sent none, as the SSE spec says.
    public var event: String
    /// The `data:` lines joined with "\n".
    public var data: String

    /// Creates an event.
    public init(event: String = "message", data: String) {
        self.event = event
        self.data = data
    }
}

/// Incremental `text/event-stream` parser: reads split at any byte, so it decodes only whole lines.
public struct SSEParser: Sendable {
    private var line: [UInt8] = []
    /// The previous chunk ended with "\r": a "\n" starting the next one belongs to the same line end.
    private var skipLF = false
    private var atStreamStart = true
    private var eventType = ""
    private var data = ""
    private var hasData = false

    /// Creates a parser at the start of a stream.
    public init() {}

    /// Consumes bytes; returns the events they complete, in order.
    public mutating func feed(_ bytes: some Collection<UInt8>) -> [SSEEvent] {
        var events: [SSEEvent] = []
        let done: Void? = bytes.withContiguousStorageIfAvailable { buf in
            scan(UnsafeRawBufferPointer(buf), into: &events)
        }
        if done == nil {
            let copy = Array(bytes)
            copy.withUnsafeBytes { scan($0, into: &events) }
        }
        return events
    }

    /// Ends the stream: a last event missing only its blank line is delivered, a half-received line is dropped.
    public mutating func finish() -> [SSEEvent] {
        var events: [SSEEvent] = []
        if line.isEmpty, hasData { dispatch(into: &events) }
        line.removeAll()
        eventType = ""
        data = ""
        hasData = false
        skipLF = false
        return events
    }

    private mutating func scan(_ buf: UnsafeRawBufferPointer, into events: inout [SSEEvent]) {
        var start = 0
        var i = 0
        let n = buf.count
        if skipLF, n > 0 {
            skipLF = false
            if buf[0] == 0x0A { start = 1; i = 1 }
        }
        while i < n {
            let b = buf[i]
            if b == 0x0A || b == 0x0D {
                line.append(contentsOf: UnsafeRawBufferPointer(rebasing: buf[start..<i]))
                processLine(into: &events)
                line.removeAll(keepingCapacity: true)
                if b == 0x0D {
                    if i + 1 < n {
                        if buf[i + 1] == 0x0A { i += 1 }
                    } else {
                        skipLF = true
                    }
                }
                i += 1
                start = i
            } else {
                i += 1
            }
        }
        if start < n { line.append(contentsOf: UnsafeRawBufferPointer(rebasing: buf[start..<n])) }
    }

    private mutating func processLine(into events: inout [SSEEvent]) {
        var bytes = line[...]
        if atStreamStart {
            atStreamStart = false
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        }
        if bytes.isEmpty {
            dispatch(into: &events)
            return
        }
        if bytes.first == UInt8(ascii: ":") { return }  // comment
        let field: String
        var value: ArraySlice<UInt8>
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            field = String(decoding: bytes[..<colon], as: UTF8.self)
            value = bytes[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            field = String(decoding: bytes, as: UTF8.self)
            value = []
        }
        switch field {
        case "event": eventType = String(decoding: value, as: UTF8.self)
        case "data":
            if hasData { data += "\n" }
            data += String(decoding: value, as: UTF8.self)
            hasData = true
        default: break  // id, retry and unknown fields do not matter to the Messages API
        }
    }

    private mutating func dispatch(into events: inout [SSEEvent]) {
        if hasData {
            events.append(SSEEvent(event: eventType.isEmpty ? "message" : eventType, data: data))
        }
        eventType = ""
        data = ""
        hasData = false
    }
}
