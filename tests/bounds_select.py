"""pytest plugin for tests/test_indexing.py's bounds-checked subprocesses (``-p bounds_select``):
deselects the node ids listed in ``MRFQ_BOUNDS_DESELECT`` (one a line), exactly (``--deselect``
matches prefixes, and ``test_engine_equals_reference`` is the prefix of its siblings' ids)."""

import os


def pytest_collection_modifyitems(config, items):
    drop = {n for n in os.environ.get("MRFQ_BOUNDS_DESELECT", "").splitlines() if n}
    gone = [i for i in items if i.nodeid in drop]
    missing = drop - {i.nodeid for i in gone}
    if missing:
        raise ValueError(f"MRFQ_BOUNDS_DESELECT names tests that do not exist: {sorted(missing)}")
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = [i for i in items if i.nodeid not in drop]
