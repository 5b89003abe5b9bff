"""`mrfq run` and the scenario gate: output shape, determinism, every bad-input path."""

import json
import subprocess
import sys

import pytest

from mrfq import flows
from mrfq.analysis.cli import main

pytestmark = pytest.mark.nojit


def strict_json(text):
    """Every --json output must be RFC 8259 JSON: no NaN, no Infinity."""
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_json_has_the_documented_keys(capsys):
    code, out, err = run_cli(capsys, "run", "--preset", "dynamic-small", "--duration", "60000", "--json")
    assert code == 0, err
    d = strict_json(out)
    for key in ("scheduler", "seed", "flows", "classes", "resources", "services", "wall_seconds"):
        assert key in d
    assert [c["name"] for c in d["classes"]] == ["c1", "c2", "c3"]
    for c in d["classes"]:
        assert set(("name", "gamma", "ci", "completed")) <= set(c)
    assert [r["name"] for r in d["resources"]] == ["cpu", "link"]
    assert d["services"] == sum(r["services"] for r in d["resources"])


def test_run_gamma_interval_holds_the_m_m_1_ps_value(capsys, tmp_path):
    """One class on one resource: every fair scheduler is M/M/1-PS at the flow level, where
    gamma = 1 - rho (an analytic check of docs/allocators.md), independent of the run.  The interval that
    `mrfq run` reports must contain it, and be narrow enough to mean something."""
    path = tmp_path / "ps.toml"
    path.write_text('resources = ["link"]\n[router]\nwindow = 30\n'
                    '[run]\nduration = 400000.0\nwarmup = 20000.0\nseed = 1\n[traffic]\nload = 0.5\n'
                    '[[class]]\nname = "c"\ncost = [1.0]\nshare = 1\nmean_packets = 200\n')
    code, out, err = run_cli(capsys, "run", str(path), "--json")
    assert code == 0, err
    (c,) = json.loads(out)["classes"]
    lo, hi = c["ci"]
    assert lo < 0.5 < hi, c
    assert hi - lo < 0.2, c


def test_same_seed_same_json_bit_for_bit(capsys):
    outs = []
    for _ in range(2):
        code, out, _ = run_cli(capsys, "run", "--preset", "dynamic-small", "--duration", "50000",
                               "--scheduler", "pf-sfq", "--seed", "7", "--json")
        d = strict_json(out)
        d.pop("wall_seconds")
        outs.append(d)
    assert outs[0] == outs[1]
    code, out, _ = run_cli(capsys, "run", "--preset", "dynamic-small", "--duration", "50000",
                           "--scheduler", "pf-sfq", "--seed", "8", "--json")
    d = strict_json(out)
    d.pop("wall_seconds")
    assert d != outs[0]


def test_common_random_numbers_across_schedulers():
    from mrfq.router.run import simulate

    sc = flows.load_preset("dynamic-small").replace(**{"run.duration": 50000.0})
    a = simulate(sc, scheduler="drfq")
    b = simulate(sc, scheduler="bmf-wfq")
    assert [c.arrived for c in a.classes] == [c.arrived for c in b.classes]
    assert a.flows_started == b.flows_started


def test_table_output_and_trace_file(capsys, tmp_path):
    f = tmp_path / "trace.csv"
    code, out, err = run_cli(capsys, "run", "--preset", "oracle-drfq-trace", "--trace", str(f))
    assert code == 0, err
    assert "utilization" in out and "f1" in out
    lines = f.read_text().splitlines()
    assert lines[0] == "start,end,resource,flow,flow_id,seq"
    assert lines[1] == "0.0,1.0,cpu,f1,0,1"
    assert lines[2] == "1.0,1.5,cpu,f2,1,1"


