"""The async API: the same desktop awaited, elements that tap themselves, commands run concurrently."""

from __future__ import annotations

import asyncio

from conftest import FormApp

import xclaw


def test_the_async_api_taps_types_and_runs_commands_at_once(env: dict[str, str], form: FormApp, xclaw_bin: str) -> None:
    async def scenario() -> None:
        async with xclaw.connect_async(binary=xclaw_bin, env=env) as desk:
            assert isinstance(desk, xclaw.AsyncDesktop)
            tapped = await desk.tap("OK")
            form.expect("pressed OK 1")
            assert isinstance(tapped, xclaw.aio.Element) and tapped.label == "OK"
            shot, windows, image = await asyncio.gather(desk.snapshot(), desk.windows(), desk.capture())
            assert "xclaw pytest form" in [w.title for w in windows]
            assert (image.width, image.height) == (shot.screen.width, shot.screen.height)
            cancel = next(e for e in shot.controls if e.label == "Cancel")
            await cancel.tap()
            form.expect("pressed Cancel 4")
            [field] = [e for e in shot.controls if e.role == "field"]
            await field.type("async ✓")
            form.expect("name=async ✓")
            await desk.clipboard.set("from asyncio")
            assert await desk.clipboard.text() == "from asyncio"

    asyncio.run(scenario())


def test_await_connect_async_without_a_with_block(env: dict[str, str], form: FormApp, xclaw_bin: str) -> None:
    async def scenario() -> None:
        desk = await xclaw.connect_async(binary=xclaw_bin, env=env)
        try:
            found = await desk.find("Save", role="button")
            assert len(found) == 2
            await found[0].tap()
            form.expect("pressed Save 2")
        finally:
            await desk.close()

    asyncio.run(scenario())
