"""Plots of cluster simulator runs.  Plot functions take results and return a Figure; callers save it."""

from __future__ import annotations

import statistics

import matplotlib

matplotlib.use("Agg")  # no display: files only

from matplotlib.figure import Figure


def plot_shares(run, fluid=None, *, title: str | None = None) -> Figure:
    """Dominant share of every user over time (bin averages of ``run.share_time``), with the fluid
    value of the allocator's objective as a dashed line per user when ``fluid`` (a
    ``analysis.cluster.simcheck.SimVsFluid``) is given; utilisation of every resource over time below."""
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
    ax2 = fig.add_subplot(2, 1, 2, sharex=ax)
    for r, name in enumerate(run.resources):
        ax2.step(run.sample_time, run.util_time[:, r], where="mid",
                 label=f"{name} (mean {run.utilisation[r]:.3f} after warm-up)")
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("utilisation")
    ax2.set_xlabel("time")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_gap_distribution(gaps, *, xlabel: str = "worst relative gap to static H-DRF",
                          title: str | None = None) -> Figure:
    """The empirical distribution (over instances) of a relative gap, one step line per rule.

    gaps  ``{rule: [gap of each instance, ...]}``, e.g. ``scripts/cluster_hdrfq_trees.py``'s worst
          relative gap of the packet rates to static H-DRF per tree, per charging rule.
    """
    fig = Figure(figsize=(6.5, 3.8), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    for rule, g in gaps.items():
        xs = sorted(100.0 * float(v) for v in g)
        ys = [(i + 1) / len(xs) for i in range(len(xs))]
        ax.step(xs, ys, where="post", label=f"{rule} (median {statistics.median(xs):.1f} %)")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel(xlabel + " (%)")
    ax.set_ylabel("fraction of instances")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return fig
