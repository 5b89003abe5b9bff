"""The cluster gate (flows/cluster.py) reads every file and value through the shared checks of
flows/validate.py, so ``mrfq cluster sim`` and ``mrfq alloc CLUSTER.toml`` refuse NaN, inf, huge
numbers and huge strings, deeply nested TOML, over-long trace lines and paths that are not regular
files with one shortened line (long name lists cut to a handful), and refuse runs whose work is
unbounded before they start."""

import os
import subprocess
import sys
import time

import pytest

from mrfq.analysis.cli import main
from mrfq.flows.cluster import cluster_from_dict, expected_tasks, load_cluster, load_cluster_preset
from mrfq.flows.errors import ScenarioError

BASE = ('resources = ["cpu", "mem"]\n[run]\nduration = 100.0\n[[server]]\ncapacity = [4.0, 8.0]\n'
        '[[user]]\nname = "a"\ndemand = [1.0, 2.0]\n')


def toml(**repl) -> str:
    text = BASE
    for k, v in repl.items():
        text = text.replace(k, v)
    return text


CASES = [
    (toml(**{"capacity = [4.0, 8.0]": "capacity = [nan, 8.0]"}),
     "server[0].capacity[0] = nan: must be a finite number in [0, 1e+12]"),
    (toml(**{"capacity = [4.0, 8.0]": "capacity = [inf, 8.0]"}), "server[0].capacity[0] = inf: must be a finite"),
    (toml(**{"demand = [1.0, 2.0]": "demand = [1e308, 2.0]"}),
     "user[0].demand[0] = 1e+308: out of range; must be in [0, 1e+12]"),
    (toml(**{"duration = 100.0": "duration = 1e300"}), "run.duration = 1e+300: out of range; must be in (0, 1e+15]"),
    (toml(**{"[run]\n": "[run]\nseed = 9223372036854775808\n"}),
     "run.seed = 9223372036854775808: out of range; must be a whole number in [0, 4,611,686,018,427,387,904]"),
    (toml(**{"[run]\n": "[run]\nsamples = 1e9\n"}), "run.samples = 1000000000.0: out of range"),
    (toml(**{"capacity = [4.0, 8.0]": "capacity = [4.0, 8.0]\ncount = 1e12"}),
     "server[0].count = 1000000000000.0: out of range; must be a whole number in [1, 100,000]"),
    (toml(**{'name = "a"': 'name = "' + "n" * 1_000_000 + '"'}),
     "nnnnn... (1,000,002 characters): must be a non-empty string of at most 100 characters"),
    (toml(**{"[run]\n": '[run]\nallocator = "' + "z" * 100_000 + '"\n'}), "(100,002 characters): unknown; choose one"),
    (toml(**{"demand = [1.0, 2.0]": "demand = [5e-324, 2.0]"}),
     "user[0].demand[0] = 4.94066e-324: a positive demand must be >= 1e-12 x the pooled capacity of 'cpu'"),
    (toml(**{"[[user]]\n": "[[user]]\nduration = 1e-6\n"}),
     "run.duration = 100: about 4e+08 task launches"),
    (toml(**{"[[user]]\n": "[[user]]\nweight = 1e-320\n"}), "user[0].weight = 1e-320: out of range"),
    (toml(**{"[[user]]\n": "[[user]]\nparent = []\n"}), "user[0].parent = []: not a [[node]]"),
    (BASE + '[traffic]\nkind = "poisson"\nrate = 1e9\n[[user]]\nname = "b"\ndemand = [1.0, 1.0]\n'
            'backlogged = false\njob_share = 1.0\n', "run.duration = 100: about 1e+11 task launches"),
    (BASE + '[traffic]\nkind = "poisson"\nrate = 1.0\n[[user]]\nname = "b"\ndemand = [1.0, 1.0]\n'
            'backlogged = false\njob_share = 1.0\ntasks_per_job = 1e300\n',
     "user[1].tasks_per_job = 1e+300: out of range; must be in [1, 1e+06]"),
]


