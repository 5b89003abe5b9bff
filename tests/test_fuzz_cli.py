"""Fuzzing the gate and the command line: every case ends in success or in one clean line naming
the field or the file; none escapes as a traceback, none hangs, no JSON carries NaN.

* scenario dicts: hypothesis mutates the shipped presets (deleted keys, wrong types, 0, -1,
  nan, inf, 1e308, 2**63, denormals, huge strings) and ``flows.from_dict`` must return a
  scenario or raise :class:`ScenarioError` with one short line naming a field; seeded and
  bounded (pure Python, no engine);
* accepted mutants run through the engine under ``run.max_services`` (so none can hang) and
  their JSON must be strict;
* command lines: hypothesis over ``alloc`` argument lists in-process (no engine: bounded), and
  over ``bench`` option lists in-process with the timed runs replaced by a recorder (bounded:
  only the option checks run; an accepted case must stay within the documented ranges);
* cluster scenarios: hypothesis mutates the cluster presets through ``cluster_from_dict``
  (pure Python, as for packet scenarios);
* hostile files: TOML nested to any depth (arrays, inline tables, brackets in strings and
  comments), trace CSVs with fields of any length and open quotes (packet and cluster traces),
  scenarios with thousands of names that a message would list: through the real readers, each
  accepted or refused in one short line;
* the larger run (slow): ``scripts/fuzz_cli.py`` over scenario files and every command, each
  case in a worker process under a wall-clock cap and an address-space limit.
"""

import copy
import importlib.util
import json
import math
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from mrfq import flows
from conftest import scaled
from mrfq.flows.errors import ScenarioError

ROOT = Path(__file__).resolve().parent.parent
PRESETS = {p.stem: tomllib.loads(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "flows" / "presets").glob("*.toml"))}
FIELDS = ("resources", "router", "run", "traffic", "flow", "class", "name", "scenario", "description")
SPECIAL = st.sampled_from([0, -1, 0.0, -1.0, math.nan, math.inf, -math.inf, 1e308, 2**63, 2**63 - 1, 10**30, 5e-324,
                           1e-320, 1e-300, 1e15, 2**24, "x", "", "y" * 100_000, True, [], {}, [1.0], 1000, 0.999])


def _paths(d, prefix=()):
    out = []
    if isinstance(d, dict):
        for k, v in d.items():
            out.append((prefix + (k,)))
            out += _paths(v, prefix + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out.append((prefix + (i,)))
            out += _paths(v, prefix + (i,))
    return out


@st.composite
def mutated_presets(draw):
    name = draw(st.sampled_from(sorted(PRESETS)))
    d = copy.deepcopy(PRESETS[name])
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(d)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        tgt = d
        for p in path[:-1]:
            tgt = tgt[p]
        if draw(st.booleans()) and draw(st.booleans()):
            del tgt[path[-1]]
        else:
            tgt[path[-1]] = draw(SPECIAL)
    if draw(st.integers(0, 4)) == 0:  # a key the preset lacks
        table = draw(st.sampled_from(["router", "run", "traffic"]))
        key = draw(st.sampled_from(["window", "batches", "max_services", "seed", "load", "max_flows", "rtt"]))
        if isinstance(d.get(table, {}), dict):
            d.setdefault(table, {})[key] = draw(SPECIAL)
    return name, d


def _check_refusal(msg: str) -> None:
    assert "\n" not in msg, msg
    assert len(msg) < 600, f"{len(msg)} characters: {msg[:200]}"
    head = msg.split(":", 1)[0].split(" ", 1)[0]
    assert head.split(".")[0].split("[")[0] in FIELDS, f"message does not start with a field: {msg[:200]}"


@pytest.mark.nojit
@seed(12)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_presets())
def test_scenario_gate_accepts_or_refuses_in_one_line(case):
    name, d = case
    try:
        sc = flows.from_dict(d, name=name)
    except ScenarioError as e:
        _check_refusal(str(e))
        return
    # an accepted scenario round-trips through its dict unchanged
    assert flows.from_dict(flows.to_dict(sc), name=name) == sc


