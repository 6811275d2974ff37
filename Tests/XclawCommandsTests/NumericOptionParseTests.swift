import Foundation
import Synchronization
import XCTest
import XclawCommandLine
import XclawCommands
import XclawTesting

/// Absurd numbers for every numeric option, refused while the command line is parsed: no process, display or daemon
/// is needed to see the refusal mapped to its exit status by `CommandRunner`, the mapping the binary uses.
/// `HardeningCLITests` runs the values that reach a command, and one refusal per option, through the binary.
final class NumericOptionParseTests: XCTestCase {
    /// A value outside the documented range (or no number at all) exits 2 with a message, and never traps. Seeded
    /// like the CLI half (`XCLAW_FUZZ_SEED` replays a run).
    func testEveryOutOfRangeNumericValueIsRefusedAsBadUsage() {
        let seed = NumericOptionFuzz.seed()
        let refusals = NumericOptionFuzz.cases(seed: seed).filter { $0.mustRefuse && $0.refusedWhileParsing }
        XCTAssertFalse(refusals.isEmpty, "the table lost its hostile values")
        // nil: the command line was accepted. Parsed side by side, as the daemon parses its callers' commands.
        let results = Mutex<[Int: CommandFailure?]>([:])
        DispatchQueue.concurrentPerform(iterations: refusals.count) { index in
            let failure: CommandFailure?
            do {
                _ = try CommandRunner.parse(Xclaw.self, arguments: refusals[index].arguments)
                failure = nil
            } catch {
                failure = CommandRunner.failure(of: error, root: Xclaw.self)
            }
            results.withLock { $0[index] = failure }
        }
        let outcomes = results.withLock { $0 }.compactMapValues { $0 }
        for (index, item) in refusals.enumerated() {
            let command = "seed \(seed): xclaw \(item.arguments.joined(separator: " "))"
            guard let failure = outcomes[index] else {
                XCTFail("\(command): accepted")
                continue
            }
            let message = failure.message ?? ""
            let shown = "\(command) → \(failure.status): " + message.prefix(300)
            XCTAssertTrue([0, 1, 2, 3, 4].contains(failure.status), shown)
            XCTAssertFalse(message.contains("crashed"), shown)
            XCTAssertEqual(failure.status, 2, shown)
            XCTAssertFalse(message.isEmpty, shown)
            XCTAssertNil(failure.output, shown)
        }
        XCTAssertEqual(outcomes.count, refusals.count)
    }
}
