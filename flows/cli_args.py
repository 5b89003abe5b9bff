"""Argument helpers shared by every ``mrfq`` subcommand (a leaf: stdlib and ``flows`` only).

Every package that registers subcommands (``router.cli``: run, presets, bench;
``analysis.cli_fluid``: alloc, fluid; ``analysis.cli_compare``: compare,
results) takes its parsing and its file writing from here, so that:

* numbers are read by one strict grammar (:func:`parse_number`: no ``1_0``,
  no ``nan``/``inf``, a documented range in every message);
* loads are read by ONE grammar, :func:`parse_loads`: ``0.3,0.6`` or
  ``START:STOP:STEP`` (inclusive), at most :data:`MAX_LOADS` loads, each in
  ``[MIN_LOAD, 1)``;
* output paths are checked before any work (:func:`check_output_path`: the
  name is neither empty nor too long for the file system, the folder exists
  and is writable, the path is not a folder, a figure's format is one
  matplotlib can write) and written atomically (:func:`atomic_writer`:
  a temporary file in the same folder renamed into place, so an error or a
  Ctrl-C never leaves a half-written or truncated file);
* ``--json`` output is strict JSON (:func:`dumps_strict`: ``null``, never
  ``NaN`` or ``Infinity``).

Errors are one-line :class:`~flows.errors.MrfqError` messages naming the option,
the value (shortened) and what is allowed.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterator

from mrfq.flows.errors import MrfqError, name_list, quote

#: most loads in one ``--loads`` list or range
MAX_LOADS = 1000
#: smallest load accepted (the run lengths of a sweep grow like 1 / load)
MIN_LOAD = 1e-4
#: a comparison sweep's flow arrivals per replication (the run length of one point), replications
#: per point (initial and cap), worker processes (``mrfq compare``, analysis.compare.CompareConfig)
MIN_FLOWS, MAX_FLOWS = 10, 10**6
MAX_REPLICATIONS = 1024
MAX_WORKERS = 256
#: a decimal number: digits, one optional point, an optional exponent (no ``_``, no ``nan``)
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


def shorten(v: Any, n: int = 60) -> str:
    """``repr(v)`` cut to about ``n`` characters (:func:`flows.errors.quote`)."""
    return quote(v, n)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors that raise :class:`MrfqError` instead of exiting."""

    def error(self, message: str):  # noqa: D401
        self.error_in(self.prog, message)

    @staticmethod
    def error_in(prog: str, message: str):
        """The one-line error of the command ``prog`` (pointing at its ``--help``)."""
        if len(message) > 300:
            message = message[:297] + "..."
        raise MrfqError(f"{prog}: {message} (see {prog} --help)")


# ---------------------------------------------------------------------------
# numbers
def _g(v) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:g}"


def _range_text(lo, lo_open, hi, hi_open) -> str:
    if lo is not None and hi is not None:
        return f"in {'(' if lo_open else '['}{_g(lo)}, {_g(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {_g(lo)}"
    if hi is not None:
        return f"{'<' if hi_open else '<='} {_g(hi)}"
    return ""


def parse_number(field: str, text: Any, *, lo: float | None = None, lo_open: bool = False,
                 hi: float | None = None, hi_open: bool = False) -> float:
    """A finite decimal number in a range; ``field`` names the option in the message."""
    rng = _range_text(lo, lo_open, hi, hi_open) or "(finite)"
    s = str(text).strip()
    if not _NUMBER.fullmatch(s):
        raise MrfqError(f"{field} = {shorten(text)}: not a number; give a decimal number {rng}")
    x = float(s)
    if not math.isfinite(x):
        raise MrfqError(f"{field} = {shorten(text)}: too large; give a number {rng}")
    if (lo is not None and (x <= lo if lo_open else x < lo)) or (hi is not None and (x >= hi if hi_open else x > hi)):
        raise MrfqError(f"{field} = {shorten(text)}: out of range; give a number {rng}")
    return x


def parse_int(field: str, text: Any, *, lo: int | None = None, hi: int | None = None) -> int:
    """A whole number in ``[lo, hi]`` (``1e6`` is accepted when it is whole and in range)."""
    rng = _range_text(lo, False, hi, False) or "(finite)"
    s = str(text).strip()
    if _INTEGER.fullmatch(s):
        x = int(s)
    else:
        v = parse_number(field, s)
        if v != int(v):
            raise MrfqError(f"{field} = {shorten(text)}: must be a whole number {rng}")
        x = int(v)
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        raise MrfqError(f"{field} = {shorten(text)}: out of range; give a whole number {rng}")
    return x


