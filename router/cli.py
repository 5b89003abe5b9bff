"""``mrfq presets`` and ``mrfq bench``: the router's subcommands (``mrfq run``, which reports
estimates with intervals, is :mod:`analysis.cli_run`).

:func:`register` adds them to the dispatcher's subparsers (the dispatcher,
``analysis.cli``, sits at the top of the package stack: flows -> fq -> router ->
analysis -> CLI).  Handlers take parsed arguments, raise
:class:`flows.errors.MrfqError` on bad input (one line, exit 2) and check
every output path before the first simulation; files are written atomically
(:mod:`flows.cli_args`), so an error or a Ctrl-C never leaves a half-written
output behind.
"""

from __future__ import annotations



def cmd_presets(args) -> int:
    from mrfq.flows.scenario import preset_description, preset_names

    for n in preset_names():
        print(f"{n:<20} {preset_description(n)}")
    return 0


def cmd_bench(args) -> int:
    from mrfq.router import bench

    return bench.run(args)


def register(sub) -> None:
    """Add ``presets`` and ``bench`` to an argparse subparsers object."""
    from mrfq.router import bench as _bench

    b = sub.add_parser("bench", help="speed: the numba engine vs the C yardstick (prints figures)")
    _bench.add_arguments(b)
    b.set_defaults(func=cmd_bench)

    pr = sub.add_parser("presets", help="list the shipped scenarios")
    pr.set_defaults(func=cmd_presets)
