"""The [DRFH] §VI simulation study without the Google trace: synthetic scenarios, tables and figures.

[DRFH] evaluates Best-Fit DRFH on a Google cluster trace (12K servers, 900 users).  Without
the trace we keep what the paper specifies and draw the rest:

- servers: drawn i.i.d. from Table I (the share of each configuration in Google's cluster;
  capacities normalised so that the largest server is (1 CPU, 1 memory)), listed in draw order
  (First-Fit scans them in that order);
- Fig. 4 (dynamic allocation): 100 servers, three backlogged users as in the text: user 1
  (0.2 CPU, 0.3 mem) from 0 s to 1080 s, user 2 (0.5, 0.1) from 200 s, user 3 (0.1, 0.3) from
  500 s.  The task duration law is not given: exponential, mean ``task_mean`` (our choice);
- Figs. 5-6 and Table II (utilisation, job completion times, slot sizes): ``n_servers`` servers
  and ``n_users`` users with Poisson job arrivals.  Per user (our choices, drawn from one seeded
  generator): per-task demand log-uniform in [0.02, 0.15] of the largest server for each
  resource (upper end ``demand_hi``), geometric tasks per job with a mean log-uniform in [5, 60], exponential task
  durations with a mean uniform in [20, 100] s; the arrival rate puts the offered load at
  ``load`` times the pooled capacity of the most loaded resource.

Utilisation here is of the resources tasks *demand* (what [DRFH] Fig. 5 and Table II plot),
derived exactly from the simulator's per-user dominant-share series (tasks are a constant
multiple of the dominant share); for the slot scheduler this is below the charged (slot)
occupancy.
"""

from __future__ import annotations

import numpy as np

from mrfq.flows.cluster import ClusterScenario, cluster_from_dict

#: [DRFH] Table I: (number of servers, CPUs, memory), normalised to the largest server
TABLE_I = ((6732, 0.50, 0.50), (3863, 0.50, 0.25), (1001, 0.50, 0.75), (795, 1.00, 1.00),
           (126, 0.25, 0.25), (52, 0.50, 0.12), (5, 0.50, 0.03), (5, 0.50, 0.97), (3, 1.00, 0.50),
           (1, 0.50, 0.06))
#: [DRFH] Fig. 4 users: (demand CPU, demand mem, start, stop)
FIG4_USERS = ((0.2, 0.3, 0.0, 1080.0), (0.5, 0.1, 200.0, np.inf), (0.1, 0.3, 500.0, np.inf))
#: [DRFH] §VI text: global dominant shares in the phases of Fig. 4 (None: not stated)
FIG4_PAPER = {"u1 alone": (0.62,), "u1+u2": (0.44, 0.44), "u1+u2+u3": (0.26, 0.26, 0.26),
              "u2+u3": (None, None)}
#: phases of Fig. 4: name -> (t0, t1, active users)
FIG4_PHASES = {"u1 alone": (0.0, 200.0, (0,)), "u1+u2": (200.0, 500.0, (0, 1)),
               "u1+u2+u3": (500.0, 1080.0, (0, 1, 2)), "u2+u3": (1080.0, 1400.0, (1, 2))}
#: [DRFH] Table II: slots per maximum server -> (CPU, memory) utilisation reported
TABLE_II = {10: (0.351, 0.234), 12: (0.422, 0.274), 14: (0.439, 0.280), 16: (0.454, 0.242), 20: (0.406, 0.200)}
#: [DRFH] Fig. 6b job-size classes (number of tasks), scaled to the synthetic jobs
SIZE_CLASSES = ((1, 10), (11, 50), (51, 100), (101, 200), (201, 10**9))


def table_i_servers(rng: np.random.Generator, n: int) -> list[tuple[float, float]]:
    """``n`` server capacity vectors drawn i.i.d. with Table I's frequencies, in draw order."""
    counts = np.array([c for c, _, _ in TABLE_I], dtype=np.float64)
    k = rng.choice(len(TABLE_I), size=n, p=counts / counts.sum())
    return [(TABLE_I[i][1], TABLE_I[i][2]) for i in k]


def _servers(caps):
    return [{"name": f"s{i}", "capacity": list(c)} for i, c in enumerate(caps)]


def fig4_scenario(seed: int = 1, *, n_servers: int = 100, task_mean: float = 50.0,
                  duration: float = 1400.0, samples: int = 140) -> ClusterScenario:
    """[DRFH] Fig. 4's dynamic-allocation scenario (Table I servers drawn from ``seed``)."""
    caps = table_i_servers(np.random.default_rng(seed), n_servers)
    users = []
    for i, (c, m, t0, t1) in enumerate(FIG4_USERS):
        u = {"name": f"u{i + 1}", "demand": [c, m], "start": t0, "duration": task_mean}
        if np.isfinite(t1):
            u["stop"] = t1
        users.append(u)
    return cluster_from_dict({"resources": ["cpu", "mem"], "server": _servers(caps), "user": users,
                              "run": {"allocator": "drfh-best-fit", "duration": duration, "seed": seed,
                                      "samples": samples}}, name="drfh-fig4")


