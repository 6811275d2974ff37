import Foundation
import XclawBase
import XclawScreen

/// A place on screen that matches a label, with how well.
public struct Match: Codable, Sendable, Hashable {
    /// The matched text as read.
    public var text: String
    /// The box of the matched words (or of the control that holds them).
    public var box: Rect
    /// 1 exact, 0.995 equal once end punctuation is trimmed ("(Cancel)"), 0.99 equal but for spaces OCR lost, 0.97
    /// case-insensitive, 0.93 equal once OCR look-alikes are folded, lower for fuzzy matches.
    public var score: Double
    /// The role of the element that holds the words.
    public var role: Role
    /// The element's ref in the snapshot it came from.
    public var ref: String
    /// The window ref, if any.
    public var window: String?
    /// Where the element was seen.
    public var source: ElementSource? = nil
    /// Where it is on the accessibility bus, to press or focus it without the mouse.
    public var node: AccessibleHandle? = nil
    /// Its centre is hidden behind a higher window.
    public var covered: Bool? = nil
    /// The X id of its window.
    public var windowID: UInt? = nil
    /// The lowest OCR confidence (0–100) of the matched words; nil for elements from the accessibility tree.
    public var confidence: Double? = nil
    /// Whether the match spans the element's whole label ("Clear" in "Clear", not in "Clear Hot Spot").
    public var whole: Bool? = nil

    /// snake_case, as every xclaw JSON output; the matched text is `label`, as an element's is in a snapshot.
    enum CodingKeys: String, CodingKey {
        case box, score, role, ref, window, source, node, covered, confidence, whole
        case text = "label"
        case windowID = "window_id"
    }

    /// The point a tap clicks: the centre of the box.
    public var point: Point { box.center }

    /// One line for listings: `e4 button "Save" @x,y score 0.97`.
    public var summary: String {
        let c = point
        return
            "\(ref) \(role.rawValue) \(UntrustedText.quoted(text, limit: 72)) @\(c.x),\(c.y) \(box.width)x\(box.height)"
            + (window.map { " in \($0)" } ?? "") + (source == .atspi ? " [atspi]" : "")
            + (covered == true ? " [covered]" : "") + " score " + String(format: "%.2f", score)
            + (confidence.map { " confidence " + String(format: "%.0f", $0) } ?? "")
    }
}

extension Match {
    /// The match of a whole element (a ref, or an element named outright).
    init(
        element: Element, text: String? = nil, box: Rect? = nil, score: Double = 1, confidence: Double? = nil,
        whole: Bool = true
    ) {
        self.init(
            text: text ?? element.label, box: box ?? element.box, score: score, role: element.role,
            ref: element.ref, window: element.window, source: element.source, node: element.node,
            covered: element.covered, windowID: element.windowID,
            confidence: element.source == .atspi ? nil : (confidence ?? element.confidence), whole: whole)
    }
}

/// Matches labels against a snapshot: exact, case-insensitive and fuzzy (OCR confuses l/1/I, O/0, rn/m), on a word
/// or a phrase of consecutive words of one line, and ranks the candidates.
public enum Finder {
    /// The lowest score accepted as a match: 0.9 x a similarity of 3/4 (one wrong letter in four).
    public static let threshold = 0.67

    /// Every element-word span matching `label`, best first: by score, then whole labels before labels that merely
    /// contain the words ("Clear" before "Clear Hot Spot"), ties in reading order. `role` restricts the element kind;
    /// windows are never matched (use `--window` to scope). A field is also found by the label beside it
    /// ("Name:" then its entry). `""` matches controls whose label could not be read, to pick with --nth or --near.
    public static func find(_ label: String, in snapshot: Snapshot, role: Role? = nil) -> [Match] {
        let wanted = label.split(whereSeparator: \.isWhitespace).map(String.init)
        guard !wanted.isEmpty else {
            return snapshot.elements.filter {
                $0.role.isInteractive && $0.label.isEmpty && (role == nil || $0.role == role)
            }.map { Match(element: $0, text: "", score: 1) }
        }
        let target = Target(wanted.joined(separator: " "))
        var matches: [Match] = []
        for element in snapshot.elements where element.role != .window && (role == nil || element.role == role) {
            if let best = bestSpan(of: element, target: target, count: wanted.count) { matches.append(best) }
        }
        if let role, role != .text {
            matches += labelled(role: role, target: target, count: wanted.count, in: snapshot, except: matches)
        }
        matches = matches.map { header(of: $0, in: snapshot) }
        // Stable sort: reading order is kept among equal ranks.
        return matches.enumerated().sorted { a, b in
            (a.element.score, a.element.whole == true ? 1 : 0, -a.offset)
                > (b.element.score, b.element.whole == true ? 1 : 0, -b.offset)
        }.map(\.element)
    }

