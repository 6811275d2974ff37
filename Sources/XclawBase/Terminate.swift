import Foundation
import Glibc

extension Subprocess {
    /// How `terminate` ends what it was given.
    public struct Ending: Sendable, Equatable {
        /// Processes that were still running at the deadline and got SIGKILL (none when all went on SIGTERM).
        public var killed: Set<pid_t>
    }

    /// Ends processes the one way every owner of helpers (Xvfb, the accessibility bus, a run's setup command) needs:
    /// SIGTERM to each pid and to each process group in `groups`, a wait of up to `grace` for all of them to be gone,
    /// SIGKILL to whatever still runs, and a short wait after it so our own children are reaped rather than left as
    /// zombies. `isAlive` says whether one still counts (by default `isRunning`, which reaps our exited children and
    /// counts a zombie as gone); an owner that checks identity (a reused pid must never be signalled) passes its own
    /// check and signals only the pids that pass it. `escalate: false` only asks and waits.
    @discardableResult
    public static func terminate(
        _ pids: Set<pid_t>, groups: [pid_t] = [], grace: Duration, escalate: Bool = true,
        isAlive: (pid_t) -> Bool = Subprocess.isRunning
    ) -> Ending {
        let pids = pids.filter { $0 > 0 && $0 != getpid() }
        let groups = groups.filter { $0 > 1 }
        for group in groups { Glibc.kill(-group, SIGTERM) }
        for pid in pids { Glibc.kill(pid, SIGTERM) }
        var left = pids
        let deadline = ContinuousClock.now + grace
        while true {
            left = left.filter(isAlive)
            if left.isEmpty || ContinuousClock.now >= deadline { break }
            usleep(5000)
        }
        guard escalate else { return Ending(killed: []) }
        for group in groups { Glibc.kill(-group, SIGKILL) }
        for pid in left { Glibc.kill(pid, SIGKILL) }
        // SIGKILL is not instant: wait (bounded) until the kernel has ended them, which also reaps our children.
        let reaped = ContinuousClock.now + .milliseconds(200)
        var dying = left
        while !dying.isEmpty && ContinuousClock.now < reaped {
            dying = dying.filter(isAlive)
            if !dying.isEmpty { usleep(2000) }
        }
        return Ending(killed: left)
    }
}
