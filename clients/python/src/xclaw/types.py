"""The values the client hands back: geometry, windows, elements and snapshots, images, watch results, agent events.

Plain frozen dataclasses, shared by the async and the sync API. The two differ only in the element type their
snapshots and matches carry (each API's `Element` can `tap()` itself through the desktop that found it), which is why
`Snapshot` and `WatchResult` are generic over it.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any, Generic, Iterator, Literal, Optional, TypeVar, Union

__all__ = [
    "Point",
    "Size",
    "Rect",
    "Window",
    "ElementBase",
    "Snapshot",
    "ImageMatch",
    "WatchResult",
    "Image",
    "Candidate",
    "AgentInfo",
    "TextDelta",
    "ToolCall",
    "ToolFailed",
    "StepDone",
    "Notice",
    "AgentEvent",
    "Role",
    "Source",
]

#: An element's role, as `snapshot --json` names it.
Role = Literal[
    "window",
    "button",
    "field",
    "checkbox",
    "radio",
    "combobox",
    "slider",
    "spinbutton",
    "tab",
    "item",
    "link",
    "menuitem",
    "image",
    "text",
]
#: Where an element was seen: the X window tree, the accessibility tree or OCR.
Source = Literal["x11", "atspi", "ocr"]


@dataclass(frozen=True)
class Point:
    """A screen position in pixels."""

    x: int
    y: int

    def __iter__(self) -> Iterator[int]:
        """Unpacks as `x, y = point`, as PyAutoGUI's points do."""
        return iter((self.x, self.y))


@dataclass(frozen=True)
class Size:
    """A width and a height in pixels."""

    width: int
    height: int


