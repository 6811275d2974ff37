import Foundation
import XclawBase
import XclawMessages

/// evolution-data-server's bus names and how its failures read: the registry of sources, the calendar factory
/// (calendars and task lists) and the address-book factory, each started by the bus on first call.
public enum EDS {
    /// The source registry (`evolution-source-registry`).
    public static let sources = service("org.gnome.evolution.dataserver.Sources5")
    /// The calendar factory (`evolution-calendar-factory`): calendars, task lists, memo lists.
    public static let calendars = service("org.gnome.evolution.dataserver.Calendar8")
    /// The address-book factory (`evolution-addressbook-factory`).
    public static let addressBooks = service("org.gnome.evolution.dataserver.AddressBook10")
    /// How long a call that may start a factory waits: a cold start is ~1 s here, more on a loaded machine.
    public static let startTimeout: Duration = .seconds(20)

    private static func service(_ name: String) -> BusService {
        BusService(
            name: name, what: "evolution-data-server",
            hint: "install and start it (Debian: evolution-data-server) or use the screen")
    }

    /// Marks a create whose uid exists already, inside `classified`.
    struct Existing: Error {}

    /// `body`, with the bus's and EDS's failures in EDS's words: an absent factory is `notRunning`; a missing item
    /// (when `missing` names its uid) `notFound` of `kind`; an existing uid (when `existing`) `Existing`; any other
    /// EDS error `failed` with EDS's message.
    static func classified<T>(
        _ what: String, missing: String?, kind: String = "item", existing: Bool = false, _ body: () throws -> T
    ) throws -> T {
        do {
            return try body()
        } catch BusError.absent(let service) where service.name.hasPrefix("org.gnome.evolution.dataserver.") {
            throw EDSError.notRunning
        } catch BusError.failed(_, let name, let message) {
            let failure = EDSFailure(errorName: name, message: message)
            if let missing, failure.isNotFound { throw EDSError.notFound(what: kind, uid: missing) }
            if existing && failure.isExisting { throw Existing() }
            throw failure.classified(what)
        }
    }
}

/// An error evolution-data-server returned, with its code read from the error's name (GDBus encodes an unmapped
/// GError as `…Quark._e_2dcal_2dclient_2derror_2dquark.Code4`).
struct EDSFailure {
    var errorName: String
    var message: String

    /// The code, when the name carries one of the client error domains.
    func code(_ domain: String) -> Int? {
        let marker = "Quark._" + domain.replacingOccurrences(of: "-", with: "_2d") + ".Code"
        guard let range = errorName.range(of: marker) else { return nil }
        return Int(errorName[range.upperBound...])
    }

    /// ECalClientError 1 (object not found) or EBookClientError 1 (contact not found).
    var isNotFound: Bool { code("e-cal-client-error-quark") == 1 || code("e-book-client-error-quark") == 1 }

    /// ECalClientError 4 (object id already exists) or EBookClientError 2 (contact id already exists).
    var isExisting: Bool { code("e-cal-client-error-quark") == 4 || code("e-book-client-error-quark") == 2 }

    /// The user-facing error, naming `what` was being done: EDS's message without GDBus's prefix.
    func classified(_ what: String) -> EDSError {
        var text = message
        if let colon = text.range(of: "GDBus.Error:"), let space = text[colon.upperBound...].firstIndex(of: " ") {
            text = String(text[text.index(after: space)...])
        }
        return .failed(call: what, message: text)
    }
}

/// One source of evolution-data-server's registry: a calendar, task list or address book, or something else.
public struct EDSSource: Sendable, Hashable, Encodable {
    /// What a source holds, from its key file's groups.
    public enum Kind: String, Sendable, Hashable, Encodable, CaseIterable {
        /// `[Calendar]`.
        case calendar
        /// `[Task List]`.
        case taskList = "task_list"
        /// `[Address Book]`.
        case addressBook = "address_book"

        /// The key file group that says it.
        var group: String {
            switch self {
            case .calendar: return "Calendar"
            case .taskList: return "Task List"
            case .addressBook: return "Address Book"
            }
        }
    }

    /// The uid (`system-calendar`).
    public var uid: String
    /// The display name ("Personal").
    public var name: String
    /// What it holds.
    public var kind: Kind
    /// Whether it is enabled.
    public var enabled: Bool
    /// The backend (`local`, `caldav`, `contacts`).
    public var backend: String?

    enum CodingKeys: String, CodingKey { case uid, name, kind, enabled, backend }

    /// The default calendar, task list and address book every EDS has.
    public static func defaultUID(_ kind: Kind) -> String {
        switch kind {
        case .calendar: return "system-calendar"
        case .taskList: return "system-task-list"
        case .addressBook: return "system-address-book"
        }
    }

    /// The calendars, task lists and address books the registry knows (other sources, such as mail accounts, are
    /// left out), in registry order; `kind` limits the kind.
    public static func all(_ connection: BusConnection, kind: Kind? = nil) throws -> [EDSSource] {
        let reply = try EDS.classified("listing sources", missing: nil) {
            try connection.call(
                EDS.sources, path: "/org/gnome/evolution/dataserver/SourceManager",
                interface: "org.freedesktop.DBus.ObjectManager", method: "GetManagedObjects",
                timeout: EDS.startTimeout)
        }
        var found: [(path: String, source: EDSSource)] = []
        for (path, interfaces) in reply.first?.object ?? [:] {
            guard let properties = interfaces["org.gnome.evolution.dataserver.Source"]?.object,
                let uid = properties["UID"]?.string, let data = properties["Data"]?.string
            else { continue }
            for source in parse(uid: uid, keyFile: data) where kind == nil || source.kind == kind {
                found.append((path, source))
            }
        }
        // The registry's object paths end in a number that grows as sources are added.
        func number(_ path: String) -> Int { Int(path.split(separator: "_").last ?? "") ?? 0 }
        return found.sorted { (number($0.path), $0.source.uid) < (number($1.path), $1.source.uid) }.map(\.source)
    }

    /// The sources one key file describes (one per kind group it has: none for a mail account).
    static func parse(uid: String, keyFile: String) -> [EDSSource] {
        var groups: [String: [String: String]] = [:]
        var group = ""
        // On UTF-8 bytes, skipping the translations (`DisplayName[de]=…`, most of every source's file, never read):
        // the registry sends a dozen such files for every listing.
        func trimmed(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
            var out = bytes
            while let b = out.first, b == 0x20 || b == 0x09 || b == 0x0D { out = out.dropFirst() }
            while let b = out.last, b == 0x20 || b == 0x09 || b == 0x0D { out = out.dropLast() }
            return out
        }
        for raw in keyFile[...].utf8.split(separator: 0x0A) {
            let line = trimmed(raw)
            guard let first = line.first, first != UInt8(ascii: "#") else { continue }
            if first == UInt8(ascii: "["), line.last == UInt8(ascii: "]") {
                group = String(decoding: line.dropFirst().dropLast(), as: UTF8.self)
                continue
            }
            guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = trimmed(line[..<equals])
            if key.contains(UInt8(ascii: "[")) { continue }
            groups[group, default: [:]][String(decoding: key, as: UTF8.self)] = String(
                decoding: trimmed(line[line.index(after: equals)...]), as: UTF8.self)
        }
        let base = groups["Data Source"] ?? [:]
        return Kind.allCases.compactMap { kind in
            guard let own = groups[kind.group] else { return nil }
            return EDSSource(
                uid: uid, name: base["DisplayName"] ?? uid, kind: kind,
                enabled: base["Enabled"] != "false" && own["Enabled"] != "false", backend: own["BackendName"])
        }
    }
}
