// xclaw-bench: the benchmarks, in their own binary so the product carries none of their code. `xclaw bench …` hands
// over to this binary when it sits beside `xclaw`; `scripts/bench.sh` runs it directly.
import XclawCommandLine

CommandRunner.main(Bench.self, prepare: Interrupt.install)
