import Foundation
import XCTest

@testable import XclawPerception

/// The OCR languages a command reads with when it names none: the locale's language, then English (issue 33 item
/// 5), never a language whose data is missing, and what the user set always first.
final class OCRLanguagesTests: XCTestCase {
    private var data: URL!

    override func setUpWithError() throws {
        // A tessdata directory of its own: which languages are installed is the test's to say.
        data = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-tessdata-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        for code in ["eng", "deu", "fra", "por", "chi_tra"] {
            try Data().write(to: data.appendingPathComponent("\(code).traineddata"))
        }
    }

    override func tearDown() { try? FileManager.default.removeItem(at: data) }

    private func languages(_ variables: [String: String]) throws -> String {
        let environment = variables.merging(["TESSDATA_PREFIX": data.path, "XDG_CONFIG_HOME": data.path]) { $1 }
        return try OCRLanguages.configured(environment).description
    }

    func testTheLocaleNamesTheLanguageThenEnglish() throws {
        XCTAssertEqual(try languages(["LANG": "de_DE.UTF-8"]), "deu+eng")
        XCTAssertEqual(try languages(["LANG": "pt_BR.UTF-8"]), "por+eng")
        XCTAssertEqual(try languages(["LANG": "fr_FR@euro"]), "fra+eng")
        XCTAssertEqual(try languages(["LANG": "zh_TW.UTF-8"]), "chi_tra+eng")
        // LC_ALL, then LC_MESSAGES (the language apps speak), then LANG.
        XCTAssertEqual(try languages(["LANG": "en_US.UTF-8", "LC_ALL": "fr_FR.UTF-8"]), "fra+eng")
        XCTAssertEqual(try languages(["LANG": "en_US.UTF-8", "LC_MESSAGES": "de_AT.UTF-8"]), "deu+eng")
        XCTAssertEqual(try languages(["LANG": "de_DE.UTF-8", "LC_ALL": ""]), "deu+eng", "an empty one is unset")
    }

    func testEnglishWhereTheLocaleSaysNothingElseOrItsDataIsMissing() throws {
        for locale in ["C", "POSIX", "C.UTF-8", "en_GB.UTF-8", "", "xx_YY"] {
            XCTAssertEqual(try languages(["LANG": locale]), "eng", locale)
        }
        XCTAssertEqual(try languages([:]), "eng")
        // Spanish is not installed here: the default falls back to English, not to an error.
        XCTAssertEqual(try languages(["LANG": "es_ES.UTF-8"]), "eng")
        XCTAssertEqual(try languages(["LANG": "zh_CN.UTF-8"]), "eng", "chi_sim is not installed")
    }

    func testWhatTheUserSetComesBeforeTheLocale() throws {
        XCTAssertEqual(try languages(["LANG": "de_DE.UTF-8", "XCLAW_OCR_LANG": "eng+fra"]), "eng+fra")
        let config = data.appendingPathComponent("xclaw")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try Data("ocr_lang = eng\n".utf8).write(to: config.appendingPathComponent("config"))
        XCTAssertEqual(try languages(["LANG": "de_DE.UTF-8"]), "eng")
    }
}
