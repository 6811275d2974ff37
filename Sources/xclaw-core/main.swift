// The `xclaw` command line. Results go to stdout (text, or JSON with --json); logs and errors to stderr.
import XclawCommandLine
import XclawCommands

CommandRunner.main(Xclaw.self, prepare: Interrupt.install)