    /// The best span of `element`'s words matching the target, if any reaches the threshold.
    private static func bestSpan(of element: Element, target: Target, count: Int) -> Match? {
        // Elements named by other text (an empty field by its label) have no words of their own: match the name.
        let words =
            (element.words?.isEmpty == false ? element.words : nil)
            ?? element.label.split(whereSeparator: \.isWhitespace).map {
                TextWord(text: String($0), box: element.box, confidence: element.confidence ?? 100)
            }
        var best: Match?
        for length in max(1, count - 1)...(count + 1) where length <= words.count {
            for start in 0...(words.count - length) {
                let span = Array(words[start..<start + length])
                let text = span.map(\.text).joined(separator: " ")
                let s = target.score(text)
                // Whole: the element's entire label, or an item of a row whose items stand apart (a menu bar read
                // as one line: "Help" in "File Edit View Help" is a label of its own, unlike "Help" in "Help me").
                let apart = { (a: TextWord, b: TextWord) in ControlBoxes.apart(a, b, in: words) }
                // Words with no letter or digit beside the span (an icon read as "©", a border as "|") are no part
                // of the label the user could have named; nor, before it, a letter or two read from the icon a menu
                // item starts with, unsure or further from the next word than a space ("B" at 35 % for Qt's Open
                // icon in FeatherPad's File menu, "X" at 75 % 7 px before "Delete").
                let tallest = span.map(\.box.height).max() ?? 0
                let beside = { (word: TextWord) in Self.isGlyph(word) || Self.isIcon(word, tallest) }
                let iconBefore = { (index: Int) in
                    let word = words[index], next = words[index + 1]
                    let gap = next.box.x - (word.box.x + word.box.width)
                    return element.role == .menuitem && element.source == .ocr && word.text.count <= 2
                        && word.confidence < 90 && (word.confidence < 70 || gap * 2 >= tallest)
                }
                let onlyGlyphsBeside =
                    !span.allSatisfy(Self.isGlyph)
                    && (0..<start).allSatisfy { beside(words[$0]) || iconBefore($0) }
                    && words[(start + length)...].allSatisfy(beside)
                let whole =
                    length == words.count || onlyGlyphsBeside
                    || (element.source != .atspi && (start == 0 || apart(words[start - 1], words[start]))
                        && (start + length == words.count || apart(words[start + length - 1], words[start + length])))
                // Wholeness ranks and decides doubt; the click stays on the words whenever they are not all of
                // the element's ("Volume − +" read as one box: its centre may be the "−" key).
                let part = length < words.count
                guard s >= threshold,
                    s > (best?.score ?? 0) || (s == best?.score && whole && best?.whole != true)
                else { continue }
                // A control is pressed anywhere in its box, unless the words are only part of its label (a menu
                // bar read as one line: "Edit" is pressed on its own word); text only where the words are.
                let box =
                    element.role == .text || part
                    ? span.dropFirst().reduce(span[0].box) { $0.union($1.box) }.intersection(element.box)
                    : element.box
                best = Match(
                    element: element, text: text, box: box.isEmpty ? element.box : box, score: s,
                    confidence: element.source == .atspi ? nil : span.map(\.confidence).min(), whole: whole)
            }
        }
        return best
    }

