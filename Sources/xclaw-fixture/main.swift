// xclaw-fixture: a test X client. It opens a window, paints the rectangles it is given, prints
// {"kind":"ready","window":ID} and then one JSON line per input event it receives, until killed or orphaned.
//
//   xclaw-fixture [--display :N] [--title T] [--geometry WxH+X+Y] [--bg #rrggbb] [--rect X,Y,W,H,#rrggbb]...
//                 [--text "X,Y,FONT,#FG[,#BG][,show=MS][,hide=MS]:TEXT"]... [--button "X,Y,W,H:LABEL"]...
//                 [--field X,Y,W,H]... [--checkbox "X,Y:LABEL"]... [--animate X,Y,W,H]...
//
// Texts use X core fonts (aliases such as 6x13, 9x15, 9x15bold, 10x20, 12x24, or a full XLFD) with their top-left
// corner at X,Y; #BG fills the text box padded by 6 px. show=/hide= are ms after the window's first paint.
// Animated rectangles flip between red and blue every 40 ms. Button presses on a widget carry
// "target": the button's or check box's label, or "field@X,Y".
import Foundation
import XclawBase
import XclawScreen
import XclawTesting

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("xclaw-fixture: \(message)\n".utf8))
    exit(2)
}

func parseGeometry(_ text: String) throws -> Rect {
    // WxH+X+Y
    let parts = text.split(whereSeparator: { $0 == "x" || $0 == "+" }).compactMap { Int($0) }
    guard parts.count == 4 else { throw ScreenError.invalidArgument("geometry must be WxH+X+Y") }
    return Rect(x: parts[2], y: parts[3], width: parts[0], height: parts[1])
}

setlocale(LC_CTYPE, "C.UTF-8")
var display: String?
var title = "xclaw fixture"
var frame = Rect(x: 0, y: 0, width: 400, height: 300)
var background = RGB(r: 255, g: 255, b: 255)
var rects: [(Rect, RGB)] = []
var texts: [ProbeText] = []
var widgets: [ProbeWidget] = []
var animated: [Rect] = []
var popup = false
var args = CommandLine.arguments.dropFirst().makeIterator()
do {
    while let arg = args.next() {
        if arg == "--popup" {  // an override-redirect window, the way menus and tooltips are made
            popup = true
            continue
        }
        guard let value = args.next() else { fail("\(arg) needs a value") }
        switch arg {
        case "--display": display = value
        case "--title": title = value
        case "--geometry": frame = try parseGeometry(value)
        case "--bg": background = try RGB(hex: value)
        case "--rect":
            let parts = value.split(separator: ",")
            guard parts.count == 5 else { fail("--rect takes X,Y,W,H,#rrggbb") }
            rects.append((try Rect(parsing: parts[0..<4].joined(separator: ",")), try RGB(hex: String(parts[4]))))
        case "--text": texts.append(try parseText(value))
        case "--button": widgets.append(try parseButton(value))
        case "--field": widgets.append(.field(try Rect(parsing: value)))
        case "--checkbox": widgets.append(try parseCheckbox(value))
        case "--animate": animated.append(try Rect(parsing: value))
        default: fail("unknown option \(arg)")
        }
    }
} catch {
    fail("\(error)")
}

let encoder = JSONEncoder.xclaw
func emit(_ event: ProbeEvent, window: UInt? = nil) {
    guard var data = try? encoder.encode(event) else { return }
    if let window {  // the ready line carries the window id
        data = Data("{\"kind\":\"ready\",\"window\":\(window)}".utf8)
    }
    data.append(0x0a)
    FileHandle.standardOutput.write(data)
}

do {
    let probe = try EventProbe(
        display: display, title: title, frame: frame, background: background, rects: rects,
        texts: texts, widgets: widgets, animated: animated, popup: popup)
    emit(ProbeEvent(kind: .ready), window: probe.window)
    // The probe repaints timed content (show=/hide=, --animate) on schedule while it waits; a short timeout keeps
    // this loop responsive too when there is any.
    let timed = !animated.isEmpty || texts.contains { $0.showAfter != nil || $0.hideAfter != nil }
    let timeout: Duration = timed ? .milliseconds(5) : .milliseconds(500)
    while true {
        if let event = try probe.next(timeout: timeout) { emit(event) }
        if getppid() == 1 { exit(0) }  // the test that started us is gone
    }
} catch {
    fail("\(error)")
}
