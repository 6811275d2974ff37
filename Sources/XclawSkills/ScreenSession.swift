import Dispatch
import Foundation
import XclawAgent
import XclawMessages
import XclawPerception
import XclawScreen

/// A screenshot as the model receives it: a PNG of the model-sized image, base64-encoded for an image block.
public struct Screenshot: Sendable {
    /// The image (PNG or JPEG), base64-encoded (what an `image` content block carries).
    public var base64: String
    /// The image's size: the model's coordinate space.
    public var size: Size
    /// The screen size it was scaled from.
    public var screen: Size
    /// How settling before the capture went, when the screenshot followed a settle.
    public var settle: SettleResult?
    /// `image/png` or `image/jpeg`.
    public var mediaType = "image/png"

    /// The image content block for a tool result.
    public var imageBlock: ContentBlock { .image(mediaType: mediaType, base64: base64) }
}

/// Everything the screen tools of one agent run share: one connection, one capturer (one shared-memory segment),
/// one input controller, the OCR engines with their cache, and one `RefStore`, so refs from `screen_snapshot` stay
/// valid in `tap_element` across the run. A lock keeps tool calls from interleaving X requests (a click landing
/// between the frames of another tool's settle would make that settle lie).
/// Safe because its members are immutable and safe to share, and the X work of its tools runs under `lock`, which also
/// guards the current geometry.
public final class ScreenSession: @unchecked Sendable {
    /// The display connection.
    public let connection: DisplayConnection
    /// Captures frames; the perceiver's capturer, so capture and OCR share one segment.
    public let capturer: ScreenCapturer
    /// Clicks, keys and typing.
    public let input: InputController
    /// OCR and windows.
    public let perceiver: Perceiver
    /// Builds snapshots with refs.
    public let snapshotter: Snapshotter
    /// Refs that stay stable across the snapshots of this run.
    public let refs: RefStore
    /// How every tool waits for the screen after acting.
    public let settler: Settler
    /// Recursive, so a public helper that locks (`screenshot()`) may also run inside `perform`.
    private let lock = NSRecursiveLock()
    private var currentGeometry: ScreenGeometry
    private var currentSizing = ImageSizing.reference
    private var currentEncoding = ImageEncoding.png
    /// The last frame encoded for the model, with its encoding and image: an action's frame that shows the same
    /// screen (the computer tool acts on the screenshot it just sent) is that image again, encoded once.
    private var lastEncoded: (frame: Frame, encoding: ImageEncoding, shot: Screenshot)?

    /// Opens a session on `display` (nil: `$DISPLAY`); fails with a message naming `xclaw display start` when no
    /// display is reachable.
    public convenience init(display: String?) throws {
        try self.init(connection: DisplayConnection(name: display))
    }

    /// Opens a session on an existing connection, with an OCR cache (default: empty, in memory).
    public init(connection: DisplayConnection, cache: OCRCache = OCRCache(), settler: Settler? = nil) throws {
        self.connection = connection
        perceiver = try Perceiver(connection: connection, cache: cache)
        // The agent's tools read in the languages the user configured (XCLAW_OCR_LANG or ocr_lang).
        try perceiver.recognizer.use(OCRLanguages.configured())
        capturer = perceiver.capturer
        input = try InputController(connection: connection)
        snapshotter = Snapshotter(perceiver: perceiver)
        refs = RefStore()
        self.settler = settler ?? Settler(capturer: perceiver.capturer)
        currentGeometry = ScreenGeometry(screen: try connection.screenSize())
    }

    /// The mapping between the screen and the screenshots the model sees (follows RandR resizes at each capture).
    public var geometry: ScreenGeometry { lock.withLock { currentGeometry } }

    /// How screenshots are encoded for the model (PNG, or JPEG to cut request bytes). Set by the run.
    public var encoding: ImageEncoding {
        get { lock.withLock { currentEncoding } }
        set { lock.withLock { currentEncoding = newValue } }
    }

