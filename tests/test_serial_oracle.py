"""kic's serial-chain core against the independent oracle (tests/oracles/rnea.py).

The oracle is a link-frame Newton-Euler recursion with rotation matrices that
reads only the chain description; it is itself validated against published
closed forms in test_oracle_selfcheck.py.
"""
import numpy as np
import pytest

import kic
from helpers import (assert_close, derivative, directional_derivative, dh_modified, dh_standard,
                     random_chain, random_link, random_loads, random_rigid, rel_err)
from oracles.rnea import (OracleLoads, oracle_bias, oracle_forward_dynamics, oracle_frames,
                          oracle_gravity, oracle_kinetic_energy, oracle_load,
                          oracle_mass_matrix, oracle_potential_energy, oracle_tool_frame,
                          rnea)

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels

RTOL = 1e-10          # norm-wise relative to the torque scale (floor 1 N m)

# (seed, M, kinds): M = 1..8, mixed R/P; a few all-R / all-P chains
CASES = [(s, M, None) for M in range(1, 9) for s in (0, 1)]
CASES += [(7, 3, "RRR"), (8, 6, "RRRRRR"), (9, 3, "PPP"), (10, 4, "PRRP"), (11, 3, "RPR"),
          (12, 2, "PR")]


def make(seed, M, kinds=None, **kw):
    rng = np.random.default_rng(100 * seed + M)
    return rng, random_chain(rng, M, kinds=kinds, **kw)


def ids(case):
    s, M, k = case
    return f"s{s}-M{M}" + (f"-{k}" if k else "")


@pytest.fixture(params=CASES, ids=[ids(c) for c in CASES])
def case(request):
    rng, ch = make(*request.param)
    M = ch.dof
    q = rng.uniform(-np.pi, np.pi, M)
    return rng, ch, q, rng.normal(size=M), rng.normal(size=M)


# ---------------------------------------------------------------- frames
def test_frames(case):
    rng, ch, q, qd, qdd = case
    np.testing.assert_allclose(ch.frames(q), oracle_frames(ch, q), rtol=0, atol=1e-12)
    kin = ch.kinematics(q, order=1)
    np.testing.assert_allclose(kin.frames, oracle_frames(ch, q), rtol=0, atol=1e-12)


def test_tool_frame(case):
    rng, ch, q, qd, qdd = case
    np.testing.assert_allclose(ch.tool_frame(q), oracle_tool_frame(ch, q), rtol=0, atol=1e-12)
    # the tool-origin influence is that of the tool origin's world position
    tool = ch.kinematics(q, order=1).tool()
    T = ch.tool_frame(q)
    h = 1e-6
    J = derivative(lambda x: oracle_tool_frame(ch, x)[:3, 3], q, h)
    assert_close(tool.G, J, 1e-8, what="tool G")
    assert T.shape == (4, 4)


def test_joint_axes_and_points(case):
    rng, ch, q, qd, qdd = case
    kin = ch.kinematics(q, order=1)
    # world axis of joint j: rotation of frame K_j (= F_j offset^-1) times the local axis
    F = oracle_frames(ch, q)
    for j, joint in enumerate(ch.joints):
        K = F[j] @ np.linalg.inv(ch.frame_offsets[j])
        s = K[:3, :3] @ joint.axis
        np.testing.assert_allclose(kin.axes[j], s, atol=1e-12)
        if joint.kind == "R":   # the joint point lies on the axis through K_j's origin
            d = kin.joint_points[j] - K[:3, 3]
            np.testing.assert_allclose(np.cross(s, d), 0, atol=1e-12)


# -------------------------------------------------------------- dynamics
def test_inverse_dynamics(case):
    rng, ch, q, qd, qdd = case
    assert_close(ch.inverse_dynamics(q, qd, qdd), rnea(ch, q, qd, qdd), RTOL, what="tau")
    dyn = ch.dynamics(q)
    assert_close(dyn.torque(qd, qdd), rnea(ch, q, qd, qdd), RTOL, what="dyn.torque")


def test_mass_matrix(case):
    rng, ch, q, qd, qdd = case
    I = ch.dynamics(q).I_star
    Io = oracle_mass_matrix(ch, q)
    assert_close(I, Io, RTOL, what="I*")
    np.testing.assert_allclose(I, I.T, atol=1e-13 * np.abs(I).max())


