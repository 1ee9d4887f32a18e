"""More closed mechanisms against independent oracles (issue 3).

``oracles/lagrange_more.py`` models, from the builders' parameters and
documented conventions (never from kic's closed-mechanism objects):

* the orthogonal Bricard 6R loop (open chain j1..j6 from the RNEA oracle, 6
  closure rows of rank 5 projected on their range, the oracle's own
  Gauss-Newton assembly by continuation in j1);
* two planar arms holding an object (absolute planar coordinates, pins);
* the redundant planar arm (joint model from the RNEA oracle and an explicit
  transfer to the augmented coordinates (x, y, phi)).

Oracle self-tests come first, then kic against the oracles at 1e-9 relative
(``RTOL``), then the energy of kic.simulate's closed-chain trajectories judged
by the oracle of ``oracles/lagrange.py``.  The largest relative error of each
comparison is kept in ``MEASURED`` (printed at the end of the module with
``pytest -s``).
"""
from __future__ import annotations


import numpy as np
import pytest

import kic
from helpers import (assert_rel_recorded, derivative, directional_derivative,
                     mechanism_builder as builder, rel_err)
from oracles import lagrange as L
from oracles import lagrange_more as LM

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels

RTOL = 1e-9
FLOOR = 1e-6
SEEDS = (0, 1, 2)

BRICARD_ALT = dict(a=0.45, m=1.7, g=9.7)
BRICARD_Q0 = -1.3547                       # the builder's reference value of j1
TWO_ARM_ALT = dict(base=0.55, a1=0.42, a2=0.33, b1=0.38, b2=0.36, width=0.25, m_a1=1.2,
                   m_a2=0.9, m_b1=1.7, m_b2=0.8, m_obj=2.6, g=9.7)
ARM_ALT = dict(l1=0.45, l2=0.5, l3=0.25, m1=1.8, m2=1.2, m3=0.7, g=9.7)
ARM_Q0 = np.array([0.6, 0.5, 0.3])
W4 = np.array([1.0, 2.0, 3.0, 4.0])
ARMS = ["a1", "a2", "b1", "b2"]

MEASURED = {}


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if MEASURED:
        print("\nlargest relative errors, kic vs oracle:")
        for k in sorted(MEASURED):
            print(f"  {k:60s} {MEASURED[k]:.2e}")


def assert_rel(actual, expected, what, rtol=RTOL, floor=FLOOR):
    return assert_rel_recorded(MEASURED, actual, expected, what, rtol, floor, ", state")


# ------------------------------------------------------------------ states
def bricard_states(seed, K=4):
    rng = np.random.default_rng(300 + seed)
    q = BRICARD_Q0 + rng.uniform(-0.3, 0.3, (K, 1))
    return q, rng.normal(scale=1.5, size=(K, 1)), rng.normal(scale=3.0, size=(K, 1))


def two_arm_states(seed, base, K=4):
    rng = np.random.default_rng(400 + seed)
    q0 = np.array([base / 2, 0.45, 0.0])
    q = q0 + np.hstack([rng.uniform(-0.06, 0.06, (K, 2)), rng.uniform(-0.3, 0.3, (K, 1))])
    qd = np.hstack([rng.normal(scale=0.3, size=(K, 2)), rng.normal(scale=1.0, size=(K, 1))])
    qdd = np.hstack([rng.normal(scale=1.0, size=(K, 2)), rng.normal(scale=3.0, size=(K, 1))])
    return q, qd, qdd


def arm_states(seed, K=4):
    rng = np.random.default_rng(500 + seed)
    q = ARM_Q0 + np.hstack([rng.uniform(-0.08, 0.08, (K, 2)), rng.uniform(-0.3, 0.3, (K, 1))])
    qd = np.hstack([rng.normal(scale=0.4, size=(K, 2)), rng.normal(scale=1.5, size=(K, 1))])
    qdd = np.hstack([rng.normal(scale=1.0, size=(K, 2)), rng.normal(scale=3.0, size=(K, 1))])
    return q, qd, qdd


def bricard_params(k):
    return {} if k == 0 else BRICARD_ALT


def two_arm_params(k):
    return {} if k == 0 else TWO_ARM_ALT


