"""A closed model's motion stepped from Python over the compiled right-hand side
(LSODA, BDF, inputs that vary): what each accepted step costs, and that the
right-hand side answers as a function of the state."""
import numpy as np
import pytest

import kic
import mechanisms
from kic.closed_eval import compiled_closed
from kic.closure import ClosedModel

pytestmark = [pytest.mark.skipif(not compiled_closed.available,
                                 reason="the compiled right-hand side needs numba"),
              pytest.mark.usefixtures("numba_backend")]


@pytest.mark.parametrize("method", ["LSODA", "BDF"])
def test_each_step_tracked_in_one_compiled_call(hanging, monkeypatch, method):
    """An accepted step is tracked by the compiled right-hand side's call, which
    gives its joint rates too: the record asks the model for none (it did for
    every step), and the energy from those rates is the model's own energy at
    the recorded states."""
    fb, q0 = hanging
    asked = {"rates": 0}
    joint_rates = ClosedModel.joint_rates

    def counted(self, *a, **kw):
        asked["rates"] += 1
        return joint_rates(self, *a, **kw)
    monkeypatch.setattr(ClosedModel, "joint_rates", counted)
    sim = kic.simulate(fb, (0.0, 0.5), q0, [0.0, 0.0], method=method, rtol=1e-9, atol=1e-11)
    monkeypatch.undo()
    assert len(sim.t) > 50
    assert asked["rates"] <= 1                       # the start only
    dyn = fb.dynamics(sim.q, start=sim.phi)
    energy = dyn.kinetic_energy(sim.qd) + dyn.potential_energy
    np.testing.assert_allclose(sim.energy, energy, rtol=1e-12, atol=1e-12)
    assert sim.energy_drift < 1e-7


def test_rhs_answers_as_a_function_of_the_state(hanging):
    """The compiled right-hand side at one state, its assembly started from the
    joint values of two different histories (the ones tracked along motions that
    reach the same crank angles from elsewhere): the same answer to rounding (its
    Newton polishes the closure to rounding whatever the start), so that an
    integrator's difference quotients and error estimates see no history."""
    fb, q0 = hanging
    rhs = fb.evaluation.motion_rhs()
    y = np.concatenate([q0, [0.8, -0.5]])
    tau, loads = np.zeros(2), np.zeros(fb.N)
    starts = [fb.assemble(q0)]
    for offset in (0.02, -0.03):                        # two other histories' last step
        starts.append(fb.assemble(q0 + offset, start=starts[0]))
    answers = [rhs(y, start, tau, loads) for start in starts]
    for f, phi, status, cond, phid in answers:
        assert status == 0
        np.testing.assert_allclose(f, answers[0][0], rtol=1e-14, atol=1e-13)
        np.testing.assert_allclose(phi, answers[0][1], rtol=0, atol=1e-14)
        np.testing.assert_allclose(phid, answers[0][4], rtol=0, atol=1e-13)
    # and the rates it gives are the model's
    np.testing.assert_allclose(answers[0][4], fb.joint_rates(q0, y[2:], start=starts[0]),
                               rtol=0, atol=1e-14)


def test_the_record_takes_the_compiled_one_pose_path(monkeypatch):
    """The record's joint rates where the motion ran compiled (arrays made by the
    compiled kernels, whose float64 descriptor may be numba's, not numpy's own)
    are evaluated by the compiled one-pose path, not the general one (about 1 ms
    a pose: most of a 2 s fall's time); the simulation's arrays are numpy's
    float64.  The five-bar's fall through its flat configuration, which
    switches coordinates and crosses."""
    from kic.closed_eval import CompiledEvaluation
    from kic.simulation import _Record
    fb = mechanisms.five_bar()
    general = {"calls": 0, "recording": False}
    assembled, result = CompiledEvaluation.assembled, _Record.result

    def counted(self, *a, **kw):
        general["calls"] += general["recording"]
        return assembled(self, *a, **kw)

    def recording(self, *a, **kw):
        general["recording"] = True
        try:
            return result(self, *a, **kw)
        finally:
            general["recording"] = False
    monkeypatch.setattr(CompiledEvaluation, "assembled", counted)
    monkeypatch.setattr(_Record, "result", recording)
    sim = kic.simulate(fb, (0.0, 1.0), fb.reference, [0.0, 0.0], rtol=1e-10, atol=1e-12)
    monkeypatch.undo()
    assert sim.switches and sim.crossings and len(sim.t) > 50
    assert general["calls"] == 0
    for a in (sim.t, sim.q, sim.qd, sim.phi, sim.energy):
        assert a.dtype is np.dtype(np.float64)
