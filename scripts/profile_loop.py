"""Where the compiled event loop spends its time: perf samples mapped onto its machine code.

    python scripts/profile_loop.py ["WORKLOAD"] [SERVICES] [--top N] [--out FILE]

e.g. ``python scripts/profile_loop.py "dynamic rho=0.8, sfq (bmf-wfq)" 200000000``.  Runs the
``mrfq bench`` workload (``router.bench.WORKLOADS``) in a child under ``perf record -e
cpu-clock`` (timer sampling: it works in a VM without hardware counters); the child compiles
the loop without the on-disk cache (so that its machine code is in memory, not only in a cached
object), prints the loop's address and writes its first 256 KiB of code.  The workloads
"bench_tcp windows" and "bench_tcp reno" are ``scripts/bench_tcp.py``'s (30 static flows).  The samples that fall
in it are counted per instruction (``objdump`` of those bytes at that address), and the
hottest instructions are printed with their share of the loop's samples; ``--out`` writes the
whole annotated listing.  A sample lands on the instruction *after* one that stalls (a
division, a load that misses), so read each hot line together with the one before it.  Needs
``perf`` and ``objdump``; prints figures, never fails on them.  The tag's division (about 8 % of dynamic
bmf-wfq before the engine divided once per flow) was found this way.
"""
from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r'''
CODE_BYTES = 1 << 18
import ctypes, sys, time
from mrfq.router.bench import WORKLOADS, scenario_for
from mrfq.router.run import simulate
import mrfq.router.loop as L
if sys.argv[1].startswith("bench_tcp"):  # scripts/bench_tcp.py's workloads
    sys.path.insert(0, sys.argv[4])
    from bench_tcp import scenario
    make = lambda n: scenario(30, n, sys.argv[1].endswith("reno"))
else:
    w = next(x for x in WORKLOADS if x.name == sys.argv[1])
    make = lambda n: scenario_for(w, n)
simulate(make(1000))
(fn,) = L._LOOPS.values()
cres = fn.overloads[fn.signatures[0]]
addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
open(sys.argv[3], "wb").write(bytes((ctypes.c_char * CODE_BYTES).from_address(addr)))
print(f"ADDR {addr:x}", flush=True)
import numba.core.registry as _R
from numba.core.dispatcher import Dispatcher
for mod in list(sys.modules.values()):
    if (getattr(mod, "__name__", "") or "").startswith("mrfq."):
        for name, d in list(vars(mod).items()):
            if isinstance(d, Dispatcher):
                for c in d.overloads.values():
                    try:
                        print(f"FN {c.library.get_pointer_to_function(c.fndesc.llvm_func_name):x} {mod.__name__}.{name}")
                    except Exception:
                        pass
c0 = time.process_time(); r = simulate(make(int(sys.argv[2]))); c = time.process_time() - c0
print(f"{r.services / c / 1e6:.1f} M services per CPU second (under perf)", flush=True)
'''
CODE_BYTES = 1 << 18


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = dict(zip(sys.argv[1::1], sys.argv[2::1]))
    name = args[0] if args else "dynamic rho=0.8, sfq (bmf-wfq)"
    services = int(float(args[1])) if len(args) > 1 else 100_000_000
    top = int(opts.get("--top", 25))
    tree = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as d:
        code, data = f"{d}/code.bin", f"{d}/perf.data"
        env = dict(os.environ, MRFQ_NUMBA_CACHE="0", PYTHONPATH=str(tree))
        p = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "5000", "-o", data, sys.executable,
                            "-c", CHILD, name, str(services), code, str(tree / "scripts")], env=env, capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"profile_loop: the child failed: {p.stderr.strip().splitlines()[-1:]}")
        addr = int(re.search(r"ADDR ([0-9a-f]+)", p.stdout).group(1), 16)
        print(p.stdout.strip().splitlines()[-1])
        ips = subprocess.run(["perf", "script", "-i", data, "-F", "ip"], capture_output=True, text=True).stdout
        if "--keep" in opts:
            import shutil
            shutil.copy(data, opts["--keep"])
        dis = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64", f"--adjust-vma={addr:#x}", code],
                             capture_output=True, text=True, check=True).stdout
    hits = collections.Counter(int(x, 16) for x in ips.split())
    inside = sum(v for k, v in hits.items() if addr <= k < addr + CODE_BYTES)
    total = sum(hits.values())
    fns = sorted((int(a, 16), n) for a, n in re.findall(r"FN ([0-9a-f]+) (\S+)", p.stdout))
    by = collections.Counter()
    for k, v in hits.items():
        i = next((i for i in range(len(fns) - 1, -1, -1) if fns[i][0] <= k), None)
        if i is not None and k - fns[i][0] < 1 << 16 and not addr <= k < addr + CODE_BYTES:
            by[fns[i][1]] += v
    for n, v in by.most_common(8):
        print(f"{v} samples ({100 * v / max(inside, 1):.0f} % of the loop's) in the compiled helper {n}")
    print(f"{inside} of {total} samples in the loop ({100 * inside / max(total, 1):.0f} %; the rest is the "
          "compilation and the interpreter)")
    rows = []
    for line in dis.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*(.*)", line)
        if m:
            a = int(m.group(1), 16)
            rows.append((hits.get(a, 0), a, m.group(2).strip()))
    if "--out" in opts:
        Path(opts["--out"]).write_text("".join(f"{v:7d} {100 * v / max(inside, 1):5.2f} {a - addr:#7x}  {t}\n"
                                               for v, a, t in rows))
    for v, a, t in sorted(rows, reverse=True)[:top]:
        print(f"{100 * v / max(inside, 1):5.2f} %  +{a - addr:#06x}  {t}")


if __name__ == "__main__":
    main()
