"""Argument types shared by every `resispec` subcommand: each checks one kind of value where it enters
and raises `argparse.ArgumentTypeError`, so that argparse stops with exit status 2 and a message naming
the option (``argument --bootstrap: must be an integer >= 1, got '0'``).

A subcommand uses them as ``type=`` of its options (``type=positive_int``, ``type=existing_file``,
``type=bounded_float(0, 1, closed=False)``, ...); a new one (e.g. in `resispec.workflow.steps`) reuses
them rather than checking its arguments in ``run``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _fail(what: str, text: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"must be {what}, got {text!r}")


def bounded_int(low: int, high: int | None = None) -> Callable[[str], int]:
    """An integer in [low, high] (high None: no upper bound)."""
    what = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise _fail(what, text) from None
        if value < low or (high is not None and value > high):
            raise _fail(what, text)
        return value

    parse.__name__ = f"int>={low}"
    return parse


def bounded_float(low: float, high: float | None = None, *, closed: bool = True) -> Callable[[str], float]:
    """A finite number in [low, high] (``closed=False``: in (low, high))."""
    left, right = ("[", "]") if closed else ("(", ")")
    what = f"a finite number in {left}{low:g}, {'inf' if high is None else f'{high:g}'}{right}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise _fail(what, text) from None
        inside_low = value >= low if closed else value > low
        inside_high = high is None or (value <= high if closed else value < high)
        if not math.isfinite(value) or not inside_low or not inside_high:
            raise _fail(what, text)
        return value

    parse.__name__ = "number"
    return parse


positive_int = bounded_int(1)
nonnegative_int = bounded_int(0)
temperature = bounded_float(0.0)  # finite, >= 0 (0 = greedy)


def existing_file(text: str) -> Path:
    """A path to a file that exists."""
    path = Path(text)
    if not path.is_file():
        raise _fail("an existing file", text)
    return path


def json_of(kind: type) -> Callable[[str], Any]:
    """JSON text holding a ``kind`` (dict or list)."""
    name = {dict: "object", list: "array"}[kind]

    def parse(text: str) -> Any:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"must be JSON ({exc.msg}), got {text[:80]!r}") from None
        if not isinstance(value, kind):
            raise _fail(f"a JSON {name}", text[:80])
        return value

    parse.__name__ = f"json-{name}"
    return parse


json_object = json_of(dict)
json_list = json_of(list)


def dataset_name(text: str) -> str:
    """A corpus name or alias, as its canonical name (``resispec.corpora.canonical_name``)."""
    from resispec.corpora import canonical_name

    try:
        return canonical_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def method_name(text: str) -> str:
    """A verifier id of ``resispec.verify.METHODS`` or ``autoregressive`` (the target alone)."""
    from resispec.decoding.autoregressive import METHOD as AUTOREGRESSIVE
    from resispec.verify import METHODS

    known = (*METHODS, AUTOREGRESSIVE)
    if text not in known:
        raise _fail(f"one of {', '.join(known)}", text)
    return text
