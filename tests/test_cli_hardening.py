"""Every bad input is a clean refusal (one line, exit 2), before any work: bad values, deeply
nested TOML, over-long trace lines, paths that are not regular files, no command at all, huge
values and name lists (shortened), a results file on a full disk; strict JSON; the last line of
defence; Ctrl-C."""

import json
import math
import os
import signal
import subprocess
import sys
import time
import tomllib

import pytest

from mrfq import flows
from mrfq.analysis.cli import main
from mrfq.flows.cli_args import dumps_strict, parse_int, parse_loads, parse_number
from mrfq.flows.errors import MrfqError, ScenarioError


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def strict_json(text: str):
    """Parse with NaN/Infinity refused (RFC 8259)."""
    def no_constant(c):
        raise ValueError(f"non-standard JSON constant {c}")
    return json.loads(text, parse_constant=no_constant)


def assert_clean(code, err, needle):
    assert code == 2, err
    assert err.startswith("mrfq: error: ") and err.count("\n") == 1, err
    assert needle in err, err
    assert "Traceback" not in err
    assert len(err) < 600, f"error message too long ({len(err)} characters)"


# ---------------------------------------------------------------------------
# bad scenarios, as TOML files
BASE = 'resources = ["cpu", "link"]\n'
STATIC = '[[flow]]\ncost = [1.0, 0.5]\n'
CASES_TOML = [
    (BASE + "[router]\nwindow = nan\n" + STATIC, "router.window = nan: must be a finite whole number in [1, 4,096]"),
    (BASE + "[router]\nwindow = inf\n" + STATIC, "router.window = inf"),
    (BASE + "[router]\nwindow = 16777216\n" + STATIC, "router.window = 16777216: out of range"),
    (BASE + "[router]\nwindow = 1000000000000000000000000000000\n" + STATIC, "must be a whole number in [1, 4,096]"),
    (BASE + "[run]\nbatches = 1e8\n" + STATIC, "run.batches = 100000000.0: out of range"),
    (BASE + "[run]\nbatches = 1e15\n" + STATIC, "run.batches"),
    (BASE + "[run]\nseed = nan\n" + STATIC, "run.seed = nan"),
    (BASE + "[run]\nmax_services = 9223372036854775808\n" + STATIC, "run.max_services"),
    (BASE + "[[flow]]\ncost = [1.0, 0.5]\npackets = 1e308\n", "flow[0].packets"),
    (BASE + "[[flow]]\ncost = [1.0, 0.5]\npackets = 9223372036854775808\n", "flow[0].packets"),
    (BASE + "[[class]]\ncost = [1.0, 0.5]\nrate = 1000\nmean_packets = 1\n",
     "class load 1000 at resource 'cpu'"),
    (BASE + "[[class]]\ncost = [1.0, 0.5]\nrate = 0.01\nmean_packets = 100\n",
     "class load 1 at resource 'cpu' (sum of rate x mean_packets x cost) is >= 1, so flows pile up"),
    (BASE + "[[class]]\ncost = [1.0, 0.5]\nrate = 1e308\nmean_packets = 1\n", "class[0].rate = 1e+308: out of range"),
    ('resources = ["cpu"]\n[router]\nwindow = 2\n[[flow]]\ncost = [5e-324]\n[[flow]]\ncost = [1.0]\n',
     "flow[0].cost[0] = 4.94066e-324: a positive time per packet must be >= 1e-12 x the largest"),
    ('resources = ["cpu"]\n[[flow]]\ncost = [1e-300]\n', "run.duration = 6000: too long for the time per packet"),
    (BASE + "[traffic]\nload = 0.5\n[[class]]\ncost = [1.0, 0.5]\nshare = 1\nrate = 0.1\n",
     "class[0].rate = 0.1: given with [traffic] load, which sets every class rate from its share (load wins)"),
    (BASE + "[[class]]\ncost = [1.0, 0.5]\nshare = 1\nrate = 0.0001\n", "class[0].share = 1: only used with"),
    (BASE + '[router]\nscheduler = "' + "x" * 1_000_000 + '"\n' + STATIC, "router.scheduler = 'xxxxx"),
    (BASE + "[run]\nduration = 1e308\n" + STATIC, "run.duration = 1e+308: out of range"),
    (BASE + "[[flow]]\ncost = [1e30, 0.5]\n", "flow[0].cost[0] = 1e+30: out of range; must be in [0, 1e+12]"),
    (BASE + "[[flow]]\ncost = [1.0, 0.5]\nweight = 1e-320\n", "flow[0].weight"),
    (BASE + "[router]\nwindow = 4096\n" + "[[flow]]\ncost = [1.0, 0.5]\n" * 44000,
     "router.window = 4096: with 44000 static flows the flow table would need 4.04 GiB (at most 4)"),
    (BASE + "[run]\nduration = 1e11\n" + STATIC, "run.duration = 1e+11: up to 3e+11 packet services"),
    (BASE + "[run]\nmax_flows = 100\n[[class]]\ncost = [1.0, 0.5]\nrate = 10\nmean_packets = 1\n",
     "run.max_flows = 100: the run can hold up to"),
]


@pytest.mark.nojit
@pytest.mark.parametrize("text,needle", CASES_TOML, ids=[f"toml{i}" for i in range(len(CASES_TOML))])
def test_bad_scenarios_are_refused_naming_the_field(capsys, tmp_path, text, needle):
    p = tmp_path / "s.toml"
    p.write_text(text, encoding="utf-8")
    # the scenario's own duration where the case is about it, else a short run
    extra = [] if "run.duration" in needle else ["--duration", "2000"]
    code, out, err = run_cli(capsys, "run", str(p), *extra, "--json")
    assert_clean(code, err, needle)
    assert out == ""


@pytest.mark.nojit
def test_huge_value_is_shortened_in_the_message():
    with pytest.raises(ScenarioError) as e:
        flows.from_dict({"resources": ["a"], "router": {"scheduler": "y" * 1_000_000}, "flow": [{"cost": [1.0]}]})
    msg = str(e.value)
    assert len(msg) < 300 and "(1,000,002 characters)" in msg


