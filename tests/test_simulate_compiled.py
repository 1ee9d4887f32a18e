"""The compiled free motion of closed models (``ClosedModel.free_motion_steps``,
used by ``kic.simulate`` with DOP853 where numba is present) against scipy's
DOP853 stepped from Python over the numpy backend, and its stopping rules."""
import numpy as np
import pytest

import kic
import mechanisms
from kic.kernels import closed as _closed_kernels

pytestmark = pytest.mark.skipif(not _closed_kernels.available,
                                reason="the compiled integrator needs numba (the fast extra)")


@pytest.fixture(autouse=True)
def numba_backend():
    previous = kic.set_backend("numba")
    yield
    kic.set_backend(previous)


@pytest.fixture
def hanging():
    """The default five-bar 0.15 rad from its hanging equilibrium, at rest."""
    fb = mechanisms.five_bar()
    q0 = np.array([-1.7, -1.4]) + np.array([0.15, -0.15])
    return fb, q0


def _simulate(backend_name, fb, q0, duration, **kw):
    previous = kic.set_backend(backend_name)
    try:
        return kic.simulate(fb, (0.0, duration), q0, [0.0, 0.0], **kw)
    finally:
        kic.set_backend(previous)


def test_compiled_equals_scipy_dop853(hanging):
    """The same method either way: both land on an accurate solution (rtol 1e-13)
    to the tolerance, and on each other."""
    fb, q0 = hanging
    fast = _simulate("numba", fb, q0, 1.0, rtol=1e-9, atol=1e-11)
    slow = _simulate("numpy", fb, q0, 1.0, rtol=1e-9, atol=1e-11)
    ref = _simulate("numba", fb, q0, 1.0, rtol=1e-13, atol=1e-14)
    end = lambda s: np.concatenate([s.q[-1], s.qd[-1]])            # noqa: E731
    assert np.abs(end(fast) - end(ref)).max() < 1e-7
    assert np.abs(end(slow) - end(ref)).max() < 1e-7
    assert np.abs(end(fast) - end(slow)).max() < 1e-7
    # step for step the same controller: the step counts agree closely
    assert abs(len(fast.t) - len(slow.t)) <= 2
    assert fast.energy_drift < 1e-8 and slow.energy_drift < 1e-8
    np.testing.assert_allclose(fast.phi[-1], fb.assemble(fast.q[-1], start=fast.phi[-1]),
                               atol=1e-12)


def test_free_motion_steps_stops_and_continues(hanging):
    fb, q0 = hanging
    phi0 = fb.assemble(q0)
    y0 = np.concatenate([q0, [0.0, 0.0]])
    whole = fb.free_motion_steps(0.0, y0, 0.5, phi0, rtol=1e-9, atol=1e-11)
    assert whole["code"] == 0 and whole["t"][-1] == 0.5
    assert whole["nfev"] > 12 * len(whole["t"])          # 12 evaluations per step
    # in pieces of 3 steps: the same steps (the state and step size carried over)
    t, y, phi, step, times = 0.0, y0, phi0, 0.0, []
    while t < 0.5:
        part = fb.free_motion_steps(t, y, 0.5, phi, rtol=1e-9, atol=1e-11, step=step,
                                    capacity=3)
        assert part["code"] in (0, 4)
        times.extend(part["t"])
        (t, y, phi), step = part["state"], part["step"]
    np.testing.assert_allclose(times, whole["t"], rtol=1e-9)
    np.testing.assert_allclose(y, whole["y"][-1], atol=1e-10)
    # every recorded pose is on the closure, in the model's assembly mode
    residual = fb.project(whole["phi"])[1]
    assert residual.max() < 1e-10
    np.testing.assert_allclose(whole["phi"][:, fb.joint_indices(fb.coordinate_names)],
                               whole["y"][:, :2], atol=0)


def test_free_motion_steps_condition_rules():
    """From the reference the cranks' condition grows towards the flat configuration
    (0.325 s): a threshold stops it there; a raised threshold falls back to
    ``relax`` once the condition is below it (hysteresis); with no threshold a
    trial point fails past the singularity (code 2) and names the status."""
    fb = mechanisms.five_bar()
    y0 = np.concatenate([fb.reference, [0.0, 0.0]])
    cond0 = float(fb.condition(fb.reference))
    free = fb.free_motion_steps(0.0, y0, 0.5, fb.reference_phi, rtol=1e-10, atol=1e-12,
                                capacity=10 ** 6)
    assert free["code"] == 2 and free["status"] == kic.Status.SINGULAR
    assert 0.3 < free["state"][0] < 0.3254
    stop = fb.free_motion_steps(0.0, y0, 0.5, fb.reference_phi, rtol=1e-10, atol=1e-12,
                                stop_condition=100.0)
    assert stop["code"] == 1 and stop["condition"][-1] > 100.0
    assert np.all(stop["condition"][:-1] <= 100.0)
    relaxed = fb.free_motion_steps(0.0, y0, 0.5, fb.reference_phi, rtol=1e-10, atol=1e-12,
                                   stop_condition=1e9, relax=2 * cond0)
    assert relaxed["code"] == 1 and relaxed["threshold"] == 2 * cond0
    assert relaxed["condition"][-1] > 2 * cond0
    assert relaxed["state"][0] < stop["state"][0]


def test_free_motion_steps_declines_what_it_does_not_cover(hanging):
    fb, q0 = hanging
    kic.set_backend("numpy")
    try:
        assert fb.free_motion_steps(0.0, np.r_[q0, 0.0, 0.0], 0.1, fb.assemble(q0),
                                    rtol=1e-9, atol=1e-11) is None
    finally:
        kic.set_backend("numba")
    with pytest.raises(kic.ModelError, match="y must have 4"):
        fb.free_motion_steps(0.0, q0, 0.1, fb.assemble(q0), rtol=1e-9, atol=1e-11)
