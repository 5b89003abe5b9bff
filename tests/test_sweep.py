"""Sweeps: resumable SQLite store, SIGKILL safety, executors (local processes, dask LocalCluster)."""

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from mrfq import flows
from mrfq.analysis.compare import CompareConfig, compare
from mrfq.analysis.sweep import ResultStore
from mrfq.flows.cli_args import parse_loads
from mrfq.flows.errors import MrfqError

TINY = """
name = "tiny"
resources = ["cpu", "link"]
[router]
# the default window (30): the sweep's loops with their packet ring compiled in, which other tests
# compile too (a compilation costs far more than these runs)
window = 30
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


def test_a_dask_sweep_whose_points_are_all_stored_says_it_ran_none(tiny, tmp_path, capsys):
    """mrfq compare --dask on a store that already holds every point runs nothing on the cluster:
    it says so, and how to recompute."""
    pytest.importorskip("distributed")
    from mrfq.analysis.cli import main

    db = tmp_path / "r.sqlite"
    args = ["compare", str(tiny), "--loads", "0.3", "--schedulers", "drfq", "--replications", "2",
            "--max-replications", "2", "--flows", "150", "--results", str(db)]
    assert main(args + ["--workers", "1"]) == 0
    capsys.readouterr()
    assert main(args + ["--dask", "local"]) == 0
    out = capsys.readouterr().out
    assert f"0 points run on the cluster: all 2 were in {db}; use --results NEW.sqlite to recompute" in out


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
import sys
from mrfq import flows
from mrfq.analysis.compare import CompareConfig, compare
from mrfq.analysis.sweep import ResultStore
sc = flows.load_scenario(sys.argv[1])
flows_per_replication = float(sys.argv[4]) if len(sys.argv) > 4 else 300.0
cfg = CompareConfig(schedulers=("drfq", "bmf-wfq", "pf-sfq"), loads=(0.3, 0.5, 0.7), replications=2,
                    max_replications=2, flows_per_replication=flows_per_replication, target=0.5)
compare(sc, cfg, ResultStore(sys.argv[2]), executor=sys.argv[3] if len(sys.argv) > 3 else "serial",
        workers=2, progress=False, fluid=False)
"""


def _count(db):
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
            return c.execute("SELECT COUNT(*) FROM points").fetchone()[0]
    except sqlite3.DatabaseError:
        return 0


def test_sigkill_at_five_moments_loses_and_duplicates_nothing(tiny, tmp_path):
    """Five sweeps on one store, each SIGKILLed at a different moment (after 0, 2, 5, 9 and 13
    stored points: the first before any point is committed), then a re-run: every point exactly
    once, the same numbers as a clean run, and SQLite's integrity check passes.  10^5 flows per
    replication, about 160 ms per point: with 300 (about 17 ms per point with a run's fixed cost
    of 0.2 ms) a busy CI machine saw eight points stored between two polls."""
    more = ["serial", "100000"]
    db = tmp_path / "k.sqlite"
    script = tmp_path / "sweep.py"
    script.write_text(KILL_SCRIPT)
    env = dict(os.environ)
    seen = []
    for moment in (0, 2, 5, 9, 13):
        start = _count(db) if db.exists() else 0
        p = subprocess.Popen([sys.executable, str(script), str(tiny), str(db), *more], env=env)
        deadline = time.time() + 240
        n = start
        while time.time() < deadline and p.poll() is None:
            time.sleep(0.02)
            n = _count(db) if db.exists() else 0
            if n >= moment and (moment > 0 or db.exists()):
                break
        assert p.poll() is None, "the sweep finished before it could be killed: make it longer"
        p.send_signal(signal.SIGKILL)
        p.wait()
        seen.append(_count(db))
    assert seen == sorted(seen) and seen[-1] < 18, seen
    # re-run to completion: every point exactly once, same numbers as a clean run
    subprocess.run([sys.executable, str(script), str(tiny), str(db), *more], env=env, check=True)
    with sqlite3.connect(str(db)) as c:
        keys = [r[0] for r in c.execute("SELECT key FROM points")]
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert len(keys) == len(set(keys)) == 18
    clean = tmp_path / "clean.sqlite"
    subprocess.run([sys.executable, str(script), str(tiny), str(clean), *more], env=env, check=True)
    with sqlite3.connect(str(db)) as a, sqlite3.connect(str(clean)) as b:
        q = "SELECT key, payload FROM points ORDER BY key"
        pa = [(k, _strip_wall(v)) for k, v in a.execute(q)]
        pb = [(k, _strip_wall(v)) for k, v in b.execute(q)]
    assert pa == pb


