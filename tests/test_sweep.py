"""Sweeps: resumable SQLite store, SIGKILL safety, executors (local processes, dask LocalCluster)."""

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

import flows
from analysis.compare import CompareConfig, compare
from analysis.sweep import ResultStore, parse_loads
from flows.errors import MrfqError

TINY = """
name = "tiny"
resources = ["cpu", "link"]
[router]
window = 4
[traffic]
load = 0.5
[[class]]
name = "c1"
cost = [0.25, 1.0]
share = 2
mean_packets = 40
[[class]]
name = "c2"
cost = [1.0, 0.25]
share = 1
mean_packets = 40
"""


@pytest.fixture()
def tiny(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return p


def cfg(**kw):
    d = dict(schedulers=("drfq", "bmf-wfq"), loads=(0.3, 0.6), replications=2, max_replications=2,
             flows_per_replication=150.0, target=0.5)
    d.update(kw)
    return CompareConfig(**d)


def test_parse_loads():
    assert parse_loads("0.1:0.3:0.1") == [0.1, 0.2, 0.3]
    assert parse_loads("0.5,0.8") == [0.5, 0.8]
    for bad in ("0.5:1.0:0.25", "x", "0.2:0.4:0", "1.2"):
        with pytest.raises(MrfqError):
            parse_loads(bad)


def test_resume_reuses_every_point_and_gives_the_same_table(tiny, tmp_path):
    sc = flows.load_scenario(tiny)
    st = ResultStore(tmp_path / "r.sqlite")
    a = compare(sc, cfg(), st, executor="serial", progress=False, fluid=False)
    assert a.points_run == 8 and a.points_reused == 0
    b = compare(sc, cfg(), st, executor="serial", progress=False, fluid=False)
    assert b.points_run == 0 and b.points_reused == 8
    assert [r.to_json() for r in a.rows] == [r.to_json() for r in b.rows]
    assert st.count() == 8


def test_stopping_rule_adds_replications_until_target(tiny, tmp_path):
    sc = flows.load_scenario(tiny)
    st = ResultStore(tmp_path / "r.sqlite")
    res = compare(sc, cfg(schedulers=("bmf-wfq",), loads=(0.3,), target=0.03, max_replications=8), st,
                  executor="serial", progress=False, fluid=False)
    reps = {r.replications for r in res.rows}
    assert reps == {8}  # the 3 % target is out of reach of 150-flow replications: doubled 2 -> 4 -> 8
    loose = compare(sc, cfg(schedulers=("bmf-wfq",), loads=(0.3,), target=0.9, max_replications=8),
                    ResultStore(tmp_path / "r2.sqlite"), executor="serial", progress=False, fluid=False)
    assert {r.replications for r in loose.rows} == {2}


def test_local_processes_match_serial(tiny, tmp_path):
    sc = flows.load_scenario(tiny)
    a = compare(sc, cfg(), ResultStore(tmp_path / "a.sqlite"), executor="serial", progress=False, fluid=False)
    b = compare(sc, cfg(), ResultStore(tmp_path / "b.sqlite"), executor="local", workers=2, progress=False,
                fluid=False)
    assert [r.to_json() for r in a.rows] == [r.to_json() for r in b.rows]


def test_dask_local_cluster_matches_serial(tiny, tmp_path):
    pytest.importorskip("distributed")
    sc = flows.load_scenario(tiny)
    c = cfg(loads=(0.4,))
    a = compare(sc, c, ResultStore(tmp_path / "a.sqlite"), executor="serial", progress=False, fluid=False)
    b = compare(sc, c, ResultStore(tmp_path / "b.sqlite"), executor="dask:local", workers=2, progress=False,
                fluid=False)
    assert [r.to_json() for r in a.rows] == [r.to_json() for r in b.rows]


KILL_SCRIPT = """
import sys, flows
from analysis.compare import CompareConfig, compare
from analysis.sweep import ResultStore
sc = flows.load_scenario(sys.argv[1])
cfg = CompareConfig(schedulers=("drfq", "bmf-wfq", "pf-sfq"), loads=(0.3, 0.5, 0.7), replications=2,
                    max_replications=2, flows_per_replication=300.0, target=0.5)
compare(sc, cfg, ResultStore(sys.argv[2]), executor="serial", progress=False, fluid=False)
"""


def test_sigkill_loses_and_duplicates_nothing(tiny, tmp_path):
    db = tmp_path / "k.sqlite"
    script = tmp_path / "sweep.py"
    script.write_text(KILL_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    p = subprocess.Popen([sys.executable, str(script), str(tiny), str(db)], env=env)
    deadline = time.time() + 240
    n = 0
    while time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
        if db.exists():
            try:
                with sqlite3.connect(str(db), timeout=5) as c:
                    n = c.execute("SELECT COUNT(*) FROM points").fetchone()[0]
            except sqlite3.DatabaseError:
                n = 0
            if n >= 3:
                break
    assert p.poll() is None, "the sweep finished before it could be killed: make it longer"
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert 3 <= n < 18
    # re-run to completion: every point exactly once, same numbers as a clean run
    subprocess.run([sys.executable, str(script), str(tiny), str(db)], env=env, check=True)
    with sqlite3.connect(str(db)) as c:
        keys = [r[0] for r in c.execute("SELECT key FROM points")]
    assert len(keys) == len(set(keys)) == 18
    clean = tmp_path / "clean.sqlite"
    subprocess.run([sys.executable, str(script), str(tiny), str(clean)], env=env, check=True)
    with sqlite3.connect(str(db)) as a, sqlite3.connect(str(clean)) as b:
        q = "SELECT key, payload FROM points ORDER BY key"
        pa = [(k, _strip_wall(v)) for k, v in a.execute(q)]
        pb = [(k, _strip_wall(v)) for k, v in b.execute(q)]
    assert pa == pb


def _strip_wall(payload):
    import json

    d = json.loads(payload)
    d.pop("wall_seconds")
    return d


def test_store_refuses_garbage(tmp_path):
    f = tmp_path / "x.sqlite"
    f.write_text("this is not sqlite" * 100)
    with pytest.raises(MrfqError):
        ResultStore(f)


def test_results_csv_export(tiny, tmp_path, capsys):
    from router.cli import main

    sc = flows.load_scenario(tiny)
    db = tmp_path / "r.sqlite"
    compare(sc, cfg(loads=(0.4,)), ResultStore(db), executor="serial", progress=False, fluid=False)
    assert main(["results", str(db), "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("scenario,scenario_hash,scheduler,load,replication")
    # 2 schedulers x 1 load x 2 replications x 2 classes
    assert len(lines) == 1 + 2 * 1 * 2 * 2
    assert all(",tiny," not in l or l.startswith("tiny,") for l in lines[1:])
    assert main(["results", str(db)]) == 0
    assert "4 stored points" in capsys.readouterr().out
