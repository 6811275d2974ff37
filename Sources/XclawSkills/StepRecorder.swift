import Foundation
import XclawAgent
import XclawPerception
import XclawScreen

/// Turns an input action that was done into a replayable step: its target anchored by the snapshot taken before it
/// (tree, label, role, window, place, look-alike rank, an image patch), and what the snapshot after it shows changed.
enum StepRecorder {
    /// The side of the image patch kept around a step's point, in pixels.
    static let patchSide = 48
    /// The step of `record` (done), from the snapshots before and after it.
    static func step(
        _ record: ActionRecord, before: Snapshot?, patch: (png: String, origin: Point)?, pointer: Point?,
        after: Snapshot?, changed: Bool
    ) -> RecordedStep {
        let point = record.x.flatMap { x in record.y.map { Point(x: x, y: $0) } } ?? pointer
        var step = RecordedStep(
            tool: record.tool, action: record.action, x: point?.x, y: point?.y, text: record.text,
            screen: before.map { [$0.screen.width, $0.screen.height] }, ms: record.ms)
        // What the record's text means to a replay (a click's modifier keys, a tap's button) is its tool's to say.
        RecordingTools.tool(named: record.tool)?.recorded(&step, from: record)
        // `type_text into:` clicked its field first: its point is the field's.
        step.focus = [.type, .typeSubmit].contains(record.action) && record.x != nil ? true : nil
        guard let before else { return step }
        let active = before.elements.first { $0.role == .window && $0.active == true }
        step.pre = StepPrecondition(anchorVisible: false, activeWindow: active?.label)
        step.pre.activeClass = active?.className
        if let point, let element = before.element(at: point) {
            let window = before.elements.first { $0.role == .window && $0.windowID == element.windowID }
            let alike = before.elements.filter {
                $0.windowID == element.windowID && $0.role == element.role && $0.label == element.label
            }
            step.target = StepAnchor(
                source: element.source?.rawValue, label: element.label, role: element.role.rawValue,
                toolkitRole: element.toolkitRole, treePath: element.node?.path,
                box: [element.box.x, element.box.y, element.box.width, element.box.height],
                windowClass: window?.className, windowTitle: window?.label,
                windowBox: window.map { [$0.box.x, $0.box.y, $0.box.width, $0.box.height] },
                relative: window.map { [point.x - $0.box.x, point.y - $0.box.y] },
                nth: (alike.firstIndex { $0.ref == element.ref } ?? 0) + 1, patch: patch?.png)
            step.target?.alikes = alike.count
            step.target?.patchOrigin = patch.map { [$0.origin.x, $0.origin.y] }
            step.pre.anchorVisible = true
        } else if let point {
            step.target = StepAnchor(label: "", role: "", box: [point.x, point.y, 1, 1], patch: patch?.png)
            step.target?.patchOrigin = patch.map { [$0.origin.x, $0.origin.y] }
        }
        // A password is never kept: a replay must be given it (`--param PASSWORD=…`). The field is judged as the
        // approval gate judges it (the focused field, else the one under the pointer; by role, label or bullets).
        if [.type, .typeSubmit].contains(record.action),
            GateSubject.of(record, in: before, pointer: pointer)?.intoPassword == true
        {
            step.text = nil
            step.parameter = "password"
        }
        if let after {
            // By label alone: a label read with another role after the action (a closing window read by OCR
            // instead of its tree) neither appeared nor vanished.
            func labels(_ s: Snapshot) -> Set<String> {
                Set(s.elements.filter { $0.role != .window && !$0.label.isEmpty }.map(\.label))
            }
            func named(_ s: Snapshot, _ wanted: Set<String>) -> [String] {
                Array(
                    Set(
                        s.elements.filter { $0.role != .window && wanted.contains($0.label) }.map {
                            "\($0.role.rawValue) \($0.label)"
                        }
                    ).sorted().prefix(20))
            }
            let (was, now) = (labels(before), labels(after))
            step.post = StepPostcondition(
                appeared: named(after, now.subtracting(was)), vanished: named(before, was.subtracting(now)),
                changed: changed)
        }
        return step
    }
}

extension ScreenSession {
    /// A small PNG (base64) of the screen around the record's point, or the pointer's, with its top-left corner; nil
    /// when there is none.
    func patch(around record: ActionRecord, pointer: Point?) -> (png: String, origin: Point)? {
        guard let p = record.x.flatMap({ x in record.y.map { Point(x: x, y: $0) } }) ?? pointer,
            let screen = try? connection.screenSize()
        else { return nil }
        let side = StepRecorder.patchSide
        let x = min(max(0, p.x - side / 2), max(0, screen.width - side))
        let y = min(max(0, p.y - side / 2), max(0, screen.height - side))
        let area = Rect(x: x, y: y, width: min(side, screen.width), height: min(side, screen.height))
        guard let frame = try? capturer.capture(area), let png = try? PNG.encode(frame) else { return nil }
        return (Data(png).base64EncodedString(), Point(x: x, y: y))
    }
}
