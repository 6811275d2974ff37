import Foundation
import Synchronization
import XclawBase

/// The contact operations xclaw offers, over evolution-data-server's address books on one connection to the
/// caller's session bus: search, show, create (a retry cannot double it), delete.
public final class ContactStore: Sendable {
    /// Which field a search looks in.
    public enum Field: String, Sendable, CaseIterable {
        /// The full name.
        case name
        /// Any email address.
        case email
        /// Any phone number.
        case phone
        /// Any field.
        case any

        /// EDS's name of the field in a `contains` query.
        var edsField: String {
            switch self {
            case .name: return "full_name"
            case .email: return "email"
            case .phone: return "phone"
            case .any: return "x-evolution-any-field"
            }
        }
    }

    /// The connection every address book is opened and used on.
    public let connection: BusConnection
    private let opened = Mutex<[String: EDSAddressBook]>([:])

    /// A store on `connection`.
    public init(connection: BusConnection) { self.connection = connection }

    /// A store on the caller's session bus.
    public convenience init(environment: [String: String], timeout: Duration = Services.callTimeout) throws {
        self.init(connection: try BusConnection.session(environment: environment, timeout: timeout))
    }

    /// The address books, enabled or not.
    public func sources() throws -> [EDSSource] { try EDSSource.all(connection, kind: .addressBook) }

    /// The address book `source`, opened once per store.
    public func book(_ source: String) throws -> EDSAddressBook {
        if let open = opened.withLock({ $0[source] }) { return open }
        let book: EDSAddressBook
        do {
            book = try EDSAddressBook(connection: connection, source: source)
        } catch let error as EDSError {
            let known = try sources().map(\.uid)
            guard known.contains(source) else {
                throw EDSError.noSource(kind: "address book", uid: source, known: known)
            }
            throw error
        }
        opened.withLock { $0[source] = book }
        return book
    }

    /// The contacts whose `field` contains `text` (case and accents ignored, as EDS compares), by name, from `book`
    /// or every enabled address book; "" matches every contact. A search over all of them skips a book that fails to
    /// open (an offline CardDAV account: `warnings` says which).
    public func search(_ text: String, in field: Field = .any, book only: String? = nil) throws -> (
        contacts: [Contact], warnings: [String]
    ) {
        let query = text.isEmpty ? "" : "(contains \"\(field.edsField)\" \(EDSAddressBook.quoted(text)))"
        var found: [Contact] = []
        var warnings: [String] = []
        for uid in try only.map { [$0] } ?? sources().filter(\.enabled).map(\.uid) {
            let book: EDSAddressBook
            do {
                book = try self.book(uid)
            } catch let error as EDSError where only == nil && error != .notRunning {
                warnings.append("\(uid): \(error)")
                continue
            }
            found += try book.contacts(matching: query).compactMap { Contact($0, book: uid) }
        }
        return (found.sorted { ($0.name.lowercased(), $0.uid) < ($1.name.lowercased(), $1.uid) }, warnings)
    }

    /// The contact `uid`, from `book` or the first address book that has it; throws `notFound`.
    public func contact(_ uid: String, book only: String? = nil) throws -> Contact {
        for source in try only.map { [$0] } ?? sources().map(\.uid) {
            if let card = try book(source).contact(uid: uid), let contact = Contact(card, book: source) {
                return contact
            }
        }
        throw EDSError.notFound(what: "contact", uid: uid)
    }

    /// Adds a contact to `book` (default: the personal one). `key` is the client's idempotency key; without one it
    /// is derived from the name, addresses, numbers and book. When a contact with the key's uid exists already (a
    /// retried create) it is returned, `created` false, and nothing is added.
    public func create(_ draft: ContactDraft, key: String?, book: String?) throws -> Contact {
        let source = book ?? EDSSource.defaultUID(.addressBook)
        let name = draft.name.trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { throw EDSError.invalid("the contact needs a name") }
        let key =
            key
            ?? IdempotencyKey.derived(
                ["contact", source, name.lowercased()] + draft.emails.map { $0.lowercased() }.sorted()
                    + ["phones"] + draft.phones.sorted())
        let uid = IdempotencyKey.uid(for: key)
        let target = try self.book(source)
        let made = try target.create(ContentComponent.card(uid: uid, draft: draft, key: key))
        guard let card = try target.contact(uid: uid), var contact = Contact(card, book: source) else {
            throw EDSError.failed(call: "adding \(uid)", message: "the contact is not there after it was added")
        }
        contact.created = made
        return contact
    }

    /// Removes the contact `uid` and returns what it was.
    public func delete(_ uid: String, book: String? = nil) throws -> Contact {
        let contact = try contact(uid, book: book)
        try self.book(contact.book).remove(uid: uid)
        return contact
    }
}
