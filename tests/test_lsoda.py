"""The compiled LSODA (kic.kernels.lsoda; ``kic.simulate(method="LSODA")`` of a
closed model's free motion) against scipy's LSODA: on plain ODEs step for step
(steps, evaluations, Jacobians, the method of every step), and on the five-bar
against scipy's LSODA stepped from Python over the same right-hand side."""
import numpy as np
import pytest
from scipy.integrate import LSODA

import kic
import kic.simulation as simulation
from kic.closed_eval import compiled_closed

pytestmark = [pytest.mark.skipif(not compiled_closed.available,
                                 reason="the compiled LSODA needs numba (the fast extra)"),
              pytest.mark.usefixtures("numba_backend")]


def _port():
    from kic.kernels import jit as registry
    registry.load()
    from kic.kernels import lsoda
    return lsoda


def _scipy(A, mu, y0, t_end, rtol, atol, first_step=None, max_step=np.inf):
    """scipy's LSODA stepped over the same ODE, written as the kernel's test_rhs
    (the same operations in the same order)."""
    def fun(t, y):
        f = np.array([sum(A[k, j] * y[j] for j in range(len(y))) + 0.0
                      for k in range(len(y))])
        if mu != 0.0:
            f[1] = mu * ((1.0 - y[0] * y[0]) * y[1]) + f[1]
        return f
    solver = LSODA(fun, 0.0, np.array(y0, float), t_end, rtol=rtol, atol=atol,
                   first_step=first_step, max_step=max_step)
    ts, ys, methods, mids, t_old = [], [], [], [], 0.0
    while solver.status == "running":
        solver.step()
        assert solver.status != "failed"
        ts.append(solver.t)
        ys.append(solver.y.copy())
        methods.append(int(solver._lsoda_solver._integrator.iwork[18]))     # MUSED
        mids.append(solver.dense_output()(0.5 * (t_old + solver.t)))
        t_old = solver.t
    return np.array(ts), np.array(ys), np.array(methods), solver.nfev, solver.njev, \
        np.array(mids)


def _van_der_pol(mu):
    return np.array([[0.0, 1.0], [-1.0, 0.0]]), mu


CASES = {
    # Adams only: bit for bit
    "adams": (*_van_der_pol(1.0), [2.0, 0.0], 20.0, 1e-8, 1e-10, 0.0),
    # Adams, then BDF from step 92 on: bit for bit
    "to BDF": (*_van_der_pol(100.0), [2.0, 0.0], 60.0, 1e-8, 1e-10, 0.0),
    # Adams -> BDF -> Adams -> BDF -> Adams: to rounding (the Newton matrix's LU
    # is kic's, scipy's is LAPACK's: their last bits differ)
    "back and forth": (*_van_der_pol(10.0), [2.0, 0.0], 40.0, 1e-6, 1e-8, 1e-9),
    # a linear stiff system (eigenvalues -1, -1000): BDF soon
    "linear stiff": (np.array([[-1.0, 0.0, 0.0], [0.0, -1000.0, 999.0], [0.0, 0.0, -1.0]]),
                     0.0, [1.0, 2.0, 1.0], 10.0, 1e-7, 1e-9, 1e-9),
}


@pytest.mark.parametrize("steps", [(0.0, np.inf), (1e-3, 0.05)],
                         ids=["own steps", "first and longest step given"])
@pytest.mark.parametrize("case", list(CASES))
def test_port_steps_as_scipy(case, steps):
    A, mu, y0, t_end, rtol, atol, close = CASES[case]
    first, longest = steps
    lsoda = _port()
    st, k, ts, ys, methods, nfe, nje, mids = lsoda.integrate(
        A, mu, 0.0, t_end, np.array(y0), rtol, atol, first, longest, 100_000)
    s_ts, s_ys, s_methods, s_nfe, s_nje, s_mids = _scipy(A, mu, y0, t_end, rtol, atol,
                                                         first or None, longest)
    assert st == 0 and k == len(s_ts)
    assert (nfe, nje) == (s_nfe, s_nje)
    np.testing.assert_array_equal(methods[:k], s_methods)
    if case != "adams":
        assert 2 in methods[:k]
    if case == "back and forth":
        assert np.count_nonzero(np.diff(methods[:k])) >= 3
    np.testing.assert_allclose(ts[:k], s_ts, rtol=close, atol=0)
    scale = np.abs(s_ys).max()
    assert np.abs(ys[:k] - s_ys).max() <= 1e3 * close * scale
    # the dense output is scipy's (to rounding: scipy's sum is a BLAS product)
    assert np.abs(mids[:k] - s_mids).max() <= 1e3 * close * scale + 1e-13 * scale


@pytest.fixture
def stepped(monkeypatch):
    """kic.simulate with scipy's solvers stepped from Python (the compiled path off)."""
    def run(*args, **kw):
        with monkeypatch.context() as m:
            m.setattr(simulation, "_compiled_stretch", lambda *a, **k: None)
            return kic.simulate(*args, **kw)
    return run


