"""Instructions per service under callgrind: a noise-free proxy of engine speed.

    python scripts/bench_icount.py [CHECKOUT] [WORKLOADS] [--c] [--annotate FILE]

e.g. ``python scripts/bench_icount.py . s3,s3sfq,s30,dyn --c``.  Per workload, two warm runs
of the bench scenario (``router.bench.scenario_for``) under ``valgrind --tool=callgrind``, of
10^5 and 5.1 x 10^6 services; (difference of the instruction counts) / (difference of the
services) removes the import, the cache load and the setup.  numba compiles for the CPU
valgrind emulates (``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` as llvmlite sees them under
valgrind) into its own cache, filled by a native run first: else every valgrind run would
compile the loop again.  ``PYTHONHASHSEED=0``.  With ``--c`` the C yardstick
(``router/yardstick.c`` of the checkout, gcc -std=c11 -O2) is counted the same way.  Slow (about a
minute per run); it never fails on counts.  Workloads: s3 (3 static drfq), s3sfq (bmf-wfq),
s30 (30 static drfq), dyn (dynamic load 0.8 drfq), dynsfq; win30 and reno30: the workloads of
``scripts/bench_tcp.py`` (30 static flows, fixed windows or Reno; no C twin).

With ``--annotate FILE`` it also counts every machine instruction of the compiled event loop's
library, the helpers linked into it included (callgrind ``--dump-instr``, the same two runs, the
difference per service; the loop compiled with ``NUMBA_DEBUGINFO=1``, so each instruction maps to
its source line), writes the disassembly with those counts and lines to FILE (FILE.WORKLOAD for
several workloads) and prints the counts by function and by source line: an exact profile of what
executes, where ``scripts/profile_loop.py`` samples time.  A count of 0.5 on the loop's
head says there is one instant per two services (both resources finish together).  It shows
that the loops over resources in the instant's phases are not unrolled (two
iterations per instant at J = 2) and that dynamic drfq runs 0.77 instants per service against
0.5 for three static flows.
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
         "dynsfq": ("dynamic rho=0.8, sfq (bmf-wfq)", ["-s", "sfq", "-m", "dynamic"]),
         # scripts/bench_tcp.py's workloads (30 static flows, rtt 200): fixed windows, Reno (no C twin)
         "win30": ("bench_tcp windows", None), "reno30": ("bench_tcp reno", None)}
N1, N2 = 100_000, 5_100_000
RUN = """import sys
from mrfq.router.bench import WORKLOADS, scenario_for
from mrfq.router.run import simulate
if sys.argv[1].startswith("bench_tcp"):
    sys.path.insert(0, "scripts")
    from bench_tcp import scenario
    print(simulate(scenario(30, int(sys.argv[2]), sys.argv[1].endswith("reno"))).services)
else:
    w = next(x for x in WORKLOADS if x.name == sys.argv[1])
    print(simulate(scenario_for(w, int(sys.argv[2]))).services)
if len(sys.argv) > 3:  # the compiled loop: its address (under valgrind), or its object code (the run compiling it)
    import mrfq.router.loop as L
    (fn,) = L._LOOPS.values()
    cres = fn.overloads[fn.signatures[0]]
    addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
    if sys.argv[3] == "addr":
        print(f"LOOP {addr:x}")
    else:
        open(sys.argv[3], "wb").write(cres.library.serialize_using_object_code()[2][0])
        print(f"SYMBOL {cres.fndesc.llvm_func_name}")
