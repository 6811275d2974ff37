import Dispatch
import Foundation
import Synchronization
import XCTest
import XclawCommandLine

/// `Interrupt.watch` in-process: a watched signal is never lost, however soon it comes after the watch. The watch
/// was a dispatch signal source once, which ignored the signal at once and caught it only after its manager thread
/// got round to it; `xclaw send` under load then missed its SIGTERM and ran on until the model timed out.
final class SignalWatchTests: XCTestCase {
    /// SIGUSR1 and SIGUSR2: nothing else in the bundle uses them, and a lost one would still be a failure here (it
    /// was ignored), not a killed test process.
    func testASignalSentTheMomentTheWatchIsInPlaceIsDelivered() {
        for signal in [SIGUSR1, SIGUSR2] {
            for round in 0..<100 {
                let delivered = DispatchSemaphore(value: 0)
                let watch = Interrupt.watch([signal]) { got in if got == signal { delivered.signal() } }
                kill(getpid(), signal)
                XCTAssertEqual(
                    delivered.wait(timeout: .now() + 10), .success, "signal \(signal) lost in round \(round)")
                watch.stop()
            }
        }
    }

    /// Every watch of a signal gets it, a watch gets only its own signals, and a stopped watch gets no more.
    func testEveryWatchOfASignalGetsItAndAStoppedOneNoLonger() {
        let events = Mutex<[String]>([])
        let arrived = DispatchSemaphore(value: 0)
        func watch(_ name: String, _ signals: Set<Int32>) -> SignalWatch {
            Interrupt.watch(signals) { got in
                events.withLock { $0.append("\(name) \(got == SIGUSR1 ? "usr1" : "usr2")") }
                arrived.signal()
            }
        }
        func send(_ signal: Int32, expecting count: Int) {
            kill(getpid(), signal)
            for _ in 0..<count { XCTAssertEqual(arrived.wait(timeout: .now() + 10), .success) }
        }
        let first = watch("first", [SIGUSR1])
        let second = watch("second", [SIGUSR1, SIGUSR2])
        send(SIGUSR1, expecting: 2)
        send(SIGUSR2, expecting: 1)
        first.stop()
        send(SIGUSR1, expecting: 1)
        second.stop()
        XCTAssertEqual(events.withLock { $0 }.sorted(), ["first usr1", "second usr1", "second usr1", "second usr2"])
    }
}
