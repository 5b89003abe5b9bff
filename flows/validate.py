"""The gate's shared value checks: packet scenarios (:mod:`flows.scenario`) and
cluster scenarios (:mod:`flows.cluster`) read every number, whole number and table through
these, so both refuse the same things with the same one-line messages.

A leaf module: it imports only :mod:`flows.errors`.  Every message names the field, quotes
the value shortened to about 60 characters (:func:`quote`; a 1 MB string is not echoed
whole) and gives the allowed range.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any, Mapping

from flows.errors import ScenarioError


def quote(v: Any, n: int = 60) -> str:
    """``repr(v)`` shortened to about ``n`` characters (a 1 MB string is not echoed whole)."""
    try:
        r = repr(v)
    except ValueError:  # an int with more digits than Python will print
        r = f"<a number of {v.bit_length():,} bits>" if isinstance(v, int) else f"<{type(v).__name__}>"
    if len(r) <= n:
        return r
    return f"{r[: n - 3]}... ({len(r):,} characters)"


def err(msg: str) -> ScenarioError:
    """A :class:`ScenarioError` (one line)."""
    return ScenarioError(msg)


def check_keys(where: str, d: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    """Refuse a key of table ``where`` that is not in ``allowed``."""
    for k in d:
        if k not in allowed:
            raise err(f"{where}: unknown key {quote(k)}; allowed keys: {', '.join(allowed)}")


def number(where: str, v: Any, *, lo: float | None = None, lo_open: bool = False,
           hi: float | None = None, hi_open: bool = False) -> float:
    """A finite number (int or float, not bool) in the range; the range is in the message."""
    rng = range_text(lo, lo_open, hi, hi_open)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise err(f"{where} = {quote(v)}: must be a number{rng}")
    try:
        x = float(v)
    except OverflowError:  # an int beyond float range
        x = math.inf
    if not math.isfinite(x):
        raise err(f"{where} = {quote(v)}: must be a finite number{rng}")
    if (lo is not None and (x <= lo if lo_open else x < lo)) or (hi is not None and (x >= hi if hi_open else x > hi)):
        raise err(f"{where} = {quote(v)}: out of range; must be{rng}")
    return x


def _g(v) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:g}"


def range_text(lo, lo_open, hi, hi_open) -> str:
    if lo is not None and hi is not None:
        return f" in {'(' if lo_open else '['}{_g(lo)}, {_g(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f" {'>' if lo_open else '>='} {_g(lo)}"
    if hi is not None:
        return f" {'<' if hi_open else '<='} {_g(hi)}"
    return ""


def whole(where: str, v: Any, *, lo: int | None = None, hi: int | None = None) -> int:
    """A whole number (an int, or a float with no fraction) in ``[lo, hi]``."""
    rng = range_text(lo, False, hi, False)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise err(f"{where} = {quote(v)}: must be a whole number{rng}")
    if isinstance(v, float) and not math.isfinite(v):
        raise err(f"{where} = {quote(v)}: must be a finite whole number{rng}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise err(f"{where} = {quote(v)}: out of range; must be a whole number{rng}")
    if isinstance(v, float) and v != int(v):
        raise err(f"{where} = {quote(v)}: must be a whole number{rng}")
    return int(v)


def read_toml(p: Path, *, what: str, max_bytes: int, missing_hint: str) -> dict:
    """The TOML table of file ``p`` (a ``what``, e.g. "scenario"): at most ``max_bytes``, UTF-8
    with or without a byte-order mark; a one-line ScenarioError naming the file otherwise
    (``missing_hint`` follows "no such ... file")."""
    try:
        if p.stat().st_size > max_bytes:
            raise err(f"{p}: {p.stat().st_size:,} bytes; a {what} file must be at most {max_bytes:,} bytes")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise err(f"{p}: no such {what} file ({missing_hint})") from None
    except OSError as e:
        raise err(f"{p}: cannot read ({e.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")  # UTF-8, with or without a byte-order mark
    except UnicodeDecodeError as e:
        raise err(f"{p}: not UTF-8 text (byte {raw[e.start]:#04x} at offset {e.start}); save the scenario "
                  "file as UTF-8") from None
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as e:  # ValueError: an integer with too many digits
        raise err(f"{p}: not valid TOML ({quote(str(e), 200)})") from None
