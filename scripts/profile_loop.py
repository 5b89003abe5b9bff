"""Where the compiled event loop spends its time: perf samples mapped onto its source lines.

    python scripts/profile_loop.py ["WORKLOAD"] [SERVICES] [--top N] [--out FILE]

e.g. ``python scripts/profile_loop.py "dynamic rho=0.8, sfq (bmf-wfq)" 200000000`` or
``python scripts/profile_loop.py "bench_tcp reno" 30000000``.  Runs a ``mrfq bench`` workload
(``router.bench.WORKLOADS``), or "bench_tcp windows" / "bench_tcp reno" (``scripts/bench_tcp.py``'s
30 static flows, no recording; "bench_tcp reno+rec": with the delays and the fairness bound), in a child under ``perf record -e cpu-clock`` (timer sampling: it
works in a VM without hardware counters).  The child compiles the loop without the on-disk cache
and with ``NUMBA_DEBUGINFO=1``, writes the loop library's object code (the loop and every helper
linked into it, with their line tables) and prints the loop's address.  Each sample in that code is
charged to the instruction *before* it (a sample lands after the instruction that stalls: a
division, a load that misses), then to its source line (``objdump -l``: the innermost inlined
function's line) and to the function that line belongs to.  It prints the share of the samples in
the library, by source file, by function and by line (with the line's text); ``--out`` writes the
whole annotated disassembly.  Needs ``perf`` and ``objdump``; prints figures, never fails on them.
The tag's division (about 8 % of dynamic bmf-wfq before the engine divided once per flow) and the
TCP sender's out-of-line buffer check (docs/performance.md) were found this way.
"""
from __future__ import annotations

import argparse
import ast
import bisect
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r'''
import sys, time
from mrfq.router.bench import WORKLOADS, scenario_for
from mrfq.router.run import simulate
import mrfq.router.loop as L
rec = True
if sys.argv[1].startswith("bench_tcp"):  # scripts/bench_tcp.py's workloads, without recording (+rec: with)
    sys.path.insert(0, sys.argv[4])
    from bench_tcp import scenario
    rec = sys.argv[1].endswith("+rec")
    make = lambda n: scenario(30, n, sys.argv[1].removesuffix("+rec").endswith("reno"))
else:
    w = next(x for x in WORKLOADS if x.name == sys.argv[1])
    make = lambda n: scenario_for(w, n)
simulate(make(1000), record_delays=rec)
(fn,) = L._LOOPS.values()
cres = fn.overloads[fn.signatures[0]]
addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
open(sys.argv[3], "wb").write(cres.library.serialize_using_object_code()[2][0])
print(f"ADDR {addr:x} {cres.fndesc.llvm_func_name}", flush=True)
c0 = time.process_time(); r = simulate(make(int(sys.argv[2])), record_delays=rec); c = time.process_time() - c0
print(f"{r.services / c / 1e6:.1f} M services per CPU second (under perf)", flush=True)
'''


def _functions(path: str, cache: dict) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of every function defined in source file ``path``."""
    if path not in cache:
        try:
            tree = ast.parse(Path(path).read_text())
            cache[path] = [(n.lineno, n.end_lineno, n.name) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        except (OSError, SyntaxError):
            cache[path] = []
    return cache[path]


def _function_of(path: str, line: int, cache: dict) -> str:
    best = None
    for a, b, name in _functions(path, cache):
        if a <= line <= b and (best is None or a > best[0]):
            best = (a, name)
    return best[1] if best else "?"


def _short(path: str) -> str:
    for marker in ("/site-packages/", "/mrfq/"):
        if marker in path:
            return path.split(marker, 1)[1]
    parts = Path(path).parts
    return "/".join(parts[-2:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", nargs="?", default="dynamic rho=0.8, sfq (bmf-wfq)")
    ap.add_argument("services", nargs="?", type=float, default=1e8)
    ap.add_argument("--top", type=int, default=25, help="rows per table")
    ap.add_argument("--out", help="write the whole annotated disassembly here")
    a = ap.parse_args()
    name, services, top = a.workload, int(a.services), a.top
    tree = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as d:
        obj, data = f"{d}/loop.o", f"{d}/perf.data"
        env = dict(os.environ, MRFQ_NUMBA_CACHE="0", NUMBA_DEBUGINFO="1", PYTHONPATH=str(tree))
        p = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "5000", "-o", data, sys.executable,
                            "-c", CHILD, name, str(services), obj, str(tree / "scripts")], env=env,
                           capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"profile_loop: the child failed: {p.stderr.strip().splitlines()[-1:]}")
        m = re.search(r"ADDR ([0-9a-f]+) (\S+)", p.stdout)
        addr, symbol = int(m.group(1), 16), m.group(2)
        print(p.stdout.strip().splitlines()[-1])
        ips = subprocess.run(["perf", "script", "-i", data, "-F", "ip"], capture_output=True, text=True).stdout
        # the object's instructions: offset -> (source file, line, text); the loop symbol's offset
        sys.path.insert(0, str(tree / "scripts"))
        from bench_icount import objdump_lines

        base, insns = objdump_lines(obj, symbol)
    offs = sorted(insns)
    hits = collections.Counter(int(x, 16) - addr + base for x in ips.split())
    charged = collections.Counter()  # each sample to the instruction before it
    for k, v in hits.items():
        i = bisect.bisect_left(offs, k)
        if i < len(offs) and offs[i] == k:
            charged[offs[i - 1] if i > 0 else k] += v
    inside = sum(charged.values())
    total = sum(hits.values())
    print(f"{inside} of {total} samples in the loop's code ({100 * inside / max(total, 1):.0f} %; the rest is the "
          "compilation and the interpreter)")
    asts: dict = {}
    by_line, by_fn, by_file = collections.Counter(), collections.Counter(), collections.Counter()
    for k, v in charged.items():
        path, ln, _ = insns[k]
        by_line[(path, ln)] += v
        by_fn[(_short(path), _function_of(path, ln, asts) if ln else "?")] += v
        by_file[_short(path)] += v
    pct = lambda v: 100 * v / max(inside, 1)  # noqa: E731
    if a.out:
        Path(a.out).write_text("".join(
            f"{charged.get(k, 0):7d} {pct(charged.get(k, 0)):5.2f} {k - base:#8x}  {_short(insns[k][0])}:{insns[k][1]}  "
            f"{insns[k][2]}\n" for k in offs))
    print("\nby file:")
    for f, v in by_file.most_common(top):
        print(f"{pct(v):5.1f} %  {f}")
    print("\nby function (the innermost inlined one):")
    for (f, fn), v in by_fn.most_common(top):
        print(f"{pct(v):5.1f} %  {f}: {fn}")
    print("\nby line:")
    texts: dict = {}
    for (path, ln), v in by_line.most_common(top):
        if path not in texts:
            try:
                texts[path] = Path(path).read_text().splitlines()
            except OSError:
                texts[path] = []
        src = texts[path][ln - 1].strip() if 0 < ln <= len(texts[path]) else ""
        print(f"{pct(v):5.1f} %  {_short(path)}:{ln}  {src[:90]}")


if __name__ == "__main__":
    main()
