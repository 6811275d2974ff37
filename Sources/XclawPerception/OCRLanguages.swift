import Foundation
import XclawBase

/// The tesseract languages OCR reads with: `eng` by default; `eng+deu+fra` reads "Héllo" and "ünïcödé" that English
/// alone reads as "Héllo" and "0 0". From `--lang`, else `XCLAW_OCR_LANG`, else `ocr_lang` in the config file.
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
    /// else English.
    public static func configured(_ environment: [String: String] = Invocation.current.environment) throws
        -> OCRLanguages
    {
        if let value = environment["XCLAW_OCR_LANG"], !value.isEmpty { return try OCRLanguages(parsing: value) }
        if let value = ConfigValues.value("ocr_lang", environment: environment) {
            do { return try OCRLanguages(parsing: value) } catch {
                throw PerceptionError.invalidArgument("ocr_lang in \(ConfigValues.path(environment)): \(error)")
            }
        }
        return .english
    }

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
