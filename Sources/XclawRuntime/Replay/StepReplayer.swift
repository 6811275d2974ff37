import Foundation
import XclawAgent
import XclawBase
import XclawPerception
import XclawScreen
import XclawSkills

/// Why a step could not be replayed safely: the replay stops there rather than act on a guess.
public struct ReplayDivergence: Error, CustomStringConvertible, Sendable {
    /// What went wrong, for the user.
    public var reason: String
    /// Whether the model may be asked about it (a control that is gone or ambiguous); a failed postcondition or a
    /// wrong window is not healed: the model would only be guessing what happened.
    public var healable: Bool

    /// Creates a divergence.
    public init(reason: String, healable: Bool = false) { (self.reason, self.healable) = (reason, healable) }

    /// The reason.
    public var description: String { reason }
}

/// How one step went, for the run's record and report.
public struct ReplayedStep: Codable, Sendable, Hashable {
    /// 1-based.
    public var number: Int
    /// The recorded action.
    public var action: RecordedAction
    /// The control acted on, when the step had one.
    public var label: String?
    /// How its target was found: `label`, `image`, `window` (its place in its window, checked by its image), or
    /// nil for steps that act on no point.
    public var grounded: String?
    /// The point acted on, `[x, y]`.
    public var point: [Int]?
    /// `replayed`, `healed` or `failed`.
    public var result: String
    /// The control's new label when the model healed the step.
    public var healedLabel: String?
    /// The text that shows the step's outcome now, when the model healed its postcondition.
    public var healedPost: String? = nil
    /// Whether its input was sent (a failed step may have acted before its check failed).
    public var acted: Bool? = nil
    /// Why it failed.
    public var reason: String?
    /// Milliseconds the step took, waits included.
    public var ms: Double

    /// snake_case, as every xclaw JSON output (older replay logs are read with `JSONDecoder.xclawRecords`).
    enum CodingKeys: String, CodingKey {
        case number, action, label, grounded, point, result, acted, reason, ms
        case healedLabel = "healed_label"
        case healedPost = "healed_post"
    }

    /// Creates an outcome.
    public init(
        number: Int, action: RecordedAction, label: String?, grounded: String?, point: [Int]?, result: String,
        healedLabel: String? = nil, reason: String? = nil, ms: Double
    ) {
        (self.number, self.action, self.label, self.grounded, self.point) = (number, action, label, grounded, point)
        (self.result, self.healedLabel, self.reason, self.ms) = (result, healedLabel, reason, ms)
    }

    /// A replay's stored log of step outcomes (`ReplayStore.replayLog`); empty when it cannot be read.
    public static func log(_ json: String) -> [ReplayedStep] {
        (try? JSONDecoder.xclawRecords.decode([ReplayedStep].self, from: Data(json.utf8))) ?? []
    }
}

/// Grounds and performs one recorded step: its target found anew (label and role in its window, with as many
/// look-alikes as recorded; then its image patch there; an unlabelled target by its place in its window, checked by
/// its image), its precondition waited for, then its postcondition. Nothing is clicked that failed a check.
public struct StepReplayer {
    /// The perception of the display replayed on.
    public let perceiver: Perceiver
    /// Its input.
    public let input: InputController
    /// Seconds each wait lasts at most.
    public let timeout: Double
    /// Asks the model about a control that is gone; nil: never.
    public let healer: ReplayHealer?
    /// True once the replay must stop (a stop request, Ctrl-C): every wait ends at once.
    public let stopped: @Sendable () -> Bool

    /// A replayer on `perceiver`'s display.
    public init(
        perceiver: Perceiver, input: InputController, timeout: Double, healer: ReplayHealer?,
        stopped: @escaping @Sendable () -> Bool = { false }
    ) {
        (self.perceiver, self.input, self.timeout, self.healer, self.stopped) =
            (perceiver, input, timeout, healer, stopped)
    }

