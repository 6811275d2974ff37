import CX11
import CXclawShim
import CXext
import Foundation
import Logging
import XclawBase

/// How pixels are read from the server.
public enum CaptureMethod: String, Sendable, CaseIterable, Codable {
    /// MIT-SHM when the server offers it and shares memory with us, else XGetImage.
    case auto
    /// `XShmGetImage` into one reused shared-memory segment: the server writes straight into our memory.
    case shm
    /// `XGetImage`: the pixels travel over the socket. Works on remote displays.
    case getImage = "getimage"
}

/// Reads pixels from the root window. Keeps one shared-memory segment sized for the whole screen and reuses it for
/// every capture, full or partial; falls back to `XGetImage` when MIT-SHM is missing (remote display) or refused.
/// Safe because the shared segment and the method are read and changed only under `lock`.
public final class ScreenCapturer: @unchecked Sendable {
    /// The connection captures go through.
    public let connection: DisplayConnection
    /// The method in use: `.shm` or `.getImage`, never `.auto`.
    public private(set) var method: CaptureMethod
    private var segment: SharedSegment?
    private let lock = NSLock()
    private let logger = Logger(label: "xclaw.capture")

    /// Prepares capture. `.shm` fails when the server cannot share memory; `.auto` falls back quietly.
    public init(connection: DisplayConnection, method: CaptureMethod = .auto) throws {
        self.connection = connection
        self.method = method == .getImage ? .getImage : .shm
        // The size asked for the segment also seeds the capture loop's view of the screen.
        screenSeen = try connection.screenRect()
        screenCheckedAt = .now
        if self.method == .shm {
            do {
                segment = try SharedSegment(connection: connection, size: screenSeen.size)
            } catch let error as ScreenError {
                if method == .shm { throw error }
                logger.debug("MIT-SHM unavailable (\(error)); capturing with XGetImage")
                self.method = .getImage
            }
        }
    }

    /// Captures the whole screen or one region of it (root coordinates). The region must lie on the screen.
    /// A long-lived capturer follows RandR resizes: the screen size is asked again when a region does not fit, when
    /// a read fails, and at least every 250 ms (a round trip on every frame would cost more than the capture).
    public func capture(_ region: Rect? = nil) throws -> Frame {
        lock.lock()
        defer { lock.unlock() }
        var screen = try knownScreen(refresh: false)
        let area0 = region ?? screen
        guard !area0.isEmpty else { throw ScreenError.invalidRegion("\(area0) is empty") }
        if !screen.contains(area0) { screen = try knownScreen(refresh: true) }
        let area = region ?? screen
        guard screen.contains(area) else {
            throw ScreenError.invalidRegion("\(area) is not inside the \(screen.size) screen")
        }
        do {
            return try read(area, screen: screen.size)
        } catch let error as ScreenError where method == .shm {
            // The screen may have shrunk under us: read the size once more before giving up.
            let fresh = try knownScreen(refresh: true)
            guard fresh != screen, fresh.contains(area) else { throw error }
            return try read(region ?? fresh, screen: fresh.size)
        }
    }

    private var screenCheckedAt: ContinuousClock.Instant?
    private var screenSeen = Rect(x: 0, y: 0, width: 0, height: 0)

    private func knownScreen(refresh: Bool) throws -> Rect {
        let now = ContinuousClock.now
        if refresh || screenCheckedAt.map({ now - $0 > .milliseconds(250) }) ?? true {
            screenSeen = try connection.screenRect()
            screenCheckedAt = now
        }
        return screenSeen
    }

    /// Captures the on-screen pixels of a window (what a person sees there, overlapping windows included),
    /// clipped to the screen.
    public func capture(window: WindowInfo) throws -> Frame { try capture(try visibleArea(of: window)) }

    /// The part of a window that lies on the screen; `invalidRegion` when none does.
    public func visibleArea(of window: WindowInfo) throws -> Rect {
        let visible = window.frame.intersection(try connection.screenRect())
        guard !visible.isEmpty else { throw ScreenError.invalidRegion("window \(window.hexID) is entirely off screen") }
        return visible
    }

    private func read(_ area: Rect, screen: Size) throws -> Frame {
        if method == .shm {
            if segment?.size != screen {
                segment = nil  // detach the old one first
                segment = try SharedSegment(connection: connection, size: screen)
            }
            if let segment { return try segment.read(area) }
        }
        return try connection.trapped { display -> Frame in
            guard
                let image = XGetImage(
                    display, connection.root, Int32(area.x), Int32(area.y),
                    UInt32(area.width), UInt32(area.height), UInt.max, ZPixmap)
            else {
                try connection.checkAlive()
                throw ScreenError.invalidRegion("the server returned no image for \(area)")
            }
            defer { XDestroyImage(image) }
            return try Self.frame(from: image, width: area.width, height: area.height)
        }
    }

    /// Copies an XImage's pixels into an owned frame, converting any TrueColor layout to BGRX.
    static func frame(from image: UnsafeMutablePointer<XImage>, width: Int, height: Int) throws -> Frame {
        let img = image.pointee
        guard let data = img.data else { throw ScreenError.image("the server returned an image without pixels") }
        return try Frame(width: width, height: height) { dst in
            let rc = data.withMemoryRebound(to: UInt8.self, capacity: Int(img.bytes_per_line) * height) { src in
                xclaw_ximage_to_bgrx(
                    src, Int32(width), Int32(height), img.bytes_per_line, img.bits_per_pixel,
                    img.byte_order == MSBFirst ? 1 : 0, img.red_mask, img.green_mask, img.blue_mask,
                    dst)
            }
            guard rc == 0 else {
                throw ScreenError.unsupportedPixelFormat(
                    "\(img.bits_per_pixel) bits per pixel, depth \(img.depth), masks "
                        + "\(String(img.red_mask, radix: 16))/\(String(img.green_mask, radix: 16))/"
                        + "\(String(img.blue_mask, radix: 16))")
            }
        }
    }
}