    /// A word with no letter or digit in it: a glyph OCR made of an icon, a border or a mnemonic mark; never the
    /// mark of ink left unread (`PixelEvidence.unreadMark`), which may be any word.
    static func isGlyph(_ word: TextWord) -> Bool {
        word.text != PixelEvidence.unreadMark
            && !word.text.unicodeScalars.contains { $0.properties.isAlphabetic || $0.properties.numericType != nil }
    }

    /// A word that is an icon OCR read as letters beside a label ("ha" for Qt's floppy beside "Save"): unsure, short,
    /// and half as tall again as the label's text (a capitalised word beside lower-case ones is a third taller).
    static func isIcon(_ word: TextWord, _ textHeight: Int) -> Bool {
        word.text != PixelEvidence.unreadMark && word.confidence < 70 && word.text.count <= 3
            && word.box.height * 2 >= textHeight * 3
    }

    /// A control whose box holds other controls (an expander, whose box includes what it shows) is pressed on its
    /// header, above the first control inside it: its centre is one of those controls, or nothing.
    static func header(of match: Match, in snapshot: Snapshot) -> Match {
        let box = match.box
        guard match.role.isInteractive, box.height > 60 else { return match }
        let inside = snapshot.elements.filter {
            $0.ref != match.ref && $0.role.isInteractive && $0.role != .window && box.contains($0.box)
                && $0.box != box
        }
        guard let first = inside.map(\.box.y).min() else { return match }
        var moved = match
        moved.box = Rect(x: box.x, y: box.y, width: box.width, height: min(max(16, first - box.y), 40))
        return moved
    }

    /// Controls of `role` named by a text label beside them: right of it on its row (a form's "Name: [____]"), or
    /// just below it. Each label names the nearest such control.
    private static func labelled(role: Role, target: Target, count: Int, in snapshot: Snapshot, except: [Match])
        -> [Match]
    {
        let taken = Set(except.map(\.ref))
        var out: [Match] = []
        for element in snapshot.elements where element.role == .text {
            guard let label = bestSpan(of: element, target: target, count: count) else { continue }
            let l = element.box
            let beside = snapshot.elements.filter { c in
                c.role == role && !taken.contains(c.ref) && c.window == element.window
                    && ((c.box.x >= l.x + l.width - 2 && c.box.x - (l.x + l.width) <= 80
                        && abs(c.box.center.y - l.center.y) <= max(8, c.box.height / 2))
                        || (c.box.y >= l.y + l.height - 2 && c.box.y - (l.y + l.height) <= 40
                            && c.box.x <= l.x + l.width && c.box.x + c.box.width >= l.x))
            }
            guard
                let nearest = beside.min(by: {
                    ($0.box.x - l.x) + ($0.box.y - l.y) < ($1.box.x - l.x) + ($1.box.y - l.y)
                })
            else { continue }
            out.append(
                Match(
                    element: nearest, text: label.text, score: label.score, confidence: label.confidence,
                    whole: label.whole == true))
        }
        return out
    }

    /// The elements whose labels come closest to `label` (best first, similar ones only), for "did you mean".
    public static func closest(_ label: String, in snapshot: Snapshot, limit: Int = 5) -> [String] {
        let wanted = Array(fold(label.lowercased()))
        // The best of: the whole label, or any of its words, against what was asked for. Written as steps with
        // their types: as one chain of closures this took the type checker over a second.
        func similarity(_ part: String) -> Double {
            let folded = Array(fold(part.lowercased()))
            let longer: Int = max(folded.count, wanted.count, 1)
            return 1 - Double(editDistance(folded, wanted)) / Double(longer)
        }
        var scored: [(element: Element, score: Double)] = []
        for element in snapshot.elements where element.role != .window {
            let words: [String] = element.label.split(whereSeparator: \.isWhitespace).map(String.init)
            let best: Double = ([element.label] + words).map(similarity).max() ?? 0
            if best >= 0.34 { scored.append((element, best)) }
        }
        scored.sort { $0.score > $1.score }
        return scored.prefix(limit).map { "\($0.element.ref) \"\($0.element.label.prefix(40))\"" }
    }

