import Foundation
import XCTest
import XclawScreen
import XclawTesting

/// OCR languages through the `xclaw` binary, on a real xterm showing accented text.
final class LanguageCLITests: XCTestCase {
    func testLatinLanguagesReadAccentsExactlyAndAMissingOneNamesItsPackage() throws {
        let display = try TestDisplay(size: Size(width: 1280, height: 800))
        defer { display.stop() }
        let text = "Héllo from xclaw — ünïcödé"
        let xterm = Process()
        xterm.executableURL = URL(fileURLWithPath: "/usr/bin/xterm")
        xterm.arguments = [
            "-geometry", "90x10+40+40", "-fa", "DejaVu Sans Mono", "-fs", "13", "-title", "accents", "-e", "sh", "-c",
            "printf '%s\\n' '\(text)' 'Zoë Müller' 'ÜNÏCÖDÉ € wörld ✓' 'Keys: v or V or y' 'Año não São Paulo'; sleep 60",
        ]
        xterm.environment = ProcessInfo.processInfo.environment.merging(
            ["DISPLAY": display.name, "LC_ALL": "C.UTF-8"]) { $1 }
        try xterm.run()
        defer { xterm.terminate() }
        let d = ["--display", display.name]
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-lang-\(getpid())")
        defer { try? FileManager.default.removeItem(at: state) }
        let env = ["XCLAW_STATE_DIR": state.path]
        // Started at once, while xterm's window may still be 1×1 at 0,0: the watch follows it to its place.
        let watched = try runCLI(
            ["watch", "--text", "xclaw", "--window", "accents", "--timeout", "15"] + d, environment: env)
        XCTAssertEqual(watched.status, 0, watched.stderr)
        let latin = try runCLI(["ocr", "--lang", "eng+deu+fra", "--window", "accents"] + d, environment: env)
        XCTAssertEqual(latin.status, 0, latin.stderr)
        let first = String(decoding: latin.stdout, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        XCTAssertTrue(first.contains("Héllo from xclaw"), first)
        XCTAssertTrue(first.contains("ünïcödé"), first)
        // With nothing set, the locale's language and English (LANG=de_DE.UTF-8: deu+eng) read the marks exactly.
        // Tesseract alone read "Zo&" (the "ë" a symbol: the accented letters the ink's two dots allow beat it),
        // "ÜNÏCÖDE" then "ÜNÏCÖDË" (a 3-pixel acute matched "Ë" better in the fonts: the stroke's lean rules the
        // dots out) and "✓" as "v" (a lone glyph read as a letter a check mark resembles is compared with both).
        let local = try runCLI(
            ["ocr", "--window", "accents"] + d,
            environment: env.merging(["LANG": "de_DE.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""]) { $1 })
        XCTAssertEqual(local.status, 0, local.stderr)
        let localText = String(decoding: local.stdout, as: UTF8.self)
        XCTAssertTrue(localText.contains("ünïcödé"), localText)
        XCTAssertTrue(localText.contains("Zoë Müller"), localText)
        XCTAssertTrue(localText.contains("ÜNÏCÖDÉ € wörld ✓"), localText)
        // The default comes from XCLAW_OCR_LANG, then the config file's ocr_lang; English alone loses the marks.
        let configured = try runCLI(
            ["ocr", "--window", "accents"] + d, environment: env.merging(["XCLAW_OCR_LANG": "eng+deu+fra"]) { $1 })
        let configuredText = String(decoding: configured.stdout, as: UTF8.self)
        XCTAssertTrue(configuredText.contains("ünïcödé"), configuredText)
        // Real letters stay letters: a lone "v", "V" or "y" ("Keys: v or V or y") is not a check mark. (How
        // tesseract splits that line varies with the lines around it, so the check is that only one "✓" is read.)
        XCTAssertEqual(configuredText.filter { $0 == "✓" }.count, 1, configuredText)
        XCTAssertTrue(configuredText.contains("ÜNÏCÖDÉ € wörld ✓"), configuredText)
        // A tilde is a wide, flat mark: no lean says "acute" of it, and Spanish and Portuguese keep theirs.
        let iberian = try runCLI(["ocr", "--lang", "spa+por+eng", "--window", "accents"] + d, environment: env)
        XCTAssertTrue(iberian.text.contains("Año não São Paulo"), iberian.text)
        // A check mark reads as one in English alone too (the accents there are English's guesses).
        let english = try runCLI(["ocr", "--lang", "eng", "--window", "accents"] + d, environment: env)
        XCTAssertTrue(english.text.contains("€ world ✓"), english.text)
        XCTAssertEqual(english.text.filter { $0 == "✓" }.count, 1, english.text)
        let config = state.appendingPathComponent("config-home")
        try FileManager.default.createDirectory(
            at: config.appendingPathComponent("xclaw"), withIntermediateDirectories: true)
        try Data("# test\nocr_lang = eng+deu+fra\n".utf8).write(to: config.appendingPathComponent("xclaw/config"))
        let fromFile = try runCLI(
            ["find", "ünïcödé", "--window", "accents"] + d,
            environment: env.merging(["XDG_CONFIG_HOME": config.path]) { $1 })
        XCTAssertEqual(fromFile.status, 0, fromFile.stderr)
        // A language that is not installed names its package and exits 5 (the machine lacks it: the command is
        // right); a malformed list is a usage error, exit 2.
        let missing = try runCLI(["ocr", "--lang", "eng+zzz"] + d, environment: env)
        XCTAssertEqual(missing.status, 5, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("apt-get install tesseract-ocr-zzz"), missing.stderr)
        let malformed = try runCLI(["snapshot", "--lang", "English!"] + d, environment: env)
        XCTAssertEqual(malformed.status, 2)
        XCTAssertTrue(malformed.stderr.contains("eng+deu+fra"), malformed.stderr)
    }
}

/// A terminal in X's bitmap font reads accents and symbols exactly in any language: its glyphs are looked up in the
/// font itself.
final class BitmapFontCLITests: XCTestCase {
    func testAnXtermInMiscFixedReadsAccentsSymbolsAndCapitalsExactly() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 600))
        defer { display.stop() }
        let lines = ["Zoë Müller", "ÜNÏCÖDÉ € wörld ✓", "Move Name Window"]
        let xterm = Process()
        xterm.executableURL = URL(fileURLWithPath: "/usr/bin/xterm")
        xterm.arguments = [
            "-geometry", "60x6+40+40", "-fn", "-misc-fixed-medium-r-semicondensed--13-120-75-75-c-60-iso10646-1",
            "-title", "bitmap", "-e", "sh", "-c",
            "printf '%s\\n' " + lines.map { "'\($0)'" }.joined(separator: " ") + "; sleep 60",
        ]
        xterm.environment = ProcessInfo.processInfo.environment.merging(
            ["DISPLAY": display.name, "LC_ALL": "C.UTF-8"]) { $1 }
        try xterm.run()
        defer { xterm.terminate() }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bitmap-\(getpid())")
        defer { try? FileManager.default.removeItem(at: state) }
        let env = ["XCLAW_STATE_DIR": state.path]
        let d = ["--display", display.name]
        let watched = try runCLI(
            ["watch", "--text", "Window", "--window", "bitmap", "--timeout", "15"] + d, environment: env)
        XCTAssertEqual(watched.status, 0, watched.stderr)
        // Read by tesseract alone, English gave "Zoé Miller" and "UNICODE € world ¥" (the very misreads), and
        // deu+eng "wörld ¥".
        for languages in ["eng", "deu+eng"] {
            let read = try runCLI(["ocr", "--lang", languages, "--window", "bitmap"] + d, environment: env)
            XCTAssertEqual(read.status, 0, read.stderr)
            let text = String(decoding: read.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
            XCTAssertEqual(Array(text.prefix(3)), lines, languages)
        }
    }
}