def _argtype(fn, field: str, kw: dict):
    def conv(s):
        try:
            return fn(field, s, **kw)
        except MrfqError as e:  # argparse reports an ArgumentTypeError's own message
            raise argparse.ArgumentTypeError(f"{shorten(s)}: {str(e).split(': ', 1)[-1]}") from None
    conv.__name__ = field
    return conv


def parse_stage_buffer(field: str, text: Any) -> int | str | list:
    """``--stage-buffer``: ``B`` (every resource after the first), ``unbounded``, or one entry per
    resource after the first, comma-separated (``64,unbounded``); the scenario gate checks the count."""
    from mrfq.flows.scenario import MAX_STAGE_BUFFER

    entries = [e.strip() for e in str(text).split(",")]
    out: list = []
    for e in entries:
        if e == "unbounded":
            out.append(e)
        else:
            try:
                out.append(parse_int(field, e, lo=1, hi=MAX_STAGE_BUFFER))
            except MrfqError:
                raise MrfqError(f"{field} {shorten(text)}: give a whole number of packets >= 1, 'unbounded', or one "
                                "such entry per resource after the first, comma-separated (e.g. 64 or 8,unbounded)")
    return out[0] if len(out) == 1 else out


def add_pipeline_args(p) -> None:
    """``--schedule-at`` and ``--stage-buffer`` (docs/middlebox.md), for ``run`` and ``scorecard``."""
    from mrfq.flows.scenario import SCHEDULE_AT

    p.add_argument("--schedule-at", choices=SCHEDULE_AT,
                   help="override router.schedule_at: every resource orders its queue by the scheduler ([BR]), "
                        "or only the first (later resources FIFO)")
    p.add_argument("--stage-buffer", type=_argtype(parse_stage_buffer, "--stage-buffer", {}), metavar="B",
                   help="override router.stage_buffer: packets in front of each resource after the first, with "
                        "back-pressure ('unbounded', or one entry per resource, comma-separated)")


def pipeline_changes(args) -> dict:
    """The scenario changes of :func:`add_pipeline_args`' options."""
    out = {}
    if args.schedule_at is not None:
        out["router.schedule_at"] = args.schedule_at
    if args.stage_buffer is not None:
        out["router.stage_buffer"] = args.stage_buffer
    return out


def number_type(field: str, **kw):
    """An argparse ``type=`` that reads with :func:`parse_number` (errors stay one line)."""
    return _argtype(parse_number, field, kw)


def int_type(field: str, **kw):
    """An argparse ``type=`` that reads with :func:`parse_int`."""
    return _argtype(parse_int, field, kw)


def parse_loads(text: Any, field: str = "--loads") -> list[float]:
    """The one load grammar of every command: ``0.3,0.6,0.8`` or ``START:STOP:STEP`` (inclusive).

    At most :data:`MAX_LOADS` loads, each in ``[MIN_LOAD, 1)`` (every resource load must be
    below 1 for the Markov model to be stable, [BR] §4.1); the count is checked before the
    list is built, so ``0.1:0.2:1e-9`` is refused at once.
    """
    s = str(text).strip()
    if ":" in s:
        parts = s.split(":")
        if len(parts) != 3:
            raise MrfqError(f"{field} {shorten(text)}: must be START:STOP:STEP (e.g. 0.1:0.9:0.1) or a list like "
                            "0.3,0.6")
        a, b, st = (parse_number(field, p) for p in parts)
        if st <= 0:
            raise MrfqError(f"{field} {shorten(text)}: STEP must be > 0")
        if a > b:
            raise MrfqError(f"{field} {shorten(text)}: START must be <= STOP")
        x = (b - a) / st + 1e-9  # infinite when STEP is a tiny subnormal number
        if not x < MAX_LOADS:
            raise MrfqError(f"{field} {shorten(text)}: {count_text(math.floor(x) + 1 if math.isfinite(x) else x)} "
                            f"loads; at most {MAX_LOADS:,}")
        loads = [round(a + i * st, 12) for i in range(math.floor(x) + 1)]
    else:
        parts = [p for p in s.split(",")]
        if not s or any(not p.strip() for p in parts):
            raise MrfqError(f"{field} {shorten(text)}: must be START:STOP:STEP (e.g. 0.1:0.9:0.1) or a list like "
                            "0.3,0.6")
        if len(parts) > MAX_LOADS:
            raise MrfqError(f"{field} {shorten(text)}: {len(parts):,} loads; at most {MAX_LOADS:,}")
        loads = [parse_number(field, p) for p in parts]
    for x in loads:
        check_load(field, x)
    if len(set(loads)) != len(loads):
        raise MrfqError(f"{field} {shorten(text)}: a load is given twice")
    return loads