def _children(pid):
    """Pids whose parent is ``pid`` (from /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d))
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_of_a_sweep_leaves_no_worker_behind(tiny, tmp_path):
    db = tmp_path / "w.sqlite"
    script = tmp_path / "sweep.py"
    script.write_text(KILL_SCRIPT)
    env = dict(os.environ)
    # 100x the flows per point of the five-moments test: it is killed anyway, and with 300 or 3000 flows
    # the pool's whole life could fall between two polls (CI saw it end first; a faster engine made it likelier)
    p = subprocess.Popen([sys.executable, str(script), str(tiny), str(db), "local", "30000"], env=env)
    deadline = time.time() + 240
    workers = []
    while time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
        workers = _children(p.pid)
        if len(workers) >= 2 and db.exists() and _count(db) >= 1:
            break
    assert p.poll() is None and len(workers) >= 2, "no pool workers seen: make the sweep longer"
    p.send_signal(signal.SIGKILL)
    p.wait()
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)], "pool workers outlived the SIGKILLed sweep"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_stops_a_sweep_and_its_workers(tiny, tmp_path):
    """SIGINT to the foreground process group (what Ctrl-C does): exit 130 with one line, no worker
    left, the store intact with the points finished so far."""
    db = tmp_path / "c.sqlite"
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-m", "mrfq.analysis.cli", "compare", str(tiny), "--loads", "0.3,0.5,0.7",
                          "--schedulers", "drfq,bmf-wfq,pf-sfq", "--flows", "30000", "--replications", "2",
                          "--max-replications", "2", "--target", "0.5", "--workers", "2", "--json",
                          "--results", str(db)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as from a terminal
    try:
        deadline = time.time() + 240
        workers = []
        while time.time() < deadline and p.poll() is None:
            time.sleep(0.05)
            workers = _children(p.pid)
            if len(workers) >= 2 and db.exists() and _count(db) >= 1:
                break
        assert p.poll() is None and len(workers) >= 2, "no pool workers seen: make the sweep longer"
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "mrfq: interrupted (no output file was left half-written)"
    assert "Traceback" not in err and out == ""
    time.sleep(1.0)
    assert not [w for w in workers if _alive(w)]
    with sqlite3.connect(str(db)) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert 1 <= c.execute("SELECT COUNT(*) FROM points").fetchone()[0] < 18


DASK_BLOCK_SCRIPT = """
import ctypes, os, sys
from mrfq.analysis import sweep
from mrfq.analysis.sweep import Point

def blocking(d, nm, p):  # holds the GIL for two minutes, as a long kernel would
    open(os.path.join(sys.argv[1], f"started-{os.getpid()}"), "w").close()
    ctypes.PyDLL(None).sleep(120)
    return {}

if __name__ == "__main__":  # dask's workers are spawned: they import this file again
    sweep.run_point = blocking          # looked up at submit time; pickled by value from __main__
    sweep._warm = lambda specs: None    # nothing to compile
    sweep._warm_specs = lambda tasks: []
    tasks = [(Point("h", "drfq", load, 0, 1, 1.0), {}, "x") for load in (0.5, 0.7)]
    if sys.argv[2] == "plain":  # without the plugin: dask's own parent pipe only
        import mrfq.analysis.dask_plugin as dp
        dp.register_die_with_parent = lambda client, pid: None
    sweep.execute(tasks, lambda p, payload: None, executor="dask:local", workers=2)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, prctl")
