"""Where the scheduler sits: the table and figure of docs/middlebox.md (Findings).

    python scripts/middlebox_study.py [--duration 20000] [--plot middlebox.png] [--json rows.json]

Every scheduler on the cases voip, weighted and isolation under schedule_at = "every" and
"ingress" with stage buffers 1, 2, 4, 8, 16, 64, 256 and unbounded (mrfq.analysis.middlebox).
"""

from __future__ import annotations

import argparse
import json
import math

from mrfq.analysis.middlebox import PLACEMENTS, STAGES, study
from mrfq.fq.registry import SCHEDULERS


def fmt(x, nd=3):
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{nd}g}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=20_000.0)
    p.add_argument("--plot", metavar="FILE.png")
    p.add_argument("--json", metavar="FILE.json")
    p.add_argument("--cases", default="voip,weighted,isolation")
    a = p.parse_args()
    rows = study(list(SCHEDULERS), case_names=a.cases.split(","), duration=a.duration,
                 progress=lambda c, pl, b: print(f"  {c} {pl} {b}", flush=True))
    for case in dict.fromkeys(r["case"] for r in rows):
        print(f"\n### {case}\n")
        print("| scheduler | placement | B | light mean | light p99 | distance from DRF | RFB (L) | link busy | cpu busy |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if r["case"] != case:
                continue
            u = r["utilization"]
            print(f"| {r['scheduler']} | {r['schedule_at']} | {r['stage_buffer'] or 'unbounded'} | "
                  f"{fmt(r['light_mean'])} | {fmt(r['light_p99'])} | {fmt(r['drf_distance'], 2)} | {fmt(r['rfb'])} | "
                  f"{u['link']:.3f} | {u['cpu']:.3f} |")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    if a.plot:
        from mrfq.analysis.plots import plot_middlebox

        plot_middlebox(rows).savefig(a.plot, dpi=120)
        print(f"figure written to {a.plot}")


if __name__ == "__main__":
    assert PLACEMENTS and STAGES
    main()
