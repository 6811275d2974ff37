import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawServices

/// `xclaw contacts`: the address books of evolution-data-server.
struct ContactsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "contacts",
        abstract: "Search, show, add and delete contacts through evolution-data-server, without the GUI.",
        discussion: """
            Reads and changes the address books of evolution-data-server (EDS) on the caller's session bus: what \
            GNOME Contacts and Evolution show. An add is idempotent: its uid comes from --key (or, without one, \
            from the name, addresses, numbers and book), so running it again returns the existing contact \
            ("already exists: UID", exit 0). Exit 1 when a contact or address book is not found, 5 when \
            evolution-data-server is not on the session bus.
            Examples:
              xclaw contacts search zoe
              xclaw contacts add "Zoë Müller" --email zoe@example.org --phone "+49 30 1234"
            """,
        subcommands: [ContactsSearch.self, ContactsShow.self, ContactsAdd.self, ContactsDelete.self])

    /// One contact a line: name, emails, phones (comma-separated), uid.
    static func line(_ contact: Contact) -> String {
        [
            UntrustedText.escaped(contact.name),
            contact.emails.isEmpty
                ? "-" : contact.emails.map { UntrustedText.escaped($0.value) }.joined(separator: ","),
            contact.phones.isEmpty
                ? "-" : contact.phones.map { UntrustedText.escaped($0.value) }.joined(separator: ","),
            UntrustedText.escaped(contact.uid),
        ].joined(separator: "\t")
    }
}

/// `xclaw contacts search`.
struct ContactsSearch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Find contacts whose name, email, phone or any field contains TEXT.",
        discussion: """
            One contact a line: name, emails, phones and uid, tab-separated, by name. Case and accents are \
            ignored ("zoe" finds Zoë). An empty TEXT lists every contact; no match prints nothing (and says so on \
            stderr), exit 0.
            Examples:
              xclaw contacts search zoe
              xclaw contacts search example.org --in email --json
            """)
    @Argument(help: "The text to look for (\"\" for every contact).") var text: String
    @Option(name: .customLong("in"), help: "The field: name, email, phone or any (default: any).") var field = "any"
    @Option(help: ArgumentHelp("Only this address book (a uid from `calendar sources`).", valueName: "UID")) var book:
        String?
    @Flag var json = false

    func validate() throws {
        guard ContactStore.Field(rawValue: field) != nil else {
            throw ValidationError("--in takes name, email, phone or any")
        }
    }

    func run() throws {
        let store = try ContactStore(environment: Invocation.current.environment)
        let (found, warnings) = try store.search(text, in: ContactStore.Field(rawValue: field) ?? .any, book: book)
        CalendarCaller.warn(warnings)
        try emit(found, json: json) { found.map(ContactsCommand.line).joined(separator: "\n") }
        if found.isEmpty { printError("xclaw: no contact matches \(UntrustedText.quoted(text, limit: 100))") }
    }
}

/// `xclaw contacts show`.
struct ContactsShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show a contact: name, emails, phones, organisation, title, note.",
        discussion: """
            One field a line ("email: zoe@example.org (work)"). Exit 1 when no address book has the uid.
            Examples:
              xclaw contacts show xclaw-1a2b3c
              xclaw contacts show xclaw-1a2b3c --json
            """)
    @Argument(help: "The uid (from `contacts search`).") var uid: String
    @Option(help: ArgumentHelp("The address book that holds it (default: every one is looked in).", valueName: "UID"))
    var book: String?
    @Flag var json = false

    func run() throws {
        let contact = try ContactStore(environment: Invocation.current.environment).contact(uid, book: book)
        try emit(contact, json: json) {
            func entry(_ e: Contact.Entry) -> String {
                UntrustedText.escaped(e.value) + (e.types.isEmpty ? "" : " (\(e.types.joined(separator: ", ")))")
            }
            var lines = ["name: " + UntrustedText.escaped(contact.name)]
            lines += contact.emails.map { "email: " + entry($0) }
            lines += contact.phones.map { "phone: " + entry($0) }
            if let o = contact.organization { lines.append("organization: " + UntrustedText.escaped(o)) }
            if let t = contact.title { lines.append("title: " + UntrustedText.escaped(t)) }
            if let n = contact.note { lines.append("note: " + UntrustedText.escaped(n)) }
            lines += ["uid: " + UntrustedText.escaped(contact.uid), "book: " + UntrustedText.escaped(contact.book)]
            return lines.joined(separator: "\n")
        }
    }
}

/// `xclaw contacts add`.
struct ContactsAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a contact; run again with the same key (or the same content), it adds nothing.",
        discussion: """
            Prints "created UID", or "already exists: UID" (exit 0) when it was added before.
            Examples:
              xclaw contacts add "Zoë Müller" --email zoe@example.org --phone "+49 30 1234"
              xclaw contacts add "Bob Stone" --email bob@stone.test --key crm-4711 --json
            """)
    @Argument(help: "The full name.") var name: String
    @Option(help: ArgumentHelp("An email address (repeatable).", valueName: "ADDRESS")) var email: [String] = []
    @Option(help: ArgumentHelp("A phone number (repeatable).", valueName: "NUMBER")) var phone: [String] = []
    @Option(help: ArgumentHelp("The organisation.", valueName: "NAME")) var organization: String?
    @Option(help: ArgumentHelp("The client's idempotency key (default: derived from the content).", valueName: "KEY"))
    var key: String?
    @Option(
        help: ArgumentHelp(
            "The address book (a uid from `calendar sources`; default: system-address-book).", valueName: "UID"))
    var book: String?
    @Flag var json = false

    func validate() throws {
        if key?.isEmpty == true { throw ValidationError("--key must not be empty") }
    }

    func run() throws {
        let draft = ContactDraft(name: name, emails: email, phones: phone, organization: organization)
        let contact = try ContactStore(environment: Invocation.current.environment).create(
            draft, key: key, book: book)
        try emit(contact, json: json) { CalendarCaller.created(contact.uid, contact.created) }
    }
}

/// `xclaw contacts delete`.
struct ContactsDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a contact by uid.",
        discussion: """
            Prints "deleted UID NAME". Exit 1 when no address book has the uid.
            Examples:
              xclaw contacts delete xclaw-1a2b3c
            """)
    @Argument(help: "The uid (from `contacts search`).") var uid: String
    @Option(help: ArgumentHelp("The address book that holds it (default: every one is looked in).", valueName: "UID"))
    var book: String?

    func run() throws {
        let contact = try ContactStore(environment: Invocation.current.environment).delete(uid, book: book)
        CalendarCaller.said("deleted", contact.uid, contact.name)
    }
}
