// xclaw-bench: the benchmarks, in their own binary so the product carries none of their code. `xclaw bench …` hands
// over to this binary when it sits beside `xclaw`; `scripts/bench.sh` runs it directly.
import ArgumentParser
import XclawCommandLine
import Foundation
import Logging
import XclawBase

setlocale(LC_ALL, "")
setlocale(LC_CTYPE, "C.UTF-8")  // the probe window decodes key events as UTF-8 whatever the user's locale
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    let level = ProcessInfo.processInfo.environment["XCLAW_LOG"].flatMap { Logger.Level(rawValue: $0.lowercased()) }
    handler.logLevel = level ?? .info
    return handler
}
let status = CommandRunner.run(Bench.self)
fflush(nil)
_exit(status)
