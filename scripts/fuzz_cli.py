"""Fuzz the ``mrfq`` command line as a new user would, and count the outcomes.

Two campaigns, both seeded (same seed, same cases):

* ``scenarios``: mutated copies of the shipped presets (deleted keys, wrong types, 0, -1,
  nan, inf, 1e308, 2**63, denormals, huge strings, invalid UTF-8, a BOM) written to a file
  and run as ``mrfq run FILE --duration D [--json]``;
* ``cli``: argument lists for every command (run, alloc, fluid, compare, results,
  presets) mixing valid and bad values, output paths into missing, read-only or existing
  folders, unknown plot formats and foreign SQLite files; and hostile inputs: a named pipe
  nobody writes to, a directory or ``/dev/zero`` as the scenario, trace or results file, TOML
  nested 999 deep, a trace field of 200,000 characters, scenarios whose messages would list
  thousands of names, no command at all;
* ``bench``: ``mrfq bench`` option lists (``--services``, ``--reps``, ``--max-flows``,
  ``--only``, ``--c-source``, ``--quick``, ``--json``; always ``--no-extras`` and one small
  or unknown workload, so that an accepted case is a short benchmark);
* ``cluster``: mutated copies of the cluster presets (``flows/presets/cluster/*.toml``) run
  as ``mrfq cluster sim FILE --json`` and ``mrfq alloc FILE --json``.

Every case runs in a long-lived worker process (imports paid once) under a wall-clock
cap and an address-space limit; a case that overruns the cap is a *hang* (the worker is
killed and restarted).  Before the campaigns, a warm-up (not counted, generous cap) runs
every preset under every scheduler once, and once with ``--rtt``, so that numba's on-disk
cache holds the engine's loop variants: a first compilation on a busy machine can take
longer than the cap, and the count is about the command's answers, not about compile time.  Outcomes:

* ``clean``: exit 2 with exactly one line ``mrfq: error: ...`` on stderr, at most 1000
  characters (``huge_message`` when longer: a value echoed whole);
* ``accepted``: exit 0 (with ``--json``, stdout must parse with ``allow_nan=False``,
  else the case counts as ``bad_json``);
* ``internal``: exit 1 with the one-line "internal error" message (a bug, caught);
* ``traceback``: an exception escaped ``main`` (or any other exit/stderr shape);
* ``hang``: over the wall-clock cap.

Usage (from a checkout, with it first on ``PYTHONPATH``)::

    python scripts/fuzz_cli.py --module analysis.cli --scenarios 400 --cli 150 --bench 60 --cluster 300 --seed 12
    python scripts/fuzz_cli.py --module router.cli ...     # another dispatcher (e.g. an older checkout's)

``--module`` names the module whose ``main(argv)`` is the dispatcher.  Prints a summary
table and, with ``--json FILE``, every case and its outcome.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import math
import os
import random
import resource
import select
import sqlite3
import subprocess
import sys
import time
import tomllib
import traceback
from pathlib import Path

HUGE = "x" * 1_000_000
SPECIAL = [0, -1, 0.0, -1.0, math.nan, math.inf, -math.inf, 1e308, 2**63, 2**63 - 1, 10**30, 5e-324, 1e-320,
           1e-300, 1e15, 1e8, 2**24, "x", "", HUGE, True, [], {}, [1.0], 1000, 0.999, 1.5]


# ---------------------------------------------------------------------------
# TOML writer (enough for scenario dicts, including nan/inf and wrong types)
def _scalar(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_scalar(x)}" for k, x in v.items()) + "}"
    return json.dumps(str(v))


def to_toml(d: dict) -> str:
    lines, tables, arrays = [], [], []
    for k, v in d.items():
        key = json.dumps(str(k))
        if isinstance(v, dict) and v and all(not isinstance(x, (dict,)) for x in v.values()):
            tables.append((key, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            arrays.append((key, v))
        else:
            lines.append(f"{key} = {_scalar(v)}")
    for key, t in tables:
        lines.append(f"[{key}]")
        lines += [f"{json.dumps(str(k))} = {_scalar(x)}" for k, x in t.items()]
    for key, arr in arrays:
        for t in arr:
            lines.append(f"[[{key}]]")
            lines += [f"{json.dumps(str(k))} = {_scalar(x)}" for k, x in t.items()]
    return "\n".join(lines) + "\n"


def _paths(d, prefix=()):
    """Every (container, key) pair in a nested dict/list document."""
    out = []
    if isinstance(d, dict):
        for k, v in d.items():
            out.append((d, k, prefix + (k,)))
            out += _paths(v, prefix + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out.append((d, i, prefix + (i,)))
            out += _paths(v, prefix + (i,))
    return out


SCENARIO_KEYS = {"router": ["window", "rtt", "scheduler"], "run": ["seed", "batches", "max_services", "warmup",
                                                                   "duration", "confidence"],
                 "traffic": ["load"]}


def mutate_scenario(rng: random.Random, base: dict) -> tuple[bytes, list[str]]:
    d = copy.deepcopy(base)
    notes = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        if kind < 0.15:  # add a key the preset lacks
            table = rng.choice(list(SCENARIO_KEYS))
            key = rng.choice(SCENARIO_KEYS[table])
            t = d.setdefault(table, {})
            if isinstance(t, dict):
                t[key] = rng.choice(SPECIAL)
                notes.append(f"set {table}.{key}")
            continue
        if kind < 0.22 and isinstance(d.get("class"), list) and d["class"]:  # explicit overloaded rate
            c = rng.choice(d["class"])
            if isinstance(c, dict):
                c["rate"] = rng.choice([1000.0, 1e308, 1.0, 0.5])
                c["mean_packets"] = rng.choice([1, 1.0, 20000])
                notes.append("class rate")
            continue
        paths = _paths(d)
        if not paths:
            break
        cont, key, path = rng.choice(paths)
        if rng.random() < 0.2:
            if isinstance(cont, dict):
                del cont[key]
            else:
                cont.pop(key)
            notes.append(f"del {'.'.join(map(str, path))}")
        else:
            cont[key] = rng.choice(SPECIAL)
            notes.append(f"set {'.'.join(map(str, path))}")
    text = to_toml(d)
    raw = text.encode("utf-8")
    enc = rng.random()
    if enc < 0.04:
        raw = b"\xef\xbb\xbf" + raw
        notes.append("BOM")
    elif enc < 0.08:
        raw = raw.replace(b'"', b'"\xff', 1)
        notes.append("invalid UTF-8")
    elif enc < 0.10:
        raw = ("# caf\u00e9\n" + text).encode("latin-1", errors="replace")
        notes.append("latin-1")
    return raw, notes


# ---------------------------------------------------------------------------
NUMS = ["0", "-1", "1", "0.5", "nan", "inf", "1e308", "1e-320", "2000000000000000000000", "1_0", "1e20",
        "0.999", "3", "x", "", "1e11", "10", "2", "1e12", "0.1:0.2:1e-9", "0.3,0.6", "0.1:0.9:0.1"]


def hostile_case(rng: random.Random, env: dict) -> list[str]:
    """A command reading a file built to break a reader, a parser or a message (see make_env)."""
    scen = rng.choice([env["fifo"], env["dir"], "/dev/zero", env["deep_array"], env["deep_inline"],
                       env["long_field"], env["trace_fifo"], env["many_classes"]])
    cluster = rng.choice([env["fifo"], env["dir"], env["deep_array"], env["deep_inline"], env["c_long_field"],
                          env["c_trace_fifo"], env["many_nodes"], env["c_many_users"]])
    return rng.choice([
        ["run", scen, "--duration", "200"], ["fluid", scen], ["compare", scen, "--quick"],
        ["cluster", "sim", cluster, "--json"], ["alloc", cluster, "--json"],
        ["results", rng.choice([env["fifo"], env["dir"], "/dev/zero"])],
        ["compare", "--preset", "oracle-rates", "--results", rng.choice([env["fifo"], "/dev/zero"])],
        ["cluster", "sim", "--preset", "hdrf-fig2", "--option", "server=" + "9" * 401],
        [], ["--debug"]])


def cli_case(rng: random.Random, env: dict) -> list[str]:
    if rng.random() < 0.15:
        return hostile_case(rng, env)
    cmd = rng.choice(["run", "run", "alloc", "alloc", "fluid", "compare", "compare", "results", "presets"])

    def num():
        return rng.choice(NUMS)

    def path(ext):
        return rng.choice([env["missing"] + "/out." + ext, env["ro"] + "/out." + ext, env["dir"],
                           env["tmp"] + "/out." + ext, env["tmp"] + "/fig.unknownext", env["existing"]])

    small = ["oracle-rates", "oracle-two-flows", "oracle-drfq-trace", "dynamic-small", "middlebox-mix"]
    if cmd == "run":
        a = ["run", "--preset", rng.choice(small + ["nope"]), "--duration", rng.choice(["200", "2000", num()])]
        for opt in rng.sample(["--seed", "--window", "--rtt", "--warmup", "--trace-limit", "--load", "--trace",
                               "--scheduler", "--json"], rng.randint(0, 3)):
            if opt == "--json":
                a.append(opt)
            elif opt == "--trace":
                a += [opt, path("csv")]
            elif opt == "--scheduler":
                a += [opt, rng.choice(["drfq", "pf-sfq", "bogus"])]
            else:
                a += [opt, num()]
        return a
    if cmd == "alloc":
        n = rng.randint(1, 3)
        a = ["alloc"]
        for _ in range(n):
            a += ["--cost", ",".join(rng.choice(["1", "0.5", "1e308", "1e-320", "1_0", "0", "-1", "nan", "1e-300"])
                                     for _ in range(rng.choice([2, 2, 3])))]
        if rng.random() < 0.4:
            for _ in range(n):
                a += ["--weight", rng.choice(["1", "1e-320", "2", "0", "nan", "1e308"])]
        if rng.random() < 0.5:
            a.append("--json")
        return a
    if cmd == "fluid":
        a = ["fluid", "--preset", rng.choice(["br-unbalanced", "br-balanced", "oracle-rates"])]
        r = rng.random()
        if r < 0.4:
            a += ["--load", rng.choice(["0.3", "0.999", "1", "nan", "0.5"])]
        elif r < 0.6:
            a += ["--loads", rng.choice(["0.3,0.6", "0.2:0.6:0.2", "0.1:0.2:1e-9", "x"])]
        if rng.random() < 0.4:
            a += ["--method", rng.choice(["simulate", "exact", "auto", "magic"])]
        if rng.random() < 0.3:
            a += ["--events", rng.choice(["1e20", "10000", "5000", "nan"])]
        if rng.random() < 0.3:
            a += ["--seed", num()]
        if rng.random() < 0.5:
            a.append("--json")
        if rng.random() < 0.2:
            a += ["--plot", path("png")]
        return a
    if cmd == "compare":
        a = ["compare", "--preset", rng.choice(["br-unbalanced", "dynamic-small", "oracle-rates"]),
             "--quick", "--schedulers", rng.choice(["bmf-wfq", "drfq,drfq", "bogus", "fifo"]),
             "--loads", rng.choice(["0.3", "0.3,0.6", "0.1:0.2:1e-9", "1e-300", "0.2:0.4:0.2", "1.5", "x"]),
             "--flows", rng.choice(["20", "1e12", "5", "nan", "30"]), "--max-replications", "2",
             "--results", rng.choice([env["tmp"] + "/r.sqlite", env["foreign"], env["text"], env["missing"] + "/r.sqlite",
                                      env["ro"] + "/r.sqlite"])]
        for opt in rng.sample(["--seed", "--plot", "--csv", "--json", "--workers"], rng.randint(0, 3)):
            if opt == "--json":
                a.append(opt)
            elif opt == "--plot":
                a += [opt, path("png")]
            elif opt == "--csv":
                a += [opt, path("csv")]
            elif opt == "--workers":
                a += [opt, rng.choice(["1", "0", "-2"])]
            else:
                a += [opt, num()]
        return a
    if cmd == "results":
        return ["results", rng.choice([env["foreign"], env["text"], env["tmp"] + "/none.sqlite", env["dir"]])] + (
            ["--csv"] if rng.random() < 0.5 else [])
    return ["presets"]


def bench_case(rng: random.Random, env: dict) -> list[str]:
    """``mrfq bench`` options, each valid with probability 3/4: valid ones are small (an accepted
    case is a short benchmark)."""
    def pick(good, bad):
        return rng.choice(good) if rng.random() < 0.75 else rng.choice(bad)

    a = ["bench", "--no-extras", "--only", pick(["3 static, drfq", "3 static, sfq", "dynamic rho=0.8, drfq",
                                                 "30 static", "3 static", "300 static"],
                                                ["nope", "", " ", "x" * 5000, "1e7 static"])]
    a += ["--services", pick(["1000", "2000", "5e3", "2.5e3"],
                             ["999", "0", "-1", "nan", "inf", "1e20", "1e11", "1_0", "x", "", "1e3.5", "2000.5"])]
    if rng.random() < 0.5:
        a += ["--reps", pick(["1", "2"], ["0", "-1", "101", "1.5", "nan", "1e9", "x"])]
    if rng.random() < 0.3:
        a += ["--max-flows", pick(["300", "1000", "1e6"], ["0", "-5", "1e7", "nan", "1.5"])]
    if rng.random() < 0.2:
        a += ["--c-source", rng.choice([env["missing"] + "/mrfq_ref.c", env["dir"], env["tmp"] + "/none.c"])]
    if rng.random() < 0.3:
        a.append("--quick")
    if rng.random() < 0.5:
        a.append("--json")
    if rng.random() < 0.05:
        a.append(rng.choice(["--bogus", "--services"]))
    return a


CLUSTER_KEYS = {"run": ["duration", "warmup", "seed", "samples", "allocator"], "traffic": ["kind", "rate", "trace"]}


def mutate_cluster(rng: random.Random, base: dict) -> tuple[bytes, list[str]]:
    """A mutated copy of a cluster preset (the same mutations as :func:`mutate_scenario`)."""
    d = copy.deepcopy(base)
    notes = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.15:  # add a key the preset lacks
            table = rng.choice(list(CLUSTER_KEYS))
            key = rng.choice(CLUSTER_KEYS[table])
            t = d.setdefault(table, {})
            if isinstance(t, dict):
                t[key] = rng.choice(SPECIAL)
                notes.append(f"set {table}.{key}")
            continue
        paths = _paths(d)
        if not paths:
            break
        cont, key, path = rng.choice(paths)
        if rng.random() < 0.2:
            if isinstance(cont, dict):
                del cont[key]
            else:
                cont.pop(key)
            notes.append(f"del {'.'.join(map(str, path))}")
        else:
            cont[key] = rng.choice(SPECIAL)
            notes.append(f"set {'.'.join(map(str, path))}")
    text = to_toml(d)
    raw = text.encode("utf-8")
    enc = rng.random()
    if enc < 0.04:
        raw = b"\xef\xbb\xbf" + raw
        notes.append("BOM")
    elif enc < 0.08:
        raw = raw.replace(b'"', b'"\xff', 1)
        notes.append("invalid UTF-8")
    return raw, notes


# ---------------------------------------------------------------------------
def worker(module: str, mem_gb: float) -> None:
    """Read one JSON argv per line, run ``main(argv)`` in-process, answer one JSON line."""
    lim = int(mem_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    import importlib

    main = importlib.import_module(module).main
    out = sys.stdout
    for line in sys.stdin:
        argv = json.loads(line)
        o, e = io.StringIO(), io.StringIO()
        code, exc = None, None
        with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
            try:
                code = main(argv)
            except SystemExit as x:
                code = x.code if isinstance(x.code, int) else 1
            except BaseException as x:  # noqa: BLE001 - the point is to see what escapes
                exc = "".join(traceback.format_exception_only(type(x), x)).strip()[:300]
        err = e.getvalue()
        text = o.getvalue()
        out.write(json.dumps({"code": code, "stdout": text[-20000:], "stderr": err[:2000],
                              "stderr_chars": len(err), "stderr_lines": err.count("\n"), "exc": exc,
                              "json_ok": _strict_json_ok(text)}) + "\n")
        out.flush()


class Runner:
    def __init__(self, module: str, cap: float, mem_gb: float, cwd: str):
        self.module, self.cap, self.mem_gb, self.cwd = module, cap, mem_gb, cwd
        self.p = None

    def start(self):
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", self.module,
                                   "--mem-gb", str(self.mem_gb)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, cwd=self.cwd)

    def run(self, argv: list[str]) -> dict | None:
        if self.p is None or self.p.poll() is not None:
            self.start()
        self.p.stdin.write(json.dumps(argv) + "\n")
        self.p.stdin.flush()
        r, _, _ = select.select([self.p.stdout], [], [], self.cap)
        if not r:
            self.p.kill()
            self.p.wait()
            self.p = None
            return None
        line = self.p.stdout.readline()
        if not line:  # the worker died (e.g. killed by the address-space limit)
            self.p.wait()
            self.p = None
            return {"code": None, "stdout": "", "stderr": "", "stderr_chars": 0, "stderr_lines": 0,
                    "exc": "worker died (address-space limit?)"}
        return json.loads(line)

    def close(self):
        if self.p is not None:
            self.p.kill()
            self.p.wait()


def _strict_json_ok(text: str) -> bool:
    """The last line of ``text`` parses as strict JSON (no NaN/Infinity), checked on the whole
    output in the worker (the answer carries only its last 20,000 characters)."""
    try:
        json.loads(text.strip().splitlines()[-1], parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except (ValueError, IndexError):
        return False
    return True


def classify(res: dict | None, argv: list[str]) -> str:
    if res is None:
        return "hang"
    if res["exc"] is not None:
        return "traceback"
    err = res["stderr"].strip("\n")
    if res["code"] == 2 and err.startswith("mrfq: error: ") and res["stderr_lines"] <= 1 and "Traceback" not in err:
        return "clean" if res["stderr_chars"] <= 1000 else "huge_message"
    if res["code"] == 1 and "internal error" in err and "\n" not in err:
        return "internal"
    if res["code"] == 0:
        if "--json" in argv and not res.get("json_ok", _strict_json_ok(res["stdout"])):
            return "bad_json"
        return "accepted"
    return "traceback"


def make_env(tmp: Path) -> dict:
    (tmp / "ro").mkdir(exist_ok=True)
    (tmp / "dir").mkdir(exist_ok=True)
    os.chmod(tmp / "ro", 0o555)
    foreign = tmp / "other.sqlite"
    if not foreign.exists():
        with sqlite3.connect(str(foreign)) as c:
            c.execute("CREATE TABLE points (a, b)")
            c.execute("INSERT INTO points VALUES (1, 2)")
    (tmp / "text.sqlite").write_text("not a database\n" * 50)
    (tmp / "existing.csv").write_text("keep\n")
    env = {"tmp": str(tmp), "missing": str(tmp / "missing"), "ro": str(tmp / "ro"), "dir": str(tmp / "dir"),
           "foreign": str(foreign), "text": str(tmp / "text.sqlite"), "existing": str(tmp / "existing.csv")}
    # hostile inputs (hostile_case)
    if not (tmp / "pipe").exists():
        os.mkfifo(tmp / "pipe")
    env["fifo"] = str(tmp / "pipe")
    files = {
        "deep_array": 'resources = ["cpu"]\nx = ' + "[" * 999 + "]" * 999 + "\n",
        "deep_inline": 'resources = ["cpu"]\nx = ' + "{a = " * 400 + "1" + "}" * 400 + "\n",
        "long_field.csv": "time,class,packets\n0.0,c0," + "1" * 200_000 + "\n",
        "c_long_field.csv": "time,user,tasks\n0.0,u0," + "1" * 200_000 + "\n",
        "unknown_class.csv": "time,class,packets\n0.0,nope,1\n",
        "unknown_user.csv": "time,user,tasks\n0.0,nobody,1\n",
    }
    packet = ('resources = ["cpu", "link"]\n[run]\nduration = 10.0\n[traffic]\ntrace = "{}"\n'
              + "".join(f'[[class]]\nname = "c{i}"\ncost = [1.0, 0.5]\n' for i in range(300)))
    cluster = ('resources = ["cpu", "mem"]\n[run]\nduration = 100.0\n[traffic]\nkind = "trace"\ntrace = "{}"\n'
               '[[server]]\ncapacity = [16, 32]\n'
               + "".join(f'[[user]]\nname = "u{i}"\ndemand = [1, 1]\n' for i in range(300)))
    files["long_field"] = packet.format("long_field.csv")
    files["trace_fifo"] = packet.format("pipe")
    files["many_classes"] = packet.format("unknown_class.csv")
    files["c_long_field"] = cluster.format("c_long_field.csv")
    files["c_trace_fifo"] = cluster.format("pipe")
    files["c_many_users"] = cluster.format("unknown_user.csv")
    files["many_nodes"] = ('resources = ["cpu", "mem"]\n[[server]]\ncapacity = [16, 32]\n'
                           + "".join(f'[[node]]\nname = "n{i}"\n' for i in range(3000))
                           + '[[node]]\nname = "bad"\nparent = ""\n[[user]]\ndemand = [1, 1]\n')
    for name, text in files.items():
        f = tmp / (name if name.endswith(".csv") else name + ".toml")
        f.write_text(text)
        env[name] = str(f)
    return env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module", default="mrfq.analysis.cli", help="module with main(argv)")
    ap.add_argument("--scenarios", type=int, default=400)
    ap.add_argument("--cli", type=int, default=150)
    ap.add_argument("--bench", type=int, default=0, help="mrfq bench option lists")
    ap.add_argument("--cluster", type=int, default=0, help="mutated cluster presets (each through sim and alloc)")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--cap", type=float, default=60.0, help="wall-clock seconds per case")
    ap.add_argument("--mem-gb", type=float, default=3.0, help="address-space limit of the worker")
    ap.add_argument("--json", metavar="FILE", help="write every case and its outcome")
    ap.add_argument("--presets", default=None, help="folder of preset TOML files (default: flows/presets)")
    ap.add_argument("--no-warm", action="store_true", help="skip the warm-up (give a cap that fits a compilation)")
    ap.add_argument("--worker", metavar="MODULE", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.mem_gb)
        return 0
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="mrfq-fuzz-"))
    env = make_env(tmp)
    pdir = Path(a.presets) if a.presets else Path(__file__).resolve().parent.parent / "flows" / "presets"
    presets = {p.stem: tomllib.loads(p.read_text(encoding="utf-8")) for p in sorted(pdir.glob("*.toml"))}
    cpresets = {p.stem: tomllib.loads(p.read_text(encoding="utf-8")) for p in sorted((pdir / "cluster").glob("*.toml"))}
    rng = random.Random(a.seed)
    warm = Runner(a.module, 900.0, a.mem_gb, str(tmp))
    t_warm = time.time()
    try:
        for name in [] if a.no_warm else sorted(presets):
            for extra in (["--scheduler", s] for s in ("drfq", "drfq-dovetail", "pf-sfq", "bmf-wfq", "fifo",
                                                        "fq-single")):
                warm.run(["run", "--preset", name, "--duration", "50", "--warmup", "0"] + extra)
            warm.run(["run", "--preset", name, "--duration", "50", "--warmup", "0", "--rtt", "0.5"])
    finally:
        warm.close()
    print(f"warm-up: {time.time() - t_warm:.0f} s", file=sys.stderr)
    runner = Runner(a.module, a.cap, a.mem_gb, str(tmp))
    cases, counts = [], {}
    t0 = time.time()
    try:
        for campaign, n in (("scenarios", a.scenarios), ("cli", a.cli), ("bench", a.bench), ("cluster", a.cluster)):
            if n == 0 and campaign in ("bench", "cluster"):
                continue
            c = counts.setdefault(campaign, {k: 0 for k in ("cases", "clean", "accepted", "huge_message", "internal",
                                                             "traceback", "bad_json", "hang")})
            for i in range(n):
                if campaign == "scenarios":
                    name = rng.choice(sorted(presets))
                    raw, notes = mutate_scenario(rng, presets[name])
                    f = tmp / f"s{i}.toml"
                    f.write_bytes(raw)
                    argv = ["run", str(f), "--duration", rng.choice(["200", "2000", "5000"])]
                    if rng.random() < 0.5:
                        argv.append("--json")
                    desc = f"{name}: {', '.join(notes)}"
                elif campaign == "cluster":
                    name = rng.choice(sorted(cpresets))
                    raw, notes = mutate_cluster(rng, cpresets[name])
                    f = tmp / f"c{i}.toml"
                    f.write_bytes(raw)
                    # even cases: the simulator; odd cases: the fluid allocations
                    argv = ["cluster", "sim", str(f), "--json"] if i % 2 == 0 else ["alloc", str(f), "--json"]
                    desc = f"{name} ({argv[0]} {argv[1]}): {', '.join(notes)}"
                else:
                    argv = cli_case(rng, env) if campaign == "cli" else bench_case(rng, env)
                    desc = " ".join(x if len(x) < 80 else x[:40] + "..." for x in argv)
                res = runner.run(argv)
                out = classify(res, argv)
                c["cases"] += 1
                c[out] += 1
                cases.append({"campaign": campaign, "case": desc, "argv": [x[:200] for x in argv], "outcome": out,
                              "stderr": (res or {}).get("stderr", "")[:300], "exc": (res or {}).get("exc")})
                if out in ("traceback", "hang", "bad_json", "internal", "huge_message") and not a.json:
                    print(f"[{campaign} {i}] {out}: {desc[:160]} :: {((res or {}).get('exc') or '')[:160]}",
                          file=sys.stderr)
    finally:
        runner.close()
        os.chmod(tmp / "ro", 0o755)
    print(f"module {a.module}, seed {a.seed}, cap {a.cap:g} s, {time.time() - t0:.0f} s wall")
    print(f"{'campaign':<10} " + " ".join(f"{k:>9}" for k in next(iter(counts.values()))))
    for campaign, c in counts.items():
        print(f"{campaign:<10} " + " ".join(f"{v:>9}" for v in c.values()))
    if a.json:
        Path(a.json).write_text(json.dumps({"counts": counts, "cases": cases}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
