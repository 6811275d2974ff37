#!/usr/bin/env python3
"""Writes xclaw's man pages from the command tree the binary itself describes.

    python3 scripts/gen-man.py --core .build/release/xclaw-core --out DIR [--date YYYY-MM-DD]
    python3 scripts/gen-man.py --dump tree.json --version 0.1.0 --out DIR

`xclaw-core --experimental-dump-help` prints every command with its abstract, discussion and arguments (the same
text `--help` shows), so the pages cannot drift from the help. Pages: xclaw.1 (the overview: every command, the
front's own option, exit codes, environment, files) and one per visible command, xclaw-CMD.1, nested commands
joined by dashes (xclaw-window-resize.1). A command's discussion is read for three things besides its prose: a
trailing "Examples:" block (lines `  xclaw …  # what it does`) and lines that start with `xclaw ` become EXAMPLES;
sentences that start with "Exit" become EXIT STATUS, followed by the codes every command shares. The output is
plain ASCII roff (other characters as \\[uXXXX]), so `groff -man -ww` reads it without preconv.
Standard library only. Exit status: 0 written, 1 the tree is not what this script understands, 2 bad usage.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys

# The manual's own text, which the command tree does not carry: the front's option, the variables and the files.
FRONT_OPTIONS = [
    (
        "--no-daemon",
        "Run the command in this process even when a daemon runs (also XCLAW_NO_DAEMON=1). "
        "The option belongs to the xclaw front and may stand anywhere before `--`.",
    ),
]

# (name, meaning). Every XCLAW_ variable the sources read is either here or in scripts/gen-man.py's INTERNAL list,
# which DebianPackageTests checks.
ENVIRONMENT = [
    ("DISPLAY", "The X display a command acts on when --display is not given."),
    ("XCLAW_NO_DAEMON", "1: run every command in-process, as --no-daemon does."),
    (
        "XCLAW_DAEMON",
        "auto (the default): a command the daemon serves starts one when none runs; off: none is started (else "
        "`daemon` in the config file).",
    ),
    (
        "XCLAW_DAEMON_IDLE_EXIT",
        "How long a daemon a command started stays without a command: 900, 90s, 15m, 2h; 0 never (else "
        "`daemon_idle_exit`; default 15m).",
    ),
    (
        "ANTHROPIC_API_KEY",
        "The Claude API key for `run`, `send`, `chat`, `pipeline` and healing replays "
        "(else `api_key` in the config file).",
    ),
    ("ANTHROPIC_BASE_URL", "Another root for the Messages API (a proxy, or a loopback test server)."),
    ("XCLAW_DATABASE_URL", "The store: a `postgres://` URL (a fleet) or a SQLite file. Wins over XCLAW_DB."),
    ("XCLAW_DB", "The store's SQLite file (else `database` in the config file, else the default under FILES)."),
    ("XCLAW_STATE_DIR", "The per-user state directory (else $XDG_RUNTIME_DIR/xclaw, else /tmp/xclaw-UID)."),
    (
        "XDG_RUNTIME_DIR, XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_STATE_HOME, XDG_CACHE_HOME",
        "Where the directories under FILES are.",
    ),
    ("XCLAW_OCR_LANG", "OCR languages as tesseract codes (eng+deu) when --lang is not given."),
    ("XCLAW_OCR_WORKERS", "OCR engines read in parallel (1 to 16; default: the cores, at most 4)."),
    ("XCLAW_OCR_CACHE_BLOCKS", "Text blocks the OCR cache keeps per display (100 to 1000000; default 6000)."),
    ("TESSDATA_PREFIX", "Where tesseract's language files are, when not in the distribution's place."),
    ("XCLAW_CONTROL_READING", "0: snapshots read no control's label glyph by glyph (faster, less exact)."),
    ("XCLAW_ATSPI", "The accessibility helper to run instead of xclaw-atspi beside the binary."),
    ("XCLAW_ATSPI_TIMEOUT_MS", "How long an accessibility read may take (100 to 600000 ms; default 2000)."),
    ("XCLAW_KEYMAP_SETTLE_MS", "How long apps get to read a key typed through a rebound keycode (default 300)."),
    ("XCLAW_LOG", "Log level on stderr: trace, debug, info (default), notice, warning, error, critical."),
    (
        "XCLAW_IDLE_TIMEOUT",
        "Seconds a model request may receive nothing before the attempt counts as failed (else `idle_timeout`; "
        "default 90).",
    ),
    ("XCLAW_RETRY_BUDGET", "Seconds a model request may take with all its retries (else `retry_budget`; default 120)."),
    (
        "XCLAW_FETCH_ALLOW_PRIVATE",
        "Private addresses the fetch_url tool may reach: true (all), a list of addresses and CIDR ranges, or false "
        "(none, the default); else `fetch_allow_private`.",
    ),
    ("BRAVE_API_KEY", "The key of the web_search tool (Brave Search)."),
    ("XCLAW_BRAVE_BASE_URL", "Another root for the Brave Search API."),
    (
        "XCLAW_WEB_MAX_CONNECTIONS, XCLAW_WEB_MAX_PER_PEER, XCLAW_WEB_HEAD_SECONDS, XCLAW_WEB_IDLE_SECONDS",
        "The web view's limits: connections in all and per peer, seconds for a request's head and idle seconds.",
    ),
    (
        "XCLAW_DAEMON_RECYCLE_AFTER",
        "Dropped X connections after which the daemon re-executes itself (default 256).",
    ),
    ("XCLAW_FLEET_LOST_AFTER", "Seconds without a heartbeat after which a fleet worker is lost (default 30)."),
]

# XCLAW_ names in the sources that are no user's setting: xclaw sets them for its own children, the tests set them,
# or (XCLAW_WEB_TOKEN) a secret's name that xclaw keeps out of the environment of what it starts.
INTERNAL = [
    "XCLAW_WEB_TOKEN",
    "XCLAW_A11Y_DISPLAY",
    "XCLAW_DAEMON_HANDOVER",
    "XCLAW_FLEET_RUN",
    "XCLAW_RUN_ID",
    "XCLAW_WEB_ASSETS",
    "XCLAW_TEST_DAEMON",
    "XCLAW_TEST_VENVS",
    "XCLAW_FUZZ_SEED",
]

FILES = [
    (
        "~/.config/xclaw/config",
        "Settings, `key = value` lines: api_key (mode 600), database, ocr_lang, stop_key, failsafe, idle_timeout, "
        "report_keep_runs, report_max_mb and more ($XDG_CONFIG_HOME/xclaw when set).",
    ),
    ("~/.config/xclaw/models.json", "Models added to or overriding the built-in catalog."),
    ("~/.config/xclaw/roles/NAME.md", "Pipeline roles of your own."),
    ("~/.local/share/xclaw/xclaw.sqlite", "The store: agents, their history, runs, schedules, scripts."),
    ("~/.local/state/xclaw/runs/", "Action logs of runs, one JSON-lines file each."),
    ("~/.local/state/xclaw/reports/", "Kept run reports (`xclaw report`)."),
    ("~/.cache/xclaw/", "Glyphs rendered from the installed fonts; made again when removed."),
    (
        "$XDG_RUNTIME_DIR/xclaw/",
        "Per-session state: display records, daemon.sock, daemon.log, schedule.log, the OCR cache, display locks.",
    ),
    (
        "/usr/lib/xclaw/",
        "Beside the front: xclaw-core (every command the front does not do itself), xclaw-atspi (the accessibility "
        "helper) and xclaw-mock-api (the scripted model of the demo).",
    ),
    ("/usr/lib/systemd/user/xclaw.service", "The daemon as a systemd user service: systemctl --user enable --now xclaw"),
    (
        "/usr/share/doc/xclaw/",
        "The README, the documentation, the JSON output schemas (json/) and the examples (examples/demo.sh; "
        "examples/systemd/xclaw-worker.service, a fleet worker as a system service).",
    ),
]

SEE_ALSO_OUTSIDE = ["Xvfb(1)", "xdotool(1)", "tesseract(1)", "systemctl(1)"]

EXIT_SENTENCE = re.compile(r"^Exits?(:| codes:| \d)")


def fail(message, status=1):
    """Ends the script: the message on stderr, the status for the caller."""
    print(f"gen-man: {message}", file=sys.stderr)
    sys.exit(status)


def escape(text):
    """Plain text as roff: backslashes, dashes (\\- copies as a minus) and non-ASCII as \\[uXXXX]."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\e")
        elif ch == "-":
            out.append("\\-")
        elif ord(ch) > 127:
            out.append("\\[u%04X]" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def inline(text):
    """Prose as one text line: `code` spans set in bold, escaped, guarded when it would start like a request."""
    parts = re.split(r"`([^`]+)`", " ".join(text.split()))
    line = "".join(escape(p) if i % 2 == 0 else "\\fB" + escape(p) + "\\fR" for i, p in enumerate(parts))
    return "\\&" + line if line.startswith((".", "'")) else line


def split_comment(line):
    """An example line as (command, comment): the comment is a `#` word after blanks, outside quotes."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and i > 0 and line[i - 1] in " \t" and line[i + 1 : i + 2] in ("", " ", "\t"):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def sentences(paragraph):
    """A paragraph's sentences: split after . ! ? before a capital, a dash, a backtick or a dollar."""
    return re.split(r"(?<=[.!?])\s+(?=[A-Z`$-])", paragraph)


class Discussion:
    """A command's discussion, read into prose paragraphs, examples and exit sentences."""

    def __init__(self, text):
        self.paragraphs = []
        self.examples = []
        self.exits = []
        lines = (text or "").split("\n")
        # The trailing block: "Examples:" (or "Example:") alone on its line, then indented `xclaw …` lines.
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].strip() in ("Examples:", "Example:"):
                block = [line for line in lines[i + 1 :] if line.strip()]
                if block and all(line[:1].isspace() and line.strip().startswith("xclaw ") for line in block):
                    self.examples = [split_comment(line.strip()) for line in block]
                    lines = lines[:i]
                break
        current = []
        leading_examples = []
        for line in lines:
            stripped = line.strip()
            if stripped.startswith("xclaw "):
                leading_examples.append(split_comment(stripped))
                continue
            if not stripped:
                self._flush(current)
                current = []
                continue
            current.append(stripped)
            # A line that ends a sentence ends the paragraph; a hard-wrapped one goes on.
            if stripped[-1] in ".!?:":
                self._flush(current)
                current = []
        self._flush(current)
        self.examples = leading_examples + self.examples

    def _flush(self, current):
        """Adds the joined lines as a paragraph, its sentences about exit codes set apart."""
        if not current:
            return
        prose, exits = [], []
        for sentence in sentences(" ".join(current)):
            (exits if EXIT_SENTENCE.match(sentence) else prose).append(sentence)
        if prose:
            self.paragraphs.append(" ".join(prose))
        if exits:
            self.exits.append(" ".join(exits))


