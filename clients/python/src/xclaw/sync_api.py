"""The sync API, derived from the async core: `with xclaw.connect() as desk: desk.tap("OK")`.

Each `Desktop` owns a private event loop and runs the `AsyncDesktop` method of the same name and signature on it
(tests/test_api_shape.py checks the two APIs match), converting the async elements it returns into sync ones, so
`element.tap()` acts at once. Like Playwright's sync API, it is not for use inside a running asyncio loop: use
`xclaw.connect_async()` there.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Awaitable, Iterator, Mapping, Optional, Sequence, TypeVar, Union

from . import aio
from ._args import RegionLike
from .types import AgentEvent, AgentInfo, ElementBase, Image, ImageMatch, Point, Snapshot, WatchResult, Window

__all__ = ["connect", "Desktop", "Element", "Clipboard", "Agent"]

T = TypeVar("T")
PathLike = Union[str, "os.PathLike[str]"]


class Element(ElementBase):
    """An element of a snapshot or a match, bound to the desktop that saw it: `element.tap()`."""

    def tap(self, **options: Any) -> Element:
        """Taps it by its ref (valid until its window changes); options as `Desktop.tap`."""
        desk: Desktop = self._desk
        return desk.tap(self.ref, **options)

    def type(self, text: str, **options: Any) -> None:
        """Focuses it (a field) and types `text`; options as `Desktop.type`."""
        desk: Desktop = self._desk
        desk.type(text, into=self.ref, **options)


class Desktop:
    """One X display, driven through xclaw (the sync face of `xclaw.aio.AsyncDesktop`; the same methods).

    Its event loop is its own: use a Desktop from one thread at a time (one per thread is fine).
    """

    def __init__(self, core: aio.AsyncDesktop) -> None:
        self._core = core
        self._loop = asyncio.new_event_loop()
        self.clipboard = Clipboard(self)

    def _call(self, awaitable: Awaitable[T]) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._loop.run_until_complete(awaitable)
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise RuntimeError(
            "xclaw's sync API was called inside a running asyncio event loop; use `async with xclaw.connect_async()`"
        )

    def _element(self, element: aio.Element) -> Element:
        return element._bound(Element, self)

    def _elements(self, elements: Sequence[aio.Element]) -> list[Element]:
        return [self._element(e) for e in elements]

    def _watch(self, result: WatchResult[aio.Element]) -> WatchResult[Element]:
        match = self._element(result.match) if result.match is not None else None
        return WatchResult(
            condition=result.condition,
            elapsed_ms=result.elapsed_ms,
            polls=result.polls,
            ocr_passes=result.ocr_passes,
            match=match,
            color=result.color,
            image=result.image,
            window=result.window,
        )

    # --- life cycle ---

    @property
    def display(self) -> Optional[str]:
        """The X display the commands use (None: `$DISPLAY` at each call)."""
        return self._core.display

    @property
    def binary(self) -> str:
        """The xclaw binary commands run (or hand to the daemon through)."""
        return self._core.binary

    @property
    def uses_daemon(self) -> bool:
        """Whether commands go to a daemon (False: a process of the binary per command)."""
        return self._core.uses_daemon

    @property
    def started_daemon(self) -> bool:
        """Whether this client started the daemon it uses (it keeps running after `close`, warm for the next)."""
        return self._core.started_daemon

    def open(self) -> Desktop:
        """Starts the private display asked for with `display="new"`; nothing otherwise (`connect` calls it)."""
        self._call(self._core.open())
        return self

    def close(self) -> None:
        """Stops the private display this desktop started, if any, and its event loop."""
        if self._loop.is_closed():
            return
        try:
            self._call(self._core.close())
        finally:
            self._loop.close()

    def __enter__(self) -> Desktop:
        """`with xclaw.connect() as desk:`."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Closes it."""
        self.close()

    def command(self, *arguments: str, stdin: Optional[bytes] = None) -> str:
        """Any xclaw command, for what this API does not wrap; returns its stdout as text."""
        return self._call(self._core.command(*arguments, stdin=stdin))

    # --- perception ---

    def snapshot(
        self,
        *,
        window: Optional[str] = None,
        class_: Optional[str] = None,
        instance: Optional[str] = None,
        pid: Optional[int] = None,
        regex: Optional[str] = None,
        visible: bool = False,
        region: Optional[RegionLike] = None,
        source: Optional[str] = None,
        interactive: bool = False,
        lang: Optional[str] = None,
    ) -> Snapshot[Element]:
        """The screen's windows, text and controls with stable refs (`xclaw snapshot --json`)."""
        shot = self._call(
            self._core.snapshot(
                window=window,
                class_=class_,
                instance=instance,
                pid=pid,
                regex=regex,
                visible=visible,
                region=region,
                source=source,
                interactive=interactive,
                lang=lang,
            )
        )
        return Snapshot(
            screen=shot.screen,
            area=shot.area,
            elements=tuple(self._elements(shot.elements)),
            active_window=shot.active_window,
            warnings=shot.warnings,
        )

    def find(
        self,
        label: str,
        *,
        role: Optional[str] = None,
        nth: Optional[int] = None,
        near: Optional[str] = None,
        window: Optional[str] = None,
        class_: Optional[str] = None,
        instance: Optional[str] = None,
        pid: Optional[int] = None,
        regex: Optional[str] = None,
        visible: bool = False,
        region: Optional[RegionLike] = None,
        source: Optional[str] = None,
        timeout: Optional[float] = None,
        lang: Optional[str] = None,
    ) -> list[Element]:
        """Elements matching `label`, best first; an empty list when nothing matches (`Timeout` with `timeout`)."""
        return self._elements(
            self._call(
                self._core.find(
                    label,
                    role=role,
                    nth=nth,
                    near=near,
                    window=window,
                    class_=class_,
                    instance=instance,
                    pid=pid,
                    regex=regex,
                    visible=visible,
                    region=region,
                    source=source,
                    timeout=timeout,
                    lang=lang,
                )
            )
        )

    def find_image(
        self,
        image: PathLike,
        *,
        all: bool = False,
        nth: Optional[int] = None,
        confidence: Optional[float] = None,
        grayscale: bool = False,
        scales: Optional[Sequence[float]] = None,
        window: Optional[str] = None,
        class_: Optional[str] = None,
        instance: Optional[str] = None,
        pid: Optional[int] = None,
        regex: Optional[str] = None,
        visible: bool = False,
        region: Optional[RegionLike] = None,
        timeout: Optional[float] = None,
    ) -> list[ImageMatch]:
        """Where a PNG template is on screen (PyAutoGUI's `locateOnScreen`)."""
        return self._call(
            self._core.find_image(
                image,
                all=all,
                nth=nth,
                confidence=confidence,
                grayscale=grayscale,
                scales=scales,
                window=window,
                class_=class_,
                instance=instance,
                pid=pid,
                regex=regex,
                visible=visible,
                region=region,
                timeout=timeout,
            )
        )

    def find_color(self, color: str, *, tolerance: Optional[int] = None, region: Optional[RegionLike] = None) -> Point:
        """The first pixel of `color` (#rrggbb), top to bottom, left to right."""
        return self._call(self._core.find_color(color, tolerance=tolerance, region=region))

    def pixel(self, x: int, y: int) -> str:
        """The colour of one pixel, `#rrggbb`."""
        return self._call(self._core.pixel(x, y))

    def ocr(
        self,
        *,
        window: Optional[str] = None,
        region: Optional[RegionLike] = None,
        lang: Optional[str] = None,
    ) -> str:
        """The text on screen in reading order."""
        return self._call(self._core.ocr(window=window, region=region, lang=lang))

    def watch(
        self,
        *,
        text: Optional[str] = None,
        gone: bool = False,
        image: Optional[PathLike] = None,
        confidence: Optional[float] = None,
        grayscale: bool = False,
        change: Optional[RegionLike] = None,
        stable: Optional[int] = None,
        pixel: Optional[Union[str, Sequence[int], Point]] = None,
        color: Optional[str] = None,
        tolerance: Optional[int] = None,
        region: Optional[RegionLike] = None,
        window: Optional[str] = None,
        class_: Optional[str] = None,
        instance: Optional[str] = None,
        pid: Optional[int] = None,
        regex: Optional[str] = None,
        visible: bool = False,
        active: bool = False,
        lang: Optional[str] = None,
        timeout: float = 10.0,
        interval: Optional[int] = None,
    ) -> WatchResult[Element]:
        """Waits until a condition holds; raises `Timeout` after `timeout` seconds, naming what it last saw."""
        return self._watch(
            self._call(
                self._core.watch(
                    text=text,
                    gone=gone,
                    image=image,
                    confidence=confidence,
                    grayscale=grayscale,
                    change=change,
                    stable=stable,
                    pixel=pixel,
                    color=color,
                    tolerance=tolerance,
                    region=region,
                    window=window,
                    class_=class_,
                    instance=instance,
                    pid=pid,
                    regex=regex,
                    visible=visible,
                    active=active,
                    lang=lang,
                    timeout=timeout,
                    interval=interval,
                )
            )
        )

    def wait_stable(
        self,
        *,
        ms: Optional[int] = None,
        timeout: Optional[float] = None,
        region: Optional[RegionLike] = None,
        interval: Optional[int] = None,
    ) -> WatchResult[Element]:
        """Returns as soon as the screen stopped changing for `ms` milliseconds."""
        return self._watch(self._call(self._core.wait_stable(ms=ms, timeout=timeout, region=region, interval=interval)))

    def capture(
        self,
        *,
        region: Optional[RegionLike] = None,
        window: Optional[str] = None,
        class_: Optional[str] = None,
        instance: Optional[str] = None,
        pid: Optional[int] = None,
        regex: Optional[str] = None,
        visible: bool = False,
        scale_for_model: bool = False,
    ) -> Image:
        """A PNG of the screen, a region or a window."""
        return self._call(
            self._core.capture(
                region=region,
                window=window,
                class_=class_,
                instance=instance,
                pid=pid,
                regex=regex,
                visible=visible,
                scale_for_model=scale_for_model,
            )
        )

    # --- windows ---

    def windows(
        self,
        *,
        class_: Optional[str] = None,
        instance: Optional[str] = None,
        pid: Optional[int] = None,
        regex: Optional[str] = None,
        visible: bool = False,
        all: bool = False,
    ) -> list[Window]:
        """Top-level windows, top-most first; an empty list when none matches."""
        return self._call(
            self._core.windows(class_=class_, instance=instance, pid=pid, regex=regex, visible=visible, all=all)
        )

    def active(self) -> Window:
        """The active window."""
        return self._call(self._core.active())

    def activate(self, window: str) -> None:
        """Raises and focuses a window by id (0x…) or title substring."""
        self._call(self._core.activate(window))

    # --- input ---

    def tap(
        self,
        label: str,
        *,
        role: Optional[str] = None,
        nth: Optional[int] = None,
        near: Optional[str] = None,
        window: Optional[str] = None,
        class_: Optional[str] = None,
        instance: Optional[str] = None,
        pid: Optional[int] = None,
        regex: Optional[str] = None,
        visible: bool = False,
        source: Optional[str] = None,
        action: bool = False,
        action_name: Optional[str] = None,
        double: bool = False,
        button: Optional[str] = None,
        with_: Optional[str] = None,
        offset: Optional[Union[str, Sequence[int]]] = None,
        timeout: Optional[float] = None,
        lang: Optional[str] = None,
    ) -> Element:
        """Clicks the element `label` names (or a ref) and returns it; refuses ties and guesses with
        `AmbiguousMatch`/`UncertainMatch` (their `candidates` carry refs), `NotFound` when nothing matches."""
        return self._element(
            self._call(
                self._core.tap(
                    label,
                    role=role,
                    nth=nth,
                    near=near,
                    window=window,
                    class_=class_,
                    instance=instance,
                    pid=pid,
                    regex=regex,
                    visible=visible,
                    source=source,
                    action=action,
                    action_name=action_name,
                    double=double,
                    button=button,
                    with_=with_,
                    offset=offset,
                    timeout=timeout,
                    lang=lang,
                )
            )
        )

    def tap_image(
        self,
        image: PathLike,
        *,
        nth: Optional[int] = None,
        confidence: Optional[float] = None,
        grayscale: bool = False,
        scales: Optional[Sequence[float]] = None,
        window: Optional[str] = None,
        region: Optional[RegionLike] = None,
        double: bool = False,
        button: Optional[str] = None,
        offset: Optional[Union[str, Sequence[int]]] = None,
        timeout: Optional[float] = None,
    ) -> ImageMatch:
        """Clicks the centre of where a PNG template matches."""
        return self._call(
            self._core.tap_image(
                image,
                nth=nth,
                confidence=confidence,
                grayscale=grayscale,
                scales=scales,
                window=window,
                region=region,
                double=double,
                button=button,
                offset=offset,
                timeout=timeout,
            )
        )

    def type(
        self,
        text: str,
        *,
        into: Optional[str] = None,
        role: Optional[str] = None,
        nth: Optional[int] = None,
        near: Optional[str] = None,
        window: Optional[str] = None,
        class_: Optional[str] = None,
        instance: Optional[str] = None,
        pid: Optional[int] = None,
        regex: Optional[str] = None,
        visible: bool = False,
        source: Optional[str] = None,
        paste: bool = False,
        delay: Optional[int] = None,
    ) -> None:
        """Types `text` exactly, into the focused window or, with `into=`, the field that label or ref names."""
        self._call(
            self._core.type(
                text,
                into=into,
                role=role,
                nth=nth,
                near=near,
                window=window,
                class_=class_,
                instance=instance,
                pid=pid,
                regex=regex,
                visible=visible,
                source=source,
                paste=paste,
                delay=delay,
            )
        )

    def key(self, *combos: str, hold: Optional[float] = None) -> None:
        """Presses key combinations in order, xdotool's syntax (`"ctrl+s"`, `"Return"`)."""
        self._call(self._core.key(*combos, hold=hold))

    def click(
        self,
        x: Optional[int] = None,
        y: Optional[int] = None,
        *,
        button: Optional[str] = None,
        count: Optional[int] = None,
        with_: Optional[str] = None,
        interval: Optional[int] = None,
        hold_ms: Optional[int] = None,
    ) -> None:
        """Clicks at a point (or where the pointer is)."""
        self._call(self._core.click(x, y, button=button, count=count, with_=with_, interval=interval, hold_ms=hold_ms))

    def move(self, x: int, y: int, *, relative: bool = False, window: Optional[str] = None) -> None:
        """Moves the pointer."""
        self._call(self._core.move(x, y, relative=relative, window=window))

    def scroll(
        self,
        direction: str,
        *,
        amount: Optional[int] = None,
        at: Optional[Union[str, Sequence[int], Point]] = None,
        with_: Optional[str] = None,
    ) -> None:
        """Scrolls up, down, left or right by notches."""
        self._call(self._core.scroll(direction, amount=amount, at=at, with_=with_))

    def drag(
        self,
        x1: int,
        y1: int,
        x2: int,
        y2: int,
        *,
        button: Optional[str] = None,
        steps: Optional[int] = None,
        duration: Optional[float] = None,
        with_: Optional[str] = None,
    ) -> None:
        """Presses at one point, moves to the other and releases."""
        self._call(self._core.drag(x1, y1, x2, y2, button=button, steps=steps, duration=duration, with_=with_))

    def cursor(self) -> Point:
        """Where the pointer is."""
        return self._call(self._core.cursor())

    # --- agents ---

    def agent(self, name: str, *, db: Optional[str] = None) -> Agent:
        """An agent by name; no command runs yet."""
        return Agent(self, self._core.agent(name, db=db))

    def create_agent(
        self,
        name: str,
        *,
        model: Optional[str] = None,
        tools: Optional[Union[str, Sequence[str]]] = None,
        system: Optional[PathLike] = None,
        display: Optional[str] = None,
        setup: Optional[str] = None,
        dry_run: bool = False,
        confirm: bool = False,
        approval: Optional[str] = None,
        effort: Optional[str] = None,
        thinking: Optional[str] = None,
        db: Optional[str] = None,
    ) -> Agent:
        """Creates an agent (`xclaw agent create --json`)."""
        return Agent(
            self,
            self._call(
                self._core.create_agent(
                    name,
                    model=model,
                    tools=tools,
                    system=system,
                    display=display,
                    setup=setup,
                    dry_run=dry_run,
                    confirm=confirm,
                    approval=approval,
                    effort=effort,
                    thinking=thinking,
                    db=db,
                )
            ),
        )


