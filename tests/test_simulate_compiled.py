"""The compiled free motion of closed models (``ClosedModel.evaluation.free_motion_steps``,
used by ``kic.simulate`` with DOP853 where numba is present) against scipy's
DOP853 stepped from Python over the numpy backend, and its stopping rules."""
import numpy as np
import pytest

import kic
import mechanisms
from kic.closed_eval import compiled_closed

pytestmark = [pytest.mark.skipif(not compiled_closed.available,
                                 reason="the compiled integrator needs numba (the fast extra)"),
              pytest.mark.usefixtures("numba_backend")]


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
    whole = fb.evaluation.free_motion_steps(0.0, y0, 0.5, phi0, rtol=1e-9, atol=1e-11)
    assert whole["code"] == 0 and whole["t"][-1] == 0.5
    assert whole["nfev"] > 12 * len(whole["t"])          # 12 evaluations per step
    # in pieces of 3 steps: the same steps (the state and step size carried over)
    t, y, phi, step, times = 0.0, y0, phi0, 0.0, []
    while t < 0.5:
        part = fb.evaluation.free_motion_steps(t, y, 0.5, phi, rtol=1e-9, atol=1e-11,
                                               step=step, capacity=3)
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
    steps = fb.evaluation.free_motion_steps
    free = steps(0.0, y0, 0.5, fb.reference_phi, rtol=1e-10, atol=1e-12, capacity=10 ** 6)
    assert free["code"] == 2 and free["status"] == kic.Status.SINGULAR
    assert 0.3 < free["state"][0] < 0.3254
    stop = steps(0.0, y0, 0.5, fb.reference_phi, rtol=1e-10, atol=1e-12, stop_condition=100.0)
    assert stop["code"] == 1 and stop["condition"][-1] > 100.0
    assert np.all(stop["condition"][:-1] <= 100.0)
    relaxed = steps(0.0, y0, 0.5, fb.reference_phi, rtol=1e-10, atol=1e-12,
                    stop_condition=1e9, relax=2 * cond0)
    assert relaxed["code"] == 1 and relaxed["threshold"] == 2 * cond0
    assert relaxed["condition"][-1] > 2 * cond0
    assert relaxed["state"][0] < stop["state"][0]


def test_free_motion_steps_declines_what_it_does_not_cover(hanging):
    fb, q0 = hanging
    kic.set_backend("numpy")
    try:
        assert fb.evaluation.free_motion_steps(0.0, np.r_[q0, 0.0, 0.0], 0.1,
                                               fb.assemble(q0), rtol=1e-9, atol=1e-11) is None
    finally:
        kic.set_backend("numba")
    with pytest.raises(kic.ModelError, match="y must have 4"):
        fb.evaluation.free_motion_steps(0.0, q0, 0.1, fb.assemble(q0), rtol=1e-9, atol=1e-11)


def _compiled_calls(monkeypatch):
    """Count the compiled integrator's calls (free_motion_steps) and compiled rhs
    evaluations (motion_rhs) that kic.simulate makes."""
    from kic.closed_eval import CompiledEvaluation
    calls = {"steps": 0, "rhs": 0}
    steps, rhs = CompiledEvaluation.free_motion_steps, CompiledEvaluation.motion_rhs

    def counted_steps(self, *a, **kw):
        calls["steps"] += 1
        return steps(self, *a, **kw)

    def counted_rhs(self):
        fn = rhs(self)

        def call(*a):
            calls["rhs"] += 1
            return fn(*a)
        return None if fn is None else call
    monkeypatch.setattr(CompiledEvaluation, "free_motion_steps", counted_steps)
    monkeypatch.setattr(CompiledEvaluation, "motion_rhs", counted_rhs)
    return calls