@pytest.mark.nojit
def test_utf8_with_and_without_bom_other_encodings_refused(capsys, tmp_path):
    text = 'name = "café"\nresources = ["cpu"]\n[run]\nduration = 50.0\n[[flow]]\ncost = [1.0]\n'
    a, b, c = tmp_path / "a.toml", tmp_path / "b.toml", tmp_path / "c.toml"
    a.write_bytes(text.encode("utf-8"))
    b.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    c.write_bytes(text.encode("latin-1"))
    assert flows.load_scenario(a) == flows.load_scenario(b)
    assert flows.load_scenario(a).name == "café"
    with pytest.raises(ScenarioError, match=r"not UTF-8 text \(byte 0xe9 at offset 11\); save the scenario"):
        flows.load_scenario(c)


@pytest.mark.nojit
def test_overload_run_needs_an_explicit_flow_cap():
    d = {"resources": ["cpu", "link"], "run": {"duration": 1e6},
         "class": [{"cost": [0.5, 1.0], "rate": 0.6, "mean_packets": 2}]}
    # class load at link: 0.6 * 2 * 1.0 = 1.2; 600000 expected arrivals + 6 sd (4647.6) + 10 = 604657.6
    with pytest.raises(ScenarioError, match=r"^class\[\*\]\.rate: class load 1.2 at resource 'link' .* flows pile up; "
                                            r".*explicit flow cap: run.max_flows >= 604658 \(this run can bring "
                                            r"6.047e\+05 flows\)$"):
        flows.from_dict(d)
    d["run"]["max_flows"] = 604_657
    with pytest.raises(ScenarioError, match=r"run.max_flows = 604657: the run can hold up to 6.047e\+05 flows"):
        flows.from_dict(d)
    d["run"]["max_flows"] = 604_658
    sc = flows.from_dict(d)
    assert sc.run.max_flows == 604_658
    assert flows.from_dict(flows.to_dict(sc)) == sc


@pytest.mark.nojit
def test_short_overload_run_needs_the_flow_cap_too():
    """No exemption for a short run: 60 expected arrivals still need run.max_flows (60 + 46.48 + 10)."""
    d = {"resources": ["cpu", "link"], "run": {"duration": 100.0},
         "class": [{"cost": [0.5, 1.0], "rate": 0.6, "mean_packets": 2}]}
    with pytest.raises(ScenarioError, match=r"class load 1.2 at resource 'link'.*run.max_flows >= 117 "):
        flows.from_dict(d)
    d["run"]["max_flows"] = 116
    with pytest.raises(ScenarioError, match=r"run.max_flows = 116: the run can hold up to 116.5 flows"):
        flows.from_dict(d)
    d["run"]["max_flows"] = 117
    assert flows.from_dict(d).class_resource_loads() == pytest.approx((0.6, 1.2))
    # load exactly 1 (0.5 x 2 x 1.0) is overload too; just below 1 needs no cap
    d["class"][0]["rate"], d["run"] = 0.5, {"duration": 100.0}
    with pytest.raises(ScenarioError, match=r"class load 1 at resource 'link'"):
        flows.from_dict(d)
    d["class"][0]["rate"] = 0.4995
    assert flows.from_dict(d).run.max_flows == 0
    # the most loaded resource is named: cpu here (1.5 x 2 x 0.5 = 1.5 > 1.5 x 2 x 0.25)
    d["class"][0].update(rate=1.5, cost=[0.5, 0.25])
    with pytest.raises(ScenarioError, match=r"class load 1.5 at resource 'cpu'"):
        flows.from_dict(d)


@pytest.mark.nojit
def test_rates_from_load_or_a_trace_need_no_flow_cap():
    # [traffic] load scales the rates below 1; a trace's empirical rates (trace-small: 1.3 at the
    # link) bring a finite list of flows
    assert flows.load_preset("dynamic-small").run.max_flows == 0
    sc = flows.load_preset("trace-small")
    assert max(sc.class_resource_loads()) > 1 and sc.run.max_flows == 0


@pytest.mark.nojit
def test_max_flows_default_keeps_scenario_digests():
    # the key is left out of to_dict when 0, so stores written before it still match
    sc = flows.load_preset("br-unbalanced")
    assert "max_flows" not in flows.to_dict(sc)["run"]


def test_short_run_json_is_strict_null_not_nan(capsys):
    # the run ends (max_services) before its warm-up: every rate is undefined
    code, out, err = run_cli(capsys, "run", "--preset", "dynamic-small", "--json", "--duration", "60000")
    assert code == 0, err
    strict_json(out)
    sc = flows.load_preset("dynamic-small").replace(**{"run.max_services": 5})
    from mrfq.router.run import simulate

    from mrfq.analysis.run_report import run_json

    d = strict_json(dumps_strict(run_json(simulate(sc))))
    assert d["services"] in (5, 6)  # the run ends with the instant at which 5 services have completed
    for c in d["classes"]:
        assert c["gamma"] is None and c["mean_flows"] is None and c["throughput"] is None


@pytest.mark.nojit
def test_dumps_strict():
    assert dumps_strict({"a": math.nan, "b": [math.inf, 1.5, -math.inf], "c": None}) == \
        '{"a": null, "b": [null, 1.5, null], "c": null}'


