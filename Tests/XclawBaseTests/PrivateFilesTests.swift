import Foundation
import XCTest
import XclawBase

/// Private files and the state directory: mode 0600, no symlink followed, a planted directory refused.
final class PrivateFilesTests: XCTestCase {
    private var root: URL!

    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-private-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: root) }

    private func mode(_ path: String) throws -> Int {
        try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    func testWritesAreMode0600AndReplaceASymlinkInsteadOfFollowingIt() throws {
        let path = root.appendingPathComponent("export.md").path
        try PrivateFiles.write(Data("secret screen text".utf8), to: path)
        XCTAssertEqual(try mode(path), 0o600)
        XCTAssertEqual(try PrivateFiles.read(path), Data("secret screen text".utf8))
        // A symlink planted where the file goes: the write replaces the link, the target is untouched.
        let target = root.appendingPathComponent("target").path
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: target))
        let link = root.appendingPathComponent("cache.bin").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        XCTAssertThrowsError(try PrivateFiles.read(link)) { XCTAssertTrue("\($0)".contains("symlink"), "\($0)") }
        try PrivateFiles.write(Data("mine".utf8), to: link)
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "theirs")
        XCTAssertEqual(try PrivateFiles.read(link), Data("mine".utf8))
        XCTAssertNil(try PrivateFiles.read(root.appendingPathComponent("missing").path))
        // Nothing is left behind: no temporary files.
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: root.path).sorted(),
            ["cache.bin", "export.md", "target"])
    }

    func testAPlantedStateDirectoryIsRefused() throws {
        let made = root.appendingPathComponent("made/deep")
        XCTAssertNoThrow(try PrivateFiles.directory(made))
        XCTAssertEqual(try mode(made.path), 0o700)
        let open = root.appendingPathComponent("xclaw-open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: false)
        chmod(open.path, 0o777)
        XCTAssertThrowsError(try PrivateFiles.directory(open)) { error in
            XCTAssertTrue("\(error)".contains("others can write into it (mode 777)"), "\(error)")
            XCTAssertEqual((error as? ClassifiedError)?.exitStatus, .usage)
        }
        let link = root.appendingPathComponent("xclaw-link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: made.path)
        XCTAssertThrowsError(try PrivateFiles.directory(link)) { XCTAssertTrue("\($0)".contains("symlink"), "\($0)") }
    }
}