def test_sigkill_of_a_dask_local_sweep_leaves_no_worker_behind(tmp_path):
    """dask:local workers busy in a GIL-holding call die at once with the SIGKILLed sweep
    (PR_SET_PDEATHSIG from analysis.dask_plugin); dask's own parent pipe would wait for the GIL."""
    pytest.importorskip("distributed")
    script = tmp_path / "dask_sweep.py"
    script.write_text(DASK_BLOCK_SCRIPT)
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, str(script), str(tmp_path), "plugin"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = []
    try:
        deadline = time.time() + 180
        while time.time() < deadline and p.poll() is None:
            time.sleep(0.1)
            workers = [int(f.name.split("-")[1]) for f in tmp_path.glob("started-*")]
            if len(workers) >= 2:
                break
        assert p.poll() is None and len(workers) == 2, "the dask workers did not start their tasks"
        assert all(w in _children(p.pid) for w in workers)
        p.send_signal(signal.SIGKILL)
        p.wait()
        deadline = time.time() + 10
        while time.time() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)], "dask workers outlived the SIGKILLed sweep"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


def test_die_with_parent_exits_an_orphaned_worker(tmp_path):
    """The parent-watch fallback alone (no prctl): a worker whose parent vanished exits."""
    code = (
        "import os, sys, time\n"
        "from mrfq.analysis import sweep\n"
        "sweep.PARENT_WATCH_SECONDS = 0.05\n"
        "sweep._die_with_parent(os.getppid() + 10**6)\n"  # not our parent: exits at once
        "print('still alive')\n"
    )
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "still alive" not in r.stdout


def _strip_wall(payload):
    import json

    d = json.loads(payload)
    d.pop("wall_seconds")
    return d


def test_store_refuses_garbage(tmp_path):
    f = tmp_path / "x.sqlite"
    f.write_text("this is not sqlite" * 100)
    before = f.read_bytes()
    with pytest.raises(MrfqError, match="not an SQLite file"):
        ResultStore(f)
    assert f.read_bytes() == before


def _foreign(path, table):
    with sqlite3.connect(str(path)) as c:
        c.execute(f"CREATE TABLE {table} (a, b)")
        c.execute(f"INSERT INTO {table} VALUES (1, 2)")
    c.close()
    return path.read_bytes()


@pytest.mark.nojit
@pytest.mark.parametrize("argv", [["results", "{db}"], ["results", "{db}", "--csv"],
                                  ["compare", "--preset", "br-unbalanced", "--quick", "--loads", "0.3",
                                   "--results", "{db}"]])
def test_foreign_databases_are_refused_byte_identical(tmp_path, capsys, argv):
    from mrfq.analysis.cli import main

    for table in ("points", "other"):  # with our table name and without it
        db = tmp_path / f"{table}.sqlite"
        before = _foreign(db, table)
        code = main([a.replace("{db}", str(db)) for a in argv])
        err = capsys.readouterr().err
        assert code == 2 and "another application" in err and err.count("\n") == 1, err
        assert db.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(db.name)) == [db.name]


@pytest.mark.nojit
def test_store_carries_the_mrfq_marker_and_results_opens_read_only(tmp_path, capsys):
    from mrfq.analysis.cli import main
    from mrfq.analysis.sweep import APPLICATION_ID, SCHEMA_VERSION

    db = tmp_path / "r.sqlite"
    st = ResultStore(db)
    st.close()
    with sqlite3.connect(str(db)) as c:
        assert c.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID == 0x6D726671
        assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    c.close()
    before = db.read_bytes()
    assert main(["results", str(db)]) == 0
    assert "0 stored points" in capsys.readouterr().out
    assert db.read_bytes() == before
    ro = ResultStore(db, readonly=True)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        ro.conn.execute("CREATE TABLE x (a)")
    ro.close()


@pytest.mark.nojit
def test_truncated_empty_and_missing_stores_are_refused_untouched(tmp_path, capsys):
    from mrfq.analysis.cli import main

    db = tmp_path / "r.sqlite"
    st = ResultStore(db)
    st.fluid_put("k", "h", "drf", 0.5, {"gamma": [1.0]})
    st.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    st.close()
    whole = db.read_bytes()
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(whole[: len(whole) - 1024])
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    for f, msg in ((cut, "truncated"), (empty, "an empty file")):
        before = f.read_bytes()
        with pytest.raises(MrfqError, match=msg):
            ResultStore(f)
        assert f.read_bytes() == before
    with pytest.raises(MrfqError, match="folder .* does not exist"):
        ResultStore(tmp_path / "missing" / "r.sqlite")
    assert main(["results", str(tmp_path / "none.sqlite")]) == 2
    assert "no such results file" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite").exists()


