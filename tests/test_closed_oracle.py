"""Closed mechanisms against an independent Lagrange-multiplier (KKT) oracle.

``oracles/lagrange.py`` models the five-bar, four-bar, slider-crank and the
6-UPS Stewart platform from their *parameters* (absolute planar coordinates;
the Stewart platform as a free body plus six U-P legs with point-coincidence
closures), never from kic's closed-mechanism objects, and solves
``M phi'' + b = S^T tau + A^T lambda, A phi'' = -A' phi'``.

Two groups of tests:

* oracle self-tests (always run): closure and its derivatives against finite
  differences, two independent five-bar formulations, two independent leg
  dynamics, virtual-work statics, power balance, energy conservation, the
  symmetric Stewart pose, leg rates, load distribution properties;
* kic against the oracle (issue 3): actuator loads and forward dynamics to
  1e-9 relative at random states near the nominal assembly, several seeds and
  non-default dimensions; joint rates, leg rates, energies, the overconstrained
  five-bar.  A missing builder (or a platform model without
  ``actuator_model()``) fails these tests: a rename must not silently skip them.

The largest relative error of every kic comparison is kept in ``MEASURED``.
"""
from __future__ import annotations


import numpy as np
import pytest
from scipy.integrate import solve_ivp

from helpers import (assert_rel_recorded, derivative, directional_derivative,
                     mechanism_builder as builder, rel_err)
from oracles import lagrange as L

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels

RTOL = 1e-9          # kic vs oracle (issue 3)
FLOOR = 1e-6         # norm floor of the relative error (loads are O(1..100))
SEEDS = (0, 1, 2)

# --------------------------------------------------------------- parameters
FIVE_BAR_ALT = dict(base=0.15, crank1=0.22, crank2=0.28, coupler1=0.33, coupler2=0.38,
                    m_crank1=1.3, m_crank2=0.7, m_coupler1=0.6, m_coupler2=0.9, m_tip=0.2,
                    g=9.7)
FOUR_BAR_ALT = dict(ground=0.32, crank=0.12, coupler=0.33, rocker=0.27, m_crank=0.6,
                    m_coupler=1.2, m_rocker=0.5, g=9.81)
SLIDER_ALT = dict(crank=0.12, rod=0.35, offset=0.03, m_crank=0.4, m_rod=1.1, m_slider=1.5,
                  g=9.6)
STEWART_ALT = dict(rb=0.45, rp=0.25, h0=0.7, m_plat=8.0, I_plat=np.diag([0.25, 0.28, 0.45]),
                   plat_com=(0.01, -0.02, 0.04), m_cyl=1.5, cyl_com=0.25,
                   I_cyl=np.diag([0.015, 0.015, 0.0015]), m_rod=0.8, rod_com=-0.1,
                   I_rod=np.diag([0.008, 0.008, 0.0008]), g=9.81)

# name -> (oracle class, [parameter sets], nominal q, spread of q (rad))
PLANAR = {
    "five_bar": (L.FiveBar, [{}, FIVE_BAR_ALT], np.array([2.0, 1.1]), 0.25),
    "four_bar": (L.FourBar, [{}, FOUR_BAR_ALT], np.array([1.0]), 0.4),
    "slider_crank": (L.SliderCrank, [{}, SLIDER_ALT], np.array([0.7]), 0.4),
}
COORDS = {"five_bar": ["crank1", "crank2"], "four_bar": ["crank"],
          "slider_crank": ["crank"]}
PLANAR_CASES = [(name, k) for name in PLANAR for k in range(2)]
PLANAR_IDS = [f"{n}-{'default' if k == 0 else 'alt'}" for n, k in PLANAR_CASES]


def planar_states(name, seed, K=4):
    _, _, q0, spread = PLANAR[name]
    rng = np.random.default_rng(1000 * seed + len(name))
    q = q0 + rng.uniform(-spread, spread, (K, q0.size))
    qd = rng.normal(scale=1.5, size=(K, q0.size))
    qdd = rng.normal(scale=3.0, size=(K, q0.size))
    return q, qd, qdd


def stewart_states(seed, h0=0.6, K=3):
    rng = np.random.default_rng(77 + seed)
    x0 = np.array([0.0, 0.0, h0, 0.0, 0.0, 0.0])
    x = x0 + np.hstack([rng.uniform(-0.04, 0.04, (K, 3)), rng.uniform(-0.1, 0.1, (K, 3))])
    xd = np.hstack([rng.normal(scale=0.2, size=(K, 3)), rng.normal(scale=0.5, size=(K, 3))])
    xdd = np.hstack([rng.normal(scale=1.0, size=(K, 3)), rng.normal(scale=2.0, size=(K, 3))])
    return x, xd, xdd


def oracle_of(name, k):
    cls, params, _, _ = PLANAR[name]
    return cls(**params[k])


def fd_phi(m, q, dq, h):
    """(phi(q + h dq) - phi(q - h dq)) / 2h with angle entries unwrapped."""
    a, b = m.phi(q + h * dq), m.phi(q - h * dq)
    d = a - b
    for i in _angle_index(m):
        d[i] = L.wrap(d[i])
    return d / (2 * h)