def count_text(n: float) -> str:
    """A count for a message, whole: ``100,000,001``; one of more than 15 digits by its size
    (``about 8e+299``), an infinite one as more than the largest float, so a line stays short."""
    if not math.isfinite(n):
        return f"more than {float.fromhex('0x1.fffffffffffffp+1023'):.3g}"
    n = math.floor(n)
    return f"{n:,}" if n < 10**15 else f"about {n:.3g}"


def check_load(field: str, x: float) -> float:
    """A load of the most loaded resource: in ``[MIN_LOAD, 1)``."""
    if x >= 1:
        raise MrfqError(f"{field}: load {x:g} >= 1; the Markov model needs every resource load < 1")
    if x < MIN_LOAD:
        raise MrfqError(f"{field}: load {x:g} < {MIN_LOAD:g}; the run lengths of a sweep grow like 1 / load "
                        f"(loads are in [{MIN_LOAD:g}, 1))")
    return x


def parse_names(field: str, text: Any, allowed: tuple[str, ...] | list[str]) -> list[str]:
    """A comma-separated list of distinct names from ``allowed``."""
    names = [s.strip() for s in str(text).split(",")]
    if not names or any(not s for s in names):
        raise MrfqError(f"{field} {shorten(text)}: give a comma-separated list, e.g. {','.join(allowed[:2])}")
    for s in names:
        if s not in allowed:
            raise MrfqError(f"{field}: unknown name {shorten(s)}; choose from {name_list(allowed, 12)}")
    if len(set(names)) != len(names):
        raise MrfqError(f"{field} {shorten(text)}: a name is given twice")
    return names


# ---------------------------------------------------------------------------
# scenarios
def add_scenario_args(p: argparse.ArgumentParser) -> None:
    """``SCENARIO.toml | --preset NAME``."""
    p.add_argument("scenario", nargs="?", help="scenario TOML file")
    p.add_argument("--preset", help="a shipped scenario (see `mrfq presets`)")


def load_scenario_arg(args):
    """The scenario named by ``args.scenario`` or ``args.preset`` (exactly one of them)."""
    from mrfq.flows.scenario import load_preset, load_scenario

    if args.scenario and args.preset:
        raise MrfqError("give either SCENARIO.toml or --preset NAME, not both")
    if args.preset:
        return load_preset(args.preset)
    if args.scenario:
        return load_scenario(args.scenario)
    raise MrfqError("missing scenario: give SCENARIO.toml or --preset NAME (see `mrfq presets`)")


# ---------------------------------------------------------------------------
# output files
def figure_formats() -> dict[str, str]:
    """The file formats matplotlib can write here (extension -> description)."""
    from matplotlib.figure import Figure

    return dict(Figure().canvas.get_supported_filetypes())


def path_error(field: str, path: str | os.PathLike, e: OSError) -> MrfqError:
    """The one-line refusal of a path the file system will not take (``stat`` failed)."""
    where = f"{field} {shorten(str(path))}"
    if e.errno == errno.ENAMETOOLONG:
        return MrfqError(f"{where}: file name too long for the file system; give a shorter name")
    return MrfqError(f"{where}: cannot use this path ({e.strerror}); give another file name")


