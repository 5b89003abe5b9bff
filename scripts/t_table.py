"""Write analysis/t_table.py: Student t quantiles for the usual confidences, as scipy computes them.

    python scripts/t_table.py

``analysis.batch_stats.t_quantile(c, dof)`` is ``scipy.special.stdtrit(dof, 0.5 + c / 2)``; for
c in CONFIDENCES and 1 <= dof <= MAX_DOF it reads the value from the table instead, so that a run's
interval does not import scipy.special (about 0.2 s of a warm ``mrfq run``).  The table holds
scipy's own results (``repr`` round-trips a float exactly); tests/test_packet_delay.py checks every
entry against scipy.
"""
from pathlib import Path

from scipy.special import stdtrit

CONFIDENCES = (0.9, 0.95, 0.99)
MAX_DOF = 120


def main() -> None:
    lines = ['"""Student t quantiles ``scipy.special.stdtrit(dof, 0.5 + c / 2)`` for dof 1..%d: written by' % MAX_DOF,
             "scripts/t_table.py (do not edit; analysis.batch_stats.t_quantile reads it).\"\"\"", "",
             f"MAX_DOF = {MAX_DOF}", "T_QUANTILES = {"]
    for c in CONFIDENCES:
        vals = [repr(float(stdtrit(d, 0.5 + c / 2.0))) for d in range(1, MAX_DOF + 1)]
        lines.append(f"    {c!r}: (")
        for i in range(0, len(vals), 6):
            lines.append("        " + ", ".join(vals[i:i + 6]) + ",")
        lines.append("    ),")
    lines.append("}")
    out = Path(__file__).resolve().parent.parent / "analysis" / "t_table.py"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
