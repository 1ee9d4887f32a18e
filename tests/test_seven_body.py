"""Andrews' squeezing mechanism (seven bodies, three loops closing at one hinge, a
spring; benchmarks/seven_body_spring.py) built with kic's generic Mechanism API
against its hand-coded index-1 equations and the published end state."""
import sys
from pathlib import Path

import numpy as np
import pytest

import kic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
seven = pytest.importorskip("seven_body_spring")


@pytest.fixture(scope="module")
def runs():
    model = seven.andrews_model()
    times = np.linspace(0.0, seven.T_END, 7)
    sim = seven.kic_simulate(model, seven.T_END, 1e-10, 1e-12, t_eval=times)
    hand = seven.HandCoded().simulate(seven.T_END, 1e-10, 1e-12, t_eval=times)
    return model, sim, hand


def test_the_hand_coded_equations_are_the_published_ones():
    hand = seven.HandCoded()
    assert np.abs(hand.closure(seven.Q0)).max() < 1e-14


def test_kic_agrees_with_the_hand_coded_equations(runs):
    model, sim, hand = runs
    np.testing.assert_array_equal(sim.t, hand.t)
    angles = seven.angles_of(model, sim.phi)
    np.testing.assert_allclose(angles, hand.y[:7].T, atol=1e-7)
    rates = model.joint_rates(sim.q, sim.qd, start=sim.phi)[:, model.joint_indices(seven.NAMES)]
    np.testing.assert_allclose(rates, hand.y[7:].T, atol=1e-4 * np.abs(hand.y[7:]).max())
    # both reach the test set's end state (the crank turns 2.5 times)
    np.testing.assert_allclose(angles[-1], seven.Q_END_PUBLISHED, atol=1e-7)
    np.testing.assert_allclose(hand.y[:7, -1], seven.Q_END_PUBLISHED, atol=1e-7)


def test_the_energy_grows_by_the_work_of_the_drive(runs):
    """Kinetic + spring energy (kic's record) grows by mom * (change of beta): the
    only input; the closure does no work."""
    model, sim, _ = runs
    assert not sim.conservative
    work = seven.mom * (sim.q[:, 0] - sim.q[0, 0])
    np.testing.assert_allclose(sim.energy - sim.energy[0], work, atol=1e-7 * np.abs(work).max())


def test_two_chains_without_mass():
    """The hinge closes three loops: the open chains cut at it carry no mass (issue 18
    item 6: their energy is zero, not an error)."""
    model = seven.andrews_model()
    assert sum(not chain.has_inertia for chain, _ in model.open_chains) == 2
    assert isinstance(model, kic.ClosedModel)
