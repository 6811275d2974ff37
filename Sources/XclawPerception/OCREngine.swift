import CTesseract
import Foundation
import XclawBase
import XclawScreen

/// A word tesseract read, in the coordinates of the image it was given.
struct RawWord: Sendable {
    var text: String
    var box: Rect
    var confidence: Double
    /// Counts lines within one recognition; words of one line share it.
    var line: Int
}

/// How tesseract should segment an image.
enum SegmentationMode: Sendable {
    /// One line of text (`PSM_SINGLE_LINE`): no layout analysis at all.
    case singleLine
    /// One block of lines of similar size (`PSM_SINGLE_BLOCK`).
    case block
    /// Text anywhere, in any order (`PSM_SPARSE_TEXT`): finds lone labels and buttons.
    case sparse

    var tesseract: TessPageSegMode {
        switch self {
        case .singleLine: return PSM_SINGLE_LINE
        case .block: return PSM_SINGLE_BLOCK
        case .sparse: return PSM_SPARSE_TEXT
        }
    }
}

/// One tesseract instance (`TessBaseAPI`). Initialising costs ~50 ms, so engines are created once and reused; an
/// instance is not thread-safe, so each is used by one thread at a time (the lock makes misuse safe, not fast).
/// Safe because the tesseract handle is used only under `lock`, so one thread at a time.
final class OCREngine: @unchecked Sendable {
    private let api: OpaquePointer
    private let lock = NSLock()

    /// Loads the models of `languages` (`TessBaseAPIInit3`) from `TESSDATA_PREFIX` or tesseract's built-in path.
    init(languages: OCRLanguages = .english) throws {
        OpenMP.limitThreads()
        guard let api = TessBaseAPICreate() else { throw PerceptionError.recognitionFailed("TessBaseAPICreate failed") }
        // Tesseract prints warnings such as "Estimating resolution" to stderr; they are noise for our users.
        TessBaseAPISetVariable(api, "debug_file", "/dev/null")
        let datapath = Invocation.current.environment["TESSDATA_PREFIX"]
        let language = languages.description
        let status = datapath.map { TessBaseAPIInit3(api, $0, language) } ?? TessBaseAPIInit3(api, nil, language)
        guard status == 0 else {
            TessBaseAPIDelete(api)
            try languages.check()  // names the package of a missing language
            throw PerceptionError.tessdataMissing(
                datapath.map { "TESSDATA_PREFIX=\($0)" } ?? "\(language) traineddata")
        }
        // We decide inversion per block ourselves; tesseract's own retry of inverted text doubles the cost.
        TessBaseAPISetVariable(api, "tessedit_do_invert", "0")
        self.api = api
    }

    deinit {
        TessBaseAPIEnd(api)
        TessBaseAPIDelete(api)
    }

    /// Recognises an 8-bit gray image (`SetImage` + `Recognize`) and returns its words with boxes and confidence.
    func recognize(gray: [UInt8], width: Int, height: Int, mode: SegmentationMode) throws -> [RawWord] {
        precondition(gray.count >= width * height, "gray buffer smaller than its size")
        lock.lock()
        defer { lock.unlock() }
        OpenMP.limitThreads()
        TessBaseAPISetPageSegMode(api, mode.tesseract)
        gray.withUnsafeBufferPointer {
            TessBaseAPISetImage(api, $0.baseAddress, Int32(width), Int32(height), 1, Int32(width))
        }
        defer { TessBaseAPIClear(api) }
        guard TessBaseAPIRecognize(api, nil) == 0 else {
            throw PerceptionError.recognitionFailed("tesseract could not recognise a \(width)x\(height) image")
        }
        guard let iterator = TessBaseAPIGetIterator(api) else { return [] }
        defer { TessResultIteratorDelete(iterator) }
        let page = TessResultIteratorGetPageIterator(iterator)
        var words: [RawWord] = []
        var line = -1
        repeat {
            if TessPageIteratorIsAtBeginningOf(page, RIL_TEXTLINE) != 0 { line += 1 }
            guard let cText = TessResultIteratorGetUTF8Text(iterator, RIL_WORD) else { continue }
            let text = String(cString: cText)
            TessDeleteText(cText)
            var left: Int32 = 0, top: Int32 = 0, right: Int32 = 0, bottom: Int32 = 0
            guard TessPageIteratorBoundingBox(page, RIL_WORD, &left, &top, &right, &bottom) != 0 else { continue }
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty else { continue }
            words.append(
                RawWord(
                    text: trimmed,
                    box: Rect(x: Int(left), y: Int(top), width: Int(right - left), height: Int(bottom - top)),
                    // Hundredths: what the cache file keeps, so cached and fresh readings are equal.
                    confidence: (Double(TessResultIteratorConfidence(iterator, RIL_WORD)) * 100).rounded() / 100,
                    line: max(line, 0)))
        } while TessResultIteratorNext(iterator, RIL_WORD) != 0
        return words
    }
}

/// Keeps tesseract's OpenMP from oversubscribing the cores: at default settings a 1080p page took 4.4 s instead of
/// 0.5 s on 2 cores, and with one engine per core its own threads only get in the way. `OMP_THREAD_LIMIT` is read
/// when libgomp loads, before `main`, so setting it is too late, and `omp_set_dynamic`/`omp_set_num_threads` are per
/// thread and overridden by tesseract's `num_threads` clauses. With `omp_set_max_active_levels(0)` every
/// parallel region then runs on the thread that reaches it. Found at run time: tesseract may be built without OpenMP.
enum OpenMP {
    private typealias SetLevels = @convention(c) (Int32) -> Void
    private static let setMaxActiveLevels: SetLevels? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "omp_set_max_active_levels") else {
            return nil
        }
        return unsafeBitCast(symbol, to: SetLevels.self)
    }()

    /// Applies the limit to the calling thread (the ICV is per thread since OpenMP 5.0); cheap, so call it per use.
    static func limitThreads() { setMaxActiveLevels?(0) }
}