def arm_params(k):
    return ({}, "down") if k == 0 else (ARM_ALT, "up")


CASES = [0, 1]
IDS = ["default", "alt"]


# =====================================================================
#                        oracle self-tests
# =====================================================================
KKT_ORACLES = [("bricard", 0), ("bricard", 1), ("two_arm", 0), ("two_arm", 1)]
KKT_IDS = ["bricard-default", "bricard-alt", "two_arm-default", "two_arm-alt"]


def make_kkt(name, k):
    if name == "bricard":
        return LM.Bricard(**bricard_params(k))
    return LM.TwoArmObject(**two_arm_params(k))


def kkt_state(name, k, seed=0):
    if name == "bricard":
        q, qd, qdd = bricard_states(seed, K=1)
    else:
        q, qd, qdd = two_arm_states(seed, LM.TwoArmObject(**two_arm_params(k)).p["base"], K=1)
    return q[0], qd[0], qdd[0]


def _angle_index(m):
    if isinstance(m, LM.Bricard):
        return list(range(6))
    return [b["start"] + 2 for b in m.bodies if b["rigid"]]


@pytest.mark.parametrize("name,k", KKT_ORACLES, ids=KKT_IDS)
def test_oracle_closure_and_derivatives(name, k):
    """The assembly closes; A = dc/dphi and gamma = d2c/dt2 (phi'' = 0) match finite
    differences on the closure manifold; the Bricard closure has rank 5 of 6."""
    m = make_kkt(name, k)
    q, _, _ = kkt_state(name, k)
    phi = m.phi(q)
    assert np.max(np.abs(m.constraints(phi))) < 1e-13
    h = 1e-6
    Afd = derivative(m.constraints, phi, h)
    A = m.jacobian(phi)
    assert np.max(np.abs(A - Afd)) < 1e-8 * max(1.0, np.max(np.abs(A)))
    phid = np.random.default_rng(5).normal(size=m.N)
    h = 1e-4
    gfd = (m.constraints(phi + h * phid) - 2 * m.constraints(phi)
           + m.constraints(phi - h * phid)) / h ** 2
    assert np.max(np.abs(m.gamma(phi, phid) - gfd)) < 1e-6 * max(1.0, np.max(np.abs(gfd)))
    s = np.linalg.svd(A, compute_uv=False)
    if name == "bricard":
        assert A.shape == (6, 6)
        assert s[-1] < 1e-14 * s[0] and s[-2] > 0.1 * s[0]          # rank 5 exactly
    else:
        assert A.shape == (12, 15) and s[-1] > 1e-3 * s[0]          # 12 independent rows


@pytest.mark.parametrize("name,k", KKT_ORACLES, ids=KKT_IDS)
def test_oracle_rates_match_finite_differences_of_assembly(name, k):
    m = make_kkt(name, k)
    q, qd, qdd = kkt_state(name, k, seed=1)
    phi, phid, phidd = m.state(q, qd, qdd)
    assert np.max(np.abs(m.jacobian(phi) @ phid)) < 1e-12
    assert np.max(np.abs(m.jacobian(phi) @ phidd + m.gamma(phi, phid))) < 1e-11
    h = 1e-6
    d1 = m.phi(q + h * qd) - m.phi(q - h * qd)
    qt = lambda t: q + t * qd + 0.5 * t * t * qdd   # noqa: E731
    h2 = 1e-4
    d2 = m.phi(qt(h2)) - 2 * m.phi(qt(0.0)) + m.phi(qt(-h2))
    for i in _angle_index(m):
        d1[i], d2[i] = L.wrap(d1[i]), L.wrap(d2[i])
    assert rel_err(phid, d1 / (2 * h), 1.0) < 1e-8
    assert rel_err(phidd, d2 / h2 ** 2, 1.0) < 1e-5


