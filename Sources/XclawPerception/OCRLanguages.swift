import Foundation
import XclawBase

/// The tesseract languages OCR reads with: `eng+deu+fra` reads "Héllo" and "ünïcödé" that English alone reads as
/// "Héllo" and "0 0". From `--lang`, else `XCLAW_OCR_LANG`, else `ocr_lang` in the config file, else the locale's
/// language and English.
public struct OCRLanguages: Sendable, Hashable, CustomStringConvertible {
    /// The tesseract codes, in order ("eng", "deu", "chi_sim").
    public let codes: [String]

    /// English alone.
    public static let english = OCRLanguages(validated: ["eng"])

    private init(validated codes: [String]) { self.codes = codes }

    /// Parses `eng+deu+fra`; a malformed list is a usage error (exit 2).
    public init(parsing text: String) throws {
        let codes = text.split(separator: "+", omittingEmptySubsequences: false).map(String.init)
        guard !codes.isEmpty,
            codes.allSatisfy({ code in
                (3...8).contains(code.count) && code.allSatisfy { ($0.isASCII && $0.isLowercase) || $0 == "_" }
            })
        else {
            throw PerceptionError.invalidArgument(
                "\"\(text)\" is not a list of tesseract languages: give codes joined by +, such as eng+deu+fra")
        }
        self.codes = codes
    }

    /// `eng+deu+fra`.
    public var description: String { codes.joined(separator: "+") }

    /// The languages to read with when a command names none: `XCLAW_OCR_LANG`, else `ocr_lang` in the config file,
    /// else the locale's (`fromLocale`).
    public static func configured(_ environment: [String: String] = Invocation.current.environment) throws
        -> OCRLanguages
    {
        if let value = environment["XCLAW_OCR_LANG"], !value.isEmpty { return try OCRLanguages(parsing: value) }
        if let value = ConfigValues.value("ocr_lang", environment: environment) {
            do { return try OCRLanguages(parsing: value) } catch {
                throw PerceptionError.invalidArgument("ocr_lang in \(ConfigValues.path(environment)): \(error)")
            }
        }
        return fromLocale(environment)
    }

    /// The language the user's locale names (`LC_ALL`, else `LC_MESSAGES`, else `LANG`: the language the desktop's
    /// apps speak), then English, which every desktop shows too ("de_DE.UTF-8" → `deu+eng`). English alone for the
    /// C locale, an English one, a language tesseract has no code for here, or one whose data is not installed: a
    /// default the user did not ask for must not fail a command (`--lang deu` does, naming the package).
    public static func fromLocale(_ environment: [String: String]) -> OCRLanguages {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        guard let locale, let code = tesseractCode(locale: locale), code != "eng" else { return .english }
        let languages = OCRLanguages(validated: [code, "eng"])
        return (try? languages.check(environment)) == nil ? .english : languages
    }

    /// The tesseract code of a POSIX locale's language ("pt_BR.UTF-8" → `por`, "zh_TW" → `chi_tra`), nil for C,
    /// POSIX and languages not listed.
    static func tesseractCode(locale: String) -> String? {
        let name = locale.split(separator: ".").first.map { $0.split(separator: "@").first ?? $0 } ?? ""
        let parts = name.split(separator: "_").map(String.init)
        guard let language = parts.first?.lowercased(), language != "c", language != "posix" else { return nil }
        if language == "zh" {
            let region = parts.count > 1 ? parts[1].uppercased() : "CN"
            return ["TW", "HK", "MO"].contains(region) ? "chi_tra" : "chi_sim"
        }
        return localeLanguages[language]
    }

    /// ISO 639-1 language codes as tesseract names them (its ISO 639-2/T files).
    private static let localeLanguages: [String: String] = [
        "en": "eng", "de": "deu", "fr": "fra", "es": "spa", "it": "ita", "pt": "por", "nl": "nld", "pl": "pol",
        "cs": "ces", "sk": "slk", "sl": "slv", "hu": "hun", "ro": "ron", "sv": "swe", "da": "dan", "nb": "nor",
        "nn": "nor", "no": "nor", "fi": "fin", "et": "est", "lv": "lav", "lt": "lit", "tr": "tur", "el": "ell",
        "ru": "rus", "uk": "ukr", "be": "bel", "bg": "bul", "sr": "srp", "hr": "hrv", "bs": "bos", "mk": "mkd",
        "ca": "cat", "eu": "eus", "gl": "glg", "ga": "gle", "cy": "cym", "is": "isl", "mt": "mlt", "sq": "sqi",
        "ja": "jpn", "ko": "kor", "ar": "ara", "he": "heb", "fa": "fas", "hi": "hin", "bn": "ben", "ta": "tam",
        "th": "tha", "vi": "vie", "id": "ind", "ms": "msa", "af": "afr", "sw": "swa", "eo": "epo", "la": "lat",
    ]

    /// Where tesseract's language files are: `TESSDATA_PREFIX` (or its `tessdata`), else the distribution's places.
    public static func dataDirectories(_ environment: [String: String] = Invocation.current.environment) -> [String] {
        if let prefix = environment["TESSDATA_PREFIX"], !prefix.isEmpty {
            return [prefix, (prefix as NSString).appendingPathComponent("tessdata")]
        }
        return [
            "/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata", "/usr/share/tessdata",
            "/usr/local/share/tessdata", "/usr/local/share/tesseract-ocr/tessdata",
        ]
    }

    /// Checks every language has its data file, before an engine tries to load it: a missing one names the Debian
    /// package that has it (`tesseract-ocr-deu`).
    public func check(_ environment: [String: String] = Invocation.current.environment) throws {
        let directories = Self.dataDirectories(environment)
        for code in codes {
            let present = directories.contains {
                FileManager.default.isReadableFile(
                    atPath: ($0 as NSString).appendingPathComponent("\(code).traineddata"))
            }
            if !present {
                throw PerceptionError.languageMissing(
                    code: code, package: "tesseract-ocr-" + code.replacingOccurrences(of: "_", with: "-"),
                    searched: directories)
            }
        }
    }

    /// Whether any language writes accents on Latin letters (anything but English alone): their marks are then
    /// checked against the pixels (`Diacritics`).
    var hasAccents: Bool { codes.contains { $0 != "eng" && $0 != "osd" } }

    /// Mixed into OCR cache keys: the same pixels read with other languages are another reading (English: 0, so
    /// caches saved before languages existed stay valid).
    var cacheSalt: UInt64 {
        guard self != .english else { return 0 }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in description.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}