def _angle_index(m):
    if isinstance(m, L.PlanarSystem):
        return [b["start"] + 2 for b in m.bodies if b["rigid"]]
    if isinstance(m, L.FiveBarTree):
        return [0, 1, 2, 3]
    return []


# =====================================================================
#                        oracle self-tests
# =====================================================================
ALL_ORACLES = [(n, k) for n, k in PLANAR_CASES] + [("stewart", 0), ("stewart", 1),
                                                    ("five_bar_tree", 0)]
ALL_IDS = [f"{n}-{'default' if k == 0 else 'alt'}" for n, k in ALL_ORACLES]


def make_oracle(name, k):
    if name == "stewart":
        return L.StewartPlatform(**oracle_params(k))
    if name == "five_bar_tree":
        return L.FiveBarTree(**({} if k == 0 else FIVE_BAR_ALT))
    return oracle_of(name, k)


def oracle_state(name, k, seed=0):
    if name == "stewart":
        x, xd, xdd = stewart_states(seed, h0=0.6 if k == 0 else STEWART_ALT["h0"], K=1)
        return x[0], xd[0], xdd[0]
    q, qd, qdd = planar_states("five_bar" if name == "five_bar_tree" else name, seed, K=1)
    return q[0], qd[0], qdd[0]


@pytest.mark.parametrize("name,k", ALL_ORACLES, ids=ALL_IDS)
def test_oracle_closure_derivatives(name, k):
    """Assembly closes; A = dc/dphi and gamma = d2c/dt2|phi''=0 match finite differences."""
    m = make_oracle(name, k)
    q, _, _ = oracle_state(name, k)
    phi = m.phi(q)
    assert np.max(np.abs(m.constraints(phi))) < 1e-12
    rng = np.random.default_rng(5)
    phid = rng.normal(size=m.N)
    h = 1e-6
    Afd = derivative(m.constraints, phi, h)
    A = m.jacobian(phi)
    assert np.max(np.abs(A - Afd)) < 1e-8 * max(1.0, np.max(np.abs(A)))
    h = 1e-4
    gfd = (m.constraints(phi + h * phid) - 2 * m.constraints(phi)
           + m.constraints(phi - h * phid)) / h ** 2
    g = m.gamma(phi, phid)
    assert np.max(np.abs(g - gfd)) < 1e-6 * max(1.0, np.max(np.abs(g)))


@pytest.mark.parametrize("name,k", ALL_ORACLES, ids=ALL_IDS)
def test_oracle_rates_match_finite_differences_of_assembly(name, k):
    """phi' and phi'' from the linear closure solves equal finite differences of
    the closed-form assembly along q(t) = q + t q' + t^2 q'' / 2."""
    m = make_oracle(name, k)
    q, qd, qdd = oracle_state(name, k)
    phi, phid, phidd = m.state(q, qd, qdd)
    assert np.max(np.abs(m.jacobian(phi) @ phid)) < 1e-12
    assert rel_err(phid, fd_phi(m, q, qd, 1e-6), 1.0) < 1e-8
    h = 1e-4
    qt = lambda t: q + t * qd + 0.5 * t * t * qdd   # noqa: E731
    d2 = m.phi(qt(h)) - 2 * m.phi(qt(0.0)) + m.phi(qt(-h))
    for i in _angle_index(m):
        d2[i] = L.wrap(d2[i])
    assert rel_err(phidd, d2 / h ** 2, 1.0) < 1e-5


@pytest.mark.parametrize("name,k", ALL_ORACLES, ids=ALL_IDS)
def test_oracle_static_loads_equal_potential_gradient(name, k):
    """At rest the actuator loads do the virtual work of gravity: tau = dV/dq."""
    m = make_oracle(name, k)
    q, _, _ = oracle_state(name, k)
    Z = np.zeros(m.dof)
    tau = m.inverse_dynamics(q, Z, Z)
    h = 1e-6
    dV = derivative(m.potential_energy, q, h)
    assert rel_err(tau, dV, 1.0) < 1e-7


@pytest.mark.parametrize("name,k", ALL_ORACLES, ids=ALL_IDS)
def test_oracle_power_balance(name, k):
    """tau . q' = d(KE + V)/dt along q(t) = q + t q' + t^2 q''/2 (velocity terms,
    gravity and inertia all enter)."""
    m = make_oracle(name, k)
    q, qd, qdd = oracle_state(name, k, seed=1)
    tau = m.inverse_dynamics(q, qd, qdd)
    E = lambda t: (m.kinetic_energy(q + t * qd + 0.5 * t * t * qdd, qd + t * qdd)   # noqa
                   + m.potential_energy(q + t * qd + 0.5 * t * t * qdd))
    h = 1e-5
    dE = directional_derivative(E, 0.0, 1.0, h)
    assert abs(tau @ qd - dE) < 1e-7 * max(1.0, abs(dE))


@pytest.mark.parametrize("name,k", ALL_ORACLES, ids=ALL_IDS)
def test_oracle_forward_inverts_inverse(name, k):
    m = make_oracle(name, k)
    q, qd, qdd = oracle_state(name, k, seed=2)
    tau = m.inverse_dynamics(q, qd, qdd)
    assert rel_err(m.forward_dynamics(q, qd, tau), qdd, 1.0) < 1e-11
    assert m.kkt_residual(q, qd, qdd, tau) < 1e-10 * max(1.0, np.max(np.abs(tau)))


