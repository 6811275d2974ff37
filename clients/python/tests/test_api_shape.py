"""The sync API is the async one: every public method of the async classes has a sync twin with the same
parameters and defaults. And the client agrees with the Swift side: its version, the commands a daemon serves, the
daemon's protocol version."""

from __future__ import annotations

import inspect
import re
import subprocess

from conftest import REPO

import xclaw
from xclaw import _transport, aio, sync_api


def _public(cls: type) -> dict[str, object]:
    return {name: member for name, member in vars(cls).items() if not name.startswith("_")}


def _parameters(function: object) -> list[tuple[str, object, object]]:
    signature = inspect.signature(function)  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


def _assert_mirrors(async_cls: type, sync_cls: type, *, properties_for: frozenset[str] = frozenset()) -> None:
    asynchronous, synchronous = _public(async_cls), _public(sync_cls)
    assert sorted(asynchronous) == sorted(synchronous), f"{async_cls.__name__} and {sync_cls.__name__} differ"
    for name, member in asynchronous.items():
        twin = synchronous[name]
        if isinstance(member, property):
            assert isinstance(twin, property), name
            continue
        if name in properties_for:
            assert isinstance(twin, property), name
            continue
        assert callable(member) and callable(twin), name
        assert _parameters(member) == _parameters(twin), f"{sync_cls.__name__}.{name} differs from the async one"
        if inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member):
            assert not inspect.iscoroutinefunction(twin), name
        assert (twin.__doc__ or "").strip(), f"{sync_cls.__name__}.{name} has no doc comment"  # type: ignore[union-attr]


def test_the_sync_desktop_mirrors_the_async_one() -> None:
    _assert_mirrors(aio.AsyncDesktop, sync_api.Desktop)


def test_elements_clipboards_and_agents_mirror_theirs() -> None:
    _assert_mirrors(aio.Element, sync_api.Element)
    # The sync clipboard reads and writes its text as a property (`desk.clipboard.text = "…"`).
    _assert_mirrors(aio.AsyncClipboard, sync_api.Clipboard, properties_for=frozenset({"text"}))
    assert _parameters(aio.AsyncAgent.send) == _parameters(sync_api.Agent.send)
    assert _parameters(aio.AsyncAgent.reply) == _parameters(sync_api.Agent.reply)
    assert _parameters(aio.connect_async) == _parameters(sync_api.connect)


def test_the_version_is_xclaws(xclaw_bin: str) -> None:
    done = subprocess.run([xclaw_bin, "--version"], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == xclaw.__version__
    swift = (REPO / "Sources/XclawCommands/Xclaw.swift").read_text()
    assert f'version: "{xclaw.__version__}"' in swift


def test_the_served_commands_and_the_wire_version_are_the_daemons() -> None:
    served = (REPO / "Sources/Daemon/XclawWire/ServedCommands.swift").read_text()
    listed = served[served.index("names: Set<String> = [") : served.index("]", served.index("names: Set<String>"))]
    assert set(re.findall(r'"([a-z-]+)"', listed)) == _transport.SERVED_COMMANDS
    wire = (REPO / "Sources/Daemon/XclawWire/DaemonWire.swift").read_text()
    assert f"static let version = {_transport.WIRE_VERSION}\n" in wire
    assert "static let maximumRequest = 1 << 20\n" in wire and _transport.MAXIMUM_REQUEST == 1 << 20
