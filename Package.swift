// swift-tools-version:6.0
// xclaw: desktop automation for Linux/X11. Layers, bottom to top: C bindings → screen → (perception, agent) → CLI.
import PackageDescription

/// A system-library module over a Debian `-dev` package, found through pkg-config.
func systemLibrary(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, path: "Sources/CBindings/\(name)", pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
    name: "xclaw",
    products: [
        .executable(name: "xclaw", targets: ["xclaw"]),
        .library(name: "XclawScreen", targets: ["XclawScreen"]),
        .library(name: "XclawPerception", targets: ["XclawPerception"]),
        .library(name: "XclawAgent", targets: ["XclawAgent"]),
        .library(name: "XclawSkills", targets: ["XclawSkills"]),
        .library(name: "XclawStore", targets: ["XclawStore"]),
        .library(name: "XclawRuntime", targets: ["XclawRuntime"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
    ],
    targets: [
        // Layer 1: C bindings. All C unsafety lives here and in the thin Swift wrappers right above.
        systemLibrary("CX11", pkgConfig: "x11", apt: ["libx11-dev"]),
        systemLibrary("CXTest", pkgConfig: "xtst", apt: ["libxtst-dev"]),
        systemLibrary("CXext", pkgConfig: "xext", apt: ["libxext-dev"]),
        systemLibrary("CXRandR", pkgConfig: "xrandr", apt: ["libxrandr-dev"]),
        systemLibrary("CPNG", pkgConfig: "libpng", apt: ["libpng-dev"]),
        // For the perception and agent layers (OCR, the Claude client); SQLite comes through GRDB.
        systemLibrary("CTesseract", pkgConfig: "tesseract", apt: ["libtesseract-dev", "tesseract-ocr-eng"]),
        systemLibrary("CCurl", pkgConfig: "libcurl", apt: ["libcurl4-openssl-dev"]),
        // GDBus and AT-SPI2's tables, for the accessibility reader (which runs in its own process, xclaw-atspi).
        systemLibrary("CAtspi", pkgConfig: "atspi-2", apt: ["libatspi2.0-dev", "libglib2.0-dev"]),
        // C kernels that must be fast even in debug builds (pixel conversion, scaling, PNG with setjmp),
        // and shims for variadic Xlib calls Swift cannot import (XCreateIC).
        .target(
            name: "CXclawShim",
            dependencies: ["CX11", "CPNG"],
            path: "Sources/CBindings/CXclawShim",
            cSettings: [.unsafeFlags(["-O2"])],
            linkerSettings: [.linkedLibrary("z"), .linkedLibrary("pthread")]
        ),

        // The AT-SPI2 reader over GDBus: bulk GetItems for GTK, a pipelined walk for the rest, actions and focus.
        .target(
            name: "CXclawAtspi",
            dependencies: ["CAtspi"],
            path: "Sources/CBindings/CXclawAtspi",
            cSettings: [.unsafeFlags(["-O2"])],
            linkerSettings: [.linkedLibrary("atspi"), .linkedLibrary("gio-2.0"), .linkedLibrary("gobject-2.0"),
                             .linkedLibrary("glib-2.0")]
        ),
        // The helper process that reads the accessibility tree, so an abort or a hung bus never takes xclaw down.
        .executableTarget(name: "xclaw-atspi", dependencies: ["CXclawAtspi"], path: "Sources/xclaw-atspi"),

        // Layer 0: what every layer shares (exit-status classification of errors, the JSON output conventions).
        .target(name: "XclawBase", path: "Sources/XclawBase"),

        // Layer 2: the screen: display connection, capture, PNG, scaling, input, windows, monitors, Xvfb.
        .target(
            name: "XclawScreen",
            dependencies: [
                "XclawBase", "CX11", "CXTest", "CXext", "CXRandR", "CXclawShim",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/XclawScreen"
        ),

        // Layer 3: perception: OCR, snapshots with stable refs, find-by-label, watch conditions, settle detection.
        .target(
            name: "XclawPerception",
            dependencies: [
                "XclawBase", "XclawScreen", "CTesseract", "CXclawShim",
            ],
            path: "Sources/XclawPerception"
        ),

        // Layer 4: the agent core: the Claude Messages client (SSE over libcurl), tools and skills, the agent loop,
        // the model catalog. It knows nothing of the screen: the screen reaches it only as tools (layer 5).
        .target(
            name: "XclawAgent",
            dependencies: ["XclawBase", "CCurl", .product(name: "Logging", package: "swift-log")],
            path: "Sources/XclawAgent"
        ),

        // Layer 4: persistence: agents, their messages, cursors, sessions, memory, usage and tasks in one SQLite file
        // (WAL, shared by every xclaw process).
        .target(
            name: "XclawStore",
            dependencies: ["XclawBase", "XclawAgent", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Sources/XclawStore"
        ),

        // Layer 4: the runtime: agents from the store run through the queue and the loop, streamed into the store.
        .target(
            name: "XclawRuntime",
            dependencies: ["XclawBase", "XclawAgent", "XclawStore"],
            path: "Sources/XclawRuntime"
        ),

        // Layer 5: skills: the computer-use tool, the custom screen tools, memory.
        .target(
            name: "XclawSkills",
            dependencies: ["XclawBase", "XclawScreen", "XclawPerception", "XclawAgent"],
            path: "Sources/XclawSkills"
        ),

        // Test support: a loopback server speaking the Messages API wire format, replaying scripted turns.
        .target(name: "XclawMockAPI", dependencies: [], path: "Sources/XclawMockAPI"),
        .executableTarget(name: "xclaw-mock-api", dependencies: ["XclawMockAPI"], path: "Sources/xclaw-mock-api"),

        // Layer 6: the command line.
        .executableTarget(
            name: "xclaw",
            dependencies: [
                "XclawBase", "XclawScreen", "XclawPerception", "XclawAgent", "XclawSkills", "XclawStore",
                "XclawRuntime", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/xclaw"
        ),

        // Test fixture: an X client that draws known rectangles and reports every event it receives.
        .executableTarget(name: "xclaw-fixture", dependencies: ["XclawBase", "XclawScreen"], path: "Sources/xclaw-fixture"),

        .testTarget(
            name: "XclawScreenTests",
            dependencies: [
                "XclawBase", "XclawScreen", "XclawPerception", "XclawAgent", "XclawSkills", "XclawStore", "XclawRuntime",
                "XclawMockAPI",
                "xclaw", "xclaw-fixture", "xclaw-mock-api", "xclaw-atspi", "CX11",
            ],
            path: "Tests/XclawScreenTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
