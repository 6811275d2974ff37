"""The async API, the client's core: `async with xclaw.connect_async() as desk:`.

Every method runs one xclaw command (through the daemon when one runs, else as a process of the binary) with
`--json` where the command has it, and returns typed values; a failure raises the exception of its exit code
(`xclaw.errors`). Keyword arguments are the command's options under their CLI names (`near=` is `--near`,
`class_=` is `--class`). The sync API (`xclaw.connect()`) runs these same coroutines.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, AsyncIterator, Generator, Mapping, Optional, Sequence, Union

from . import _args
from ._args import RegionLike
from ._events import EventReader
from ._transport import Completed, Transport, resolve_binary
from .errors import NotFound, XclawError, candidate_of, error_for
from .types import (
    AgentEvent,
    AgentInfo,
    Candidate,
    ElementBase,
    Image,
    ImageMatch,
    Point,
    Rect,
    Size,
    Snapshot,
    TextDelta,
    WatchResult,
    Window,
)

__all__ = ["connect_async", "AsyncDesktop", "Element", "AsyncClipboard", "AsyncAgent"]

Text = Union[str, bytes]
PathLike = Union[str, "os.PathLike[str]"]


class Element(ElementBase):
    """An element of a snapshot or a match, bound to the desktop that saw it: `await element.tap()`."""

    async def tap(self, **options: Any) -> Element:
        """Taps it by its ref (valid until its window changes); options as `AsyncDesktop.tap`."""
        desk: AsyncDesktop = self._desk
        return await desk.tap(self.ref, **options)

    async def type(self, text: str, **options: Any) -> None:
        """Focuses it (a field) and types `text`; options as `AsyncDesktop.type`."""
        desk: AsyncDesktop = self._desk
        await desk.type(text, into=self.ref, **options)


class AsyncDesktop:
    """One X display, driven through xclaw: perception (snapshot, find, watch, capture), input (tap, type, key,
    click), windows, the clipboard and agents."""

    def __init__(
        self,
        display: Optional[str] = None,
        *,
        state_dir: Optional[PathLike] = None,
        binary: Optional[str] = None,
        daemon: bool = True,
        env: Optional[Mapping[str, str]] = None,
    ) -> None:
        overrides = dict(env or {})
        if state_dir is not None:
            overrides["XCLAW_STATE_DIR"] = os.fspath(state_dir)
        self._wanted_display = display
        self._own_display: Optional[str] = None
        if display and not display.startswith("new"):
            overrides["DISPLAY"] = display
        self._transport = Transport(resolve_binary(binary, {**os.environ, **overrides}), overrides, daemon)
        self.clipboard = AsyncClipboard(self)
        self._opened = False

    # --- life cycle ---

    @property
    def display(self) -> Optional[str]:
        """The X display the commands use (None: `$DISPLAY` at each call)."""
        return self._transport.overrides.get("DISPLAY")

    @property
    def binary(self) -> str:
        """The xclaw binary commands run (or hand to the daemon through)."""
        return self._transport.binary

    @property
    def uses_daemon(self) -> bool:
        """Whether commands go to a daemon (False: a process of the binary per command)."""
        return self._transport.use_daemon

    @property
    def started_daemon(self) -> bool:
        """Whether this client started the daemon it uses (it keeps running after `close`, warm for the next)."""
        return self._transport.started_daemon

    async def open(self) -> AsyncDesktop:
        """Starts the private display asked for with `display="new"` (or `"new:WxH"`); nothing otherwise."""
        if self._opened:
            return self
        self._opened = True
        wanted = self._wanted_display or ""
        if wanted.startswith("new"):
            size = wanted.partition(":")[2] or None
            started = await self._json(["display", "start", *_args.options(size=size, json=True)])
            self._own_display = str(started["name"])
            self._transport.overrides["DISPLAY"] = self._own_display
        return self

    async def close(self) -> None:
        """Stops the private display this desktop started, if any. A daemon it started keeps running (it idles
        out, or `xclaw daemon stop`)."""
        if self._own_display:
            name, self._own_display = self._own_display, None
            await self._run(["display", "stop", name])

    async def __aenter__(self) -> AsyncDesktop:
        """`async with xclaw.connect_async() as desk:`."""
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        """Closes it."""
        await self.close()

    def __await__(self) -> Generator[Any, None, AsyncDesktop]:
        """`desk = await xclaw.connect_async()`."""
        return self.open().__await__()

    # --- running commands ---

    async def _run(self, arguments: Sequence[str], *, stdin: Optional[bytes] = None) -> Completed:
        """Runs a command; raises its typed error when it fails (the JSON error object's message when it printed
        one, else stderr's)."""
        done = await self._transport.run(arguments, stdin=stdin)
        if done.exit_code != 0:
            raise _failure(done)
        return done

    async def _json(self, arguments: Sequence[str], *, stdin: Optional[bytes] = None) -> Any:
        """Runs a command with `--json` among `arguments` and parses its one JSON document."""
        done = await self._run(arguments, stdin=stdin)
        return json.loads(done.stdout)

    async def command(self, *arguments: str, stdin: Optional[bytes] = None) -> str:
        """Any xclaw command, for what this API does not wrap: `await desk.command("window", "maximize", "Editor")`.
        Returns its stdout as text; raises the typed error of its exit code."""
        return (await self._run(list(arguments), stdin=stdin)).stdout.decode()

    # --- perception ---

    async def snapshot(
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
        data = await self._json(
            ["snapshot"]
            + _args.options(
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
                json=True,
            )
        )
        return Snapshot(
            screen=Size(int(data["screen"]["width"]), int(data["screen"]["height"])),
            area=Rect._of(data["area"]),
            elements=tuple(Element._of(item, self) for item in data["elements"]),
            active_window=data.get("active_window"),
            warnings=tuple(data.get("warnings", ())),
        )

    async def find(
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
        """Elements matching `label`, best first (exact, case, OCR look-alikes, fuzzy; `score` says which).

        An empty list when nothing matches (`xclaw find` exits 1 then); with `timeout`, waits up to that many
        seconds for a match and raises `Timeout` when none came.
        """
        arguments = ["find"] + _args.options(
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
            json=True,
        )
        try:
            data = await self._json(arguments + _args.operands(label))
        except NotFound as error:
            # Only "nothing matches the label" is an empty answer; a window that is not there stays an error.
            if type(error) is NotFound and "nothing on screen matches" in error.message.partition("\n")[0]:
                if timeout is None and nth is None and near is None:
                    return []
            raise
        return [Element._of(item, self) for item in data]

    async def find_image(
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
        """Where a PNG template is on screen (PyAutoGUI's `locateOnScreen`): the best match, or every one with
        `all=True`. Raises `NotFound` (naming the best score) when none scores `confidence`, `AmbiguousMatch` on a
        tie."""
        data = await self._json(
            ["find"]
            + _args.options(
                image=os.fspath(image),
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
                json=True,
            )
        )
        return [ImageMatch._of(item) for item in data]

    async def find_color(
        self, color: str, *, tolerance: Optional[int] = None, region: Optional[RegionLike] = None
    ) -> Point:
        """The first pixel of `color` (#rrggbb), top to bottom, left to right; `NotFound` when none has it."""
        data = await self._json(["find"] + _args.options(color=color, tolerance=tolerance, region=region, json=True))
        return Point(int(data["x"]), int(data["y"]))

    async def pixel(self, x: int, y: int) -> str:
        """The colour of one pixel, `#rrggbb`."""
        data = await self._json(["pixel", "--json", "--", f"{x},{y}"])
        return str(data["color"])

    async def ocr(
        self,
        *,
        window: Optional[str] = None,
        region: Optional[RegionLike] = None,
        lang: Optional[str] = None,
    ) -> str:
        """The text on screen in reading order (`xclaw ocr --raw`)."""
        done = await self._run(["ocr"] + _args.options(window=window, region=region, lang=lang, raw=True))
        return done.stdout.decode()

    async def watch(
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
        """Waits until a condition holds (text shows or goes, an image, a region changes or stays still, a pixel's
        colour, a window appears); raises `Timeout` after `timeout` seconds, naming what it last saw."""
        data = await self._json(
            ["watch"]
            + _args.options(
                text=text,
                gone=gone,
                image=os.fspath(image) if image is not None else None,
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
                json=True,
            )
        )
        return _watch_result(data, self)

    async def wait_stable(
        self,
        *,
        ms: Optional[int] = None,
        timeout: Optional[float] = None,
        region: Optional[RegionLike] = None,
        interval: Optional[int] = None,
    ) -> WatchResult[Element]:
        """Returns as soon as the screen stopped changing for `ms` milliseconds (no fixed sleeps)."""
        data = await self._json(
            ["wait-stable"] + _args.options(ms=ms, timeout=timeout, region=region, interval=interval, json=True)
        )
        return _watch_result(data, self)

    async def capture(
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
        """A PNG of the screen, a region or a window (`xclaw capture -o -`)."""
        done = await self._run(
            ["capture", "--output=-"]
            + _args.options(
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
        return Image.from_png(done.stdout)

    # --- windows ---

    async def windows(
        self,
        *,
        class_: Optional[str] = None,
        instance: Optional[str] = None,
        pid: Optional[int] = None,
        regex: Optional[str] = None,
        visible: bool = False,
        all: bool = False,
    ) -> list[Window]:
        """Top-level windows, top-most first, selected as `xdotool search` does; an empty list when none matches."""
        try:
            data = await self._json(
                ["windows"]
                + _args.options(
                    class_=class_, instance=instance, pid=pid, regex=regex, visible=visible, all=all, json=True
                )
            )
        except NotFound:
            return []
        return [Window._of(item) for item in data]

    async def active(self) -> Window:
        """The active window; `NotFound` when none is."""
        return Window._of(await self._json(["active", "--json"]))

    async def activate(self, window: str) -> None:
        """Raises and focuses a window by id (0x…) or title substring."""
        await self._run(["activate", "--", window])

    # --- input ---

    async def tap(
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
        """Clicks the element `label` names (or a ref such as "e7") and returns it.

        Refuses rather than guess: `AmbiguousMatch` when several match equally (its `candidates` carry their refs),
        `UncertainMatch` when the best is only a look-alike, `NotFound` when nothing matches.
        """
        data = await self._json(
            ["tap"]
            + _args.options(
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
                json=True,
            )
            + _args.operands(label)
        )
        return Element._of(data, self)

    async def tap_image(
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
        """Clicks the centre of where a PNG template matches (PyAutoGUI's `click(locateOnScreen(...))`)."""
        data = await self._json(
            ["tap"]
            + _args.options(
                image=os.fspath(image),
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
                json=True,
            )
        )
        return ImageMatch._of(data)

    async def type(
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
        """Types `text` exactly (any Unicode), into the focused window or, with `into=`, the field that label or ref
        names (focused through the accessibility tree, else clicked)."""
        await self._run(
            ["type"]
            + _args.options(
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
            + ["-"],
            stdin=text.encode(),
        )

    async def key(self, *combos: str, hold: Optional[float] = None) -> None:
        """Presses key combinations in order, xdotool's syntax (`"ctrl+s"`, `"Return"`); all are checked first."""
        await self._run(["key"] + _args.options(hold=hold) + _args.operands(*combos))

    async def click(
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
        position = [str(x), str(y)] if x is not None and y is not None else []
        await self._run(
            ["click"]
            + _args.options(button=button, count=count, with_=with_, interval=interval, hold_ms=hold_ms)
            + _args.operands(*position)
        )

    async def move(self, x: int, y: int, *, relative: bool = False, window: Optional[str] = None) -> None:
        """Moves the pointer to a point (relative to where it is, or to a window's top-left)."""
        await self._run(["move"] + _args.options(relative=relative, window=window) + _args.operands(str(x), str(y)))

    async def scroll(
        self,
        direction: str,
        *,
        amount: Optional[int] = None,
        at: Optional[Union[str, Sequence[int], Point]] = None,
        with_: Optional[str] = None,
    ) -> None:
        """Scrolls up, down, left or right by notches."""
        await self._run(["scroll"] + _args.options(amount=amount, at=at, with_=with_) + _args.operands(direction))

    async def drag(
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
        await self._run(
            ["drag"]
            + _args.options(button=button, steps=steps, duration=duration, with_=with_)
            + _args.operands(*(str(v) for v in (x1, y1, x2, y2)))
        )

    async def cursor(self) -> Point:
        """Where the pointer is."""
        data = await self._json(["cursor", "--json"])
        return Point(int(data["x"]), int(data["y"]))

    # --- agents ---

    def agent(self, name: str, *, db: Optional[str] = None) -> AsyncAgent:
        """An agent by name (made with `create_agent` or `xclaw agent create`); no command runs yet."""
        return AsyncAgent(self, name, db)

    async def create_agent(
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
    ) -> AsyncAgent:
        """Creates an agent (`xclaw agent create --json`); `system` is a file with its instructions."""
        data = await self._json(
            ["agent", "create"]
            + _args.options(
                model=model,
                tools=",".join(tools) if isinstance(tools, (list, tuple)) else tools,
                system=os.fspath(system) if system is not None else None,
                display=display,
                setup=setup,
                dry_run=dry_run,
                confirm=confirm,
                approval=approval,
                effort=effort,
                thinking=thinking,
                db=db,
                json=True,
            )
            + _args.operands(name)
        )
        agent = AsyncAgent(self, name, db)
        agent.info = AgentInfo(
            name=str(data["name"]),
            model=str(data["model"]),
            tools=tuple(data.get("tools", ())),
            display=data.get("display"),
            raw=data,
        )
        return agent


class AsyncClipboard:
    """The X clipboard (or the PRIMARY selection): text or any type, binary-safe."""

    def __init__(self, desk: AsyncDesktop) -> None:
        self._desk = desk

    async def text(self, *, primary: bool = False) -> str:
        """The clipboard's text; `NotFound` when it is empty or holds no text."""
        return (await self.get(primary=primary)).decode()

    async def get(self, *, type: Optional[str] = None, primary: bool = False) -> bytes:
        """The clipboard's contents of a type (text/plain by default; text/html, image/png), as bytes."""
        done = await self._desk._run(["clipboard", "get"] + _args.options(type=type, primary=primary))
        return done.stdout

    async def set(self, contents: Text, *, type: Optional[str] = None, primary: bool = False) -> None:
        """Sets the clipboard (text, or bytes of `type`); xclaw keeps serving it until another app takes it."""
        data = contents.encode() if isinstance(contents, str) else bytes(contents)
        await self._desk._run(["clipboard", "set"] + _args.options(type=type, primary=primary) + ["-"], stdin=data)


class AsyncAgent:
    """An agent that remembers (`xclaw send`): `async for event in agent.send("…")`."""

    def __init__(self, desk: AsyncDesktop, name: str, db: Optional[str]) -> None:
        self._desk, self.name, self.db = desk, name, db
        #: Its settings, when this client created it.
        self.info: Optional[AgentInfo] = None

    async def send(
        self,
        message: str,
        *,
        sender: Optional[str] = None,
        effort: Optional[str] = None,
        thinking: Optional[str] = None,
        dry_run: Optional[bool] = None,
        confirm: Optional[bool] = None,
    ) -> AsyncIterator[AgentEvent]:
        """Sends a message and yields the reply as it streams: `TextDelta`s, `ToolCall`s, `ToolFailed`, `StepDone`
        per model request, `Notice`s. A failed reply raises its typed error (`ApiError`…) after its events; leaving
        the loop early cancels the turn, as Ctrl-C does."""
        arguments = (
            ["send", "--raw"]
            + _args.options(sender=sender, effort=effort, thinking=thinking, db=self.db)
            + _args.tristate("dry_run", dry_run)
            + _args.tristate("confirm", confirm)
            + _args.operands(self.name, message)
        )
        queue: asyncio.Queue[Optional[AgentEvent]] = asyncio.Queue()
        reader = EventReader(queue.put_nowait)
        task = asyncio.ensure_future(
            self._desk._transport.run(arguments, on_stdout=reader.stdout, on_stderr=reader.stderr)
        )
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            last = reader.finish()
            if last is not None:
                yield last
            done = task.result()
            if done.exit_code != 0:
                raise _failure(done)
        finally:
            if not task.done():
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, XclawError):
                    pass

    async def reply(self, message: str, **options: Any) -> str:
        """Sends a message and returns the whole reply's text (options as `send`)."""
        parts = [event.text async for event in self.send(message, **options) if isinstance(event, TextDelta)]
        return "".join(parts)


def connect_async(
    display: Optional[str] = None,
    *,
    state_dir: Optional[PathLike] = None,
    binary: Optional[str] = None,
    daemon: bool = True,
    env: Optional[Mapping[str, str]] = None,
) -> AsyncDesktop:
    """A desktop for `async with` (or `await`).

    `display`: an X display (":1"; default `$DISPLAY`), or "new"/"new:WxH" for a private Xvfb started now and
    stopped at the end. `state_dir`: xclaw's state directory (its daemon's socket, refs, OCR cache; default as xclaw
    finds it). `binary`: the xclaw to run (default `$XCLAW_BIN`, else `xclaw` on PATH). `daemon=False` runs every
    command as a process of the binary (as `XCLAW_NO_DAEMON=1` does); otherwise a daemon is used, started if none
    runs. `env`: variables for the commands, over this process's environment.
    """
    return AsyncDesktop(display, state_dir=state_dir, binary=binary, daemon=daemon, env=env)


def _failure(done: Completed) -> XclawError:
    """The typed error of a failed command: from its JSON error object when it printed one, else from stderr."""
    stderr = done.stderr.decode(errors="replace")
    message, kind, code = stderr.strip(), None, done.exit_code
    candidates: Optional[list[Candidate]] = None
    try:
        detail = json.loads(done.stdout.decode().strip().splitlines()[-1])["error"]
        message, kind, code = str(detail["message"]), str(detail["kind"]), int(detail["exit_code"])
        if isinstance(detail.get("candidates"), list):
            candidates = [candidate_of(item) for item in detail["candidates"]]
    except (ValueError, KeyError, IndexError, TypeError):
        lines = [line for line in stderr.splitlines() if line.startswith("xclaw: ")]
        if lines and done.arguments[:1] == ("send",):
            message = "\n".join(lines[-1:])
    if not message:
        message = f"xclaw {done.arguments[0] if done.arguments else ''}: exit {done.exit_code}"
    return error_for(code, message, kind=kind, command=done.arguments, stderr=stderr, candidates=candidates)


def _watch_result(data: dict[str, Any], desk: AsyncDesktop) -> WatchResult[Element]:
    return WatchResult(
        condition=str(data.get("condition", "")),
        elapsed_ms=float(data.get("elapsed_ms", 0)),
        polls=data.get("polls"),
        ocr_passes=data.get("ocr_passes"),
        match=Element._of(data["match"], desk) if data.get("match") else None,
        color=data.get("color"),
        image=ImageMatch._of(data["image"]) if data.get("image") else None,
        window=Window._of(data["window"]) if data.get("window") else None,
    )
