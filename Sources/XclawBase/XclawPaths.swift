import Foundation

/// Where xclaw finds its own files: the binaries built beside it. (The XDG and state-directory rules join this type.)
public enum XclawPaths {
    /// The directory of the running executable, through `/proc/self/exe`; a test bundle's products directory when
    /// the executable is `<products>/xclawPackageTests.xctest`, so tests find the binaries built beside them.
    public static let executableDirectory: URL = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
        if url.lastPathComponent.hasSuffix(".xctest") { url.deleteLastPathComponent() }
        return url
    }()

    /// The binary `name` beside the running executable, when it is there and executable.
    public static func sibling(_ name: String) -> String? {
        let path = executableDirectory.appendingPathComponent(name).path
        return access(path, X_OK) == 0 ? path : nil
    }
}
