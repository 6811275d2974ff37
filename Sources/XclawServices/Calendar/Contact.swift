import Foundation

/// A contact as xclaw shows it, read from the vCard EDS holds.
public struct Contact: Sendable, Hashable, Encodable {
    /// An email address or phone number with its vCard types (`work`, `cell`).
    public struct Entry: Sendable, Hashable, Encodable {
        /// The address or number.
        public var value: String
        /// Its types, lower-case (`work`, `home`, `cell`, `voice`).
        public var types: [String]
    }

    /// The uid.
    public var uid: String
    /// The address book it is in.
    public var book: String
    /// The full name (FN; else N's parts, else the organisation).
    public var name: String
    /// Email addresses.
    public var emails: [Entry]
    /// Phone numbers.
    public var phones: [Entry]
    /// The organisation (ORG's parts, joined by ", ").
    public var organization: String?
    /// The job title.
    public var title: String?
    /// The note.
    public var note: String?
    /// The client-side key it was created with (`X-XCLAW-KEY`), for one made by xclaw.
    public var key: String?
    /// Set on a create's answer: false when the contact existed already.
    public var created: Bool?

    enum CodingKeys: String, CodingKey {
        case uid, book, name, emails, phones, organization, title, note, key, created
    }

    /// Reads a VCARD of `book`; nil without a UID.
    public init?(_ card: ContentComponent, book: String) {
        guard let uid = card.text("UID"), !uid.isEmpty else { return nil }
        self.uid = uid
        self.book = book
        let org = card.first("ORG")?.parts.filter { !$0.isEmpty }.joined(separator: ", ")
        organization = org.flatMap { $0.isEmpty ? nil : $0 }
        let structured = card.first("N").map { n -> String in
            // Family;Given;Additional;Prefix;Suffix, shown as Prefix Given Additional Family Suffix.
            let p = n.parts + Array(repeating: "", count: max(0, 5 - n.parts.count))
            return [p[3], p[1], p[2], p[0], p[4]].filter { !$0.isEmpty }.joined(separator: " ")
        }
        name = [card.text("FN"), structured, organization].compactMap { $0 }.first { !$0.isEmpty } ?? ""
        func entries(_ property: String) -> [Entry] {
            card.all(property).map { line in
                Entry(
                    value: line.text,
                    types: line.parameterValues("TYPE").flatMap { $0.split(separator: ",") }.map { $0.lowercased() })
            }.filter { !$0.value.isEmpty }
        }
        emails = entries("EMAIL")
        phones = entries("TEL")
        title = card.text("TITLE").flatMap { $0.isEmpty ? nil : $0 }
        note = card.text("NOTE").flatMap { $0.isEmpty ? nil : $0 }
        key = card.text(CalendarItem.keyProperty)
    }
}

/// What a new contact says.
public struct ContactDraft: Sendable, Hashable {
    /// The full name.
    public var name: String
    /// Email addresses.
    public var emails: [String]
    /// Phone numbers.
    public var phones: [String]
    /// The organisation.
    public var organization: String?

    /// A draft.
    public init(name: String, emails: [String] = [], phones: [String] = [], organization: String? = nil) {
        (self.name, self.emails, self.phones, self.organization) = (name, emails, phones, organization)
    }
}

extension ContentComponent {
    /// A new vCard 3.0 (the version EDS stores): FN and N from the name (its last word the family name), the
    /// addresses and numbers, the organisation and the idempotency key.
    public static func card(uid: String, draft: ContactDraft, key: String) -> ContentComponent {
        var card = ContentComponent(name: "VCARD")
        let words = draft.name.split(separator: " ").map(String.init)
        let family = words.count > 1 ? words.last ?? "" : draft.name
        let given = words.count > 1 ? words.dropLast().joined(separator: " ") : ""
        card.properties = [
            ContentLine(name: "VERSION", value: "3.0"), ContentLine(name: "UID", text: uid),
            ContentLine(name: "FN", text: draft.name),
            ContentLine(name: "N", value: [family, given, "", "", ""].map(ContentLines.escape).joined(separator: ";")),
        ]
        card.properties += draft.emails.map { ContentLine(name: "EMAIL", text: $0) }
        card.properties += draft.phones.map { ContentLine(name: "TEL", text: $0) }
        if let organization = draft.organization, !organization.isEmpty {
            card.properties.append(ContentLine(name: "ORG", text: organization))
        }
        card.properties.append(ContentLine(name: CalendarItem.keyProperty, text: key))
        return card
    }
}
