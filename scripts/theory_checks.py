"""Print the theory checks of docs/findings/theory-checks.md: every bound against the measured value
per scheduler, FIFO on the same packets, as a Markdown table.

    python scripts/theory_checks.py [--delay-run 20000] [--fair-run 4000] [--seeds 1]

Delays are exact (the departure list), in time units; relative fairness is in units of the largest
dominant service a packet of any flow needs (``L``).  A few seconds after compilation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mrfq.analysis import theory_bounds as tb  # noqa: E402


def cell(measured: float, bound: float) -> str:
    ok = measured <= bound * (1 + 1e-9)
    return f"{measured:.4g}" if ok else f"**{measured:.4g}**"


def delay_table(run: float) -> list[str]:
    out = ["| check | bound | fq-single | bmf-wfq | drfq | drr | fifo |", "|---|---|---|---|---|---|---|"]
    sfq = {s: tb.sfq_check(s, run) for s in ("fq-single", "bmf-wfq", "drfq", "fifo")}
    b = sfq["fifo"]["bound"]
    out.append(f"| [SFQ] delay guarantee, CBR at 0.39 of its 0.4 | {b:.4g} | "
               + " | ".join(cell(sfq[s]["max"], b) for s in ("fq-single", "bmf-wfq", "drfq")) + " | | "
               + cell(sfq["fifo"]["max"], b) + " |")
    lr = {s: tb.drr_lr_check(s, run) for s in ("drr", "fifo")}
    b = lr["drr"]["bound"]
    out.append(f"| DRR latency-rate bound, same packets | {b:.4g} | | | | {cell(lr['drr']['max'], b)} | "
               f"{cell(lr['fifo']['max'], b)} |")
    sp = {s: tb.drr_sparse_check(s, run) for s in ("drr", "fifo")}
    b = sp["drr"]["bound"]
    out.append(f"| DRR deficit-lemma bound, CBR every 7 | {b:.4g} | | | | {cell(sp['drr']['max'], b)} | "
               f"{cell(sp['fifo']['max'], b)} |")
    return out


def fairness_table(run: float, seeds: int) -> list[str]:
    runs = {"drfq": ("drfq", None), "drfq (in-service)": ("drfq", {"virtual_time": "in-service"}),
            "drfq-dovetail": ("drfq-dovetail", None), "mr3": ("mr3", None), "fifo": ("fifo", None)}
    names = tuple(runs)
    out = ["| scenario | measure | bound | " + " | ".join(names) + " |", "|---" * (3 + len(names)) + "|"]
    for variant, w in (("balanced", (1.0, 1.0, 1.0)), ("cpu-bottleneck", (1.0, 1.0, 1.0)),
                       ("link-bottleneck", (1.0, 1.0, 1.0)), ("balanced", (1.0, 2.0, 1.0))):
        name = variant if w == (1.0, 1.0, 1.0) else f"{variant}, weights 1:2:1"
        cs = {s: [tb.fairness_check(runs[s][0], run, variant=variant, weights=w, seed=k, router=runs[s][1])
                  for k in range(1, seeds + 1)] for s in names}
        for key, label, bound in (("dominant", "dominant service", 2.0), ("scheduled", "scheduled", 3.0)):
            out.append(f"| {name} | {label} | {bound:g} L | "
                       + " | ".join(cell(max(c[key] for c in cs[s]), bound) for s in names) + " |")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--delay-run", type=float, default=20_000.0, help="time units of the delay runs")
    p.add_argument("--fair-run", type=float, default=4000.0, help="time units of the fairness runs")
    p.add_argument("--seeds", type=int, default=1, help="seeds of the fairness runs (the largest value is shown)")
    a = p.parse_args(argv)
    print("Largest sojourn of the CBR flow (time units); bold: above the bound\n")
    print("\n".join(delay_table(a.delay_run)))
    print("\nRelative fairness after warm-up (units of L); bold: above the bound\n")
    print("\n".join(fairness_table(a.fair_run, a.seeds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