@pytest.mark.parametrize("name,k", [("five_bar", 0), ("four_bar", 1), ("slider_crank", 1),
                                    ("stewart", 0)],
                         ids=["five_bar", "four_bar-alt", "slider_crank-alt", "stewart"])
def test_oracle_energy_conservation(name, k):
    """Free motion under constant actuator loads: KE + V - tau . q is conserved."""
    m = make_oracle(name, k)
    q0, qd0, _ = oracle_state(name, k, seed=3)
    tau = m.inverse_dynamics(q0, np.zeros(m.dof), np.zeros(m.dof))    # static loads at q0
    if name == "stewart":
        T = 0.2
    else:
        qd0 = 3.0 * qd0 / np.linalg.norm(qd0)          # 3 rad/s of crank speed
        T = 0.5

    def rhs(t, y):
        q, qd = y[:m.dof], y[m.dof:]
        return np.concatenate([qd, m.forward_dynamics(q, qd, tau)])

    def energy(y):
        q, qd = y[:m.dof], y[m.dof:]
        return m.kinetic_energy(q, qd) + m.potential_energy(q) - tau @ q

    sol = solve_ivp(rhs, (0.0, T), np.concatenate([q0, qd0]), method="DOP853",
                    rtol=1e-11, atol=1e-12, max_step=T / 25)
    assert sol.success
    assert sol.y.shape[1] > 20                                   # a real integration
    E = np.array([energy(y) for y in sol.y.T])
    KE0 = m.kinetic_energy(q0, qd0)
    assert np.max(np.abs(E - E[0])) < 1e-8 * KE0
    assert np.max(np.abs(sol.y[m.dof:, -1] - qd0)) > 1e-2      # it really moved


@pytest.mark.parametrize("k", [0, 1], ids=["default", "alt"])
def test_oracle_five_bar_two_formulations_agree(k):
    """Absolute coordinates (free bodies, pins) == relative joint angles of a
    spanning tree from the RNEA oracle with the loop equation C1 = C2."""
    params = {} if k == 0 else FIVE_BAR_ALT
    a, b = L.FiveBar(**params), L.FiveBarTree(**params)
    q, qd, qdd = planar_states("five_bar", 7, K=3)
    three = ("crank1", "crank2", "elbow1")
    for i in range(3):
        assert rel_err(a.inverse_dynamics(q[i], qd[i], qdd[i]),
                       b.inverse_dynamics(q[i], qd[i], qdd[i]), 1e-6) < 1e-12
        assert rel_err(a.inverse_dynamics(q[i], qd[i], qdd[i], actuators=three),
                       b.inverse_dynamics(q[i], qd[i], qdd[i], actuators=three), 1e-6) < 1e-12
        tau = np.array([0.3, -1.1])
        assert rel_err(a.forward_dynamics(q[i], qd[i], tau),
                       b.forward_dynamics(q[i], qd[i], tau), 1e-6) < 1e-12
        assert abs(a.kinetic_energy(q[i], qd[i]) - b.kinetic_energy(q[i], qd[i])) < 1e-13
        assert abs(a.potential_energy(q[i]) - b.potential_energy(q[i])) < 1e-12


def test_oracle_five_bar_branch_and_geometry():
    m = L.FiveBar()
    asm = m.assemble(m.nominal)
    A1, A2, C = asm["A1"], asm["A2"], asm["C"]
    d = A2 - A1
    assert d[0] * (C - A1)[1] - d[1] * (C - A1)[0] > 0        # C left of A1 -> A2
    assert C[1] > max(A1[1], A2[1])
    assert abs(np.linalg.norm(C - A1) - 0.35) < 1e-14
    assert abs(np.linalg.norm(C - A2) - 0.35) < 1e-14
    assert abs(asm["elbow1"] - L.wrap(np.arctan2(*(C - A1)[::-1]) - m.nominal[0])) < 1e-14
    with pytest.raises(ValueError):
        L.FiveBar(base=2.0).phi(m.nominal)


