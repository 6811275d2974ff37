#!/usr/bin/env python3
"""Runs the built test bundle in parallel shards and says what failed.

Every test class runs in one of several xctest processes at once (tests start their own Xvfb through -displayfd,
their own state directories and loopback servers, so they share nothing); each shard gets private XDG directories
so tests that use the defaults do not meet either. The daemon pass (the CLI tests again with every command handed
to a daemon, XCLAW_TEST_DAEMON=1) runs as shards of its own beside them. Classes are spread by their measured
seconds (scripts/test-weights.txt, longest first); `--record` rewrites that file from this run.

Usage: scripts/run-tests.py [--quick] [--jobs N] [--record] [--list]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUNDLE = os.path.join(ROOT, ".build", "debug", "xclawPackageTests.xctest")
WEIGHTS = os.path.join(ROOT, "scripts", "test-weights.txt")

# The daemon pass runs again, through a daemon, the CLI classes about what the daemon serves differently: the wire
# (stdin, binary stdout, large outputs), signals and terminals (stops, approvals, held input), exit codes of bad
# input and of the environment, and the state it keeps between commands (perceiver, refs, accessibility, glyphs).
# The others ran in-process only: the daemon runs the same command code, and doubling every CLI test cost a third of
# the suite. DaemonCLITests, ScheduleCLITests, the web view's and the MCP tests manage their daemons themselves.
DAEMON_CLASSES = {
    "CLITests", "CaptureCLITests", "ClipboardCLITests", "HardeningCLITests", "StopAndApprovalTests",
    "HeldInputCLITests", "LanguageCLITests", "PerceptionCLITests", "AccessibilityCLITests",
    "AccessibilitySessionTests", "ContextCLITests", "AppCLITests", "GlyphCacheCLITests", "AgentCLITests",
    "NoSharedMemoryCaptureCLITests", "WindowTests", "PipelineCLITests", "BenchCommandTests", "WebToolsCLITests",
    "JSONOutputCLITests",
}
# `--quick` leaves out the X-heavy command-line targets and the real-app suites: for the edit loop.
QUICK_SKIP_TARGETS = {"XclawCLITests", "XclawExamplesTests"}
QUICK_SKIP_CLASSES = {"GroundingTests", "ReplayAppsCLITests", "AccessibilityTests"}
# A shard that runs longer than this is stuck: it is killed and reported.
SHARD_LIMIT_SECONDS = 25 * 60


def list_classes():
    """The test classes in the bundle, as (target, class), in the bundle's order."""
    out = subprocess.run([BUNDLE, "--list-tests"], capture_output=True, text=True, check=True).stdout
    seen = []
    for line in out.splitlines():
        match = re.match(r"^(\w+)\.(\w+)/\w+$", line.strip())
        if match and match.groups() not in seen:
            seen.append(match.groups())
    return seen


def read_weights():
    """Measured seconds per job name ("Class" in-process, "daemon:Class" through the daemon)."""
    weights = {}
    if os.path.exists(WEIGHTS):
        for line in open(WEIGHTS, encoding="utf-8"):
            parts = line.split()
            if len(parts) == 2 and not line.startswith("#"):
                weights[parts[0]] = float(parts[1])
    return weights


def plan(classes, jobs, quick, weights):
    """Shards as lists of (job name, target, class, daemon?), balanced by weight, heaviest first in each."""

    def weight(job):
        return weights.get(job[0], 2.0)  # a class not measured yet: about an average one

    work = []
    for target, name in classes:
        if quick and (target in QUICK_SKIP_TARGETS or name in QUICK_SKIP_CLASSES):
            continue
        work.append((name, target, name, False))
        if not quick and target == "XclawCLITests" and name in DAEMON_CLASSES:
            work.append(("daemon:" + name, target, name, True))
    work.sort(key=lambda job: -weight(job))
    # In-process and daemon jobs go to separate shards: one xctest process runs in one mode.
    daemon_jobs = [job for job in work if job[3]]
    plain_jobs = [job for job in work if not job[3]]
    total = sum(map(weight, work)) or 1.0
    daemon_share = sum(map(weight, daemon_jobs)) / total
    daemon_shards = max(1, round(jobs * daemon_share)) if daemon_jobs else 0
    plain_shards = max(1, jobs - daemon_shards)
    shards = []
    for group, count in ((plain_jobs, plain_shards), (daemon_jobs, daemon_shards)):
        bins = [[] for _ in range(count)]
        loads = [0.0] * count
        for job in group:
            index = loads.index(min(loads))
            bins[index].append(job)
            loads[index] += weight(job)
        shards += [b for b in bins if b]
    return shards


