"""Keyword arguments to command-line options, named as the CLI names them (`near=` is `--near`, `class_=` is
`--class`, `action_name=` is `--action-name`)."""

from __future__ import annotations

from typing import Any, Sequence, Union

from .types import Point, Rect

#: A region as the CLI's `X,Y,W,H`, a Rect, or four numbers.
RegionLike = Union[str, Rect, Sequence[int]]


def value_text(value: Any) -> str:
    """An option's value as the command line writes it: `X,Y,W,H` for regions, `DX,DY` for offsets and points."""
    if isinstance(value, (Rect, Point)):
        return str(value) if isinstance(value, Rect) else f"{value.x},{value.y}"
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def options(**values: Any) -> list[str]:
    """`--name=value` for each value given (None and False are left out, True is the bare flag).

    `--name=value`, not two words, so a value that starts with "-" stays a value.
    """
    out: list[str] = []
    for name, value in values.items():
        if value is None or value is False:
            continue
        flag = "--" + name.rstrip("_").replace("_", "-")
        if value is True:
            out.append(flag)
        else:
            out.append(f"{flag}={value_text(value)}")
    return out


def tristate(name: str, value: Any) -> list[str]:
    """`--name` / `--no-name` for a flag that overrides a stored setting either way; nothing for None."""
    if value is None:
        return []
    flag = name.replace("_", "-")
    return [f"--{flag}" if value else f"--no-{flag}"]


def operands(*values: str) -> list[str]:
    """Positional arguments after `--`, so a label such as "-5" is never read as an option."""
    return ["--", *values] if values else []
