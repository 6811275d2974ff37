import XclawMessages

extension JSONValue {
    /// A request's message without its blocks' `cache_control` marks: they move with the newest turns, so two
    /// requests that carry the same conversation differ only in them.
    public var withoutCacheMarks: JSONValue {
        guard case .object(var m) = self, case .array(let blocks)? = m["content"] else { return self }
        m["content"] = .array(
            blocks.map { block in
                guard case .object(var b) = block else { return block }
                b["cache_control"] = nil
                return .object(b)
            })
        return .object(m)
    }
}
