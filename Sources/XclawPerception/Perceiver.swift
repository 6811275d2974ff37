import Foundation
import XclawScreen

/// Everything perception needs on one display: the connection, a capturer, the window list and the OCR engines with
/// their cache. Long-lived users (the agent, `watch`) keep one; each CLI call makes one and saves the cache at exit.
/// Safe because every member is immutable and itself safe to share.
public final class Perceiver: @unchecked Sendable {
    /// The display connection.
    public let connection: DisplayConnection
    /// Captures frames for reading.
    public let capturer: ScreenCapturer
    /// Lists and finds windows.
    public let windows: WindowManager
    /// Reads text; its cache makes unchanged content free.
    public let recognizer: TextRecognizer
    /// Reads accessibility trees through the `xclaw-atspi` helper.
    public let accessibility: AccessibilityReader
    /// Keeps the tree between snapshots while no event says it changed; nil: read it every time (one-shot commands,
    /// which would pay for the watcher and never use it).
    public let treeCache: AccessibilityTreeCache?

    /// Opens perception on `connection`, with the OCR cache given (default: empty, in memory) and, for a long-lived
    /// owner, a tree cache.
    public init(
        connection: DisplayConnection, cache: OCRCache = OCRCache(),
        accessibility: AccessibilityReader = AccessibilityReader(), treeCache: AccessibilityTreeCache? = nil
    ) throws {
        self.connection = connection
        self.accessibility = accessibility
        self.treeCache = treeCache
        capturer = try ScreenCapturer(connection: connection)
        windows = WindowManager(connection: connection)
        recognizer = TextRecognizer(cache: cache)
    }

    /// The area a `--region`/`--window` pair names: a window's visible part, a region clipped to the screen, or the
    /// whole screen.
    public func area(region: Rect? = nil, window: String? = nil, matching filter: WindowFilter = WindowFilter()) throws
        -> Rect
    {
        if window != nil || !filter.isEmpty {
            return try capturer.visibleArea(of: windows.find(window, matching: filter))
        }
        let screen = try connection.screenRect()
        guard let region else { return screen }
        let clipped = region.intersection(screen)
        guard !clipped.isEmpty else {
            throw PerceptionError.invalidArgument(
                "region \(region) is outside the \(screen.width)x\(screen.height) screen")
        }
        return clipped
    }

    /// Captures `area` (default: the screen) and reads its text, each window's visible part laid out on its own.
    public func read(_ area: Rect? = nil) throws -> TextReading {
        let area = try area ?? connection.screenRect()
        let frame = try capturer.capture(area)
        return try read(frame, area: area, windows: try windows.list())
    }

    /// Reads a frame captured from `area`, split into what each of `windows` (top-most first) shows there.
    public func read(_ frame: Frame, area: Rect, windows: [WindowInfo]) throws -> TextReading {
        let parts = Rect.visibleParts(of: windows.filter(\.visible).map(\.frame), within: area)
        return try recognizer.read(frame, origin: Point(x: area.x, y: area.y), partitions: parts)
    }

    /// Where CLI calls keep the shared OCR cache: `ocr-cache.bin` in the state directory.
    public static var cacheFile: URL { VirtualDisplay.stateDirectory.appendingPathComponent("ocr-cache.bin") }
}

extension Perceiver {
    /// Where this display's accessibility bus is, if it has one.
    public var accessibilityLocation: AccessibilityLocation? {
        AccessibilityReader.locate(display: connection.name, windows: windows)
    }

    /// Presses an element from the accessibility tree through its toolkit (`action` nil: its first action, such as
    /// GTK's "click" or Qt's "Press"), without moving the mouse; returns the action's name.
    public func press(_ node: AccessibleHandle, action: String? = nil) throws -> String {
        guard let location = accessibilityLocation else {
            throw AccessibilityReader.missingBus(display: connection.name)
        }
        return try accessibility.perform(action, on: node, at: location)
    }

    /// How far `focusForTyping` got.
    public enum TypingFocus: Sendable, Equatable {
        /// The element has the keyboard focus: type away.
        case focused
        /// Its window was raised and focused, but the toolkit would not focus the element: click it (nothing
        /// covers it now).
        case raised
        /// Nothing was done (no tree node, or the window could not be raised): click it if nothing covers it.
        case none
    }

    /// Makes an element from the accessibility tree the place typing goes, without a click: raises and focuses its
    /// X window (the toolkit's focus moves only within its window), then focuses the element through the toolkit.
    public func focusForTyping(_ match: Match) -> TypingFocus {
        guard let node = match.node else { return .none }
        var raised = false
        if let id = match.windowID, let window = try? windows.window(id: id) {
            raised = (try? windows.activate(window)) != nil
        }
        if (try? focus(node)) != nil { return .focused }
        return raised ? .raised : .none
    }

    /// Gives an element from the accessibility tree the keyboard focus within its window.
    public func focus(_ node: AccessibleHandle) throws {
        guard let location = accessibilityLocation else {
            throw AccessibilityReader.missingBus(display: connection.name)
        }
        try accessibility.focus(node, at: location)
    }
}
