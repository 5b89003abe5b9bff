"""Flow arrivals drawn once (flows/traffic.py): streams, chunks, size laws, traces, and the three consumers.

The engine, the SimPy reference and the fluid path must see IDENTICAL arrivals (time, class,
packets, value by value), whatever the size law, a trace, or how the engine's chunks cut the
stream.  Size laws are checked on hand-computed quantiles and on their means; traces and laws on
their one-line, field-named errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrfq import flows
from mrfq.flows.traffic import CHUNK, ArrivalStream, SizeLaw, arrivals_until, class_cdf, cost_key, seed_streams

TWO_CLASSES = {
    "resources": ["cpu", "link"], "router": {"scheduler": "bmf-wfq", "window": 3},
    "run": {"duration": 60.0, "seed": 11, "max_flows": 200},  # class load 1.65 at link: an overload run
    "class": [{"name": "a", "cost": [0.25, 0.5], "rate": 0.6, "mean_packets": 4.0},
              {"name": "b", "cost": [0.5, 0.25], "rate": 0.3, "size": {"law": "pareto", "alpha": 1.5, "mean": 6.0}}]}


def scenario(**changes):
    d = {k: (v.copy() if isinstance(v, dict) else v) for k, v in TWO_CLASSES.items()}
    d["class"] = [dict(c) for c in TWO_CLASSES["class"]]
    for k, v in changes.items():
        d[k] = v
    return flows.from_dict(d)


def write_trace(tmp_path, rows: str, classes=("web", "ipsec"), duration=50.0, window=2, scheduler="drfq",
                raw: bytes | None = None):
    (tmp_path / "a.csv").write_bytes(raw if raw is not None else rows.encode())
    names = ", ".join(f'{{name = "{c}", cost = [{0.25 * (i + 1)}, {1.0 - 0.25 * i}]}}' for i, c in enumerate(classes))
    toml = (f'resources = ["cpu", "link"]\nclass = [{names}]\n[router]\nscheduler = "{scheduler}"\n'
            f'window = {window}\n[run]\nduration = {duration}\n[traffic]\ntrace = "a.csv"\n')
    p = tmp_path / "s.toml"
    p.write_text(toml)
    return p


# ---------------------------------------------------------------------------
# the spawn tree and the chunk contract (pure numpy: also runs without the JIT)
@pytest.mark.nojit
def test_spawn_tree_is_the_documented_one():
    sc = scenario()
    arr, costs = np.random.SeedSequence(11).spawn(2)
    times_ss, classes_ss, sizes_ss = arr.spawn(3)
    t, k, L = ArrivalStream(sc).take(50)
    lam = 0.6 + 0.3
    gaps = np.random.Generator(np.random.PCG64(times_ss)).exponential(1.0 / lam, 50)
    assert t.tolist() == np.cumsum(gaps).tolist()       # t_n = t_{n-1} + e_n, left to right
    u = np.random.Generator(np.random.PCG64(classes_ss)).random(50)
    assert k.tolist() == [0 if x < 0.6 / 0.9 else 1 for x in u]
    uu = np.random.Generator(np.random.PCG64(sizes_ss)).random((50, 2))
    # class a: geometric of mean 4 by inversion
    want_a = [max(1, math.ceil(math.log1p(-x) / math.log1p(-0.25))) for x in uu[k == 0, 0]]
    assert L[k == 0].tolist() == want_a
    # the packet-size hash key is the first word of child 1, as before the arrival streams split
    assert cost_key(11) == int(costs.generate_state(1, np.uint32)[0])
    assert seed_streams(11)[3] == cost_key(11)


@pytest.mark.nojit
@settings(deadline=None, max_examples=60)
@given(cuts=st.lists(st.integers(0, 40), min_size=1, max_size=12), seed=st.integers(0, 2**31),
       law=st.sampled_from(["geometric", "pareto", "lognormal", "deterministic"]))
def test_values_do_not_depend_on_chunk_sizes(cuts, seed, law):
    size = {"geometric": {"law": "geometric", "mean": 3.0}, "pareto": {"law": "pareto", "alpha": 1.2, "mean": 9.0},
            "lognormal": {"law": "lognormal", "sigma": 1.5, "mean": 5.0},
            "deterministic": {"law": "deterministic", "packets": 7}}[law]
    d = dict(TWO_CLASSES, run={"seed": seed, "max_flows": 6000})  # 6000 time units of overload
    d["class"] = [dict(TWO_CLASSES["class"][0]), dict(TWO_CLASSES["class"][1], size=size)]
    sc = flows.from_dict(d)
    n = sum(cuts)
    whole = ArrivalStream(sc).take(n)
    s = ArrivalStream(sc)
    parts = [s.take(c) for c in cuts]
    for i, dtype in enumerate((np.float64, np.int64, np.int64)):
        got = np.concatenate([p[i] for p in parts])
        assert got.dtype == dtype and all(p[i].flags.c_contiguous for p in parts)
        assert got.tolist() == whole[i].tolist()


@pytest.mark.nojit
def test_size_law_changes_only_the_sizes():
    """Times and classes come from their own streams: another size law leaves them alone."""
    a = ArrivalStream(scenario()).take(300)
    d = dict(TWO_CLASSES)
    d["class"] = [dict(c) for c in TWO_CLASSES["class"]]
    d["class"][1]["size"] = {"law": "deterministic", "packets": 6}
    b = ArrivalStream(flows.from_dict(d)).take(300)
    assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    assert set(b[2][b[1] == 1].tolist()) == {6}
    assert a[2][a[1] == 0].tolist() == b[2][b[1] == 0].tolist()


@pytest.mark.nojit
def test_class_cdf_and_until():
    assert class_cdf([1.0, 2.0, 1.0]).tolist() == [0.25, 0.75, 1.0]
    sc = scenario()
    t, k, L = arrivals_until(sc, 11, 30.0)
    t2, _, _ = ArrivalStream(sc).take(len(t) + 1)
    assert t.tolist() == t2[:-1].tolist() and t2[-1] > 30.0 >= t[-1]


# ---------------------------------------------------------------------------
# size laws: hand-computed quantiles, exact means
@pytest.mark.nojit
def test_size_laws_on_hand_computed_uniforms():
    u = np.array
    # geometric, p = 1/2: P(L > n) = 2^-n, L = ceil(log(1 - u) / log(1/2))
    assert SizeLaw("geometric", 2.0).sizes(u([0.0, 0.5, 0.75, 0.875]), u([0.0] * 4)).tolist() == [1, 1, 2, 3]
    assert SizeLaw("geometric", 1.0).sizes(u([0.9]), u([0.9])).tolist() == [1]
    # pareto alpha 2, mean 4: x_m = 2; 1 - u1 = 9/16 gives X = 2 * 4/3 = 8/3, rounded up iff u2 < 2/3
    par = SizeLaw("pareto", 4.0, alpha=2.0)
    assert par.sizes(u([0.4375, 0.4375, 0.75, 0.0]), u([0.5, 0.7, 0.99, 0.5])).tolist() == [3, 2, 4, 2]
    # lognormal sigma 1, mean 3: u1 = 1/2 gives z = 0, Y = 2 exp(-1/2) = 1.213..., L = 2 + [u2 < 0.213...]
    ln = SizeLaw("lognormal", 3.0, sigma=1.0)
    assert ln.sizes(u([0.5, 0.5, 0.0]), u([0.1, 0.5, 0.0])).tolist() == [3, 2, 1]
    assert SizeLaw("deterministic", 7.0).sizes(u([0.3, 0.9]), u([0.1, 0.2])).tolist() == [7, 7]


@pytest.mark.nojit
@pytest.mark.parametrize("law", [SizeLaw("geometric", 50.0), SizeLaw("pareto", 10.0, alpha=2.5),
                                 SizeLaw("lognormal", 30.0, sigma=1.0), SizeLaw("deterministic", 12.0)])
def test_size_law_means_are_matched(law):
    """E[L] = mean: within 4 standard errors on 400 000 flows (each law has a finite variance here)."""
    uu = np.random.Generator(np.random.PCG64(2024)).random((400_000, 2))
    L = law.sizes(uu[:, 0], uu[:, 1])
    assert L.min() >= 1 and L.dtype == np.int64
    se = L.std() / math.sqrt(len(L))
    assert abs(L.mean() - law.mean) <= 4 * se + 1e-12, (L.mean(), se)


@pytest.mark.nojit
def test_pareto_tail_index():
    """P(L > n) ~ (x_m / n)^alpha: at n = 100 x_m the empirical tail is within 5 % of 10^-3 (alpha 1.5)."""
    law = SizeLaw("pareto", 30.0, alpha=1.5)    # x_m = 10
    uu = np.random.Generator(np.random.PCG64(7)).random((2_000_000, 2))
    L = law.sizes(uu[:, 0], uu[:, 1])
    assert (L > 1000).mean() == pytest.approx(1e-3, rel=0.05)


# ---------------------------------------------------------------------------
# scenario validation: one line, the field named
@pytest.mark.nojit
@pytest.mark.parametrize("size,needle", [
    ({"law": "weibull", "mean": 3}, "class[1].size.law = 'weibull': unknown"),
    ({"law": "pareto", "alpha": 1.0, "mean": 100}, "class[1].size.alpha = 1.0: must be > 1"),
    ({"law": "pareto", "alpha": 0.5, "mean": 100}, "no finite mean"),
    ({"law": "pareto", "alpha": 1.5, "mean": 2}, "class[1].size.mean = 2: must be >= alpha / (alpha - 1) = 3"),
    ({"law": "pareto", "mean": 100}, "class[1].size.alpha: missing"),
    ({"law": "lognormal", "sigma": 0, "mean": 10}, "class[1].size.sigma = 0: out of range; must be > 0"),
    ({"law": "lognormal", "sigma": 1, "mean": 1}, "class[1].size.mean = 1: must be > 1"),
    ({"law": "deterministic", "packets": 0}, "class[1].size.packets = 0: out of range; must be a whole number >= 1"),
    ({"law": "deterministic", "packets": 2.5}, "class[1].size.packets = 2.5: must be a whole number"),
    ({"law": "geometric", "mean": 0.5}, "class[1].size.mean = 0.5: out of range; must be >= 1"),
    ({"law": "geometric", "mean": 3, "alpha": 2}, "class[1].size: unknown key 'alpha'"),
    ("pareto", "class[1].size = 'pareto': must be a table"),
])
def test_bad_size_laws(size, needle):
    d = dict(TWO_CLASSES)
    d["class"] = [dict(TWO_CLASSES["class"][0]), dict(TWO_CLASSES["class"][1], size=size)]
    with pytest.raises(flows.ScenarioError) as e:
        flows.from_dict(d)
    assert needle in str(e.value) and "\n" not in str(e.value)


@pytest.mark.nojit
def test_mean_packets_is_the_geometric_shorthand():
    d = dict(TWO_CLASSES)
    d["class"] = [dict(TWO_CLASSES["class"][0], mean_packets=None), TWO_CLASSES["class"][1]]
    del d["class"][0]["mean_packets"]
    d["class"][0]["size"] = {"law": "geometric", "mean": 4.0}
    assert flows.from_dict(d) == scenario()
    d["class"][0]["mean_packets"] = 4.0
    with pytest.raises(flows.ScenarioError, match=r"^class\[0\]: give either mean_packets or size"):
        flows.from_dict(d)
    sc = scenario()
    assert flows.from_dict(flows.to_dict(sc)) == sc and not sc.geometric_sizes
    assert flows.load_preset("br-unbalanced").geometric_sizes
    assert flows.load_preset("br-unbalanced-pareto").classes[0].size_law == SizeLaw("pareto", 20000.0, alpha=1.5)


# ---------------------------------------------------------------------------
# traces
@pytest.mark.nojit
def test_trace_is_read_relative_to_the_scenario_file(tmp_path):
    p = write_trace(tmp_path, "time,class,packets\n0.5,web,3\n2,ipsec,1\n2,web,4\n")
    sc = flows.load_scenario(p)
    assert ArrivalStream(sc).take(10)[0].tolist() == [0.5, 2.0, 2.0]
    s = ArrivalStream(sc)
    assert [x.tolist() for x in s.take(2)] == [[0.5, 2.0], [0, 1], [3, 1]]
    assert [x.tolist() for x in s.take(5)] == [[2.0], [0], [4]]
    assert [len(x) for x in s.take(5)] == [0, 0, 0]
    assert [(c.name, c.rate, c.mean_packets) for c in sc.classes] == [("web", 1.0, 3.5), ("ipsec", 0.5, 1.0)]
    assert flows.from_dict(flows.to_dict(sc)) == sc and not sc.geometric_sizes


@pytest.mark.nojit
@pytest.mark.parametrize("rows,needle", [
    ("time,class,packets\n1,web,2\n-1,web,2\n", "a.csv line 3: time = -1: must be a finite number >= 0"),
    ("time,class,packets\n3,web,2\n1,web,2\n", "a.csv line 3: time = 1: decreases"),
    ("time,class,packets\n1,video,2\n", "a.csv line 2: class = 'video': unknown; the scenario's classes are web, ipsec"),
    ("time,class,packets\n1,web,2.5\n", "a.csv line 2: packets = '2.5': must be a whole number >= 1"),
    ("time,class,packets\n1,web,0\n", "a.csv line 2: packets = '0': must be a whole number >= 1"),
    ("time,class,packets\n1,web,many\n", "a.csv line 2: packets = 'many'"),
    ("time,class,packets\nsoon,web,2\n", "a.csv line 2: time = 'soon': must be a number"),
    ("time,class,packets\n1,web\n", "a.csv line 2: 2 fields: must be 3"),
    ("t,c,n\n1,web,2\n", "a.csv line 1: header"),
    ("", "a.csv: empty; its first line must be the header 'time,class,packets'"),
])
def test_bad_traces(tmp_path, rows, needle):
    p = write_trace(tmp_path, rows)
    with pytest.raises(flows.ScenarioError) as e:
        flows.load_scenario(p)
    msg = str(e.value)
    assert msg.startswith("traffic.trace: ") and needle in msg and "\n" not in msg, msg


@pytest.mark.nojit
def test_bad_trace_encoding_and_fields(tmp_path):
    p = write_trace(tmp_path, "", raw=b"time,class,packets\n1,web,2\n2,w\xe9b,1\n")
    with pytest.raises(flows.ScenarioError, match=r"^traffic.trace: .*a.csv line 3: not UTF-8 text \(byte 0xe9\)"):
        flows.load_scenario(p)
    p = write_trace(tmp_path, "time,class,packets\n")
    (tmp_path / "a.csv").unlink()
    with pytest.raises(flows.ScenarioError, match=r"^traffic.trace = '.*a.csv': no such file$"):
        flows.load_scenario(p)
    p.write_text(p.read_text().replace('class = [{name = "web", cost', 'class = [{name = "web", rate = 1.0, cost'))
    (tmp_path / "a.csv").write_text("time,class,packets\n")
    with pytest.raises(flows.ScenarioError, match=r"^class\[0\]\.rate: not allowed with traffic.trace"):
        flows.load_scenario(p)


@pytest.mark.nojit
def test_bad_trace_is_exit_2_in_the_cli(tmp_path, capsys):
    from mrfq.analysis.cli import main

    p = write_trace(tmp_path, "time,class,packets\n1,web,2\n0.5,web,1\n")
    assert main(["run", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a.csv line 3: time = 0.5: decreases" in err
    toml = tmp_path / "z.toml"
    toml.write_text('resources = ["cpu", "link"]\n[[class]]\ncost = [1.0, 1.0]\nrate = 1.0\n'
                    'size = {law = "zipf", mean = 3}\n')
    assert main(["run", str(toml)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "class[0].size.law = 'zipf': unknown" in err


# ---------------------------------------------------------------------------
# the three consumers see the same arrivals
def three_way(sc, chunk=CHUNK):
    from mrfq.analysis.fluid_path import fluid_path
    from mrfq.router.reference import simulate_reference, trace_tuples
    from mrfq.router.run import simulate

    eng = simulate(sc, trace=100_000, arrival_chunk=chunk)
    ref = simulate_reference(sc)
    assert trace_tuples(eng.trace) == ref.trace
    assert eng.arrivals.rows() == ref.arrivals
    fp = fluid_path(sc, "drf", sc.run.seed, batches=sc.run.batches, keep_arrivals=True)["arrivals"]
    n_static = len(sc.flows)
    assert [(n_static + i, t, k, L) for i, (t, k, L) in
            enumerate(zip(fp["times"], fp["classes"], fp["sizes"]))] == ref.arrivals
    return eng, ref


@pytest.mark.parametrize("scheduler", ["drfq", "bmf-wfq", "pf-sfq"])
def test_engine_reference_and_fluid_path_see_identical_arrivals(scheduler):
    eng, ref = three_way(scenario(router={"scheduler": scheduler, "window": 3}))
    assert len(ref.arrivals) > 40 and {k for _, _, k, _ in ref.arrivals} == {0, 1}


@pytest.mark.parametrize("chunk", [1, 2, 7])
def test_engine_chunks_do_not_change_the_run(chunk):
    """Chunks of 1, 2, 7 arrivals (MORE_ARRIVALS many times, with flows still due) give the same
    service trace as the default chunk and as the reference."""
    three_way(scenario(router={"scheduler": "drfq-dovetail", "window": 2}), chunk=chunk)


def test_trace_preset_runs_and_outlasts_its_trace():
    sc = flows.load_preset("trace-small")
    eng, ref = three_way(sc)
    assert [(u, t, k, L) for u, t, k, L in ref.arrivals][:4] == [(0, 0.0, 0, 5), (1, 1.5, 1, 3), (2, 2.0, 0, 12),
                                                                  (3, 2.0, 1, 4)]
    assert [c.arrived for c in eng.classes] == [7, 5] and [c.completed for c in eng.classes] == [7, 5]
    assert sum(L for *_, L in ref.arrivals) == 95


@pytest.mark.parametrize("chunk", [3, CHUNK])
def test_simultaneous_trace_arrivals_grow_the_flow_table(tmp_path, chunk):
    """150 flows arrive at the same instant (more than the engine's 64 free rows, across chunk
    boundaries): all are tagged before any service starts, exactly as in the reference."""
    rows = "time,class,packets\n" + "".join(f"1.0,{'web' if i % 3 else 'ipsec'},{1 + i % 4}\n" for i in range(150))
    rows += "2.0,web,2\n"
    sc = flows.load_scenario(write_trace(tmp_path, rows, duration=400.0, scheduler="pf-sfq"))
    eng, ref = three_way(sc, chunk=chunk)
    assert ref.max_active_flows == 151 and eng.max_active_flows == 151   # the flow at 2.0 finds all still there
    assert [c.completed for c in eng.classes] == [101, 50]


def test_compare_flags_non_geometric_rows(tmp_path, capsys):
    """With Pareto sizes the fluid value is the geometric Markov model's: every row says
    insensitivity_guaranteed = false and the table marks it; with geometric sizes it is true."""
    import json

    from mrfq.analysis.cli import main

    d = flows.to_dict(flows.load_preset("br-unbalanced-pareto"))
    p = tmp_path / "par.toml"   # the preset with flows of mean 200 packets (a short run)
    lines = ['resources = ["cpu", "link"]', "[traffic]", "load = 0.5"]
    for c in d["class"]:
        lines += ["[[class]]", f'name = "{c["name"]}"', f"cost = {c['cost']}", f"share = {c['share']}",
                  'size = {law = "pareto", alpha = 1.5, mean = 200}']
    p.write_text("\n".join(lines) + "\n")
    args = ["compare", str(p), "--loads", "0.5", "--schedulers", "bmf-wfq", "--replications", "2",
            "--max-replications", "2", "--flows", "60", "--results", str(tmp_path / "r.sqlite"), "--workers", "1"]
    assert main(args + ["--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert len(rows) == 3 and all(r["insensitivity_guaranteed"] is False for r in rows)
    assert all("control variate" in r["estimator"] for r in rows)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "insensitivity to the size law is not guaranteed" in out
    assert sum("*" in line for line in out.splitlines() if line.startswith("  bmf-wfq")) == 3