@pytest.mark.parametrize("name,k", KKT_ORACLES, ids=KKT_IDS)
def test_oracle_static_loads_and_power_balance(name, k):
    """tau = dV/dq at rest; tau . q' = d(KE + V)/dt along a motion."""
    m = make_kkt(name, k)
    q, qd, qdd = kkt_state(name, k, seed=2)
    Z = np.zeros(m.dof)
    h = 1e-6
    dV = derivative(m.potential_energy, q, h)
    assert rel_err(m.inverse_dynamics(q, Z, Z), dV, 1.0) < 1e-7
    tau = m.inverse_dynamics(q, qd, qdd)
    E = lambda t: (m.kinetic_energy(q + t * qd + 0.5 * t * t * qdd, qd + t * qdd)   # noqa
                   + m.potential_energy(q + t * qd + 0.5 * t * t * qdd))
    h = 1e-5
    dE = directional_derivative(E, 0.0, 1.0, h)
    assert abs(tau @ qd - dE) < 1e-7 * max(1.0, abs(dE))
    assert abs(m.kinetic(*m.state(q, qd)) - 0.5 * m.state(q, qd)[1] @ m.mass(m.phi(q))
               @ m.state(q, qd)[1]) < 1e-12


@pytest.mark.parametrize("name,k", KKT_ORACLES, ids=KKT_IDS)
def test_oracle_forward_inverts_inverse(name, k):
    m = make_kkt(name, k)
    q, qd, qdd = kkt_state(name, k, seed=3)
    tau = m.inverse_dynamics(q, qd, qdd)
    assert rel_err(m.forward_dynamics(q, qd, tau), qdd, 1.0) < 1e-11
    assert m.kkt_residual(q, qd, qdd, tau) < 1e-10 * max(1.0, np.max(np.abs(tau)))


class _BricardDroppedRow(LM.Bricard):
    """The same loop with an explicit row choice: the 5 of 6 closure rows whose
    submatrix is best conditioned (instead of the range projection)."""

    def reduced(self, phi, phid=None):
        A = self.jacobian(phi)
        best = max(range(6), key=lambda r: np.linalg.svd(np.delete(A, r, 0),
                                                         compute_uv=False)[-1])
        keep = [i for i in range(6) if i != best]
        if phid is None:
            return A[keep]
        return A[keep], self.gamma(phi, phid)[keep]


@pytest.mark.parametrize("k", CASES, ids=IDS)
def test_oracle_bricard_row_choice_does_not_matter(k):
    """Projection on the range of A == dropping the most dependent row; the
    torques also hold for other single actuators (j2..j6) by virtual work."""
    a, b = LM.Bricard(**bricard_params(k)), _BricardDroppedRow(**bricard_params(k))
    q, qd, qdd = bricard_states(9, K=3)
    for i in range(3):
        assert rel_err(a.state(q[i], qd[i], qdd[i])[2], b.state(q[i], qd[i], qdd[i])[2],
                       1.0) < 1e-12
        assert rel_err(a.forward_dynamics(q[i], qd[i], [0.7]),
                       b.forward_dynamics(q[i], qd[i], [0.7]), 1.0) < 1e-12
        t1 = a.inverse_dynamics(q[i], qd[i], qdd[i])
        _, phid = a.state(q[i], [1.0])                     # joint rates per unit j1 rate
        for j in range(1, 6):
            tj = a.inverse_dynamics(q[i], qd[i], qdd[i], actuators=(f"j{j + 1}",))
            assert rel_err(tj * phid[j], t1, 1e-6) < 1e-11


@pytest.mark.parametrize("k", CASES, ids=IDS)
def test_oracle_bricard_assembly(k):
    """Gauss-Newton + continuation stays on one branch: j1 = j3 = j5, j2 = j4 = j6
    near the reference (a property of this branch of the orthogonal Bricard
    loop, not imposed by the oracle), smooth in j1, independent of a."""
    m = LM.Bricard(**bricard_params(k))
    js = np.linspace(BRICARD_Q0 - 0.35, BRICARD_Q0 + 0.35, 15)
    P = np.array([m.phi(j) for j in js])
    assert np.max(np.abs(P[:, [0, 2, 4]] - P[:, [0]])) < 1e-12
    assert np.max(np.abs(P[:, [1, 3, 5]] - P[:, [1]])) < 1e-12
    assert np.max(np.abs(np.diff(P[:, 1]))) < 0.1
    ref = LM.Bricard()
    assert rel_err(P[7], ref.phi(js[7]), 1.0) < 1e-13


