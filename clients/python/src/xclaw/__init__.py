"""xclaw for Python: desktop automation for Linux/X11 through the xclaw daemon.

    import xclaw

    with xclaw.connect() as desk:          # $DISPLAY; display="new" for a private Xvfb
        desk.tap("OK")
        desk.type("Zoë", into="Name")
        desk.watch(text="Done", timeout=30)
        desk.capture().save("shot.png")

    async with xclaw.connect_async() as desk:   # the same API, awaited
        await desk.tap("OK")

Commands go to the xclaw daemon over its socket (one is started when none runs) or, with `XCLAW_NO_DAEMON=1`, run as
processes of the `xclaw` binary (`binary=`, `$XCLAW_BIN`, else `xclaw` on PATH). Failures raise the exception of
their exit code (`xclaw.errors`).
"""

from ._version import __version__
from .aio import AsyncAgent, AsyncClipboard, AsyncDesktop, connect_async
from .errors import (
    AmbiguousMatch,
    ApiError,
    DaemonDied,
    DisplayLost,
    InternalError,
    Interrupted,
    NotFound,
    NotInstalled,
    Timeout,
    UncertainMatch,
    UsageError,
    XclawError,
)
from .sync_api import Agent, Clipboard, Desktop, Element, connect
from .types import (
    AgentEvent,
    AgentInfo,
    Candidate,
    Image,
    ImageMatch,
    Notice,
    Point,
    Rect,
    Size,
    Snapshot,
    StepDone,
    TextDelta,
    ToolCall,
    ToolFailed,
    WatchResult,
    Window,
)

__all__ = [
    "__version__",
    "connect",
    "connect_async",
    "Desktop",
    "AsyncDesktop",
    "Element",
    "Snapshot",
    "Window",
    "Image",
    "ImageMatch",
    "WatchResult",
    "Clipboard",
    "AsyncClipboard",
    "Agent",
    "AsyncAgent",
    "AgentInfo",
    "AgentEvent",
    "TextDelta",
    "ToolCall",
    "ToolFailed",
    "StepDone",
    "Notice",
    "Candidate",
    "Point",
    "Rect",
    "Size",
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
