"""The sync API against a real Xvfb and a Tk form: tap and find (found, tied, not found), type into a field, watch,
capture, windows, and the clipboard checked against xclip."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import DEADLINE, FormApp, XvfbDisplay

import xclaw


def test_tap_clicks_the_button_the_label_names(desk: xclaw.Desktop, form: FormApp) -> None:
    element = desk.tap("OK")
    form.expect("pressed OK 1")
    assert isinstance(element, xclaw.Element)
    assert (element.label, element.role) == ("OK", "button")
    assert element.ref.startswith("e") and element.window and element.window.startswith("w")
    assert element.box.width > 0 and element.box.height > 0
    assert element.center == element.box.center and element.bounds == element.box
    assert form.presses() == ["pressed OK 1"]


def test_a_tie_is_refused_with_its_candidates_and_a_candidate_ref_taps_it(desk: xclaw.Desktop, form: FormApp) -> None:
    with pytest.raises(xclaw.AmbiguousMatch) as refused:
        desk.tap("Save")
    error = refused.value
    assert (error.exit_code, error.kind) == (1, "not_found")
    assert isinstance(error, xclaw.NotFound) and not isinstance(error, xclaw.UncertainMatch)
    assert "matches 2 elements equally" in error.message
    assert [(c.role, c.label) for c in error.candidates] == [("button", "Save"), ("button", "Save")]
    left, right = error.candidates
    assert left.ref != right.ref and left.box is not None and right.box is not None
    assert left.box.x < right.box.x  # reading order
    assert left.score == 1.0 and left.window == right.window
    # The refusal pressed nothing: the press of the candidate is the first the form reports.
    desk.tap(right.ref)
    form.expect("pressed Save 3")
    assert form.presses() == ["pressed Save 3"]


def test_nothing_matching_raises_not_found_and_find_returns_nothing(desk: xclaw.Desktop, form: FormApp) -> None:
    with pytest.raises(xclaw.NotFound) as missing:
        desk.tap("Nowhere to be seen")
    assert type(missing.value) is xclaw.NotFound
    assert "nothing on screen matches" in str(missing.value)
    assert missing.value.command[:1] == ["tap"]
    assert desk.find("Nowhere to be seen") == []
    with pytest.raises(xclaw.Timeout):
        desk.find("Nowhere to be seen", timeout=1)


def test_find_by_role_lists_the_matches_and_an_element_taps_itself(desk: xclaw.Desktop, form: FormApp) -> None:
    found = desk.find("Save", role="button")
    assert [(e.label, e.role, e.score) for e in found] == [("Save", "button", 1.0), ("Save", "button", 1.0)]
    assert found[0].box.x < found[1].box.x
    assert desk.find("Start", role="field") == []
    tapped = found[1].tap()
    form.expect("pressed Save 3")
    assert tapped.ref == found[1].ref
    second = desk.tap("Save", nth=1)
    form.expect("pressed Save 2")
    assert second.ref == found[0].ref


def test_type_into_a_field_by_its_label_delivers_the_text_exactly(desk: xclaw.Desktop, form: FormApp) -> None:
    text = "Zoë Müller ✓ 你好"
    desk.type(text, into="Name")
    form.expect("name=" + text)
    desk.key("End", "BackSpace")
    form.expect("name=" + text[:-1])


def test_snapshot_has_the_windows_and_controls_with_refs(desk: xclaw.Desktop, form: FormApp) -> None:
    shot = desk.snapshot()
    assert (shot.screen.width, shot.screen.height) == (1024, 768)
    [window] = [w for w in shot.windows if w.label == "xclaw pytest form"]
    buttons = [e for e in shot.controls if e.role == "button"]
    assert [b.label for b in buttons] == ["OK", "Save", "Save", "Cancel", "Start"]
    assert all(b.window == window.ref for b in buttons)
    assert shot.get(buttons[0].ref) == buttons[0]
    assert [e.role for e in shot.by_label("Save")] == ["button", "button"]
    field = next(e for e in shot.controls if e.role == "field")
    field.type("typed by ref")
    form.expect("name=typed by ref")


def test_watch_waits_for_text_and_times_out_with_what_it_saw(desk: xclaw.Desktop, form: FormApp) -> None:
    desk.tap("Start")
    form.expect("pressed Start")
    seen = desk.watch(text="Done", timeout=30)
    assert seen.match is not None and seen.match.label == "Done"
    assert "Done" in seen.condition
    with pytest.raises(xclaw.Timeout) as late:
        desk.watch(text="Never shown", timeout=1)
    assert isinstance(late.value, TimeoutError) and isinstance(late.value, xclaw.NotFound)
    assert "timed out waiting for" in str(late.value) and "last observed" in str(late.value)


def test_capture_is_a_png_of_the_screen_or_a_region(desk: xclaw.Desktop, tmp_path) -> None:
    image = desk.capture()
    assert image.png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (image.width, image.height) == (1024, 768)
    part = desk.capture(region=(10, 20, 300, 200))
    assert (part.width, part.height) == (300, 200)
    assert bytes(part) == part.png
    path = tmp_path / "shot.png"
    part.save(path)
    assert path.read_bytes() == part.png
    window = desk.capture(window="xclaw pytest form")
    assert 0 < window.width < 1024 and 0 < window.height < 768


def test_windows_lists_the_form_and_a_selection_of_nothing_is_empty(desk: xclaw.Desktop, form: FormApp) -> None:
    windows = desk.windows()
    [mine] = [w for w in windows if w.title == "xclaw pytest form"]
    assert (mine.class_name, mine.instance) == ("Pyform", "pyform")
    assert mine.mapped and mine.visible and mine.frame.width > 0
    assert mine.hex_id.startswith("0x")
    assert [w.id for w in desk.windows(class_="Pyform")] == [mine.id]
    assert desk.windows(regex="no window has this title") == []


def test_clipboard_round_trips_with_xclip(desk: xclaw.Desktop, display: XvfbDisplay) -> None:
    env = {**os.environ, "DISPLAY": display.name}
    desk.clipboard.text = "héllo ✓ from xclaw"
    read = subprocess.run(["xclip", "-o", "-selection", "clipboard"], env=env, capture_output=True, timeout=DEADLINE)
    assert read.stdout.decode() == "héllo ✓ from xclaw"
    # xclip's child keeps the selection until it is read; its output is not ours to wait for.
    subprocess.run(
        ["xclip", "-i", "-selection", "clipboard"],
        input="ünïcödé from xclip".encode(),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=DEADLINE,
    )
    assert desk.clipboard.text == "ünïcödé from xclip"
    png = desk.capture(region=(0, 0, 16, 16)).png
    desk.clipboard.set(png, type="image/png")
    assert desk.clipboard.get(type="image/png") == png
    read = subprocess.run(
        ["xclip", "-o", "-selection", "clipboard", "-t", "image/png"], env=env, capture_output=True, timeout=DEADLINE
    )
    assert read.stdout == png
