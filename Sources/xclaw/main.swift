// The `xclaw` command line. Results go to stdout (text, or JSON with --json); logs and errors to stderr.
import ArgumentParser
import Foundation
import Logging
import XclawBase
import XclawCommandLine
import XclawScreen

setlocale(LC_ALL, "")
setlocale(LC_CTYPE, "C.UTF-8")  // the probe window decodes key events as UTF-8 whatever the user's locale
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    let level = ProcessInfo.processInfo.environment["XCLAW_LOG"].flatMap { Logger.Level(rawValue: $0.lowercased()) }
    handler.logLevel = level ?? .info
    return handler
}
Interrupt.install()
let status = CommandRunner.run(Xclaw.self)
// _exit, not exit: run/send/chat leave worker threads (X connections, SQLite, the concurrency pool) winding down,
// and exit()'s library destructors racing them crashed a finished run now and then. Everything a command must
// write is written by now; only stdio buffers remain.
fflush(nil)  // every output stream
_exit(status)