def exit_legend(root):
    """The exit codes every command shares, from the root's "Exit codes: 0 ok; 1 …" sentence."""
    found = [p for p in Discussion(root.get("discussion")).exits if p.startswith("Exit codes:")]
    if not found:
        fail("the root command's discussion has no 'Exit codes: 0 ok; …' sentence (ExitStatus.legend)")
    body = found[0][len("Exit codes:") :].strip().rstrip(".")
    items, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ";" and depth == 0:
            items.append(body[start:i].strip())
            start = i + 1
    items.append(body[start:].strip())
    codes = []
    for item in items:
        code, _, meaning = item.partition(" ")
        if not code.isdigit():
            fail(f"cannot read the exit code legend's item {item!r}")
        codes.append((code, meaning))
    return codes


def visible(command):
    """The subcommands a page lists: displayed ones, without ArgumentParser's own `help`."""
    return [c for c in command.get("subcommands", []) if c.get("shouldDisplay", True) and c["commandName"] != "help"]


def path_of(command):
    """The command's words, `xclaw` first."""
    return command.get("superCommands", []) + [command["commandName"]]


def page_name(command):
    """xclaw, xclaw-display, xclaw-window-resize."""
    return "-".join(path_of(command))


def arguments(command):
    """The displayed arguments."""
    return [a for a in command.get("arguments", []) if a.get("shouldDisplay", True)]