#: refused by the simulator only: the fluid allocations launch no task
SIM_ONLY = [c for c in CASES if "task launches" in c[1]]


REFUSED = [pytest.param(text, needle, command, id=f"{command}-cluster{i}")
           for command in ("sim", "alloc") for i, (text, needle) in enumerate(CASES)
           if command == "sim" or (text, needle) not in SIM_ONLY]


@pytest.mark.nojit
@pytest.mark.parametrize("text,needle,command", REFUSED)
def test_cluster_files_are_refused_in_one_shortened_line(capsys, tmp_path, text, needle, command):
    p = tmp_path / "c.toml"
    p.write_text(text, encoding="utf-8")
    argv = ["cluster", "sim", str(p), "--json"] if command == "sim" else ["alloc", str(p), "--json"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "", err
    assert err.startswith("mrfq: error: ") and err.count("\n") == 1 and len(err) < 600, err[:300]
    assert needle in err, err


@pytest.mark.nojit
@pytest.mark.parametrize("text,needle", SIM_ONLY, ids=[f"launches{i}" for i in range(len(SIM_ONLY))])
def test_alloc_ignores_the_launch_bound(capsys, tmp_path, text, needle):
    """``alloc`` checks what the fluid allocations read: a run too long to simulate is no reason to refuse."""
    import json

    p = tmp_path / "c.toml"
    p.write_text(text, encoding="utf-8")
    code = main(["alloc", str(p), "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and err == "", err
    assert json.loads(out)["objectives"]["drf"]["tasks"][0] > 0
    with pytest.raises(ScenarioError, match=needle.replace("+", r"\+")):
        load_cluster(p)


@pytest.mark.nojit
def test_cluster_file_encodings(tmp_path):
    a, b, c = tmp_path / "a.toml", tmp_path / "b.toml", tmp_path / "c.toml"
    a.write_bytes(BASE.encode("utf-8"))
    b.write_bytes(b"\xef\xbb\xbf" + BASE.encode("utf-8"))
    c.write_bytes(("# caf\u00e9\n" + BASE).encode("latin-1"))
    assert load_cluster(a).users == load_cluster(b).users
    with pytest.raises(ScenarioError, match=r"not UTF-8 text \(byte 0xe9 at offset 5\); save the scenario"):
        load_cluster(c)


@pytest.mark.nojit
def test_cluster_trace_bounds(tmp_path):
    sc = tmp_path / "t.toml"
    sc.write_text('resources = ["cpu"]\n[[server]]\ncapacity = [4.0]\n[[user]]\nname = "a"\ndemand = [1.0]\n'
                  '[traffic]\nkind = "trace"\ntrace = "j.csv"\n')
    (tmp_path / "j.csv").write_bytes(b"time,user,tasks\n1,a,1e300\n")
    with pytest.raises(ScenarioError, match=r"^run.duration = 1000: about 1e\+300 task launches"):
        load_cluster(sc)
    (tmp_path / "j.csv").write_bytes(b"time,user,tasks\n1,\xff,1\n")
    with pytest.raises(ScenarioError, match=r"traffic.trace = '.*j.csv': not UTF-8 text \(offset 18\)"):
        load_cluster(sc)
    (tmp_path / "j.csv").write_bytes(b"time,user,tasks\n1,a,3\n2,a,4\n2000,a,100\n")
    assert expected_tasks(load_cluster(sc)) == 7.0  # the rows before run.duration


@pytest.mark.nojit
def test_expected_tasks_by_hand():
    # 2 servers of (4, 8) and one of (2, 2): user a (1, 2) fits 4 + 4 + 1 = 9 at once; over [0, 100)
    # with mean duration 2: 9 x 100 / 2 = 450; user b from t = 60 with (0, 4): 2 + 2 + 0 = 4 at once,
    # 4 x 40 / 1 = 160; poisson jobs: 0.5 x 100 x (1 x 3 + 3 x 1) / 4 = 75
    d = {"resources": ["cpu", "mem"], "run": {"duration": 100.0},
         "server": [{"capacity": [4.0, 8.0], "count": 2}, {"capacity": [2.0, 2.0]}],
         "user": [{"name": "a", "demand": [1.0, 2.0], "duration": 2.0},
                  {"name": "b", "demand": [0.0, 4.0], "start": 60.0},
                  {"name": "c", "demand": [1.0, 1.0], "backlogged": False, "job_share": 1.0, "tasks_per_job": 3},
                  {"name": "e", "demand": [1.0, 1.0], "backlogged": False, "job_share": 3.0}],
         "traffic": {"kind": "poisson", "rate": 0.5}}
    assert expected_tasks(cluster_from_dict(d)) == 450.0 + 160.0 + 75.0


@pytest.mark.nojit
def test_cluster_sim_overrides_are_checked_before_the_run(capsys, tmp_path):
    for argv, needle in [
        (["--duration", "1e300"], "--duration = '1e300': out of range; give a number in (0, 1e+15]"),
        (["--duration", "1e9"], "run.duration = 1e+09: about"),  # the override's work is bounded too
        (["--seed", "1e30"], "--seed = '1e30': out of range"),
        (["--seed", "nan"], "--seed = 'nan': not a number"),
        (["--plot", str(tmp_path / "missing" / "f.png")], "does not exist"),
        (["--plot", str(tmp_path / "f.nope")], "unknown figure format 'nope'"),
    ]:
        code = main(["cluster", "sim", "--preset", "drf-nsdi", "--json", *argv])
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and err.count("\n") == 1 and needle in err, err
    assert load_cluster_preset("drf-nsdi").run.duration == 500.0


# ---------------------------------------------------------------------------
# inputs built to break a parser, a reader or a message
def refused(capsys, argv, needle):
    """``main(argv)`` refuses in one clean line containing ``needle``; the time bound only catches
    a hang (a refusal takes well under a second)."""
    t0 = time.perf_counter()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "", err
    assert err.startswith("mrfq: error: ") and err.count("\n") == 1 and len(err) < 600, err[:300]
    assert needle in err, err
    assert time.perf_counter() - t0 < 60
    return err


TRACE = BASE.replace("[run]\n", '[traffic]\nkind = "trace"\ntrace = "j.csv"\n[run]\n') + "".join(
    f'[[user]]\nname = "user{i:03d}"\ndemand = [1.0, 1.0]\n' for i in range(100))


@pytest.mark.nojit
@pytest.mark.parametrize("text", ["x = " + "[" * 999 + "]" * 999 + "\n", "x = " + "{a = " * 400 + "1" + "}" * 400 + "\n"],
                         ids=["array999", "inline400"])
@pytest.mark.parametrize("command", ["sim", "alloc"])
def test_deeply_nested_cluster_file_is_refused(capsys, tmp_path, text, command):
    p = tmp_path / "c.toml"
    p.write_text(text + BASE, encoding="utf-8")
    argv = ["cluster", "sim", str(p)] if command == "sim" else ["alloc", str(p)]
    refused(capsys, argv, f"{p}: line 1: arrays or inline tables nested more than 32 deep")


@pytest.mark.nojit
@pytest.mark.parametrize("rows,needle", [
    ("0.0,user001," + "1" * 200_000 + "\n", "traffic.trace = '{}' line 2: 200,012 characters; a trace line must be "
                                            "at most 10,000"),
    ('0.0,"user001\n' + ("y" * 9_000 + "\n") * 20, "traffic.trace = '{}' line 17: not a valid CSV row (field "
                                                    "larger than field limit (131072))"),
], ids=["field-200k", "quoted-field-over-many-lines"])
def test_overlong_cluster_trace_lines_are_refused(capsys, tmp_path, rows, needle):
    (tmp_path / "j.csv").write_text("time,user,tasks\n" + rows, encoding="utf-8")
    p = tmp_path / "c.toml"
    p.write_text(TRACE, encoding="utf-8")
    refused(capsys, ["cluster", "sim", str(p)], needle.format(tmp_path / "j.csv"))


@pytest.mark.nojit
def test_cluster_paths_that_are_not_regular_files_are_refused(capsys, tmp_path):
    (tmp_path / "j.csv").mkdir()
    p = tmp_path / "c.toml"
    p.write_text(TRACE, encoding="utf-8")
    refused(capsys, ["cluster", "sim", str(p)], f"traffic.trace = '{tmp_path / 'j.csv'}': a directory, not a regular "
                                                "file; give the path of a file")
    refused(capsys, ["alloc", str(tmp_path)], f"{tmp_path}: a directory, not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
@pytest.mark.parametrize("what", ["scenario", "trace"])
def test_a_named_pipe_as_cluster_scenario_or_trace_is_refused_at_once(tmp_path, what):
    """In a process of its own: a read that blocked on the pipe would block the test runner too."""
    os.mkfifo(tmp_path / "pipe")
    p = tmp_path / "c.toml"
    p.write_text(TRACE.replace("j.csv", "pipe"), encoding="utf-8")
    target = tmp_path / "pipe" if what == "scenario" else p
    needle = (f"{tmp_path / 'pipe'}: a named pipe, not a regular file" if what == "scenario" else
              f"traffic.trace = '{tmp_path / 'pipe'}': a named pipe, not a regular file")
    r = subprocess.run([sys.executable, "-m", "mrfq.analysis.cli", "cluster", "sim", str(target)],
                       env=dict(os.environ), capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("mrfq: error: ") and needle in r.stderr, r.stderr


@pytest.mark.nojit
def test_cluster_name_lists_are_cut_to_a_handful(capsys, tmp_path):
    nodes = "".join(f'[[node]]\nname = "c{i}"\n' for i in range(2000))
    p = tmp_path / "c.toml"
    p.write_text(BASE + nodes + '[[node]]\nname = "bad"\nparent = ""\n', encoding="utf-8")
    err = refused(capsys, ["cluster", "sim", str(p)], "node[2000].parent = '': not a [[node]]; use 'root' or one of "
                                                      "bad, c0, c1, c10, c100, c1000 and 1,995 more\n")
    assert len(err) < 200
    p.write_text(BASE + nodes + '[[user]]\nname = "b"\ndemand = [1.0, 1.0]\nparent = "nowhere"\n', encoding="utf-8")
    refused(capsys, ["alloc", str(p)], "user[1].parent = 'nowhere': not a [[node]]; use 'root' or one of c0, c1, c10, "
                                       "c100, c1000, c1001 and 1,994 more\n")
    (tmp_path / "j.csv").write_text("time,user,tasks\n0.0,nobody,1\n", encoding="utf-8")
    p.write_text(TRACE, encoding="utf-8")
    refused(capsys, ["cluster", "sim", str(p)], "traffic.trace line 2: user = 'nobody' is not a [[user]]; known "
                                                "users: a, user000, user001, user002, user003, user004 and 95 more\n")


@pytest.mark.nojit
def test_huge_cluster_numbers_are_not_echoed_whole(capsys, tmp_path):
    big = "9" * 401
    p = tmp_path / "c.toml"
    p.write_text(toml(**{"[run]\n": f"[run]\nseed = {big}\n"}), encoding="utf-8")
    err = refused(capsys, ["cluster", "sim", str(p)], "run.seed = " + "9" * 57 + "... (401 digits): out of range")
    assert big not in err
    err = refused(capsys, ["cluster", "sim", "--preset", "hdrf-fig2", "--option", f"server={big}"],
                  "allocator option server = '" + "9" * 56 + "... (403 characters): must be one of")
    assert big not in err and len(err) < 300
    err = refused(capsys, ["cluster", "sim", "--preset", "hdrf-fig2", "--option", "x" * 5000 + "=1"],
                  "allocator option 'xxxxxxxx")
    assert len(err) < 400
