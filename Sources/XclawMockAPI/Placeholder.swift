/// Placeholder: the helper building the mock server replaces this file.
enum MockPlaceholder {}