def spelled(name):
    """A name as typed: --long, -s, -long."""
    return {"long": "--", "short": "-", "longWithSingleDash": "-"}[name["kind"]] + name["name"]


def synopsis_item(arg):
    """One argument in the synopsis, bracketed when optional."""
    value = "\\fI" + escape(arg.get("valueName", "value")) + "\\fR"
    if arg["kind"] == "positional":
        text = value
    else:
        text = "\\fB" + escape(spelled(arg["preferredName"])) + "\\fR"
        if arg["kind"] == "option":
            text += " " + value
    if arg.get("isRepeating"):
        text += " ..."
    return "[" + text + "]" if arg.get("isOptional") else text


def option_lines(arg):
    """An argument's .TP entry: names and value, then its help, default and accepted values."""
    value = "\\fI" + escape(arg.get("valueName", "value")) + "\\fR"
    if arg["kind"] == "positional":
        head = value + (" ..." if arg.get("isRepeating") else "")
    else:
        head = ", ".join("\\fB" + escape(spelled(n)) + "\\fR" for n in arg.get("names", []))
        if arg["kind"] == "option":
            head += " " + value + (" ..." if arg.get("isRepeating") else "")
    body = inline(arg.get("abstract", ""))
    extras = []
    if arg.get("allValues"):
        extras.append("values: " + ", ".join(arg["allValues"]))
    if arg.get("defaultValue") is not None and arg["kind"] != "flag":
        extras.append("default: " + arg["defaultValue"])
    if extras:
        body += " (" + escape("; ".join(extras)) + ")"
    out = [".TP", head, body.strip() or "\\&"]
    if arg.get("discussion"):
        out += [".IP", inline(arg["discussion"])]
    return out