def environment(scratch, index, daemon):
    """The shard's environment: private XDG directories, and the daemon switch."""
    env = dict(os.environ)
    for variable in ("XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        path = os.path.join(scratch, f"shard{index}", variable.lower())
        os.makedirs(path, mode=0o700, exist_ok=True)
        env[variable] = path
    env["XCLAW_TEST_DAEMON"] = "1" if daemon else "0"
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="leave out the X-heavy CLI and real-app suites")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("XCLAW_TEST_JOBS", "6")))
    parser.add_argument("--record", action="store_true", help="rewrite scripts/test-weights.txt from this run")
    parser.add_argument("--list", action="store_true", help="print the shards and exit")
    args = parser.parse_args()
    if not os.path.exists(BUNDLE):
        sys.exit(f"run-tests: {BUNDLE} is missing: build first (swift build --build-tests)")

    weights = read_weights()
    shards = plan(list_classes(), max(1, args.jobs), args.quick, weights)
    if args.list:
        for index, shard in enumerate(shards):
            load = sum(weights.get(job[0], 2.0) for job in shard)
            print(f"shard {index} ({load:.0f} s): " + " ".join(job[0] for job in shard))
        return 0

    scratch = tempfile.mkdtemp(prefix="xclaw-tests-")
    started = time.monotonic()
    running = []
    for index, shard in enumerate(shards):
        daemon = shard[0][3]
        log_path = os.path.join(scratch, f"shard{index}.log")
        log = open(log_path, "w", encoding="utf-8")
        names = ",".join(f"{target}.{name}" for _, target, name, _ in shard)
        process = subprocess.Popen(
            [BUNDLE, names], cwd=ROOT, env=environment(scratch, index, daemon), stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        running.append((index, shard, process, log, log_path))
    print(f"run-tests: {len(shards)} shards, logs in {scratch}", flush=True)

    failed = False
    durations = {}
    for index, shard, process, log, log_path in running:
        remaining = SHARD_LIMIT_SECONDS - (time.monotonic() - started)
        try:
            status = process.wait(timeout=max(1, remaining))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            status = process.wait()
            print(f"run-tests: shard {index} ran longer than {SHARD_LIMIT_SECONDS} s and was killed")
        log.close()
        text = open(log_path, encoding="utf-8", errors="replace").read()
        mode = "daemon" if shard[0][3] else "in-process"
        for match in re.finditer(r"Test Suite '(\w+)' (?:passed|failed) at .*\n\s+Executed \d+ tests?, .*?in "
                                 r"(\d+\.\d+) \(", text):
            if match.group(1) not in ("Selected tests", "All tests") and not match.group(1).endswith(".xctest"):
                durations[("daemon:" if shard[0][3] else "") + match.group(1)] = float(match.group(2))
        summary = re.findall(r"Test Suite 'Selected tests' (?:passed|failed).*\n\s+(Executed .*)", text)
        print(f"run-tests: shard {index} ({mode}, {len(shard)} classes): "
              f"{summary[-1] if summary else 'no summary'}; exit {status}", flush=True)
        if status != 0:
            failed = True
            errors = [line for line in text.splitlines() if ": error: " in line or "' failed (" in line]
            print(f"---- shard {index} failures ({log_path}) ----")
            print("\n".join(errors[:80]) if errors else "\n".join(text.splitlines()[-60:]))
            print("----")
    print(f"run-tests: {'FAILED' if failed else 'all passed'} in {time.monotonic() - started:.0f} s", flush=True)
    if args.record and not failed:
        with open(WEIGHTS, "w", encoding="utf-8") as out:
            out.write("# Seconds per test class, measured by scripts/run-tests.py --record; "
                      "'daemon:' marks the daemon pass.\n")
            for name in sorted(durations):
                out.write(f"{name} {durations[name]:.1f}\n")
    if not failed:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
