import XCTest
import XclawScreen

@testable import XclawPerception

/// The rules that keep `tap` from clicking the wrong control, each on the elements that caused a wrong click before
/// it (the grounding suite checks them end to end on real apps). These are pure functions of a snapshot, so the
/// snapshots are written out here.
final class FinderRulesTests: XCTestCase {
    /// An OCR element in window w1, its words laid out left to right from its box's left edge (7 px a character).
    private func element(
        _ ref: String, _ role: Role, _ label: String, x: Int, y: Int = 10, width: Int? = nil, confidence: Double = 95,
        gap: Int = 5
    ) -> Element {
        var words: [TextWord] = []
        var left = x + 4
        for word in label.split(separator: " ") {
            words.append(
                TextWord(
                    text: String(word), box: Rect(x: left, y: y + 6, width: word.count * 7, height: 12),
                    confidence: confidence))
            left += word.count * 7 + gap
        }
        let box = Rect(x: x, y: y, width: width ?? max(20, left - x + 4), height: 24)
        return Element(
            ref: ref, role: role, label: label, box: box, window: "w1", windowID: 1, changed: false, active: nil,
            className: nil, confidence: confidence, words: words, source: .ocr)
    }

    private func snapshot(_ elements: [Element]) -> Snapshot {
        Snapshot(
            screen: Size(width: 1280, height: 800), monitors: [], activeWindow: nil,
            area: Rect(x: 0, y: 0, width: 1280, height: 800), elements: elements,
            ocr: .init(blocks: 0, recognized: 0, cached: 0, unchanged: false, milliseconds: 0))
    }

    private func refusal(_ label: String, _ s: Snapshot, role: Role? = nil) -> PerceptionError? {
        do {
            _ = try Selection(role: role).resolve(label, in: s)
            return nil
        } catch let error as PerceptionError {
            return error
        } catch {
            XCTFail("unexpected \(error)")
            return nil
        }
    }

    func testAFuzzyMatchNeverClicks() {
        // `tap File` matched "Fill" at 0.68 and pressed "Flood Fill".
        let s = snapshot([element("e1", .button, "Flood Fill", x: 10), element("e2", .button, "Open", x: 120)])
        guard case .uncertain(_, let reason, let candidates)? = refusal("File", s) else {
            return XCTFail("a fuzzy match was clicked")
        }
        XCTAssertTrue(reason.contains("fuzzy"), reason)
        XCTAssertTrue(candidates.first?.hasPrefix("e1 button") == true, "\(candidates)")
        // find still lists it, with its score: it is a candidate, not a click.
        XCTAssertEqual(Finder.find("File", in: s).first?.ref, "e1")
        XCTAssertNoThrow(try Selection().resolve("File", in: s, acting: false))
    }

    func testAWholeLabelWinsOverOneThatContainsIt() {
        // `tap Clear` tied with "Clear Hot Spot".
        let s = snapshot([element("e1", .button, "Clear Hot Spot", x: 10), element("e2", .button, "Clear", x: 200)])
        XCTAssertEqual(try Selection().resolve("Clear", in: s).ref, "e2")
    }

    func testPartOfALabelIsRefusedWhileAControlIsUnread() {
        // `tap Save` pressed "Don't Save" while the real "Save" was unread.
        let unread = element("e2", .button, "", x: 200, width: 60)
        let s = snapshot([element("e1", .button, "Don't Save", x: 10), unread])
        guard case .uncertain(_, let reason, _)? = refusal("Save", s) else {
            return XCTFail("part of a label was clicked")
        }
        // The refusal names the whole label it is part of, never the part as if it were the label.
        XCTAssertTrue(reason.contains("(\"Save\" of \"Don't Save\")"), reason)
        // With every control read, "Save" inside "Don't Save" is the only candidate there is.
        XCTAssertEqual(
            try Selection().resolve("Save", in: snapshot([element("e1", .button, "Don't Save", x: 10)])).ref, "e1")
    }