    /// Replays `step` (number `number`), with `values` for its parameter; throws `ReplayDivergence` when it cannot be
    /// done safely, before acting whenever the check allows it. `acted` turns true once its input was sent (a step
    /// that fails after acting must not be done again by someone else). `gate` hears the action, its target grounded,
    /// just before it is sent, and throws to refuse it. What the action sends is its tool's playback
    /// (`RecordingTools.playback`); an action no tool plays back is refused.
    public func replay(
        _ step: RecordedStep, number: Int, values: [String: String], acted: inout Bool,
        gate: (ActionRecord) throws -> Void = { _ in }
    ) throws -> ReplayedStep {
        let start = ContinuousClock.now
        let outcome = ReplayedStep(
            number: number, action: step.action, label: step.target.flatMap { $0.label.isEmpty ? nil : $0.label },
            grounded: nil, point: nil, result: "replayed", ms: 0)
        if let name = step.parameter, values[name] == nil, step.text == nil {
            throw ReplayDivergence(
                reason: "it types a password, which is never recorded: pass --param \(name.uppercased())=…")
        }
        let text = step.parameter.flatMap { values[$0] } ?? step.text
        // The playback's view of the step holds the gate only while it plays: nothing of it outlives this block.
        var done = try withoutActuallyEscaping(gate) { gate in
            let replaying = Replaying(replayer: self, step: step, text: text, outcome: outcome, gate: gate)
            defer { acted = acted || replaying.acted }
            try RecordingTools.playback(for: step.action, tool: step.tool).replay(step, on: replaying)
            return replaying.outcome
        }
        try postcondition(step, outcome: &done)
        done.ms = Replayer.milliseconds(since: start)
        return done
    }

    /// One step being replayed, as its playback sees it: what it found and whether it acted are kept here, then
    /// read back by `replay`. Lives only inside `replay`.
    private final class Replaying: StepReplaying {
        let replayer: StepReplayer
        let step: RecordedStep
        let text: String?
        var outcome: ReplayedStep
        var acted = false
        let gate: (ActionRecord) throws -> Void

        init(
            replayer: StepReplayer, step: RecordedStep, text: String?, outcome: ReplayedStep,
            gate: @escaping (ActionRecord) throws -> Void
        ) {
            (self.replayer, self.step, self.text, self.outcome, self.gate) = (replayer, step, text, outcome, gate)
        }

        var input: InputController { replayer.input }
        func stopped() -> Bool { replayer.stopped() }
        func activeWindowHolds() throws { try replayer.activeWindowHolds(step) }
        func modifiers(_ text: String?) throws -> [UInt] { try replayer.modifiers(text) }
        func divergence(_ reason: String) -> any Error { ReplayDivergence(reason: reason) }
        func acting() { acted = true }

        func located() throws -> Point {
            let (point, how) = try replayer.groundOrHeal(step, outcome: &outcome)
            (outcome.grounded, outcome.point) = (how, [point.x, point.y])
            return point
        }

        func approve(at point: Point?, text: String?) throws {
            try gate(
                ActionRecord(
                    tool: step.tool, action: step.action, x: point?.x, y: point?.y, text: text, result: "pending"))
            acted = true
        }
    }

    /// The modifier keys an action held (`shift`, `ctrl+shift`).
    private func modifiers(_ text: String?) throws -> [UInt] {
        guard let text, !text.isEmpty else { return [] }
        do {
            return try text.split { $0 == "+" || $0.isWhitespace }.map { try KeyNames.keysym(for: String($0)) }
        } catch {
            throw ReplayDivergence(reason: "the recorded modifier keys \(text) are not key names: \(error)")
        }
    }

    /// Where the step's target is, or its healed label's; the healed label is set on `outcome`.
    private func groundOrHeal(_ step: RecordedStep, outcome: inout ReplayedStep) throws -> (Point, String) {
        do {
            return try ground(step)
        } catch let divergence as ReplayDivergence {
            guard divergence.healable, let healer, let anchor = step.target, !anchor.label.isEmpty else {
                throw divergence
            }
            let label = try healer.relabel(anchor, perceiver: perceiver, divergence: divergence)
            var fixed = step
            fixed.target?.label = label
            fixed.target?.alikes = nil  // the new label must be unique
            fixed.target?.nth = nil
            let found = try ground(fixed)
            (outcome.result, outcome.healedLabel) = ("healed", label)
            return found
        }
    }