@dataclass(frozen=True)
class Rect:
    """A box on screen: its top-left corner and size, as every `--json` output gives it."""

    x: int
    y: int
    width: int
    height: int

    @property
    def center(self) -> Point:
        """The point a tap clicks (xclaw rounds down, as here)."""
        return Point(self.x + self.width // 2, self.y + self.height // 2)

    def __str__(self) -> str:
        """The `X,Y,W,H` form the command line takes (`region=`)."""
        return f"{self.x},{self.y},{self.width},{self.height}"

    @staticmethod
    def _of(data: dict[str, Any]) -> Rect:
        return Rect(int(data["x"]), int(data["y"]), int(data["width"]), int(data["height"]))


@dataclass(frozen=True)
class Window:
    """A top-level window (`xclaw windows --json`)."""

    id: int
    title: str
    class_name: str
    instance: str
    frame: Rect
    mapped: bool
    visible: bool
    active: bool
    popup: bool
    pid: Optional[int] = None

    @property
    def hex_id(self) -> str:
        """The id as `--window` takes it (`0x…`)."""
        return hex(self.id)

    @staticmethod
    def _of(data: dict[str, Any]) -> Window:
        return Window(
            id=int(data["id"]),
            title=str(data["title"]),
            class_name=str(data["class_name"]),
            instance=str(data["instance"]),
            frame=Rect._of(data["frame"]),
            mapped=bool(data["mapped"]),
            visible=bool(data["visible"]),
            active=bool(data["active"]),
            popup=bool(data["popup"]),
            pid=data.get("pid"),
        )


@dataclass(frozen=True)
class ElementBase:
    """An element of a snapshot, or a place that matched a label (`find`, `tap`, `watch --text`).

    `ref` (e7, w2) names it for the next command; `window` is its window's ref. Matches also carry `score` (1 exact,
    lower for case, look-alikes and fuzzy reads) and `whole` (the label matched whole, not inside a longer one).
    """

    ref: str
    role: str
    label: str
    box: Rect
    window: Optional[str] = None
    window_id: Optional[int] = None
    source: Optional[str] = None
    value: Optional[str] = None
    states: tuple[str, ...] = ()
    covered: bool = False
    confidence: Optional[float] = None
    score: Optional[float] = None
    whole: Optional[bool] = None
    changed: bool = False
    active: Optional[bool] = None
    class_name: Optional[str] = None
    toolkit_role: Optional[str] = None
    _desk: Any = field(default=None, repr=False, compare=False)

    @property
    def center(self) -> Point:
        """Where a tap clicks it."""
        return self.box.center

    @property
    def bounds(self) -> Rect:
        """Its box (`box`, as the JSON names it)."""
        return self.box

    @classmethod
    def _of(cls: type[E], data: dict[str, Any], desk: Any = None) -> E:
        return cls(
            ref=str(data["ref"]),
            role=str(data["role"]),
            label=str(data.get("label", "")),
            box=Rect._of(data["box"]),
            window=data.get("window"),
            window_id=data.get("window_id"),
            source=data.get("source"),
            value=data.get("value"),
            states=tuple(data.get("states", ())),
            covered=bool(data.get("covered", False)),
            confidence=_float(data.get("confidence")),
            score=_float(data.get("score")),
            whole=data.get("whole"),
            changed=bool(data.get("changed", False)),
            active=data.get("active"),
            class_name=data.get("class_name"),
            toolkit_role=data.get("toolkit_role"),
            _desk=desk,
        )

    def _bound(self, cls: type[E], desk: Any) -> E:
        values = {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "_desk"}
        return cls(**values, _desk=desk)


E = TypeVar("E", bound=ElementBase)


@dataclass(frozen=True)
class Snapshot(Generic[E]):
    """What `xclaw snapshot --json` saw: the windows and elements with refs that stay stable between snapshots."""

    screen: Size
    area: Rect
    elements: tuple[E, ...]
    active_window: Optional[str] = None
    warnings: tuple[str, ...] = ()

    @property
    def windows(self) -> list[E]:
        """The window elements (role `window`), top-most first."""
        return [e for e in self.elements if e.role == "window"]

    @property
    def controls(self) -> list[E]:
        """The elements that are neither windows nor plain text."""
        return [e for e in self.elements if e.role not in ("window", "text")]

    def get(self, ref: str) -> Optional[E]:
        """The element with this ref, or None."""
        return next((e for e in self.elements if e.ref == ref), None)

    def by_label(self, label: str, *, role: Optional[str] = None) -> list[E]:
        """Elements whose label is `label` exactly (for ranked, OCR-tolerant matching use `desk.find`)."""
        return [e for e in self.elements if e.label == label and (role is None or e.role == role)]

    def __iter__(self) -> Iterator[E]:
        """Iterates the elements."""
        return iter(self.elements)

    def __len__(self) -> int:
        """The number of elements."""
        return len(self.elements)


@dataclass(frozen=True)
class ImageMatch:
    """A place where an image matched (`--image`): its box, centre, score (1 = same pixels) and scale."""

    box: Rect
    center: Point
    score: float
    scale: float = 1.0

    @staticmethod
    def _of(data: dict[str, Any]) -> ImageMatch:
        center = data.get("center") or {}
        box = Rect._of(data["box"])
        return ImageMatch(
            box=box,
            center=Point(int(center["x"]), int(center["y"])) if center else box.center,
            score=float(data["score"]),
            scale=float(data.get("scale", 1.0)),
        )


@dataclass(frozen=True)
class WatchResult(Generic[E]):
    """How a `watch` condition came to hold: what it waited for, how long, and what it saw."""

    condition: str
    elapsed_ms: float
    polls: Optional[int] = None
    ocr_passes: Optional[int] = None
    match: Optional[E] = None
    color: Optional[str] = None
    image: Optional[ImageMatch] = None
    window: Optional[Window] = None


@dataclass(frozen=True)
class Image:
    """A PNG capture: its bytes and size, without PIL (`Image.open(io.BytesIO(image.png))` if you have it)."""

    png: bytes
    width: int
    height: int

    @staticmethod
    def from_png(data: bytes) -> Image:
        """Reads the size from the PNG's header; raises ValueError when `data` is not a PNG."""
        if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
            raise ValueError("not a PNG image (no PNG signature and IHDR header)")
        width, height = struct.unpack(">II", data[16:24])
        return Image(png=data, width=width, height=height)

    @property
    def size(self) -> Size:
        """Width and height."""
        return Size(self.width, self.height)

    def save(self, path: Union[str, os.PathLike[str]]) -> None:
        """Writes the PNG to `path`."""
        with open(path, "wb") as out:
            out.write(self.png)

    def __bytes__(self) -> bytes:
        """The PNG's bytes."""
        return self.png

    def __repr__(self) -> str:
        """Size and byte count, not the bytes."""
        return f"Image({self.width}x{self.height}, {len(self.png)} bytes)"


@dataclass(frozen=True)
class Candidate:
    """One of the places a refused `tap`/`find`/`type --into` listed (a tie, or a guess it would not act on).

    Read from the line the command printed: `ref` is valid for the next command (`desk.tap(candidate.ref)`).
    Image ties have no ref; window ties carry only `line`.
    """

    line: str
    ref: Optional[str] = None
    role: Optional[str] = None
    label: Optional[str] = None
    box: Optional[Rect] = None
    window: Optional[str] = None
    score: Optional[float] = None
    confidence: Optional[float] = None
    source: Optional[str] = None
    covered: bool = False
    unread: bool = False

    @property
    def center(self) -> Optional[Point]:
        """Where a tap would click it."""
        return self.box.center if self.box else None


@dataclass(frozen=True)
class AgentInfo:
    """An agent's settings (`xclaw agent create --json`)."""

    name: str
    model: str
    tools: tuple[str, ...]
    display: Optional[str] = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class TextDelta:
    """Reply text as it streams (chunks, not lines)."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The agent called a tool; `summary` is its input as `xclaw send` shows it."""

    name: str
    summary: str


@dataclass(frozen=True)
class ToolFailed:
    """A tool call failed (the model is told and goes on)."""

    message: str


@dataclass(frozen=True)
class StepDone:
    """One model request ended: its tokens, cost and model time (`summary` when it summarised earlier turns)."""

    step: Optional[int]
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    cost_usd: float
    images: int
    model_ms: int
    summary: bool = False


@dataclass(frozen=True)
class Notice:
    """Anything else the run said on stderr (a retry, a stop, a setup's failure)."""

    text: str


#: What `agent.send()` yields.
AgentEvent = Union[TextDelta, ToolCall, ToolFailed, StepDone, Notice]


def _float(value: Any) -> Optional[float]:
    return None if value is None else float(value)