def test_scenario_file_roundtrip(capsys, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('resources = ["cpu", "link"]\n[router]\nscheduler = "bmf-wfq"\n[run]\nduration = 2000.0\n'
                 '[[flow]]\nname = "a"\ncost = [0.6666666666666666, 1.0]\n[[flow]]\nname = "b"\ncost = [1.0, 0.5]\n')
    code, out, err = run_cli(capsys, "run", str(p), "--json")
    assert code == 0, err
    d = strict_json(out)
    assert d["scheduler"] == "bmf-wfq"
    assert [f["name"] for f in d["flows"]] == ["a", "b"]


BAD = [
    (["run", "--preset", "oracle-rates", "--scheduler", "wfq2"], "--scheduler"),
    (["run", "--preset", "nope"], "--preset 'nope'"),
    (["run"], "missing scenario"),
    (["run", "/nonexistent/s.toml"], "no such scenario file"),
    (["run", "--preset", "oracle-rates", "--duration", "-5"], "argument --duration: '-5': out of range; give a number in (0, 1e+15]"),
    (["run", "--preset", "oracle-rates", "--seed", "-1"], "argument --seed: '-1': out of range"),
    (["run", "--preset", "br-unbalanced", "--load", "1.2"], "argument --load: '1.2': out of range; give a number in (0, 1)"),
    (["run", "--preset", "br-unbalanced", "--load", "1.0"], "argument --load"),
    (["run", "--preset", "oracle-rates", "--load", "0.5"], "--load"),
    (["run", "--preset", "oracle-rates", "--window", "0"], "argument --window: '0': out of range; give a whole number in [1, 4,096]"),
    (["run", "--preset", "oracle-rates", "--fq-resource", "gpu"], "router.fq_resource"),
    (["run", "--preset", "br-unbalanced", "--duration", "2e5"],
     "--duration 200000: not longer than the scenario's run.warmup = 1e+06; also give --warmup (e.g. --warmup 20000"),
    (["frobnicate"], "invalid choice"),
    (["alloc", "--cost", "-1,1", "--cost", "1,0.5"], "must be >= 0"),
]


@pytest.mark.parametrize("argv,needle", BAD)
def test_bad_input_one_line_exit_2(capsys, argv, needle):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("mrfq: error: ")
    assert needle in err
    assert "Traceback" not in err


BAD_TOML = [
    ('resources = ["cpu"]\n[[flow]]\ncost = [-1.0]\n', "flow[0].cost[0]"),
    ('resources = ["cpu"]\n[[flow]]\ncost = [1.0, 2.0]\n', "flow[0].cost has 2 entries"),
    ('resources = ["cpu"]\n', "no traffic"),
    ('[[flow]]\ncost = [1.0]\n', "resources: missing"),
    ('resources = ["cpu"]\n[router]\nscheduler = "wfq2"\n[[flow]]\ncost = [1.0]\n', "router.scheduler"),
    ('resources = ["cpu"]\n[[class]]\ncost = [1.0]\nrate = -0.1\n', "class[0].rate"),
    ('resources = ["cpu"]\n[[class]]\ncost = [1.0]\n', "class[0].rate: missing"),
    ('resources = ["cpu"]\n[[flow]]\ncost = [1.0]\nwieght = 2\n', "unknown key 'wieght'"),
    ('resources = ["cpu"]\n[[flow]]\ncost = [1.0]\nweight = 0\n', "flow[0].weight"),
    ('resources = ["cpu"\n', "not valid TOML"),
    ('resources = ["cpu"]\n[run]\nwarmup = 10.0\nduration = 5.0\n[[flow]]\ncost = [1.0]\n', "run.warmup"),
    ('resources = ["cpu", "cpu"]\n[[flow]]\ncost = [1.0, 1.0]\n', "distinct"),
    ('resources = ["cpu"]\n[[flow]]\ncost = [1.0]\nper_byte = [0.1]\npacket_sizes = [10, 20]\n'
     'packet_size_probs = [0.5, 0.6]\n', "packet_size_probs sum"),
]


@pytest.mark.parametrize("text,needle", BAD_TOML)
def test_bad_scenarios(capsys, tmp_path, text, needle):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    code, out, err = run_cli(capsys, "run", str(p))
    assert code == 2 and needle in err and err.count("\n") == 1, err


def test_bad_trace_folder_keeps_nothing_half_written(capsys, tmp_path):
    code, out, err = run_cli(capsys, "run", "--preset", "oracle-drfq-trace", "--trace", str(tmp_path / "no" / "t.csv"))
    assert code == 2 and "does not exist" in err


def test_existing_trace_file_untouched_on_error(capsys, tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("keep me\n")
    code, out, err = run_cli(capsys, "run", "--preset", "oracle-rates", "--window", "-3", "--trace", str(f))
    assert code == 2
    assert f.read_text() == "keep me\n"


def test_console_script_exit_code_and_no_traceback():
    p = subprocess.run([sys.executable, "-m", "mrfq.analysis.cli", "run", "--preset", "oracle-rates", "--scheduler", "x"],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1


def test_presets_all_load():
    for n in flows.preset_names():
        sc = flows.load_preset(n)
        assert sc.flows or sc.classes
    assert {"oracle-drfq-trace", "oracle-memoryless", "oracle-rates", "br-balanced", "br-unbalanced",
            "dynamic-small", "middlebox-mix"} <= set(flows.preset_names())


def test_load_scaling_hits_the_target():
    sc = flows.load_preset("br-unbalanced").with_load(0.6)
    loads = sc.class_resource_loads()
    assert max(loads) == pytest.approx(0.6)
    assert loads[0] < loads[1] / 2  # resource 1 carries less than half of resource 2's load


@pytest.mark.nojit
def test_a_long_compilation_says_so(monkeypatch):
    """A call that may compile says what it compiles once it has run NOTICE_AFTER seconds, and how
    long it took; a quick one (a load from numba's cache) or one with nothing to compile says nothing."""
    import time

    from mrfq.flows import notice

    seen = []

    class Seen:
        def start(self, text):
            seen.append(text)

        def done(self, seconds):
            seen.append(seconds)

    monkeypatch.setattr(notice, "notice", Seen())
    monkeypatch.setattr(notice, "NOTICE_AFTER", 0.05)
    with notice.compiling("the drfq loop for 2 resources"):
        time.sleep(0.3)
    assert seen[0] == "compiling the drfq loop for 2 resources (first run only: numba keeps it on disk)..."
    assert seen[1] >= 0.3 and len(seen) == 2
    seen.clear()
    with notice.compiling("the drfq loop for 2 resources"):
        pass
    with notice.compiling("the task simulator", needed=False):
        time.sleep(0.2)
    assert seen == []


@pytest.mark.nojit
def test_the_compilation_notice_is_for_a_terminal_only(monkeypatch, capsys):
    from mrfq.analysis.cli import TerminalNotice
    from mrfq.flows import notice

    assert main(["alloc", "--cost", "1,0.5"]) == 0
    assert notice.notice is None                     # stderr is no terminal here
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["alloc", "--cost", "1,0.5"]) == 0
    assert isinstance(notice.notice, TerminalNotice)
    assert main(["alloc", "--cost", "1,0.5", "--json"]) == 0
    assert notice.notice is None                     # never with --json
    capsys.readouterr()