def test_gravity_and_velocity_terms(case):
    rng, ch, q, qd, qdd = case
    dyn = ch.dynamics(q)
    g = oracle_gravity(ch, q)
    assert_close(dyn.gravity_load, g, RTOL, what="dyn.gravity_load")
    assert_close(ch.gravity_load(q), g, RTOL, what="chain.gravity_load")
    assert_close(dyn.velocity_term(qd), oracle_bias(ch, q, qd), RTOL, what="q'^T P* q'")
    # P* itself, contracted with a velocity, gives the same term
    vt = np.einsum("nml,m,l->n", dyn.P_star, qd, qd)
    assert_close(vt, oracle_bias(ch, q, qd), RTOL, what="P* contraction")


def test_energies(case):
    rng, ch, q, qd, qdd = case
    ke, pe = oracle_kinetic_energy(ch, q, qd), oracle_potential_energy(ch, q)
    assert abs(ch.kinetic_energy(q, qd) - ke) <= RTOL * max(1.0, ke)
    assert abs(ch.dynamics(q).kinetic_energy(qd) - ke) <= RTOL * max(1.0, ke)
    assert abs(ch.potential_energy(q) - pe) <= RTOL * max(1.0, abs(pe))
    assert abs(ch.dynamics(q).potential_energy - pe) <= RTOL * max(1.0, abs(pe))


def test_forward_dynamics(case):
    rng, ch, q, qd, qdd = case
    tau = rng.normal(scale=10, size=ch.dof)
    expect = oracle_forward_dynamics(ch, q, qd, tau)
    assert_close(ch.forward_dynamics(q, qd, tau), expect, 1e-9, what="qdd")
    assert_close(ch.dynamics(q).acceleration(qd, tau), expect, 1e-9, what="dyn.acceleration")


def test_loads(case):
    rng, ch, q, qd, qdd = case
    L = random_loads(rng, ch, OracleLoads)
    KL = L.replay(kic.Loads())
    assert_close(ch.dynamics(q).load(KL, qd), oracle_load(ch, q, L, qd), RTOL, what="T_L")
    assert_close(ch.inverse_dynamics(q, qd, qdd, loads=KL), rnea(ch, q, qd, qdd, loads=L),
                 RTOL, what="tau with loads")
    assert_close(ch.dynamics(q).torque(qd, qdd, loads=KL), rnea(ch, q, qd, qdd, loads=L),
                 RTOL, what="dyn.torque with loads")
    tau = rng.normal(scale=10, size=ch.dof)
    assert_close(ch.forward_dynamics(q, qd, tau, loads=KL),
                 oracle_forward_dynamics(ch, q, qd, tau, loads=L), 1e-9, what="qdd with loads")


@pytest.mark.parametrize("kind", ["force", "moment", "spring", "damper"])
def test_each_load_kind_by_name(kind):
    """One load of each kind, addressed by link/joint name, against the oracle."""
    rng, ch = make(3, 5, kinds="RPRRP")
    M = ch.dof
    q, qd, qdd = rng.normal(size=M), rng.normal(size=M), rng.normal(size=M)
    L = OracleLoads()
    if kind == "force":
        L.force(ch.link_names[3], (1.0, -2.0, 3.0), point=(0.1, 0.2, -0.3))
    elif kind == "moment":
        L.moment(ch.link_names[2], (0.5, 1.5, -1.0))
    elif kind == "spring":
        L.spring(ch.joint_names[1], 12.0, rest=0.25)     # prismatic: N/m
    else:
        L.damper(ch.joint_names[4], 2.5)
    KL = L.replay(kic.Loads())
    TL = oracle_load(ch, q, L, qd)
    assert np.linalg.norm(TL) > 0.1
    assert_close(ch.dynamics(q).load(KL, qd), TL, RTOL, what=kind)
    assert_close(ch.inverse_dynamics(q, qd, qdd, loads=KL), rnea(ch, q, qd, qdd, loads=L),
                 RTOL, what=kind)


