"""Speed benchmark: the numba engine against the plain-C yardstick, on identical workloads.

``mrfq bench`` (or ``python scripts/bench.py``) runs each workload through
mrfq and through mrfq's own plain-C implementation of the same router model,
``router/yardstick.c`` (shipped in the package, compiled here with the system C
compiler, ``$CC``, ``gcc`` or ``cc``, and ``-std=c11 -O2``, once per source:
:func:`build_c`; ``--c-source`` times another C file with the same command line
instead), after one untimed warm-up run of each.  Without a C compiler the rows
have mrfq's figures only.

**Interleaved pairs.**  The timed runs alternate, mrfq then C, mrfq then C,
..., and the ratio mrfq / C (services per CPU second) is taken *per pair*: a
burst of load from another process on a shared machine then lands on both
sides of a pair rather than on one side of the whole table.  A row reports the
median ratio and its spread over the pairs (min-max and the interquartile
range; ``--json`` rows carry ``ratio``, ``ratio_low``/``ratio_high`` (min,
max) and ``ratio_q1``/``ratio_q3``).  The SimPy reference row is timed the
same way (reference and engine interleaved on one small workload), and so is the
TCP row (:func:`time_tcp_pair`: Reno flows against the same flows with fixed
windows, no C twin).

**The same workload on both sides.**  The static rows number their flows as the C program
does (flow i has vector i mod 3, and flow ids break ties between equal tags).  The dynamic rows
run mrfq on the C program's own flow arrivals (:func:`c_dynamic_arrivals`: its xoshiro256**
draws, in its order, written as a ``[traffic] trace``), and both report the mean number of
flows in the system (``mean_flows``, ``c_mean_flows``), which then agree.  The two break ties
their own ways (the C between equal tags by enqueue order, restarting each resource as soon as its
service ends; mrfq by flow id, an instant's starts after all its completions): the static drfq
rows serve the very same packets, the others as many per resource and, within a packet, per flow,
single services differing (tests/test_bench.py).  On a Poisson
stream of its own, mrfq held 10.1 (drfq) and 7.5 (bmf-wfq) flows on average over 2e7
services against the C's 4.6 and 4.0: flows of 20000 packets make a run of 1000 flows, so
the two seeds were two different workloads, and the larger heaps cost mrfq 20-40 % of its rate.

**Many flows.**  The static 10^5- and 10^6-flow rows run each timed mrfq
repetition in a fresh process, so that its peak resident memory
(``ru_maxrss``) is the run's own; the C program reports its own peak RSS.
Both time the loop after the setup (the flow table allocated and every flow's
first window admitted at t = 0): the C program does so itself, mrfq times the
calls of its loop after the first service (``simulate(..., timed_from=1)``; the
rest of the run's CPU time is reported as ``mrfq_setup_cpu_s``; subtracting a
separate one-service run instead would take the difference of two noisy timings
of which the setup is the larger at 10^6 flows).  Beside peak RSS both report the bytes their model's state holds
(``mrfq_state_kb``: the engine's arrays; ``c_model_kb``: the C's flow table,
rings and queues).  Both
are started as forked children of a small shell (:func:`own_rss`), else Linux would
charge them this process's memory.  The
mrfq figure includes the interpreter, numpy and numba (``baseline``: the same
process after a 3-flow run).  The dynamic row with a round-trip time
(``router.rtt``) keeps about 10^5 window-limited flows in the system at once
(mrfq only: the yardstick has no RTT).  ``cost per service`` against
``log(flows)`` is printed for the static rows.

**The recording's own cost in C.**  With ``--c-delays`` each row also times the yardstick
compiled with ``-DMRFQ_RECORD_DELAYS``, which records per packet what mrfq records by default
(its arrival and a service start per resource, and at its departure the wait at each resource and
the sojourn into log-bucket histograms laid out as mrfq's, the largest sojourn and batch sums; no
relative fairness bound), interleaved with the others: the row adds that binary's rate, its own
on/off (``c_on_off``: recording / plain, per pair) and ``ratio_delays`` (mrfq / recording C, per
pair).  The recording run must serve the same packets (the same ``sig``) and record every departure.

It prints figures; it never fails on timing.  On a machine shared with other
work the figures are indicative only.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mrfq import flows
from mrfq.flows.cli_args import Parser, dumps_strict, int_type, shorten
from mrfq.flows.errors import MrfqError

#: documented ranges of the options (documentation: "What mrfq refuses")
MAX_BENCH_SERVICES = 10**10   # services per timed run (about 15 minutes of one run)
MAX_BENCH_REPS = 100          # timed pairs per workload
MAX_BENCH_FLOWS = 2_000_000   # --max-flows

VECTORS = ((1.0, 0.2), (0.2, 1.0), (1.0, 1.0))

#: the yardstick's dynamic mode (``-m dynamic``), given to it explicitly: seed, mean flow size
#: (packets, geometric), load of the most loaded resource, window
C_SEED, C_MEAN_PACKETS, C_LOAD, C_WINDOW = 1, 20000, 0.8, 30

#: the RTT row: window W, mean flow size, round-trip time chosen so that about
#: ``RTT_TARGET_FLOWS`` window-limited flows are in the system at load 0.8
RTT_TARGET_FLOWS = 100_000
RTT_MEAN_PACKETS = 60
#: the static rows' floor on services per flow (see :func:`run_pairs`)
MIN_SERVICES_PER_FLOW = 20
#: and the 10^5/10^6-flow rows at least this many (when the setup was subtracted as a separate
#: run, at 10^5 flows 2e6 services gave ratios from -1.06 to 2.38 over three pairs, 2e7 from 0.92 to 1.26)
MIN_SERVICES_ISOLATED = 20_000_000


@dataclass(frozen=True)
class Workload:
    name: str
    scheduler: str  # mrfq name
    c_sched: str    # yardstick name
    mode: str       # static | dynamic | rtt, open (mrfq only)
    flows: int = 3
    isolated: bool = False  # time each mrfq repetition in its own process (peak RSS of the run)


WORKLOADS = [
    Workload("3 static, drfq", "drfq", "drfq", "static", 3),
    Workload("3 static, sfq (bmf-wfq)", "bmf-wfq", "sfq", "static", 3),
    Workload("dynamic rho=0.8, drfq", "drfq", "drfq", "dynamic"),
    Workload("dynamic rho=0.8, sfq (bmf-wfq)", "bmf-wfq", "sfq", "dynamic"),
    Workload("30 static, drfq", "drfq", "drfq", "static", 30),
    Workload("300 static, drfq", "drfq", "drfq", "static", 300),
    Workload("3000 static, drfq", "drfq", "drfq", "static", 3000),
    Workload("10000 static, drfq", "drfq", "drfq", "static", 10000),
    Workload("1e5 static, drfq", "drfq", "drfq", "static", 100_000, isolated=True),
    Workload("1e6 static, drfq", "drfq", "drfq", "static", 1_000_000, isolated=True),
    Workload("rtt, ~1e5 in system, drfq", "drfq", "", "rtt", RTT_TARGET_FLOWS, isolated=True),
    Workload("1e5 open-loop sources, drfq", "drfq", "", "open", 100_000, isolated=True),
]
#: the open-loop row's load on its busiest resource (Poisson sources, the mix of VECTORS)
OPEN_LOAD = 0.8


def rtt_for(target_flows: int, load: float = 0.8, window: int = 30, mean_packets: float = RTT_MEAN_PACKETS) -> float:
    """Round-trip time that keeps about ``target_flows`` window-limited flows in the system.

    A flow puts its first ``W`` packets in at once; each departure admits the next packet
    ``rtt`` later, so a flow of ``s`` packets lives about ``(ceil(s / W) - 1) rtt`` (its
    queueing is short beside the rtt).  For geometric sizes of mean ``L``,
    ``E[ceil(s / W)] = 1 / (1 - (1 - 1/L)^W)``; by Little's law
    ``N = lambda rtt (E[ceil(s / W)] - 1)``.  The class mix of :data:`VECTORS` with equal
    shares puts load ``lambda L (1 + 0.2 + 1) / 3`` on each resource.
    """
    lam = 3 * load / 2.2 / mean_packets
    rounds = 1.0 / (1.0 - (1.0 - 1.0 / mean_packets) ** window) - 1.0
    return target_flows / (lam * rounds)


_M64 = (1 << 64) - 1


def _splitmix64(x: int) -> tuple[int, int]:
    """One step of splitmix64 (the yardstick's seeding): (new state, output)."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return x, z ^ (z >> 31)


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & _M64


class Xoshiro256ss:
    """xoshiro256** seeded through splitmix64, as the C yardstick draws its numbers
    (``router/yardstick.c``: ``splitmix64``, ``xoshiro256ss``, ``uniform``)."""

    def __init__(self, seed: int):
        s, sm = [], int(seed) & _M64
        for _ in range(4):
            sm, z = _splitmix64(sm)
            s.append(z)
        self.s = s

    def next(self) -> int:
        s = self.s
        r = (_rotl((s[1] * 5) & _M64, 7) * 9) & _M64
        t = (s[1] << 17) & _M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return r

    def u01(self) -> float:
        """Uniform in [0, 1): the top 53 bits."""
        return (self.next() >> 11) * 2.0 ** -53


def c_dynamic_arrivals(packets: int, seed: int = C_SEED, mean_packets: float = C_MEAN_PACKETS,
                       load: float = C_LOAD, vectors=VECTORS) -> tuple[list[float], list[int], list[int]]:
    """The flow arrivals of the yardstick's dynamic mode, draw for draw: (times, classes, sizes)
    until the sizes add up to at least ``packets``.

    The C program draws from one stream, in this order: the first arrival's exponential gap,
    then at each arrival the class ``floor(u K)``, the size ``1 + floor(log1p(-u) /
    log1p(-1/L))`` (geometric, mean L) and the next gap ``-log1p(-u) / Lambda``, with
    ``Lambda = rho K / (L max_j sum_k a_kj)`` (equal rates per class).  Python's ``math.log1p``
    is the C library's, so the times are the C's to the bit.
    """
    K = len(vectors)
    maxload = max(sum(v[j] for v in vectors) for j in range(len(vectors[0])))
    lam = load * K / (mean_packets * maxload)
    log1mp = math.log1p(-1.0 / mean_packets)
    rng = Xoshiro256ss(seed)
    t = -math.log1p(-rng.u01()) / lam
    times, classes, sizes, total = [], [], [], 0
    while total < packets or not times:
        k = min(int(rng.u01() * K), K - 1)
        n = 1 + int(min(math.floor(math.log1p(-rng.u01()) / log1mp), 1e15)) if mean_packets > 1.0 else 1
        times.append(t)
        classes.append(k)
        sizes.append(n)
        total += n
        t = t + -math.log1p(-rng.u01()) / lam
    return times, classes, sizes


def c_arrival_trace(services: int) -> Path:
    """A CSV (``[traffic] trace``) of the yardstick's dynamic arrivals for a run of ``services``
    services: flows whose sizes add up to ``services`` packets, twice what the run can serve
    (every packet is served at both resources), so the run ends before the trace does (checked
    after each run, :meth:`MrfqSide.once`).  Written once per size, atomically, in a folder of
    this user's under the temporary directory."""
    folder = Path(tempfile.gettempdir()) / f"mrfq_bench_{os.getuid()}"
    folder.mkdir(exist_ok=True)
    path = folder / f"c_arrivals_seed{C_SEED}_L{C_MEAN_PACKETS}_rho{C_LOAD}_{int(services)}.csv"
    if not path.exists():
        times, classes, sizes = c_dynamic_arrivals(int(services))
        text = "time,class,packets\n" + "".join(f"{t!r},c{k},{n}\n" for t, k, n in zip(times, classes, sizes))
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def scenario_for(w: Workload, services: int) -> flows.Scenario:
    d: dict = {"name": w.name, "resources": ["cpu", "link"],
               "router": {"scheduler": w.scheduler, "window": 30},
               "run": {"duration": 1e11, "warmup": 0.0, "seed": 1, "max_services": int(services)}}
    if w.mode == "static":
        # the C program's flows: flow i has vector i % 3.  Three counted [[flow]] tables (the
        # scenario stays three tables at 10^6 flows) numbered round-robin, so that flow ids, which
        # break ties between equal tags, are the C's too (numbered table by table instead, the
        # schedule differs: 10^4 flows ran 1.6x slower, 22.8 against 37.1 M services/cpu-s)
        d["flow"] = [{"name": f"f{k}", "cost": list(VECTORS[k]), "count": (w.flows + 2 - k) // 3}
                     for k in range(3) if (w.flows + 2 - k) // 3 > 0]
        d["run"]["flow_order"] = "round-robin"
    elif w.mode == "dynamic":
        # the C program's own flow arrivals, not a Poisson stream of mrfq's (module docstring)
        d["traffic"] = {"trace": str(c_arrival_trace(services))}
        d["router"]["window"] = C_WINDOW
        d["class"] = [{"name": f"c{k}", "cost": list(v)} for k, v in enumerate(VECTORS)]
    elif w.mode == "open":
        # w.flows Poisson packet sources of the three vectors, each with its own stream (whole run timed:
        # the sources' set-up and merge are the cost this row is about), the busiest resource at OPEN_LOAD
        counts = [(w.flows + 2 - k) // 3 for k in range(3)]
        busiest = max(sum(n * VECTORS[k][j] for k, n in enumerate(counts)) for j in range(2))
        d["flow"] = [{"name": f"f{k}", "cost": list(VECTORS[k]), "count": n,
                      "arrival": {"law": "poisson", "rate": OPEN_LOAD / busiest}} for k, n in enumerate(counts) if n]
        d["run"]["flow_order"] = "round-robin"
        d["run"]["duration"] = 1e9
    else:  # window-limited flows with a round-trip time; a sojourn is ~1.5 rtt: measure after 2 rtt
        rtt = rtt_for(w.flows)
        d["router"]["rtt"] = rtt
        d["run"].update(duration=6.0 * rtt, warmup=2.0 * rtt, max_services=0)
        d["traffic"] = {"load": 0.8}
        d["class"] = [{"name": f"c{k}", "cost": list(v), "share": 1, "mean_packets": RTT_MEAN_PACKETS}
                      for k, v in enumerate(VECTORS)]
    return flows.from_dict(d)


def own_rss(args: list[str]) -> list[str]:
    """``args`` run as a forked child of a small shell.

    On Linux a process's peak RSS (``ru_maxrss``) carries over the high-water mark of the
    memory it was exec'd from, and Python's subprocess execs from (a vfork of) this large
    process: a 30-flow C run then reports this process's 250 MB.  A child *forked* by
    ``sh`` starts from the shell's few hundred kB, so its own figure is its own.
    """
    return ["sh", "-c", '"$@"; exit $?', "sh", *args]


def _spread(ratios: list[float]) -> dict:
    """Median, min, max and quartiles of the per-pair ratios."""
    r = sorted(ratios)
    if len(r) >= 2:
        q1, _, q3 = statistics.quantiles(r, n=4, method="inclusive")
    else:
        q1 = q3 = r[0]
    return {"ratio": statistics.median(r), "ratio_low": r[0], "ratio_high": r[-1], "ratio_q1": q1, "ratio_q3": q3,
            "ratios": r}


_ISOLATED = """
import json, resource, sys
from mrfq import flows
from mrfq.router.bench import WORKLOADS, scenario_for
from mrfq.router.run import simulate
w = next(x for x in WORKLOADS if x.name == sys.argv[1])
small = scenario_for(WORKLOADS[0], 1000)
simulate(small)  # import, load the cached loop, one tiny run: the baseline
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
sc = scenario_for(w, int(sys.argv[2]))
record = sys.argv[3] != "off"  # on: delays and the fairness bound; delays: the delays alone
fairness = sys.argv[3] == "on"
# the C yardstick times its loop after setting up its flows (their first windows injected); so
# that both time the same work, the engine times its loop after the first service (the setup:
# the flow table and every first window admitted at t = 0), in the same run
r = simulate(sc, timed_from=1 if w.mode == "static" else 0, record_delays=record, record_fairness=fairness)
n, cpu, wall = (r.loop_services, r.loop_cpu_seconds, r.loop_wall_seconds) if w.mode == "static" else (
    r.services, r.cpu_seconds, r.wall_seconds)
print(json.dumps({"services": n, "cpu": cpu, "wall": wall, "setup_cpu": r.cpu_seconds - cpu,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "baseline_kb": base,
                  "state_kb": r.state_bytes / 1024, "max_active_flows": r.max_active_flows,
                  "mean_flows": sum(c.mean_flows for c in r.classes) if r.classes else None,
                  "delay_kb": r.delays.nbytes / 1024 if r.delays is not None else 0.0}))
"""


class MrfqSide:
    """Timed mrfq runs of one workload (in this process, or one fresh process per run), with the
    per-packet delays and the relative fairness bound recorded (the default), the delays alone
    (``fairness=False``) or nothing (``record=False``)."""

    def __init__(self, w: Workload, services: int, record: bool = True, fairness: bool = True):
        self.w, self.services, self.record, self.fairness = w, services, record, fairness
        self.sc = scenario_for(w, services) if not w.isolated else None
        self.extra: dict = {}

    def warm(self) -> None:
        from mrfq.router.run import simulate

        if self.w.isolated:
            self._isolated(1000)  # compile into the cache once
        else:
            simulate(self.sc.replace(**{"run.max_services": min(self.services, 100000)}), record_delays=self.record,
                     record_fairness=self.fairness)

    def _isolated(self, services: int) -> dict:
        env = dict(os.environ, MRFQ_NUMBA_CACHE="1")
        p = subprocess.run(own_rss([sys.executable, "-c", _ISOLATED, self.w.name, str(services),
                                    ("on" if self.fairness else "delays") if self.record else "off"]), env=env,
                           capture_output=True, text=True, check=True)
        return json.loads(p.stdout.strip().splitlines()[-1])

    def once(self) -> tuple[float, float, int]:
        """(Msvc per CPU second, Msvc per wall second, services) of one timed run."""
        if self.w.isolated:
            d = self._isolated(self.services)
            for key in ("maxrss_kb", "baseline_kb", "state_kb", "max_active_flows", "mean_flows", "setup_cpu",
                        "delay_kb"):
                self.extra.setdefault(key, []).append(d[key])
            return d["services"] / d["cpu"] / 1e6, d["services"] / d["wall"] / 1e6, d["services"]
        from mrfq.router.run import simulate

        r = simulate(self.sc, record_delays=self.record, record_fairness=self.fairness)
        self.extra.setdefault("delay_kb", []).append(r.delays.nbytes / 1024 if r.delays is not None else 0.0)
        tr = self.sc.arrival_trace
        if tr is not None:
            if r.t_end >= tr.times[-1]:  # cannot happen with twice the packets the run serves
                raise MrfqError(f"{self.w.name}: the run reached t = {r.t_end:g}, past the last arrival of the "
                                f"C yardstick's trace ({tr.times[-1]:g}); a larger trace is needed")
            self.extra.setdefault("mean_flows", []).append(sum(c.mean_flows for c in r.classes))
        return r.services / r.cpu_seconds / 1e6, r.services / r.wall_seconds / 1e6, r.services


class CSide:
    """Timed runs of the C yardstick on one workload (``delays``: the binary built with
    ``-DMRFQ_RECORD_DELAYS``, whose every run must record its departures)."""

    def __init__(self, binary: Path, w: Workload, services: int, delays: bool = False):
        self.args = [str(binary), "-s", w.c_sched, "-m", w.mode, "-n", str(int(services))]
        if w.mode == "static":
            self.args += ["-F", str(w.flows)]
        else:  # its defaults, given explicitly: c_dynamic_arrivals draws the same flows
            self.args += ["-S", str(C_SEED), "-L", str(C_MEAN_PACKETS), "-r", str(C_LOAD), "-W", str(C_WINDOW)]
        self.services, self.delays = services, delays
        self.sig: list[str] = []
        self.rss: list[int] = []
        self.model_kb: list[float] = []
        self.mean_flows: list[float] = []

    def _run(self, args: list[str]) -> tuple[str, dict]:
        """The program's output and its summary line's ``key=value`` pairs; a program that fails or
        prints no yardstick summary is an error naming it."""
        p = subprocess.run(args, capture_output=True, text=True)
        lines = p.stdout.splitlines()
        kv = dict(re.findall(r"(\w+)=([^\s]+)", lines[0])) if lines else {}
        if p.returncode != 0 or "Msvc_per_cpu_s" not in kv or "sig" not in kv:
            why = f"exit code {p.returncode}" if p.returncode != 0 else "no summary line (Msvc_per_cpu_s=..., sig=...)"
            raise MrfqError(f"--c-source: {' '.join(self.args)}: {why}; "
                            "give a C yardstick (mrfq's router/yardstick.c, or a program with its options and output)")
        return p.stdout, kv

    def warm(self) -> None:
        self._run(self.args[:6] + [str(min(self.services, 100000))] + self.args[7:])

    def once(self) -> tuple[float, float]:
        out, kv = self._run(own_rss(self.args))
        self.sig.append(kv["sig"])  # _run checked it is there
        if self.delays and int(kv.get("rec_sojourns", "0")) == 0:
            raise MrfqError(f"{' '.join(self.args)}: the yardstick with the delays recorded none "
                            "(a --c-source that ignores -DMRFQ_RECORD_DELAYS?)")
        if "maxrss_kB" in kv:
            self.rss.append(int(float(kv["maxrss_kB"])))
        if "model_kB" in kv:  # the bytes its data structures hold (flow table, rings, queues)
            self.model_kb.append(float(kv["model_kB"]))
        m = re.search(r"mean_active=([^\s]+)", out)  # the dynamic mode's flows in the system
        if m:
            self.mean_flows.append(float(m.group(1)))
        return float(kv["Msvc_per_cpu_s"]), float(kv["Msvc_per_s"])


def run_pairs(w: Workload, services: int, reps: int, binary: Path | None, off: bool = True,
              binary_delays: Path | None = None) -> dict:
    """Interleaved timed runs: mrfq, mrfq with the delays not recorded (``off``), C, C recording the
    delays (``binary_delays``) and mrfq recording the delays alone (no fairness bound), mrfq, ...;
    per repetition the ratios mrfq / C, mrfq / (mrfq, delays off) and (mrfq, delays off) / C (the
    loop the sweeps run against the C yardstick, which records no delays), and with
    ``binary_delays`` the recording C's own on/off, mrfq / recording C and (mrfq recording the
    delays alone) / recording C: like for like.  A static row runs at
    least ``MIN_SERVICES_PER_FLOW`` services per flow: with fewer, the timed loop (setup
    excluded) is a fraction of a second at 10^6 flows and each flow is served a few times,
    every one a cache miss (2e6 services at 10^6 flows gave 0.08 s of loop beside 1.6 s of setup)."""
    if w.mode == "static":
        services = max(services, MIN_SERVICES_PER_FLOW * w.flows)
    if w.isolated and w.mode == "static":
        services = max(services, MIN_SERVICES_ISOLATED)
    m = MrfqSide(w, services)
    m_off = MrfqSide(w, services, record=False) if off else None
    c = CSide(binary, w, services) if binary is not None and w.c_sched else None
    cd = CSide(binary_delays, w, services, delays=True) if c is not None and binary_delays is not None else None
    m_del = MrfqSide(w, services, fairness=False) if cd is not None else None
    m.warm()
    if m_off is not None:
        m_off.warm()
    for side in (c, cd, m_del):
        if side is not None:
            side.warm()
    mc, mw, cc, cw, oc, dc, ec, n = [], [], [], [], [], [], [], 0
    for _ in range(reps):
        a, b, n = m.once()
        mc.append(a)
        mw.append(b)
        if m_off is not None:
            oc.append(m_off.once()[0])
        if c is not None:
            x, y = c.once()
            cc.append(x)
            cw.append(y)
        if cd is not None:
            dc.append(cd.once()[0])
            ec.append(m_del.once()[0])
    if cd is not None and set(cd.sig) != set(c.sig):
        raise MrfqError(f"{w.name}: the yardstick with the delays recorded served other packets "
                        f"(sig {', '.join(sorted(set(cd.sig)))} against {', '.join(sorted(set(c.sig)))})")
    row = {"workload": w.name, "flows": w.flows if w.mode != "dynamic" else None, "services": n,
           "mrfq_msvc_per_cpu_s": statistics.median(mc), "mrfq_msvc_per_wall_s": statistics.median(mw),
           "c_msvc_per_cpu_s": statistics.median(cc) if cc else None,
           "c_msvc_per_wall_s": statistics.median(cw) if cw else None,
           "ratio": None, "ratio_low": None, "ratio_high": None, "ratio_q1": None, "ratio_q3": None,
           "pairs": len(mc), "off_msvc_per_cpu_s": statistics.median(oc) if oc else None,
           "on_off": None, "on_off_low": None, "on_off_high": None,
           "delay_kb": max(m.extra["delay_kb"]) if m.extra.get("delay_kb") else None}
    if oc:
        so = _spread([a / x for a, x in zip(mc, oc)])
        row.update(on_off=so["ratio"], on_off_low=so["ratio_low"], on_off_high=so["ratio_high"])
    if cc:
        sp = _spread([a / x for a, x in zip(mc, cc)])
        sp.pop("ratios")
        row.update(sp)
    if cc and oc:  # the loop without recording (the sweeps') against C, which records nothing either
        sf = _spread([o / x for o, x in zip(oc, cc)])
        row.update(ratio_off=sf["ratio"], ratio_off_low=sf["ratio_low"], ratio_off_high=sf["ratio_high"])
    if dc:
        so = _spread([d / x for d, x in zip(dc, cc)])
        sd = _spread([a / d for a, d in zip(mc, dc)])
        row.update(c_delays_msvc_per_cpu_s=statistics.median(dc), c_on_off=so["ratio"], c_on_off_low=so["ratio_low"],
                   c_on_off_high=so["ratio_high"], ratio_delays=sd["ratio"], ratio_delays_low=sd["ratio_low"],
                   ratio_delays_high=sd["ratio_high"])
        se = _spread([e / d for e, d in zip(ec, dc)])
        row.update(delays_only_msvc_per_cpu_s=statistics.median(ec), ratio_delays_only=se["ratio"],
                   ratio_delays_only_low=se["ratio_low"], ratio_delays_only_high=se["ratio_high"])
    if m.extra.get("mean_flows", [None])[0] is not None:
        row["mean_flows"] = statistics.median(m.extra["mean_flows"])
    if c is not None and c.mean_flows:  # dynamic rows: the same arrivals, the same flows in the system
        row["c_mean_flows"] = statistics.median(c.mean_flows)
    if "maxrss_kb" in m.extra:
        row["mrfq_peak_rss_kb"] = max(m.extra["maxrss_kb"])
        row["mrfq_baseline_rss_kb"] = max(m.extra["baseline_kb"])
        row["max_active_flows"] = max(m.extra["max_active_flows"])
        row["mrfq_setup_cpu_s"] = statistics.median(m.extra["setup_cpu"])
        row["mrfq_state_kb"] = max(m.extra["state_kb"])
    if c is not None and c.rss:
        row["c_peak_rss_kb"] = max(c.rss)
    if c is not None and c.model_kb and "mrfq_state_kb" in row:
        row["c_model_kb"] = max(c.model_kb)
    return row


#: mrfq's own C yardstick (package data): the router model of the bench in plain C11
YARDSTICK = Path(__file__).with_name("yardstick.c")
#: its flags (``-O2``, as the figures in docs/performance.md were measured); ``--c-delays`` adds
#: ``-DMRFQ_RECORD_DELAYS``, the tests ``-DMRFQ_TRACE``
C_FLAGS = ("-std=c11", "-O2")


def c_compiler() -> str | None:
    """The system C compiler: ``$CC`` if set (a program name or path), else ``gcc``, else ``cc``, found on
    PATH; None if there is none."""
    cc = os.environ.get("CC", "").strip()
    return (shutil.which(cc) if cc else None) or shutil.which("gcc") or shutil.which("cc")


def build_c(source: Path, delays: bool = False, *, trace: bool = False) -> Path | None:
    """``source`` (a C yardstick, by default :data:`YARDSTICK`) compiled with :data:`C_FLAGS`; with
    ``delays`` also ``-DMRFQ_RECORD_DELAYS``, with ``trace`` ``-DMRFQ_TRACE``.  The binary is kept
    in a folder of this user's under the temporary directory, named by a hash of the source, the
    compiler and the flags, and reused while they are the same.  None without a compiler or the
    source; a failed compilation raises CalledProcessError (its ``stderr`` says why)."""
    cc = c_compiler()
    if cc is None or not source.is_file():
        return None
    flags = [*C_FLAGS, *(["-DMRFQ_RECORD_DELAYS"] if delays else []), *(["-DMRFQ_TRACE"] if trace else [])]
    key = hashlib.sha256(b"\0".join([source.read_bytes(), os.fsencode(cc), *map(str.encode, flags)])).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"mrfq_bench_{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    out = folder / f"{source.stem}{'_delays' if delays else ''}{'_trace' if trace else ''}_{key}"
    if out.exists():  # built from this very source with these flags
        return out
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")  # compiled aside, then renamed: no half-written binary
    try:
        subprocess.run([cc, *flags, "-o", str(tmp), str(source), "-lm"], check=True, capture_output=True)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _one_line(text: bytes | str | None, n: int = 200) -> str:
    """A compiler's complaint on one line (its first ``n`` characters)."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return " ".join((text or "").split())[:n]


def time_reference(services: int, reps: int = 3) -> dict:
    """The SimPy reference vs the engine on the same small workload, interleaved (reference,
    engine, reference, engine, ...); the speed-up engine / reference per pair."""
    from mrfq.router.reference import simulate_reference
    from mrfq.router.run import simulate

    sc = scenario_for(WORKLOADS[0], services)
    sc = sc.replace(**{"run.max_services": 0, "run.duration": services / 2.2})
    simulate(sc)  # warm the engine
    ref_rate, eng_rate, n_ref = [], [], 0
    for _ in range(reps):
        t0 = time.process_time()
        ref = simulate_reference(sc)
        t_ref = time.process_time() - t0
        n_ref = int(ref.services)
        ref_rate.append(n_ref / t_ref / 1e6)
        r = simulate(sc)
        eng_rate.append(r.services / r.cpu_seconds / 1e6)
    sp = _spread([e / x for e, x in zip(eng_rate, ref_rate)])
    sp.pop("ratios")
    return {"reference_msvc_per_cpu_s": statistics.median(ref_rate),
            "mrfq_msvc_per_cpu_s": statistics.median(eng_rate), "services": n_ref, "pairs": reps,
            "speedup": sp["ratio"], "speedup_low": sp["ratio_low"], "speedup_high": sp["ratio_high"],
            "speedup_q1": sp["ratio_q1"], "speedup_q3": sp["ratio_q3"]}


#: the TCP row: this many static flows under drfq, their costs cycling through VECTORS, each a Reno
#: flow of this round-trip time with a buffer of TCP_BUFFER packets (so that it loses packets and
#: recovers), against the same flows with fixed windows of 30 and the router's rtt the same
TCP_FLOWS, TCP_RTT, TCP_BUFFER = 30, 200.0, 60


def tcp_scenario(n: int, services: int, tcp: bool) -> flows.Scenario:
    """The TCP row's workload: ``n`` Reno flows (``tcp``) or the same flows with fixed windows."""
    fl = []
    for i in range(n):
        f = {"name": f"f{i}", "cost": list(VECTORS[i % len(VECTORS)])}
        if tcp:
            f.update(transport={"cc": "reno", "rtt": TCP_RTT}, buffer=TCP_BUFFER)
        fl.append(f)
    router = {"scheduler": "drfq", "window": 30, **({} if tcp else {"rtt": TCP_RTT})}
    return flows.from_dict({"name": "bench-tcp" if tcp else "bench-windows", "resources": ["cpu", "link"],
                            "router": router, "run": {"duration": 1e10, "warmup": 0.0, "max_services": int(services)},
                            "flow": fl})


def time_tcp_pair(services: int, reps: int, n: int = TCP_FLOWS, record: bool = True) -> dict:
    """TCP flows against fixed windows on the same router, interleaved (windows, Reno, windows, ...,
    each loop compiled and run once first): CPU per service of the loop (``timed_from=1``: no setup),
    with the delays and the fairness bound recorded as ``mrfq run`` does (``record``); the ratio is
    Reno's service rate over the windows' per repetition."""
    from mrfq.router.run import simulate

    sc = {"windows": tcp_scenario(n, services, False), "reno": tcp_scenario(n, services, True)}
    for s in sc.values():
        simulate(s.replace(**{"run.max_services": min(services, 10_000)}), record_delays=record)
    ns = {k: [] for k in sc}
    for _ in range(reps):
        for k, s in sc.items():
            r = simulate(s, timed_from=1, record_delays=record)
            ns[k].append(r.loop_cpu_seconds / max(r.loop_services, 1) * 1e9)
    ratios = [w / r for w, r in zip(ns["windows"], ns["reno"]) if r > 0]
    return {"flows": n, "rtt": TCP_RTT, "buffer": TCP_BUFFER, "services": services, "pairs": reps,
            "windows_ns_per_service": statistics.median(ns["windows"]),
            "reno_ns_per_service": statistics.median(ns["reno"]),
            "ratio": statistics.median(ratios) if ratios else None,
            "ratio_low": min(ratios) if ratios else None, "ratio_high": max(ratios) if ratios else None}


def first_call_seconds() -> dict:
    """Wall time of a fresh process's first run, with an empty and with a warm numba cache."""
    code = ("import time; t=time.perf_counter(); from mrfq import flows; from mrfq.router.run import simulate; "
            "simulate(flows.load_preset('oracle-rates'), duration=2000.0); print(time.perf_counter()-t)")
    out = {}
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d, MRFQ_NUMBA_CACHE="1")
        for label in ("cold_cache_s", "warm_cache_s"):
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            out[label] = float(p.stdout.strip().splitlines()[-1])
    return out


def peak_memory_kb(services_list: list[int]) -> dict:
    code = ("import resource, sys; from mrfq import flows; from mrfq.router.bench import WORKLOADS, scenario_for; "
            "from mrfq.router.run import simulate; simulate(scenario_for(WORKLOADS[2], int(sys.argv[1]))); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = {}
    for n in services_list:
        p = subprocess.run(own_rss([sys.executable, "-c", code, str(n)]), capture_output=True, text=True, check=True)
        out[n] = int(p.stdout.strip().splitlines()[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="mrfq bench", description=__doc__.splitlines()[0])
    add_arguments(ap)
    try:
        return run(ap.parse_args(argv))
    except MrfqError as e:
        print(f"mrfq bench: error: {e}", file=sys.stderr)
        return 2


def add_arguments(ap) -> None:
    ap.add_argument("--quick", action="store_true", help="shorter workloads, fewer repetitions")
    ap.add_argument("--json", action="store_true", help="print one JSON object {rows: [...]}")
    ap.add_argument("--services", type=int_type("--services", lo=1000, hi=MAX_BENCH_SERVICES), metavar="N",
                    help=f"services per timed run, in [1000, {MAX_BENCH_SERVICES:.0e}] (default 2e7; quick 2e6)")
    ap.add_argument("--reps", type=int_type("--reps", lo=1, hi=MAX_BENCH_REPS), metavar="N",
                    help=f"timed repetitions per workload, in [1, {MAX_BENCH_REPS}] (default 5; quick 3)")
    ap.add_argument("--c-source", default=None, metavar="FILE",
                    help="C yardstick to compile and time (default: mrfq's own router/yardstick.c)")
    ap.add_argument("--c-delays", action="store_true",
                    help="also time the yardstick compiled with -DMRFQ_RECORD_DELAYS, recording the same "
                         "per-packet delays as mrfq")
    ap.add_argument("--only", metavar="TEXT", help="run only workloads whose name contains this text")
    ap.add_argument("--no-extras", action="store_true", help="skip the TCP, SimPy, first-call and memory rows")
    ap.add_argument("--max-flows", type=int_type("--max-flows", lo=1, hi=MAX_BENCH_FLOWS), default=None,
                    metavar="N", help="skip static/RTT workloads with more flows than this (quick: 1e5; default none)")


def selected_workloads(only: str | None, max_flows: int | None, *, quick_default: bool = False) -> list[Workload]:
    """The workloads ``--only`` and ``--max-flows`` keep; none is an error (named)."""
    if only is not None and not only.strip():
        raise MrfqError(f"--only {shorten(only)}: empty; give part of a workload name, e.g. '3 static'")
    out = [w for w in WORKLOADS if (only is None or only in w.name)
           and not (max_flows is not None and w.mode != "dynamic" and w.flows > max_flows)]
    if not out:
        what = f"--only {shorten(only)}" if only is not None else ""
        if max_flows is not None:
            what += ((" with " if what else "") + f"--max-flows {max_flows}"
                     + (" (the --quick default)" if quick_default else ""))
        raise MrfqError(f"{what}: no workload left; workloads: {'; '.join(w.name for w in WORKLOADS)}")
    return out


def _row_text(row: dict) -> str:
    cc = f"{row['c_msvc_per_cpu_s']:9.1f}" if row["c_msvc_per_cpu_s"] is not None else f"{'-':>9}"
    if row["ratio"] is not None:
        ra = f"{row['ratio']:5.2f} [{row['ratio_low']:.2f}-{row['ratio_high']:.2f}, IQR {row['ratio_q1']:.2f}-{row['ratio_q3']:.2f}]"
    else:
        ra = "-"
    mem = ""
    if "mrfq_peak_rss_kb" in row:
        mem = f"  RSS mrfq {row['mrfq_peak_rss_kb'] / 1024:.0f} MiB (base {row['mrfq_baseline_rss_kb'] / 1024:.0f})"
        if "c_peak_rss_kb" in row:
            mem += f", C {row['c_peak_rss_kb'] / 1024:.0f} MiB"
        mem += f"; state mrfq {row['mrfq_state_kb'] / 1024:.0f} MiB"
        if "c_model_kb" in row:
            mem += f", C {row['c_model_kb'] / 1024:.0f} MiB"
        if "mean_flows" in row:
            mem += f"; flows in system: mean {row['mean_flows']:,.0f}, max {row['max_active_flows']:,}"
    elif "mean_flows" in row:
        mem = f"  flows in system: mean {row['mean_flows']:.2f}"
        if "c_mean_flows" in row:
            mem += f" (C {row['c_mean_flows']:.2f}, same arrivals)"
    oo = (f"{row['on_off']:5.2f} [{row['on_off_low']:.2f}-{row['on_off_high']:.2f}]" if row.get("on_off") is not None
          else f"{'-':>16}")
    if row.get("ratio_off") is not None:
        oo += f"  off/C {row['ratio_off']:.2f} [{row['ratio_off_low']:.2f}-{row['ratio_off_high']:.2f}]"
    if row.get("c_on_off") is not None:
        oo += (f"  C+d {row['c_delays_msvc_per_cpu_s']:.1f}: its on/off {row['c_on_off']:.2f} "
               f"[{row['c_on_off_low']:.2f}-{row['c_on_off_high']:.2f}], mrfq/C+d {row['ratio_delays']:.2f} "
               f"[{row['ratio_delays_low']:.2f}-{row['ratio_delays_high']:.2f}], delays only/C+d "
               f"{row['ratio_delays_only']:.2f} [{row['ratio_delays_only_low']:.2f}-{row['ratio_delays_only_high']:.2f}]")
    return (f"{row['workload']:<30} {row['mrfq_msvc_per_cpu_s']:9.1f} {row['mrfq_msvc_per_wall_s']:9.1f} {cc}  {ra}"
            f"  {oo}{mem}")


def log_flows_table(rows: list[dict]) -> list[tuple[int, float, float]]:
    """(flows, ns per service, ns per service / ln(flows)) of the static drfq rows, by flows."""
    out = []
    for r in rows:
        f = r.get("flows")
        if f and f > 1 and "static" in r["workload"] and "drfq" in r["workload"]:
            ns = 1e3 / r["mrfq_msvc_per_cpu_s"]
            out.append((int(f), ns, ns / math.log(f)))
    return sorted(out)


def run(args) -> int:
    # every option is checked before the first compilation or run
    services = int(args.services or (2e6 if args.quick else 2e7))
    reps = int(args.reps or (3 if args.quick else 5))
    if not (1000 <= services <= MAX_BENCH_SERVICES and 1 <= reps <= MAX_BENCH_REPS):
        raise MrfqError(f"--services = {services}, --reps = {reps}: need --services in [1000, "
                        f"{MAX_BENCH_SERVICES:.0e}] and --reps in [1, {MAX_BENCH_REPS}]")
    max_flows = args.max_flows if args.max_flows is not None else (100_000 if args.quick else None)
    workloads = selected_workloads(args.only, max_flows, quick_default=args.max_flows is None)
    if args.c_source is not None and not Path(args.c_source).is_file():
        what = "not a regular file" if Path(args.c_source).exists() else "no such file"
        raise MrfqError(f"--c-source {shorten(args.c_source)}: {what} "
                        "(a C yardstick such as mrfq's router/yardstick.c)")
    src = Path(args.c_source) if args.c_source else YARDSTICK
    binary = None
    c_note = ""
    try:
        binary = build_c(src)
        if binary is None:
            c_note = ("C yardstick skipped: no C compiler found (gcc or cc on PATH, or $CC)" if src.is_file()
                      else f"C yardstick skipped: {src} not found (give --c-source)")
    except subprocess.CalledProcessError as e:
        c_note = f"C yardstick skipped: compiling {src} failed ({_one_line(e.stderr)})"
    except OSError as e:  # the compiler would not start
        c_note = f"C yardstick skipped: compiling {src} failed ({e})"
    binary_delays = None
    if args.c_delays and binary is not None:
        try:
            binary_delays = build_c(src, delays=True)
            probe = subprocess.run([str(binary_delays), "-n", "1000"], capture_output=True, text=True, timeout=60)
            if "rec_sojourns=" not in probe.stdout:  # a --c-source without the recording
                binary_delays = None
                c_note = f"C with the delays skipped: {src} records no delays under -DMRFQ_RECORD_DELAYS"
        except subprocess.CalledProcessError as e:
            c_note = (f"C with the delays skipped: {src} does not compile with -DMRFQ_RECORD_DELAYS "
                      f"({_one_line(e.stderr)})")
        except (OSError, subprocess.TimeoutExpired) as e:
            c_note = f"C with the delays skipped: {e}"
    rows = []
    for w in workloads:
        row = run_pairs(w, services, reps, binary, binary_delays=binary_delays)
        rows.append(row)
        if not args.json:
            if len(rows) == 1:
                print(f"{'workload':<30} {'mrfq Msvc/cpu-s':>9} {'/wall-s':>9} {'C* /cpu-s':>9}  "
                      "ratio mrfq/C*: median [min-max, IQR]  delays on/off: median [min-max]")
            print(_row_text(row), flush=True)
    out = {"rows": rows, "services_per_run": services, "repetitions": reps}
    if c_note:
        out["note"] = c_note
    if not args.no_extras:
        out["tcp_vs_windows"] = time_tcp_pair(min(services, int(2e6) if args.quick else int(2e7)), reps)
        out["simpy_reference"] = time_reference(20000 if args.quick else 100000, reps)
        out["first_call"] = first_call_seconds()
        out["peak_rss_kb"] = peak_memory_kb([int(1e6), int(1e7)] if args.quick else [int(1e7), int(1e8)])
    if args.json:
        print(dumps_strict(out))
        return 0
    if c_note:
        print(c_note)
    print(f"({reps} interleaved repetitions of mrfq, mrfq with delays off, C of {services:,} services each after "
          "a warm-up run of each; ratio = mrfq / C by CPU time per repetition, median [min-max, interquartile "
          "range]; * the C yardstick records no delays; on/off = mrfq (delays and the relative fairness bound "
          "recorded: the default) / mrfq with record_delays=False (its loop compiled without the recording); "
          "off/C = mrfq with record_delays=False / C (the loop the sweeps run, like for like); "
          + ("C+d = the yardstick recording the same delays (no fairness bound), Msvc/cpu-s; its on/off = C+d / C; "
             "delays only/C+d = mrfq recording the delays alone (record_fairness=False) / C+d, like for like; "
             if binary_delays is not None else "")
          + "indicative only on a shared machine)")
    kb = [r["delay_kb"] for r in rows if r.get("delay_kb")]
    if kb:
        print("delay histograms (fixed per run, independent of its length): " + ", ".join(
            f"{r['workload']}: {r['delay_kb']:,.0f} KiB" for r in rows if r.get("delay_kb")))
    lf = log_flows_table(rows)
    if len(lf) >= 2:
        print("cost per service vs log(flows), static drfq: " + ", ".join(
            f"{f:,}: {ns:.0f} ns ({q:.1f} ns/ln F)" for f, ns, q in lf))
    if "tcp_vs_windows" in out:
        p = out["tcp_vs_windows"]
        rng = f" [{p['ratio_low']:.2f}-{p['ratio_high']:.2f}]" if p["ratio"] is not None else ""
        print(f"TCP: {p['flows']} Reno flows (rtt {p['rtt']:g}, a buffer of {p['buffer']} packets each) against the "
              f"same flows with fixed windows of 30, drfq, delays and bound recorded: {p['reno_ns_per_service']:.0f} "
              f"against {p['windows_ns_per_service']:.0f} CPU ns per service; Reno's service rate / the windows': "
              + (f"{p['ratio']:.2f}{rng}" if p["ratio"] is not None else "-")
              + f" ({p['pairs']} interleaved pairs of {p['services']:,} services)")
    if "simpy_reference" in out:
        s = out["simpy_reference"]
        print(f"SimPy reference model: {s['reference_msvc_per_cpu_s'] * 1e3:.1f} k services/cpu-s on 3 static flows "
              f"({s['services']:,} services); the numba engine is {s['speedup']:,.0f}x faster "
              f"[{s['speedup_low']:,.0f}-{s['speedup_high']:,.0f}] ({s['pairs']} interleaved pairs)")
    if "first_call" in out:
        f = out["first_call"]
        print(f"first run in a fresh process, including import: {f['cold_cache_s']:.1f} s with an empty numba cache "
              f"(compilation), {f['warm_cache_s']:.1f} s with a warm cache")
    if "peak_rss_kb" in out:
        print("peak memory, dynamic workload: " + ", ".join(f"{n:,} services: {kb / 1024:.0f} MiB"
                                                            for n, kb in out["peak_rss_kb"].items()))
    return 0