def test_oracle_overconstrained_five_bar_load_distribution():
    """Three actuators (cranks + elbow1): the minimum-norm and weighted solutions
    reproduce the motion, are minimal, and differ by an internal load."""
    m = L.FiveBar()
    three = ("crank1", "crank2", "elbow1")
    q, qd, qdd = planar_states("five_bar", 11, K=3)
    for i in range(3):
        t_min = m.inverse_dynamics(q[i], qd[i], qdd[i], actuators=three)
        W = np.array([1.0, 2.5, 0.4])
        t_w = m.inverse_dynamics(q[i], qd[i], qdd[i], actuators=three, weights=W)
        for t in (t_min, t_w):
            assert rel_err(m.forward_dynamics(q[i], qd[i], t, actuators=three), qdd[i], 1) < 1e-11
            assert m.kkt_residual(q[i], qd[i], qdd[i], t, actuators=three) < 1e-10
        # internal load: B n = 0, with B = N^T S^T
        phi = m.phi(q[i])
        B = L.null_basis(m.jacobian(phi)).T @ m.S(three).T
        n_int = L.null_basis(B)[:, 0]
        assert rel_err(m.forward_dynamics(q[i], qd[i], t_min + 3.0 * n_int, actuators=three),
                       qdd[i], 1) < 1e-11
        assert abs(t_min @ n_int) < 1e-12 * np.linalg.norm(t_min)      # minimal norm
        assert abs((W * t_w) @ n_int) < 1e-12 * np.linalg.norm(W * t_w)  # minimal tau^T W tau
        assert rel_err(t_min, np.linalg.pinv(B) @ (L.null_basis(m.jacobian(phi)).T
                                                   @ m.required(*m.state(q[i], qd[i], qdd[i]))),
                       1e-6) < 1e-12
        assert rel_err(m.inverse_dynamics(q[i], qd[i], qdd[i], actuators=three,
                                          weights=np.ones(3)), t_min, 1e-6) < 1e-13
        # the two-actuator solution is one of the admissible three-actuator ones
        t2 = m.inverse_dynamics(q[i], qd[i], qdd[i])
        assert m.kkt_residual(q[i], qd[i], qdd[i], np.append(t2, 0.0), actuators=three) < 1e-10
        assert np.linalg.norm(t_min) <= np.linalg.norm(t2) + 1e-12


@pytest.mark.parametrize("k", [0, 1], ids=["default", "alt"])
def test_oracle_stewart_two_leg_dynamics_agree(k):
    """Leg dynamics by Kane projections (default) == RNEA oracle on kic.SerialChain
    descriptions; platform mass matrix == Newton-Euler load with unit accelerations."""
    params = oracle_params(k)
    a = L.StewartPlatform(**params)
    b = L.StewartPlatform(leg_dynamics="rnea", **params)
    x, xd, xdd = stewart_states(4, h0=a.p["h0"], K=1)
    phi, phid = a.state(x[0], xd[0])
    assert rel_err(a.mass(phi), b.mass(phi), 1e-6) < 1e-13
    assert rel_err(a.bias(phi, phid), b.bias(phi, phid), 1e-6) < 1e-13
    Mp = np.column_stack([a.platform_load(x[0], np.zeros(6), e, gravity=False)
                          for e in np.eye(6)])
    assert rel_err(a.platform_mass(x[0]), Mp, 1e-6) < 1e-13
    assert abs(a.kinetic(phi, phid) - 0.5 * phid @ a.mass(phi) @ phid) < 1e-12
    fa = a.actuator_forces(x[0], xd[0], xdd[0])
    fb = b.actuator_forces(x[0], xd[0], xdd[0])
    assert rel_err(fa[0], fb[0], 1e-6) < 1e-12 and rel_err(fa[1], fb[1], 1e-6) < 1e-12


def test_oracle_stewart_symmetric_rest_pose():
    """Nominal pose at rest (3-fold + mirror symmetric): six equal leg forces; the
    pose load is a pure vertical force equal to J^T f."""
    m = L.StewartPlatform()
    Z = np.zeros(6)
    f_legs, f_pose = m.actuator_forces(m.nominal, Z, Z)
    assert np.ptp(f_legs) < 1e-12 * abs(f_legs[0])
    assert f_legs[0] > 0
    assert np.max(np.abs(np.delete(f_pose, 2))) < 1e-12 * abs(f_pose[2])
    assert rel_err(m.leg_jacobian(m.nominal).T @ f_legs, f_pose, 1.0) < 1e-13
    # the platform alone would need m g; legs are partly carried by the base joints
    W_plat = m.p["m_plat"] * m.p["g"]
    W_all = (m.p["m_plat"] + 6 * (m.p["m_cyl"] + m.p["m_rod"])) * m.p["g"]
    assert W_plat < f_pose[2] < W_all


@pytest.mark.parametrize("seed", SEEDS)
def test_oracle_stewart_leg_rates_and_virtual_work(seed):
    """a_i' = n_i . v_Bi; pose load = J^T (leg forces); leg-coordinate model
    (Newton forward kinematics) gives the same forces and accelerations."""
    m = L.StewartPlatform()
    legs = L.StewartPlatform(coordinates="legs")
    x, xd, xdd = stewart_states(seed, K=2)
    for i in range(2):
        a, ad, add = m.leg_motion(x[i], xd[i], xdd[i])
        a2, ad2, vB = m.leg_rates(x[i], xd[i])
        assert rel_err(ad, ad2, 1e-3) < 1e-13
        assert rel_err(ad, m.leg_jacobian(x[i]) @ xd[i], 1e-3) < 1e-13
        h = 1e-6
        ad_fd = directional_derivative(lambda x: m.inverse_kinematics(x)[:, 2], x[i], xd[i], h)
        assert rel_err(ad, ad_fd, 1e-3) < 1e-8
        assert rel_err(legs.forward_kinematics(a), x[i], 1.0) < 1e-13
        f_legs, f_pose = m.actuator_forces(x[i], xd[i], xdd[i])
        assert rel_err(m.leg_jacobian(x[i]).T @ f_legs, f_pose, 1e-3) < 1e-12
        assert rel_err(legs.inverse_dynamics(a, ad, add), f_legs, 1e-3) < 1e-11
        assert rel_err(legs.forward_dynamics(a, ad, f_legs), add, 1e-3) < 1e-10
        assert rel_err(m.platform_acceleration(x[i], xd[i], leg_forces=f_legs), xdd[i], 1) < 1e-11


