"""Shared test settings.

``MRFQ_TEST_SCALE`` (float, default 1.0) scales the size of the slow
statistical checks; CI runs them at a reduced size.
"""

import os

import pytest

SCALE = float(os.environ.get("MRFQ_TEST_SCALE", "1.0"))
JIT_DISABLED = os.environ.get("NUMBA_DISABLE_JIT", "0") == "1"


def scaled(x: float, minimum: float = 0.0) -> float:
    return max(minimum, x * SCALE)


@pytest.fixture(scope="session")
def scale() -> float:
    return SCALE
