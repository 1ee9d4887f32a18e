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


import kic  # noqa: E402
from kic.kernels import jit as _compiled  # noqa: E402

# Test modules that mark themselves with pytest.mark.usefixtures("each_backend") run
# every test under both serial-chain backends, so the compiled kernels meet the same
# independent references as the numpy ones.  The test extra installs numba; a run
# without it still tests numpy and reports the compiled run as skipped.
BACKENDS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not _compiled.available, reason="numba not installed (the fast extra)"))]


@pytest.fixture(params=BACKENDS)
def each_backend(request):
    previous = kic.set_backend(request.param)
    yield request.param
    kic.set_backend(previous)