# =====================================================================
#                        kic against the oracle
# =====================================================================
MEASURED = {}        # what -> largest relative error seen (for the closing report)


def assert_rel(actual, expected, what, rtol=RTOL, floor=FLOOR):
    return assert_rel_recorded(MEASURED, actual, expected, what, rtol, floor, ",")


# ----------------------------------------------------------------- planar
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name,k", PLANAR_CASES, ids=PLANAR_IDS)
def test_kic_planar_inverse_dynamics(name, k, seed):
    model = builder(name)(**PLANAR[name][1][k])
    oracle = oracle_of(name, k)
    assert list(model.coordinate_names) == COORDS[name]
    q, qd, qdd = planar_states(name, seed)
    tau = model.inverse_dynamics(q, qd, qdd)              # batched
    for i in range(len(q)):
        expected = oracle.inverse_dynamics(q[i], qd[i], qdd[i])
        assert_rel(tau[i], expected, f"{name} torques, state {i}")
        assert_rel(model.inverse_dynamics(q[i], qd[i], qdd[i]), expected,
                   f"{name} torques, single state {i}")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name,k", PLANAR_CASES, ids=PLANAR_IDS)
def test_kic_planar_forward_dynamics(name, k, seed):
    model = builder(name)(**PLANAR[name][1][k])
    oracle = oracle_of(name, k)
    q, qd, _ = planar_states(name, seed)
    rng = np.random.default_rng(seed + 50)
    tau = np.array([oracle.inverse_dynamics(qi, 0 * qi, 0 * qi) for qi in q]) \
        + rng.normal(scale=0.5, size=q.shape)
    qdd = model.forward_dynamics(q, qd, tau)
    for i in range(len(q)):
        assert_rel(qdd[i], oracle.forward_dynamics(q[i], qd[i], tau[i]),
                   f"{name} accelerations, state {i}")


@pytest.mark.parametrize("name,k", PLANAR_CASES, ids=PLANAR_IDS)
def test_kic_planar_energies_and_static_loads(name, k):
    model = builder(name)(**PLANAR[name][1][k])
    oracle = oracle_of(name, k)
    q, qd, _ = planar_states(name, 5)
    dyn = model.dynamics(q)
    KE = dyn.kinetic_energy(qd)
    V = np.asarray(dyn.potential_energy)
    Vo = np.array([oracle.potential_energy(qi) for qi in q])
    for i in range(len(q)):
        assert_rel(KE[i], oracle.kinetic_energy(q[i], qd[i]), f"{name} kinetic energy {i}")
        assert_rel(V[i] - V[0], Vo[i] - Vo[0], f"{name} potential energy differences {i}")
        assert_rel(np.asarray(dyn.gravity_load)[i],
                   oracle.inverse_dynamics(q[i], 0 * q[i], 0 * q[i]), f"{name} gravity load {i}")


@pytest.mark.parametrize("name,k", [c for c in PLANAR_CASES if c[0] != "five_bar"],
                         ids=[i for c, i in zip(PLANAR_CASES, PLANAR_IDS) if c[0] != "five_bar"])
def test_kic_single_loop_full_crank_revolution(name, k):
    """Four-bar (crank-rocker) and slider-crank stay on the stated branch over a
    whole crank revolution (one batch, and state by state in order)."""
    model = builder(name)(**PLANAR[name][1][k])
    oracle = oracle_of(name, k)
    th = np.linspace(0.0, 2 * np.pi, 25)[:-1][:, None]
    rng = np.random.default_rng(3)
    qd = rng.normal(scale=2.0, size=th.shape)
    qdd = rng.normal(scale=5.0, size=th.shape)
    tau = model.inverse_dynamics(th, qd, qdd)
    for i in range(len(th)):
        expected = oracle.inverse_dynamics(th[i], qd[i], qdd[i])
        assert_rel(tau[i], expected, f"{name} torques over a revolution, angle {i}")
        assert_rel(model.inverse_dynamics(th[i], qd[i], qdd[i]), expected,
                   f"{name} torques stepping through a revolution, angle {i}")


# joint -> (body angle(s) whose difference is the joint angle: child, parent)
JOINT_RATES = {
    "five_bar": {"elbow1": ("coupler1", "crank1"), "elbow2": ("coupler2", "crank2"),
                 "tip": ("coupler2", "coupler1")},
    "four_bar": {"A": ("coupler", "crank"), "B": ("rocker", "coupler"), "rocker": ("rocker", None)},
    "slider_crank": {"A": ("rod", "crank"), "B": (None, "rod")},
}


