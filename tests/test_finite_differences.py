"""Influence coefficients and the dynamic model against finite differences.

Central differences, step 1e-6 (truncation ~1e-12, round-off ~1e-10), checked
to 1e-7 relative.  Chains are random, mixed revolute/prismatic.
"""
import numpy as np
import pytest

from helpers import assert_close, derivative, directional_derivative, random_chain, rel_err
from oracles.rnea import (oracle_link_motion, oracle_point_jacobian, oracle_point_motion,
                          oracle_potential_energy, oracle_rotation_jacobian, point_position)

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels

STEP = 1e-6
TOL = 1e-7

CASES = [(0, 2, "RR"), (1, 3, "RPR"), (2, 4, None), (3, 5, None), (4, 6, None),
         (5, 4, "PRRP"), (6, 3, "RRR"), (7, 1, "R"), (8, 2, "PP")]


def ids(c):
    return f"s{c[0]}-M{c[1]}-{c[2] or 'mix'}"


@pytest.fixture(params=CASES, ids=[ids(c) for c in CASES])
def case(request):
    seed, M, kinds = request.param
    rng = np.random.default_rng(3000 + seed)
    ch = random_chain(rng, M, kinds=kinds)
    return rng, ch, rng.uniform(-np.pi, np.pi, M)


def influences(ch, q, rng):
    """(label, getter(kin)) for every link rotation and a random point on every link."""
    out = []
    for j in range(ch.dof):
        out.append((f"rot{j}", lambda kin, j=j: kin.rotation(j), None, j))
        p = rng.uniform(-0.5, 0.5, 3)
        out.append((f"pt{j}", lambda kin, j=j, p=p: kin.point(j, p), p, j))
    return out


def test_G_against_own_forward_kinematics(case):
    rng, ch, q = case
    kin = ch.kinematics(q, order=1)
    for label, get, p, j in influences(ch, q, rng):
        G = get(kin).G
        expect = (oracle_rotation_jacobian(ch, q, j) if p is None
                  else oracle_point_jacobian(ch, q, j, p))
        assert_close(G, expect, TOL, what=f"G of {label}")


def test_H_from_G_and_D_from_H(case):
    rng, ch, q = case
    for label, get, p, j in influences(ch, q, rng):
        inf = get(ch.kinematics(q, order=3))
        H_fd = derivative(lambda x: get(ch.kinematics(x, order=1)).G, q, STEP, 1)  # [p, m, n]
        assert_close(inf.H, H_fd, TOL, what=f"H of {label}")
        D_fd = derivative(lambda x: get(ch.kinematics(x, order=2)).H, q, STEP, 1)  # [p, l, m, n]
        assert_close(inf.D, D_fd, TOL, what=f"D of {label}")
        if p is not None:   # point coefficients are symmetric in their coordinate indices
            np.testing.assert_allclose(inf.H, inf.H.transpose(0, 2, 1), atol=1e-12)
            np.testing.assert_allclose(inf.D, inf.D.transpose(0, 2, 1, 3), atol=1e-12)
            np.testing.assert_allclose(inf.D, inf.D.transpose(0, 1, 3, 2), atol=1e-12)


def test_rotational_H_is_not_symmetric():
    """The rotational H of two non-parallel revolute axes is not symmetric; the
    test above therefore pins the index order H[p, m, n] = dG[p, n]/dq_m."""
    rng = np.random.default_rng(11)
    ch = random_chain(rng, 3, kinds="RRR")
    q = rng.normal(size=3)
    H = ch.kinematics(q, order=2).rotation(2).H
    assert np.abs(H - H.transpose(0, 2, 1)).max() > 0.1
    H_fd = derivative(lambda x: ch.kinematics(x, order=1).rotation(2).G, q, STEP, axis=1)
    assert_close(H, H_fd, TOL)
    assert np.linalg.norm(H.transpose(0, 2, 1) - H_fd) > 0.1


def test_point_G_is_derivative_of_world_position(case):
    rng, ch, q = case
    for j in range(ch.dof):
        p = rng.uniform(-0.5, 0.5, 3)
        G = ch.kinematics(q, order=1).point(j, p).G
        J = derivative(lambda x: point_position(ch, x, j, p), q, STEP)
        assert_close(G, J, TOL, what=f"point G link {j}")
    # a batch of points, shape (..., 3), one per configuration
    qs = q + rng.normal(scale=0.3, size=(4, ch.dof))
    ps = rng.uniform(-0.5, 0.5, (4, 3))
    Gb = ch.kinematics(qs, order=1).point(ch.dof - 1, ps).G
    for i in range(4):
        assert_close(Gb[i], oracle_point_jacobian(ch, qs[i], ch.dof - 1, ps[i]), TOL)


