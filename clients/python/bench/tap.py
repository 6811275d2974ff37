#!/usr/bin/env python3
"""`desk.tap(LABEL)` through the Python client against `xclaw tap LABEL` (the CLI handing it to the same daemon),
in one run on one screen: medians, p90s and the ratio of the medians (the issue's target: at most 1.5x).

Each timed tap is preceded by an untimed snapshot (both ways alike), so every tap reads an unchanged screen, as
`xclaw bench cli`'s "tap a label on an unchanged screen" does. The two ways alternate which goes first in each round,
so a drift of the machine's load falls on both. The CLI is started with posix_spawn, as the bench's Swift rows start
processes, its output discarded; the client's time is the sync call, JSON parsing and typed result included.

    python3 clients/python/bench/tap.py [--iterations 40] [--binary .build/release/xclaw] [--json]

It starts its own Xvfb (-displayfd), the tests' Tk form, and a daemon in a state directory of its own (all stopped at
the end).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))

from desktop import FormApp, XvfbDisplay  # noqa: E402

import xclaw  # noqa: E402


def binary(given: str | None) -> str:
    """The xclaw to measure: --binary, $XCLAW_BIN, the repository's release build, or xclaw on PATH."""
    for candidate in (given, os.environ.get("XCLAW_BIN"), str(HERE.parents[2] / ".build/release/xclaw"), "xclaw"):
        found = candidate and (shutil.which(candidate) or (candidate if os.access(candidate, os.X_OK) else None))
        if found:
            return os.path.abspath(found)
    sys.exit("no xclaw binary: build it (swift build -c release) or pass --binary")


def spawned_ms(program: str, arguments: list[str], environment: dict[str, str]) -> float:
    """A whole process, start to exit, in milliseconds; fails unless it exits 0."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    start = time.perf_counter_ns()
    pid = os.posix_spawn(program, [program, *arguments], environment, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    elapsed = (time.perf_counter_ns() - start) / 1e6
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"xclaw {' '.join(arguments)} failed (exit {os.waitstatus_to_exitcode(status)})")
    return elapsed


def timed_ms(body) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter_ns()
    body()
    return (time.perf_counter_ns() - start) / 1e6


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "runs": len(ordered),
        "median_ms": round(statistics.median(ordered), 3),
        "p90_ms": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered) + 0.999) - 1)], 3),
        "min_ms": round(ordered[0], 3),
        "max_ms": round(ordered[-1], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=40, help="timed taps per way (default 40)")
    parser.add_argument("--binary", help="the xclaw binary (default: $XCLAW_BIN, .build/release/xclaw, PATH)")
    parser.add_argument("--label", default="OK", help="the label to tap (default OK, a button of the form)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    options = parser.parse_args()
    program = binary(options.binary)

    display = XvfbDisplay("1280x800")
    state = tempfile.mkdtemp(prefix="xclaw-bench-py-", dir="/tmp")
    form = None
    try:
        form = FormApp(display.name)
        environment = {**os.environ, "DISPLAY": display.name, "XCLAW_STATE_DIR": state, "XCLAW_OCR_LANG": "eng"}
        with xclaw.connect(binary=program, env=environment) as desk:
            desk.snapshot()  # starts the daemon; the rounds below find it warm
            assert desk.uses_daemon, "the client did not reach a daemon"
            cli: list[float] = []
            client: list[float] = []

            def cli_tap() -> float:
                desk.snapshot()
                return spawned_ms(program, ["tap", options.label], environment)

            def client_tap() -> float:
                desk.snapshot()
                return timed_ms(lambda: desk.tap(options.label))

            for _ in range(3):  # untimed warm-up of both ways
                cli_tap()
                client_tap()
            for round_number in range(options.iterations):
                if round_number % 2 == 0:
                    cli.append(cli_tap())
                    client.append(client_tap())
                else:
                    client.append(client_tap())
                    cli.append(cli_tap())
        taps = 2 * (options.iterations + 3)
        form.expect_count(f"pressed {options.label} 1", taps)  # every tap pressed the button once
        rows = {
            "xclaw tap (CLI through the daemon)": summary(cli),
            "desk.tap() (Python client through the daemon)": summary(client),
        }
        ratio = (
            rows["desk.tap() (Python client through the daemon)"]["median_ms"]
            / rows["xclaw tap (CLI through the daemon)"]["median_ms"]
        )
        result = {
            "benchmark": "python tap",
            "display": display.name,
            "binary": program,
            "label": options.label,
            "taps": taps,
            "rows": rows,
            "ratio_of_medians": round(ratio, 3),
            "target": 1.5,
        }
        if options.json:
            print(json.dumps(result))
        else:
            rounds = options.iterations
            print(f"xclaw bench python: tap {options.label!r} on {display.name} (1280x800), {rounds} rounds")
            print(f"  {'':50} {'runs':>5} {'median ms':>10} {'p90 ms':>8} {'min ms':>8} {'max ms':>8}")
            for name, row in rows.items():
                print(
                    f"  {name:50} {row['runs']:>5} {row['median_ms']:>10.2f} {row['p90_ms']:>8.2f} "
                    f"{row['min_ms']:>8.2f} {row['max_ms']:>8.2f}"
                )
            print(f"  client / CLI (medians): {ratio:.2f}x (target <= 1.5x)")
    finally:
        if form is not None:
            form.stop()
        subprocess.run(
            [program, "daemon", "stop"],
            env={**os.environ, "XCLAW_STATE_DIR": state},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        display.stop()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