def test_simulate_lsoda_compiled_as_stepped(hanging, stepped, monkeypatch):
    fb, q0 = hanging
    calls = []
    inner = type(fb.evaluation).free_motion_steps
    monkeypatch.setattr(type(fb.evaluation), "free_motion_steps",
                        lambda self, *a, **k: calls.append(k["method"]) or inner(self, *a, **k))
    fast = kic.simulate(fb, (0.0, 2.0), q0, [0.0, 0.0], method="LSODA", rtol=1e-9, atol=1e-11)
    assert calls and set(calls) == {"LSODA"}
    slow = stepped(fb, (0.0, 2.0), q0, [0.0, 0.0], method="LSODA", rtol=1e-9, atol=1e-11)
    ref = kic.simulate(fb, (0.0, 2.0), q0, [0.0, 0.0], rtol=1e-13, atol=1e-14)
    assert abs(len(fast.t) - len(slow.t)) <= 3
    assert abs(fast.nfev - slow.nfev) <= 6
    end = lambda s: np.concatenate([s.q[-1], s.qd[-1]])            # noqa: E731
    assert np.abs(end(fast) - end(slow)).max() < 1e-9
    assert np.abs(end(fast) - end(ref)).max() < 1e-6
    assert fast.energy_drift < 1e-7


def test_lsoda_t_eval_and_blocks(hanging, stepped):
    fb, q0 = hanging
    t_eval = np.linspace(0.0, 1.0, 11)[1:]
    fast = kic.simulate(fb, (0.0, 1.0), q0, [0.0, 0.0], method="LSODA", rtol=1e-9,
                        atol=1e-11, t_eval=t_eval)
    slow = stepped(fb, (0.0, 1.0), q0, [0.0, 0.0], method="LSODA", rtol=1e-9, atol=1e-11,
                   t_eval=t_eval)
    np.testing.assert_allclose(fast.t, t_eval)
    np.testing.assert_allclose(fast.q, slow.q, atol=1e-9)
    np.testing.assert_allclose(fast.phi, slow.phi, atol=1e-9)
    # in blocks of 5 steps (code 4, FULL), each call going on from the state the one
    # before returned: the same steps as one call
    phi0, y0 = fb.assemble(q0), np.concatenate([q0, [0.0, 0.0]])
    steps = fb.evaluation.free_motion_steps
    # a method the compiled path does not run: None (the caller steps scipy), not DOP853
    assert steps(0.0, y0, 1.0, phi0, rtol=1e-9, atol=1e-11, method="BDF") is None
    whole = steps(0.0, y0, 1.0, phi0, rtol=1e-9, atol=1e-11, method="LSODA")
    assert whole["code"] == 0 and whole["t"][-1] == 1.0
    t, y, phi, resume, codes, times, nfev = 0.0, y0, phi0, None, [], [], 0
    while t < 1.0:
        part = steps(t, y, 1.0, phi, rtol=1e-9, atol=1e-11, capacity=5, method="LSODA",
                     resume=resume)
        codes.append(part["code"])
        times.extend(part["t"])
        nfev += part["nfev"]
        (t, y, phi), resume = part["state"], part["resume"]
    assert set(codes) == {0, 4}
    np.testing.assert_array_equal(times, whole["t"])
    np.testing.assert_array_equal(y, whole["y"][-1])
    assert nfev == whole["nfev"]


def test_lsoda_through_singular_configurations(stepped):
    """The fall from the reference crosses the flat configuration: the compiled
    LSODA stops where the cranks' condition passes the threshold (or a trial point
    fails), the simulation switches coordinates, and energy holds."""
    import mechanisms
    fb = mechanisms.five_bar()
    steps = fb.evaluation.free_motion_steps
    y0 = np.concatenate([fb.reference, [0.0, 0.0]])
    free = steps(0.0, y0, 0.5, fb.reference_phi, rtol=1e-10, atol=1e-12, method="LSODA",
                 capacity=10 ** 6)
    assert free["code"] == 2 and free["status"] == kic.Status.SINGULAR
    assert 0.3 < free["state"][0] < 0.3254
    stop = steps(0.0, y0, 0.5, fb.reference_phi, rtol=1e-10, atol=1e-12, stop_condition=100.0,
                 method="LSODA")
    assert stop["code"] == 1 and stop["condition"][-1] > 100.0
    fast = kic.simulate(fb, (0.0, 1.0), fb.reference, [0.0, 0.0], method="LSODA", rtol=1e-10,
                        atol=1e-12)
    slow = stepped(fb, (0.0, 1.0), fb.reference, [0.0, 0.0], method="LSODA", rtol=1e-10,
                   atol=1e-12)
    assert len(fast.switches) >= 1
    assert fast.energy_drift < 1e-6
    np.testing.assert_allclose(fast.q[-1], slow.q[-1], atol=1e-5)
