"""Atomic output writes (flows/cli_args.py): content replaced only on success, and the
permission bits a plain ``open(path, "w")`` would give (mkstemp's own are 0o600)."""

import os
import stat

import pytest

from mrfq.flows.cli_args import atomic_write, atomic_writer


def _mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.mark.nojit
def test_new_file_gets_umask_permissions(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "a.txt", "x")
        atomic_write(tmp_path / "b.png", b"\x89PNG")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.txt") == 0o640
    assert _mode(tmp_path / "b.png") == 0o640
    assert (tmp_path / "a.txt").read_text() == "x"


@pytest.mark.nojit
def test_replaced_file_keeps_its_permissions(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("old")
    os.chmod(p, 0o604)
    atomic_write(p, "new")
    assert _mode(p) == 0o604 and p.read_text() == "new"


@pytest.mark.nojit
def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("old")
    with pytest.raises(RuntimeError), atomic_writer(p) as f:
        f.write("half")
        raise RuntimeError("boom")
    assert p.read_text() == "old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["t.csv"]
