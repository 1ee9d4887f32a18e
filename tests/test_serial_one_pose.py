"""One configuration of a serial chain on the short path: the model of one pose checks
its q where it is used (a one-configuration kernel's result, or the validating path),
and every result equals the batch path's."""
from __future__ import annotations

import numpy as np
import pytest

import kic
import mechanisms

BACKENDS = ["numpy"] + (["numba"] if kic.kernels.jit.available else [])


@pytest.fixture(params=BACKENDS)
def backend(request):
    previous = kic.set_backend(request.param)
    yield request.param
    kic.set_backend(previous)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("what", ["I_star", "gravity_load", "P_star", "potential_energy"])
def test_model_of_a_non_finite_pose_names_q(backend, bad, what):
    arm = mechanisms.puma560()
    q = np.full(6, 0.3)
    q[4] = bad
    dyn = arm.dynamics(q)                     # a float64 vector: checked where it is used
    with pytest.raises(kic.ModelError, match="q contains a NaN or infinite value"):
        getattr(dyn, what)


def test_model_of_one_pose_equals_the_batch(backend):
    arm = mechanisms.puma560()
    rng = np.random.default_rng(5)
    q, qd = rng.uniform(-2, 2, (2, 6))
    one, batch = arm.dynamics(q), arm.dynamics(q[None])
    for name in ("I_star", "gravity_load", "P_star", "potential_energy"):
        np.testing.assert_allclose(getattr(one, name), getattr(batch, name)[0], rtol=1e-13,
                                   atol=1e-13, err_msg=name)
    np.testing.assert_allclose(one.kinetic_energy(qd), batch.kinetic_energy(qd[None])[0],
                               rtol=1e-13)
    saved = q.copy()
    I = one.I_star.copy()
    q[:] = 0.0                                 # the model keeps its own copy of q
    np.testing.assert_array_equal(one.q, saved)
    np.testing.assert_array_equal(one.P_star, arm.dynamics(saved).P_star)
    np.testing.assert_array_equal(one.I_star, I)


@pytest.mark.parametrize("M", [341, 342])
def test_one_pose_of_a_chain_beyond_the_stack_work_equals_the_batch(backend, M):
    """The compiled one-pose entries take their work on the stack, up to
    ONE_POSE_STACK_FLOATS floats (inverse dynamics: 24 per joint, 341 joints); a
    longer chain's one pose takes the batch kernels, with the same numbers."""
    from helpers import random_chain
    from kic.backend import kernels
    from kic.settings import ONE_POSE_STACK_FLOATS
    rng = np.random.default_rng(M)
    arm = random_chain(rng, M)
    q, qd, qdd = rng.uniform(-1, 1, (3, M))
    out = np.empty(M)
    on_stack = kernels().inverse_dynamics_one(arm.kernel_data, q, qd, qdd, out)
    assert on_stack == (backend == "numpy" or 24 * M <= ONE_POSE_STACK_FLOATS)
    tau = arm.inverse_dynamics(q, qd, qdd)
    batch = arm.inverse_dynamics(q[None], qd[None], qdd[None])[0]
    np.testing.assert_allclose(tau, batch, rtol=1e-12, atol=1e-12 * np.abs(batch).max())
    if on_stack:
        np.testing.assert_array_equal(out, tau)
    np.testing.assert_allclose(arm.gravity_load(q), arm.gravity_load(q[None])[0], rtol=1e-12,
                               atol=1e-12 * np.abs(batch).max())
