import Foundation
import XclawBase
import XclawMessages

/// One calendar or task list opened through evolution-data-server's calendar factory. The factory serves the opened
/// object only while the connection that opened it stays connected, so every call goes through that connection.
public final class EDSCalendar: Sendable {
    /// The source's uid.
    public let source: String
    /// Events (a calendar) or tasks (a task list).
    public let kind: CalendarItem.Kind
    private let connection: BusConnection
    private let path: String
    /// Who serves the opened object: the factory's reply names it (the factory itself, or the backend's own
    /// subprocess where EDS runs a process per backend, as Arch and NixOS build it).
    private let backend: BusService
    private static let interface = "org.gnome.evolution.dataserver.Calendar"

    /// Opens the calendar (`kind` .event) or task list (.task) `source` on `connection`.
    public init(connection: BusConnection, source: String, kind: CalendarItem.Kind) throws {
        (self.connection, self.source, self.kind) = (connection, source, kind)
        let method = kind == .event ? "OpenCalendar" : "OpenTaskList"
        (path, backend) = try EDS.classified("opening \(source)", missing: nil) {
            let reply = try connection.call(
                EDS.calendars, path: "/org/gnome/evolution/dataserver/CalendarFactory",
                interface: "org.gnome.evolution.dataserver.CalendarFactory", method: method, [.string(source)],
                timeout: EDS.startTimeout)
            guard let path = reply.first?.string else {
                throw EDSError.failed(call: method, message: "no object path in the reply")
            }
            // The backend may start on Open (a subprocess of the factory): the same long wait.
            var backend = EDS.calendars
            if let name = reply.dropFirst().first?.string, !name.isEmpty { backend.name = name }
            _ = try connection.call(
                backend, path: path, interface: Self.interface, method: "Open", timeout: EDS.startTimeout)
            return (path, backend)
        }
    }

    /// The components `query` selects (an EDS s-expression: `#t` for all, `(occur-in-time-range? …)`,
    /// `(not (is-completed?))`), each read from the iCalendar text EDS returns.
    public func objects(matching query: String) throws -> [ContentComponent] {
        let reply = try run("listing \(source)") {
            try call("GetObjectList", [.string(query)])
        }
        return try (reply.first?.array ?? []).compactMap(\.string).flatMap { try items(in: $0) }
    }

    /// The item `uid` (its master, for a recurring one), or nil when there is none.
    public func object(uid: String) throws -> ContentComponent? {
        do {
            let reply = try run("reading \(uid)", missing: uid) {
                try call("GetObject", [.string(uid), .string("")])
            }
            let found = try items(in: reply.first?.string ?? "")
            return found.first { $0.first("RECURRENCE-ID") == nil } ?? found.first
        } catch EDSError.notFound {
            return nil
        }
    }

    /// Creates `item`; false when an item with its uid exists already (nothing is changed then).
    public func create(_ item: ContentComponent) throws -> Bool {
        do {
            _ = try run("creating \(item.text("UID") ?? "")", existing: true) {
                try call("CreateObjects", [.strings([item.serialized]), .uint32(0)])
            }
            return true
        } catch is EDS.Existing {
            return false
        }
    }

    /// Replaces the item with `item`'s uid (all its occurrences, for a recurring one).
    public func modify(_ item: ContentComponent) throws {
        _ = try run("changing \(item.text("UID") ?? "")", missing: item.text("UID") ?? "") {
            try call("ModifyObjects", [.strings([item.serialized]), .string("all"), .uint32(0)])
        }
    }

    /// Removes the item `uid` (every occurrence); throws `notFound` when there is none.
    public func remove(uid: String) throws {
        _ = try run("removing \(uid)", missing: uid) {
            try call(
                "RemoveObjects",
                [
                    .array(element: "(ss)", [.tuple([.string(uid), .string("")])]), .string("all"),
                    .uint32(0),
                ])
        }
    }

    private func call(_ method: String, _ arguments: [BusValue]) throws -> [JSONValue] {
        try connection.call(backend, path: path, interface: Self.interface, method: method, arguments)
    }

    /// The VEVENTs or VTODOs in one text EDS returned (a bare component, or a VCALENDAR around several).
    private func items(in text: String) throws -> [ContentComponent] {
        let wanted = kind == .event ? "VEVENT" : "VTODO"
        do {
            return try ContentComponent.parse(text).flatMap { $0.name == "VCALENDAR" ? $0.components : [$0] }
                .filter { $0.name == wanted }
        } catch let error as ContentError {
            throw EDSError.failed(call: "reading \(source)", message: "unreadable iCalendar from EDS: \(error)")
        }
    }

    /// `body` with EDS's failures classified (see `classified`), a missing item named as this calendar's kind.
    private func run<T>(_ what: String, missing: String? = nil, existing: Bool = false, _ body: () throws -> T)
        throws -> T
    {
        try EDS.classified(what, missing: missing, kind: kind == .event ? "event" : "task", existing: existing, body)
    }
}