    /// Where the step's target is now: its label and role in its window (exactly as many look-alikes as when it was
    /// recorded, so the rank means the same one), else, only when the label is found nowhere, its image patch
    /// there. An unlabelled target is found by its place in its window when its image is still there.
    func ground(_ step: RecordedStep) throws -> (Point, String) {
        guard let anchor = step.target else {
            throw ReplayDivergence(reason: "the step has no target to find again; a replay never clicks blind")
        }
        if anchor.label.isEmpty { return try groundByPlace(step, anchor) }
        let area: () throws -> Rect = {
            if stopped() { throw CancellationError() }
            guard let title = anchor.windowTitle, !title.isEmpty else { return try perceiver.area() }
            return try perceiver.capturer.visibleArea(of: try window(title: title, windowClass: anchor.windowClass))
        }
        let role = Role(rawValue: anchor.role).flatMap { $0.isInteractive ? $0 : nil }
        var why = ""
        do {
            let match = try wait(for: "\"\(anchor.label)\" to appear", area: area) { area in
                // The whole screen read as the recording read it (a window read alone can classify its labels
                // otherwise: "Name:" beside a field), then only what lies in the target's window.
                var snapshot = try Snapshotter(perceiver: perceiver).snapshot(area: nil, refs: nil)
                snapshot.elements = snapshot.elements.filter { area.contains($0.box.center) }
                // Exact, whole matches only (never a ref, a fuzzy or a partial one), in reading order.
                let exact = Finder.find(anchor.label, in: snapshot, role: role)
                    .filter { $0.score >= 0.999 && $0.whole == true }
                    .sorted { ($0.box.y, $0.box.x) < ($1.box.y, $1.box.x) }
                guard !exact.isEmpty else {
                    throw PerceptionError.notFound(
                        label: anchor.label, closest: Finder.closest(anchor.label, in: snapshot))
                }
                let expected = anchor.alikes ?? 1
                guard exact.count == expected else {
                    throw ReplayDivergence(
                        reason:
                            "found \(exact.count) \(anchor.role) \"\(anchor.label)\" where the run saw \(expected): "
                            + "which one it meant is not certain", healable: true)
                }
                let nth = anchor.nth ?? 1
                guard (1...exact.count).contains(nth) else {
                    throw ReplayDivergence(
                        reason: "the script wants look-alike \(nth) of \(exact.count) \(anchor.role) "
                            + "\"\(anchor.label)\": fix its nth")
                }
                return exact[nth - 1]
            }
            if match.covered == true { throw ReplayDivergence(reason: "\(match.summary) is covered by a window") }
            return (match.point, "label")
        } catch let divergence as ReplayDivergence {
            throw divergence
        } catch is CancellationError {
            throw CancellationError()
        } catch PerceptionError.notFound {
            why = "its label is not on the screen"
        } catch ScreenError.windowNotFound {
            throw ReplayDivergence(
                reason: "its window \(UntrustedText.quoted(anchor.windowTitle ?? "")) is not on the screen")
        } catch {
            throw ReplayDivergence(reason: "cannot find \(anchor.role) \"\(anchor.label)\": \(error)")
        }
        // Found nowhere by its label: its image, in its window, at the same offset inside the patch.
        if let (template, origin) = patchTemplate(anchor), let x = step.x, let y = step.y {
            do {
                let area = try area()
                let frame = try perceiver.capturer.capture(area)
                let options = ImageSearchOptions()
                let matches = try TemplateMatcher.find(
                    template, in: frame, origin: Point(x: area.x, y: area.y), options: options)
                let match = try TemplateMatcher.choose(
                    matches, nth: nil, template: template, confidence: options.confidence
                ) {
                    try TemplateMatcher.bestBelow(
                        template, in: frame, origin: Point(x: area.x, y: area.y), options: options)
                }
                let point = Point(x: match.box.x + (x - origin.x), y: match.box.y + (y - origin.y))
                // The image may look like its neighbours (a keypad's keys): what lies there must not be labelled
                // otherwise, or the match is another control.
                let snapshot = try Snapshotter(perceiver: perceiver).snapshot(area: nil, refs: nil)
                if let there = snapshot.element(at: point), !there.label.isEmpty, there.label != anchor.label {
                    throw ReplayDivergence(
                        reason: "cannot find \(anchor.role) \"\(anchor.label)\" by its label; its image matches "
                            + "\(there.role.rawValue) \(UntrustedText.quoted(there.label)), another label, so it is not "
                            + "certain to be the same control", healable: true)
                }
                return (point, "image")
            } catch let divergence as ReplayDivergence {
                throw divergence
            } catch {
                why += "; its image: \(error)"
            }
        }
        throw ReplayDivergence(
            reason: "cannot find \(anchor.role) \"\(anchor.label)\""
                + (anchor.windowTitle.map { " in \(UntrustedText.quoted($0))" } ?? "") + ": \(why)",
            healable: true)
    }

