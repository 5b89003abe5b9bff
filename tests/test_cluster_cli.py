"""`mrfq cluster sim | alloc | presets` (analysis/cli_cluster.py), called through an argparse
parser built with `register`, as the dispatcher will."""

import argparse
import json

import pytest

from mrfq.analysis.cli_cluster import parse_options, register
from mrfq.flows.errors import MrfqError

pytestmark = pytest.mark.nojit


def _run(argv, capsys):
    p = argparse.ArgumentParser(prog="mrfq")
    register(p.add_subparsers(dest="cmd", required=True))
    args = p.parse_args(argv)
    rc = args.func(args)
    return rc, capsys.readouterr().out


def test_alloc_json_has_every_objective(capsys):
    rc, out = _run(["cluster", "alloc", "--preset", "drf-nsdi", "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["users"] == ["A", "B"]
    assert set(d["objectives"]) == {"drf", "drfh", "h-drf", "asset", "ceei"}
    assert d["objectives"]["drf"]["tasks"] == pytest.approx([3.0, 2.0])  # [DRF] §4
    assert d["objectives"]["h-drf"]["tasks"] == pytest.approx([3.0, 2.0])


def test_alloc_hdrf_text(capsys):
    rc, out = _run(["cluster", "alloc", "--preset", "hdrf-fig4", "--objective", "h-drf"], capsys)
    assert rc == 0
    assert "n2,2           tasks    10.0000   dominant share 1.0000" in out
    assert "n2,1           tasks     5.0000   dominant share 0.5000" in out


def test_sim_json_and_plot(tmp_path, capsys):
    png = tmp_path / "shares.png"
    rc, out = _run(["cluster", "sim", "--preset", "hdrf-fig4", "--allocator", "naive-h-drf", "--duration", "100",
                    "--json", "--plot", str(png)], capsys)
    d = json.loads(out)
    assert rc == 0 and d["allocator"] == "naive-h-drf"
    assert d["share_mean"] == pytest.approx([1.0, 0.0, 1.0])  # [H-DRF] §3.3: n2,1 starved
    assert "fluid" not in d  # a baseline: no objective
    assert png.stat().st_size > 1000
    rc, out = _run(["cluster", "sim", "--preset", "hdrf-fig5", "--duration", "60", "--option", "ignore_blocked=false",
                    "--json"], capsys)
    d = json.loads(out)
    assert d["options"] == {"ignore_blocked": False}
    assert d["share_mean"] == pytest.approx([1 / 3, 1 / 3, 1 / 3, 2 / 3, 1 / 3])  # rescaling alone, Fig. 5
    assert d["fluid"]["dominant_share"] == pytest.approx([1 / 3, 1 / 3, 1 / 3, 1 / 2, 1 / 2])


def test_sim_text_with_jobs(capsys):
    rc, out = _run(["cluster", "sim", "--preset", "cluster-poisson", "--duration", "250", "--seed", "3"], capsys)
    assert rc == 0
    assert "cluster-poisson: allocator drfh-best-fit, 4 servers, averages over [200, 250]" in out
    assert "utilisation: cpu" in out and "tasks/s" in out
    assert "mean JCT" in out


@pytest.mark.parametrize("argv, message", [
    (["cluster", "sim"], "no scenario: give FILE.toml or --preset NAME"),
    (["cluster", "sim", "--preset", "nope"], "--preset 'nope': unknown cluster preset"),
    (["cluster", "sim", "--preset", "drf-nsdi", "--allocator", "fifo"], "--allocator 'fifo': unknown"),
    (["cluster", "sim", "--preset", "drf-nsdi", "--option", "rescale=true"], "not an option of 'drf'"),
    (["cluster", "sim", "--preset", "hdrf-fig4", "--option", "server=worst-fit"], "must be one of"),
    (["cluster", "sim", "--preset", "drf-nsdi", "--option", "oops"], "must be KEY=VALUE"),
    (["cluster", "sim", "--preset", "drf-nsdi", "--duration", "-1"], "--duration = '-1': out of range; give a number in (0, 1e+15]"),
    (["cluster", "sim", "--preset", "drf-nsdi", "--seed", "1.5"], "--seed = '1.5': must be a whole number"),
    (["cluster", "sim", "--preset", "drf-nsdi", "--duration", "10"], "run.warmup = 50: must be less than run.duration"),
    (["cluster", "alloc", "--preset", "drf-nsdi", "--objective", "pf"], "--objective 'pf': unknown"),
])
def test_errors_are_one_line(argv, message, capsys):
    with pytest.raises(MrfqError) as e:
        _run(argv, capsys)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_bad_toml_file(tmp_path, capsys):
    f = tmp_path / "c.toml"
    f.write_text('resources = ["cpu"]\n[[server]]\ncapacity = [4]\n[[user]]\ndemand = [-1]\n')
    with pytest.raises(MrfqError, match=r"user\[0\].demand\[0\] = -1: out of range; must be in \[0, 1e\+12\]"):
        _run(["cluster", "alloc", str(f)], capsys)


def test_presets_lists_every_preset(capsys):
    rc, out = _run(["cluster", "presets"], capsys)
    assert rc == 0 and "hdrf-fig2" in out and "drfh-two-servers" in out


def test_parse_options():
    assert parse_options(["a=true", "b=FALSE", "n=3", "s=best-fit"]) == {"a": True, "b": False, "n": 3,
                                                                         "s": "best-fit"}


def test_hdrf_examples_script_matches_the_paper(capsys):
    import runpy
    from pathlib import Path

    mod = runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "cluster_hdrf_examples.py"))
    assert mod["main"](["--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert len(table) >= 40 and all(r["ok"] for r in table)


def test_standalone_main_exit_codes(capsys):
    from mrfq.analysis.cli_cluster import main

    assert main(["alloc", "--preset", "drf-nsdi", "--objective", "drf"]) == 0
    assert "A              tasks     3.0000" in capsys.readouterr().out
    assert main(["sim", "--preset", "drf-nsdi", "--allocator", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mrfq: --allocator 'nope': unknown") and err.count("\n") == 1
