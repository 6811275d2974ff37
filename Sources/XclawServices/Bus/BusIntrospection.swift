import Foundation

/// What an object offers, read from its `org.freedesktop.DBus.Introspectable.Introspect` XML: interfaces, their
/// methods with the signatures of their arguments, and the child nodes, so a call can be typed without the caller
/// spelling the signature.
public struct BusIntrospection: Sendable, Hashable {
    /// One method.
    public struct Method: Sendable, Hashable {
        /// Its name.
        public var name: String
        /// The signature of its input arguments, in order.
        public var input: String
        /// The signature of its output.
        public var output: String
    }

    /// Interface name → methods.
    public var interfaces: [String: [Method]]
    /// Property names per interface.
    public var properties: [String: [String]]
    /// Child node names (relative).
    public var children: [String]

    /// Parses introspection XML; what it does not know (annotations, signals) is left out.
    public init(xml: String) {
        var interfaces: [String: [Method]] = [:]
        var properties: [String: [String]] = [:]
        var children: [String] = []
        var interface: String?
        var method: Method?
        for tag in Self.tags(xml) {
            let name = Self.attribute("name", tag)
            switch tag.split(separator: " ", maxSplits: 1).first.map(String.init) ?? "" {
            case "interface": interface = name
            case "/interface": interface = nil
            case "method":
                method = Method(name: name ?? "", input: "", output: "")
                if tag.hasSuffix("/"), let done = method, let interface {
                    interfaces[interface, default: []].append(done)
                    method = nil
                }
            case "/method":
                if let done = method, let interface { interfaces[interface, default: []].append(done) }
                method = nil
            case "arg":
                guard var current = method, let type = Self.attribute("type", tag) else { break }
                if Self.attribute("direction", tag) == "out" { current.output += type } else { current.input += type }
                method = current
            case "property":
                if let interface, let name { properties[interface, default: []].append(name) }
            case "node":
                if interface == nil, let name, !name.isEmpty { children.append(name) }
            default: break
            }
        }
        (self.interfaces, self.properties, self.children) = (interfaces, properties, children)
    }

    /// The method `name` of `interface`, if the object has it.
    public func method(_ interface: String, _ name: String) -> Method? {
        interfaces[interface]?.first { $0.name == name }
    }

    /// The contents of each `<…>` tag, in order.
    private static func tags(_ xml: String) -> [String] {
        var out: [String] = []
        var rest = xml[...]
        while let open = rest.firstIndex(of: "<"), let close = rest[open...].firstIndex(of: ">") {
            let inner = rest[rest.index(after: open)..<close].trimmingCharacters(in: .whitespacesAndNewlines)
            if !inner.hasPrefix("!"), !inner.hasPrefix("?") { out.append(inner) }
            rest = rest[rest.index(after: close)...]
        }
        return out
    }

    /// An attribute's value in a tag (double or single quoted).
    private static func attribute(_ name: String, _ tag: String) -> String? {
        for quote in ["\"", "'"] {
            guard let start = tag.range(of: " \(name)=\(quote)") else { continue }
            let rest = tag[start.upperBound...]
            guard let end = rest.firstIndex(of: Character(quote)) else { return nil }
            return String(rest[..<end])
        }
        return nil
    }
}
