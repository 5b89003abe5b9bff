"""The installed package, not the checkout: presets shipped as package data, the entry point.

The other tests import the packages from the checkout (pytest puts the rootdir first on
``sys.path``), so they cannot see a wheel that forgot its package data.  This one runs the
installed ``mrfq`` from an empty folder with ``PYTHONPATH`` cleared and checks where the
packages came from.  It is skipped for an editable install (``pip install -e .``), and
required when ``MRFQ_EXPECT_WHEEL=1`` (``.ci/run`` sets it after installing the built wheel).
"""

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _installed_wheel() -> bool:
    try:
        dist = importlib.metadata.distribution("mrfq")
    except importlib.metadata.PackageNotFoundError:
        return False
    direct = dist.read_text("direct_url.json")
    editable = bool(direct and json.loads(direct).get("dir_info", {}).get("editable"))
    return not editable


def test_installed_wheel_carries_presets_and_entry_point(tmp_path):
    if not _installed_wheel():
        if os.environ.get("MRFQ_EXPECT_WHEEL") == "1":
            pytest.fail("MRFQ_EXPECT_WHEEL=1 but mrfq is not installed from a wheel")
        pytest.skip("mrfq is not installed from a wheel (editable install or none)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run([sys.executable, "-c", "import flows, analysis.cli; print(flows.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert not Path(where).resolve().is_relative_to(ROOT), f"flows imported from the checkout: {where}"
    script = Path(sys.executable).parent / "mrfq"
    out = subprocess.run([str(script), "presets"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         check=True).stdout
    shipped = sorted(p.stem for p in (ROOT / "flows" / "presets").glob("*.toml"))
    assert [line.split()[0] for line in out.splitlines()] == shipped
    run = subprocess.run([str(script), "run", "--preset", "oracle-two-flows", "--duration", "300", "--warmup", "0", "--json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout
    d = json.loads(run, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
    assert [f["name"] for f in d["flows"]] == ["a", "b"] and d["duration"] == 300.0