@pytest.mark.parametrize("name,k", PLANAR_CASES, ids=PLANAR_IDS)
def test_kic_planar_joint_rates(name, k):
    """phi' of the passive joints (revolute axes +z: the joint rate is the child's
    absolute angular rate minus the parent's; the slide is x_B')."""
    model = builder(name)(**PLANAR[name][1][k])
    oracle = oracle_of(name, k)
    q, qd, qdd = planar_states(name, 6)
    phid_k, phidd_k = model.joint_rates(q, qd, qdd)
    names = list(model.phi_names)
    checked = 0
    for i in range(len(q)):
        _, phid, phidd = oracle.state(q[i], qd[i], qdd[i])
        rate = lambda b, v: 0.0 if b is None else v[oracle.theta_index(b)]   # noqa: E731
        for joint, (child, parent) in JOINT_RATES[name].items():
            if joint not in names:
                continue
            j = names.index(joint)
            assert_rel(phid_k[i, j], rate(child, phid) - rate(parent, phid),
                       f"{name} rate of {joint}", floor=1e-3)
            assert_rel(phidd_k[i, j], rate(child, phidd) - rate(parent, phidd),
                       f"{name} acceleration of {joint}", floor=1e-3)
            checked += 1
        if name == "slider_crank" and "slide" in names:
            s = oracle.body("slider")["start"]
            assert_rel(phid_k[i, names.index("slide")], phid[s], "slide rate", floor=1e-3)
            assert_rel(phidd_k[i, names.index("slide")], phidd[s], "slide acceleration",
                       floor=1e-3)
    assert checked > 0


def _kic_actuator_rows(model, q, names):
    kin = model.kinematics(q)
    G = np.asarray(kin.transfer.G)
    idx = [list(model.phi_names).index(n) for n in names]
    return G[..., idx, :]                                  # (K, n_a, M) = G^a_q


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", [0, 1], ids=["default", "alt"])
def test_kic_five_bar_overconstrained_load_distribution(k, seed):
    """Cranks + elbow1: tau_a = W^-1 G^a_q (G^a_q^T W^-1 G^a_q)^-1 T_q from kic's
    transfer and required loads == minimum-(weighted-)norm KKT solution."""
    model = builder("five_bar")(**PLANAR["five_bar"][1][k])
    oracle = oracle_of("five_bar", k)
    three = ("crank1", "crank2", "elbow1")
    q, qd, qdd = planar_states("five_bar", seed)
    Ga = _kic_actuator_rows(model, q, three)
    T = model.inverse_dynamics(q, qd, qdd)
    W = np.array([1.0, 2.5, 0.4])
    for i in range(len(q)):
        G = Ga[i]
        t_min = G @ np.linalg.solve(G.T @ G, T[i])
        Wi = np.diag(1.0 / W)
        t_w = Wi @ G @ np.linalg.solve(G.T @ Wi @ G, T[i])
        assert_rel(t_min, oracle.inverse_dynamics(q[i], qd[i], qdd[i], actuators=three),
                   f"minimum-norm torques, state {i}")
        assert_rel(t_w, oracle.inverse_dynamics(q[i], qd[i], qdd[i], actuators=three,
                                                weights=W),
                   f"weighted torques, state {i}")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", [0, 1], ids=["default", "alt"])
def test_kic_five_bar_actuator_loads_api(k, seed):
    """The same through kic's API: ``model.actuator_loads`` (minimum norm and
    weighted), ``model.actuator_jacobian`` and ``kic.internal_loads`` (the internal
    load changes no motion in the oracle)."""
    import kic
    model = builder("five_bar")(**PLANAR["five_bar"][1][k])
    oracle = oracle_of("five_bar", k)
    three = ["crank1", "crank2", "elbow1"]
    q, qd, qdd = planar_states("five_bar", seed)
    W = np.array([1.0, 2.5, 0.4])
    t_min = model.actuator_loads(q, qd, qdd, three)
    t_w = model.actuator_loads(q, qd, qdd, three, weights=W)
    t_two = model.actuator_loads(q, qd, qdd, ["crank1", "crank2"])
    Ga = model.actuator_jacobian(q, three)
    for i in range(len(q)):
        assert_rel(t_min[i], oracle.inverse_dynamics(q[i], qd[i], qdd[i], actuators=three),
                   f"actuator_loads minimum norm, state {i}")
        assert_rel(t_w[i], oracle.inverse_dynamics(q[i], qd[i], qdd[i], actuators=tuple(three),
                                                   weights=W),
                   f"actuator_loads weighted, state {i}")
        assert_rel(t_two[i], oracle.inverse_dynamics(q[i], qd[i], qdd[i]),
                   f"actuator_loads two cranks, state {i}")
        n_int = kic.internal_loads(Ga[i])
        assert n_int.shape == (3, 1)
        assert_rel(oracle.forward_dynamics(q[i], qd[i], t_min[i] + 2.0 * n_int[:, 0],
                                           actuators=three), qdd[i],
                   f"internal load leaves the motion unchanged, state {i}", floor=1.0)


# ---------------------------------------------------------------- Stewart
STEWART_CASES = [0, 1]
STEWART_IDS = ["default", "alt"]
# the non-default half angles: the oracle takes degrees (issue 3 writes "15 deg"),
# kic's builder takes radians (its docstring; SI units throughout)
STEWART_ALT_ANGLES_DEG = dict(base_half_angle=12.0, plat_half_angle=40.0)
LEGS = [f"leg{i}.p" for i in range(6)]


def stewart_pair(k):
    """(kic platform-coordinate model, oracle) for parameter set k."""
    build = builder("stewart_platform")
    if k == 0:
        return build(), L.StewartPlatform()
    kic_angles = {n: np.radians(v) for n, v in STEWART_ALT_ANGLES_DEG.items()}
    return (build(**STEWART_ALT, **kic_angles),
            L.StewartPlatform(**STEWART_ALT, **STEWART_ALT_ANGLES_DEG))


