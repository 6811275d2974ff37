import Foundation
import XCTest
import XclawAgent
import XclawBase
import XclawMessages
import XclawScreen
import XclawServices
import XclawSkills
import XclawTesting

/// Every tool, given random and hostile JSON inputs (NaN and infinities built in-process, numbers past every integer
/// type, wrong types, huge and control-laden strings) under `--dry-run`, on a real Xvfb: no input makes the process
/// trap, and every refusal tells the model what to send instead. Seeded (`XCLAW_FUZZ_SEED` replays a run).
final class ToolInputFuzzTests: XCTestCase {
    func testNoToolInputMakesTheProcessTrap() async throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        let session = try ScreenSession(display: display.name)
        let seed =
            ProcessInfo.processInfo.environment["XCLAW_FUZZ_SEED"].flatMap(UInt64.init)
            ?? UInt64.random(in: 0...UInt64.max)
        var random = SplitMix64(seed: seed)
        let vision: VisionAsker = { _, _, _ in #"{"x": 1e308, "y": "nan", "found": true}"# }
        // The service tools read the caller's session bus: a bus that is not there makes each fail at once, so a
        // fuzzed `wait_s` never waits on a real desktop's notifications.
        let savedBus = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
        setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/xclaw-fuzz-bus", 1)
        defer {
            if let savedBus {
                setenv("DBUS_SESSION_BUS_ADDRESS", savedBus, 1)
            } else {
                unsetenv("DBUS_SESSION_BUS_ADDRESS")
            }
        }
        let tools = try SkillCatalog.tools(
            named: SkillCatalog.allToolNames, session: session, vision: vision, memory: MemoryStore(),
            busAllow: BusAllowList(["org.example.Nothing"]))
        let registry = ToolRegistry(tools)
        // Dry run: input actions are validated, then skipped; nothing is injected, nothing waits long.
        let context = ToolContext(dryRun: true, confirm: { _ in false })
        let numbers: [Double] = [
            .nan, .infinity, -.infinity, 1e308, -1e308, 9.3e18, -9.3e18, 4_294_967_296, -1, -0.0, 0, 0.05, 0.5, 1,
            1.5, 3, 50, 101, 60_001, 1e-300, .ulpOfOne, Double(Int.max), Double(Int.min),
        ]
        let strings = [
            "", " ", "left_click", "\u{1b}[2J", "a\nb", String(repeating: "x", count: 5000), "ctrl+alt+Delete",
            "nosuchkey", "héllo ✓", "e1", "w1", "\u{0}", "1e308",
        ]
        func value(_ depth: Int = 0) -> JSONValue {
            switch Int.random(in: 0..<8, using: &random) {
            case 0, 1, 2: return .number(numbers.randomElement(using: &random) ?? 0)
            case 3: return .string(strings.randomElement(using: &random) ?? "")
            case 4: return .bool(Bool.random(using: &random))
            case 5: return .null
            case 6:
                let count = Int.random(in: 0...5, using: &random)
                return .array(depth > 2 ? [] : (0..<count).map { _ in value(depth + 1) })
            default:
                let keys = ["x", "y", "width", "height", "text", "region"]
                return .object(
                    depth > 2
                        ? [:]
                        : Dictionary(
                            uniqueKeysWithValues: keys.shuffled(using: &random).prefix(4).map { ($0, value(depth + 1)) }
                        ))
            }
        }
        var calls = 0
        for tool in tools {
            let keys =
                Array((tool.inputSchema["properties"]?.object ?? [:]).keys)
                + ["coordinate", "start_coordinate", "duration", "scroll_amount", "scroll_direction", "region", "nth"]
            let actions = tool.name == "computer" ? ComputerAction.allCases.map(\.rawValue) : [""]
            for _ in 0..<40 {
                var input: [String: JSONValue] = [:]
                for key in keys where Bool.random(using: &random) { input[key] = value() }
                if tool.name == "computer" { input["action"] = .string(actions.randomElement(using: &random) ?? "") }
                // A valid long wait would only wait: durations stay short unless they are hostile.
                for key in ["duration", "timeout_s"] {
                    if let d = input[key]?.double, d.isFinite, d > 0.2, d <= 120 { input[key] = .number(0.05) }
                }
                let json = JSONValue.object(input)
                let shown = "seed \(seed): \(tool.name) \(json.jsonText.prefix(300))"
                let checked = await registry.run(id: "t", name: tool.name, input: json, context: context)
                let direct: String
                do {
                    let output = try await tool.execute(json, context: context)
                    direct = output.content.isEmpty ? "" : "ok"
                } catch let error as ToolError {
                    direct = error.message
                } catch {
                    direct = "\(error)"
                }
                calls += 2
                XCTAssertFalse(direct.isEmpty, shown)
                if checked.isError {
                    let text = checked.content.compactMap { block -> String? in
                        if case .text(let t) = block { return t }
                        return nil
                    }.joined()
                    XCTAssertFalse(text.isEmpty, "an error result says what was wrong: \(shown)")
                }
            }
        }
        XCTAssertGreaterThan(calls, 500)
    }
}
