import Foundation
import XclawBase

/// Why a calendar or contacts operation failed, with what to do: evolution-data-server absent or failing is the
/// machine's (exit 5), a missing item or source is a miss (exit 1), a date or value that cannot be read is bad input
/// (exit 2).
public enum EDSError: ClassifiedError, Equatable {
    /// Nothing owns evolution-data-server's names and the bus cannot start them.
    case notRunning
    /// No item with this uid (`what`: "event", "task", "event or task", "contact").
    case notFound(what: String, uid: String)
    /// No source (calendar, task list, address book) with this uid; `known` are the uids there are.
    case noSource(kind: String, uid: String, known: [String])
    /// A date that is none of the accepted forms.
    case badDate(String)
    /// A duration that is none of the accepted forms.
    case badDuration(String)
    /// A value that cannot be used (an end before the start, an empty summary).
    case invalid(String)
    /// evolution-data-server answered with an error xclaw has no better word for.
    case failed(call: String, message: String)

    /// 1 for a miss, 2 for input, 5 for the service.
    public var exitStatus: ExitStatus {
        switch self {
        case .notFound, .noSource: return .notFound
        case .badDate, .badDuration, .invalid: return .usage
        case .notRunning, .failed: return .internal
        }
    }

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .notRunning:
            return "evolution-data-server is not running on this session bus: install and start it "
                + "(Debian: evolution-data-server) or use the screen"
        case .notFound(let what, let uid):
            return "no \(what) with uid \(UntrustedText.quoted(uid, limit: 200)); listing the events, tasks or "
                + "contacts shows the uids there are"
        case .noSource(let kind, let uid, let known):
            return "no \(kind) with uid \(UntrustedText.quoted(uid, limit: 200)) (there are: "
                + (known.isEmpty ? "none" : known.map { UntrustedText.quoted($0, limit: 100) }.joined(separator: ", "))
                + "); listing the sources shows their names"
        case .badDate(let text):
            return "cannot read \(UntrustedText.quoted(text, limit: 100)) as a date; accepted: \(DateInput.forms)"
        case .badDuration(let text):
            return "cannot read \(UntrustedText.quoted(text, limit: 100)) as a duration; accepted: 90m, 1h30m, "
                + "2h, 1d, 45s or a number of minutes"
        case .invalid(let message):
            return message
        case .failed(let call, let message):
            return "evolution-data-server failed \(call): \(UntrustedText.escaped(message, limit: 500))"
        }
    }
}
