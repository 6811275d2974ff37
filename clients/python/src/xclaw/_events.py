"""What `xclaw send` streams, read into typed events.

`send` writes the model's reply to stdout as it streams (with `--raw`, byte for byte) and what happens around it to
stderr, a line each: `  → TOOL INPUT` for a tool call, `    ✗ MESSAGE` for a failed one, `  · step N: …` with the
step's tokens, cost and model time, and `xclaw: …` for everything else (retries, stops, the final error).
"""

from __future__ import annotations

import re
from typing import Callable, Optional

from ._transport import decode_stream
from .types import AgentEvent, Notice, StepDone, TextDelta, ToolCall, ToolFailed

# `  · step 2: 100 in + 0 cache read + 0 cache write / 20 out · $0.0004 · 1 KB, 0 image(s) · model 429 ms`
_STEP = re.compile(
    r"^  · (?:step (?P<step>\d+)|(?P<summary>summary of earlier turns)): (?P<input>\d+) in \+ (?P<read>\d+) cache "
    r"read \+ (?P<write>\d+) cache write / (?P<output>\d+) out · \$(?P<cost>[\d.]+) · \d+ KB, (?P<images>\d+) "
    r"image\(s\) · model (?P<model>\d+) ms"
)


def parse_stderr_line(line: str) -> AgentEvent:
    """The event one stderr line of `send` stands for."""
    if line.startswith("  → "):
        name, _, summary = line[4:].partition(" ")
        return ToolCall(name=name, summary=summary)
    if line.startswith("    ✗ "):
        return ToolFailed(message=line[6:])
    step = _STEP.match(line)
    if step:
        g = step.groupdict()
        return StepDone(
            step=int(g["step"]) if g["step"] else None,
            input_tokens=int(g["input"]),
            output_tokens=int(g["output"]),
            cache_read_input_tokens=int(g["read"]),
            cache_creation_input_tokens=int(g["write"]),
            cost_usd=float(g["cost"]),
            images=int(g["images"]),
            model_ms=int(g["model"]),
            summary=bool(g["summary"]),
        )
    return Notice(text=line[7:] if line.startswith("xclaw: ") else line)


class EventReader:
    """Turns `send`'s two streams into events as their bytes arrive, in the order they arrive."""

    def __init__(self, emit: Callable[[AgentEvent], None]) -> None:
        self.emit = emit
        self._text = decode_stream()
        self._errors = decode_stream()
        self._partial = ""

    def stdout(self, data: bytes) -> None:
        """Reply text: one event per chunk."""
        text = self._text(data)
        if text:
            self.emit(TextDelta(text))

    def stderr(self, data: bytes) -> None:
        """Whole lines only; a line's end may come in the next chunk."""
        self._partial += self._errors(data)
        *lines, self._partial = self._partial.split("\n")
        for line in lines:
            if line.strip():
                self.emit(parse_stderr_line(line))

    def finish(self) -> Optional[AgentEvent]:
        """The last line, when stderr did not end with a newline."""
        line, self._partial = self._partial, ""
        return parse_stderr_line(line) if line.strip() else None