class Clipboard:
    """The X clipboard: `desk.clipboard.text` (read), `desk.clipboard.text = "…"` or `.set(…)` (write)."""

    def __init__(self, desk: Desktop) -> None:
        self._desk = desk

    @property
    def text(self) -> str:
        """The clipboard's text; `NotFound` when it is empty or holds no text."""
        return self._desk._call(self._desk._core.clipboard.text())

    @text.setter
    def text(self, value: str) -> None:
        self.set(value)

    def get(self, *, type: Optional[str] = None, primary: bool = False) -> bytes:
        """The contents of a type (text/plain by default; text/html, image/png), as bytes."""
        return self._desk._call(self._desk._core.clipboard.get(type=type, primary=primary))

    def set(self, contents: Union[str, bytes], *, type: Optional[str] = None, primary: bool = False) -> None:
        """Sets the clipboard (text, or bytes of `type`)."""
        self._desk._call(self._desk._core.clipboard.set(contents, type=type, primary=primary))


class Agent:
    """An agent that remembers: `for event in agent.send("…")`."""

    def __init__(self, desk: Desktop, core: aio.AsyncAgent) -> None:
        self._desk, self._core = desk, core

    @property
    def name(self) -> str:
        """Its name."""
        return self._core.name

    @property
    def info(self) -> Optional[AgentInfo]:
        """Its settings, when this client created it."""
        return self._core.info

    def send(
        self,
        message: str,
        *,
        sender: Optional[str] = None,
        effort: Optional[str] = None,
        thinking: Optional[str] = None,
        dry_run: Optional[bool] = None,
        confirm: Optional[bool] = None,
    ) -> Iterator[AgentEvent]:
        """Sends a message and yields the reply's events as they stream; leaving the loop early cancels the turn."""
        events = self._core.send(
            message, sender=sender, effort=effort, thinking=thinking, dry_run=dry_run, confirm=confirm
        )
        try:
            while True:
                try:
                    yield self._desk._call(events.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            if not self._desk._loop.is_closed():
                self._desk._loop.run_until_complete(events.aclose())  # type: ignore[attr-defined]

    def reply(self, message: str, **options: Any) -> str:
        """Sends a message and returns the whole reply's text."""
        return self._desk._call(self._core.reply(message, **options))


def connect(
    display: Optional[str] = None,
    *,
    state_dir: Optional[PathLike] = None,
    binary: Optional[str] = None,
    daemon: bool = True,
    env: Optional[Mapping[str, str]] = None,
) -> Desktop:
    """A desktop for `with` (or plain use, then `close()`); the arguments are `connect_async`'s."""
    return Desktop(aio.connect_async(display, state_dir=state_dir, binary=binary, daemon=daemon, env=env)).open()
