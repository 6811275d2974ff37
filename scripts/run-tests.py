#!/usr/bin/env python3
"""Runs the built test bundle in parallel and says what failed.

Several workers (--jobs, default 6) take test classes from one queue, heaviest first, each class (or a batch of
small ones) in an xctest process of its own: tests start their own Xvfb through -displayfd, their own state
directories and loopback servers, so they share nothing; each job gets private XDG directories so tests that use
the defaults do not meet either. The daemon pass (the CLI classes about what the daemon serves differently, again
with every command handed to a daemon, XCLAW_TEST_DAEMON=1) takes its classes from the same queue. A queue rather
than shards fixed in advance: on a loaded machine a class's seconds vary by half, and fixed shards ended up to a
minute apart. Weights are measured seconds (scripts/test-weights.txt); `--record` rewrites that file from this run.

Usage: scripts/run-tests.py [--quick] [--jobs N] [--record] [--list]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The tree scripts/build-tests.sh builds: unoptimized, without DEBUG, a module at a time.
BUNDLE = os.path.join(ROOT, ".build-tests", "release", "xclawPackageTests.xctest")
WEIGHTS = os.path.join(ROOT, "scripts", "test-weights.txt")
VENVS = os.path.join(ROOT, ".build-tests", "venvs")

# The daemon pass runs again, through a daemon, the CLI tests about what the daemon serves differently: the wire
# (stdin, binary stdout, large outputs), signals and terminals (stops, approvals, held input), exit codes of bad
# input and of the environment, and the state it keeps between commands (perceiver, refs, accessibility, glyphs).
# A class maps to None (all its tests) or to the tests that are about those; the others ran in-process only: the
# daemon runs the same command code, and doubling every CLI test cost a third of the suite. DaemonCLITests,
# ScheduleCLITests, the web view's and the MCP tests manage their daemons themselves.
DAEMON_CLASSES = {
    "CLITests": None, "CaptureCLITests": None, "ClipboardCLITests": None, "HardeningCLITests": None,
    "StopAndApprovalTests": None, "HeldInputCLITests": None, "LanguageCLITests": None,
    "AccessibilityCLITests": None, "AccessibilitySessionTests": None, "ContextCLITests": None, "AppCLITests": None,
    "GlyphCacheCLITests": None, "NoSharedMemoryCaptureCLITests": None, "WindowTests": None,
    "PipelineCLITests": None, "BenchCommandTests": None, "WebToolsCLITests": None,
    # The desktop services' commands the daemon serves on the caller's session bus.
    "NotificationCLITests": None, "MediaCLITests": None, "UnitsCLITests": None, "CalendarCLITests": None,
    "ShortcutsCLITests": None,
    # Not the stable wait against an animation: the daemon computes it with the same code, on the same screen.
    "PerceptionCLITests": {
        "testCLIFindTapAndExitCodes", "testCLIWatchExitsZeroOnAMatchAndOneOnTimeout",
        "testStateFilesArePrivateAndAPlantedStateDirectoryIsRefused",
        "testTapAndFindWaitForTheirTargetAndWatchWaitsForWindows",
    },
    # Not the store's memory and export: the daemon keeps none of it, each command opens the database.
    "AgentCLITests": {
        "testChatCtrlCCancelsTheTurnNotTheProgram", "testHostileUpstreamsFailSendWithExit4InBoundedTime",
        "testKilledBeforeAnsweringTheNextRunAnswersThoseMessages",
        "testKilledMidReplyTheHistoryKeepsThePartialAndTheAgentContinues",
        "testModelTextCannotDriveTheTerminalUnlessRawIsAskedForOnAPipe",
        "testSendStoppedBySIGTERMExits143AndCtrlC130", "testTwoProcessesSendingToOneAgentTakeTurns",
    },
    # The error object and its exit code on the wire, and a daemon that dies; not the schema of every command's
    # result, which is the same command code's output (the wire's bytes are checked by CLITests and
    # CaptureCLITests through the daemon).
    "JSONOutputCLITests": {
        "testAFailureWithJSONPrintsOneErrorObjectAndKeepsItsExitCode",
        "testAResultThenAFailureKeepsOneObjectAndAKeyNeverShows",
        "testADaemonThatDiesUnderACommandIsReportedAsAnErrorObject",
    },
}
# `--quick` leaves out the X-heavy command-line targets and the real-app suites: for the edit loop.
QUICK_SKIP_TARGETS = {"XclawCLITests", "XclawExamplesTests"}
QUICK_SKIP_CLASSES = {"GroundingTests", "ReplayAppsCLITests", "AccessibilityTests"}
# A suite that runs longer than this is stuck: what still runs is killed and reported.
SHARD_LIMIT_SECONDS = 25 * 60


def list_classes():
    """The test classes in the bundle, as (target, class), in the bundle's order; and every test as (class, test)."""
    out = subprocess.run([BUNDLE, "--list-tests"], capture_output=True, text=True, check=True).stdout
    seen, tests = [], set()
    for line in out.splitlines():
        match = re.match(r"^(\w+)\.(\w+)/(\w+)$", line.strip())
        if match:
            tests.add(match.group(2, 3))
            if match.group(1, 2) not in seen:
                seen.append(match.group(1, 2))
    return seen, tests


