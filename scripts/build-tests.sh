#!/usr/bin/env bash
# Builds the test bundle and every executable the tests start, into .build-tests/release (the tree run-tests.py runs).
#
# Not `swift build --build-tests` (debug): measured on two cores from a clean clone, a cold debug build took 349 s
# (598 CPU-s) and the suite 310-316 s; this one 287 s (498 CPU-s) and 250 s. Why:
# - SwiftPM's release configuration compiles a module in one job (whole-module) instead of batches that each parse
#   the whole module again, and writes no index store.
# - It leaves DEBUG undefined: ArgumentParser checks the whole command tree on every parse in a DEBUG build (82 % of
#   a parse), in every xclaw-core the tests start.
# -Onone keeps it unoptimized like a debug build (assertions and preconditions on, quick to compile), and
# -enable-testing keeps @testable imports working. A tree of its own, .build-tests: `swift build -c release` (the
# demo, the benchmarks) builds optimized into .build, and sharing one tree would rebuild everything at each switch.
# Two more flags, measured by cold builds of one resolved tree on two cores (281 s with neither):
# - -no-emit-module-separately-wmo: by default each module's interface is emitted by a second compiler job that
#   type-checks the whole module again (56 CPU-seconds over the build), so that modules above can start sooner; on
#   two cores the work saved is worth more than the overlap lost.
# - -gnone: no DWARF. The tests report file and line from #file/#line; a crash's backtrace still names functions.
# Both: 236 s; -gnone alone: 272 s.
# Extra arguments go to `swift build`.
set -euo pipefail
cd "$(dirname "$0")/.."
# `--product NAME` builds that product alone with the same flags (the demo's build), so the tests' build reuses it.
what=(--build-tests)
[[ "${1:-}" == "--product" ]] && what=()
exec swift build -c release --scratch-path .build-tests -Xswiftc -Onone -Xswiftc -enable-testing \
  -Xswiftc -no-emit-module-separately-wmo -Xswiftc -gnone "${what[@]}" "$@"