    /// The window a step was recorded in: the one visible window titled exactly so (never a part of a title: "Delete"
    /// is not "Delete all items?"), else, when the title changed (a document's name in it), the one of its class.
    /// Two windows of the title (or of the class) are a divergence: which one is not certain.
    func window(title: String, windowClass: String?) throws -> WindowInfo {
        let windows = try perceiver.windows.list().filter(\.visible)
        let titled = windows.filter { $0.title == title }
        if titled.count == 1, let window = titled.first { return window }
        if titled.count > 1 {
            throw ReplayDivergence(reason: "\(titled.count) windows are titled \(UntrustedText.quoted(title))")
        }
        if let windowClass, !windowClass.isEmpty {
            let same = windows.filter { $0.className == windowClass }
            if same.count == 1, let window = same.first { return window }
        }
        throw ScreenError.windowNotFound(title)
    }

    /// An unlabelled target (a canvas, an unlabelled field): the same place in its window, found by title, when the
    /// recorded image is there again (so a changed window is not clicked into blindly).
    private func groundByPlace(_ step: RecordedStep, _ anchor: StepAnchor) throws -> (Point, String) {
        guard let title = anchor.windowTitle, !title.isEmpty, let relative = anchor.relative, relative.count == 2,
            let (template, origin) = patchTemplate(anchor), let x = step.x, let y = step.y
        else {
            throw ReplayDivergence(
                reason: "its target has no label, window and image to find it by; a replay never clicks blind")
        }
        return try wait(for: "its place in \(UntrustedText.quoted(title))", area: { try perceiver.area() }) { _ in
            let window = try window(title: title, windowClass: anchor.windowClass)
            let point = Point(x: window.frame.x + relative[0], y: window.frame.y + relative[1])
            guard window.frame.contains(point) else {
                throw ReplayDivergence(
                    reason: "its place lies outside \(UntrustedText.quoted(title)) now (the window is smaller)")
            }
            // The image must be where the recording had it, around the point (a few pixels of slack).
            let slack = 6
            let box = Rect(
                x: point.x - (x - origin.x) - slack, y: point.y - (y - origin.y) - slack,
                width: template.frame.width + 2 * slack, height: template.frame.height + 2 * slack
            ).intersection(try perceiver.connection.screenRect())
            let frame = try perceiver.capturer.capture(box)
            let options = ImageSearchOptions()
            guard
                try !TemplateMatcher.find(template, in: frame, origin: Point(x: box.x, y: box.y), options: options)
                    .isEmpty
            else {
                throw ImageSearchError.belowConfidence(
                    path: "the recorded image", confidence: options.confidence, best: nil,
                    floor: TemplateMatcher.floorScore(options.confidence))
            }
            return (point, "window")
        }
    }

    /// The anchor's image patch as a template, with the screen point of its top-left corner when recorded.
    private func patchTemplate(_ anchor: StepAnchor) -> (ImageTemplate, Point)? {
        guard let patch = anchor.patch, let data = Data(base64Encoded: patch), let origin = anchor.patchOrigin,
            origin.count == 2, let frame = try? PNG.decode(Array(data)),
            let template = try? ImageTemplate(frame: frame, path: "the recorded image")
        else { return nil }
        return (template, Point(x: origin[0], y: origin[1]))
    }

