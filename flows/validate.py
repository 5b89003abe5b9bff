"""The gate's shared checks: packet scenarios (:mod:`flows.scenario`) and cluster scenarios
(:mod:`flows.cluster`) read every file, number, whole number and table through these, so both
refuse the same things with the same one-line messages.

A leaf module: it imports only :mod:`flows.errors`.  Every message names the field, quotes
the value shortened to about 60 characters (:func:`quote`; a 1 MB string is not echoed
whole) and gives the allowed range.

Files (scenarios and traces) are read by :func:`read_file`: a regular file only (a named
pipe, a directory or a device is refused from ``stat`` alone, before it is opened, so nothing
blocks), opened non-blocking, at most a documented number of bytes.  A TOML file is then
checked by :func:`check_nesting` (at most :data:`MAX_NESTING` levels of arrays and inline
tables) before :mod:`tomllib` parses it, and a trace by :func:`trace_lines` (at most
:data:`MAX_TRACE_LINE` characters a line, the CSV well formed).
"""

from __future__ import annotations

import csv
import math
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from mrfq.flows.errors import ScenarioError, name_list, quote

__all__ = ["MAX_NESTING", "MAX_TRACE_LINE", "check_keys", "check_nesting", "err", "name_list", "number",
           "path_text", "quote", "range_text", "read_file", "read_toml", "trace_rows", "whole"]

#: deepest nesting of arrays and inline tables in a TOML file (a scenario needs 2; the parser
#: and the checks recurse once per level, so a file of 1,000 ``[`` is refused before parsing)
MAX_NESTING = 32
#: longest line of a trace CSV, in characters (a row is three or four short fields; the csv
#: module's own field limit is 131,072 characters)
MAX_TRACE_LINE = 10_000


def err(msg: str) -> ScenarioError:
    """A :class:`ScenarioError` (one line)."""
    return ScenarioError(msg)


def check_keys(where: str, d: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    """Refuse a key of table ``where`` that is not in ``allowed``."""
    for k in d:
        if k not in allowed:
            raise err(f"{where}: unknown key {quote(k)}; allowed keys: {name_list(allowed, 12)}")


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


def _kind(mode: int) -> str:
    for test, what in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


def path_text(p: Any) -> str:
    """A path for a message: whole up to 200 characters, cut beyond."""
    s = str(p)
    return s if len(s) <= 200 else f"{s[:150]}... ({len(s):,} characters)"


def read_file(p: Path, *, where: str, max_bytes: int, missing: str = "no such file") -> bytes:
    """The bytes of the regular file ``p``, at most ``max_bytes`` of them.

    ``where`` starts every message (e.g. ``"scenario.toml"`` or ``"traffic.trace = 'a.csv'"``).
    A path that is not a regular file (a named pipe, a directory, a device, a socket) is refused
    from ``os.stat`` before it is opened, and the file is opened non-blocking and checked again
    on its descriptor (it may have been swapped meanwhile), so no read ever waits for a writer
    or runs without end (``/dev/zero``).  ``missing`` is the message of a path that does not exist."""
    try:
        st = os.stat(p)
        if not stat.S_ISREG(st.st_mode):
            raise err(f"{where}: {_kind(st.st_mode)}, not a regular file; give the path of a file")
        if st.st_size > max_bytes:
            raise err(f"{where}: {st.st_size:,} bytes; at most {max_bytes:,}")
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise err(f"{where}: {_kind(st.st_mode)}, not a regular file; give the path of a file")
            with os.fdopen(fd, "rb", closefd=False) as f:
                raw = f.read(max_bytes + 1)
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise err(f"{where}: {missing}") from None
    except OSError as e:
        raise err(f"{where}: cannot read ({e.strerror})") from None
    if len(raw) > max_bytes:
        raise err(f"{where}: more than {max_bytes:,} bytes")
    return raw


#: strings and comments, which the nesting scan skips (possessive "unrolled loops": linear, no
#: backtracking even on an unterminated string)
_TOML_SKIP = (r'"""[^"\\]*+(?:(?:\\[\s\S]|"(?!""))[^"\\]*+)*+"{3,5}'      # multi-line basic string
              r"|'''[^']*+(?:'(?!'')[^']*+)*+'{3,5}"                     # multi-line literal string
              r'|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'                        # basic string
              r"|'[^'\n]*+'"                                              # literal string
              r"|#[^\n]*+")                                                 # comment
_SKIPPED = re.compile(_TOML_SKIP)
_TOML_TOKENS = re.compile(_TOML_SKIP + r"|[\[\]{}]")
#: every byte but the brackets (UTF-8 continuation bytes are >= 0x80, never a bracket)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def check_nesting(text: str, *, where: str, most: int = MAX_NESTING) -> None:
    """Refuse TOML ``text`` whose arrays and inline tables nest more than ``most`` deep, before a
    parser (which recurses once per level) sees it.  Brackets inside strings and comments are not
    counted; a table header ``[[x]]`` counts as two levels on its own line.

    The depth is a walk over the brackets left once strings and comments are cut out (regular
    expressions and numpy: about 0.1 s for 10 MB); only a file found too deep is walked again
    token by token, to name the line."""
    import numpy as np

    brackets = _SKIPPED.sub("", text).encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKET)
    if len(brackets) <= most:
        return
    step = np.frombuffer(brackets, np.uint8)
    step = np.where((step == ord("[")) | (step == ord("{")), 1, -1)
    walk = np.cumsum(step)
    depth = walk - np.minimum(np.minimum.accumulate(walk), 0)  # a stray closer does not go below 0
    if depth.max() <= most:
        return
    depth = 0
    for m in _TOML_TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > most:
                line = text.count("\n", 0, m.start()) + 1
                raise err(f"{where}: line {line}: arrays or inline tables nested more than {most} deep; "
                          "a scenario needs 2 or 3 levels")
        elif c in "]}":
            depth = max(depth - 1, 0)
    raise err(f"{where}: arrays or inline tables nested more than {most} deep; a scenario needs 2 or 3 levels")