def mechanism_leg_model(plat, h0):
    """The model in the six leg lengths from kic's general closure machinery:
    ``plat.mechanism.model(["leg0.p", ..., "leg5.p"])`` started from the platform
    model's assembly at the nominal pose."""
    phi0 = plat.assemble(np.array([0.0, 0.0, h0, 0.0, 0.0, 0.0]))
    ref = {n: float(v) for n, v in zip(plat.phi_names, phi0) if n.startswith("leg")}
    return plat.mechanism.model(LEGS, reference=ref)


def leg_models(k):
    """(platform model, oracle, leg-length models: ``actuator_model()`` of the spec
    when it exists, and ``mechanism.model(leg joints)``)."""
    plat, oracle = stewart_pair(k)
    out = [mechanism_leg_model(plat, oracle.p["h0"])]
    if getattr(plat, "actuator_model", None) is not None:
        out.insert(0, plat.actuator_model())
    return plat, oracle, out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", STEWART_CASES, ids=STEWART_IDS)
def test_kic_stewart_platform_inverse_dynamics(k, seed):
    """Generalized load on the pose coordinates for a prescribed platform motion."""
    plat, oracle = stewart_pair(k)
    assert plat.dof == 6
    x, xd, xdd = stewart_states(seed, h0=oracle.p["h0"])
    T = plat.inverse_dynamics(x, xd, xdd)
    for i in range(len(x)):
        assert_rel(T[i], oracle.actuator_forces(x[i], xd[i], xdd[i])[1],
                   f"Stewart pose loads, state {i}")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", STEWART_CASES, ids=STEWART_IDS)
def test_kic_stewart_actuator_loads(k, seed):
    """Six leg forces for a prescribed platform motion: ``actuator_loads`` of the
    platform model ((G^a_q)^T tau_a = T_q) == KKT with forces on the prismatic joints."""
    plat, oracle = stewart_pair(k)
    assert list(plat.actuators) == LEGS
    x, xd, xdd = stewart_states(seed, h0=oracle.p["h0"])
    f = plat.actuator_loads(x, xd, xdd, plat.actuators)
    for i in range(len(x)):
        assert_rel(f[i], oracle.actuator_forces(x[i], xd[i], xdd[i])[0],
                   f"Stewart leg forces, state {i}")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", STEWART_CASES, ids=STEWART_IDS)
def test_kic_stewart_platform_forward_dynamics(k, seed):
    """Platform accelerations under given leg forces, through the pose model under
    the equivalent pose load J^T f (J the oracle's leg-rate map)."""
    plat, oracle = stewart_pair(k)
    x, xd, _ = stewart_states(seed, h0=oracle.p["h0"])
    rng = np.random.default_rng(seed + 90)
    f_rest = oracle.actuator_forces(oracle.nominal, np.zeros(6), np.zeros(6))[0]
    f = f_rest + rng.normal(scale=5.0, size=(len(x), 6))
    Q = np.array([oracle.leg_jacobian(x[i]).T @ f[i] for i in range(len(x))])
    xdd_k = plat.forward_dynamics(x, xd, Q)
    for i in range(len(x)):
        assert_rel(xdd_k[i], oracle.platform_acceleration(x[i], xd[i], leg_forces=f[i]),
                   f"Stewart platform accelerations, state {i}")
        assert_rel(xdd_k[i], oracle.platform_acceleration(x[i], xd[i], pose_force=Q[i]),
                   f"Stewart platform accelerations (pose load), state {i}")


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize("k", STEWART_CASES, ids=STEWART_IDS)
def test_kic_stewart_leg_length_models(k, seed):
    """The model in the six leg lengths (``actuator_model()`` when it exists, and
    ``mechanism.model(leg joints)``): leg forces for the oracle's (a, a', a'') of a
    platform motion; leg and platform accelerations under given leg forces."""
    plat, oracle, models = leg_models(k)
    legs = L.StewartPlatform(coordinates="legs", **oracle_params(k))
    x, xd, xdd = stewart_states(seed, h0=oracle.p["h0"])
    motion = [oracle.leg_motion(x[i], xd[i], xdd[i]) for i in range(len(x))]
    a, ad, add = (np.array([mo[j] for mo in motion]) for j in range(3))
    rng = np.random.default_rng(seed + 91)
    f_rest = oracle.actuator_forces(oracle.nominal, np.zeros(6), np.zeros(6))[0]
    f_given = f_rest + rng.normal(scale=5.0, size=(len(x), 6))
    c = oracle.p["plat_com"]
    for act in models:
        assert list(act.coordinate_names) == LEGS
        f = act.inverse_dynamics(a, ad, add)
        add_k = act.forward_dynamics(a, ad, f_given)
        kin = act.kinematics(a)
        acc_c = kin.point("platform", c).acceleration(ad, add_k)
        alpha = kin.rotation("platform").acceleration(ad, add_k)
        for i in range(len(x)):
            assert_rel(f[i], oracle.actuator_forces(x[i], xd[i], xdd[i])[0],
                       f"leg forces from the leg-length model, state {i}")
            assert_rel(add_k[i], legs.forward_dynamics(a[i], ad[i], f_given[i]),
                       f"leg accelerations, state {i}")
            xdd_o = oracle.platform_acceleration(x[i], xd[i], leg_forces=f_given[i])
            R = L.rot_zyx(x[i, 3:])
            E, Ed = L.angular_map(x[i, 3:], xd[i, 3:])
            w = E @ xd[i, 3:]
            al = E @ xdd_o[3:] + Ed
            r = R @ np.asarray(c, float)
            a_c = xdd_o[:3] + np.cross(al, r) + np.cross(w, np.cross(w, r))
            assert_rel(acc_c[i], a_c, f"platform centroid acceleration, state {i}", floor=1e-3)
            assert_rel(alpha[i], al, f"platform angular acceleration, state {i}", floor=1e-3)