    /// How large the screenshots are: the model's rule (high resolution or the reference rule) and the user's cap.
    /// Set by the run for its model before the first screenshot.
    public var sizing: ImageSizing {
        get { lock.withLock { currentSizing } }
        set {
            lock.withLock {
                currentSizing = newValue
                currentGeometry = ScreenGeometry(screen: currentGeometry.screen, sizing: newValue)
            }
        }
    }

    /// `X` when the display is `:X` or `:X.S` (a local display), for the computer tool's `display_number`.
    public var displayNumber: Int? {
        let name = connection.name
        guard name.hasPrefix(":") else { return nil }
        let digits = name.dropFirst().prefix { $0 != "." }
        return Int(digits)
    }

    /// Runs `body` holding the session lock, on a thread outside Swift's cooperative pool: X calls, settling and
    /// OCR block, and a blocked pool thread would stall every other task of the process.
    public func perform<T: Sendable>(_ body: @escaping @Sendable (ScreenSession) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                self.lock.lock()
                defer { self.lock.unlock() }
                continuation.resume(with: Result { try body(self) })
            }
        }
    }

    /// Waits until the screen settles and returns the result with the last full frame (reused by screenshots).
    public func settle(area: Rect? = nil) throws -> SettleResult {
        try lock.withLock { try settler.settle(area: area) }
    }

    /// Settles, then encodes the frame the settle ended on (no second capture) at the model's size, in the run's
    /// encoding or `format`.
    public func screenshot(as format: ImageEncoding? = nil) throws -> Screenshot {
        try lock.withLock {
            let settled = try settler.settle()
            var shot = try encodeForModel(settled.frame, as: format)
            shot.settle = settled
            return shot
        }
    }

    /// Downscales a full-screen frame to the model's size and encodes it (the run's encoding, or `format`) as
    /// base64; updates the geometry when the screen size changed (RandR).
    public func encodeForModel(_ frame: Frame, as format: ImageEncoding? = nil) throws -> Screenshot {
        try lock.withLock {
            if currentGeometry.screen != frame.size {
                currentGeometry = ScreenGeometry(screen: frame.size, sizing: currentSizing)
            }
            let scaled = try frame.downscaled(to: currentGeometry.model)
            let encoding = format ?? currentEncoding
            var shot = Screenshot(
                base64: Data(try encoding.encode(scaled)).base64EncodedString(), size: scaled.size,
                screen: frame.size, settle: nil)
            shot.mediaType = encoding.mediaType
            lastEncoded = (frame, encoding, shot)
            return shot
        }
    }

    /// How to turn a full-screen frame into the image a run's report shows of it: the model's screenshot size and
    /// encoding, and the last screenshot's image when the frame has its pixels (no second encoding). What it needs of
    /// the session is read now, under its lock; the work it returns takes no lock, so it can run later, while the
    /// model thinks, instead of on the action's path.
    public func reportImage(_ frame: Frame) -> @Sendable () throws -> (mediaType: String, data: Data) {
        let (target, encoding, last) = lock.withLock {
            (
                currentGeometry.screen == frame.size
                    ? currentGeometry.model : ScreenGeometry(screen: frame.size, sizing: currentSizing).model,
                currentEncoding, lastEncoded
            )
        }
        return {
            if let last, last.encoding == encoding, last.frame.hasSameBytes(as: frame),
                let data = Data(base64Encoded: last.shot.base64)
            {
                return (encoding.mediaType, data)
            }
            // Encoded as the screenshots are, byte for byte: the same screen is one stored image either way.
            return (encoding.mediaType, Data(try encoding.encode(try frame.downscaled(to: target))))
        }
    }

    /// Takes a snapshot of the screen with the run's refs, so refs stay stable across the run's tool calls.
    public func snapshot(area: Rect? = nil) throws -> Snapshot {
        try lock.withLock { try snapshotter.snapshot(area: area, refs: refs) }
    }

    /// A snapshot of the whole screen with the run's refs, and the frame it was read from.
    public func framedSnapshot() throws -> (snapshot: Snapshot, frame: Frame) {
        try lock.withLock { try snapshotter.framedSnapshot(refs: refs) }
    }
}