@pytest.mark.parametrize("k", CASES, ids=IDS)
def test_oracle_two_arm_branch_and_internal_load(k):
    m = LM.TwoArmObject(**two_arm_params(k))
    q, qd, qdd = two_arm_states(4, m.p["base"], K=2)
    for i in range(2):
        P = m.points(q[i])
        for O, E, G, sgn in (("OA", "EA", "GA", 1.0), ("OB", "EB", "GB", -1.0)):
            u, v = P[E] - P[O], P[G] - P[E]
            assert sgn * (u[0] * v[1] - u[1] * v[0]) > 0           # elbow sign of the branch
        ja = m.joint_angles(q[i])
        assert ja[1] > 0 and ja[3] < 0
        n = m.internal_directions(q[i])
        assert n.shape == (4, 1)
        t = m.inverse_dynamics(q[i], qd[i], qdd[i], actuators=m.arm_actuators)
        assert rel_err(m.forward_dynamics(q[i], qd[i], t + 20.0 * n[:, 0],
                                          actuators=m.arm_actuators), qdd[i], 1.0) < 1e-11
        tw = m.inverse_dynamics(q[i], qd[i], qdd[i], actuators=m.arm_actuators, weights=W4)
        assert abs(t @ n[:, 0]) < 1e-12 * np.linalg.norm(t)
        assert abs((W4 * tw) @ n[:, 0]) < 1e-12 * np.linalg.norm(W4 * tw)
        G = m.actuator_rates(q[i])
        assert rel_err(G.T @ t, m.inverse_dynamics(q[i], qd[i], qdd[i]), 1.0) < 1e-12


@pytest.mark.parametrize("k", CASES, ids=IDS)
def test_oracle_redundant_arm(k):
    """Analytic J, J' theta', Hessian against finite differences; ik o fk; the
    transferred load equals I*_X X'' + bias, power balance in X."""
    params, elbow = arm_params(k)
    m = LM.RedundantArm(elbow=elbow, **params)
    X, Xd, Xdd = arm_states(6, K=1)
    X, Xd, Xdd = X[0], Xd[0], Xdd[0]
    th = m.ik(X)
    assert rel_err(m.fk(th), X, 1.0) < 1e-14
    assert (th[1] < 0) == (elbow == "down")
    h = 1e-6
    Jfd = derivative(m.fk, th, h)
    assert rel_err(m.jacobian(th), Jfd, 1.0) < 1e-9
    Hfd = derivative(m.jacobian, th, h, axis=1)                  # [p, m, n] = dJ[p, n]/dth_m
    assert rel_err(m.hessian(th), Hfd, 1.0) < 1e-9
    thd = np.random.default_rng(1).normal(size=3)
    assert rel_err(m.jdot_thd(th, thd), np.einsum("pmn,m,n->p", m.hessian(th), thd, thd),
                   1.0) < 1e-14
    T = m.inverse_dynamics(X, Xd, Xdd)
    assert rel_err(T - m.inverse_dynamics(X, Xd, 0 * Xdd), m.mass(X) @ Xdd, 1.0) < 1e-12
    assert rel_err(m.forward_dynamics(X, Xd, T), Xdd, 1.0) < 1e-11

    def energy(t):
        Xt, Xdt = X + t * Xd + 0.5 * t * t * Xdd, Xd + t * Xdd
        th_, thd_, _ = m.joint_motion(Xt, Xdt, 0 * Xdt)
        return sum(m.energy(th_, thd_))
    h = 1e-5
    dE = directional_derivative(energy, 0.0, 1.0, h)
    assert abs(T @ Xd - dE) < 1e-7 * max(1.0, abs(dE))


# =====================================================================
#                        kic against the oracles
# =====================================================================
# ----------------------------------------------------------------- Bricard
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", CASES, ids=IDS)
def test_kic_bricard_inverse_dynamics(k, seed):
    """Torque at j1 for random (q, q', q'') near the reference (batched and one by
    one); the assembled joint values agree with the oracle's own assembly."""
    model = builder("bricard")(**bricard_params(k))
    oracle = LM.Bricard(**bricard_params(k))
    assert list(model.coordinate_names) == ["j1"] and model.dof == 1
    q, qd, qdd = bricard_states(seed)
    tau = model.inverse_dynamics(q, qd, qdd)
    phi = model.assemble(q)
    names = list(model.phi_names)
    idx = [names.index(f"j{j}") for j in range(1, 7)]
    for i in range(len(q)):
        ph = oracle.phi(q[i])
        assert np.max(np.abs(L.wrap(phi[i, idx] - ph))) < 1e-10, f"branch, state {i}"
        expected = oracle.inverse_dynamics(q[i], qd[i], qdd[i])
        assert_rel(tau[i], expected, f"Bricard j1 torque, state {i}")
        assert_rel(model.inverse_dynamics(q[i], qd[i], qdd[i]), expected,
                   f"Bricard j1 torque single, state {i}")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", CASES, ids=IDS)
