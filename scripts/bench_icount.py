"""Instructions per service under callgrind: a noise-free proxy of engine speed.

    python scripts/bench_icount.py [CHECKOUT] [WORKLOADS] [--c]

e.g. ``python scripts/bench_icount.py . s3,s3sfq,s30,dyn --c``.  Per workload, two warm runs
of the bench scenario (``router.bench.scenario_for``) under ``valgrind --tool=callgrind``, of
10^5 and 5.1 x 10^6 services; (difference of the instruction counts) / (difference of the
services) removes the import, the cache load and the setup.  numba compiles for the CPU
valgrind emulates (``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` as llvmlite sees them under
valgrind) into its own cache, filled by a native run first: else every valgrind run would
compile the loop again.  ``PYTHONHASHSEED=0``.  With ``--c`` the C yardstick
(``../shared/bench/limit/mrfq_ref.c``, gcc -O2) is counted the same way.  Slow (about a
minute per run); it never fails on counts.  Workloads: s3 (3 static drfq), s3sfq (bmf-wfq),
s30 (30 static drfq), dyn (dynamic load 0.8 drfq), dynsfq.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

NAMES = {"s3": ("3 static, drfq", ["-s", "drfq", "-F", "3"]),
         "s3sfq": ("3 static, sfq (bmf-wfq)", ["-s", "sfq", "-F", "3"]),
         "s30": ("30 static, drfq", ["-s", "drfq", "-F", "30"]),
         "dyn": ("dynamic rho=0.8, drfq", ["-s", "drfq", "-m", "dynamic"]),
         "dynsfq": ("dynamic rho=0.8, sfq (bmf-wfq)", ["-s", "sfq", "-m", "dynamic"])}
N1, N2 = 100_000, 5_100_000
RUN = """import sys
from router.bench import WORKLOADS, scenario_for
from router.run import simulate
w = next(x for x in WORKLOADS if x.name == sys.argv[1])
print(simulate(scenario_for(w, int(sys.argv[2]))).services)
"""
FEATURES = "import llvmlite.binding as ll; ll.initialize_native_target(); print(ll.get_host_cpu_features().flatten())"


def count(cmd: list[str], env: dict) -> int:
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/cg", *cmd], env=env,
                           capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", p.stderr).group(1))


def main() -> None:
    tree = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    wls = sys.argv[2].split(",") if len(sys.argv) > 2 else ["s3", "s3sfq", "s30", "dyn"]
    feats = subprocess.run(["valgrind", "--tool=none", sys.executable, "-c", FEATURES], capture_output=True,
                           text=True, check=True).stdout.split()[-1]
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0", NUMBA_CPU_NAME="haswell",
               NUMBA_CPU_FEATURES=feats, NUMBA_CACHE_DIR=os.environ.get("ICOUNT_CACHE", "/tmp/nbcache_icount"))
    c_bin = None
    if "--c" in sys.argv:
        c_bin = Path(tempfile.mkdtemp()) / "mrfq_ref"
        src = tree.parent / "shared/bench/limit/mrfq_ref.c"
        subprocess.run(["gcc", "-std=c11", "-O2", "-o", str(c_bin), str(src), "-lm"], check=True)
    for wl in wls:
        name, c_args = NAMES[wl]
        py = [sys.executable, "-c", RUN, name]
        subprocess.run(py + ["1000"], env=env, cwd=tree, capture_output=True, check=True)  # fill the cache
        a, b = count(py + [str(N1)], env), count(py + [str(N2)], env)
        line = f"{wl}: mrfq {(b - a) / (N2 - N1):.1f} instructions/service"
        if c_bin is not None:
            ca, cb = (count([str(c_bin), "-n", str(n), *c_args], env) for n in (N1, N2))
            line += f", C {(cb - ca) / (N2 - N1):.1f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
