import XCTest
import XclawAgent

/// The approval policy's classification: whole words and phrases of a pressed control's label, typing into password
/// fields and terminals, and the policy's text form.
final class ApprovalPolicyTests: XCTestCase {
    private func kinds(_ label: String, role: String = "button") -> [ApprovalKind] {
        ApprovalPolicy.kinds(of: ActionSubject(label: label, role: role))
    }

    func testPressedLabelsAreClassifiedByWholeWords() {
        XCTAssertEqual(kinds("Delete"), [.delete])
        XCTAssertEqual(kinds("Delete file…"), [.delete])
        XCTAssertEqual(kinds("Move to Trash"), [.delete])
        XCTAssertEqual(kinds("Send now"), [.send])
        XCTAssertEqual(kinds("Submit"), [.send])
        XCTAssertEqual(kinds("Place order"), [.pay])
        XCTAssertEqual(kinds("Buy"), [.pay])
        XCTAssertEqual(kinds("I Agree"), [.acceptTerms])
        XCTAssertEqual(kinds("Don’t Save"), [.discard])
        XCTAssertEqual(kinds("Close without saving"), [.discard])
        XCTAssertEqual(kinds("Discard changes"), [.discard])
        XCTAssertEqual(kinds("Delete and send"), [.delete, .send])
        // Not the word itself: not gated.
        XCTAssertEqual(kinds("Deleted items"), [])
        XCTAssertEqual(kinds("Sender"), [])
        XCTAssertEqual(kinds("Payment history"), [])
        XCTAssertEqual(kinds("Format"), [])
        XCTAssertEqual(kinds("Save"), [])
        XCTAssertEqual(kinds("OK"), [])
        // A field's or a text's label says nothing about what a press does.
        XCTAssertEqual(kinds("Delete", role: "field"), [])
        XCTAssertEqual(kinds("Please delete the old files before Friday", role: "text"), [], "a sentence")
        XCTAssertEqual(kinds("Delete account", role: "text"), [.delete], "a borderless button read by OCR")
        // What is typed is classified by where it goes, never by its words.
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(label: "Note", role: "field", typed: "delete it")), [])
        XCTAssertEqual(kinds("Delete", role: "menuitem"), [.delete])
    }

    func testTypingIntoPasswordFieldsAndTerminalLinesAreGated() {
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(typed: "hunter2", intoPassword: true)), [.password])
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(toolkitRole: "password text", typed: "x")), [.password])
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(typed: "ls -l\n", intoTerminal: true)), [.command])
        XCTAssertEqual(
            ApprovalPolicy.kinds(of: ActionSubject(typed: "Return", intoTerminal: true, keys: true)), [.command])
        XCTAssertEqual(
            ApprovalPolicy.kinds(of: ActionSubject(typed: "KP_Enter", intoTerminal: true, keys: true)), [.command])
        XCTAssertEqual(
            ApprovalPolicy.kinds(of: ActionSubject(typed: "ctrl+m", intoTerminal: true, keys: true)), [.command])
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(typed: "make\r", intoTerminal: true)), [.command])
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(typed: "Return", intoTerminal: true)), [], "the word")
        // Keys acting on a selection; in a text field they only edit.
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(typed: "Delete", keys: true)), [.delete])
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(typed: "shift+Delete", keys: true)), [.delete])
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(typed: "ctrl+Return", keys: true)), [.send])
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(role: "field", typed: "Delete", keys: true)), [])
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(typed: "Tab", keys: true)), [])
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(typed: "ls -l", intoTerminal: true)), [], "no Enter yet")
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(typed: "hello\n")), [], "a text field is not a shell")
        XCTAssertEqual(ApprovalPolicy.kinds(of: ActionSubject(command: "rm -rf /tmp/x")), [.command])
    }

    func testThePolicyGatesOnlyItsKindsAndParsesBack() throws {
        let policy = try ApprovalPolicy.parse("delete, send")
        XCTAssertEqual(policy.classify(ActionSubject(label: "Delete", role: "button")), .delete)
        XCTAssertNil(policy.classify(ActionSubject(label: "Buy", role: "button")))
        XCTAssertEqual(policy.text, "delete,send")
        XCTAssertEqual(try ApprovalPolicy.parse("all"), .all)
        XCTAssertEqual(try ApprovalPolicy.parse("none"), .none)
        XCTAssertEqual(try ApprovalPolicy.parse("accept").kinds, [.acceptTerms])
        XCTAssertEqual(ApprovalPolicy.all.text, "all")
        XCTAssertNil(ApprovalPolicy.none.classify(ActionSubject(label: "Delete", role: "button")))
        XCTAssertThrowsError(try ApprovalPolicy.parse("delete,explode")) { error in
            XCTAssertTrue("\(error)".contains("accept-terms"), "\(error)")
        }
    }
}