@seed(13)
@settings(max_examples=int(scaled(30, 8)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(mutated_presets())
def test_accepted_mutants_run_bounded_with_strict_json(case):
    from mrfq.flows.cli_args import dumps_strict
    from mrfq.router.run import simulate

    name, d = case
    try:
        sc = flows.from_dict(d, name=name)
    except ScenarioError:
        return
    r = simulate(sc, max_services=3000)  # bounded: the run stops after this many services
    assert r.services <= 3000 + sc.n_resources
    from mrfq.analysis.run_report import run_json

    out = dumps_strict(run_json(r))
    json.loads(out, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))


NUM = st.sampled_from(["1", "0.5", "0", "-1", "1e308", "1e-320", "1_0", "nan", "inf", "1e-300", "2", "x", "",
                       "1e6", "1e-6", "0x1"])


@st.composite
def alloc_argv(draw):
    n = draw(st.integers(0, 3))
    J = draw(st.integers(1, 3))
    argv = ["alloc"]
    for _ in range(n):
        argv += ["--cost", ",".join(draw(NUM) for _ in range(draw(st.sampled_from([J, J, J + 1]))))]
    if draw(st.booleans()):
        for _ in range(draw(st.integers(0, n + 1))):
            argv += ["--weight", draw(NUM)]
    if draw(st.booleans()):
        argv += ["--objective", draw(st.sampled_from(["all", "drf", "pf,bmf", "pf,pf", "fair", "ceei"]))]
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@pytest.mark.nojit
@seed(14)
@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # capsys is read per case
@given(alloc_argv())
def test_alloc_command_lines_succeed_or_refuse_cleanly(capsys, argv):
    from mrfq.analysis.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    if code == 0:
        assert err == ""
        if "--json" in argv:
            json.loads(out, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
    else:
        assert code == 2, err
        assert err.startswith("mrfq: error: ") and err.count("\n") == 1 and len(err) < 600, err


BENCH_NUM = st.sampled_from(["1000", "2000", "5e3", "999", "0", "-1", "nan", "inf", "1e20", "1e10", "1e11", "1_0", "x",
                             "", "2.5e3", "1e3.5", "1", "100", "101", "1.5", "2000000", "2000001", "0x10"])


@st.composite
def bench_argv(draw):
    argv = ["bench"]
    for opt in draw(st.lists(st.sampled_from(["--services", "--reps", "--max-flows", "--only", "--c-source",
                                              "--quick", "--json", "--no-extras", "--bogus"]), unique=True,
                             max_size=5)):
        if opt in ("--quick", "--json", "--no-extras", "--bogus"):
            argv.append(opt)
        elif opt == "--only":
            argv += [opt, draw(st.sampled_from(["3 static", "dynamic", "1e6 static", "nope", "", " ", "y" * 3000]))]
        elif opt == "--c-source":
            argv += [opt, draw(st.sampled_from(["/nonexistent/mrfq_ref.c", "/", str(ROOT / "README.md")]))]
        else:
            argv += [opt, draw(BENCH_NUM)]
    return argv


@pytest.mark.nojit
@seed(15)
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(bench_argv())
def test_bench_options_are_checked_before_any_work(capsys, monkeypatch, argv):
    """Every bench option list is refused in one line (exit 2) or starts only bounded runs: the
    timed runs are replaced by a recorder, so nothing is compiled or timed here."""
    from mrfq.analysis.cli import main
    from mrfq.router import bench

    ran = []

    def fake_pairs(w, services, reps, binary, binary_delays=None):
        ran.append((w.name, services, reps))
        return {"workload": w.name, "flows": w.flows, "services": services, "mrfq_msvc_per_cpu_s": 1.0,
                "mrfq_msvc_per_wall_s": 1.0, "c_msvc_per_cpu_s": None, "c_msvc_per_wall_s": None, "ratio": None,
                "pairs": reps}

    monkeypatch.setattr(bench, "run_pairs", fake_pairs)
    monkeypatch.setattr(bench, "build_c", lambda src: None)
    monkeypatch.setattr(bench, "time_reference", lambda n, reps: pytest.fail("extras ran"))
    monkeypatch.setattr(bench, "first_call_seconds", lambda: pytest.fail("extras ran"))
    monkeypatch.setattr(bench, "peak_memory_kb", lambda ns: pytest.fail("extras ran"))
    argv = argv if "--no-extras" in argv else argv + ["--no-extras"]
    code = main(argv)
    out, err = capsys.readouterr()
    if code == 0:
        assert err == "" and ran
        for _, services, reps in ran:
            assert 1000 <= services <= bench.MAX_BENCH_SERVICES and 1 <= reps <= bench.MAX_BENCH_REPS
        if "--json" in argv:
            json.loads(out, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
    else:
        assert code == 2 and not ran, err
        assert err.startswith("mrfq: error: ") and err.count("\n") == 1 and len(err) < 800, err


CLUSTER_PRESETS = {p.stem: tomllib.loads(p.read_text(encoding="utf-8"))
                   for p in sorted((ROOT / "flows" / "presets" / "cluster").glob("*.toml"))}
CLUSTER_FIELDS = ("resources", "run", "server", "node", "user", "traffic", "name", "description", "cluster")


@st.composite
def mutated_cluster_presets(draw):
    name = draw(st.sampled_from(sorted(CLUSTER_PRESETS)))
    d = copy.deepcopy(CLUSTER_PRESETS[name])
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(d)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        tgt = d
        for p in path[:-1]:
            tgt = tgt[p]
        if draw(st.booleans()) and draw(st.booleans()):
            del tgt[path[-1]]
        else:
            tgt[path[-1]] = draw(SPECIAL)
    if draw(st.integers(0, 4)) == 0:  # a key the preset lacks
        table = draw(st.sampled_from(["run", "traffic"]))
        key = draw(st.sampled_from(["duration", "warmup", "seed", "samples", "rate"]))
        if isinstance(d.get(table, {}), dict):
            d.setdefault(table, {})[key] = draw(SPECIAL)
    return name, d


@pytest.mark.nojit
@seed(16)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_cluster_presets())
def test_cluster_gate_accepts_or_refuses_in_one_line(case):
    from mrfq.flows.cluster import MAX_TASKS, cluster_from_dict, expected_tasks

    name, d = case
    try:
        sc = cluster_from_dict(d, name=name)
    except ScenarioError as e:
        msg = str(e)
        assert "\n" not in msg and len(msg) < 600, msg[:200]
        head = msg.split(":", 1)[0].split(" ", 1)[0]
        assert head.split(".")[0].split("[")[0] in CLUSTER_FIELDS, f"message does not start with a field: {msg[:200]}"
        return
    assert expected_tasks(sc) <= MAX_TASKS  # an accepted scenario's run is bounded
    assert sc.capacity().shape == (sum(s.count for s in sc.servers), sc.n_resources)


@st.composite
def nested_toml(draw):
    """``x = `` and arrays / inline tables nested 0 to 1,200 deep, sometimes broken, sometimes
    behind a string or a comment full of brackets."""
    depth = draw(st.integers(0, 1200))
    kinds = draw(st.lists(st.sampled_from(["[", "{a = ", "[1, "]), min_size=1, max_size=3))
    opens = [kinds[i % len(kinds)] for i in range(depth)]
    closes = "".join("]" if o[0] == "[" else "}" for o in reversed(opens))
    text = "x = " + "".join(opens) + draw(st.sampled_from(["1", '"]}"', "", "[]", "{}"])) + closes + "\n"
    if draw(st.booleans()):
        text = draw(st.sampled_from(['s = "' + "[" * 500 + '"\n', "# " + "{" * 500 + "\n",
                                     "d = '''" + "[" * 500 + "'''\n", "[[flow]]\ncost = [1.0]\n"])) + text
    if draw(st.integers(0, 5)) == 0 and len(text) > 5:  # break it somewhere
        i = draw(st.integers(0, len(text) - 1))
        text = text[:i] + text[i + 1:]
    return depth, text


@pytest.mark.nojit
@seed(17)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                   HealthCheck.function_scoped_fixture])
@given(case=nested_toml())
def test_nested_toml_is_read_or_refused_in_one_line(tmp_path, case):
    from mrfq.flows.validate import MAX_NESTING, read_toml

    depth, text = case
    p = tmp_path / "n.toml"
    p.write_text(text, encoding="utf-8")
    try:
        d = read_toml(p, what="scenario", max_bytes=10 * 2**20, missing_hint="")
    except ScenarioError as e:
        msg = str(e)
        assert msg.startswith(f"{p}: ") and "\n" not in msg and len(msg) < 600, msg[:300]
        return
    assert isinstance(d, dict) and depth <= MAX_NESTING + 1  # a broken file may have lost a level