def oracle_params(k):
    return {} if k == 0 else dict(STEWART_ALT, **STEWART_ALT_ANGLES_DEG)


@pytest.mark.parametrize("k", STEWART_CASES, ids=STEWART_IDS)
def test_kic_stewart_leg_rates(k):
    """Independent leg-rate check a_i' = n_i . v_Bi against kic's G^a_q
    (``actuator_jacobian``, the rows leg{i}.p of G^phi_q, ``joint_rates``), and the
    platform anchor velocities from the pose model and the leg-length model(s)."""
    plat, oracle, models = leg_models(k)
    x, xd, _ = stewart_states(8, h0=oracle.p["h0"])
    Ga = plat.actuator_jacobian(x, LEGS)                      # (K, 6, 6)
    Gt = _kic_actuator_rows(plat, x, LEGS)
    phid = plat.joint_rates(x, xd)
    names = list(plat.phi_names)
    kin = plat.kinematics(x)
    for i in range(len(x)):
        a, ad, vB = oracle.leg_rates(x[i], xd[i])
        assert_rel(Ga[i] @ xd[i], ad, f"actuator_jacobian x', state {i}", floor=1e-3)
        assert_rel(Gt[i] @ xd[i], ad, f"G^phi_q rows x', state {i}", floor=1e-3)
        assert_rel(phid[i, [names.index(n) for n in LEGS]], ad, f"joint_rates, state {i}",
                   floor=1e-3)
        for j in range(6):
            assert_rel(kin.point("platform", oracle.plat_anchors[j]).velocity(xd)[i], vB[j],
                       f"anchor {j} velocity (pose model), state {i}", floor=1e-3)
        for act in models:
            ka = act.kinematics(a)
            for j in range(6):
                assert_rel(ka.point("platform", oracle.plat_anchors[j]).velocity(ad), vB[j],
                           f"anchor {j} velocity from the leg rates, state {i}", floor=1e-3)


@pytest.mark.parametrize("k", STEWART_CASES, ids=STEWART_IDS)
def test_kic_stewart_assembly_and_energies(k):
    """Leg joint values (u1 about base x, u2 about the rotated y, leg length), kinetic
    energy and potential-energy differences."""
    plat, oracle = stewart_pair(k)
    x, xd, _ = stewart_states(9, h0=oracle.p["h0"])
    phi = plat.assemble(x)
    names = list(plat.phi_names)
    dyn = plat.dynamics(x)
    KE = dyn.kinetic_energy(xd)
    V = np.asarray(dyn.potential_energy)
    Vo = np.array([oracle.potential_energy(xi) for xi in x])
    for i in range(len(x)):
        ik = oracle.inverse_kinematics(x[i])
        for j in range(6):
            for c, nm in enumerate(("u1", "u2", "p")):
                assert_rel(phi[i, names.index(f"leg{j}.{nm}")], ik[j, c],
                           f"leg{j}.{nm}, state {i}", floor=1e-3)
        assert_rel(KE[i], oracle.kinetic_energy(x[i], xd[i]), f"kinetic energy {i}")
        assert_rel(V[i] - V[0], Vo[i] - Vo[0], f"potential energy differences {i}", floor=1e-3)


def test_kic_stewart_symmetric_rest_forces():
    """Nominal pose at rest: six equal leg forces, equal to the oracle's."""
    plat, oracle = stewart_pair(0)
    Z = np.zeros(6)
    f = plat.actuator_loads(oracle.nominal, Z, Z, LEGS)
    assert np.ptp(f) <= 1e-9 * abs(f[0])
    assert_rel(f, oracle.actuator_forces(oracle.nominal, Z, Z)[0], "rest leg forces")


def test_kic_stewart_spec_actuator_model():
    """``stewart.actuator_model()`` -> the model in "leg0.p".."leg5.p"
    whose rest forces at the nominal pose are the oracle's six equal forces."""
    plat, oracle = stewart_pair(0)
    act = plat.actuator_model()          # an AttributeError fails: no skip
    assert list(act.coordinate_names) == LEGS
    a0 = oracle.inverse_kinematics(oracle.nominal)[:, 2]
    Z = np.zeros(6)
    assert_rel(act.inverse_dynamics(a0, Z, Z), oracle.actuator_forces(oracle.nominal, Z, Z)[0],
               "rest leg forces (actuator model)")