"""
FEATURES = "import llvmlite.binding as ll; ll.initialize_native_target(); print(ll.get_host_cpu_features().flatten())"


def count(cmd: list[str], env: dict) -> int:
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/cg", *cmd], env=env,
                           capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", p.stderr).group(1))


def loop_counts(cmd: list[str], env: dict) -> dict[int, int]:
    """Instructions executed at each offset of the compiled loop's code (the loop and every
    helper linked into its library, at offsets from the loop's symbol; at most CODE_SPAN bytes
    either side): callgrind's per-instruction costs, call sites' inclusive costs left out."""
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--compress-pos=no",
                            "--compress-strings=no", f"--callgrind-out-file={d}/cg", *cmd, "addr"],
                           env=env, capture_output=True, text=True, check=True)
        base = int(re.search(r"LOOP ([0-9a-f]+)", p.stdout).group(1), 16)
        out: dict[int, int] = {}
        after_call = False
        with open(f"{d}/cg") as f:
            for line in f:
                if line.startswith("calls="):
                    after_call = True
                elif line.startswith("0x"):
                    if after_call:
                        after_call = False
                        continue
                    fields = line.split()  # address, line, cost
                    off = int(fields[0], 16) - base
                    if -CODE_SPAN <= off < CODE_SPAN:
                        out[off] = out.get(off, 0) + int(fields[-1])
    return out


CODE_SPAN = 1 << 20


def objdump_lines(obj: str, symbol: str) -> tuple[int, dict[int, tuple[str, int, str]]]:
    """The object's instructions, offset -> (source file, line, text) (``objdump -l``: the innermost
    inlined function's line), and the loop symbol's offset."""
    dis = subprocess.run(["objdump", "-d", "-l", "--no-show-raw-insn", obj], capture_output=True, text=True,
                         check=True).stdout
    base, where, insns = None, ("?", 0), {}
    for line in dis.splitlines():
        ms = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if ms:
            if ms.group(2) == symbol:
                base = int(ms.group(1), 16)
            continue
        ml = re.match(r"^(/\S+\.py):(\d+)", line)
        if ml:
            where = (ml.group(1), int(ml.group(2)))
            continue
        mi = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if mi:
            insns[int(mi.group(1), 16)] = (where[0], where[1], mi.group(2).strip())
    if base is None:
        sys.exit(f"{Path(sys.argv[0]).stem}: the loop's symbol is not in its object code")
    return base, insns


def _short(path: str) -> str:
    for marker in ("/site-packages/", "/mrfq/", "/main/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return "/".join(Path(path).parts[-2:])


def annotate(py: list[str], env: dict, path: str, top: int = 40) -> None:
    """Instructions executed per service at each instruction of the loop's library, written to
    ``path`` beside its disassembly and source line; prints the total and the counts by function and
    by source line.  The loop is compiled with ``NUMBA_DEBUGINFO=1`` into a cache of its own by a
    native run, which writes its object code (line tables included); the valgrind runs load that
    very machine code from that cache."""
    import ast
    import collections

    with tempfile.TemporaryDirectory() as cache:
        env = dict(env, NUMBA_DEBUGINFO="1", NUMBA_CACHE_DIR=cache)
        obj = f"{cache}/loop.o"
        out = subprocess.run(py + ["1000", obj], env=env, capture_output=True, text=True, check=True).stdout
        symbol = re.search(r"SYMBOL (\S+)", out).group(1)
        base, insns = objdump_lines(obj, symbol)
        a, b = loop_counts(py + [str(N1)], env), loop_counts(py + [str(N2)], env)
    per = {k: (b.get(k, 0) - a.get(k, 0)) / (N2 - N1) for k in set(a) | set(b)}
    offs = sorted(insns)
    Path(path).write_text("".join(f"{per.get(k - base, 0.0):7.3f} {k - base:#8x}  {_short(insns[k][0])}:{insns[k][1]}  "
                                  f"{insns[k][2]}\n" for k in offs))
    inside = sum(per.get(k - base, 0.0) for k in offs)
    print(f"  loop's library: {inside:.1f} instructions/service; annotated listing in {path}", flush=True)
    trees: dict = {}

    def function_of(src: str, ln: int) -> str:
        if src not in trees:
            try:
                t = ast.parse(Path(src).read_text())
                trees[src] = [(n.lineno, n.end_lineno, n.name) for n in ast.walk(t) if isinstance(n, ast.FunctionDef)]
            except (OSError, SyntaxError):
                trees[src] = []
        best = max(((lo, name) for lo, hi, name in trees[src] if lo <= ln <= hi), default=(0, "?"))
        return best[1]

    by_fn, by_line = collections.Counter(), collections.Counter()
    for k in offs:
        c = per.get(k - base, 0.0)
        if c:
            src, ln, _ = insns[k]
            by_fn[f"{_short(src)}: {function_of(src, ln) if ln else '?'}"] += c
            by_line[(src, ln)] += c
    print("  by function (the innermost inlined one), instructions per service:")
    for f, c in by_fn.most_common(top):
        print(f"  {c:7.1f}  {f}", flush=True)
    print("  by source line:")
    texts: dict = {}
    for (src, ln), c in by_line.most_common(top):
        if src not in texts:
            try:
                texts[src] = Path(src).read_text().splitlines()
            except OSError:
                texts[src] = []
        line = texts[src][ln - 1].strip() if 0 < ln <= len(texts[src]) else ""
        print(f"  {c:7.1f}  {_short(src)}:{ln}  {line[:90]}", flush=True)


def main() -> None:
    argv = sys.argv[1:]
    listing = None
    if "--annotate" in argv:
        i = argv.index("--annotate")
        listing = argv[i + 1]
        del argv[i:i + 2]
    pos = [a for a in argv if not a.startswith("--")]
    tree = Path(pos[0] if pos else ".").resolve()
    wls = pos[1].split(",") if len(pos) > 1 else ["s3", "s3sfq", "s30", "dyn"]
    feats = subprocess.run(["valgrind", "--tool=none", sys.executable, "-c", FEATURES], capture_output=True,
                           text=True, check=True).stdout.split()[-1]
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0", NUMBA_CPU_NAME="haswell",
               NUMBA_CPU_FEATURES=feats, NUMBA_CACHE_DIR=os.environ.get("ICOUNT_CACHE", "/tmp/nbcache_icount"))
    c_bin = None
    if "--c" in sys.argv:
        c_bin = Path(tempfile.mkdtemp()) / "yardstick"
        src = tree / "router" / "yardstick.c"
        subprocess.run(["gcc", "-std=c11", "-O2", "-o", str(c_bin), str(src), "-lm"], check=True)
    for wl in wls:
        name, c_args = NAMES[wl]
        py = [sys.executable, "-c", RUN, name]
        subprocess.run(py + ["1000"], env=env, cwd=tree, capture_output=True, check=True)  # fill the cache
        a, b = count(py + [str(N1)], env), count(py + [str(N2)], env)
        line = f"{wl}: mrfq {(b - a) / (N2 - N1):.1f} instructions/service"
        if c_bin is not None and c_args is not None:
            ca, cb = (count([str(c_bin), "-n", str(n), *c_args], env) for n in (N1, N2))
            line += f", C {(cb - ca) / (N2 - N1):.1f}"
        print(line, flush=True)
        if listing is not None:  # one listing per workload when there are several
            annotate(py, env, listing if len(wls) == 1 else f"{listing}.{wl}")


if __name__ == "__main__":
    main()