    /// How well `text` (as read) matches `wanted`.
    public static func score(_ wanted: String, _ text: String) -> Double { Target(wanted).score(text) }

    /// A label being looked for, its trimmed, lowercased and folded forms made once for every text it is scored
    /// against (a tap scores it against every span of every element).
    struct Target {
        /// The label as typed (spaces normalised), and the same with the punctuation OCR attaches to ends trimmed.
        let raw: Form
        let trimmed: Form

        /// One spelling of the label in the forms it is compared in.
        struct Form {
            let text, lower, folded, spaceless, spacelessLower: String
            let foldedCharacters: [Character]

            init(_ text: String) {
                self.text = text
                lower = text.lowercased()
                spaceless = text.filter { !$0.isWhitespace }
                spacelessLower = spaceless.lowercased()
                folded = Finder.fold(lower)
                foldedCharacters = Array(folded)
            }
        }

        init(_ wanted: String) {
            raw = Form(wanted)
            // A label that is all punctuation ("(", "+/-", "...") is matched as it is, not trimmed to nothing.
            let cut = Finder.trimPunctuation(wanted)
            trimmed = cut.isEmpty ? raw : Form(cut)
        }

        /// 1 exact, 0.99 but for lost spaces, 0.97 ignoring case, 0.93 equal once OCR look-alikes are folded, else
        /// 0.9 × edit similarity; as typed and with end punctuation trimmed on both sides, whichever is better ("x!"
        /// is a key's whole label, "(Cancel)" a button read with its border).
        func score(_ text: String) -> Double {
            let cut = Finder.trimPunctuation(text)
            let asRead = Self.score(text, raw)
            guard asRead < 1 else { return 1 }
            // Equal only once trimmed ("Cancel" in "(Cancel)"): just below an exact match, so "x!" typed prefers a
            // key reading "x!" to one reading "x".
            let trimmedScore = Self.score(cut.isEmpty ? text : cut, trimmed)
            return max(asRead, trimmedScore == 1 ? 0.995 : trimmedScore)
        }

        private static func score(_ read: String, _ wanted: Form) -> Double {
            guard !read.isEmpty, !wanted.text.isEmpty else { return 0 }
            if read == wanted.text { return 1 }
            // OCR loses the space between close words ("Filename" for "File name"): that is no guess, only a
            // shade below the label as typed, so a label read with its spaces wins.
            let spaceless = read.filter { !$0.isWhitespace }
            if spaceless == wanted.spaceless { return 0.99 }
            let lowered = read.lowercased()
            if lowered == wanted.lower { return 0.97 }
            if spaceless.lowercased() == wanted.spacelessLower { return 0.97 }
            let readFolded = Finder.fold(lowered)
            if readFolded == wanted.folded { return 0.93 }
            let characters = Array(readFolded)
            let distance = editDistance(characters, wanted.foldedCharacters)
            return 0.9 * (1 - Double(distance) / Double(max(characters.count, wanted.foldedCharacters.count)))
        }
    }

    /// Folds characters OCR confuses into one (after lowercasing): l/1/i/|/! → l, o/0 → o, s/5 → s, ²/³ → 2/3, ^ → *,
    /// rn → m, vv → w; and drops spaces, which OCR loses between close words ("Rememberme").
    static func fold(_ s: String) -> String {
        var mapped: [Character] = []
        mapped.reserveCapacity(s.count)
        for c in s {
            switch c {
            case " ": continue
            case "1", "i", "|", "!": mapped.append("l")
            case "0": mapped.append("o")
            case "5": mapped.append("s")
            // Superscripts read as digits ("x²" as "x2"), a caret as an asterisk ("y^x" as "y*x").
            case "²": mapped.append("2")
            case "³": mapped.append("3")
            case "^": mapped.append("*")
            default: mapped.append(c)
            }
        }
        // "rn" → "m" everywhere, then "vv" → "w", left to right, as two replacements in turn would.
        return String(Self.replacing(Self.replacing(mapped, "r", "n", with: "m"), "v", "v", with: "w"))
    }