/// One MIT-SHM segment attached to the server (`shmget`/`shmat`/`XShmAttach`), sized for the full screen.
/// The `XShmSegmentInfo` lives on the heap because Xlib keeps a pointer to it.
private final class SharedSegment {
    /// The last full screen read, when its bytes are the segment's layout.
    private var last: Frame?
    let size: Size
    private let connection: DisplayConnection
    private let info: UnsafeMutablePointer<XShmSegmentInfo>
    private let image: UnsafeMutablePointer<XImage>

    /// Creates and attaches the segment. Every C resource stays in a local until all steps have succeeded, so a
    /// failure releases exactly what was made and the object (whose `deinit` releases the rest) never half-exists.
    init(connection: DisplayConnection, size: Size) throws {
        let display = connection.handle
        guard XShmQueryExtension(display) != 0 else { throw ScreenError.extensionMissing("MIT-SHM") }
        let info = UnsafeMutablePointer<XShmSegmentInfo>.allocate(capacity: 1)
        info.initialize(to: XShmSegmentInfo())
        let visual = XDefaultVisual(display, connection.screenNumber)
        let depth = UInt32(XDefaultDepth(display, connection.screenNumber))
        guard
            let image = XShmCreateImage(
                display, visual, depth, ZPixmap, nil, info,
                UInt32(size.width), UInt32(size.height))
        else {
            info.deallocate()
            throw ScreenError.extensionMissing("MIT-SHM (XShmCreateImage failed)")
        }
        func discard(segment id: Int32?) {
            if let id {
                shmdt(info.pointee.shmaddr)
                shmctl(id, IPC_RMID, nil)
            }
            image.pointee.data = nil
            XDestroyImage(image)
            info.deallocate()
        }
        let bytes = Int(image.pointee.bytes_per_line) * Int(image.pointee.height)
        let id = shmget(0 /* IPC_PRIVATE */, bytes, IPC_CREAT | 0o600)
        guard id >= 0 else {
            let why = Errno.current.description
            discard(segment: nil)
            throw ScreenError.extensionMissing("MIT-SHM (shmget: \(why))")
        }
        guard let address = shmat(id, nil, 0), address != UnsafeMutableRawPointer(bitPattern: -1) else {
            let why = Errno.current.description
            shmctl(id, IPC_RMID, nil)
            discard(segment: nil)
            throw ScreenError.extensionMissing("MIT-SHM (shmat: \(why))")
        }
        info.pointee.shmid = id
        info.pointee.shmaddr = address.assumingMemoryBound(to: CChar.self)
        info.pointee.readOnly = 0
        image.pointee.data = info.pointee.shmaddr
        do {
            // A server that cannot see our memory (another machine, another IPC namespace) answers BadAccess here.
            try connection.trapped { display in _ = XShmAttach(display, info) }
        } catch {
            discard(segment: id)
            throw ScreenError.extensionMissing("MIT-SHM (the server cannot attach our segment: \(error))")
        }
        // Marked for removal now that both sides are attached: the kernel frees it even if we crash.
        shmctl(id, IPC_RMID, nil)
        self.connection = connection
        self.size = size
        self.info = info
        self.image = image
    }

    /// Reads `area` (inside the screen) through the segment and copies it out. A full screen the same as the last
    /// one read comes back as that frame, its storage shared: one compare instead of a copy into 8 fresh MB (at
    /// 1080p), and a reader that compares frames finds them identical at once.
    func read(_ area: Rect) throws -> Frame {
        if area == Rect(size: size) {
            try getImage(image, at: area)
            let img = image.pointee
            let plain =
                img.bits_per_pixel == 32 && img.byte_order == LSBFirst && img.red_mask == 0xff0000
                && img.green_mask == 0xff00 && img.blue_mask == 0xff && Int(img.bytes_per_line) == area.width * 4
            if plain, let last, let data = img.data, last.hasSameBytes(as: UnsafeRawPointer(data)) { return last }
            let frame = try ScreenCapturer.frame(from: image, width: area.width, height: area.height)
            last = plain ? frame : nil
            return frame
        }
        // A region reuses the same segment behind a second image header of the region's size.
        guard
            let sub = XShmCreateImage(
                connection.handle, XDefaultVisual(connection.handle, connection.screenNumber),
                UInt32(image.pointee.depth), ZPixmap, nil, info,
                UInt32(area.width), UInt32(area.height))
        else {
            throw ScreenError.image("XShmCreateImage failed for \(area)")
        }
        sub.pointee.data = info.pointee.shmaddr
        defer { sub.pointee.data = nil; XDestroyImage(sub) }
        try getImage(sub, at: area)
        return try ScreenCapturer.frame(from: sub, width: area.width, height: area.height)
    }

    private func getImage(_ target: UnsafeMutablePointer<XImage>, at area: Rect) throws {
        try connection.checkAlive()
        let ok = XShmGetImage(connection.handle, connection.root, target, Int32(area.x), Int32(area.y), UInt.max)
        try connection.checkAlive()
        if ok == 0 { throw ScreenError.extensionMissing("MIT-SHM (the server refused XShmGetImage of \(area))") }
    }

    deinit {
        if connection.isAlive {
            XShmDetach(connection.handle, info)
            XSync(connection.handle, 0)
        }
        shmdt(info.pointee.shmaddr)
        image.pointee.data = nil
        XDestroyImage(image)
        info.deallocate()
    }

}
