"""The installed package: one import name, presets shipped as package data, the entry point.

Every test imports ``mrfq`` as a user does, from the installed distribution (a wheel in CI, an
editable install while developing: ``pyproject.toml`` maps the folders fq/, flows/, router/ and
analysis/ into ``mrfq``).  These tests run Python from an empty folder, or from one holding a
user's own ``analysis.py``, ``flows.py`` and ``router/``, and check what ``import mrfq`` finds.
The wheel test is skipped for an editable install (``pip install -e .``) and required when
``MRFQ_EXPECT_WHEEL=1`` (``.ci/run`` sets it after installing the built wheel).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _installed(tmp: Path) -> dict:
    """What the environment has installed, read from an empty folder (the checkout's own build
    metadata, ``mrfq.egg-info``, must not answer for it): editable or not, and the files."""
    code = ("import importlib.metadata as m, json; d = m.distribution('mrfq'); u = d.read_text('direct_url.json'); "
            "print(json.dumps({'editable': bool(u and json.loads(u).get('dir_info', {}).get('editable')), "
            "'files': [str(f) for f in (d.files or [])]}))")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp, capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    return json.loads(p.stdout) if p.returncode == 0 else {"editable": None, "files": []}


def _installed_wheel(tmp: Path) -> bool:
    return _installed(tmp)["editable"] is False


def test_installed_wheel_carries_presets_and_entry_point(tmp_path):
    if not _installed_wheel(tmp_path):
        if os.environ.get("MRFQ_EXPECT_WHEEL") == "1":
            pytest.fail("MRFQ_EXPECT_WHEEL=1 but mrfq is not installed from a wheel")
        pytest.skip("mrfq is not installed from a wheel (editable install or none)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run([sys.executable, "-c", "import mrfq.flows, mrfq.analysis.cli; print(mrfq.flows.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert not Path(where).resolve().is_relative_to(ROOT), f"mrfq.flows imported from the checkout: {where}"
    script = Path(sys.executable).parent / "mrfq"
    out = subprocess.run([str(script), "presets"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         check=True).stdout
    shipped = sorted(p.stem for p in (ROOT / "flows" / "presets").glob("*.toml"))
    assert [line.split()[0] for line in out.splitlines()] == shipped
    run = subprocess.run([str(script), "run", "--preset", "oracle-two-flows", "--duration", "300", "--warmup", "0", "--json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout
    d = json.loads(run, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
    assert [f["name"] for f in d["flows"]] == ["a", "b"] and d["duration"] == 300.0


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True)


def test_one_top_level_import_name(tmp_path):
    """The distribution provides ``mrfq`` and nothing named after the repository's folders."""
    p = _python("import importlib.util as u; print([n for n in ('fq', 'flows', 'router', 'analysis') "
                "if u.find_spec(n) is not None]); import mrfq; print(sorted(n for n in ('fq', 'flows', 'router', "
                "'analysis') if u.find_spec('mrfq.' + n) is not None))", tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split("\n")[:2] == ["[]", "['analysis', 'flows', 'fq', 'router']"]
    files = [Path(f) for f in _installed(tmp_path)["files"]]
    top = {f.parts[0] for f in files if f.suffix == ".py" and len(f.parts) > 1}
    assert top <= {"mrfq"}, top  # an editable install lists no package file, only its finder


def test_a_users_own_modules_named_like_ours_do_not_break_mrfq(tmp_path):
    """A notebook folder with its own ``analysis.py``, ``flows.py`` and ``router/`` (common names):
    ``import mrfq`` and the API still work, and the user's modules stay the user's."""
    (tmp_path / "analysis.py").write_text("raise ImportError('the user analysis module')\n")
    (tmp_path / "flows.py").write_text("NAME = 'user'\n")
    (tmp_path / "router").mkdir()
    (tmp_path / "router" / "__init__.py").write_text("raise ImportError('the user router package')\n")
    (tmp_path / "fq.py").write_text("X = 1\n")
    p = _python("import mrfq, flows; from mrfq import api; "
                "print([round(r['phi'], 4) for r in mrfq.allocate([[0.5, 1.0], [1.0, 0.5]], 'drf').to_records()]); "
                "import mrfq.router.engine, mrfq.fq; print(flows.NAME, api.run is mrfq.run, sorted(mrfq.fq.SCHEDULERS)[:2])",
                tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.splitlines() == ["[0.6667, 0.6667]", "user True ['bmf-wfq', 'drfq']"]


def test_cluster_solvers_import_from_outside_the_checkout(tmp_path):
    """The objective table names its cluster solvers by module path: they import under ``mrfq``
    from any folder (the checkout's folders are not on ``sys.path`` there)."""
    p = _python("import mrfq; print([(r['user'], round(r['tasks'], 3)) for r in "
                "mrfq.cluster_allocate('drf-nsdi', 'drf')])", tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "[('A', 3.0), ('B', 2.0)]"


def test_python_dash_m_mrfq_is_the_command(tmp_path):
    p = _python("import runpy, sys; sys.argv = ['mrfq', 'presets']; runpy.run_module('mrfq', run_name='__main__')",
                tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "oracle-rates" in p.stdout
