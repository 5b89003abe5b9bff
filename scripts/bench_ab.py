"""A/B engine speed of two installs, interleaved: CPU seconds per 10^6 services (min, median).

    python scripts/bench_ab.py OLD_PYTHON,NEW_PYTHON [PAIRS] [WORKLOADS]

Each side is a Python interpreter whose environment has mrfq installed from the checkout to
compare (an editable install: ``git worktree add /tmp/old 6d7a6fe && python -m venv /tmp/venv-old
&& /tmp/venv-old/bin/pip install -e /tmp/old``), e.g. ``python scripts/bench_ab.py
/tmp/venv-old/bin/python,python 9 static3,static3-sfq,static300,static10000``.  Each run is a
fresh process with its own numba cache; runs alternate between the sides (A B A B ...), so a
burst of load lands on both.  It prints figures and never fails on timing.
Workloads: static3 (drfq), static3-sfq (bmf-wfq), dyn (br-unbalanced at load 0.8),
staticN (N static drfq flows), or the name of a ``mrfq bench`` row (``router.bench.WORKLOADS``,
e.g. "dynamic rho=0.8, sfq (bmf-wfq)": its scenario, 6 x 10^6 services; separate workloads
with "|" when a name has a comma).  A checkout may carry environment settings after "@",
e.g. ``.@NUMBA_OPT=2``.
"""
import subprocess
import sys
import statistics
import os
trees = sys.argv[1].split(",")
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
code = r'''
import time, sys
from mrfq import flows
from mrfq.router.run import simulate
wl = sys.argv[1]
if wl == "static3": sc = flows.load_preset("oracle-three-flows").replace(**{"run.warmup": 0.0, "run.duration": 1e9, "run.max_services": 6_000_000})
elif wl == "static3-sfq": sc = flows.load_preset("oracle-three-flows").replace(**{"router.scheduler": "bmf-wfq", "run.warmup": 0.0, "run.duration": 1e9, "run.max_services": 6_000_000})
elif wl == "dyn": sc = flows.load_preset("br-unbalanced").replace(**{"traffic.load": 0.8, "run.max_services": 6_000_000, "run.duration": 1e10})
elif not wl.startswith("static") or "," in wl:
    from mrfq.router.bench import WORKLOADS, scenario_for
    w = next(x for x in WORKLOADS if x.name == wl)
    sc = scenario_for(w, 6_000_000) if w.mode != "rtt" else scenario_for(w, 0)
elif wl.startswith("static"):
    n = int(wl[6:])
    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"window": 30}, "run": {"duration": 1e10, "max_services": 6_000_000},
        "flow": [{"name": f"f{i}", "cost": [[1,0.2],[0.2,1],[1,1]][i % 3]} for i in range(n)]})
simulate(sc.replace(**{"run.max_services": 100000}))
c0 = time.process_time(); r = simulate(sc); c = time.process_time() - c0
print(c / r.services * 1e6)
'''
arg = sys.argv[3] if len(sys.argv) > 3 else "static3,dyn,static300"
wls = arg.split("|") if "|" in arg else [arg] if ", " in arg else arg.split(",")
for wl in wls:
    res = {t: [] for t in trees}
    for _ in range(reps):
        for t in trees:
            python, *kv = t.split("@")
            env = dict(os.environ, NUMBA_CACHE_DIR="/tmp/nc-ab-" + "".join(c if c.isalnum() else "_" for c in t))
            env.update(dict(x.split("=", 1) for x in kv))
            out = subprocess.run([python, "-c", code, wl], env=env, capture_output=True, text=True, cwd="/")
            if out.returncode:
                print(out.stderr[-800:])
                sys.exit(1)
            res[t].append(float(out.stdout.strip().splitlines()[-1]))
    print(wl, {t: (round(min(v), 4), round(statistics.median(v), 4)) for t, v in res.items()}, flush=True)