    /// `characters` with each non-overlapping `first` `second` pair, left to right, replaced by `with`.
    private static func replacing(_ characters: [Character], _ first: Character, _ second: Character, with: Character)
        -> [Character]
    {
        var out: [Character] = []
        out.reserveCapacity(characters.count)
        var i = 0
        while i < characters.count {
            if characters[i] == first, i + 1 < characters.count, characters[i + 1] == second {
                out.append(with)
                i += 2
            } else {
                out.append(characters[i])
                i += 1
            }
        }
        return out
    }

    /// The punctuation OCR attaches to a label's ends.
    private static let endPunctuation = Set("\"'`‘’“”()[]{}<>:;,.…?!_-—".unicodeScalars)

    /// Drops punctuation OCR attaches to a label's ends (quotes, brackets, colons, ellipses): spaces (and tabs)
    /// first, then that punctuation, as Foundation's two `trimmingCharacters` did, without its bridging.
    static func trimPunctuation(_ s: String) -> String {
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator }
        let spaced = trim(s.unicodeScalars[...], isSpace)
        return String(String.UnicodeScalarView(trim(spaced) { endPunctuation.contains($0) }))
    }

    /// `scalars` without the scalars at either end for which `drop` holds.
    private static func trim(_ scalars: Substring.UnicodeScalarView, _ drop: (Unicode.Scalar) -> Bool)
        -> Substring.UnicodeScalarView
    {
        var view = scalars
        while let first = view.first, drop(first) { view.removeFirst() }
        while let last = view.last, drop(last) { view.removeLast() }
        return view
    }
}

/// How to pick one match among several.
public struct Selection: Sendable {
    /// Take the Nth match in reading order among the best (1-based).
    public var nth: Int?
    /// Prefer the match nearest to this label.
    public var near: String?
    /// Only elements of this role.
    public var role: Role?

    /// Creates a selection.
    public init(nth: Int? = nil, near: String? = nil, role: Role? = nil) {
        self.nth = nth; self.near = near; self.role = role
    }

    /// The field `label` names, to type into (`type --into`). With no role given, the editable elements are asked
    /// first (fields, then spin buttons), so a caption never ties with the field it names ("Name:" the text and
    /// "Name:" the entry it labels); only when none of them matches at all is any element taken, as `resolve` does
    /// (an entry OCR read as text). A ref, a role given, a tie or a guess among fields: as `resolve`.
    public func resolveField(_ label: String, in snapshot: Snapshot) throws -> Match {
        guard role == nil else { return try resolve(label, in: snapshot) }
        for editable in [Role.field, .spinbutton] {
            var narrowed = self
            narrowed.role = editable
            do {
                return try narrowed.resolve(label, in: snapshot)
            } catch PerceptionError.notFound {
                continue
            }
        }
        return try resolve(label, in: snapshot)
    }

    /// The one match to act on, or a typed error: nothing matches (with the closest labels), or several match equally
    /// and nothing disambiguates (a wrong click is worse than none). With `acting` (tap, type into, the agent's
    /// tools), a match that is only a guess is refused too (see `doubt`); `find` passes false to list what it saw.
    public func resolve(_ label: String, in snapshot: Snapshot, acting: Bool = true) throws -> Match {
        // A ref names one element outright.
        if label.range(of: #"^[ew][0-9]+$"#, options: .regularExpression) != nil {
            guard let element = snapshot.elements.first(where: { $0.ref == label }) else {
                throw PerceptionError.staleRef(label)
            }
            return Match(element: element)
        }
        let matches = Finder.find(label, in: snapshot, role: role)
        guard let top = matches.first else {
            throw PerceptionError.notFound(label: label, closest: Finder.closest(label, in: snapshot))
        }
        let chosen = try choose(label, matches: matches, top: top, in: snapshot)
        if acting, let reason = Self.doubt(chosen, label: label, in: snapshot) {
            let others = matches.filter { $0.ref != chosen.ref }.prefix(4).map(\.summary)
            let unread = snapshot.elements.filter {
                $0.role.isInteractive && $0.label.isEmpty && $0.source == .ocr && $0.window == chosen.window
            }
            throw PerceptionError.uncertain(
                label: label, reason: reason,
                candidates: [chosen.summary] + others
                    + unread.prefix(6).map { "\($0.ref) \($0.role.rawValue) \"\" (unread)" })
        }
        return chosen
    }