def selectors(job):
    """The xctest selectors of a job: whole classes, or the daemon pass's chosen tests of a class."""
    out = []
    for _, target, name, daemon in job:
        chosen = DAEMON_CLASSES.get(name) if daemon else None
        out += [f"{target}.{name}/{test}" for test in sorted(chosen)] if chosen else [f"{target}.{name}"]
    return out


def read_weights():
    """Measured seconds per job name ("Class" in-process, "daemon:Class" through the daemon)."""
    weights = {}
    if os.path.exists(WEIGHTS):
        for line in open(WEIGHTS, encoding="utf-8"):
            parts = line.split()
            if len(parts) == 2 and not line.startswith("#"):
                weights[parts[0]] = float(parts[1])
    return weights


# Classes lighter than this go in batches of about this many seconds: an xctest process costs a fraction of a second to
# start, and the queue needs few long jobs, not many tiny ones.
BATCH_SECONDS = 12.0


def plan(classes, known_tests, quick, weights):
    """Jobs as lists of (job name, target, class, daemon?), heaviest first; light classes batched by mode."""

    def weight(job):
        return weights.get(job[0], 2.0)  # a class not measured yet: about an average one

    work = []
    for target, name in classes:
        if quick and (target in QUICK_SKIP_TARGETS or name in QUICK_SKIP_CLASSES):
            continue
        work.append((name, target, name, False))
        if not quick and target == "XclawCLITests" and name in DAEMON_CLASSES:
            work.append(("daemon:" + name, target, name, True))
    # A renamed class or test must not silently leave the daemon pass.
    unknown = set(DAEMON_CLASSES) - {name for target, name in classes if target == "XclawCLITests"}
    unknown |= {(name, test) for name, tests in DAEMON_CLASSES.items() for test in tests or ()} - known_tests
    if unknown:
        sys.exit(f"run-tests: DAEMON_CLASSES names what the bundle does not have: {sorted(map(str, unknown))}")
    work.sort(key=lambda job: -weight(job))
    jobs, batches = [], {False: [], True: []}
    for job in work:
        if weight(job) >= BATCH_SECONDS:
            jobs.append([job])
            continue
        batch = batches[job[3]]
        batch.append(job)
        if sum(map(weight, batch)) >= BATCH_SECONDS:
            jobs.append(batch)
            batches[job[3]] = []
    jobs += [batch for batch in batches.values() if batch]
    jobs.sort(key=lambda batch: -sum(map(weight, batch)))
    return jobs


