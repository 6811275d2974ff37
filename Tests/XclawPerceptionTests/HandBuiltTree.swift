import Foundation

@testable import XclawPerception
@testable import XclawScreen

// Accessibility trees and window lists built by hand, as the helper reports them, for the merge and snapshot-stage
// tests of this target.

/// One node of a hand-built tree; `rect` nil for nodes without extents (applications).
func node(
    _ id: Int, parent: Int, app: Int = 0, role: String, name: String = "",
    states: [String] = ["enabled", "sensitive", "showing", "visible"], rect: Rect?,
    value: String? = nil
) -> AccessibleNode {
    AccessibleNode(
        id: id, parent: parent, app: app, bus: ":1.\(app)", path: "/n/\(id)", role: role, name: name,
        description: nil, states: states, x: rect?.x, y: rect?.y, w: rect?.width, h: rect?.height,
        value: value, actions: nil, editable: nil, children: 0)
}

/// A visible, mapped window of process `pid`.
func window(_ id: UInt, _ frame: Rect, pid: Int?) -> WindowInfo {
    WindowInfo(
        id: id, title: "w\(id)", className: "", instance: "", pid: pid, frame: frame, mapped: true,
        visible: true, active: false)
}

/// A dialog of app 0 (pid 100) at 100,100 and a bigger window of app 1 (pid 200) above part of it.
func scene() -> (AccessibleTree, [WindowInfo]) {
    let nodes = [
        node(0, parent: -1, role: "application", name: "zenity", states: [], rect: nil),
        node(2, parent: 0, role: "dialog", name: "Question", rect: Rect(x: 100, y: 100, width: 200, height: 120)),
        node(3, parent: 2, role: "filler", rect: Rect(x: 100, y: 100, width: 200, height: 120)),
        node(4, parent: 3, role: "label", name: "Save\nchanges?", rect: Rect(x: 110, y: 110, width: 100, height: 20)),
        node(5, parent: 3, role: "push button", rect: Rect(x: 110, y: 180, width: 80, height: 30)),
        node(6, parent: 5, role: "label", name: "No", rect: Rect(x: 130, y: 185, width: 20, height: 20)),
        node(
            7, parent: 3, role: "push button", name: "Yes", states: ["enabled", "focused", "showing", "visible"],
            rect: Rect(x: 210, y: 180, width: 80, height: 30)),
        node(8, parent: 3, role: "label", name: "Name:", rect: Rect(x: 110, y: 140, width: 40, height: 20)),
        node(
            9, parent: 3, role: "text", name: "", states: ["editable", "enabled", "showing", "visible"],
            rect: Rect(x: 160, y: 138, width: 120, height: 24), value: "draft"),
        // Hidden GTK widgets report INT_MIN extents.
        node(
            10, parent: 3, role: "push button", name: "Hidden",
            rect: Rect(x: -2_147_483_648, y: -2_147_483_648, width: 1, height: 1)),
        node(1, parent: -1, app: 1, role: "application", name: "editor", states: [], rect: nil),
        node(11, parent: 1, app: 1, role: "frame", name: "Editor", rect: Rect(x: 250, y: 0, width: 400, height: 300)),
        node(
            12, parent: 11, app: 1, role: "check box", name: "Wrap", states: ["checked", "showing", "visible"],
            rect: Rect(x: 600, y: 280, width: 80, height: 20)),
    ]
    let tree = AccessibleTree(
        apps: [
            AccessibleApp(id: 0, root: 0, bus: ":1.0", name: "zenity", pid: 100, route: "cache", nodes: 9),
            AccessibleApp(id: 1, root: 1, bus: ":1.1", name: "editor", pid: 200, route: "walk", nodes: 2),
        ], nodes: nodes, ms: 1)
    let windows = [
        window(20, Rect(x: 250, y: 0, width: 400, height: 300), pid: 200),
        window(10, Rect(x: 100, y: 100, width: 200, height: 120), pid: 100),
    ]
    return (tree, windows)
}