def trace_scenario(seed: int = 1, *, n_servers: int = 200, n_users: int = 8, load: float = 0.9,
                   duration: float = 3000.0, warmup: float = 300.0, samples: int = 60,
                   demand_hi: float = 0.15) -> ClusterScenario:
    """The synthetic stand-in for the Google trace (see the module docstring); per-task demands are
    log-uniform in [0.02, ``demand_hi``] of the largest server."""
    rng = np.random.default_rng([seed, 6])
    caps = table_i_servers(rng, n_servers)
    total = np.sum(caps, axis=0)
    dem = np.exp(rng.uniform(np.log(0.02), np.log(demand_hi), size=(n_users, 2)))
    mean_tasks = np.exp(rng.uniform(np.log(5), np.log(60), size=n_users))
    mean_dur = rng.uniform(20, 100, size=n_users)
    # offered work per job arrival (jobs split equally among users): sum_u (1/U) n_u d_u D_u / T
    per_job = (mean_tasks * mean_dur)[:, None] * dem / total
    rate = load / per_job.mean(axis=0).max()
    users = [{"name": f"u{i + 1}", "demand": dem[i].round(4).tolist(), "job_share": 1.0,
              "tasks_per_job": float(mean_tasks[i]), "tasks_law": "geometric",
              "duration": float(mean_dur[i])} for i in range(n_users)]
    return cluster_from_dict({"resources": ["cpu", "mem"], "server": _servers(caps), "user": users,
                              "traffic": {"kind": "poisson", "rate": float(rate)},
                              "run": {"allocator": "drfh-best-fit", "duration": duration, "warmup": warmup,
                                      "seed": seed, "samples": samples}}, name="drfh-trace-like")


def demand_utilisation(sc: ClusterScenario, run) -> tuple[np.ndarray, np.ndarray]:
    """(mean over [warmup, T] per resource, series [B, R]) of the demanded fraction of the pool."""
    D = sc.demand() / sc.capacity().sum(axis=0)
    dom = D.max(axis=1)
    mean = (run.tasks_mean @ D)
    series = (run.share_time / dom) @ D
    return mean, series


def phase_shares(run, phases=FIG4_PHASES, settle: float = 0.25) -> dict[str, np.ndarray]:
    """Mean dominant share of every user in each phase, skipping the first ``settle`` of it."""
    out = {}
    t = run.sample_time
    for name, (t0, t1, _) in phases.items():
        m = (t >= t0 + settle * (t1 - t0)) & (t < t1)
        out[name] = run.share_time[m].mean(axis=0) if m.any() else np.full(run.share_time.shape[1], np.nan)
    return out


def fluid_phase_shares(sc: ClusterScenario, phases=FIG4_PHASES) -> dict[str, np.ndarray]:
    """Fluid DRFH global dominant shares of the active users of each phase ([DRFH] eq. (7))."""
    from mrfq.analysis.cluster.drfh import drfh

    out = {}
    for name, (_, _, act) in phases.items():
        G = np.zeros(sc.n_users)
        G[list(act)] = drfh(sc.capacity(), sc.demand()[list(act)]).G
        out[name] = G
    return out


def matched_completions(sc: ClusterScenario, a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Completion times of the jobs finished in both runs ``a`` and ``b`` (same scenario and seed, so
    the same jobs: matched on (user, arrival time)); returns (tasks, completion in a, completion in b)."""
    ka = {(int(u), float(t)): i for i, (u, t) in enumerate(zip(a.job_user, a.job_arrival, strict=True))}
    rows = []
    for j, (u, t) in enumerate(zip(b.job_user, b.job_arrival, strict=True)):
        i = ka.get((int(u), float(t)))
        if i is not None:
            rows.append((a.job_tasks[i], a.completion[i], b.completion[j]))
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    r = np.array(rows)
    return r[:, 0].astype(np.int64), r[:, 1], r[:, 2]


def reduction_by_size(tasks, ca, cb, classes=SIZE_CLASSES) -> list[tuple[str, int, float]]:
    """[DRFH] Fig. 6b: per job-size class, (label, jobs, mean completion time reduction of a vs b in %)."""
    out = []
    for lo, hi in classes:
        m = (tasks >= lo) & (tasks <= hi)
        label = f"{lo}-{hi}" if hi < 10**9 else f">{lo - 1}"
        red = 100.0 * (1.0 - ca[m].mean() / cb[m].mean()) if m.any() else float("nan")
        out.append((label, int(m.sum()), red))
    return out


# ---------------------------------------------------------------------------
# figures (take tables, return a Figure; the script saves them)
# ---------------------------------------------------------------------------
def plot_fig4(run, fluid: dict, phases=FIG4_PHASES):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for u in range(run.share_time.shape[1]):
        ax.plot(run.sample_time, run.share_time[:, u], label=f"user {u + 1} (Best-Fit)")
    for k, (name, (t0, t1, act)) in enumerate(phases.items()):
        for u in act:
            ax.hlines(fluid[name][u], t0, t1, colors=f"C{u}", linestyles="dashed",
                      label="fluid DRFH" if (k == 0 and u == act[0]) else None)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("global dominant share")
    ax.set_title("[DRFH] Fig. 4 flavour: Best-Fit DRFH vs fluid DRFH (dashed)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_utilisation(series: dict, t):
    """[DRFH] Fig. 5: CPU and memory utilisation over time, one line per allocator."""
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    for name, s in series.items():
        for r, ax in enumerate(axs):
            ax.plot(t, s[:, r], label=name)
    axs[0].set_ylabel("CPU utilisation")
    axs[1].set_ylabel("memory utilisation")
    axs[1].set_xlabel("time (s)")
    axs[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_completion(cdfs: dict, reductions: list):
    """[DRFH] Fig. 6: (a) CDF of job completion times, (b) mean reduction by job size
    (:func:`analysis.cluster.google_day.plot_fig6`, the same figure)."""
    from mrfq.analysis.cluster.google_day import plot_fig6

    return plot_fig6(cdfs, reductions)
