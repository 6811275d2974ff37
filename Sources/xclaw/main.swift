// The `xclaw` command line. Results go to stdout (text, or JSON with --json); logs and errors to stderr.
import ArgumentParser
import Foundation
import Logging
import XclawBase
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
exit(Xclaw.runAndReportExitStatus())
