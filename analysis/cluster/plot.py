"""Plots of cluster simulator runs.  Plot functions take results and return a Figure; callers save it."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display: files only

from matplotlib.figure import Figure


def plot_shares(run, fluid=None, *, title: str | None = None) -> Figure:
    """Dominant share of every user over time (bin averages of ``run.share_time``), with the fluid
    value of the allocator's objective as a dashed line per user when ``fluid`` (a
    ``analysis.cluster.simcheck.SimVsFluid``) is given; utilisation per resource in a second panel."""
    fig = Figure(figsize=(8.0, 5.5))
    ax = fig.add_subplot(2, 1, 1)
    for u, name in enumerate(run.users):
        line, = ax.step(run.sample_time, run.share_time[:, u], where="mid", label=name)
        if fluid is not None:
            ax.axhline(fluid.fluid[u], color=line.get_color(), linestyle="--", linewidth=0.8)
    ax.set_ylabel("dominant share")
    ax.set_ylim(0, max(1.0, float(run.share_time.max()) * 1.05))
    ax.legend(fontsize=8, ncol=min(4, len(run.users)))
    ax.set_title(title or f"allocator {run.allocator}" + (f" (dashed: fluid {fluid.objective})" if fluid else ""))
    ax2 = fig.add_subplot(2, 1, 2)
    ax2.bar(list(run.resources), run.utilisation)
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("utilisation (time average)")
    ax.set_xlabel("time")
    fig.tight_layout()
    return fig