    func testAGlyphReadBesideALabelLeavesItWhole() throws {
        // Qt's Cancel without a bus: its icon read as "©" beside the word. "Cancel" is the whole label the user can
        // name, so it is not refused as "part of the control's label (Cancel)" beside an unread control.
        let unread = element("e2", .button, "", x: 200, width: 60)
        let cancel = element("e1", .button, "© Cancel", x: 10, width: 90)
        let match = try Selection().resolve("Cancel", in: snapshot([cancel, unread]))
        XCTAssertEqual(match.ref, "e1")
        XCTAssertTrue(cancel.box.contains(match.point), "pressed on its word, inside its button")
    }

    func testAnIconReadAsLettersBesideALabelLeavesItWhole() throws {
        // Qt's Save without a bus: its floppy icon read "ha" (unsure, taller than the text) beside "Save".
        let unread = element("e2", .button, "", x: 200, width: 60)
        var save = element("e1", .button, "ha Save", x: 10, width: 90)
        save.words?[0].box = Rect(x: 14, y: 12, width: 15, height: 19)
        save.words?[0].confidence = 56
        XCTAssertEqual(try Selection().resolve("Save", in: snapshot([save, unread])).ref, "e1")
        // A sure word of the label's own height is a word of the label: "Save" in "Don't Save" is still part.
        let part = element("e1", .button, "Don't Save", x: 10, width: 90)
        guard case .uncertain? = refusal("Save", snapshot([part, unread])) else {
            return XCTFail("part of a label was clicked")
        }
    }

    func testAMenuItemsIconReadAsALetterLeavesItsLabelWhole() throws {
        // FeatherPad's File and Edit menus without a bus: the icons before "Open" and "Delete" read "B" (35 %) and
        // "X" (75 %, 7 px before the word, twice a space), and "Open" was refused as "only part of the control's
        // label" beside the menu's unread icon rows.
        let unread = element("e9", .menuitem, "", x: 10, y: 200, width: 16)
        let open = element("e1", .menuitem, "B Open", x: 10, y: 10, width: 200, confidence: 35, gap: 7)
        var delete = element("e2", .menuitem, "X Delete", x: 10, y: 40, width: 200, gap: 7)
        delete.words?[0].confidence = 75
        var withOpen = open
        withOpen.words?[1].confidence = 95
        let s = snapshot([withOpen, delete, unread])
        XCTAssertEqual(try Selection().resolve("Open", in: s).ref, "e1")
        XCTAssertEqual(try Selection().resolve("Delete", in: s).ref, "e2")
        // A sure short word a space before the next is a word of the label: "Back" in "Go Back" is still part.
        let part = element("e1", .menuitem, "Go Back", x: 10, width: 200, confidence: 80)
        guard case .uncertain? = refusal("Back", snapshot([part, unread])) else {
            return XCTFail("part of a label was clicked")
        }
        // Only a menu item's: on a button, a short word before the rest stays a word of its label, however far.
        var button = element("e1", .button, "Go Back", x: 10, width: 200, gap: 7)
        button.words?[0].confidence = 75
        guard case .uncertain? = refusal("Back", snapshot([button, unread])) else {
            return XCTFail("part of a button's label was clicked")
        }
    }

    func testAMenuRowNamingItsShortcutKeyIsOneItem() throws {
        // GTK's Edit menu by OCR: "Delete" and, in its shortcut column, the key "Delete". One row, one item: the
        // label is the left one. Two rows of the same name are still a tie.
        let label = element("e1", .menuitem, "Delete", x: 40, y: 100)
        let key = element("e2", .menuitem, "Delete", x: 200, y: 100)
        XCTAssertEqual(try Selection().resolve("Delete", in: snapshot([key, label])).ref, "e1")
        let other = element("e3", .menuitem, "Delete", x: 40, y: 140)
        guard case .ambiguous? = refusal("Delete", snapshot([label, key, other])) else {
            return XCTFail("two rows named alike were not refused")
        }
        // A picker's columns that share a label are two choices: the right one does not end its row.
        let third = element("e4", .menuitem, "Blue", x: 360, y: 100)
        guard case .ambiguous? = refusal("Delete", snapshot([label, key, third])) else {
            return XCTFail("two columns named alike were not refused")
        }
    }

