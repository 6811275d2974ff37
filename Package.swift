// swift-tools-version:6.1
// xclaw: desktop automation for Linux/X11. Layers, bottom to top: C bindings → base → screen → perception;
// messages → (client, agent loop, store); skills; runtime; surfaces (the CLI). ARCHITECTURE.md draws the graph.
import PackageDescription

/// A system-library module over a Debian `-dev` package, found through pkg-config.
func systemLibrary(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, path: "Sources/CBindings/\(name)", pkgConfig: pkgConfig, providers: [.apt(apt)])
}

/// A layer's test target, in `Tests/NAME`: its layer and the layers below, and the test support. The executables its
/// tests start are not named: `swift build` builds every product anyway, and naming one made the target's compile wait
/// for that executable's modules.
func layerTests(_ name: String, _ dependencies: [Target.Dependency], exclude: [String] = []) -> Target {
    .testTarget(name: name, dependencies: dependencies, path: "Tests/\(name)", exclude: exclude)
}

let package = Package(
    name: "xclaw",
    products: [
        .executable(name: "xclaw", targets: ["xclaw"]),
        .library(name: "XclawScreen", targets: ["XclawScreen"]),
        .library(name: "XclawPerception", targets: ["XclawPerception"]),
        .library(name: "XclawMessages", targets: ["XclawMessages"]),
        .library(name: "XclawClient", targets: ["XclawClient"]),
        .library(name: "XclawAgent", targets: ["XclawAgent"]),
        .library(name: "XclawSkills", targets: ["XclawSkills"]),
        .library(name: "XclawStore", targets: ["XclawStore"]),
        .library(name: "XclawRuntime", targets: ["XclawRuntime"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        // The daemon's web view and MCP over HTTP. Hummingbird's default traits pull swift-configuration, which the
        // web view does not use: none are enabled (a package with traits needs tools 6.1).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
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
        // Glyph rendering, to read single-glyph labels by comparing them with the fonts toolkits draw them in.
        systemLibrary("CFreeType", pkgConfig: "freetype2", apt: ["libfreetype-dev"]),
        systemLibrary("CCurl", pkgConfig: "libcurl", apt: ["libcurl4-openssl-dev"]),
        // libpq, for the fleet's PostgreSQL store: synchronous like the store's API, and nothing to build (see
        // ARCHITECTURE.md, "Why libpq").
        systemLibrary("CPostgres", pkgConfig: "libpq", apt: ["libpq-dev"]),
        // GDBus and AT-SPI2's tables, for the accessibility reader (which runs in its own process, xclaw-atspi).
        systemLibrary("CAtspi", pkgConfig: "atspi-2", apt: ["libatspi2.0-dev", "libglib2.0-dev"]),
        // GDBus, for the desktop services' session-bus client (CXclawBus).
        systemLibrary("CGio", pkgConfig: "gio-2.0", apt: ["libglib2.0-dev"]),
        // POSIX pieces Swift cannot import (closefrom for posix_spawn, pipe2, the wait-status macros), for Subprocess;
        // the daemon's re-exec in place (execve keeping chosen descriptors, memfd_create).
        .target(name: "CXclawSystem", path: "Sources/CBindings/CXclawSystem"),
        // C kernels that must be fast even in debug builds (pixel conversion, scaling, PNG with setjmp),
        // shims for variadic Xlib calls Swift cannot import (XCreateIC), and for what Xlib leaves undone after the
        // loss of a server (xlock.c: libxcb, a dependency of libx11-dev).
        .target(
            name: "CXclawShim",
            dependencies: ["CX11", "CPNG"],
            path: "Sources/CBindings/CXclawShim",
            // No errno from maths: sqrt then vectorises (the kernels never read errno).
            cSettings: [.unsafeFlags(["-O2", "-fno-math-errno"])],
            linkerSettings: [
                .linkedLibrary("z"), .linkedLibrary("pthread"), .linkedLibrary("jpeg"), .linkedLibrary("xcb"),
            ]
        ),

        // FreeType rendering and glyph comparison for the perception layer.
        .target(
            name: "CXclawGlyphs", dependencies: ["CFreeType"], path: "Sources/CBindings/CXclawGlyphs",
            cSettings: [.unsafeFlags(["-O2"])], linkerSettings: [.linkedLibrary("m")]
        ),

        // The AT-SPI2 reader over GDBus: bulk GetItems for GTK, a pipelined walk for the rest, actions and focus.
        .target(
            name: "CXclawAtspi",
            dependencies: ["CAtspi"],
            path: "Sources/CBindings/CXclawAtspi",
            cSettings: [.unsafeFlags(["-O2"])],
            linkerSettings: [
                .linkedLibrary("atspi"), .linkedLibrary("gio-2.0"), .linkedLibrary("gobject-2.0"),
                .linkedLibrary("glib-2.0"),
            ]
        ),
        // The session-bus client of the desktop services: calls with deadlines, replies as JSON, signals and monitors.
        .target(name: "CXclawBus", dependencies: ["CGio"], path: "Sources/CBindings/CXclawBus"),
        // The helper process that reads the accessibility tree, so an abort or a hung bus never takes xclaw down.
        .executableTarget(name: "xclaw-atspi", dependencies: ["CXclawAtspi"], path: "Sources/xclaw-atspi"),

        // Layer 0: what every layer shares: exit-status classification of errors, JSON output conventions, the
        // sync-to-async bridge of the synchronous commands, Subprocess, Errno, XclawPaths.
        .target(name: "XclawBase", dependencies: ["CXclawSystem"], path: "Sources/XclawBase"),

        // Layer 2: the screen: display connection, capture, PNG, scaling, input, windows, monitors, Xvfb.
        .target(
            name: "XclawScreen",
            dependencies: [
                "XclawBase", "XclawKeyNames", "CX11", "CXTest", "CXext", "CXRandR", "CXclawShim",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/XclawScreen"
        ),

        // Layer 3: perception: OCR, snapshots with stable refs, find-by-label, watch conditions, settle detection.
        .target(
            name: "XclawPerception",
            dependencies: ["XclawBase", "XclawScreen", "CTesseract", "CXclawShim", "CXclawGlyphs"],
            path: "Sources/XclawPerception"
        ),

        // Layer 3, beside perception: the desktop's own services, which act without the GUI: shortcuts (.desktop
        // actions and the user's scripts), notifications, media players, calendar and contacts, opening URIs, the
        // user's systemd units, and a guarded generic call, over the caller's session bus.
        .target(
            name: "XclawServices",
            dependencies: [
                "XclawBase", "XclawScreen", "XclawMessages", "CXclawBus",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/XclawServices"
        ),

        // Layer 4, agent core. Pure Swift first: the Messages API's wire types, the streaming seam and the model
        // catalog, which the store, the client and the loop all speak.
        .target(name: "XclawMessages", dependencies: ["XclawBase"], path: "Sources/XclawMessages"),
        // The Claude Messages client: SSE over libcurl, retries, configuration and keys.
        .target(
            name: "XclawClient",
            dependencies: ["XclawBase", "XclawMessages", "CCurl", .product(name: "Logging", package: "swift-log")],
            path: "Sources/XclawClient"
        ),
        // The agent loop, tools and their registry, the per-agent queue. It knows nothing of the screen (the screen
        // reaches it only as tools, layer 5) nor of libcurl (it streams through `MessageStreaming`).
        .target(
            name: "XclawAgent",
            dependencies: ["XclawBase", "XclawMessages", .product(name: "Logging", package: "swift-log")],
            path: "Sources/XclawAgent"
        ),
        // Persistence: agents, their messages, cursors, sessions, memory, usage and tasks in one SQLite file (WAL,
        // shared by every xclaw process) or, for a fleet, one PostgreSQL database: the same queries on both. It names
        // messages only, so it links no client and no loop.
        .target(
            name: "XclawStore",
            dependencies: [
                "XclawBase", "XclawMessages", "CPostgres", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Sources/XclawStore"
        ),

        // Layer 5: skills: the computer-use tool, the custom screen tools, memory, the web tools (fetch_url and
        // web_search, over the client's libcurl transport).
        .target(
            name: "XclawSkills",
            dependencies: [
                "XclawBase", "XclawScreen", "XclawPerception", "XclawMessages", "XclawClient", "XclawAgent",
                "XclawServices",
            ],
            path: "Sources/XclawSkills"
        ),

        // The runtime, where the layers meet: the one builder that turns an agent's config into a running service
        // (catalog → computer-tool version → screen session → skills → vision → service), and the service that runs
        // agents from the store through the queue and the loop. Every surface wires agents through it.
        .target(
            name: "XclawRuntime",
            dependencies: [
                "XclawBase", "XclawScreen", "XclawPerception", "XclawMessages", "XclawClient", "XclawAgent",
                "XclawStore", "XclawServices",
                "XclawSkills",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/XclawRuntime"
        ),

        // Layer 6: the command line: what every xclaw binary shares (exit-status mapping, output, signals, display
        // options), then the `xclaw` commands.
        .target(
            name: "XclawCommandLine",
            dependencies: [
                "XclawBase", "XclawScreen", "XclawPerception",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/XclawCommandLine"
        ),
        // The Model Context Protocol's server core, a surface: JSON-RPC over stdio (and any transport that hands it
        // messages), tools with their hints and argument checks. It knows no tool: `xclaw mcp` gives it xclaw's.
        .target(
            name: "XclawMCP",
            dependencies: ["XclawBase", "XclawMessages", .product(name: "Logging", package: "swift-log")],
            path: "Sources/XclawMCP"
        ),
        // The daemon's web view, a surface: Hummingbird routes for the pages (assets compiled in), their JSON and
        // websockets, and MCP over streamable HTTP, all behind one token. It knows no command: XclawCommands gives it
        // a `WebBackend` that runs them.
        .target(
            name: "XclawWeb",
            dependencies: [
                "XclawBase", "XclawScreen", "XclawMessages", "XclawMCP",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/XclawWeb",
            resources: [
                .embedInCode("Assets/index.html"), .embedInCode("Assets/app.css"), .embedInCode("Assets/app.js"),
                .embedInCode("Assets/markdown.js"),
            ]
        ),
        // The daemon's home, Sources/Daemon: a module per part, side by side. The resident daemon, a surface like the
        // CLI: its socket, protocol and lifecycle, its kept displays, its recycling, the client of its socket.
        .target(
            name: "XclawDaemon",
            dependencies: [
                "XclawBase", "XclawScreen", "XclawPerception", "XclawCommandLine", "XclawWire",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Daemon/XclawDaemon"
        ),
        // The daemon's services, wired to its server: the scheduler's thread, the run reports it keeps, the web view
        // (its MCP tools and commands are handed in by `xclaw daemon run`, from the commands library).
        .target(
            name: "XclawDaemonServices",
            dependencies: [
                "XclawBase", "XclawScreen", "XclawAgent", "XclawStore", "XclawRuntime", "XclawDaemon", "XclawMCP",
                "XclawWeb",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Daemon/XclawDaemonServices"
        ),
        // The `xclaw` commands as a library, so tests parse and validate them in-process: the argument-parser
        // command types, the MCP tool table, the agent and daemon wiring.
        .target(
            name: "XclawCommands",
            dependencies: [
                "XclawBase", "XclawScreen", "XclawPerception", "XclawMessages", "XclawClient", "XclawAgent",
                "XclawSkills", "XclawStore", "XclawRuntime", "XclawCommandLine", "XclawDaemon", "XclawDaemonServices",
                "XclawMCP", "XclawWeb", "CXclawSystem", "XclawHandoff", "XclawServices",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/XclawCommands"
        ),
        // The binary the front execs: a main that only hands its arguments to the commands.
        .executableTarget(
            name: "xclaw-core", dependencies: ["XclawCommandLine", "XclawCommands"], path: "Sources/xclaw-core"),
        // Friendly key names, standard library only: shared by the screen layer and the front binary.
        .target(name: "XclawKeyNames", path: "Sources/XclawKeyNames"),
        // What the front and the daemon share about serving, standard library only: the wire, the served commands.
        .target(name: "XclawWire", path: "Sources/Daemon/XclawWire"),
        // The front's side of the handoff, without Foundation (the front links no Foundation): the request and the
        // front's descriptors over the daemon's socket, forwarded signals, the reply's exit status.
        .target(
            name: "XclawHandoff", dependencies: ["CXclawSystem", "XclawWire"], path: "Sources/Daemon/XclawHandoff"),
        // The front binary `xclaw`: no Foundation, OCR, HTTP, SQLite or AT-SPI, and the Swift runtime linked in
        // statically. It hands commands to the daemon, does plain input itself, or execs `xclaw-core`.
        .executableTarget(
            name: "xclaw",
            dependencies: ["CXclawSystem", "CX11", "CXTest", "XclawKeyNames", "XclawWire", "XclawHandoff"],
            path: "Sources/xclaw",
            linkerSettings: [.unsafeFlags(["-static-stdlib"])]
        ),

        // Test support, linked by no product module: the loopback server speaking the Messages API wire format
        // (also the demo's scripted model), and XclawTesting: the event probe, test displays, the fixture, scenes and
        // the CLI runner that the fixture, the benchmarks and the tests share.
        .target(name: "XclawMockAPI", dependencies: ["XclawBase"], path: "Sources/XclawMockAPI"),
        .executableTarget(
            name: "xclaw-mock-api", dependencies: ["XclawBase", "XclawMockAPI"], path: "Sources/xclaw-mock-api"),
        .target(
            name: "XclawTesting",
            dependencies: ["XclawBase", "XclawScreen", "XclawPolling", "XclawTimeTesting", "CX11", "CXclawShim"],
            path: "Sources/XclawTesting"
        ),
        // The one wait for what a test can observe (`poll`), free of XCTest so the fixture and the benchmarks link it.
        .target(name: "XclawPolling", path: "Sources/XclawPolling"),
        // A test clock (time moves when something sleeps on it), for the timing logic of every layer, and
        // `eventually`: `poll` that fails the test when the wait runs out.
        .target(name: "XclawTimeTesting", dependencies: ["XclawPolling"], path: "Sources/XclawTimeTesting"),
        // Agent-side doubles (a tool of the tests' own, a text sink), free of X, for the agent and runtime tests.
        .target(
            name: "XclawAgentTesting", dependencies: ["XclawMessages", "XclawAgent", "XclawPolling"],
            path: "Sources/XclawAgentTesting"
        ),
        // The test fixture: an X client that draws known rectangles and reports every event it receives.
        .executableTarget(
            name: "xclaw-fixture", dependencies: ["XclawBase", "XclawScreen", "XclawTesting"],
            path: "Sources/xclaw-fixture"
        ),

        // The benchmarks (`scripts/bench.sh`; `xclaw bench` hands over to this binary), with their peers measured
        // side by side in the same run.
        .executableTarget(
            name: "xclaw-bench",
            dependencies: [
                "XclawBase", "XclawScreen", "XclawPerception", "XclawMessages", "XclawAgent", "XclawStore",
                "XclawRuntime", "XclawSkills", "XclawCommandLine", "XclawTesting", "XclawPolling", "XclawClient",
                "XclawServices",
                // The loopback model of `bench replay`'s recorded run.
                "XclawMockAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/xclaw-bench"
        ),

        // One test target per layer; each depends on its layer and what lies below it, plus the test support.
        layerTests("XclawBaseTests", ["XclawBase", "XclawTimeTesting"]),
        layerTests("XclawMCPTests", ["XclawBase", "XclawMessages", "XclawMCP", "XclawTimeTesting"]),
        layerTests("XclawWebTests", ["XclawBase", "XclawMCP", "XclawWeb"]),
        layerTests(
            "XclawScreenTests",
            ["XclawBase", "XclawScreen", "XclawTesting", "XclawTimeTesting", "CX11"]),
        layerTests(
            "XclawPerceptionTests",
            [
                "XclawBase", "XclawScreen", "XclawPerception", "XclawTesting", "XclawTimeTesting",
            ]),
        layerTests(
            "XclawServicesTests",
            [
                "XclawBase", "XclawScreen", "XclawMessages", "XclawServices", "XclawTesting", "XclawPolling",
                "XclawTimeTesting",
            ]),
        layerTests(
            "XclawAgentTests",
            [
                "XclawBase", "XclawMessages", "XclawClient", "XclawAgent", "XclawMockAPI", "XclawAgentTesting",
                "XclawTimeTesting",
            ]),
        layerTests(
            "XclawRuntimeTests",
            [
                "XclawBase", "XclawScreen", "XclawMessages", "XclawClient", "XclawAgent", "XclawStore", "XclawSkills",
                "XclawRuntime", "XclawMockAPI", "XclawAgentTesting", "XclawTesting", "XclawTimeTesting",
            ]),
        layerTests(
            "XclawSkillsTests",
            [
                "XclawBase", "XclawScreen", "XclawPerception", "XclawMessages", "XclawClient", "XclawAgent",
                "XclawSkills", "XclawMockAPI", "XclawAgentTesting", "XclawTesting", "XclawTimeTesting",
            ]),
        layerTests(
            "XclawCLITests",
            [
                "XclawBase", "XclawScreen", "XclawPerception", "XclawMessages", "XclawAgent", "XclawStore",
                "XclawRuntime", "XclawDaemon",
                "XclawMockAPI", "XclawTesting", "XclawTimeTesting", "XclawAgentTesting",
            ],
            // The MCP tests' Python client scripts, the web view's browser scripts and the JSON schema validator,
            // run by the tests from the source tree.
            exclude: ["mcp", "web", "json"]),
        // The commands' parsing and validation, in-process (no X display, no daemon).
        layerTests(
            "XclawCommandsTests",
            [
                "XclawBase", "XclawCommandLine", "XclawCommands", "XclawDaemon", "XclawMCP", "XclawMessages",
                "XclawPerception", "XclawScreen", "XclawTesting", "XclawWire",
            ]),
        layerTests(
            "XclawExamplesTests",
            ["XclawTesting", "XclawTimeTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