    /// Typing and keys go to the active window (with no window manager, the one holding the focus, else the one
    /// under the pointer): when the run recorded which one that was, the same window must be active before anything
    /// is typed (by title; a retitled one by its class when it is the only window of that class), or the text would
    /// land elsewhere. A title that cannot be read is no match.
    private func activeWindowHolds(_ step: RecordedStep) throws {
        guard let wanted = step.pre.activeWindow, !wanted.isEmpty else { return }
        var seen = "no window"
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while true {
            if stopped() { throw CancellationError() }
            if let id = try perceiver.windows.activeWindow(), let active = try? perceiver.windows.window(id: id) {
                if active.title == wanted { return }
                if let cls = step.pre.activeClass, !cls.isEmpty, active.className == cls,
                    try perceiver.windows.list().filter({ $0.visible && $0.className == cls }).count == 1
                {
                    return
                }
                seen = UntrustedText.quoted(active.title)
            }
            if ContinuousClock.now > deadline { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw ReplayDivergence(
            reason: "the active window is \(seen), not \(UntrustedText.quoted(wanted)) as when it was recorded: the "
                + "keys would go elsewhere")
    }

    /// Waits for what the step made appear when it was recorded (the first such label, anywhere on the screen).
    /// When it does not appear and a healer is there, the model is asked whether the screen shows the same outcome
    /// in other words; its answer counts only if that exact text is on the screen, and becomes the step's new
    /// postcondition (`outcome.healedPost`).
    private func postcondition(_ step: RecordedStep, outcome: inout ReplayedStep) throws {
        guard let first = step.post.appeared.first, let space = first.firstIndex(of: " ") else { return }
        let label = String(first[first.index(after: space)...])
        do {
            try appears(label, within: timeout, exact: false)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            let divergence = ReplayDivergence(
                reason: "it was done, but \"\(label)\" did not appear within \(timeout) s as it did when recorded")
            guard let healer else { throw divergence }
            let now = try healer.reconfirm(step, expected: label, perceiver: perceiver, divergence: divergence)
            do { try appears(now, within: 1, exact: true) } catch {
                throw ReplayDivergence(
                    reason: divergence.reason
                        + "; the model named \(UntrustedText.quoted(now)), which is not on the screen")
            }
            (outcome.result, outcome.healedPost) = ("healed", now)
        }
    }

    /// Waits until `label` is on the screen (`exact`: whole and exactly; else as `find` matches it).
    private func appears(_ label: String, within seconds: Double, exact: Bool) throws {
        let quick = StepReplayer(perceiver: perceiver, input: input, timeout: seconds, healer: healer, stopped: stopped)
        _ = try quick.wait(for: "\"\(label)\" to appear", area: { try perceiver.area() }) { area in
            let snapshot = try Snapshotter(perceiver: perceiver).snapshot(area: area, refs: nil)
            let found = Finder.find(label, in: snapshot).filter { !exact || ($0.score >= 0.999 && $0.whole == true) }
            guard !found.isEmpty else { throw PerceptionError.notFound(label: label, closest: []) }
            return true
        }
    }

    /// Runs `body` until it stops failing with "not yet" (nothing found, a window not there yet, ties), for at most
    /// `timeout`, through the watcher (a target is taken once its pixels settled); a stop ends the wait at once.
    private func wait<T>(for what: String, area: () throws -> Rect, _ body: (Rect) throws -> T) throws -> T {
        var watcher = Watcher(perceiver: perceiver, interval: .milliseconds(50))
        let capture = watcher.frames
        let stopped = self.stopped
        watcher.frames = { area in
            if stopped() { throw CancellationError() }
            return try capture(area)
        }
        // On timeout the last "not yet" is what the caller needs to decide (not found: try the image; ties: stop).
        var last: Error?
        func noting<R>(_ work: () throws -> R) throws -> R {
            do { return try work() } catch {
                last = error
                throw error
            }
        }
        do {
            return try watcher.retry(
                what, timeout: .milliseconds(Int(timeout * 1000)), area: { try noting(area) },
                retryable: retryable, attempt: { rect in try noting { try body(rect) } })
        } catch PerceptionError.timedOut(let condition, let observed) {
            throw last ?? PerceptionError.timedOut(condition: condition, lastObserved: observed)
        }
    }

    /// The errors that mean "not yet" while waiting for a target.
    private func retryable(_ error: Error) -> Bool {
        if let divergence = error as? ReplayDivergence { return divergence.healable }  // look-alikes may still settle
        return Watcher.isNotYet(error)
    }
}