    func testALabelReadInPartIsTappedOnlyByItsRef() throws {
        // Qt's "Discard changes" with "Discard" and its icon unread: the snapshot keeps the unread ink's place.
        var discard = element("e2", .button, "\u{FFFD} changes", x: 10, y: 100, width: 130)
        discard.words?[0].confidence = 0
        let s = snapshot([element("e1", .text, "Save changes?", x: 10, y: 10), discard])
        guard case .uncertain(_, let reason, _)? = refusal("changes", s) else {
            return XCTFail("a word of a label read in part was pressed")
        }
        XCTAssertTrue(reason.contains("tap its ref e2"), reason)
        XCTAssertEqual(try Selection().resolve("e2", in: s).ref, "e2")
    }

    func testAControlWinsOverTextThatRepeatsItsLabel() throws {
        // xcalc after `tap 9`: the display shows "9" above the 9 key; text is not pressed, so the key is meant.
        let s = snapshot([
            element("e1", .text, "9", x: 10, y: 10), element("e2", .button, "9", x: 10, y: 60, width: 40),
            element("e3", .button, "8", x: 60, y: 60, width: 40),
        ])
        XCTAssertEqual(try Selection().resolve("9", in: s).ref, "e2")
        // Text in another window may be what is meant (a flat button read as text): a tie there is refused.
        var elsewhere = element("e9", .text, "9", x: 400, y: 10)
        elsewhere.window = "w2"
        elsewhere.windowID = 2
        let split = snapshot([elsewhere, element("e2", .button, "9", x: 10, y: 60, width: 40)])
        guard case .ambiguous? = refusal("9", split) else { return XCTFail("a text in another window lost to a key") }
        // Two keys of one label still tie: which is meant cannot be told.
        let two = snapshot(s.elements + [element("e4", .button, "9", x: 110, y: 60, width: 40)])
        guard case .ambiguous? = refusal("9", two) else { return XCTFail("two keys labelled 9 did not tie") }
    }

    func testAWordInsideAnUnreadControlIsRefused() {
        // "Save changes?": Discard read as button "" with the word "changes" left as text inside it; `tap changes`
        // pressed Discard without a word. The user named a word, not the control: refuse, and name the control.
        var discard = element("e2", .button, "", x: 10, y: 100, width: 120)
        discard.box.height = 30
        let word = element("e3", .text, "changes", x: 60, y: 103)
        let s = snapshot([element("e1", .text, "Save changes?", x: 10, y: 10), discard, word])
        guard case .uncertain(_, let reason, _)? = refusal("changes", s) else {
            return XCTFail("a word inside an unread button was pressed")
        }
        XCTAssertTrue(reason.contains("inside button e2"), reason)
        XCTAssertEqual(try Selection().resolve("e2", in: s).ref, "e2", "the advice works: its ref")
    }

    func testCaseFoldingDoesNotWinWhileAnExactCaseControlCouldExist() {
        // `tap e` clicked "E" while a real "e" key stood unread.
        let keys = [element("e1", .button, "E", x: 10, width: 40), element("e2", .button, "", x: 60, width: 40)]
        guard case .uncertain(_, let reason, _)? = refusal("e", snapshot(keys)) else {
            return XCTFail("a case-insensitive match was clicked beside an unread key")
        }
        XCTAssertTrue(reason.contains("case"), reason)
        // The exact-case key wins outright when it was read.
        let read = [element("e1", .button, "E", x: 10, width: 40), element("e2", .button, "e", x: 60, width: 40)]
        XCTAssertEqual(try Selection().resolve("e", in: snapshot(read)).ref, "e2")
    }

