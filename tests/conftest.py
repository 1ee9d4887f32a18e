"""pytest configuration: make ``helpers`` and ``oracles`` importable, expose fixtures."""
import os
import sys

import numpy as np
import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import helpers  # noqa: E402

# Tests of 5 s or more (warm numba cache, measured with --durations on a shared 2-vCPU
# machine) in modules other branches are editing: marked slow here at collection, so
# that `make test-fast` (-m "not slow") skips them.  Tests in the other modules carry
# @pytest.mark.slow themselves; move these there when convenient.
SLOW_TESTS = {
    "tests/test_stages.py::test_simulation_switches_coordinates_through_a_crank_singularity",
    "tests/test_stages.py::test_no_hidden_state_after_a_simulation",
    "tests/test_stages.py::test_model_without_guess_simulates_like_the_builder",
    "tests/test_stages.py::test_failures_as_data_and_every_failing_index",
    "tests/test_sweep.py::test_dask_client_is_used_and_left_open",
    "tests/test_sweep.py::test_dask_local_cluster_matches_serial_and_records_failures",
    "tests/test_closed.py::test_free_motion_conserves_energy",
    "tests/test_linearize.py::test_open_loop_nominal_voltages_five_bar",
    "tests/test_five_bar_free_motion.py::"
    "test_the_flat_configuration_is_singular_for_every_set_of_coordinates",
    "tests/test_simulate_compiled.py::test_free_motion_steps_condition_rules",
    "tests/test_design.py::test_five_bar_example_batched_objective",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.split("[")[0] in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


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
# independent references as the numpy ones.  numba is a core dependency; where it has
# no wheel, a run still tests numpy and reports the compiled run as skipped.
BACKENDS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not _compiled.available, reason="numba not installed (no wheel for this platform?)"))]


@pytest.fixture(params=BACKENDS)
def each_backend(request):
    previous = kic.set_backend(request.param)
    yield request.param
    kic.set_backend(previous)


@pytest.fixture
def numba_backend():
    """The compiled backend for one test (modules of compiled paths use it with
    ``pytest.mark.usefixtures("numba_backend")``), the previous one restored."""
    previous = kic.set_backend("numba")
    yield
    kic.set_backend(previous)


@pytest.fixture
def hanging():
    """The default five-bar 0.15 rad from its hanging equilibrium, at rest:
    (model, q0)."""
    import mechanisms
    fb = mechanisms.five_bar()
    q0 = np.array([-1.7, -1.4]) + np.array([0.15, -0.15])
    return fb, q0
