import Foundation

extension JSONEncoder {
    /// The encoder every xclaw JSON output and record uses: sorted keys, ISO-8601 dates.
    public static var xclaw: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}

extension JSONDecoder {
    /// The decoder matching `JSONEncoder.xclaw`.
    public static var xclaw: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
