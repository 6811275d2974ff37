"""Bad input raises the typed exception with xclaw's message; a lost display is DisplayLost; a missing binary says
how to get one; refusals' candidate lines read into their parts."""

from __future__ import annotations

import asyncio

import pytest
from conftest import FormApp, XvfbDisplay

import xclaw
from xclaw.errors import candidate_of, error_for, parse_candidate


def test_bad_input_raises_usage_error_with_xclaws_message(desk: xclaw.Desktop, form: FormApp) -> None:
    with pytest.raises(xclaw.UsageError) as key:
        desk.key("Return", "nosuchkey")
    assert isinstance(key.value, ValueError)
    assert (key.value.exit_code, key.value.kind) == (2, "usage")
    assert 'unknown key name "nosuchkey"' in str(key.value)
    with pytest.raises(xclaw.UsageError) as region:
        desk.capture(region=(0, 0, 0, 10))
    assert "region" in str(region.value).lower()
    with pytest.raises(xclaw.UsageError) as role:
        desk.tap("OK", role="gadget")
    assert "gadget" in str(role.value)
    with pytest.raises(xclaw.UsageError):
        desk.watch(timeout=1)
    with pytest.raises(xclaw.UsageError) as off:
        desk.click(5000, 10)
    assert "1024x768" in str(off.value)
    # Nothing was pressed by any of them (Return would not show, a click would): the form saw no press.
    desk.tap("OK")
    form.expect("pressed OK 1")
    assert form.presses() == ["pressed OK 1"]


def test_a_display_that_went_away_raises_display_lost(env: dict[str, str], xclaw_bin: str) -> None:
    gone = XvfbDisplay()
    gone.stop()
    with xclaw.connect(gone.name, binary=xclaw_bin, env=env) as desk:
        assert desk.display == gone.name
        with pytest.raises(xclaw.DisplayLost) as lost:
            desk.windows()
    assert lost.value.exit_code == 3 and lost.value.kind == "display"


def test_a_missing_binary_is_not_installed() -> None:
    with pytest.raises(xclaw.NotInstalled) as missing:
        xclaw.connect(binary="/nonexistent/xclaw")
    assert isinstance(missing.value, FileNotFoundError)
    assert "XCLAW_BIN" in str(missing.value)


def test_the_sync_api_refuses_a_running_event_loop(env: dict[str, str], xclaw_bin: str) -> None:
    desk = xclaw.connect(binary=xclaw_bin, env=env)

    async def inside() -> None:
        with pytest.raises(RuntimeError, match="connect_async"):
            desk.windows()

    try:
        asyncio.run(inside())
    finally:
        desk.close()


def test_candidate_lines_read_into_their_parts() -> None:
    atspi = parse_candidate('  e12 button "Say \\"hi\\"" @100,50 80x30 in w2 [atspi] [covered] score 0.97')
    assert (atspi.ref, atspi.role, atspi.label, atspi.window) == ("e12", "button", 'Say "hi"', "w2")
    assert atspi.box == xclaw.Rect(60, 35, 80, 30) and atspi.center == xclaw.Point(100, 50)
    assert (atspi.source, atspi.covered, atspi.score, atspi.confidence) == ("atspi", True, 0.97, None)
    unread = parse_candidate('e9 button "" (unread)')
    assert (unread.ref, unread.label, unread.unread, unread.box) == ("e9", "", True, None)
    image = parse_candidate("@116,56 32x32 at 100,40 score 0.9987 scale 1.25")
    assert image.ref is None and image.box == xclaw.Rect(100, 40, 32, 32) and image.score == 0.9987
    window = parse_candidate("0x1e00004 Editor — notes.txt")
    assert window.line == "0x1e00004 Editor — notes.txt" and window.ref is None


def test_candidates_the_json_error_object_gives_are_taken_as_they_are() -> None:
    given = [
        {"ref": "e2", "role": "button", "label": "Save", "box": {"x": 63, "y": 5, "width": 63, "height": 29}},
        {"box": {"x": 1, "y": 2, "width": 3, "height": 4}, "center": {"x": 2, "y": 4}, "score": 0.99, "scale": 1},
    ]
    message = 'xclaw: "Save" matches 2 elements equally; pick one…:\n  e9 button "Other" @1,1 2x2'
    tie = error_for(1, message, candidates=[candidate_of(item) for item in given])
    assert isinstance(tie, xclaw.AmbiguousMatch)
    assert [(c.ref, c.label, c.box) for c in tie.candidates] == [
        ("e2", "Save", xclaw.Rect(63, 5, 63, 29)),
        (None, None, xclaw.Rect(1, 2, 3, 4)),
    ]
    assert tie.candidates[1].score == 0.99


def test_a_window_that_is_not_there_is_an_error_not_an_empty_find(desk: xclaw.Desktop) -> None:
    with pytest.raises(xclaw.NotFound) as missing:
        desk.find("OK", window="no window has this title")
    assert "no window matches" in str(missing.value)


def test_exit_codes_map_to_their_exceptions() -> None:
    message = 'xclaw: "Save" matches 2 elements equally; pick one…:\n  e2 button "Save" @94,19 63x29 in w1 score 1.00'
    tie = error_for(1, message)
    assert isinstance(tie, xclaw.AmbiguousMatch) and [c.ref for c in tie.candidates] == ["e2"]
    guess = error_for(1, 'xclaw: not clicking "Fil": only a similar label was read…:\n  e4 button "Fill" @1,1 2x2')
    assert isinstance(guess, xclaw.UncertainMatch) and guess.candidates[0].label == "Fill"
    assert isinstance(error_for(1, "xclaw: timed out waiting for x; last observed: y"), xclaw.Timeout)
    assert type(error_for(1, "xclaw: no window matches")) is xclaw.NotFound
    assert [type(error_for(code, "m")) for code in (2, 3, 4, 5, 130, 143, 7)] == [
        xclaw.UsageError,
        xclaw.DisplayLost,
        xclaw.ApiError,
        xclaw.InternalError,
        xclaw.Interrupted,
        xclaw.Interrupted,
        xclaw.XclawError,
    ]
    assert error_for(130, "m").kind == "interrupted" and error_for(7, "m").kind == "failed"