def environment(scratch, index, daemon):
    """The job's environment: XDG directories of its own, and the daemon switch. Of its own, not its worker's: the
    state directory holds the daemon's socket, and a daemon the previous job's process started (it ends with that
    process) once answered the next job's command, and died under it."""
    env = dict(os.environ)
    for variable in ("XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        path = os.path.join(scratch, f"job{index:03d}", variable.lower())
        os.makedirs(path, mode=0o700, exist_ok=True)
        env[variable] = path
    env["XCLAW_TEST_DAEMON"] = "1" if daemon else "0"
    # No command starts a daemon of its own (fast by default): the daemon pass starts its own, and the tests of the
    # automatic start say XCLAW_DAEMON=auto.
    env["XCLAW_DAEMON"] = "off"
    # OCR reads the locale's language by default: every job reads as on a C.UTF-8 machine, whatever this one's is;
    # the tests of that default set their own locale.
    for variable in ("LC_ALL", "LC_MESSAGES", "LANGUAGE"):
        env.pop(variable, None)
    env["LANG"] = "C.UTF-8"
    # The test clients' Python venv (PythonVenv): one for every job, kept with the build. In each job's own state
    # directory it was made again by every job that used it, 5-15 CPU-seconds each, a tenth of the suite's CPU.
    env["XCLAW_TEST_VENVS"] = VENVS
    return env


def run_job(job, index, scratch, deadline):
    """Runs one job's classes in one xctest process; returns (status, log path, text)."""
    daemon = job[0][3]
    log_path = os.path.join(scratch, f"job{index:03d}.log")
    names = ",".join(selectors(job))
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            [BUNDLE, names], cwd=ROOT, env=environment(scratch, index, daemon), stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            status = process.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            status = process.wait()
            log.write(f"\nrun-tests: killed after the suite's {SHARD_LIMIT_SECONDS} s\n")
    return status, log_path, open(log_path, encoding="utf-8", errors="replace").read()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="leave out the X-heavy CLI and real-app suites")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("XCLAW_TEST_JOBS", "6")))
    parser.add_argument("--record", action="store_true", help="rewrite scripts/test-weights.txt from this run")
    parser.add_argument("--list", action="store_true", help="print the queue and exit")
    args = parser.parse_args()
    if not os.path.exists(BUNDLE):
        sys.exit(f"run-tests: {BUNDLE} is missing: build first (bash scripts/build-tests.sh)")

    weights = read_weights()
    classes, known_tests = list_classes()
    jobs = plan(classes, known_tests, args.quick, weights)
    if args.list:
        for index, job in enumerate(jobs):
            load = sum(weights.get(item[0], 2.0) for item in job)
            print(f"job {index} ({load:.0f} s): " + " ".join(item[0] for item in job))
        return 0

    scratch = tempfile.mkdtemp(prefix="xclaw-tests-")
    started = time.monotonic()
    deadline = started + SHARD_LIMIT_SECONDS
    workers = max(1, args.jobs)
    print(f"run-tests: {len(jobs)} jobs on {workers} workers, logs in {scratch}", flush=True)
    queue = list(enumerate(jobs))
    lock = threading.Lock()
    results = {}

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                index, job = queue.pop(0)
            results[index] = (job, *run_job(job, index, scratch, deadline))

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    failed = False
    durations = {}
    executed = failures = 0
    for index in sorted(results):
        job, status, log_path, text = results[index]
        for match in re.finditer(r"Test Suite '(\w+)' (?:passed|failed) at .*\n\s+Executed \d+ tests?, .*?in "
                                 r"(\d+\.\d+) \(", text):
            if match.group(1) not in ("Selected tests", "All tests") and not match.group(1).endswith(".xctest"):
                durations[("daemon:" if job[0][3] else "") + match.group(1)] = float(match.group(2))
        summary = re.findall(r"Test Suite 'Selected tests' (?:passed|failed).*\n\s+Executed (\d+) tests?, with (\d+) "
                             r"failures?", text)
        if summary:
            executed += int(summary[-1][0])
            failures += int(summary[-1][1])
        if status != 0 or not summary:
            failed = True
            mode = "daemon" if job[0][3] else "in-process"
            errors = [line for line in text.splitlines() if ": error: " in line or "' failed (" in line]
            print(f"---- job {index} ({mode}: {' '.join(item[2] for item in job)}) exit {status} ({log_path}) ----")
            print("\n".join(errors[:80]) if errors else "\n".join(text.splitlines()[-60:]))
            print("----")
    print(f"run-tests: {executed} tests, {failures} failures; {'FAILED' if failed else 'all passed'} in "
          f"{time.monotonic() - started:.0f} s", flush=True)
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