def test_kic_bricard_forward_dynamics(k, seed):
    model = builder("bricard")(**bricard_params(k))
    oracle = LM.Bricard(**bricard_params(k))
    q, qd, _ = bricard_states(seed)
    rng = np.random.default_rng(seed + 60)
    tau = np.array([oracle.inverse_dynamics(qi, [0.0], [0.0]) for qi in q]) \
        + rng.normal(scale=1.0, size=q.shape)
    qdd = model.forward_dynamics(q, qd, tau)
    for i in range(len(q)):
        assert_rel(qdd[i], oracle.forward_dynamics(q[i], qd[i], tau[i]),
                   f"Bricard accelerations, state {i}")


@pytest.mark.parametrize("k", CASES, ids=IDS)
def test_kic_bricard_other_actuators_rates_and_energies(k):
    """A torque at another joint (``actuator_loads``, including j4, the cut),
    joint rates and accelerations of all six joints, kinetic energy and
    potential-energy differences."""
    model = builder("bricard")(**bricard_params(k))
    oracle = LM.Bricard(**bricard_params(k))
    q, qd, qdd = bricard_states(7)
    names = list(model.phi_names)
    idx = [names.index(f"j{j}") for j in range(1, 7)]
    phid_k, phidd_k = model.joint_rates(q, qd, qdd)
    dyn = model.dynamics(q)
    KE = dyn.kinetic_energy(qd)
    V = np.asarray(dyn.potential_energy)
    Vo = np.array([oracle.potential_energy(qi) for qi in q])
    for act in ("j2", "j4", "j6"):
        t = model.actuator_loads(q, qd, qdd, [act])
        for i in range(len(q)):
            assert_rel(t[i], oracle.inverse_dynamics(q[i], qd[i], qdd[i], actuators=(act,)),
                       f"Bricard torque at {act}, state {i}".replace("j", "joint "))
    for i in range(len(q)):
        _, phid, phidd = oracle.state(q[i], qd[i], qdd[i])
        assert_rel(phid_k[i, idx], phid, f"Bricard joint rates, state {i}", floor=1e-3)
        assert_rel(phidd_k[i, idx], phidd, f"Bricard joint accelerations, state {i}",
                   floor=1e-3)
        assert_rel(KE[i], oracle.kinetic_energy(q[i], qd[i]), f"Bricard kinetic energy {i}")
        assert_rel(V[i] - V[0], Vo[i] - Vo[0], f"Bricard potential differences {i}",
                   floor=1e-3)


# ------------------------------------------------------ two arms, one object
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", CASES, ids=IDS)
def test_kic_two_arm_object_loads(k, seed):
    """Generalized load on (x, y, yaw); minimum-norm and weighted (W = 1, 2, 3, 4)
    actuator loads; G^a_q; the assembled joint angles."""
    model = builder("two_arm_object")(**two_arm_params(k))
    oracle = LM.TwoArmObject(**two_arm_params(k))
    assert list(model.coordinate_names) == ["object.x", "object.y", "object.yaw"]
    assert list(model.actuators) == ARMS
    q, qd, qdd = two_arm_states(seed, oracle.p["base"])
    T = model.inverse_dynamics(q, qd, qdd)
    t_min = model.actuator_loads(q, qd, qdd, model.actuators)
    t_w = model.actuator_loads(q, qd, qdd, model.actuators, weights=W4)
    G = model.actuator_jacobian(q, model.actuators)
    phi = model.assemble(q)
    names = list(model.phi_names)
    idx = [names.index(n) for n in ARMS + ["gripA", "gripB"]]
    for i in range(len(q)):
        assert np.max(np.abs(L.wrap(phi[i, idx] - oracle.joint_angles(q[i])))) < 1e-10
        assert_rel(T[i], oracle.inverse_dynamics(q[i], qd[i], qdd[i]),
                   f"two-arm generalized load, state {i}")
        assert_rel(t_min[i], oracle.inverse_dynamics(q[i], qd[i], qdd[i],
                                                     actuators=oracle.arm_actuators),
                   f"two-arm minimum-norm actuator loads, state {i}")
        assert_rel(t_w[i], oracle.inverse_dynamics(q[i], qd[i], qdd[i],
                                                   actuators=oracle.arm_actuators, weights=W4),
                   f"two-arm weighted actuator loads, state {i}")
        assert_rel(G[i], oracle.actuator_rates(q[i]), f"two-arm G^a_q, state {i}", floor=1e-3)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", CASES, ids=IDS)