# ---------------------------------------------------------------------------
# bad command lines
CASES_ARGV = [
    (["alloc", "--cost", "1e308,1e308", "--cost", "1,0.5"], "--cost #1 = '1e308,1e308': 1e308 is out of range"),
    (["alloc", "--cost", "1e-320,1", "--cost", "1,0.5"], "1e-320 is out of range; each cost is 0 or in [1e-06, 1e+06]"),
    (["alloc", "--cost", "1,1", "--cost", "1,0.5", "--weight", "1e-320", "--weight", "1"],
     "--weight #1 = '1e-320': out of range; give a number in [1e-06, 1e+06]"),
    (["alloc", "--cost", "1_0,1"], "--cost #1 = '1_0,1': '1_0' is not a finite number"),
    (["compare", "--preset", "br-unbalanced", "--seed", "2000000000000000000000"], "argument --seed"),
    (["compare", "--preset", "br-unbalanced", "--loads", "0.1:0.2:1e-9"], "100,000,001 loads; at most 1,000"),
    (["compare", "--preset", "br-unbalanced", "--loads", "0.1:0.9:1e-300"],
     "--loads '0.1:0.9:1e-300': about 8e+299 loads; at most 1,000"),
    (["compare", "--preset", "br-unbalanced", "--loads", "0.1:0.9:5e-324"],
     "--loads '0.1:0.9:5e-324': more than 1.8e+308 loads; at most 1,000"),
    (["compare", "--preset", "br-unbalanced", "--flows", "1e12"], "argument --flows: '1e12': out of range"),
    (["compare", "--preset", "br-unbalanced", "--loads", "1e-300"], "--loads: load 1e-300 < 0.0001; the run lengths"),
    (["compare", "--preset", "br-unbalanced", "--schedulers", "drfq,drfq"], "--schedulers 'drfq,drfq': a name is given twice"),
    (["compare", "--preset", "br-unbalanced", "--schedulers", "drr2"], "--schedulers: unknown name 'drr2'"),
    (["fluid", "--preset", "br-unbalanced", "--load", "0.999"], "the exact solve (region truncation) gives up above load 0.99"),
    (["fluid", "--preset", "br-unbalanced", "--load", "0.97", "--truncation", "box"],
     "the exact solve (box truncation) gives up above load 0.96"),
    (["fluid", "--preset", "br-unbalanced", "--load", "0.5", "--truncation", "simplex"],
     "--truncation 'simplex': unknown; choose region or box"),
    (["fluid", "--preset", "br-unbalanced", "--method", "simulate", "--events", "1e20"],
     "--events = '1e20': out of range; give a whole number in [1,000, 100,000,000]"),
    (["fluid", "--preset", "br-unbalanced", "--loads", "0.3,0.6,x"], "--loads = 'x': not a number"),
    (["run", "--preset", "oracle-rates", "--trace-limit", "1e11", "--trace", "t.csv"],
     "argument --trace-limit: '1e11': out of range; give a whole number in [1, 10,000,000]"),
    (["run", "--preset", "oracle-rates", "--duration", "nan"], "argument --duration: 'nan': not a number"),
    (["run", "--preset", "oracle-rates", "--window", "1e30"], "argument --window: '1e30': out of range"),
    (["bench", "--services", "nan"], "argument --services: 'nan': not a number"),
    (["bench", "--services", "1e20"], "'1e20': out of range; give a whole number in [1,000, 10,000,000,000]"),
    (["bench", "--reps", "1e9"], "argument --reps: '1e9': out of range; give a whole number in [1, 100]"),
    (["bench", "--only", "nope", "--quick"], "--only 'nope' with --max-flows 100000 (the --quick default): no "
                                             "workload left; workloads: 3 static, drfq;"),
    (["bench", "--only", ""], "--only '': empty"),
    (["bench", "--c-source", "missing.c"], "--c-source 'missing.c': no such file"),
    (["fluid", "--preset", "br-unbalanced", "--time-limit", "-1"], "--time-limit = '-1': out of range"),
]