# ------------------------------------------------------------ dynamics
def test_christoffel_identity(case):
    """sym(P*)[n,m,l] = (dI*_nm/dq_l + dI*_nl/dq_m - dI*_ml/dq_n) / 2."""
    rng, ch, q = case
    P = ch.dynamics(q).P_star
    dI = derivative(lambda x: ch.dynamics(x).I_star, q, STEP)   # dI[a, b, l] = dI*_ab / dq_l
    M = ch.dof
    gamma = np.zeros((M, M, M))
    for n in range(M):
        for m in range(M):
            for l in range(M):
                gamma[n, m, l] = 0.5 * (dI[n, m, l] + dI[n, l, m] - dI[m, l, n])
    sym = 0.5 * (P + P.transpose(0, 2, 1))
    assert_close(sym, gamma, TOL, what="sym(P*) vs Christoffel")


def test_power_identity(case):
    """q' . (q'^T P* q') = q'^T (dI*/dt) q' / 2."""
    rng, ch, q = case
    qd = rng.normal(size=ch.dof)
    lhs = qd @ ch.dynamics(q).velocity_term(qd)
    dIdt = directional_derivative(lambda x: ch.dynamics(x).I_star, q, qd, STEP)
    rhs = 0.5 * qd @ dIdt @ qd
    assert abs(lhs - rhs) <= TOL * max(1.0, abs(rhs))


def test_gravity_load_is_gradient_of_potential(case):
    rng, ch, q = case
    dV = derivative(ch.potential_energy, q, STEP)
    assert_close(ch.gravity_load(q), dV, TOL, what="gravity = dV/dq (kic V)")
    dVo = derivative(lambda x: oracle_potential_energy(ch, x), q, STEP)
    assert_close(ch.gravity_load(q), dVo, TOL, what="gravity = dV/dq (oracle V)")


def test_forward_inverts_inverse(case):
    rng, ch, q = case
    M = ch.dof
    qd, qdd = rng.normal(size=M), rng.normal(size=M)
    tau = ch.inverse_dynamics(q, qd, qdd)
    assert_close(ch.forward_dynamics(q, qd, tau), qdd, 1e-9)
    tau = rng.normal(scale=10, size=M)
    assert_close(ch.inverse_dynamics(q, qd, ch.forward_dynamics(q, qd, tau)), tau, 1e-9)


# ---------------------------------------------- velocity / acceleration / jerk
def trajectory(rng, M):
    """q(t) = q0 + A sin(w t + phi) with its first three time derivatives."""
    q0, A = rng.normal(size=M), rng.uniform(0.3, 1.0, M)
    w, ph = rng.uniform(0.5, 2.0, M), rng.uniform(0, 2 * np.pi, M)

    def at(t):
        s, c = np.sin(w * t + ph), np.cos(w * t + ph)
        return q0 + A * s, A * w * c, -A * w**2 * s, -A * w**3 * c
    return at


def wrong_jerk(inf, qd, qdd, qddd):
    """G q''' + H(q',q'') + 2 H(q'',q') + D: the index order a slip would give."""
    return (inf.G @ qddd + np.einsum("pmn,m,n->p", inf.H, qd, qdd)
            + 2 * np.einsum("pmn,m,n->p", inf.H, qdd, qd)
            + np.einsum("plmn,l,m,n->p", inf.D, qd, qd, qd))


@pytest.mark.parametrize("t", [0.0, 0.37, 1.3])
def test_velocity_acceleration_jerk_along_trajectory(case, t):
    rng, ch, q = case
    M = ch.dof
    traj = trajectory(rng, M)
    q, qd, qdd, qddd = traj(t)
    h = 1e-5
    kin = ch.kinematics(q, order=3)
    discriminated = False
    for j in range(M):
        p = rng.uniform(-0.5, 0.5, 3)
        # point: exact velocity/acceleration from the oracle recursion, jerk by
        # differencing the oracle acceleration in time; also x by differences
        x, v, a = oracle_point_motion(ch, q, qd, qdd, j, p)
        rates = directional_derivative(
            lambda s: np.stack(oracle_point_motion(ch, *traj(s)[:3], j, p)), t, 1.0, h)
        assert_close(v, rates[0], 1e-7, what="oracle v")
        jerk = rates[2]
        pt = kin.point(j, p)
        assert_close(pt.velocity(qd), v, 1e-10, what=f"point velocity link {j}")
        assert_close(pt.acceleration(qd, qdd), a, 1e-10, what=f"point acceleration link {j}")
        assert_close(pt.jerk(qd, qdd, qddd), jerk, TOL, what=f"point jerk link {j}")
        # rotation: angular velocity, acceleration, and d/dt of the acceleration
        w, wd = oracle_link_motion(ch, q, qd, qdd)
        wdd = directional_derivative(lambda s: oracle_link_motion(ch, *traj(s)[:3])[1][j],
                                     t, 1.0, h)
        rot = kin.rotation(j)
        assert_close(rot.velocity(qd), w[j], 1e-10, what=f"angular velocity link {j}")
        assert_close(rot.acceleration(qd, qdd), wd[j], 1e-10, what=f"angular acc link {j}")
        assert_close(rot.jerk(qd, qdd, qddd), wdd, TOL, what=f"angular jerk link {j}")
        if rel_err(wrong_jerk(rot, qd, qdd, qddd), wdd) > 100 * TOL:
            discriminated = True
    n_rev = sum(jt.kind == "R" for jt in ch.joints)
    if n_rev >= 2:   # the test can tell the two index orders apart
        assert discriminated