    /// The match `nth`/`near` pick, or the single best one.
    private func choose(_ label: String, matches: [Match], top: Match, in snapshot: Snapshot) throws -> Match {
        var best = matches.filter { abs($0.score - top.score) < 0.001 && $0.whole == top.whole }
        if nth == nil && near == nil { best = Self.preferred(Self.withoutShortcutKeys(best, in: snapshot)) }
        if let nth {
            // In reading order among the best-scoring ones: "the second Save".
            guard nth >= 1, nth <= best.count else {
                throw PerceptionError.notFound(label: "\(label) #\(nth)", closest: best.map(\.summary))
            }
            return best[nth - 1]
        }
        if let near {
            let anchors = Finder.find(near, in: snapshot)
            guard let anchor = anchors.first else {
                throw PerceptionError.notFound(label: near, closest: Finder.closest(near, in: snapshot))
            }
            // Among good matches (not just the very best), the nearest to the anchor; an exact tie is refused.
            let good = matches.filter { $0.score >= top.score - 0.05 && $0.ref != anchor.ref }
            let ranked = good.map { ($0, Self.distance($0.point, anchor.point)) }.sorted { $0.1 < $1.1 }
            guard let first = ranked.first else {
                throw PerceptionError.notFound(label: label, closest: matches.map(\.summary))
            }
            if ranked.count > 1 && ranked[1].1 == first.1 {
                throw PerceptionError.ambiguous(label: label, candidates: ranked.prefix(5).map(\.0.summary))
            }
            return first.0
        }
        if best.count > 1 {
            throw PerceptionError.ambiguous(label: label, candidates: best.map(\.summary))
        }
        // The one left once the preferred are taken (a control over the caption before it), else the best.
        return best.first ?? top
    }

    /// OCR confidence below which a read is a guess: measured on xcalc's and Tk's keys, right reads went down to 57
    /// ("ln") and wrong ones up to 80 ("7" read "?"), so confidence alone never decides; it only adds doubt.
    public static let lowConfidence = 50.0