@pytest.mark.nojit
@pytest.mark.parametrize("argv,needle", CASES_ARGV, ids=[f"argv{i}" for i in range(len(CASES_ARGV))])
def test_bad_command_lines_are_refused_before_working(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    t0 = time.perf_counter()
    code, out, err = run_cli(capsys, *argv)
    assert_clean(code, err, needle)
    assert not (tmp_path / "mrfq-results.sqlite").exists()  # refused before the store was touched
    assert time.perf_counter() - t0 < 30


@pytest.mark.nojit
def test_output_paths_are_checked_before_any_work(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    for argv, needle in [
        (["compare", "--preset", "br-unbalanced", "--plot", "fig.unknownext"], "unknown figure format 'unknownext'"),
        (["compare", "--preset", "br-unbalanced", "--csv", "missing/t.csv"], "folder 'missing' does not exist"),
        (["compare", "--preset", "br-unbalanced", "--plot", "missing/f.png"], "folder 'missing' does not exist"),
        (["run", "--preset", "oracle-rates", "--trace", "adir"], "--trace 'adir': is a folder"),
        (["run", "--preset", "oracle-rates", "--trace", "missing/t.csv"], "does not exist"),
        (["fluid", "--preset", "br-unbalanced", "--plot", "f.nope"], "unknown figure format 'nope'"),
    ]:
        code, out, err = run_cli(capsys, *argv)
        assert_clean(code, err, needle)
        assert not (tmp_path / "mrfq-results.sqlite").exists()


@pytest.mark.nojit
def test_two_outputs_naming_one_file_are_refused_before_any_work(capsys, tmp_path, monkeypatch):
    """The second write would replace the first, or the results store: refused, the file untouched."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.sqlite").write_bytes(b"stored results")
    for argv, needle in [
        (["run", "--preset", "oracle-rates", "--trace", "x.csv", "--share-series", "./x.csv"],
         "--share-series './x.csv': the same file as --trace; give each output its own file"),
        (["run", "--preset", "oracle-rates", "--delays", "x.csv", "--trace", "x.csv"], "--delays 'x.csv': the same file as --trace"),
        (["compare", "--preset", "br-unbalanced", "--results", "keep.sqlite", "--csv", "keep.sqlite"],
         "--csv 'keep.sqlite': the same file as --results"),
        (["compare", "--preset", "br-unbalanced", "--csv", "mrfq-results.sqlite"], "the same file as --results"),
        (["scorecard", "--preset", "isolation", "--intervals", "1000,2000", "--plot", "f.png",
          "--plot-intervals", "f.png"], "--plot-intervals 'f.png': the same file as --plot"),
    ]:
        code, out, err = run_cli(capsys, *argv)
        assert_clean(code, err, needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.sqlite"]
    assert (tmp_path / "keep.sqlite").read_bytes() == b"stored results"


@pytest.mark.nojit
def test_one_load_grammar_everywhere():
    assert parse_loads("0.3,0.6") == [0.3, 0.6]
    assert parse_loads("0.1:0.3:0.1") == [0.1, 0.2, 0.3]
    assert parse_loads(" 0.5 ") == [0.5]
    for bad in ("0.1:0.9:1e-300", "0:0.9:1e-320", "0.1:" + "9" * 400 + ":1"):  # a huge count, not echoed whole
        with pytest.raises(MrfqError) as e:
            parse_loads(bad)
        assert len(str(e.value)) < 150 and "\n" not in str(e.value), str(e.value)
    for bad, msg in [("0.1:0.2:1e-9", "at most 1,000"), ("0.5,1.0", "load 1 >= 1"), ("0.3,,0.6", "must be START"),
                     ("0.3,0.3", "twice"), ("nan", "not a number"), ("0.2:0.1:0.1", "START must be"),
                     ("0:0.5:0", "STEP must be > 0")]:
        with pytest.raises(MrfqError, match=msg):
            parse_loads(bad)


@pytest.mark.nojit
def test_strict_numbers():
    assert parse_number("x", "1e-3") == 0.001
    assert parse_int("n", "1e6") == 1_000_000
    for bad in ("1_0", "nan", "inf", "0x10", "1e400", "", "1,5"):
        with pytest.raises(MrfqError):
            parse_number("x", bad)
    with pytest.raises(MrfqError, match="whole number"):
        parse_int("n", "2.5")


@pytest.mark.nojit
def test_fluid_loads_list_is_accepted(capsys):
    code, out, err = run_cli(capsys, "fluid", "--preset", "br-unbalanced", "--loads", "0.2,0.3",
                             "--objective", "bmf", "--json")
    assert code == 0, err
    d = strict_json(out)
    assert [e["load"] for e in d["loads"]] == [0.2, 0.3]


# ---------------------------------------------------------------------------
# the last line of defence
@pytest.mark.nojit
def test_internal_error_is_one_line_exit_1_and_debug_shows_the_traceback(capsys, monkeypatch):
    import mrfq.router.cli

    def boom(args):
        raise RuntimeError("kaboom\nsecond line")

    monkeypatch.setattr(mrfq.router.cli, "cmd_presets", boom)
    code, out, err = run_cli(capsys, "presets")
    assert code == 1
    assert err == ("mrfq: internal error: RuntimeError: kaboom second line, please report with this scenario and "
                   "command line (--debug shows the traceback)\n")
    code, out, err = run_cli(capsys, "presets", "--debug")
    assert code == 1
    assert "Traceback (most recent call last)" in err and 'raise RuntimeError("kaboom' in err
    assert err.splitlines()[-1].startswith("mrfq: internal error: RuntimeError: kaboom")


@pytest.mark.nojit
def test_ctrl_c_surfacing_as_another_exception_is_an_interrupt(capsys, monkeypatch):
    """A SIGINT that lands while a numba kernel returns: CPython raises SystemError ("returned a
    result with an exception set") from the KeyboardInterrupt (seen in CI during the Markov
    preconditioner's set-up); that is an interrupt, exit 130, not an internal error."""
    import mrfq.router.cli

    def interrupted_in_a_kernel(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise SystemError("CPUDispatcher(<function coarse_levels>) returned a result with an exception set") from e

    monkeypatch.setattr(mrfq.router.cli, "cmd_presets", interrupted_in_a_kernel)
    code, out, err = run_cli(capsys, "presets")
    assert code == 130 and err == "mrfq: interrupted (no output file was left half-written)\n"


# ---------------------------------------------------------------------------
# long runs: chunks of services (Ctrl-C is seen between them), bit for bit the same
def test_chunked_loop_gives_identical_results(monkeypatch):
    import mrfq.router.engine as engine
    from mrfq.router.run import simulate

    sc = flows.load_preset("dynamic-small").replace(**{"run.duration": 40000.0})
    whole = simulate(sc).to_json()
    monkeypatch.setattr(engine, "CHUNK", 997)
    chunked = simulate(sc).to_json()
    capped = simulate(sc, max_services=5000).to_json()
    monkeypatch.setattr(engine, "CHUNK", 1 << 24)
    capped_whole = simulate(sc, max_services=5000).to_json()
    for d in (whole, chunked, capped, capped_whole):
        d.pop("wall_seconds")
    assert whole["services"] > 20 * 997
    assert chunked == whole
    # the run ends with the instant at which 5000 services have completed (up to J = 2 end at once)
    assert capped == capped_whole and 5000 <= capped["services"] <= 5001


def test_ctrl_c_stops_a_long_run_cleanly(tmp_path):
    sc = tmp_path / "long.toml"
    sc.write_text('resources = ["cpu", "link"]\n[run]\nduration = 1e9\nmax_services = 10000000000000\n'
                  '[[flow]]\ncost = [0.01, 0.02]\n[[flow]]\ncost = [0.02, 0.01]\n')
    trace = tmp_path / "t.csv"
    trace.write_text("keep\n")
    from mrfq.router.run import simulate

    simulate(flows.load_scenario(sc), max_services=10)  # compile the loop variant here: the child loads it
    env = dict(os.environ)
    # SIGINT as a terminal delivers it (a test runner started in the background may ignore it)
    p = subprocess.Popen([sys.executable, "-m", "mrfq.analysis.cli", "run", str(sc)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(8.0)  # imports, cache load, then well inside the loop
        assert p.poll() is None
        t0 = time.perf_counter()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        waited = time.perf_counter() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert err.strip() == "mrfq: interrupted (no output file was left half-written)"
    assert "Traceback" not in err
    print(f"stopped {waited:.2f} s after SIGINT")


def test_flow_table_past_its_memory_cap_is_refused_before_allocation(monkeypatch):
    """An overload run with an explicit flow cap is accepted by the gate (its arrivals bound the
    table); the engine still refuses to grow the table past its byte cap, naming the time."""
    import mrfq.router.engine as engine
    from mrfq.router.run import simulate

    # two resources: the loop variant most tests compile (a compilation costs more than the run)
    sc = flows.from_dict({"resources": ["cpu", "link"], "run": {"duration": 400.0, "max_flows": 300},
                          "class": [{"cost": [1.0, 0.5], "rate": 0.5, "mean_packets": 10}]})  # load 5
    assert simulate(sc).max_active_flows > 128
    monkeypatch.setattr(engine, "MAX_TABLE_BYTES", 50_000)
    with pytest.raises(MrfqError, match=r"flow table: 128 flows at once would need .* GiB, more than the "
                                        r"4.65661e-05 GiB cap \(at t = "):
        simulate(sc)


# ---------------------------------------------------------------------------
# inputs built to break a parser, a reader or a message: each is refused in one line, at once
def refused(capsys, argv, needle, *, bounded=True):
    """``main(argv)`` refuses in one clean line containing ``needle``; returns the line.  The
    time bound only catches a hang or a runaway read (a refusal takes well under a second);
    ``bounded=False`` for a refusal that comes after a run (its first call compiles the loop)."""
    t0 = time.perf_counter()
    code, out, err = run_cli(capsys, *argv)
    assert_clean(code, err, needle)
    assert out == ""
    if bounded:
        assert time.perf_counter() - t0 < 60
    return err


TRACE_SCENARIO = (BASE + '[run]\nduration = 10.0\n[traffic]\ntrace = "t.csv"\n'
                  + "".join(f'[[class]]\nname = "class{i:03d}"\ncost = [1.0, 0.5]\n' for i in range(100)))

NESTED = [
    ("x = " + "[" * 999 + "]" * 999 + "\n", "line 2: arrays or inline tables nested more than 32 deep"),
    ("x = " + "{a = " * 400 + "1" + "}" * 400 + "\n", "line 2: arrays or inline tables nested more than 32 deep"),
    ("x = " + "[" * 33 + "]" * 33 + "\n", "nested more than 32 deep"),
    ("[[flow]]\ncost = [1.0, 0.5]\nx = " + "[" * 300 + "]" * 300 + "\n", "line 4: arrays or inline tables"),
]


@pytest.mark.nojit
@pytest.mark.parametrize("text,needle", NESTED, ids=["array999", "inline400", "array33", "in-a-table"])
@pytest.mark.parametrize("command", ["run", "fluid", "compare"])
def test_deeply_nested_toml_is_refused_before_parsing(capsys, tmp_path, monkeypatch, text, needle, command):
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "deep.toml"
    p.write_text(BASE + text, encoding="utf-8")
    err = refused(capsys, [command, str(p)], needle)
    assert err.startswith(f"mrfq: error: {p}: line ")
    assert not (tmp_path / "mrfq-results.sqlite").exists()


@pytest.mark.nojit
def test_nesting_scan_skips_strings_and_comments():
    from mrfq.flows.validate import MAX_NESTING, check_nesting

    deep = "[" * 100 + "]" * 100
    for text in (f'name = "{deep}"\n', f"name = '{deep}'\n", f'd = """\n{deep}\n"""\n', f"d = '''{deep}'''\n",
                 f"# {deep}\nx = 1\n", f'name = "\\"{deep}"\n', "x = " + "[" * MAX_NESTING + "]" * MAX_NESTING + "\n",
                 "[[a]]\nx = [[1, 2], [3]]\ny = {b = {c = [1]}}\n",
                 'd = """' + deep + '\\"""' + deep + '""' + deep + '"""""\n',   # escaped and adjacent quotes
                 "d = '''" + deep + "''" + deep + "'''''\n", "s = 'a#" + deep + "' # " + deep + "\n"):
        check_nesting(text, where="f.toml")
        assert isinstance(tomllib.loads(text), dict)
    with pytest.raises(ScenarioError, match=r"^f.toml: line 3: arrays or inline tables nested more than 32 deep"):
        check_nesting('a = "[[["\n# [[[\nx = ' + "[" * 33 + "]" * 33, where="f.toml")


@pytest.mark.nojit
@pytest.mark.parametrize("rows,needle", [
    ("0.0,class001," + "1" * 200_000 + "\n", "t.csv line 2: 200,013 characters; a trace line must be at most 10,000"),
    ("0.0,class001,1\n" + "2" * 10_001 + "\n", "t.csv line 3: 10,001 characters"),
    ('0.0,"class001\n' + ("y" * 9_000 + "\n") * 20, "t.csv line 17: not a valid CSV row (field larger than field "
                                                    "limit (131072))"),
], ids=["field-200k", "line-10001", "quoted-field-over-many-lines"])
def test_overlong_trace_lines_are_refused(capsys, tmp_path, rows, needle):
    (tmp_path / "t.csv").write_text("time,class,packets\n" + rows, encoding="utf-8")
    p = tmp_path / "s.toml"
    p.write_text(TRACE_SCENARIO, encoding="utf-8")
    err = refused(capsys, ["run", str(p)], needle)
    assert err.startswith("mrfq: error: traffic.trace: ")


@pytest.mark.nojit
def test_a_trace_line_at_the_bound_is_read():
    from mrfq.flows.validate import MAX_TRACE_LINE, trace_rows

    line = "0.0,a," + "0" * (MAX_TRACE_LINE - 7) + "1"
    assert len(line) == MAX_TRACE_LINE
    rows = list(trace_rows("time,class,packets\n" + line + "\n", at=lambda n: f"t.csv line {n}"))
    assert rows == [(1, ["time", "class", "packets"]), (2, ["0.0", "a", "0" * (MAX_TRACE_LINE - 7) + "1"])]


@pytest.mark.nojit
def test_paths_that_are_not_regular_files_are_refused(capsys, tmp_path):
    (tmp_path / "adir.toml").mkdir()
    refused(capsys, ["run", str(tmp_path / "adir.toml")], f"{tmp_path / 'adir.toml'}: a directory, not a regular "
                                                          "file; give the path of a file")
    if os.path.exists("/dev/zero"):  # never ends: read to the size limit it would fill the memory
        refused(capsys, ["fluid", "/dev/zero"], "/dev/zero: a device, not a regular file")
        refused(capsys, ["results", "/dev/zero"], "results /dev/zero: not a regular file")
    (tmp_path / "t.csv").mkdir()
    p = tmp_path / "s.toml"
    p.write_text(TRACE_SCENARIO, encoding="utf-8")
    refused(capsys, ["run", str(p)], f"traffic.trace = '{tmp_path / 't.csv'}': a directory, not a regular file")
    refused(capsys, ["bench", "--c-source", str(tmp_path)], ": not a regular file (a C yardstick such as mrfq's "
                                                            "router/yardstick.c)")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
@pytest.mark.parametrize("what", ["scenario", "trace", "results"])
def test_a_named_pipe_nobody_writes_to_is_refused_at_once(tmp_path, what):
    """In a process of its own: a read that blocked on the pipe would block the test runner too."""
    os.mkfifo(tmp_path / "pipe")
    p = tmp_path / "s.toml"
    p.write_text(TRACE_SCENARIO.replace("t.csv", "pipe"), encoding="utf-8")
    argv, needle = {
        "scenario": (["run", str(tmp_path / "pipe")], f"{tmp_path / 'pipe'}: a named pipe, not a regular file"),
        "trace": (["run", str(p)], f"traffic.trace = '{tmp_path / 'pipe'}': a named pipe, not a regular file"),
        "results": (["results", str(tmp_path / "pipe")], "not a regular file"),
    }[what]
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "mrfq.analysis.cli", *argv], env=env, capture_output=True, text=True,
                       timeout=20)
    assert_clean(r.returncode, r.stderr, needle)
    assert r.stdout == ""


@pytest.mark.nojit
@pytest.mark.parametrize("argv", [[], ["--debug"]])
def test_no_command_is_a_one_line_error_with_the_usage(capsys, argv):
    err = refused(capsys, argv, "mrfq: error: missing command; usage: mrfq [--debug] COMMAND [ARGS], COMMAND one "
                                "of run, ")
    assert "compare" in err and "cluster" in err and err.endswith("(see mrfq --help)\n")


@pytest.mark.nojit
@pytest.mark.parametrize("argv,needle", [
    (["presets", "--json"], "mrfq presets: unrecognized arguments: --json (see mrfq presets --help)"),
    (["cluster", "presets", "--json"], "mrfq cluster presets: unrecognized arguments: --json (see mrfq cluster presets --help)"),
    (["run", "--preset", "oracle-rates", "--nosuch"], "mrfq run: unrecognized arguments: --nosuch (see mrfq run --help)"),
    (["--nosuch"], "mrfq: unrecognized arguments: --nosuch (see mrfq --help)"),
])
def test_an_unknown_option_points_at_its_commands_help(capsys, argv, needle):
    refused(capsys, argv, needle)


BIG = "9" * 401


@pytest.mark.nojit
@pytest.mark.parametrize("text,needle", [
    (BASE + f"[run]\nseed = {BIG}\n" + STATIC, "run.seed = 99999999999999999999"),
    (BASE + f"[router]\nwindow = -{BIG}\n" + STATIC, "router.window = -9999999999999999"),
    (BASE + f"[router]\nquantum = {BIG}\n" + STATIC, "router.quantum = 99999999999"),
    (BASE + f'[[class]]\ncost = [1.0, 0.5]\nrate = 0.1\nsize = {{law = "pareto", alpha = {BIG}, mean = 5}}\n',
     "class[0].size.alpha = 9999999999"),
], ids=["seed", "window", "scheduler-option", "size-alpha"])
def test_a_401_digit_integer_is_not_echoed_whole(capsys, tmp_path, text, needle):
    p = tmp_path / "s.toml"
    p.write_text(text, encoding="utf-8")
    err = refused(capsys, ["run", str(p)], needle)
    assert "... (401 digits)" in err and BIG not in err and len(err) < 250, err


@pytest.mark.nojit
def test_long_name_lists_are_cut_to_a_handful(capsys, tmp_path):
    (tmp_path / "t.csv").write_text("time,class,packets\n0.0,nope,1\n", encoding="utf-8")
    p = tmp_path / "s.toml"
    p.write_text(TRACE_SCENARIO, encoding="utf-8")
    err = refused(capsys, ["run", str(p)], "class = 'nope': unknown; the scenario's classes are class000, class001, "
                                           "class002, class003, class004, class005 and 94 more\n")
    assert len(err) < 250
    res = [f"r{i:02d}" + "x" * 90 for i in range(32)]
    p.write_text(f"resources = {json.dumps(res)}\n[router]\nfq_resource = \"zzz\"\n[[flow]]\ncost = {[1.0] * 32}\n",
                 encoding="utf-8")
    err = refused(capsys, ["run", str(p)], "router.fq_resource = 'zzz': must be one of the resources r00")
    assert "and 24 more" in err and len(err) < 1000


@pytest.mark.nojit
def test_every_error_line_is_capped_as_a_whole(capsys, monkeypatch):
    import mrfq.router.cli

    def long_message(args):
        raise MrfqError("field: " + "x" * 100_000 + " fix: do this")

    monkeypatch.setattr(mrfq.router.cli, "cmd_presets", long_message)
    err = refused(capsys, ["presets"], "mrfq: error: field: xxx")
    assert err.endswith(" fix: do this\n") and "[... 99,480 characters ...]" in err and len(err) < 620


@pytest.mark.nojit
def test_quote_and_name_list():
    from mrfq.flows.errors import name_list, quote

    assert quote("abc") == "'abc'" and quote(12) == "12"
    assert quote(int(BIG)) == "9" * 57 + "... (401 digits)"
    assert quote(-int(BIG)).endswith("... (401 digits)")
    assert quote(10 ** 5000) == "<an integer of 16,610 bits>"  # more digits than Python prints
    nested: list = []
    for _ in range(100_000):
        nested = [nested]
    assert quote(nested) == "<a list nested too deeply to print>"
    assert name_list(["a", "b", "c"]) == "a, b, c"
    assert name_list(["a", "b", "c"], conj="or") == "a, b or c"
    assert name_list([f"n{i}" for i in range(2000)]) == "n0, n1, n2, n3, n4, n5 and 1,994 more"
    assert name_list(["y" * 1000]) == "y" * 57 + "..."


# ---------------------------------------------------------------------------
# a results file on a full disk
def _fill_after(monkeypatch, pages: int):
    """Every ResultStore opened from now on can grow by ``pages`` pages only: SQLite's own
    SQLITE_FULL ("database or disk is full"), as on a full file system."""
    from mrfq.analysis.sweep import ResultStore

    opened = ResultStore.__init__

    def init(self, *a, **kw):
        opened(self, *a, **kw)
        n = self.conn.execute("PRAGMA page_count").fetchone()[0]
        self.conn.execute(f"PRAGMA max_page_count = {n + pages}")

    monkeypatch.setattr(ResultStore, "__init__", init)


def _point(i: int):
    from mrfq.analysis.sweep import Point

    return Point("h", "drfq", 0.5, i, i, 10.0)


@pytest.mark.nojit
def test_a_full_disk_keeps_every_stored_point(tmp_path, monkeypatch):
    import sqlite3

    from mrfq.analysis.sweep import ResultStore

    _fill_after(monkeypatch, 6)
    store = ResultStore(tmp_path / "r.sqlite")
    put = []
    with pytest.raises(MrfqError) as e:
        for i in range(100):
            store.put(_point(i), "s", {"services": i, "pad": "y" * 3000})
            put.append(i)
    store.close()
    assert 0 < len(put) < 100
    msg = str(e.value)
    assert msg == (f"--results {tmp_path / 'r.sqlite'}: could not store the point drfq at load 0.5 (replication "
                   f"{len(put)}): the disk is full (or the file reached its size limit), so the sweep stopped; "
                   f"{len(put)} points are stored and intact; free some space and re-run the same command: it "
                   "resumes from the stored points")
    conn = sqlite3.connect(tmp_path / "r.sqlite")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = conn.execute("SELECT replication, payload FROM points ORDER BY replication").fetchall()
    conn.close()
    assert rows == [(i, json.dumps({"services": i, "pad": "y" * 3000})) for i in put]


@pytest.mark.nojit
def test_compare_on_a_full_disk_stops_in_one_line_and_resumes(capsys, tmp_path, monkeypatch):
    """``mrfq compare`` whose results file cannot grow: exit 2 naming the file and the stored
    points; re-running runs only the points not stored (the simulation is replaced by a stand-in
    here, the store and the sweep's bookkeeping are the real ones)."""
    import sqlite3

    import mrfq.analysis.compare
    import mrfq.analysis.sweep

    ran = []

    def fake_point(d, name, p):
        ran.append(p.key)
        return {"services": 1, "pad": "z" * 12_000}  # 3 to 4 pages: a few points fill the room

    monkeypatch.setattr(mrfq.analysis.sweep, "run_point", fake_point)
    monkeypatch.setattr(mrfq.analysis.compare, "fluid_gammas", lambda *a, **k: {"gamma": [1.0, 1.0], "halfwidth": None})
    _fill_after(monkeypatch, 8)
    res = tmp_path / "r.sqlite"
    argv = ["compare", "--preset", "br-unbalanced", "--quick", "--schedulers", "drfq,pf-sfq", "--loads", "0.3,0.5",
            "--coarse", "never", "--workers", "1", "--results", str(res), "--json"]
    err = refused(capsys, argv, f"mrfq: error: --results {res}: could not store the point ")
    assert "the disk is full (or the file reached its size limit), so the sweep stopped; " in err
    n1 = len(ran) - 1  # the last one could not be stored
    assert n1 >= 1
    assert f"; {n1} points are stored and intact; free some space and re-run the same command" in err
    first = list(ran)

    def stored():
        conn = sqlite3.connect(res)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        keys = {k for (k,) in conn.execute("SELECT key FROM points")}
        conn.close()
        return keys

    assert stored() == set(first[:-1])
    ran.clear()
    err = refused(capsys, argv, "points are stored and intact")  # a little more room, then full again
    assert not set(ran) & set(first[:-1])  # nothing stored was run again
    assert stored() == set(first[:-1]) | set(ran[:-1])


@pytest.mark.nojit
def test_a_closed_store_is_one_file_and_reading_it_leaves_none(tmp_path):
    from mrfq.analysis.sweep import ResultStore

    store = ResultStore(tmp_path / "r.sqlite")
    for i in range(3):
        store.put(_point(i), "s", {"services": i})
    assert (tmp_path / "r.sqlite-wal").exists()  # while it is open
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.sqlite"]
    ro = ResultStore(tmp_path / "r.sqlite", readonly=True)  # as `mrfq results` opens it
    assert ro.count() == 3
    ro.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.sqlite"]
    again = ResultStore(tmp_path / "r.sqlite")
    assert again.count() == 3 and again.get(_point(1).key) == {"services": 1}
    again.close()


@pytest.mark.nojit
def test_a_store_whose_checkpoint_stopped_on_a_full_disk_reopens(tmp_path):
    """A checkpoint that stopped on a full disk leaves the header's page count ahead of the file,
    the pages still in the write-ahead log: SQLite reads them from there, and so the store opens
    (a re-run resumes); without the log the same header is a truncated file and is refused."""
    import shutil
    import sqlite3

    from mrfq.analysis.sweep import ResultStore

    store = ResultStore(tmp_path / "r.sqlite")
    for i in range(3):
        store.put(_point(i), "s", {"services": i, "pad": "y" * 3000})
    copy = tmp_path / "copy"
    copy.mkdir()
    for suffix in ("", "-wal"):  # as left on disk while the store is open
        shutil.copy(tmp_path / f"r.sqlite{suffix}", copy / f"r.sqlite{suffix}")
    store.close()
    db = copy / "r.sqlite"
    assert (copy / "r.sqlite-wal").stat().st_size > 0
    head = bytearray(db.read_bytes())
    pages = db.stat().st_size // 4096
    head[28:32] = (pages + 5).to_bytes(4, "big")  # page 1 copied back, the pages after it not
    db.write_bytes(bytes(head))
    again = ResultStore(db)
    assert again.count() == 3 and again.get(_point(2).key) == {"services": 2, "pad": "y" * 3000}
    again.close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "r.sqlite").write_bytes(bytes(head))
    with pytest.raises(MrfqError, match=r"a truncated or damaged SQLite file"):
        ResultStore(lone / "r.sqlite")


def test_run_trace_on_a_full_disk_is_refused_and_keeps_the_old_file(capsys, tmp_path, monkeypatch):
    """``run --trace`` whose file system is full: one line, exit 2, the file already there unchanged
    (the write goes to a temporary file, removed on the error)."""
    import errno

    import mrfq.flows.cli_args

    real = os.fdopen

    class Full:
        def __init__(self, f):
            self.f, self.n = f, 0

        def write(self, s):
            self.n += 1
            if self.n > 3:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(s)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(mrfq.flows.cli_args.os, "fdopen", lambda *a, **k: Full(real(*a, **k)))
    out = tmp_path / "t.csv"
    out.write_text("keep\n")
    refused(capsys, ["run", "--preset", "oracle-rates", "--duration", "2000", "--trace", str(out)],
            "--trace '" + str(out)[:20], bounded=False)
    assert out.read_text() == "keep\n" and sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


LONG = "a" * 300  # longer than any file system's name limit (255 bytes)


@pytest.mark.nojit
@pytest.mark.parametrize("argv,needle", [
    (["run", "--preset", "oracle-rates", "--share-series", LONG + ".csv"], "--share-series 'aaa"),
    (["run", "--preset", "oracle-rates", "--delays", LONG + ".csv"], "--delays 'aaa"),
    (["run", "--preset", "oracle-rates", "--trace", LONG + ".csv"], "--trace 'aaa"),
    (["run", "--preset", "oracle-rates", "--trace", LONG + "/t.csv"], "--trace 'aaa"),
    (["scorecard", "--preset", "isolation", "--plot", LONG + ".png"], "--plot 'aaa"),
    (["compare", "--preset", "br-unbalanced", "--csv", LONG + ".csv"], "--csv 'aaa"),
    (["compare", "--preset", "br-unbalanced", "--plot", LONG + ".png"], "--plot 'aaa"),
    (["compare", "--preset", "br-unbalanced", "--results", LONG + ".sqlite"], "--results 'aaa"),
    (["cluster", "sim", "--preset", "drf-nsdi", "--plot", LONG + ".png"], "--plot 'aaa"),
    (["fluid", "--preset", "br-unbalanced", "--plot", LONG + ".png"], "--plot 'aaa"),
    (["results", LONG + ".sqlite"], "results 'aaa"),
], ids=["share-series", "delays", "trace", "trace-folder", "scorecard-plot", "compare-csv", "compare-plot",
        "compare-results", "cluster-plot", "fluid-plot", "results"])
def test_a_file_name_too_long_is_refused_naming_the_option(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    err = refused(capsys, argv, needle)
    assert "file name too long for the file system; give a shorter name" in err
    assert "characters)" in err  # the name is shortened, not echoed whole
    assert list(tmp_path.iterdir()) == []


@pytest.mark.nojit
@pytest.mark.parametrize("argv,needle", [
    (["run", "--preset", "oracle-rates", "--delays", ""], "--delays: empty file name; give a file name"),
    (["run", "--preset", "oracle-rates", "--share-series", ""], "--share-series: empty file name"),
    (["run", "--preset", "oracle-rates", "--trace", ""], "--trace: empty file name"),
    (["scorecard", "--preset", "isolation", "--intervals", ""], "--intervals '': empty; give edges like 0,10,20"),
    (["scorecard", "--preset", "isolation", "--plot", ""], "--plot: empty file name"),
    (["scorecard", "--preset", "isolation", "--intervals", "0,10", "--plot-intervals", ""],
     "--plot-intervals: empty file name"),
    (["compare", "--preset", "br-unbalanced", "--csv", ""], "--csv: empty file name"),
    (["compare", "--preset", "br-unbalanced", "--plot", ""], "--plot: empty file name"),
    (["compare", "--preset", "br-unbalanced", "--results", ""], "--results: empty file name"),
    (["cluster", "sim", "--preset", "drf-nsdi", "--plot", ""], "--plot: empty file name"),
    (["fluid", "--preset", "br-unbalanced", "--plot", ""], "--plot: empty file name"),
    (["results", ""], "results: empty file name"),
])
def test_an_empty_value_is_refused_not_ignored(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    refused(capsys, argv, needle)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.nojit
def test_a_write_failure_after_the_run_names_the_option(capsys, tmp_path, monkeypatch):
    """A figure or CSV that cannot be written once the work is done (a full disk): one line naming
    the option and the file; the file already there is unchanged."""
    import errno

    import mrfq.flows.cli_args
    from mrfq.flows.cli_args import atomic_write

    real = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def write(self, s):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(mrfq.flows.cli_args.os, "fdopen", lambda *a, **k: Full(real(*a, **k)))
    out = tmp_path / "f.png"
    out.write_text("keep\n")
    err = refused(capsys, ["cluster", "sim", "--preset", "drf-nsdi", "--engine", "reference", "--plot", str(out)],
                  "--plot '", bounded=False)
    assert "cannot write (No space left on device); nothing was written" in err
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MrfqError, match=r"^--csv 't\.csv': cannot write \(No space left on device\)"):
        atomic_write("t.csv", "x\n", field="--csv")
    assert out.read_text() == "keep\n" and sorted(p.name for p in tmp_path.iterdir()) == ["f.png"]
