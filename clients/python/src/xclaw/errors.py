"""Typed exceptions for xclaw's documented exit codes and the JSON error object (`{"error": {…}}`).

| exit | exception |
|---|---|
| 1 | `NotFound`; `AmbiguousMatch` (a tie, with `candidates`), `UncertainMatch` (a guess it won't act on), `Timeout` |
| 2 | `UsageError` (also a `ValueError`) |
| 3 | `DisplayLost` |
| 4 | `ApiError` |
| 5 | `InternalError`; `DaemonDied` (the daemon died under the command: its effect is unknown) |
| 130, 143 | `Interrupted` |
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence

from .types import Candidate, Rect

__all__ = [
    "error_for",
    "parse_candidate",
    "candidate_of",
    "XclawError",
    "NotFound",
    "AmbiguousMatch",
    "UncertainMatch",
    "Timeout",
    "UsageError",
    "DisplayLost",
    "ApiError",
    "InternalError",
    "DaemonDied",
    "Interrupted",
    "NotInstalled",
]


class XclawError(Exception):
    """A command failed: `exit_code` and `kind` as the JSON error object names them, `message` what stderr said."""

    def __init__(
        self,
        message: str,
        *,
        exit_code: int,
        kind: str,
        command: Sequence[str] = (),
        stderr: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.kind = kind
        self.command = list(command)
        self.stderr = stderr

    def __str__(self) -> str:
        """The message, as stderr showed it."""
        return self.message


class NotFound(XclawError):
    """Exit 1: nothing matched, the condition did not hold, no such window/agent, the selection was empty."""


class AmbiguousMatch(NotFound):
    """Exit 1: several places match equally and nothing tells them apart; `candidates` lists them (refs included)."""

    def __init__(
        self,
        message: str,
        *,
        candidates: Sequence[Candidate] = (),
        exit_code: int = 1,
        kind: str = "not_found",
        command: Sequence[str] = (),
        stderr: str = "",
    ) -> None:
        super().__init__(message, exit_code=exit_code, kind=kind, command=command, stderr=stderr)
        self.candidates: list[Candidate] = list(candidates)


class UncertainMatch(AmbiguousMatch):
    """Exit 1: the best match is only a guess (a look-alike, a fuzzy read) and another control could be meant."""


class Timeout(NotFound, TimeoutError):
    """Exit 1: a `watch` (or a `--timeout`) ran out before its condition held."""


class UsageError(XclawError, ValueError):
    """Exit 2: bad usage or input (a bad option value, coordinates off screen, an unknown key); nothing was done."""


class DisplayLost(XclawError):
    """Exit 3: no display, or the X server went away (also in the middle of typing)."""


class ApiError(XclawError):
    """Exit 4: the model's API failed (invalid key, an error that is not retried, retries exhausted, no network)."""


class InternalError(XclawError):
    """Exit 5: an internal error, or a missing system piece (an OCR language's data)."""


class DaemonDied(InternalError):
    """The daemon died while it ran the command: its effect is unknown, and it was not run again."""


class Interrupted(XclawError):
    """Exit 128 + a signal (130 Ctrl-C, 143 SIGTERM): the command was interrupted, held keys released."""


class NotInstalled(XclawError, FileNotFoundError):
    """The `xclaw` binary was not found (`binary=`, `$XCLAW_BIN`, then `xclaw` on PATH)."""


_KINDS = {1: "not_found", 2: "usage", 3: "display", 4: "api", 5: "internal"}
_CLASSES: dict[int, type[XclawError]] = {
    1: NotFound,
    2: UsageError,
    3: DisplayLost,
    4: ApiError,
    5: InternalError,
}