    func testALostSpaceOrAColonIsNoGuess() throws {
        // OCR lost the space of a check box's label, or read a caption with its colon ("Filename:" for "File
        // name"): that is the label, clicked even beside an unread control (issue 33: Qt's Save dialog without a
        // bus), just below the label as typed, so a label read with its space wins.
        XCTAssertEqual(Finder.score("Remember me", "Rememberme"), 0.99)
        XCTAssertEqual(Finder.score("File name", "Filename:"), 0.99)
        XCTAssertEqual(Finder.score("file name", "Filename:"), 0.97)
        let box = element("e1", .checkbox, "Rememberme", x: 10)
        let unread = element("e3", .button, "", x: 300, width: 40)
        XCTAssertEqual(try Selection().resolve("Remember me", in: snapshot([box, unread])).ref, "e1")
        let spaced = element("e4", .checkbox, "Remember me", x: 10, y: 60)
        XCTAssertEqual(try Selection().resolve("Remember me", in: snapshot([box, spaced, unread])).ref, "e4")
        // A look-alike letter is still a guess beside an unread control.
        let lookalike = element("e1", .checkbox, "Rernember me", x: 10)
        guard case .uncertain? = refusal("Remember me", snapshot([lookalike, unread])) else {
            return XCTFail("a look-alike read beside an unread control was clicked")
        }
    }

    func testLookAlikesAndLowConfidenceAreRefusedBesideUnreadControls() {
        let unread = element("e3", .button, "", x: 200, width: 40)
        let lookAlike = snapshot([element("e1", .button, "xl", x: 10, width: 40), unread])
        guard case .uncertain? = refusal("x!", lookAlike) else { return XCTFail("a look-alike read was clicked") }
        let faint = snapshot([element("e1", .button, "ln", x: 10, width: 40, confidence: 30), unread])
        guard case .uncertain? = refusal("ln", faint) else { return XCTFail("a low-confidence read was clicked") }
        // Exact, confident reads click whatever else is unread.
        let sure = snapshot([element("e1", .button, "ln", x: 10, width: 40, confidence: 90), unread])
        XCTAssertEqual(try Selection().resolve("ln", in: sure).ref, "e1")
    }

    func testAWordOfARowIsTappedOnItsOwnBox() {
        // A menu bar read as one line: `tap Edit` clicked the line's centre.
        let bar = element("e1", .text, "File Edit View Help", x: 0, width: 431, gap: 14)
        let button = element("e2", .button, "Help me", x: 500)
        let s = snapshot([bar, button])
        let edit = try? Selection().resolve("Edit", in: s)
        XCTAssertEqual(edit?.ref, "e1")
        XCTAssertEqual(edit?.box, bar.words?[1].box, "the word's own box, not the line's")
        // A word standing apart in a row is a whole label: it wins over "Help" inside "Help me".
        XCTAssertEqual(try Selection().resolve("Help", in: s).ref, "e1")
    }

    func testAFieldIsFoundByTheLabelBesideIt() {
        // `tap Name --role field` failed beside "Name:" (the field held text of its own).
        let label = element("e1", .text, "Name:", x: 10, width: 44)
        var field = element("e2", .field, "draft", x: 60, width: 200)
        field.box.y = label.box.y
        let s = snapshot([label, field])
        XCTAssertEqual(try Selection(role: .field).resolve("Name", in: s).ref, "e2")
    }

    func testAContainerIsPressedOnItsHeaderNotItsCentre() {
        // An expander was clicked at the middle of its 204x290 box, on what it shows.
        var expander = element("e1", .button, "Details", x: 10, y: 100, width: 204)
        expander.box.height = 290
        expander.source = .atspi
        var inside = element("e2", .button, "Reset", x: 30, y: 230, width: 80)
        inside.source = .atspi
        let s = snapshot([expander, inside])
        let match = try? Selection().resolve("Details", in: s)
        XCTAssertEqual(match?.ref, "e1")
        XCTAssertEqual(match?.point.y ?? 0, 100 + 20, accuracy: 20, "on the header strip")
        XCTAssertLessThan(match?.point.y ?? 999, 230, "above the first control inside it")
        // A control holding nothing is pressed at its centre.
        XCTAssertEqual(try Selection().resolve("Reset", in: s).point, inside.box.center)
    }