def test_t_eval_on_the_compiled_path(hanging, monkeypatch):
    """Output times by the compiled DOP853's dense output (scipy's interpolant),
    against scipy's DOP853 stepped over the numpy backend, and against the
    compiled steps themselves."""
    fb, q0 = hanging
    times = np.linspace(0.0, 1.0, 23)
    calls = _compiled_calls(monkeypatch)
    fast = _simulate("numba", fb, q0, 1.0, rtol=1e-11, atol=1e-13, t_eval=times)
    assert calls["steps"] >= 1 and calls["rhs"] == 0
    slow = _simulate("numpy", fb, q0, 1.0, rtol=1e-11, atol=1e-13, t_eval=times)
    np.testing.assert_array_equal(fast.t, times)
    np.testing.assert_allclose(fast.q, slow.q, atol=1e-10)
    np.testing.assert_allclose(fast.qd, slow.qd, atol=1e-9)
    # the samples are on the closure, assembled on the branch, with finite energies
    assert fb.project(fast.phi)[1].max() < 1e-10
    assert fast.energy_drift < 1e-9
    # each sample lies on the motion through the steps (its interpolant is that good)
    steps = _simulate("numba", fb, q0, 1.0, rtol=1e-11, atol=1e-13)
    k = np.searchsorted(steps.t, 0.5)
    one = _simulate("numba", fb, q0, 1.0, rtol=1e-11, atol=1e-13, t_eval=[steps.t[k]])
    np.testing.assert_allclose(one.q[0], steps.q[k], atol=1e-12)


def test_constant_input_on_the_compiled_path(hanging, monkeypatch):
    """A constant tau runs compiled (DOP853) and agrees with the same tau given as
    a function (called back per evaluation over the compiled rhs) and with the
    numpy backend."""
    fb, q0 = hanging
    tau = np.array([0.4, -0.25])
    times = np.linspace(0.0, 0.8, 9)
    calls = _compiled_calls(monkeypatch)
    const = _simulate("numba", fb, q0, 0.8, tau=tau, rtol=1e-11, atol=1e-13, t_eval=times)
    assert calls["steps"] >= 1 and calls["rhs"] == 0
    fn = _simulate("numba", fb, q0, 0.8, tau=lambda t, q, qd: tau, rtol=1e-11, atol=1e-13,
                   t_eval=times)
    assert calls["rhs"] > 100
    slow = _simulate("numpy", fb, q0, 0.8, tau=tau, rtol=1e-11, atol=1e-13, t_eval=times)
    np.testing.assert_allclose(const.q, fn.q, atol=1e-10)
    np.testing.assert_allclose(const.q, slow.q, atol=1e-10)
    assert not const.conservative
    # the input does work: the energy grows by the work of tau along the motion
    work = tau @ (const.q[-1] - const.q[0])
    assert const.energy[-1] - const.energy[0] == pytest.approx(work, rel=1e-6)


@pytest.mark.parametrize("method", ["BDF", "RK45"])     # (LSODA: compiled, test_lsoda)
def test_other_methods_over_the_compiled_rhs(hanging, monkeypatch, method):
    fb, q0 = hanging
    calls = _compiled_calls(monkeypatch)
    fast = _simulate("numba", fb, q0, 0.5, method=method, rtol=1e-10, atol=1e-12)
    assert calls["rhs"] >= fast.nfev - 2
    ref = _simulate("numba", fb, q0, 0.5, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(fast.q[-1], ref.q[-1], atol=1e-6)
    assert fast.energy_drift < 1e-6


def test_loads_over_the_compiled_rhs(hanging, monkeypatch):
    """Springs (a joint spring and one between two bodies of different open chains)
    and a damper: the compiled rhs with the applied loads' joint loads, against
    the numpy backend."""
    fb, q0 = hanging
    loads = (kic.Loads().spring("crank1", 5.0, -1.5).damper("elbow2", 0.05)
             .spring_between("crank1", (0.25, 0.0, 0.0), "crank2", (0.25, 0.0, 0.0),
                             stiffness=40.0, rest_length=0.1))
    times = np.linspace(0.0, 0.5, 6)
    calls = _compiled_calls(monkeypatch)
    fast = _simulate("numba", fb, q0, 0.5, loads=loads, rtol=1e-10, atol=1e-12, t_eval=times)
    assert calls["rhs"] > 50
    slow = _simulate("numpy", fb, q0, 0.5, loads=loads, rtol=1e-10, atol=1e-12, t_eval=times)
    np.testing.assert_allclose(fast.q, slow.q, atol=1e-9)
    np.testing.assert_allclose(fast.qd, slow.qd, atol=1e-8)
    # conservative without the damper: the energy (springs included) is kept
    spring_only = (kic.Loads().spring("crank1", 5.0, -1.5)
                   .spring_between("crank1", (0.25, 0.0, 0.0), "crank2", (0.25, 0.0, 0.0),
                                   stiffness=40.0, rest_length=0.1))
    kept = _simulate("numba", fb, q0, 0.5, loads=spring_only, rtol=1e-10, atol=1e-12)
    assert kept.conservative and kept.energy_drift < 1e-8