def read_toml(p: Path, *, what: str, max_bytes: int, missing_hint: str) -> dict:
    """The TOML table of file ``p`` (a ``what``, e.g. "scenario"): at most ``max_bytes``, UTF-8
    with or without a byte-order mark; a one-line ScenarioError naming the file otherwise
    (``missing_hint`` follows "no such ... file")."""
    where = path_text(p)
    raw = read_file(p, where=where, max_bytes=max_bytes, missing=f"no such {what} file ({missing_hint})")
    try:
        text = raw.decode("utf-8-sig")  # UTF-8, with or without a byte-order mark
    except UnicodeDecodeError as e:
        raise err(f"{where}: not UTF-8 text (byte {raw[e.start]:#04x} at offset {e.start}); save the scenario "
                  "file as UTF-8") from None
    check_nesting(text, where=where)
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as e:  # ValueError: an integer with too many digits
        raise err(f"{where}: not valid TOML ({quote(str(e), 200)})") from None
    except RecursionError:  # MAX_NESTING keeps the parser far from the limit; this is the last guard
        raise err(f"{where}: arrays or inline tables nested too deeply; a scenario needs 2 or 3 levels") from None


def trace_rows(text: str, *, at: Callable[[int], str]) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of each CSV row of ``text``, header included; ``at(n)`` starts a
    message about line ``n``, e.g. ``traffic.trace: a.csv line 7``.

    A line longer than :data:`MAX_TRACE_LINE` characters is refused before the csv module reads
    it, and so is a row the module cannot read (an open quote that runs on over many lines)."""
    lines = text.splitlines()
    if lines and max(map(len, lines)) > MAX_TRACE_LINE:
        i = next(i for i, s in enumerate(lines) if len(s) > MAX_TRACE_LINE)
        raise err(f"{at(i + 1)}: {len(lines[i]):,} characters; a trace line must be at most "
                  f"{MAX_TRACE_LINE:,} (a row is a few short fields)")
    reader = csv.reader(lines)
    n = 0
    try:
        for row in reader:
            n += 1
            yield reader.line_num, row
    except csv.Error as e:
        raise err(f"{at(reader.line_num)}: not a valid CSV row ({quote(str(e), 100)[1:-1]})") from None