@pytest.mark.nojit
def test_corrupt_payload_is_a_clean_error(tmp_path, capsys):
    from mrfq.analysis.cli import main

    db = tmp_path / "r.sqlite"
    st = ResultStore(db)
    with st.conn:
        st.conn.execute("INSERT INTO points VALUES ('k', 'h', 's', 'drfq', 0.5, 0, 1, 10.0, '{not json', 0.0)")
    with pytest.raises(MrfqError, match="corrupt payload"):
        st.get("k")
    st.close()
    assert main(["results", str(db), "--csv", "--raw"]) == 2
    assert "corrupt payload" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_read_only_folder_is_refused_before_work(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    try:
        with pytest.raises(MrfqError, match="not writable"):
            ResultStore(ro / "r.sqlite")
    finally:
        os.chmod(ro, 0o755)


def _table_lines(text):
    """(class, row line) of every row of the tables ``mrfq results`` printed."""
    out, cls = [], None
    for line in text.splitlines():
        if line.startswith("class "):
            cls = line[len("class "):]
        elif line.startswith("  ") and not line.startswith("  scheduler "):
            out.append((cls, line))
    return out


def _line_of(row):
    """The table's line of one CSV row, formatted as the table formats it."""
    gf = "-" if row["gamma_fluid"] == "" else f"{float(row['gamma_fluid']):.4f}"
    if row["gamma_fluid"] != "" and row["insensitivity_guaranteed"] == "False":
        gf += "*"
    re = "-" if row["rel_error"] == "" else f"{100 * float(row['rel_error']):+.1f}%"
    ins = "-" if row["inside"] == "" else ("yes" if row["inside"] == "True" else "NO")
    g = float(row["gamma_packet"]) if row["gamma_packet"] else float("nan")
    lo, hi = (float(row[k]) if row[k] else float("nan") for k in ("ci_low", "ci_high"))
    return (row["class"], f"  {row['scheduler']:<14} {float(row['load']):>5.2f} {g:>12.4f} [{lo:.4f}, {hi:.4f}] "
                          f"{gf:>11} {re:>8} {ins:>5} {int(row['replications']):>4} {int(row['completed']):>6}")


def _csv_rows(text):
    import csv
    import io

    return list(csv.DictReader(io.StringIO(text)))


def test_results_table_csv_and_raw(tiny, tmp_path, capsys):
    """mrfq results prints the table mrfq compare printed; --csv writes that table (the same numbers,
    in compare --csv's columns); --csv --raw the stored points' per-replication sums."""
    from mrfq.analysis.cli import main
    from mrfq.analysis.cli_compare import rows_csv
    from mrfq.analysis.compare import format_rows

    sc = flows.load_scenario(tiny)
    db = tmp_path / "r.sqlite"
    st = ResultStore(db)
    res = compare(sc, cfg(loads=(0.4,)), st, executor="serial", progress=False, fluid=False)
    st.close()
    assert main(["results", str(db)]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("sweep 1: tiny, schedulers drfq,bmf-wfq, loads 0.4, replications 2..2, target 0.5, "
                            "150 flows per replication, seed 1, no fluid model (stored ")
    assert "\n".join(format_rows(res.rows)) in shown  # the table compare printed
    assert shown.rstrip().endswith(f"{db}: 4 stored points, 1 sweep table; --csv [FILE.csv] writes the tables as "
                                   "CSV, --csv --raw the stored points' per-replication sums")
    out = tmp_path / "t.csv"
    assert main(["results", str(db), "--csv", str(out)]) == 0
    assert capsys.readouterr().out == f"4 rows of 1 sweep table written to {out}\n"
    text = out.read_bytes().decode()  # csv's \r\n line ends, as on stdout
    rows = _csv_rows(text)
    assert list(rows[0]) == ["sweep", "scenario", "scheduler", "load", "class", "gamma_packet", "ci_low", "ci_high",
                             "gamma_fluid", "rel_error", "inside", "replications", "completed",
                             "insensitivity_guaranteed"]
    assert len(rows) == 2 * 1 * 2  # schedulers x loads x classes
    assert sorted(_line_of(r) for r in rows) == sorted(_table_lines(shown))
    assert {(r["sweep"], r["scenario"]) for r in rows} == {("1", "tiny")}
    for r, row in zip(rows, res.rows):  # full precision, not the table's rounding
        assert (float(r["gamma_packet"]), float(r["ci_low"]), float(r["ci_high"])) == (row.gamma_packet, *row.ci)
    # the rows of compare --csv, after the two leading columns; the same without a file name (stdout)
    assert [line.split(",", 2)[2] for line in text.splitlines()] == rows_csv([r.to_json() for r in res.rows]).splitlines()
    assert main(["results", str(db), "--csv"]) == 0
    assert capsys.readouterr().out == text
    # --raw: every stored point and class, its batch sums
    assert main(["results", str(db), "--csv", "--raw"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("scenario,scenario_hash,scheduler,load,replication,seed,duration,class,departed,"
                        "flow_time_integral,completed,arrived,services,wall_seconds")
    # 2 schedulers x 1 load x 2 replications x 2 classes
    assert len(lines) == 1 + 2 * 1 * 2 * 2
    assert all(",tiny," not in l or l.startswith("tiny,") for l in lines[1:])
    raw = tmp_path / "raw.csv"
    assert main(["results", str(db), "--raw", "--csv", str(raw)]) == 0
    assert capsys.readouterr().out == f"4 stored points' per-replication sums written to {raw}\n"
    assert raw.read_text().splitlines()[0] == lines[0] and len(raw.read_text().splitlines()) == len(lines)
    # the same sweep again replaces its table; another adds one
    st = ResultStore(db)
    compare(sc, cfg(loads=(0.4,)), st, executor="serial", progress=False, fluid=False)
    compare(sc, cfg(loads=(0.4,), schedulers=("drfq",)), st, executor="serial", progress=False, fluid=False)
    assert [len(sw["rows"]) for sw in st.sweeps()] == [4, 2]
    st.close()


def _stored_table(db):
    """A store holding two sweeps' tables made by hand: every kind of cell the table shows."""
    from mrfq.analysis.compare import CompareConfig, Row

    st = ResultStore(db)
    rows = [Row("drfq", 0.3, "c1", 0.123456789, (0.12, 0.127), 0.125, -0.0123, True, 4, 77),
            Row("drfq", 0.3, "c2", 0.5, (0.49, 0.51), 0.45, 0.111, False, 4, 31, insensitivity_guaranteed=False),
            Row("pf-sfq", 0.9, "c1", float("nan"), (float("nan"), float("nan")), None, None, None, 2, 0)]
    config = {**CompareConfig(schedulers=("drfq", "pf-sfq"), loads=(0.3, 0.9)).__dict__, "fluid": True}
    st.sweep_put("a", "one", "h1", config, [r.to_json() for r in rows])
    st.sweep_put("b", "two", "h2", config, [rows[0].to_json()])
    st.close()
    return rows


@pytest.mark.nojit
def test_results_csv_holds_what_the_table_shows(tmp_path, capsys):
    """Every cell of the printed table, from the CSV: '-', 'NO', '*', NaN; one row per sweep, scheduler,
    load and class, the sweep numbered as above its table."""
    from mrfq.analysis.cli import main

    db = tmp_path / "r.sqlite"
    _stored_table(db)
    assert main(["results", str(db)]) == 0
    shown = capsys.readouterr().out
    assert shown.count("sweep 1: one, schedulers drfq,pf-sfq, loads 0.3,0.9, replications 2..32, target 0.02") == 1
    assert "sweep 2: two," in shown and "0 stored points, 2 sweep tables" in shown
    assert "0.4500*" in shown and "   NO " in shown and "nan [nan, nan]" in shown
    assert main(["results", str(db), "--csv"]) == 0
    rows = _csv_rows(capsys.readouterr().out)
    assert [(r["sweep"], r["scenario"], r["scheduler"], r["class"]) for r in rows] == [
        ("1", "one", "drfq", "c1"), ("1", "one", "drfq", "c2"), ("1", "one", "pf-sfq", "c1"), ("2", "two", "drfq", "c1")]
    assert sorted(_line_of(r) for r in rows) == sorted(_table_lines(shown))
    assert rows[0]["gamma_packet"] == "0.123456789" and rows[1]["insensitivity_guaranteed"] == "False"
    assert [rows[2][k] for k in ("gamma_packet", "ci_low", "gamma_fluid", "rel_error", "inside")] == [""] * 5


@pytest.mark.nojit
@pytest.mark.parametrize("argv, msg", [
    (["--raw"], "mrfq: error: --raw: selects what --csv writes (every stored point's per-replication sums); "
                "give both: mrfq results FILE.sqlite --csv [FILE.csv] --raw"),
    (["--csv", ""], "mrfq: error: --csv: empty file name; give a file name, e.g. --csv out.csv"),
    (["--csv", "out"], "mrfq: error: --csv 'out': is a folder; give a file name"),
    (["--csv", "./r.sqlite"], "mrfq: error: --csv './r.sqlite': the same file as results; give each output its "
                              "own file"),
    (["--csv", "missing/t.csv"], "mrfq: error: --csv 'missing/t.csv': folder 'missing' does not exist"),
    (["--csv", "other.sqlite"], "mrfq: error: --csv 'other.sqlite': an SQLite file (a results store?), which --csv "
                                "would replace; give a new file name"),
], ids=["raw-alone", "empty", "folder", "the-store", "no-folder", "another-store"])
def test_results_csv_refusals(tmp_path, monkeypatch, capsys, argv, msg):
    """Bad --csv / --raw input: one line naming the option, exit 2, no traceback, the store untouched."""
    from mrfq.analysis.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    _stored_table(tmp_path / "r.sqlite")
    ResultStore(tmp_path / "other.sqlite").close()
    before = {p: (tmp_path / p).read_bytes() for p in ("r.sqlite", "other.sqlite")}
    assert main(["results", "r.sqlite"] + argv) == 2
    cap = capsys.readouterr()
    assert cap.err == msg + "\n" and cap.out == ""
    if argv == ["--csv", "other.sqlite"]:  # the store first, as the command line of old took it
        assert main(["results", "--csv", "r.sqlite"]) == 2
        assert capsys.readouterr().err == (
            "mrfq: error: results: no results file given (--csv took 'r.sqlite' as the CSV file to write); "
            "mrfq results FILE.sqlite [--csv [FILE.csv]] [--raw]\n")
    assert {p: (tmp_path / p).read_bytes() for p in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite", "out", "r.sqlite"]


@pytest.mark.nojit
def test_a_store_without_tables_is_read_and_its_csv_refused(tmp_path, capsys):
    """A store whose sweeps stored no table (written before they did): mrfq results says so and how to get
    one; --csv is refused naming the option (--raw still exports the points); a sweep adds the table."""
    from mrfq.analysis.cli import main

    db = tmp_path / "r.sqlite"
    st = ResultStore(db)
    with st.conn:
        st.conn.execute("INSERT INTO points VALUES ('k', 'h', 'tiny', 'drfq', 0.5, 0, 1, 10.0, ?, 0.0)", (
            '{"classes": ["c1"], "departed": [[1, 2]], "area": [[3.0, 4.0]], "completed": [2], "arrived": [3], '
            '"services": 9, "wall_seconds": 0.1}',))
        st.conn.execute("DROP TABLE sweeps")
    st.close()
    assert main(["results", str(db)]) == 0
    assert capsys.readouterr().out == (
        f"{db}: 1 stored points, no finished sweep's table (a sweep stores it when it ends: re-run its mrfq compare "
        "command, which reuses the stored points); --csv [FILE.csv] writes the tables as CSV, --csv --raw the "
        "stored points' per-replication sums\n")
    assert main(["results", str(db), "--csv"]) == 2
    cap = capsys.readouterr()
    assert cap.err == (f"mrfq: error: --csv: {db} holds no finished sweep's table (1 stored points); re-run its mrfq "
                       "compare command, which reuses them and stores the table, or give --raw for the stored "
                       "points' per-replication sums\n") and cap.out == ""
    assert main(["results", str(db), "--csv", "--raw"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "tiny,h,drfq,0.5,0,1,10.0,c1,3,7.0,2,3,9,0.1"
    st = ResultStore(db)  # a sweep's store: the table is back (empty)
    assert st.sweeps() == [] and st.count() == 1
    st.close()


class _Terminal:
    """A terminal that keeps every frame the progress bar draws."""

    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass

    def isatty(self):
        return True

    def frames(self):
        import re

        return [f for f in re.split(r"[\r\n]", re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", self.text)) if f.strip()]


def test_progress_follows_the_rounds_of_the_stopping_rule(tiny, tmp_path):
    """Each round of the stopping rule counts its own runs, then the check of every point: the bar
    never says that the sweep's runs are all done while a round is still to come (it said 4/4 at the end
    of round 1 and then grew to 8)."""
    import re

    from mrfq.analysis.compare import SweepProgress

    sc = flows.load_scenario(tiny)
    term = _Terminal()
    st = ResultStore(tmp_path / "r.sqlite")
    # no interval reaches 1e-9: every point doubles 2 -> 4 (the cap), in a second round
    res = compare(sc, cfg(loads=(0.4,), max_replications=4, target=1e-9), st, executor="serial",
                  progress=SweepProgress(term), fluid=False)
    st.close()
    assert res.points_run == 8 and {r.replications for r in res.rows} == {4}
    phases = []
    for f in term.frames():
        m = re.match(r"(mrfq compare round .*?): (\d+)/(\d+) (runs|points) +(\d+)%", f)
        assert m, f
        desc, n, total, unit, pct = m[1], int(m[2]), int(m[3]), m[4], int(m[5])
        assert (pct == 100) == (n == total)
        if not phases or phases[-1][0] != desc:
            phases.append((desc, total, unit, []))
        assert phases[-1][1:3] == (total, unit) and n <= total
        phases[-1][3].append(n)
    assert [p[:3] for p in phases] == [
        ("mrfq compare round 1 (2 points)", 4, "runs"),
        ("mrfq compare round 1 done, checking the intervals", 2, "points"),
        ("mrfq compare round 2 (2 of 2 points need more replications)", 4, "runs"),
        ("mrfq compare round 2 done, checking the intervals", 2, "points")]
    assert all(p[3][0] == 0 for p in phases)  # a phase is shown as it starts
    assert term.text.endswith("\r") or term.text.endswith("\x1b[A")  # the line cleared at the end (leave=False)


@pytest.mark.nojit
def test_progress_names_the_phase_and_the_coarse_controls_level0_runs():
    """Every phase starts at 0 of its own total, under its own name; the coarse control's level-0 runs
    are named while they go on and gone in the next phase; nothing is left on the line at the end."""
    import re

    from mrfq.analysis.compare import SweepProgress

    term = _Terminal()
    bar = SweepProgress(term)
    bar.runs(1, 36, 36, 72)
    for _ in range(72):
        bar.ran()
    bar.checking(1, 36)
    bar.level0("drfq-dovetail", 0.9, 64, 256)
    frames = term.frames()
    assert frames[0].startswith("mrfq compare round 1 (36 points): 0/72 runs   0%|")
    assert frames[-1].startswith("mrfq compare round 1 done, checking the intervals: 0/36 points   0%|")
    assert re.search(r"\| \[\d\d:\d\d<[^,\]]*, coarse control of drfq-dovetail at 0\.9: level-0 runs 64->256\]$",
                     frames[-1]), frames[-1]
    bar.checked()
    bar.runs(2, 14, 36, 28)
    assert term.frames()[-1].startswith("mrfq compare round 2 (14 of 36 points need more replications): 0/28 runs   0%|")
    assert "coarse" not in term.frames()[-1]
    bar.close()
    bar.close()  # twice: nothing more
    assert term.text.endswith("\r") and term.text.split("\r")[-2].strip() == ""


@pytest.mark.nojit
def test_the_sweep_progress_bar_is_for_a_terminal_only(tiny, monkeypatch, capsys):
    """mrfq compare shows its bar when stderr is a terminal, never with --json or into a pipe."""
    import mrfq.analysis.compare as compare_module
    from mrfq.analysis.cli import main

    seen = []

    def fake(sc, cfg, store, **kw):
        seen.append(kw["progress"])
        raise MrfqError("stopped before the first run")

    monkeypatch.setattr(compare_module, "compare", fake)
    monkeypatch.chdir(tiny.parent)
    argv = ["compare", str(tiny), "--loads", "0.4", "--schedulers", "drfq", "--quick"]
    assert main(argv) == 2                        # stderr is no terminal here
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(argv) == 2
    assert main(argv + ["--json"]) == 2
    assert seen == [False, True, False]
    capsys.readouterr()
