"""Plots of fluid-model tables.  Plot functions take tables and return a Figure; callers save it.

``plot_gamma_vs_load`` draws [BR] Figs. 1–2: the mean flow throughput gamma_k
(packets per time unit) of each class against the load of the most loaded
resource, one colour per class and one line style per objective.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display: files only

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

#: line style of each objective
STYLES = {"drf": "-", "pf": "--", "bmf": ":", "asset": "-."}
MARKERS = {"drf": "o", "pf": "s", "bmf": "^", "asset": "d"}


def plot_gamma_vs_load(table, *, title: str | None = None) -> Figure:
    """gamma_k against the load of the most loaded resource.

    table  a list of per-load entries as printed by ``mrfq fluid --loads ... --json``
           (``{"load": x, "objectives": {"pf": {"classes": [{"name", "gamma"}, ...]}, ...}}``),
           or a dict with such a list under ``"loads"``.
    """
    entries = table["loads"] if isinstance(table, dict) else list(table)
    entries = sorted(entries, key=lambda e: e["load"])
    fig = Figure(figsize=(7.0, 4.5))
    ax = fig.add_subplot(1, 1, 1)
    objectives: list[str] = []
    classes: list[str] = []
    for e in entries:
        for o, res in e["objectives"].items():
            if o not in objectives:
                objectives.append(o)
            for c in res["classes"]:
                if c["name"] not in classes:
                    classes.append(c["name"])
    colours = [f"C{i % 10}" for i in range(len(classes))]
    for o in objectives:
        for ci, cname in enumerate(classes):
            xs, ys = [], []
            for e in entries:
                res = e["objectives"].get(o)
                if res is None:
                    continue
                for c in res["classes"]:
                    if c["name"] == cname and c.get("gamma") is not None:
                        xs.append(e["load"])
                        ys.append(c["gamma"])
            if xs:
                ax.plot(xs, ys, linestyle=STYLES.get(o, "-"), marker=MARKERS.get(o, None), markersize=3,
                        color=colours[ci], label=f"{cname} {o.upper()}")
    ax.set_xlabel("load of the most loaded resource")
    ax.set_ylabel(r"$\gamma_k$ (packets per time unit per flow)")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(bottom=0.0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=max(1, len(objectives)), loc="upper right")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def plot_size_laws(rows, *, title: str | None = None) -> Figure:
    """gamma_k / gamma_markov_k - 1 (per cent, with its 95 % half-width) per flow-size law.

    rows  the rows of ``scripts/size_laws.py --json`` (``{"scheduler", "load", "cls", "law",
          "rel", "rel_halfwidth", ...}``): one panel per scheduler, one group of points per
          (load, class), one marker per law.  A law the fluid model is insensitive to sits on 0.
    """
    rows = list(rows)
    scheds = list(dict.fromkeys(r["scheduler"] for r in rows))
    laws = list(dict.fromkeys(r["law"] for r in rows))
    groups = list(dict.fromkeys((r["load"], r["cls"]) for r in rows))
    ncol = 2 if len(scheds) > 1 else 1
    nrow = -(-len(scheds) // ncol)
    fig = Figure(figsize=(5.2 * ncol, 3.4 * nrow), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False, sharey=True)
    markers = ["o", "s", "^", "d", "v"]
    width = 0.6 / max(1, len(laws))
    for i, s in enumerate(scheds):
        ax = axes[i // ncol][i % ncol]
        for m, law in enumerate(laws):
            pts = {(r["load"], r["cls"]): r for r in rows if r["scheduler"] == s and r["law"] == law}
            xs = [g + (m - (len(laws) - 1) / 2) * width for g, key in enumerate(groups) if key in pts]
            ys = [100 * pts[key]["rel"] for key in groups if key in pts]
            es = [100 * pts[key]["rel_halfwidth"] for key in groups if key in pts]
            ax.errorbar(xs, ys, yerr=es, fmt=markers[m % len(markers)], ms=4, capsize=2, label=law)
        ax.axhline(0.0, color="0.5", lw=0.8)
        ax.set_xticks(range(len(groups)), [f"{c}\n{load:g}" for load, c in groups], fontsize=7)
        ax.set_title(s)
        ax.grid(alpha=0.3)
        if i % ncol == 0:
            ax.set_ylabel("γ / γ Markov − 1 (%)")
        ax.legend(fontsize=7)
    for j in range(len(scheds), nrow * ncol):
        axes[j // ncol][j % ncol].set_visible(False)
    if title:
        fig.suptitle(title)
    return fig


#: the schedulers' line styles in :func:`plot_delay_cdfs` (colour C0..C9 and one of these)
CDF_STYLES = ("-", "--", "-.", ":")
#: the reference line of a flow's own packet time in :func:`plot_delay_cdfs`: black, thinner, and a
#: dash-dot-dot pattern no scheduler line uses, whatever the colour cycle
PACKET_TIME_STYLE = {"color": "black", "lw": 0.8, "linestyle": (0, (6, 2, 1, 2, 1, 2)),
                     "label": "packet time (no wait)"}


def plot_delay_cdfs(cdfs, *, title: str | None = None) -> Figure:
    """The sojourn's distribution function per scheduler, one panel per flow.

    cdfs  the ``cdfs`` of :func:`analysis.scorecard.scorecard` (``{"scheduler", "flow",
          "packet_time", "delay": [...], "fraction": [...]}``: the fraction of the flow's packets
          whose sojourn is at most ``delay``, at the upper edges of the histogram's buckets).  The
          delay axis is logarithmic and shared by the panels; a thin black dash-dot-dot vertical
          line (:data:`PACKET_TIME_STYLE`, in the legend as "packet time (no wait)") marks the
          flow's own packet time, the sojourn of a packet that never waits.  The legend, in the
          first panel, names every scheduler drawn in any panel.
    """
    cdfs = list(cdfs)
    flows = list(dict.fromkeys(c["flow"] for c in cdfs))
    scheds = list(dict.fromkeys(c["scheduler"] for c in cdfs))
    ncol = min(3, max(1, len(flows)))
    nrow = -(-len(flows) // ncol)
    fig = Figure(figsize=(4.2 * ncol, 3.2 * nrow), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False, sharex=True)
    handles: dict[str, object] = {}  # label -> a line, for the one legend
    for i, name in enumerate(flows):
        ax = axes[i // ncol][i % ncol]
        for m, s in enumerate(scheds):
            for c in cdfs:
                if c["flow"] == name and c["scheduler"] == s and c["delay"]:
                    (line,) = ax.step([c["delay"][0]] + list(c["delay"]), [0.0] + list(c["fraction"]),
                                      where="post", color=f"C{m % 10}", linestyle=CDF_STYLES[m % len(CDF_STYLES)],
                                      lw=1.2, label=s)
                    handles.setdefault(s, line)
        pt = next((c["packet_time"] for c in cdfs if c["flow"] == name), None)
        if pt:
            handles.setdefault(PACKET_TIME_STYLE["label"], ax.axvline(pt, **PACKET_TIME_STYLE))
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(0.0, 1.01)
        ax.set_title(name, fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.set_xlabel("sojourn (time units)")
        if i % ncol == 0:
            ax.set_ylabel("fraction of packets")
    if handles:
        labels = [s for s in scheds if s in handles] + [x for x in handles if x not in scheds]
        axes[0][0].legend([handles[x] for x in labels], labels, fontsize=7, loc="lower right")
    for j in range(len(flows), nrow * ncol):
        axes[j // ncol][j % ncol].set_visible(False)
    if title:
        fig.suptitle(title)
    return fig


def plot_interval_shares(intervals, *, title: str | None = None) -> Figure:
    """Each flow's share of its dominant resource per interval, one panel per flow, one line per
    scheduler.

    intervals  the ``intervals`` of :func:`analysis.scorecard.scorecard` (``{"scheduler", "flow",
               "start", "end", "dominant_share", ...}``), drawn as steps over time.
    """
    rows = list(intervals)
    flows = list(dict.fromkeys(r["flow"] for r in rows))
    scheds = list(dict.fromkeys(r["scheduler"] for r in rows))
    fig = Figure(figsize=(7.0, 1.9 * max(1, len(flows)) + 0.6), layout="constrained")
    axes = fig.subplots(max(1, len(flows)), 1, squeeze=False, sharex=True)
    styles = ["-", "--", "-.", ":"]
    for i, name in enumerate(flows):
        ax = axes[i][0]
        for m, s in enumerate(scheds):
            pts = sorted((r["start"], r["end"], r["dominant_share"]) for r in rows
                         if r["flow"] == name and r["scheduler"] == s)
            if pts:
                ax.stairs([p[2] for p in pts], [pts[0][0]] + [p[1] for p in pts], color=f"C{m % 10}",
                          linestyle=styles[m % len(styles)], lw=1.2, label=s)
        ax.set_ylim(0.0, 1.05)
        ax.set_ylabel("dominant share", fontsize=8)
        ax.set_title(name, fontsize=9)
        ax.grid(True, alpha=0.3)
        if i == 0:
            ax.legend(fontsize=7, loc="upper right")
    axes[-1][0].set_xlabel("time")
    if title:
        fig.suptitle(title)
    return fig


def plot_middlebox(rows, *, title: str | None = None) -> Figure:
    """The rows of :func:`analysis.middlebox.study`: per case, the light flow's p99 sojourn (cases with
    one) and the greedy flows' largest distance from weighted DRF against the stage buffer, one line
    per scheduler, solid under ``schedule_at = "ingress"``; the unbounded buffer at the right end,
    and ``"every"`` with an unbounded buffer (the router of [BR]) as a dotted line."""
    import matplotlib.pyplot as plt

    case_names = list(dict.fromkeys(r["case"] for r in rows))
    panels = [(c, "light_p99") for c in case_names if any(r["light_p99"] is not None for r in rows if r["case"] == c)]
    panels += [(c, "drf_distance") for c in case_names]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    scheds = list(dict.fromkeys(r["scheduler"] for r in rows))
    stages = sorted({r["stage_buffer"] for r in rows if r["stage_buffer"] is not None})
    x_unb = (stages[-1] * 4) if stages else 1
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (case, key) in zip(axes[0], panels):
        for i, s in enumerate(scheds):
            col = colors[i % len(colors)]
            mine = [r for r in rows if r["case"] == case and r["scheduler"] == s]
            ing = sorted(((r["stage_buffer"] or x_unb), r[key]) for r in mine if r["schedule_at"] == "ingress"
                         and r[key] is not None)
            if ing:
                ax.plot([a for a, _ in ing], [b for _, b in ing], "-o", ms=3, color=col, label=s)
            every = [r[key] for r in mine if r["schedule_at"] == "every" and r["stage_buffer"] is None
                     and r[key] is not None]
            if every:
                ax.axhline(every[0], color=col, ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(stages + [x_unb], [str(b) for b in stages] + ["inf"])
        ax.set_yscale("log")
        ax.set_xlabel("stage buffer (packets), ingress placement")
        ax.set_ylabel("light flow p99 sojourn" if key == "light_p99" else "largest |rate / DRF share - 1|")
        ax.set_title(f"{case}: {'p99 of the light flow' if key == 'light_p99' else 'distance from DRF'}",
                     fontsize=10)
    axes[0][0].legend(fontsize=7, title="dotted: every, unbounded", title_fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_pf_sfq_distance(rows, *, series=None, title: str | None = None) -> Figure:
    """PF-SFQ's distance from PF against the window (scripts/pf_sfq_distance.py).

    rows    ``{"case", "window", "distance"}`` (distance: the worst flow's |rate / PF - 1|, in %):
            one line per case, log-log.
    series  optional ``{"t": times, "window": N, "queues": {label: Q(t) / N}}``: a second panel
            with the queues against time (in units of N), the limit cycle of a case far from PF.
    """
    rows = list(rows)
    fig = Figure(figsize=(11.0 if series else 5.5, 4.2))
    ax = fig.add_subplot(1, 2 if series else 1, 1)
    for k, case in enumerate(dict.fromkeys(r["case"] for r in rows)):
        pts = sorted((r["window"], r["distance"]) for r in rows if r["case"] == case)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", ms=4, color=f"C{k % 10}", label=case)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("window N (packets per flow)")
    ax.set_ylabel("largest |rate / PF rate - 1| (%)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("distance from PF", fontsize=10)
    if series:
        ax2 = fig.add_subplot(1, 2, 2)
        t = series["t"]
        N = series["window"]
        keep = (t - t[0]) <= 20 * N
        for k, (label, q) in enumerate(series["queues"].items()):
            ax2.plot((t[keep] - t[0]) / N, q[keep], lw=1, color=f"C{k % 10}", label=label)
        ax2.set_xlabel("time / N")
        ax2.set_ylabel(r"$Q_{ij}(t) / N$")
        ax2.set_ylim(0.0, 1.0)
        ax2.grid(True, alpha=0.3)
        ax2.legend(fontsize=8, loc="upper right")
        ax2.set_title(f"three-flow case, N = {N}: queues at the first resource", fontsize=10)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