    func testUnreadControlsAreAddressedByPosition() {
        let s = snapshot([
            element("e1", .button, "", x: 10, width: 40), element("e2", .button, "", x: 60, width: 40),
            element("e3", .button, "7", x: 110, width: 40),
        ])
        XCTAssertEqual(try Selection(nth: 2).resolve("", in: s).ref, "e2")
        XCTAssertEqual(Finder.find("", in: s).map(\.ref), ["e1", "e2"])
    }

    func testPunctuationLabelsMatchAsTyped() {
        let s = snapshot([
            element("e1", .button, "(", x: 10, width: 40), element("e2", .button, ")", x: 60, width: 40),
            element("e3", .button, "+/-", x: 110, width: 40), element("e4", .button, "x!", x: 160, width: 40),
            element("e5", .button, "x", x: 210, width: 40),
        ])
        XCTAssertEqual(try Selection().resolve("(", in: s).ref, "e1")
        XCTAssertEqual(try Selection().resolve(")", in: s).ref, "e2")
        XCTAssertEqual(try Selection().resolve("+/-", in: s).ref, "e3")
        XCTAssertEqual(try Selection().resolve("x!", in: s).ref, "e4")
        XCTAssertEqual(try Selection().resolve("x", in: s).ref, "e5")
    }

    /// `type --into Name` tied the caption "Name:" with the entry it labels (the entry's accessible name is the
    /// caption's text), and the advice it printed named options `type` did not have. Fields are asked first now.
    func testTypingIntoACaptionedFieldTakesTheFieldNotItsCaption() throws {
        let s = snapshot([
            element("e1", .text, "Name:", x: 10), element("e2", .field, "Name:", x: 80, width: 200),
            element("e3", .text, "Age:", x: 10, y: 50), element("e4", .spinbutton, "Age:", x: 80, y: 50, width: 60),
            element("e5", .text, "Notes", x: 10, y: 90),
        ])
        // tap takes the control over its caption too (issue 33 item 6), so neither ties.
        XCTAssertEqual(try Selection().resolve("Name", in: s).ref, "e2")
        XCTAssertEqual(try Selection().resolveField("Name", in: s).ref, "e2")
        XCTAssertEqual(try Selection().resolveField("Age", in: s).ref, "e4", "a spin button is typed into too")
        // No editable element is named: any element, as tap takes it (an entry OCR read as text).
        XCTAssertEqual(try Selection().resolveField("Notes", in: s).ref, "e5")
        // A role given, or a ref, is taken as given.
        XCTAssertEqual(try Selection(role: .text).resolveField("Name", in: s).ref, "e1")
        XCTAssertEqual(try Selection().resolveField("e1", in: s).ref, "e1")
        XCTAssertThrowsError(try Selection().resolveField("Nowhere", in: s)) { error in
            guard case PerceptionError.notFound? = error as? PerceptionError else { return XCTFail("\(error)") }
        }
    }

    /// Two fields named alike still refuse (a wrong field is a wrong click), and --nth / --near pick one, as for tap.
    func testTwoFieldsNamedAlikeRefuseUntilPicked() throws {
        let s = snapshot([
            element("e1", .text, "Email", x: 10), element("e2", .field, "Email", x: 80, width: 200),
            element("e3", .text, "Email", x: 10, y: 60), element("e4", .field, "Email", x: 80, y: 60, width: 200),
        ])
        XCTAssertThrowsError(try Selection().resolveField("Email", in: s)) { error in
            guard case PerceptionError.ambiguous(_, let candidates)? = error as? PerceptionError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(candidates.count, 2, "only the fields are candidates: \(candidates)")
        }
        XCTAssertEqual(try Selection(nth: 2).resolveField("Email", in: s).ref, "e4")
    }
}
