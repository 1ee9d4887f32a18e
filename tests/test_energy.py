"""Energy behaviour of kic.simulate on random chains, with energies computed
independently by the oracle (tests/oracles/rnea.py)."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import kic
from helpers import random_chain
from oracles.rnea import (OracleLoads, oracle_forward_dynamics, oracle_kinetic_energy,
                          oracle_potential_energy, oracle_spring_energy, point_position)

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels


def chain4(seed, kinds="RRPR", gravity=None):
    rng = np.random.default_rng(seed)
    ch = random_chain(rng, 4, kinds=kinds, gravity=gravity)
    return rng, ch


def own_energy(ch, sim, loads=None):
    E = np.array([oracle_kinetic_energy(ch, q, qd) + oracle_potential_energy(ch, q)
                  for q, qd in zip(sim.q, sim.qd)])
    if loads is not None:
        E = E + np.array([oracle_spring_energy(ch, q, loads) for q in sim.q])
    return E


def drift(E, KE):
    return np.abs(E - E[0]).max() / max(abs(E[0]), KE.max())


def kinetic(ch, sim):
    return np.array([oracle_kinetic_energy(ch, q, qd) for q, qd in zip(sim.q, sim.qd)])


@pytest.mark.parametrize("seed,kinds", [(1, "RRRR"), (2, "RRPR"), (3, "RPRR")])
def test_free_motion_conserves_energy(seed, kinds):
    rng, ch = chain4(seed, kinds)
    q0, qd0 = rng.normal(size=4), rng.normal(size=4)
    sim = kic.simulate(ch, (0.0, 2.0), q0, qd0)
    assert sim.conservative
    assert sim.energy_drift < 1e-6
    E = own_energy(ch, sim)
    KE = kinetic(ch, sim)
    assert drift(E, KE) < 1e-6
    # kic's reported energy is the same quantity (KE + gravitational PE)
    np.testing.assert_allclose(sim.energy, E, rtol=0, atol=1e-9 * max(abs(E[0]), KE.max()))
    assert KE.max() > 0.1      # it really moved


@pytest.mark.slow        # ~5 s per backend: long integrations
def test_free_motion_follows_oracle_dynamics():
    """Energy conservation alone would not see a wrong (but conservative) model:
    compare the trajectory with an integration of the oracle's forward dynamics."""
    rng, ch = chain4(4)
    q0, qd0 = rng.normal(size=4), rng.normal(size=4)
    T = 0.5
    sim = kic.simulate(ch, (0.0, T), q0, qd0, t_eval=[T], rtol=1e-11, atol=1e-13)

    def rhs(t, x):
        return np.concatenate([x[4:], oracle_forward_dynamics(ch, x[:4], x[4:], np.zeros(4))])

    ref = solve_ivp(rhs, (0.0, T), np.concatenate([q0, qd0]), method="DOP853",
                    rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(sim.q[-1], ref.y[:4, -1], atol=1e-7)
    np.testing.assert_allclose(sim.qd[-1], ref.y[4:, -1], atol=1e-7)


@pytest.mark.slow
def test_damped_motion_loses_energy_monotonically():
    rng, ch = chain4(5)
    q0, qd0 = rng.normal(size=4), 2 * rng.normal(size=4)
    c = rng.uniform(0.2, 1.0, 4)
    L = OracleLoads()
    for j in range(4):
        L.damper(j, c[j])
    t = np.linspace(0.0, 2.0, 801)
    sim = kic.simulate(ch, (0.0, 2.0), q0, qd0, loads=L.replay(kic.Loads()), t_eval=t)
    assert not sim.conservative
    E = own_energy(ch, sim)
    scale = max(abs(E[0]), kinetic(ch, sim).max())
    assert np.all(np.diff(E) <= 1e-9 * scale), "energy increased somewhere"
    assert E[-1] < E[0] - 0.05 * scale
    # quantitatively: E(t) - E(0) = -int sum c q'^2 dt (Simpson on the even grid)
    power = (c * sim.qd**2).sum(axis=1)
    dt = t[1] - t[0]
    lost = dt / 3 * (power[0] + power[-1] + 4 * power[1:-1:2].sum() + 2 * power[2:-1:2].sum())
    assert abs((E[0] - E[-1]) - lost) <= 1e-6 * scale


@pytest.mark.slow
def test_springs_without_gravity_conserve_ke_plus_spring_energy():
    rng, ch = chain4(6, gravity=np.zeros(3))
    L = OracleLoads()
    for j in range(4):
        L.spring(j, rng.uniform(5, 30), rest=rng.uniform(-0.5, 0.5))
    q0, qd0 = rng.normal(size=4), rng.normal(size=4)
    sim = kic.simulate(ch, (0.0, 2.0), q0, qd0, loads=L.replay(kic.Loads()))
    assert sim.conservative
    E = own_energy(ch, sim, loads=L)
    KE = kinetic(ch, sim)
    assert drift(E, KE) < 1e-6
    assert sim.energy_drift < 1e-6
    np.testing.assert_allclose(sim.energy, E, rtol=0, atol=1e-9 * max(abs(E[0]), KE.max()))
    # the spring energy really changed (the springs did work)
    Es = np.array([oracle_spring_energy(ch, q, L) for q in sim.q])
    assert Es.max() - Es.min() > 0.1 * KE.max()


def test_constant_force_energy():
    """A constant world force at a point is conservative: KE + V - F . x_p is constant."""
    rng, ch = chain4(7, kinds="RRRR")
    F, p = np.array([2.0, -1.0, 3.0]), np.array([0.1, 0.0, 0.2])
    sim = kic.simulate(ch, (0.0, 1.5), rng.normal(size=4), rng.normal(size=4),
                       loads=kic.Loads().force(3, F, point=p))
    assert sim.conservative
    E = own_energy(ch, sim) - np.array([F @ point_position(ch, q, 3, p) for q in sim.q])
    KE = kinetic(ch, sim)
    assert drift(E, KE) < 1e-6
    np.testing.assert_allclose(sim.energy, E, rtol=0, atol=1e-9 * max(abs(E[0]), KE.max()))
