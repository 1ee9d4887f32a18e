"""pytest configuration: make ``helpers`` and ``oracles`` importable, expose fixtures."""
import os
import sys

import numpy as np
import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import helpers  # noqa: E402


@pytest.fixture
def random_chain():
    """Factory ``random_chain(rng, M, kinds=None, offsets=None, ...)`` (see helpers)."""
    return helpers.random_chain


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)
