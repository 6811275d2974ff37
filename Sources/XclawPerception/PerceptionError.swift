import XclawBase
import XclawScreen

/// Why a perception call failed, with what the user can do about it.
public enum PerceptionError: Error, CustomStringConvertible, Equatable, ClassifiedError {
    /// Tesseract could not load its English model.
    case tessdataMissing(String)
    /// An OCR language's data file is not installed.
    case languageMissing(code: String, package: String, searched: [String])
    /// Tesseract failed on an image it was given.
    case recognitionFailed(String)
    /// A label matched nothing on screen.
    case notFound(label: String, closest: [String])
    /// Several elements match equally and nothing tells them apart.
    case ambiguous(label: String, candidates: [String])
    /// The best match is a guess (look-alike, case, low confidence, fuzzy) and another control could be the one meant.
    case uncertain(label: String, reason: String, candidates: [String])
    /// A ref from an earlier snapshot is no longer on screen.
    case staleRef(String)
    /// A watch condition did not hold before its timeout.
    case timedOut(condition: String, lastObserved: String)
    /// An argument is malformed.
    case invalidArgument(String)
    /// The element is hidden behind a higher window, so a click would land on that window.
    case covered(String)

    public var description: String {
        switch self {
        case .tessdataMissing(let detail):
            return "tesseract could not load its English data (\(detail)); install it with "
                + "scripts/install-deps.sh (or `apt-get install tesseract-ocr-eng`), or set TESSDATA_PREFIX"
        case .languageMissing(let code, let package, let searched):
            return "the OCR language \"\(code)\" is not installed (no \(code).traineddata in "
                + searched.joined(separator: ", ") + "); install it with `apt-get install \(package)`, or drop it "
                + "from --lang / XCLAW_OCR_LANG / ocr_lang"
        case .recognitionFailed(let detail): return "OCR failed: \(detail)"
        case .notFound(let label, let closest):
            let hint = closest.isEmpty ? "no similar text is on screen" : "closest: " + closest.joined(separator: ", ")
            return "nothing on screen matches \"\(label)\" (\(hint)); check the spelling, widen --window, or run "
                + "`xclaw ocr` to see what is readable"
        case .ambiguous(let label, let candidates):
            return "\"\(label)\" matches \(candidates.count) elements equally; pick one with --nth N, --near LABEL, "
                + "--window or --role, or tap a ref:\n  " + candidates.joined(separator: "\n  ")
        case .uncertain(let label, let reason, let candidates):
            return "not clicking \"\(label)\": \(reason); check with `xclaw find`, then tap a ref, or pick with "
                + "--nth, --near, --role or --window:\n  " + candidates.joined(separator: "\n  ")
        case .staleRef(let ref):
            return "\(ref) is not on screen any more; run `xclaw snapshot` again and use a current ref"
        case .timedOut(let condition, let last):
            return "timed out waiting for \(condition); last observed: \(last)"
        case .invalidArgument(let message): return message
        case .covered(let what):
            return "\(what) is covered by a higher window, so a click would land there; raise its window "
                + "(`xclaw activate`) or press it through its toolkit with --action"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        // A language that is not installed is the machine's lack, like missing tessdata, not a usage error: the
        // command was right and works once the package is there.
        case .tessdataMissing, .recognitionFailed, .languageMissing: return .internal
        case .notFound, .ambiguous, .uncertain, .staleRef, .timedOut, .covered: return .notFound
        case .invalidArgument: return .usage
        }
    }
}
