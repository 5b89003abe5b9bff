#!/usr/bin/env python3
"""Wall time and peak memory of ``mrfq alloc CLUSTER.toml`` at scale (fluid DRFH, static H-DRF).

    python scripts/bench_cluster_alloc.py                    # every case, one line each
    python scripts/bench_cluster_alloc.py --case table1-12000x1000 --timeout 120
    python scripts/bench_cluster_alloc.py --root /path/to/another/checkout   # time another version

Each case runs in a fresh process (``--one NAME``): it writes a cluster scenario TOML, then times
``analysis.cli.main(["alloc", FILE, "--objective", OBJ, "--json"])`` (the command a user types,
output discarded; the modules it imports are imported first and timed apart) and reports the
process's peak resident memory (``ru_maxrss``).  A case still
running after ``--timeout`` seconds is killed and reported as such.

Cases (seeded, so every run solves the same instances):

* ``table1-SxU``: S servers drawn from the DRFH paper's Table I mix (nine CPU/memory types and a tenth
  of one server, normalized to the largest server; [DRFH] §I Table I), U users whose per-task CPU and
  memory demands are uniform on [0.005, 0.05] (small tasks, as the paper's trace); objective drfh.
* ``distinct-SxU``: S servers of distinct capacities (CPU and memory uniform on [0.1, 1]), U users as
  above; objective drfh.
* ``chain-K``: two users ([DRF] §4's <1 CPU, 4 GB> and <3 CPU, 1 GB>) under a chain of K internal
  nodes; objective h-drf.
* ``tree6-L``: a 6-level weighted tree (binary, weights 1-3 by position) with L users of random
  2-resource demands (some zero); objective h-drf.
* ``pick-tree6``: not a fluid allocation: microseconds per launch of the dynamic H-DRF mechanism
  (``fq.cluster.hdrf.pick``) on the tree6-64 tree, from an empty one-server cluster, 2,000 launches.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: [DRFH] Table I: number of servers, CPUs, memory (normalized to the largest server)
TABLE1 = [(6732, 0.50, 0.50), (3863, 0.50, 0.25), (1001, 0.50, 0.75), (795, 1.00, 1.00), (126, 0.25, 0.25),
          (52, 0.50, 0.12), (5, 0.50, 0.03), (5, 0.50, 0.97), (3, 1.00, 0.50), (1, 0.50, 0.06)]
CASES = ["table1-2000x20", "table1-12000x1000", "distinct-2000x100", "chain-2", "chain-3", "chain-4", "chain-6",
         "chain-40", "tree6-32", "tree6-64", "pick-tree6"]


def _users(rng, U: int) -> list[str]:
    d = rng.uniform(0.005, 0.05, size=(U, 2))
    return [f'[[user]]\nname = "u{i}"\ndemand = [{float(d[i, 0])!r}, {float(d[i, 1])!r}]\n' for i in range(U)]


def _tree6(L: int, rng) -> tuple[list[str], list[str]]:
    """Node and user tables of a 6-level tree (5 levels of binary internal nodes, users below)."""
    nodes, level = [], [["root"]]
    for depth in range(1, 6):
        cur = []
        for p in level[-1]:
            for j in range(2):
                name = f"d{depth}n{len(cur)}"
                nodes.append(f'[[node]]\nname = "{name}"\nparent = "{p}"\nweight = {1 + (j + depth) % 3}.0\n')
                cur.append(name)
        level.append(cur)
    users = []
    for i in range(L):
        dem = rng.choice([0.0, 0.5, 1.0, 2.0, 3.0], size=2)
        dem[0] = dem[0] if dem.max() > 0 else 1.0
        users.append(f'[[user]]\nname = "u{i}"\ndemand = [{float(dem[0])}, {float(dem[1])}]\n'
                     f'parent = "{level[-1][i % len(level[-1])]}"\nweight = {1 + i % 3}.0\n')
    return nodes, users


def scenario(case: str) -> tuple[str, str]:
    """(TOML text, objective) of a case."""
    rng = np.random.default_rng(1)
    kind, _, size = case.partition("-")
    head = 'name = "bench"\nresources = ["cpu", "mem"]\n[run]\nduration = 1e-6\n'
    if kind in ("table1", "distinct"):
        S, U = (int(x) for x in size.split("x"))
        if kind == "table1":
            n = np.array([t[0] for t in TABLE1], float)
            counts = rng.multinomial(S, n / n.sum())
            servers = [f"[[server]]\ncapacity = [{c}, {m}]\ncount = {k}\n"
                       for (_, c, m), k in zip(TABLE1, counts) if k > 0]
        else:
            cap = rng.uniform(0.1, 1.0, size=(S, 2))
            servers = [f"[[server]]\ncapacity = [{float(c)!r}, {float(m)!r}]\n" for c, m in cap]
        return head + "".join(servers) + "".join(_users(rng, U)), "drfh"
    if kind == "chain":
        K = int(size)
        nodes = [f'[[node]]\nname = "c{i}"\nparent = "{"root" if i == 0 else f"c{i - 1}"}"\n' for i in range(K)]
        users = [f'[[user]]\nname = "a"\ndemand = [1.0, 4.0]\nparent = "c{K - 1}"\n',
                 f'[[user]]\nname = "b"\ndemand = [3.0, 1.0]\nparent = "c{K - 1}"\n']
        return head + "[[server]]\ncapacity = [9.0, 18.0]\n" + "".join(nodes + users), "h-drf"
    if kind == "tree6":
        nodes, users = _tree6(int(size), rng)
        return head + "[[server]]\ncapacity = [100.0, 100.0]\n" + "".join(nodes + users), "h-drf"
    raise SystemExit(f"unknown case {case!r}; choose from {', '.join(CASES)}")


def one(case: str, root: str) -> None:
    sys.path.insert(0, root)
    if case == "pick-tree6":
        import tomllib

        from mrfq.flows.cluster import cluster_from_dict
        from mrfq.fq.cluster.hdrf import pick
        from mrfq.fq.cluster.state import ClusterState, Tree

        text, _ = scenario("tree6-64")
        sc = cluster_from_dict(tomllib.loads(text.replace("[100.0, 100.0]", "[1e6, 1e6]")))
        st = ClusterState.new(sc.capacity(), sc.demand(), sc.weights(), tree=Tree(*sc.tree_arrays()))
        t0 = time.perf_counter()
        n = 0
        for _ in range(2000):
            u, s = pick(st)
            st.launch(u, s)
            n += 1
        dt = time.perf_counter() - t0
        print(f"{case:<20} dynamic h-drf  {1e6 * dt / n:9.0f} us per pick ({n} picks, {len(sc.nodes)} nodes, "
              f"{sc.n_users} users)   peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:6.0f} MB")
        return
    import contextlib
    import importlib
    import io

    t0 = time.perf_counter()
    from mrfq.analysis.cli import main

    for mod in ("mrfq.analysis.cli_cluster", "mrfq.analysis.cluster.simcheck", "scipy.optimize", "scipy.sparse"):
        importlib.import_module(mod)  # imports apart: the figure is the work of alloc
    t_import = time.perf_counter() - t0

    text, obj = scenario(case)
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "c.toml")
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        out, err = io.StringIO(), io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["alloc", p, "--objective", obj, "--json"])
        dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    note = "" if rc == 0 else f"   exit {rc}: {err.getvalue().strip()[:120]}"
    print(f"{case:<20} alloc {obj:<6} {dt:9.2f} s   peak RSS {rss:6.0f} MB   (imports {t_import:.2f} s){note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", help=f"one of {', '.join(CASES)} (repeat; default all)")
    ap.add_argument("--timeout", type=float, default=120.0, help="kill a case after this many seconds (default 120)")
    ap.add_argument("--root", default=ROOT, help="the checkout whose code is timed (default: this script's)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(args.one, args.root)
        return
    for case in args.case or CASES:
        try:
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", case, "--root", args.root],
                               timeout=args.timeout,
                               capture_output=True, text=True)
            last = (r.stdout.strip() or r.stderr.strip()).splitlines()
            print(last[-1] if last else f"{case:<20} died with exit code {r.returncode} and no output", flush=True)
        except subprocess.TimeoutExpired:
            print(f"{case:<20} killed after {args.timeout:g} s", flush=True)


if __name__ == "__main__":
    main()
