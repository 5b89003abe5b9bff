"""Every H-DRF paper example ([H-DRF] Bhattacharya et al., SoCC 2013): the paper's numbers against
ours, static (fluid water-filling), discrete (dynamic H-DRF filling an empty cluster), online
(the task simulator, tasks finishing and relaunching) and the naive / collapsed / single-fix
alternatives the paper shows failing.

    python scripts/cluster_hdrf_examples.py [--json]

Prints one table row per number the paper states; exit code 1 if any of ours misses the paper's
by more than the discreteness of the example (one task).
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial

import numpy as np

from mrfq.analysis.cluster.hdrf import guarantees, static_hdrf
from mrfq.flows.cluster import load_cluster_preset
from mrfq.fq.cluster import hdrf
from mrfq.fq.cluster.state import ClusterState, Tree, fill
from mrfq.router.cluster import simulate


def _tree(sc) -> Tree:
    return Tree(*sc.tree_arrays())


def _filled(sc, pick, demand=None) -> ClusterState:
    s = ClusterState.new(sc.capacity(), sc.demand() if demand is None else demand, sc.weights(), tree=_tree(sc))
    fill(s, pick)
    return s


def _churn(sc, pick, demand=None, rounds=40) -> ClusterState:
    s = _filled(sc, pick, demand)
    for _ in range(rounds):
        for u in range(s.n_users):
            on = np.flatnonzero(s.running[u])
            if on.size:
                s.finish(u, int(on[0]))
                fill(s, pick)
    return s


def rows() -> list[dict]:
    out: list[dict] = []

    def add(example, what, paper, ours, tol):
        out.append({"example": example, "quantity": what, "paper": paper, "ours": round(float(ours), 4),
                    "ok": bool(abs(float(ours) - paper) <= tol + 1e-9)})

    # Fig. 4
    sc = load_cluster_preset("hdrf-fig4")
    r = static_hdrf(sc.capacity(), sc.demand(), _tree(sc))
    for u, (name, res, paper) in enumerate([("n1,1", 0, 5), ("n2,1", 0, 5), ("n2,2", 1, 10)]):
        add("Fig. 4 static", f"{name} {sc.resources[res]}s", paper, r.tasks[u] * sc.demand()[u, res], 0)
    s = _churn(sc, hdrf.pick)
    add("Fig. 4 dynamic H-DRF, tasks churning", "n2,1 CPUs", 5, s.tasks()[1], 0)
    s = _churn(sc, hdrf.pick_naive)
    add("Fig. 4 naive H-DRF, tasks churning (§3.3)", "n2,1 CPUs (starved)", 0, s.tasks()[1], 0)
    add("Fig. 4 naive H-DRF, tasks churning (§3.3)", "n1,1 CPUs", 10, s.tasks()[0], 0)
    run = simulate(sc, allocator="naive-h-drf", duration=200.0)
    add("Fig. 4 naive H-DRF, simulator", "n2,1 share at the end", 0, run.share_time[-1, 1], 0)
    eps = np.array([[1, 0], [1, 0.01], [0, 1]], dtype=float)
    s = _churn(sc, partial(hdrf.pick, rescale=False), eps)
    add("Fig. 4 with n2,1 <1, eps>, ignoring blocked only (§3.4)", "n2,1 CPUs (starved)", 0, s.tasks()[1], 0)
    s = _churn(sc, hdrf.pick, eps)
    add("Fig. 4 with n2,1 <1, eps>, both fixes (§3.4)", "n2,1 CPUs", 5, s.tasks()[1], 0)

    # §3.2 collapsed hierarchy
    sc = load_cluster_preset("hdrf-collapsed")
    s = _filled(sc, hdrf.pick_collapsed)
    sh = s.dominant_share()
    add("§3.2 collapsed hierarchy", "n1,1 dominant share", 2 / 3, sh[0], 0)
    add("§3.2 collapsed hierarchy", "n2,1 dominant share", 1 / 3, sh[1], 0)
    add("§3.2 collapsed hierarchy", "n2 share (entitled 1/2)", 1 / 3,
        (s.allocation()[1:] / s.total).sum(axis=0).max(), 0)
    r = static_hdrf(sc.capacity(), sc.demand(), _tree(sc))
    add("§3.2 same tree, static H-DRF", "n2 share", 0.5, r.node_share[2], 0)

    # Fig. 5
    sc = load_cluster_preset("hdrf-fig5")
    r = static_hdrf(sc.capacity(), sc.demand(), _tree(sc))
    for u, name, paper in [(0, "n1,1", 1 / 3), (2, "n3,1", 1 / 3), (3, "n3,2", 1 / 2), (4, "n4,1", 1 / 2)]:
        add("Fig. 5(b) static", f"{name} dominant share", paper, r.share[u], 0)
    s = _filled(sc, partial(hdrf.pick, ignore_blocked=False))
    add("Fig. 5 rescaling only", "n3,2 GPU share", 2 / 3, s.dominant_share()[3], 0)
    add("Fig. 5 rescaling only", "n4,1 GPU share", 1 / 3, s.dominant_share()[4], 0)
    s = _churn(sc, hdrf.pick)
    add("Fig. 5 dynamic H-DRF, tasks churning", "n3,2 GPU share", 1 / 2, s.dominant_share()[3], 0)

    # Figs. 6-7
    sc = load_cluster_preset("hdrf-fig6")
    tree = _tree(sc)
    r = static_hdrf(sc.capacity(), sc.demand(), tree)
    for u, name, res, paper in [(0, "n1", 0, 0.6), (0, "n1", 1, 0.4), (1, "n2,1", 0, 0.3), (1, "n2,1", 1, 0.3),
                                (2, "n2,2", 0, 0.1), (2, "n2,2", 1, 0.3)]:
        add("Fig. 7 left (all demanding)", f"{name} {sc.resources[res]}", paper, r.usage[u, res], 0)
    r2 = static_hdrf(sc.capacity(), sc.demand()[:2], Tree(tree.parent[:5], tree.weight[:5], tree.leaf[:2]))
    for u, name, res, paper in [(0, "n1", 0, 0.5), (0, "n1", 1, 1 / 3), (1, "n2,1", 0, 0.5), (1, "n2,1", 1, 0.5)]:
        add("Fig. 7 right (n2,2 gone)", f"{name} {sc.resources[res]}", paper, r2.usage[u, res], 0)
    run = simulate(sc)
    add("Figs. 6-7 simulator, n2,2 stops at t = 100", "n1 share before", 0.6, run.share_time[5, 0], 0)
    add("Figs. 6-7 simulator, n2,2 stops at t = 100", "n1 share after (17 tasks of <3, 2>)", 0.5,
        run.share_time[-1, 0], 0.03)

    # Fig. 2
    sc = load_cluster_preset("hdrf-fig2")
    tree = _tree(sc)
    g = guarantees(tree)[tree.leaf] * 480
    for u, name, paper in [(0, "n1,1", 240), (1, "n2,1", 48), (2, "n2,2,1", 96), (3, "n2,3", 96)]:
        add("Fig. 2 share guarantee (480 slots)", f"{name} slots", paper, g[u], 0)
    run = simulate(sc)
    for u, name, paper in [(1, "n2,1", 80), (2, "n2,2,1", 160), (0, "n1,1", 240)]:
        add("Fig. 2 simulator, n2,3 leaves at t = 100", f"{name} slots after", paper, run.share_time[-1, u] * 480, 0)

    # Fig. 8-9 (§5.1)
    sc = load_cluster_preset("hdrf-fig8")
    r = static_hdrf(sc.capacity(), sc.demand(), _tree(sc))
    run = simulate(sc)
    for u, name, paper in [(0, "n1,1 CPU", 0.8), (1, "n1,2 GPU", 1.0), (2, "n2,1 CPU", 0.1), (3, "n2,2 CPU", 0.1)]:
        add("Fig. 9 (n1:n2 = 4:1) static", name, paper, r.share[u], 0)
        add("Fig. 9 (n1:n2 = 4:1) simulator, 196 CPUs", name, paper, run.share_mean[u], 1 / 196)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    table = rows()
    if args.json:
        print(json.dumps(table))
    else:
        w = max(len(r["example"]) for r in table)
        q = max(len(r["quantity"]) for r in table)
        print(f"{'example':<{w}}  {'quantity':<{q}}  {'paper':>8}  {'ours':>8}")
        for r in table:
            print(f"{r['example']:<{w}}  {r['quantity']:<{q}}  {r['paper']:>8.4g}  {r['ours']:>8.4g}"
                  f"{'' if r['ok'] else '   MISMATCH'}")
    return 0 if all(r["ok"] for r in table) else 1


if __name__ == "__main__":
    sys.exit(main())
