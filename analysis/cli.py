"""The ``mrfq`` command: the dispatcher, at the top of the package stack.

Each package registers its own subcommands (``analysis.cli_run``: run;
``router.cli``: presets, bench; ``analysis.cli_fluid``: alloc, fluid; ``analysis.cli_compare``:
compare, results; ``analysis.cli_scorecard``: scorecard; ``analysis.cli_cluster``: cluster); this module only builds the parser and runs the handler
behind three lines of defence:

* bad input (:class:`flows.errors.MrfqError`) -> one line on stderr, exit 2 (no command at
  all is bad input too: the line names the commands and the usage); a message is cut in the
  middle to :data:`MAX_LINE` characters should a check ever build a longer one;
* Ctrl-C -> ``mrfq: interrupted``, exit 130 (long runs return to Python
  between chunks of services, the Markov simulation between chunks of events
  and the exact Markov solve between Krylov chunks, so the interrupt is
  seen within about a second; a KeyboardInterrupt that surfaces as the cause of another
  exception, as when it lands while a numba kernel returns, counts as well;
  output files are written atomically, so nothing half-written is left);
* anything else is a bug -> one line ``mrfq: internal error: ..., please
  report with this scenario``, exit 1; ``--debug`` (anywhere on the command
  line) or ``MRFQ_DEBUG=1`` prints the traceback as well.

Run it as ``mrfq ...`` (the console script) or ``python -m analysis.cli ...``.
"""

from __future__ import annotations

import os
import sys
import traceback

from mrfq.flows import notice
from mrfq.flows.cli_args import Parser, glue_negative_values, on_terminal
from mrfq.flows.errors import MrfqError

#: longest error line printed (values and name lists are shortened where the message is built;
#: this only guards the line as a whole)
MAX_LINE = 600


def version() -> str:
    """The installed distribution's version (package metadata), or the source tree's when not installed."""
    from importlib import metadata

    try:
        return metadata.version("mrfq")
    except metadata.PackageNotFoundError:
        return "0+source (not installed)"


#: each command and the module whose ``register`` adds it, in the order ``mrfq --help`` lists them
COMMANDS = (("run", "mrfq.analysis.cli_run"), ("bench", "mrfq.router.cli"), ("presets", "mrfq.router.cli"),
            ("alloc", "mrfq.analysis.cli_fluid"), ("fluid", "mrfq.analysis.cli_fluid"),
            ("compare", "mrfq.analysis.cli_compare"), ("results", "mrfq.analysis.cli_compare"),
            ("scorecard", "mrfq.analysis.cli_scorecard"), ("cluster", "mrfq.analysis.cli_cluster"))


def build_parser(command: str | None = None) -> Parser:
    """The command line's parser: with every command, or (``command``, one of :data:`COMMANDS`)
    with that one alone, so that ``mrfq run`` does not import what the other commands need."""
    import importlib

    p = Parser(prog="mrfq", description="Packet-level multi-resource fair queueing emulator.")
    p.add_argument("--debug", action="store_true",
                   help="on an internal error, print the traceback (may appear anywhere on the command line)")
    p.add_argument("--version", action="version", version=f"mrfq {version()}")
    sub = p.add_subparsers(dest="command", parser_class=Parser, metavar="COMMAND")
    mods = [m for c, m in COMMANDS if c == command] or [m for c, m in COMMANDS]
    for m in dict.fromkeys(mods):
        importlib.import_module(m).register(sub)
    _stamp_progs(p)
    return p


def _stamp_progs(parser) -> None:
    """Every (sub)command's parser records its name (``_prog``, e.g. ``mrfq cluster sim``), so that
    an unknown option can point at that command's help."""
    import argparse

    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                sp.set_defaults(_prog=sp.prog)
                _stamp_progs(sp)


class TerminalNotice:
    """The line that says a loop is being compiled (fq._jit.compiling), on a terminal only."""

    def __init__(self, stream):
        self.stream = stream

    def start(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def done(self, seconds: float) -> None:
        self.stream.write(f" {seconds:.0f} s\n")
        self.stream.flush()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("MRFQ_DEBUG", "") not in ("", "0")
    argv = [a for a in argv if a != "--debug"]
    try:
        # (the command is the first word that is not an option: mrfq's own options take no value)
        parser = build_parser(next((a for a in argv if not a.startswith("-")), None))
        args, extra = parser.parse_known_args(glue_negative_values(argv))
        if extra:
            prog = getattr(args, "_prog", "mrfq")
            parser.error_in(prog, f"unrecognized arguments: {' '.join(extra)}")
        if not getattr(args, "func", None):
            raise MrfqError(f"missing command; usage: mrfq [--debug] COMMAND [ARGS], COMMAND one of "
                            f"{', '.join(_commands(parser))} (see mrfq --help)")
        # what a person watches (the compile notice, a long run's progress line, its estimate) goes to a
        # terminal only, never with --json or into a pipe or a log file
        watched = on_terminal(sys.stderr) and not getattr(args, "json", False)
        notice.notice = TerminalNotice(sys.stderr) if watched else None
        notice.progress = notice.TerminalLine(sys.stderr) if watched else None
        return int(args.func(args) or 0)
    except MrfqError as e:
        print(f"mrfq: error: {_fit(_one_line(str(e)))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("mrfq: interrupted (no output file was left half-written)", file=sys.stderr)
        return 130
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - the last line of defence
        if _interrupted(e):
            print("mrfq: interrupted (no output file was left half-written)", file=sys.stderr)
            return 130
        if debug:
            traceback.print_exc()
        what = f"{type(e).__name__}: {_one_line(str(e))}" if str(e) else type(e).__name__
        if len(what) > 200:
            what = what[:197] + "..."
        print(f"mrfq: internal error: {what}, please report with "
              "this scenario and command line" + ("" if debug else " (--debug shows the traceback)"),
              file=sys.stderr)
        return 1


def _interrupted(e: BaseException) -> bool:
    """A Ctrl-C that surfaced as another exception: the signal handler's KeyboardInterrupt raised
    while a numba kernel returned (CPython then raises ``SystemError: ... returned a result with
    an exception set`` with the KeyboardInterrupt as its cause)."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _one_line(msg: str) -> str:
    return " ".join(msg.split("\n"))


def _fit(msg: str, n: int = MAX_LINE) -> str:
    """``msg`` cut in the middle to about ``n`` characters: the field (its start) and the fix
    (its end) stay."""
    if len(msg) <= n:
        return msg
    return f"{msg[: n * 2 // 3]} [... {len(msg) - n + n // 10:,} characters ...] {msg[-(n // 3 - n // 10):]}"


def _commands(parser) -> list[str]:
    import argparse

    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return list(a.choices)
    return []


if __name__ == "__main__":
    sys.exit(main())
