// The `xclaw` front: a small binary that links no Foundation, OCR, HTTP, SQLite or AT-SPI. It does the few pure-input
// commands itself (they need no warm state, and a hand-off would only add a round trip), hands the rest to the
// resident daemon when one runs, and otherwise becomes the full binary (`xclaw-core`, beside it) with exec, so a
// one-shot command still runs in-process exactly as before.
import Glibc
import XclawHandoff
import XclawWire

var front = Front(arguments: Array(CommandLine.arguments.dropFirst()), environment: Front.environment())
let handoff = DaemonHandoff(arguments: front.arguments, environment: front.environment, notice: Front.notice)
// Plain input is done here, unless a daemon's web view watches: then the daemon sends it and its action log shows it.
if front.noDaemon || !handoff.webViewRuns,
    let status = DirectInput(front.arguments, display: front.environment["DISPLAY"])?.run()
{
    exit(status)
}
if !front.noDaemon, ServedCommands.serves(front.arguments) {
    var outcome = handoff.run()
    // Fast by default: none runs, so one is started for this command and the ones after it.
    if case .noDaemon = outcome, !front.asksHelp, front.startDaemon() { outcome = handoff.run() }
    switch outcome {
    case .exited(let status): exit(status)
    case .daemonDied(let message): Front.fail(message, status: 5, json: front.asksJSON)
    case .noDaemon(stale: true):
        handoff.removeStaleSocket()
        Front.notice("the daemon is not running (removed its stale socket); running in-process")
    case .notTaken, .noDaemon: break
    }
}
front.becomeCore()