def see_also(items):
    """A SEE ALSO list: xclaw pages bold, others as given."""
    out = []
    for i, item in enumerate(items):
        name, _, section = item.partition("(")
        out.append(".BR " + escape(name) + " (" + section + ("," if i < len(items) - 1 else ""))
    return out


def header(name, version, date):
    """The .TH line and the page's settings."""
    # .nh and .ad l: an option name is never broken at a hyphen, nor stretched across a justified line.
    return [f'.TH "{escape(name.upper())}" 1 "{date}" "xclaw {escape(version)}" "xclaw manual"', ".nh", ".ad l"]


def examples_section(examples):
    """EXAMPLES: each command in bold on its own line, what it does below it."""
    if not examples:
        return []
    out = [".SH EXAMPLES"]
    for command, comment in examples:
        out += [".TP", "\\fB" + escape(command) + "\\fR", inline(comment) if comment else "\\&"]
    return out


def exit_section(own, legend, shared_intro):
    """EXIT STATUS: the command's own sentences, then the codes every command uses."""
    out = [".SH EXIT STATUS"]
    for paragraph in own:
        out += [".PP", inline(paragraph)]
    if shared_intro:
        out += [".PP", shared_intro]
    for code, meaning in legend:
        out += [".TP", "\\fB" + code + "\\fR", inline(meaning)]
    return out


def command_page(command, legend, version, date):
    """The page of one command (a group or a leaf)."""
    name = page_name(command)
    words = " ".join(path_of(command))
    info = Discussion(command.get("discussion"))
    subs = visible(command)
    args = arguments(command)
    out = header(name, version, date)
    out += [".SH NAME", escape(name) + " \\- " + inline(command.get("abstract", "").rstrip("."))]
    out += [".SH SYNOPSIS", ".B " + escape(words)]
    if subs:
        out.append("\\fIcommand\\fR [\\fIoptions\\fR]")
    else:
        shown = [a for a in args if not (a.get("names") and spelled(a["preferredName"]) in ("--help", "--version"))]
        out.append(" ".join(synopsis_item(a) for a in shown))
    out += [".SH DESCRIPTION", inline(command.get("abstract", ""))]
    for paragraph in info.paragraphs:
        out += [".PP", inline(paragraph)]
    if command.get("defaultSubcommand"):
        out += [
            ".PP",
            f"Without a command, \\fB{escape(words)}\\fR runs \\fB{escape(words + ' ' + command['defaultSubcommand'])}\\fR.",
        ]
    if subs:
        out.append(".SH COMMANDS")
        for sub in subs:
            out += [
                ".TP",
                "\\fB" + escape(sub["commandName"]) + "\\fR",
                inline(sub.get("abstract", "")) + " See \\fB" + escape(page_name(sub)) + "\\fR(1).",
            ]
    if args:
        out.append(".SH OPTIONS")
        for arg in args:
            out += option_lines(arg)
    out += examples_section(info.examples)
    out += exit_section(info.exits, legend, "The codes every xclaw command uses:")
    related = ["xclaw(1)"]
    if len(path_of(command)) > 2:
        related.append(page_name({"commandName": path_of(command)[-2], "superCommands": path_of(command)[:-2]}) + "(1)")
    related += [page_name(s) + "(1)" for s in subs]
    out += [".SH SEE ALSO"] + see_also(related)
    return out


def all_commands(command):
    """Every visible command below `command`, depth first, in the order help lists them."""
    for sub in visible(command):
        yield sub
        yield from all_commands(sub)