# `xclaw: "Save" matches 2 elements equally; …`, `… matches 3 places equally` (images), `… matches 2 windows; …`.
_TIE = re.compile(r"matches \d+ (elements equally|places equally|windows);")
_GUESS = re.compile(r'^(xclaw: )?not clicking "')
_TIMEOUT = re.compile(r"^(xclaw: )?timed out waiting for ")
# `e4 button "Save" @94,19 63x29 in w1 [atspi] [covered] score 1.00 confidence 97` (Match.summary), or
# `e9 button "" (unread)` for a control OCR could not read.
_ELEMENT = re.compile(
    r'^(?P<ref>[ew]\d+) (?P<role>[a-z]+) "(?P<label>(?:[^"\\]|\\.)*)(?:…)?"'
    r"(?: @(?P<x>-?\d+),(?P<y>-?\d+) (?P<w>\d+)x(?P<h>\d+))?"
    r"(?: in (?P<window>w\d+))?(?P<atspi> \[atspi\])?(?P<covered> \[covered\])?"
    r"(?: score (?P<score>[\d.]+))?(?: confidence (?P<confidence>\d+))?(?P<unread> \(unread\))?$"
)
# `@cx,cy WxH at x,y score 0.9987 [scale 1.25]` (ImageMatch.summary).
_IMAGE = re.compile(
    r"^@(?P<cx>-?\d+),(?P<cy>-?\d+) (?P<w>\d+)x(?P<h>\d+) at (?P<x>-?\d+),(?P<y>-?\d+) score (?P<score>[\d.]+)"
)


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_candidate(line: str) -> Candidate:
    """One candidate line of a refusal, read into its parts (only `line` when it is of no known shape)."""
    line = line.strip()
    element = _ELEMENT.match(line)
    if element:
        g = element.groupdict()
        box = None
        if g["x"] is not None:
            w, h = int(g["w"]), int(g["h"])
            box = Rect(int(g["x"]) - w // 2, int(g["y"]) - h // 2, w, h)
        return Candidate(
            line=line,
            ref=g["ref"],
            role=g["role"],
            label=_unquote(g["label"]),
            box=box,
            window=g["window"],
            score=float(g["score"]) if g["score"] else None,
            confidence=float(g["confidence"]) if g["confidence"] else None,
            source="atspi" if g["atspi"] else None,
            covered=bool(g["covered"]),
            unread=bool(g["unread"]),
        )
    image = _IMAGE.match(line)
    if image:
        g = image.groupdict()
        return Candidate(
            line=line,
            box=Rect(int(g["x"]), int(g["y"]), int(g["w"]), int(g["h"])),
            score=float(g["score"]),
        )
    return Candidate(line=line)


def candidate_of(data: dict[str, Any]) -> Candidate:
    """A candidate from a JSON error object's `candidates` (a `match`, or an `image_match`, as docs/json names them)."""
    box = Rect._of(data["box"]) if isinstance(data.get("box"), dict) else None
    score, confidence = data.get("score"), data.get("confidence")
    return Candidate(
        line=str(data.get("summary", "")),
        ref=data.get("ref"),
        role=data.get("role"),
        label=data.get("label"),
        box=box,
        window=data.get("window"),
        score=None if score is None else float(score),
        confidence=None if confidence is None else float(confidence),
        source=data.get("source"),
        covered=bool(data.get("covered", False)),
    )


def error_for(
    exit_code: int,
    message: str,
    *,
    kind: Optional[str] = None,
    command: Sequence[str] = (),
    stderr: str = "",
    candidates: Optional[Sequence[Candidate]] = None,
) -> XclawError:
    """The typed exception for a command that exited with `exit_code`, saying `message`.

    A refusal that lists candidates becomes an `AmbiguousMatch` or `UncertainMatch` carrying them: `candidates`
    when the JSON error object gave them, else read from the lines indented under the message's first line.
    """
    kind = kind or (_KINDS.get(exit_code) or ("interrupted" if exit_code > 128 else "failed"))
    first, _, rest = message.partition("\n")
    if exit_code == 1:
        if candidates is None:
            lines = [line for line in rest.split("\n") if line.startswith("  ") and line.strip()]
            candidates = [parse_candidate(line) for line in lines]
        refusal = UncertainMatch if _GUESS.search(first) else AmbiguousMatch if _TIE.search(first) else None
        if refusal is not None:
            return refusal(
                message, candidates=candidates, exit_code=exit_code, kind=kind, command=command, stderr=stderr
            )
    if exit_code == 1 and _TIMEOUT.search(first):
        cls: type[XclawError] = Timeout
    elif exit_code > 128:
        cls = Interrupted
    else:
        cls = _CLASSES.get(exit_code, XclawError)
    return cls(message, exit_code=exit_code, kind=kind, command=command, stderr=stderr)