    /// Why `match` may not be the control meant, or nil when it is safe to act on. A fuzzy match (a different word
    /// that looks alike: "Fill" for "File") never is. A match that rests on case ("E" for "e"), on OCR look-alikes
    /// (l/1, O/0), on a low-confidence read, or on part of a control's label ("Save" in "Don't Save") is acted on
    /// only when no control of its window is unread, since the control meant could be that one.
    public static func doubt(_ match: Match, label: String, in snapshot: Snapshot) -> String? {
        if label.isEmpty || label.range(of: #"^[ew][0-9]+$"#, options: .regularExpression) != nil { return nil }
        if match.score < 0.93 {
            return "only a similar label was read (\"\(match.text)\", score "
                + String(format: "%.2f", match.score) + "); a fuzzy match is never clicked"
        }
        let element = snapshot.elements.first { $0.ref == match.ref }
        // A control whose label was read in part ("� changes"): the word named may be the smaller part of another
        // label, so only its ref names it.
        if match.source != .atspi, !match.text.contains(PixelEvidence.unreadMark), let element,
            element.words?.contains(where: { $0.text == PixelEvidence.unreadMark }) == true
        {
            return "part of the control's label could not be read (\(UntrustedText.quoted(element.label, limit: 40))); "
                + "if it is the one, tap its ref \(element.ref)"
        }
        // Text inside a control that OCR could not read in full is that control's label in part: the user named a
        // word of it, not the control, and pressing it would press a control nobody named ("changes" inside an
        // unread "Discard changes" button).
        if match.role == .text, match.source != .atspi,
            let control = snapshot.elements.first(where: {
                $0.source == .ocr && $0.role.isInteractive && $0.ref != match.ref && $0.box.contains(match.point)
                    && $0.window == match.window
                    && ($0.label.isEmpty || $0.label.contains(PixelEvidence.unreadMark))
            })
        {
            let named = UntrustedText.quoted(control.label, limit: 40)
            return "it lies inside \(control.role.rawValue) \(control.ref) \(named), "
                + "whose label was not read in full; name that control (its ref \(control.ref), or --nth/--near)"
        }
        guard match.source != .atspi else { return nil }
        var reasons: [String] = []
        if match.score < 0.97 {
            reasons.append("it was read with OCR look-alikes (\"\(match.text)\")")
        } else if match.score < 0.99 {
            reasons.append("its case differs (\"\(match.text)\")")
        }
        if let confidence = match.confidence, confidence < lowConfidence {
            reasons.append("it was read with low confidence (" + String(format: "%.0f", confidence) + ")")
        }
        if match.whole == false && match.role != .text && match.role.isInteractive {
            let full = element?.label ?? ""
            reasons.append(
                "it is only part of the control's label (\"\(match.text)\" of \(UntrustedText.quoted(full, limit: 60)))"
            )
        }
        guard !reasons.isEmpty else { return nil }
        let unread = snapshot.elements.contains {
            $0.role.isInteractive && $0.label.isEmpty && $0.source == .ocr && $0.ref != match.ref
                && $0.window == match.window
        }
        guard unread else { return nil }
        return reasons.joined(separator: ", and ") + ", and a control next to it could not be read"
    }

    /// `matches` without the shortcut column's twin of a menu item: a row of an OCR-read menu whose shortcut is a key
    /// of the item's name ("Delete … Delete" in GTK's Edit menu) is one item read as two, and its label is the left
    /// one. Only when the right one ends its row (nothing of its window right of it on the row, nothing between the
    /// two): two columns of a picker that share a label stay a tie.
    static func withoutShortcutKeys(_ matches: [Match], in snapshot: Snapshot) -> [Match] {
        let sameRow = { (a: Rect, b: Rect) in abs(a.center.y - b.center.y) <= 3 }
        return matches.filter { key in
            guard key.role == .menuitem, key.source == .ocr else { return true }
            return !matches.contains { label in
                guard label.role == .menuitem, label.source == .ocr, label.window == key.window,
                    sameRow(label.box, key.box), label.box.x + label.box.width <= key.box.x
                else { return false }
                let others = snapshot.elements.filter {
                    $0.window == key.window && $0.role != .window && sameRow($0.box, key.box)
                        && $0.box.x >= label.box.x + label.box.width && $0.box != key.box
                }
                return others.isEmpty
            }
        }
    }

    /// Among equally good matches, the accessibility tree's exact facts win over OCR's guesses, and a control wins
    /// over text that merely repeats its name (a dialog's "Save" label above its Save button, xcalc's display "9"
    /// beside its 9 key): text is not pressed, so a user naming a label beside its control means the control.
    static func preferred(_ matches: [Match]) -> [Match] {
        let accessible = matches.filter { $0.source == .atspi }
        guard !accessible.isEmpty else {
            // By OCR, only where each text shares its window with a control: a text in another window may be the
            // thing meant (a flat button or a row read as text), and a tie is refused.
            let controls = matches.filter(\.role.isInteractive)
            let texts = matches.filter { !$0.role.isInteractive }
            let beside = texts.allSatisfy { text in controls.contains { $0.window == text.window } }
            return controls.isEmpty || !beside ? matches : controls
        }
        let controls = accessible.filter(\.role.isInteractive)
        let pool = controls.isEmpty ? accessible : controls
        let uncovered = pool.filter { $0.covered != true }
        return uncovered.isEmpty ? pool : uncovered
    }

    private static func distance(_ a: Point, _ b: Point) -> Double {
        let dx = Double(a.x - b.x), dy = Double(a.y - b.y)
        return (dx * dx + dy * dy).squareRoot()
    }
}
