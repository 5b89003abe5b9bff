"""The one error type every user-facing check raises, and the two helpers that keep its line short.

The CLI turns a :class:`MrfqError` into one line on stderr and exit code 2,
never a traceback.  The message always names the offending field and what is
allowed, e.g. ``flow[1].cost[0] = -1.0: must be >= 0``.  Values are quoted with
:func:`quote` (about 60 characters at most: a 1 MB string or a 401-digit integer is
not echoed whole) and lists of names with :func:`name_list` (a handful of names and
how many more), so a message stays one readable line whatever the input.
"""

from __future__ import annotations

from typing import Any, Iterable

#: characters of a quoted value in a message (longer values are cut, their length given)
QUOTE_CHARS = 60
#: names a message lists before saying how many more there are
LIST_NAMES = 6


class MrfqError(ValueError):
    """Bad input: a malformed scenario, an impossible parameter, an unknown name."""


class ScenarioError(MrfqError):
    """A scenario (TOML file, preset or keyword arguments) failed validation."""


def quote(v: Any, n: int = QUOTE_CHARS) -> str:
    """``repr(v)`` cut to about ``n`` characters: ``'xxx...' (1,000,002 characters)``.

    An integer of more digits than Python will print is described by its size, a value nested
    too deeply for ``repr`` by its type.
    """
    try:
        r = repr(v)
    except ValueError:  # an int with more digits than Python will print
        return f"<an integer of {v.bit_length():,} bits>" if isinstance(v, int) else f"<{type(v).__name__}>"
    except RecursionError:
        return f"<a {type(v).__name__} nested too deeply to print>"
    if len(r) <= n:
        return r
    if isinstance(v, int):
        return f"{r[: n - 3]}... ({len(r.lstrip('-')):,} digits)"
    return f"{r[: n - 3]}... ({len(r):,} characters)"


def name_list(names: Iterable[Any], n: int = LIST_NAMES, *, conj: str = "") -> str:
    """``a, b, c, d, e, f and 1,994 more``: the first ``n`` names (each cut by :func:`quote`'s rule
    to about 60 characters, unquoted), then how many are left out.  ``conj`` (e.g. ``"or"``) joins
    the last name of a short list: ``a, b or c``."""
    names = [str(x) for x in names]
    cut = [s if len(s) <= QUOTE_CHARS else f"{s[:QUOTE_CHARS - 3]}..." for s in names[:n]]
    if len(names) > n:
        return f"{', '.join(cut)} and {len(names) - n:,} more"
    if conj and len(cut) > 1:
        return f"{', '.join(cut[:-1])} {conj} {cut[-1]}"
    return ", ".join(cut)