def test_kic_two_arm_internal_loads(k, seed):
    """kic.internal_loads(G^a_q): one direction, which the oracle's actuators turn
    into no generalized load and no change of motion."""
    model = builder("two_arm_object")(**two_arm_params(k))
    oracle = LM.TwoArmObject(**two_arm_params(k))
    q, qd, qdd = two_arm_states(seed, oracle.p["base"])
    t_min = model.actuator_loads(q, qd, qdd, model.actuators)
    G = model.actuator_jacobian(q, model.actuators)
    for i in range(len(q)):
        n = kic.internal_loads(G[i])
        assert n.shape == (4, 1)
        assert abs(np.linalg.norm(n) - 1.0) < 1e-12
        phi = oracle.phi(q[i])
        B = L.null_basis(oracle.jacobian(phi)).T @ oracle.S(oracle.arm_actuators).T
        assert np.linalg.norm(B @ n[:, 0]) < 1e-12 * np.linalg.norm(B)
        for c in (1.0, -25.0):
            assert_rel(oracle.forward_dynamics(q[i], qd[i], t_min[i] + c * n[:, 0],
                                               actuators=oracle.arm_actuators), qdd[i],
                       f"two-arm internal load leaves the motion unchanged, state {i}",
                       floor=1.0)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", CASES, ids=IDS)
def test_kic_two_arm_forward_dynamics(k, seed):
    """Object accelerations under given actuator loads: kic with T_q = G^T tau_a
    (kic's G^a_q, and the oracle's) == KKT with the four joint torques."""
    model = builder("two_arm_object")(**two_arm_params(k))
    oracle = LM.TwoArmObject(**two_arm_params(k))
    q, qd, _ = two_arm_states(seed, oracle.p["base"])
    rng = np.random.default_rng(seed + 70)
    Z = np.zeros(3)
    tau_a = np.array([oracle.inverse_dynamics(qi, Z, Z, actuators=oracle.arm_actuators)
                      for qi in q]) + rng.normal(scale=1.0, size=(len(q), 4))
    G = model.actuator_jacobian(q, model.actuators)
    qdd = model.forward_dynamics(q, qd, np.einsum("nak,na->nk", G, tau_a))
    for i in range(len(q)):
        expected = oracle.forward_dynamics(q[i], qd[i], tau_a[i], actuators=oracle.arm_actuators)
        assert_rel(qdd[i], expected, f"two-arm object accelerations, state {i}")
        Go = oracle.actuator_rates(q[i])
        assert_rel(model.forward_dynamics(q[i], qd[i], Go.T @ tau_a[i]), expected,
                   f"two-arm object accelerations (oracle G), state {i}")


# ---------------------------------------------------------- redundant arm
def arm_pair(k):
    params, elbow = arm_params(k)
    return (builder("redundant_planar_arm")(elbow=elbow, **params),
            LM.RedundantArm(elbow=elbow, **params))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", CASES, ids=["default-down", "alt-up"])