TRACE_PIECES = st.one_of(
    st.text(alphabet='0123456789.,"\n\r ab-e', max_size=40),
    st.builds(lambda n, c: c * n, st.integers(9_000, 300_000), st.sampled_from(["1", '"', ",", "a", "\n"])),
    st.sampled_from(["0,a,1", "1,b,2", '2,"a",3', '3,"a\n', "nan,a,1", "1,zzz,1"]))


@pytest.mark.nojit
@seed(18)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                   HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(TRACE_PIECES, max_size=6), kind=st.sampled_from(["packet", "cluster"]))
def test_hostile_traces_are_read_or_refused_in_one_line(tmp_path, pieces, kind):
    from mrfq.flows.cluster import _read_trace
    from mrfq.flows.traffic import read_arrival_trace

    p = tmp_path / "t.csv"
    header = "time,class,packets" if kind == "packet" else "time,user,tasks"
    p.write_text(header + "\n" + "\n".join(pieces) + "\n", encoding="utf-8")
    try:
        if kind == "packet":
            read_arrival_trace("traffic.trace", p, ["a", "b"])
        else:
            _read_trace(p, ["a", "b"])
    except ScenarioError as e:
        msg = str(e)
        assert msg.startswith("traffic.trace") and "\n" not in msg and len(msg) < 600, msg[:300]


