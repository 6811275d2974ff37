import Foundation
import XclawBase
import XclawMessages

/// One address book opened through evolution-data-server's address-book factory, served while the connection that
/// opened it stays connected (so every call goes through that connection).
public final class EDSAddressBook: Sendable {
    /// The source's uid.
    public let source: String
    private let connection: BusConnection
    private let path: String
    /// Who serves the opened object: the factory's reply names it (the factory itself, or the backend's own
    /// subprocess where EDS runs a process per backend, as Arch and NixOS build it).
    private let backend: BusService
    private static let interface = "org.gnome.evolution.dataserver.AddressBook"

    /// Opens the address book `source` on `connection`.
    public init(connection: BusConnection, source: String) throws {
        (self.connection, self.source) = (connection, source)
        (path, backend) = try EDS.classified("opening \(source)", missing: nil) {
            let reply = try connection.call(
                EDS.addressBooks, path: "/org/gnome/evolution/dataserver/AddressBookFactory",
                interface: "org.gnome.evolution.dataserver.AddressBookFactory", method: "OpenAddressBook",
                [.string(source)], timeout: EDS.startTimeout)
            guard let path = reply.first?.string else {
                throw EDSError.failed(call: "OpenAddressBook", message: "no object path in the reply")
            }
            var backend = EDS.addressBooks
            if let name = reply.dropFirst().first?.string, !name.isEmpty { backend.name = name }
            _ = try connection.call(
                backend, path: path, interface: Self.interface, method: "Open", timeout: EDS.startTimeout)
            return (path, backend)
        }
    }

    /// The vCards `query` selects (an EDS s-expression: `(contains "email" "bob")`; "" for all).
    public func contacts(matching query: String) throws -> [ContentComponent] {
        let reply = try EDS.classified("searching \(source)", missing: nil) {
            try call("GetContactList", [.string(query)])
        }
        return try (reply.first?.array ?? []).compactMap(\.string).flatMap { try cards(in: $0) }
    }

    /// The contact `uid`, or nil when there is none.
    public func contact(uid: String) throws -> ContentComponent? {
        do {
            let reply = try EDS.classified("reading \(uid)", missing: uid, kind: "contact") {
                try call("GetContact", [.string(uid)])
            }
            return try cards(in: reply.first?.string ?? "").first
        } catch EDSError.notFound {
            return nil
        }
    }

    /// Adds `card`; false when a contact with its uid exists already (nothing is changed then).
    public func create(_ card: ContentComponent) throws -> Bool {
        do {
            _ = try EDS.classified("adding \(card.text("UID") ?? "")", missing: nil, existing: true) {
                try call("CreateContacts", [.strings([card.serialized]), .uint32(0)])
            }
            return true
        } catch is EDS.Existing {
            return false
        }
    }

    /// Removes the contact `uid`; throws `notFound` when there is none.
    public func remove(uid: String) throws {
        _ = try EDS.classified("removing \(uid)", missing: uid, kind: "contact") {
            try call("RemoveContacts", [.strings([uid]), .uint32(0)])
        }
    }

    private func call(_ method: String, _ arguments: [BusValue]) throws -> [JSONValue] {
        try connection.call(backend, path: path, interface: Self.interface, method: method, arguments)
    }

    private func cards(in text: String) throws -> [ContentComponent] {
        do {
            return try ContentComponent.parse(text).filter { $0.name == "VCARD" }
        } catch let error as ContentError {
            throw EDSError.failed(call: "reading \(source)", message: "unreadable vCard from EDS: \(error)")
        }
    }

    /// `text` as a string of EDS's s-expressions: in double quotes, with `\` and `"` escaped.
    public static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