def test_kic_redundant_arm_augmented_model(k, seed):
    """Inverse dynamics in (x, y, phi), I* in (x, y, phi), forward dynamics, the
    assembled joint angles."""
    model, oracle = arm_pair(k)
    assert list(model.coordinate_names) == ["tip.x", "tip.y", "tip.yaw"]
    X, Xd, Xdd = arm_states(seed)
    T = model.inverse_dynamics(X, Xd, Xdd)
    I = model.dynamics(X).I_star
    phi = model.assemble(X)
    names = list(model.phi_names)
    idx = [names.index(n) for n in ("j1", "j2", "j3")]
    rng = np.random.default_rng(seed + 80)
    Tg = np.array([oracle.inverse_dynamics(x, 0 * x, 0 * x) for x in X]) \
        + rng.normal(scale=1.0, size=X.shape)
    Xdd_k = model.forward_dynamics(X, Xd, Tg)
    for i in range(len(X)):
        assert np.max(np.abs(L.wrap(phi[i, idx] - oracle.ik(X[i])))) < 1e-10
        assert_rel(T[i], oracle.inverse_dynamics(X[i], Xd[i], Xdd[i]),
                   f"redundant arm loads in (x, y, phi), state {i}")
        assert_rel(I[i], oracle.mass(X[i]), f"redundant arm I* in (x, y, phi), state {i}")
        assert_rel(Xdd_k[i], oracle.forward_dynamics(X[i], Xd[i], Tg[i]),
                   f"redundant arm accelerations in (x, y, phi), state {i}")


@pytest.mark.parametrize("k", CASES, ids=["default-down", "alt-up"])
def test_kic_redundant_arm_task_inertia_is_schur_complement(k):
    """(G M^-1 G^T)^-1 of the oracle's joint model (tip position) == the Schur
    complement of kic's I* in (x, y, phi) with respect to phi; kic.task_inertia
    on the oracle's M and G gives the same."""
    model, oracle = arm_pair(k)
    X, _, _ = arm_states(11)
    I = model.dynamics(X).I_star
    for i in range(len(X)):
        th = oracle.ik(X[i])
        schur = I[i][:2, :2] - np.outer(I[i][:2, 2], I[i][2, :2]) / I[i][2, 2]
        lam = oracle.task_inertia(th)
        assert_rel(schur, lam, f"Schur complement of I* vs task inertia, state {i}")
        assert_rel(kic.task_inertia(oracle.joint_mass(th), oracle.jacobian(th)[:2]), lam,
                   f"kic.task_inertia, state {i}")


@pytest.mark.parametrize("k", CASES, ids=["default-down", "alt-up"])
def test_kic_redundant_arm_joint_model(k):
    """The arm in joint coordinates (``in_coordinates(["j1", "j2", "j3"])``): I*,
    inverse dynamics, the tip's G and H (order 2) against the oracle."""
    model, oracle = arm_pair(k)
    joints = model.in_coordinates(["j1", "j2", "j3"])
    X, Xd, Xdd = arm_states(12, K=3)
    for i in range(len(X)):
        th, thd, thdd = oracle.joint_motion(X[i], Xd[i], Xdd[i])
        assert_rel(joints.dynamics(th).I_star, oracle.joint_mass(th),
                   f"joint model I*, state {i}")
        assert_rel(joints.inverse_dynamics(th, thd, thdd), oracle.joint_torques(th, thd, thdd),
                   f"joint model torques, state {i}")
        tip = joints.kinematics(th, order=2).point("link3")
        assert_rel(tip.G[:2], oracle.jacobian(th)[:2], f"joint model tip G, state {i}",
                   floor=1e-3)
        assert tip.H is not None, ("kinematics(order=2) of a closed model without loops "
                                   "returns point influences without H")
        assert_rel(tip.H[:2], oracle.hessian(th)[:2], f"joint model tip H, state {i}",
                   floor=1e-3)


def _tip_fd(oracle, th, thd, thdd, h1=1e-5, h2=1e-4):
    """Tip velocity and acceleration along theta(t) = th + t thd + t^2 thdd / 2 by
    central differences (Richardson-extrapolated second derivative)."""
    f = lambda t: oracle.tip(th + t * thd + 0.5 * t * t * thdd)     # noqa: E731
    v = (8 * (f(h1) - f(-h1)) - (f(2 * h1) - f(-2 * h1))) / (12 * h1)
    d2 = lambda h: (f(h) - 2 * f(0.0) + f(-h)) / h ** 2              # noqa: E731
    a = (4 * d2(h2) - d2(2 * h2)) / 3
    return v, a