def check_output_path(field: str, path: str | os.PathLike, *, figure: bool = False) -> Path:
    """Refuse, before any work, an output path that cannot be written atomically.

    The name must not be empty or too long for the file system, the folder must exist and be
    writable (the temporary file goes there), the path must not be a folder, and a figure's
    extension must be a format matplotlib can write.
    """
    if not str(path):
        raise MrfqError(f"{field}: empty file name; give a file name, e.g. {field} "
                        f"{'figure.png' if figure else 'out.csv'}")
    p = Path(path)
    d = p.parent if str(p.parent) else Path(".")
    try:
        if not d.is_dir():
            raise MrfqError(f"{field} {shorten(str(path))}: folder {shorten(str(d))} does not exist")
        if p.is_dir():
            raise MrfqError(f"{field} {shorten(str(path))}: is a folder; give a file name")
        if p.exists() and not p.is_file():
            raise MrfqError(f"{field} {shorten(str(path))}: exists and is not a regular file")
    except OSError as e:  # e.g. a name longer than the file system allows
        raise path_error(field, path, e) from None
    if not os.access(d, os.W_OK | os.X_OK):
        raise MrfqError(f"{field} {shorten(str(path))}: folder {shorten(str(d))} is not writable")
    if figure:
        ext = p.suffix.lstrip(".").lower()
        fmts = figure_formats()
        if ext and ext not in fmts:
            raise MrfqError(f"{field} {shorten(str(path))}: unknown figure format {shorten(ext)}; "
                            f"choose one of {name_list(sorted(fmts), 24)}")
    return p


def check_distinct_outputs(*outputs: tuple[str, str | os.PathLike | None]) -> None:
    """Refuse, before any work, two options naming the same file (``(field, path)`` pairs, a None or
    empty path skipped): the second write would replace the first, or a results store."""
    seen: dict[Path, str] = {}
    for field, path in outputs:
        if not path:
            continue
        key = Path(path).resolve()
        if key in seen:
            raise MrfqError(f"{field} {shorten(str(path))}: the same file as {seen[key]}; give each output "
                            "its own file")
        seen[key] = field


def _final_mode(p: Path) -> int:
    """The permission bits a plain ``open(p, "w")`` would give: those of the file it
    replaces, else 0o666 less the umask (``mkstemp`` creates its file 0o600)."""
    try:
        return p.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def _where(path: str | os.PathLike, field: str | None) -> str:
    return f"{field} {shorten(str(path))}" if field else shorten(str(path))


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "w", *, field: str | None = None) -> Iterator[Any]:
    """A file object whose content replaces ``path`` only when the block ends without error
    (``field``, the option that named the file, leads the message when the folder refuses it)."""
    p = Path(path)
    d = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name[:100]}.", suffix=".tmp", dir=d)
    except OSError as e:
        raise MrfqError(f"{_where(path, field)}: cannot write in folder {shorten(str(d))} ({e.strerror})") from None
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8", "newline": ""} if "b" not in mode else {})) as f:
            yield f
        os.chmod(tmp, _final_mode(p))
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write(path: str | os.PathLike, data: str | bytes, *, field: str | None = None) -> None:
    """Write ``data`` (text or bytes) to ``path`` atomically; an error names ``field`` (the option
    that named the file) and the file."""
    try:
        with atomic_writer(path, "wb" if isinstance(data, bytes) else "w", field=field) as f:
            f.write(data)
    except OSError as e:
        raise MrfqError(f"{_where(path, field)}: cannot write ({e.strerror}); nothing was written (a file already "
                        "there is unchanged)") from None


def save_figure(fig, path: str | os.PathLike, *, dpi: int = 120, field: str | None = None) -> None:
    """Render ``fig`` in memory in the format of ``path``'s extension (png without one),
    then write it atomically (an error names ``field`` and the file)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format=Path(path).suffix.lstrip(".").lower() or "png", dpi=dpi)
    atomic_write(path, buf.getvalue(), field=field)


# ---------------------------------------------------------------------------
def strict(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by ``None`` (numpy scalars become Python ones)."""
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "shape", None) == ():
        return strict(obj.item())
    return obj


def dumps_strict(obj: Any) -> str:
    """Strict JSON (RFC 8259): non-finite numbers become ``null``."""
    return json.dumps(strict(obj), allow_nan=False)


def on_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal: what a person watches (the compile notice, a sweep's
    progress bar) goes there only, never into a pipe or a log file."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def glue_negative_values(argv: list[str]) -> list[str]:
    """``--cost -1,1`` -> ``--cost=-1,1``: argparse would take ``-1,1`` for an option, and the
    user should hear that the cost is negative, not that ``--cost`` lacks a value."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if (a.startswith("--") and "=" not in a and i + 1 < len(argv)
                and len(argv[i + 1]) > 1 and argv[i + 1][0] == "-"
                and (argv[i + 1][1].isdigit() or argv[i + 1][1] == ".")):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
        else:
            out.append(a)
            i += 1
    return out