def root_page(root, legend, version, date):
    """xclaw.1: what xclaw is, every command, the front's option, exit codes, environment and files."""
    info = Discussion(root.get("discussion"))
    out = header("xclaw", version, date)
    out += [".SH NAME", "xclaw \\- " + inline(root.get("abstract", "").rstrip("."))]
    out += [".SH SYNOPSIS", ".B xclaw", "\\fIcommand\\fR [\\fIoptions\\fR]", ".br", ".B xclaw", "\\fB\\-\\-version\\fR"]
    out += [".SH DESCRIPTION", inline(root.get("abstract", ""))]
    out += [
        ".PP",
        inline(
            "The `xclaw` front does plain input itself, hands a command to the resident daemon when one runs "
            "(`xclaw daemon start`), and otherwise runs xclaw-core, installed beside it, in its place. Each command "
            "has a page of its own: xclaw-COMMAND(1), nested commands joined by dashes (xclaw-window-resize(1)); "
            "`xclaw COMMAND --help` prints the same text."
        ),
    ]
    for paragraph in info.paragraphs:
        out += [".PP", inline(paragraph)]
    out.append(".SH COMMANDS")
    for command in all_commands(root):
        out += [
            ".TP",
            "\\fB" + escape(" ".join(path_of(command)[1:])) + "\\fR",
            inline(command.get("abstract", "")) + " See \\fB" + escape(page_name(command)) + "\\fR(1).",
        ]
    out.append(".SH OPTIONS")
    for name, text in FRONT_OPTIONS:
        out += [".TP", "\\fB" + escape(name) + "\\fR", inline(text)]
    for arg in arguments(root):
        out += option_lines(arg)
    out += examples_section(info.examples)
    out += exit_section([p for p in info.exits if not p.startswith("Exit codes:")], legend, None)
    out.append(".SH ENVIRONMENT")
    for name, text in ENVIRONMENT:
        out += [".TP", "\\fB" + escape(name) + "\\fR", inline(text)]
    out.append(".SH FILES")
    for name, text in FILES:
        out += [".TP", "\\fI" + escape(name) + "\\fR", inline(text)]
    pages = [page_name(c) + "(1)" for c in visible(root)]
    out += [".SH SEE ALSO"] + see_also(pages + SEE_ALSO_OUTSIDE)
    return out


def main():
    """Reads the options, gets the command tree and writes every page."""
    parser = argparse.ArgumentParser(description="Write xclaw's man pages from its command tree.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--core", help="the xclaw-core binary to ask (--experimental-dump-help, --version)")
    source.add_argument("--dump", help="a saved --experimental-dump-help tree (then --version is needed)")
    parser.add_argument("--version", help="the version the pages name (default: xclaw-core --version)")
    parser.add_argument("--date", help="the pages' date, YYYY-MM-DD (default: SOURCE_DATE_EPOCH, else today)")
    parser.add_argument("--out", required=True, help="the directory the pages are written to")
    options = parser.parse_args()
    if options.core:
        try:
            dump = subprocess.run([options.core, "--experimental-dump-help"], capture_output=True, check=True).stdout
            version = options.version or subprocess.run(
                [options.core, "--version"], capture_output=True, check=True, text=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError) as error:
            fail(f"cannot ask {options.core} for its command tree: {error}")
    else:
        if not options.version:
            fail("--dump needs --version", 2)
        with open(options.dump, "rb") as f:
            dump = f.read()
        version = options.version
    if options.date:
        date = options.date
    elif os.environ.get("SOURCE_DATE_EPOCH"):
        date = datetime.datetime.fromtimestamp(int(os.environ["SOURCE_DATE_EPOCH"]), datetime.timezone.utc)
        date = date.strftime("%Y-%m-%d")
    else:
        date = datetime.date.today().isoformat()
    tree = json.loads(dump)
    if tree.get("serializationVersion") != 0:
        fail(f"unknown dump-help serialization version {tree.get('serializationVersion')} (this script reads 0)")
    root = tree["command"]
    legend = exit_legend(root)
    os.makedirs(options.out, exist_ok=True)
    pages = {"xclaw": root_page(root, legend, version, date)}
    for command in all_commands(root):
        pages[page_name(command)] = command_page(command, legend, version, date)
    for name, page in pages.items():
        with open(os.path.join(options.out, name + ".1"), "w", encoding="ascii") as f:
            f.write("\n".join(page) + "\n")
    print(f"gen-man: {len(pages)} pages in {options.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