@pytest.mark.parametrize("weights", [None, [1.0, 2.0, 5.0]], ids=["plain", "weighted"])
@pytest.mark.parametrize("k", CASES, ids=["default-down", "alt-up"])
def test_kic_redundant_rates_reproduce_task_motion(k, weights):
    """kic.redundant_rates with the tip's G, H (2 x 3, analytic, the oracle's): for
    random task accelerations and null-space motions the joint motion reproduces
    the task velocity and acceleration (finite differences in time of the
    oracle's forward kinematics); the null-space part is (1 - G+ G) nu."""
    _, oracle = arm_pair(k)
    rng = np.random.default_rng(13 + k)
    X, _, _ = arm_states(13)
    for i in range(len(X)):
        th = oracle.ik(X[i])
        G, H = oracle.jacobian(th)[:2], oracle.hessian(th)[:2]
        for _ in range(3):
            xd, xdd = rng.normal(size=2), rng.normal(scale=3.0, size=2)
            nu, nud = rng.normal(size=3), rng.normal(scale=3.0, size=3)
            thd, thdd = kic.redundant_rates(G, H, xd, xdd, nu=nu, nud=nud, weights=weights)
            v, a = _tip_fd(oracle, th, thd, thdd)
            assert rel_err(v, xd, 1.0) < 1e-8, "task velocity"
            assert rel_err(a, xdd, 1.0) < 1e-6, "task acceleration"
            thd0, thdd0 = kic.redundant_rates(G, H, xd, xdd, weights=weights)
            assert rel_err(G @ (thd - thd0), np.zeros(2), 1.0) < 1e-14
            Wi = np.diag(1.0 / np.asarray(weights if weights is not None else np.ones(3)))
            Gp = Wi @ G.T @ np.linalg.inv(G @ Wi @ G.T)
            assert rel_err(thd - thd0, (np.eye(3) - Gp @ G) @ nu, 1.0) < 1e-13
            assert rel_err(thd0, Gp @ xd, 1.0) < 1e-13
        # without null-space motion the task motion is reproduced as well
        thd, thdd = kic.redundant_rates(G, H, xd, xdd, weights=weights)
        v, a = _tip_fd(oracle, th, thd, thdd)
        assert rel_err(v, xd, 1.0) < 1e-8 and rel_err(a, xdd, 1.0) < 1e-6


# ----------------------------------------------------- energy of simulate
@pytest.mark.slow        # ~5 s per case: simulations judged by the oracle
@pytest.mark.parametrize("name,k", [("four_bar", 0), ("four_bar", 1)],
                         ids=["four_bar-default", "four_bar-alt"])
def test_kic_simulate_closed_energy_by_oracle(name, k):
    """Free motion from rest under gravity for 1 s by kic.simulate (default
    tolerances) on a closed model: the oracle's energy KE + V along kic's
    trajectory is constant to 1e-7 of the largest kinetic energy."""
    params = [{}, dict(ground=0.32, crank=0.12, coupler=0.33, rocker=0.27, m_crank=0.6,
                       m_coupler=1.2, m_rocker=0.5, g=9.81)][k]
    model = builder(name)(**params)
    oracle = L.FourBar(**params)
    q0 = np.array([1.0])
    sim = kic.simulate(model, (0.0, 1.0), q0, [0.0])
    assert sim.conservative and sim.t[-1] == 1.0 and len(sim.t) > 50
    E = np.array([oracle.kinetic_energy(q, qd) + oracle.potential_energy(q)
                  for q, qd in zip(sim.q, sim.qd)])
    KE = np.array([oracle.kinetic_energy(q, qd) for q, qd in zip(sim.q, sim.qd)])
    assert np.ptp(sim.q[:, 0]) > 1.0                        # it really moved
    drift = float(np.max(np.abs(E - E[0])) / np.max(KE))
    MEASURED[f"{name} simulate: oracle energy drift / max KE"] = max(
        MEASURED.get(f"{name} simulate: oracle energy drift / max KE", 0.0), drift)
    assert drift < 1e-7
    # kic's own energy along the trajectory differs from the oracle's by a constant
    assert rel_err(sim.energy - sim.energy[0], E - E[0], np.max(KE)) < 1e-9