def test_batched_force_load():
    """A force given per configuration, shape (..., 3)."""
    rng, ch = make(4, 4, kinds="RRPR")
    q = rng.normal(size=(5, 3, 4))
    qd = rng.normal(size=(5, 3, 4))
    f = rng.normal(size=(5, 3, 3))
    KL = kic.Loads().force(2, f, point=(0.2, 0.0, 0.1)).damper(0, 0.7)
    TL = ch.dynamics(q).load(KL, qd)
    assert TL.shape == (5, 3, 4)
    for i in np.ndindex(5, 3):
        L = OracleLoads().force(2, f[i], point=(0.2, 0.0, 0.1)).damper(0, 0.7)
        assert_close(TL[i], oracle_load(ch, q[i], L, qd[i]), RTOL, what=f"T_L{i}")


# ------------------------------------------------------------- batching
@pytest.mark.parametrize("seed,M", [(0, 1), (1, 3), (2, 6)])
def test_batched_equals_single(seed, M):
    rng, ch = make(seed, M)
    q = rng.uniform(-3, 3, (5, 3, M))
    qd = rng.normal(size=(5, 3, M))
    qdd = rng.normal(size=(5, 3, M))
    tau = ch.inverse_dynamics(q, qd, qdd)
    assert tau.shape == (5, 3, M)
    F = ch.frames(q)
    assert F.shape == (5, 3, M, 4, 4)
    dyn = ch.dynamics(q)
    assert dyn.I_star.shape == (5, 3, M, M)
    assert dyn.P_star.shape == (5, 3, M, M, M)
    assert dyn.gravity_load.shape == (5, 3, M)
    assert dyn.potential_energy.shape == (5, 3)
    assert dyn.kinetic_energy(qd).shape == (5, 3)
    assert ch.tool_frame(q).shape == (5, 3, 4, 4)
    kin = ch.kinematics(q, order=3)
    rot, pt = kin.rotation(M - 1), kin.point(M - 1, (0.1, 0.2, 0.3))
    assert rot.D.shape == (5, 3, 3, M, M, M) and pt.H.shape == (5, 3, 3, M, M)
    fwd = ch.forward_dynamics(q, qd, tau)
    for i in np.ndindex(5, 3):
        np.testing.assert_allclose(tau[i], ch.inverse_dynamics(q[i], qd[i], qdd[i]),
                                   rtol=1e-12, atol=1e-12)
        assert_close(tau[i], rnea(ch, q[i], qd[i], qdd[i]), RTOL)
        np.testing.assert_allclose(F[i], ch.frames(q[i]), atol=1e-14)
        np.testing.assert_allclose(ch.tool_frame(q)[i], ch.tool_frame(q[i]), atol=1e-14)
        d1 = ch.dynamics(q[i])
        np.testing.assert_allclose(dyn.I_star[i], d1.I_star, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(dyn.P_star[i], d1.P_star, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(dyn.gravity_load[i], d1.gravity_load, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(dyn.kinetic_energy(qd)[i], d1.kinetic_energy(qd[i]),
                                   rtol=1e-12)
        np.testing.assert_allclose(fwd[i], qdd[i], rtol=1e-8, atol=1e-8)
        k1 = ch.kinematics(q[i], order=3)
        for a, b in ((rot, k1.rotation(M - 1)), (pt, k1.point(M - 1, (0.1, 0.2, 0.3)))):
            for x, y in ((a.G, b.G), (a.H, b.H), (a.D, b.D)):
                np.testing.assert_allclose(x[i], y, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------- the tests can fail
def test_perturbed_mass_is_detected():
    """kic against an oracle whose chain has one link 1e-6 heavier must disagree."""
    rng, ch = make(5, 5)
    q, qd, qdd = rng.normal(size=5), rng.normal(size=5), rng.normal(size=5)
    links = list(ch.links)
    l2 = links[2]
    links[2] = kic.Link(l2.mass * (1 + 1e-6), com=l2.com, inertia=l2.inertia)
    heavy = kic.SerialChain(ch.joints, links, gravity=ch.gravity, base=ch.base,
                            tool=ch.tool, frame_offsets=ch.frame_offsets)
    tau = ch.inverse_dynamics(q, qd, qdd)
    assert rel_err(tau, rnea(ch, q, qd, qdd)) <= RTOL
    assert rel_err(tau, rnea(heavy, q, qd, qdd)) > 10 * RTOL
    assert rel_err(ch.dynamics(q).I_star, oracle_mass_matrix(heavy, q)) > 10 * RTOL


# ---------------------------------------------------------------- from_dh
def random_dh(rng, M, convention):
    rows = []
    for k in range(M):
        kind = "R" if rng.uniform() < 0.6 else "P"
        row = dict(a=rng.uniform(-0.6, 0.6), alpha=rng.uniform(-np.pi, np.pi),
                   d=rng.uniform(-0.5, 0.5), theta=rng.uniform(-np.pi, np.pi), kind=kind,
                   offset=rng.uniform(-1, 1), name=f"j{k}")
        rows.append(row)
    return rows


def dh_frames(rows, q, convention, base):
    """0A_i by explicit matrix products (independent of kic)."""
    T = np.array(base, float)
    out = []
    for row, qi in zip(rows, q):
        theta, d = row["theta"], row["d"]
        if row["kind"] == "R":
            theta = theta + row["offset"] + qi
        else:
            d = d + row["offset"] + qi
        if convention == "standard":
            A = dh_standard(theta, d, row["a"], row["alpha"])
        else:
            A = dh_modified(row["alpha"], row["a"], theta, d)
        T = T @ A
        out.append(T)
    return np.array(out)


DH_CASES = [(conv, s, M) for conv in ("standard", "modified") for s, M in
            ((0, 1), (1, 2), (2, 3), (3, 4), (4, 6), (5, 7))]


@pytest.mark.parametrize("convention,seed,M", DH_CASES)
def test_from_dh_frames_and_tool(convention, seed, M):
    rng = np.random.default_rng(500 + seed)
    rows = random_dh(rng, M, convention)
    links = [random_link(rng) for _ in range(M)]
    base, tool = random_rigid(rng), random_rigid(rng, 0.2)
    ch = kic.SerialChain.from_dh(rows, links, convention=convention, base=base, tool=tool,
                                 gravity=(0.3, -1.0, -9.7))
    assert [j.kind for j in ch.joints] == [r["kind"] for r in rows]
    for _ in range(3):
        q = rng.uniform(-2, 2, M)
        A = dh_frames(rows, q, convention, base)
        np.testing.assert_allclose(ch.frames(q), A, atol=1e-12)
        np.testing.assert_allclose(ch.tool_frame(q), A[-1] @ tool, atol=1e-12)
        # the oracle reads the same description: same frames
        np.testing.assert_allclose(oracle_frames(ch, q), A, atol=1e-12)


@pytest.mark.parametrize("convention,seed,M", DH_CASES[1::2])
def test_from_dh_mass_properties_live_in_dh_frames(convention, seed, M):
    """Potential and kinetic energy computed from the DH frames alone (links'
    centroids and inertias placed with 0A_i) agree with kic's gravity load
    (= dV/dq), potential energy and kinetic energy."""
    rng = np.random.default_rng(600 + seed)
    rows = random_dh(rng, M, convention)
    links = [random_link(rng) for _ in range(M)]
    base = random_rigid(rng)
    g = np.array([0.3, -1.0, -9.7])
    ch = kic.SerialChain.from_dh(rows, links, convention=convention, base=base, gravity=g)
    q, qd = rng.uniform(-2, 2, M), rng.normal(size=M)

    def V(q):
        A = dh_frames(rows, q, convention, base)
        return -sum(l.mass * g @ (A[i][:3, :3] @ l.com + A[i][:3, 3]) for i, l in enumerate(links))

    h = 1e-6
    dV = derivative(V, q, h)
    assert_close(ch.gravity_load(q), dV, 1e-8, what="gravity load vs dV/dq of DH frames")
    assert abs(ch.potential_energy(q) - V(q)) <= 1e-12 * max(1, abs(V(q)))
    # kinetic energy from time differences of the DH frames along q + t qd
    dA = directional_derivative(lambda x: np.stack(dh_frames(rows, x, convention, base)), q, qd, h)
    A0 = dh_frames(rows, q, convention, base)
    KE = 0.0
    for i, l in enumerate(links):
        v = dA[i][:3, :3] @ l.com + dA[i][:3, 3]                  # the centroid's velocity
        W = dA[i][:3, :3] @ A0[i][:3, :3].T                       # skew(omega)
        w = np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]]) / 2
        Iw = A0[i][:3, :3] @ l.inertia @ A0[i][:3, :3].T
        KE += 0.5 * l.mass * v @ v + 0.5 * w @ Iw @ w
    assert abs(ch.kinetic_energy(q, qd) - KE) <= 1e-8 * max(1, KE)


def test_from_dh_seed_T1_matrix():
    """FGL T1: A(pi/2, 0.3, 0.5, pi/2) and a one-row chain at q = 0 reproduce it."""
    expect = np.array([[0, 0, 1, 0], [1, 0, 0, 0.5], [0, 1, 0, 0.3], [0, 0, 0, 1]], float)
    np.testing.assert_allclose(dh_standard(np.pi / 2, 0.3, 0.5, np.pi / 2), expect, atol=1e-15)
    ch = kic.SerialChain.from_dh([dict(theta=np.pi / 2, d=0.3, a=0.5, alpha=np.pi / 2)],
                                 [kic.Link(1.0)])
    np.testing.assert_allclose(ch.frames([0.0])[0], expect, atol=1e-15)
    np.testing.assert_allclose(ch.tool_frame([0.0]), expect, atol=1e-15)


# ------------------------------------------------- the zero-mass convention
@pytest.mark.parametrize("others", [False, True])
def test_massless_rotor_counts(others):
    """A body of zero mass with rotational inertia (a rotor, a flywheel) counts on
    every path: compiled, numpy and plain floats (one configuration), alone in its
    chain (zero total mass) or among bodies with mass.  I*, P*, the torques of the
    model and of inverse dynamics, and forward dynamics agree with the oracle."""
    rng = np.random.default_rng(41 + others)
    base = random_chain(rng, 3, kinds="RRR")
    rotor = kic.Link(0.0, com=(0.3, -0.1, 0.2), inertia=np.diag([0.02, 0.03, 0.04]))
    links = ([base.links[0]] if others else [kic.Link(0.0)]) + [base.links[1], rotor]
    if not others:
        links[1] = kic.Link(0.0, inertia=np.diag([0.01, 0.01, 0.015]))
    ch = kic.SerialChain(base.joints, links, gravity=base.gravity, base=base.base,
                         frame_offsets=base.frame_offsets)
    assert (ch.total_mass > 0) == others
    q, qd, qdd = rng.uniform(-2, 2, (3, 3))
    qs = rng.uniform(-2, 2, (4, 3))
    for q_ in (q, qs):                       # one configuration (floats) and a batch
        dyn = ch.dynamics(q_)
        one = q_.ndim == 1
        rows = [q_] if one else list(q_)
        ref_I = np.array([oracle_mass_matrix(ch, x) for x in rows])
        assert_close(dyn.I_star.reshape(ref_I.shape), ref_I, 1e-12)
        assert np.all(np.abs(ref_I[:, 2, 2]) > 1e-3)      # the rotor is there to count
        qd_, qdd_ = np.broadcast_to(qd, q_.shape), np.broadcast_to(qdd, q_.shape)
        tau = ch.inverse_dynamics(q_, qd_, qdd_)
        ref = np.array([rnea(ch, x, qd, qdd) for x in rows])
        assert_close(tau.reshape(ref.shape), ref, RTOL)
        assert_close(dyn.torque(qd_, qdd_), tau, RTOL)
        assert_close(ch.forward_dynamics(q_, qd_, tau), qdd_, 1e-9)
        assert_close(dyn.gravity_load.reshape(ref.shape),
                     np.array([oracle_gravity(ch, x) for x in rows]), RTOL)
        # P* against the oracle's velocity terms q'^T P* q'
        vel = np.array([oracle_bias(ch, x, qd) for x in rows])
        assert_close(dyn.velocity_term(qd_).reshape(vel.shape), vel, RTOL)


def test_no_mass_and_no_inertia_has_no_model():
    ch = kic.SerialChain([kic.Joint("R")], [kic.Link(0.0)])
    with pytest.raises(kic.ModelError, match="zero total mass and no rotational inertia"):
        ch.dynamics([0.3])