@pytest.mark.nojit
@seed(19)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 3000), length=st.integers(6, 100))
def test_messages_list_a_handful_of_names(n, length):
    from mrfq.flows.cluster import cluster_from_dict

    names = [("x" * length + f"_{i}")[-length:] for i in range(n)]  # distinct, `length` characters
    d = {"resources": ["cpu"], "server": [{"capacity": [4.0]}],
         "node": [{"name": x} for x in names] + [{"name": "last", "parent": "nowhere"}]}
    with pytest.raises(ScenarioError) as e:
        cluster_from_dict(d)
    msg = str(e.value)
    assert msg.startswith(f"node[{n}].parent = 'nowhere': not a [[node]]; use 'root' or one of ")
    assert len(msg) < 600 and ("more" in msg) == (n + 1 > 6), msg[:300]  # n nodes and "last" (root named apart)


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_cli", ROOT / "scripts" / "fuzz_cli.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.nojit
def test_fuzz_script_toml_writer_round_trips():
    mod = _fuzz_module()
    for d in list(PRESETS.values()) + list(CLUSTER_PRESETS.values()):
        assert tomllib.loads(mod.to_toml(d)) == d
    odd = {"resources": ["a"], "run": {"seed": math.inf, "x": 2**63}, "flow": [{"cost": [5e-324], "n": "é"}]}
    back = tomllib.loads(mod.to_toml(odd))
    assert back["run"]["seed"] == math.inf and back["run"]["x"] == 2**63 and back["flow"][0]["cost"] == [5e-324]


@pytest.mark.slow
def test_fuzz_campaign_every_case_clean_or_accepted(tmp_path):
    """scripts/fuzz_cli.py at a reduced size: no traceback, no internal error, no hang, strict JSON.
    No warm-up: the 180 s cap per case leaves room for a first compilation of a loop variant."""
    n_scen, n_cli, n_bench, n_cluster = int(scaled(100, 20)), int(scaled(40, 10)), int(scaled(20, 5)), int(scaled(60, 10))
    out = tmp_path / "fuzz.json"
    env = dict(os.environ)
    subprocess.run([sys.executable, str(ROOT / "scripts" / "fuzz_cli.py"), "--module", "mrfq.analysis.cli",
                    "--scenarios", str(n_scen), "--cli", str(n_cli), "--bench", str(n_bench), "--cluster", str(n_cluster),
                    "--seed", "21", "--cap", "180", "--no-warm",
                    "--json", str(out)], env=env, check=True, timeout=3600, capture_output=True)
    d = json.loads(out.read_text())
    bad = [c for c in d["cases"] if c["outcome"] not in ("clean", "accepted")]
    assert not bad, bad[:5]
    assert d["counts"]["scenarios"]["cases"] == n_scen and d["counts"]["cli"]["cases"] == n_cli
    assert d["counts"]["bench"]["cases"] == n_bench and d["counts"]["cluster"]["cases"] == n_cluster
