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

extension JSONDecoder {
    /// The decoder for records xclaw keeps (display records, recorded steps, replay logs, scripts), which older
    /// versions wrote with camelCase keys: such a key is read as its snake_case spelling (`JSONKeys.snakeCase`), so
    /// old and new records both decode. A dictionary's keys are data, and stay as they are.
    public static var xclawRecords: JSONDecoder {
        let decoder = JSONDecoder.xclaw
        decoder.keyDecodingStrategy = .custom { path in
            JSONKeys.Key(JSONKeys.snakeCase(path.last?.stringValue ?? ""))
        }
        return decoder
    }
}

/// The one spelling of JSON keys xclaw writes: snake_case, as the Anthropic API, `runs --json` and the daemon do.
public enum JSONKeys {
    /// `windowID` → `window_id`, `a11yAddress` → `a11y_address`; a snake_case key stays as it is.
    public static func snakeCase(_ key: String) -> String {
        let characters = Array(key)
        var out = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) { out += "_" }
            }
            out += character.lowercased()
        }
        return out
    }

    /// A key by its name, for decoding strategies.
    public struct Key: CodingKey {
        /// The name.
        public var stringValue: String
        /// Keys here are names, never indexes.
        public var intValue: Int? { nil }
        /// A key named `name`.
        public init(_ name: String) { stringValue = name }
        /// A key named `stringValue`.
        public init(stringValue: String) { self.stringValue = stringValue }
        /// Keys here are names, never indexes.
        public init?(intValue: Int) { nil }
    }
}
