"""Validation of the test oracle (tests/oracles/rnea.py) on its own.

The oracle is checked against published closed forms (docs/theory.md, section 8:
seeds 000-003) and against internal identities that do
not involve kic's numeric modules.  Only ``kic.chain`` (the description) is used.
"""
import numpy as np
import pytest

from helpers import (G_FU, assert_close, combine_bodies, derivative, directional_derivative,
                     random_chain, random_rigid, two_link_rods)
from kic.chain import Joint, Link, SerialChain
from oracles.rnea import (OracleLoads, kinematic_frames, oracle_bias, oracle_forward_dynamics,
                          oracle_gravity, oracle_kinetic_energy, oracle_load,
                          oracle_mass_matrix, oracle_point_jacobian, oracle_point_motion,
                          oracle_potential_energy, oracle_rotation_jacobian, oracle_frames,
                          oracle_link_motion, point_position, rnea)

SQ3_4 = np.sqrt(3) / 4

# Fu, Gonzalez & Lee two-link arm (docs/theory.md, seed 002, cases A-F):
# m1, m2, l, q, qd, qdd, D, h, c, tau
FU_CASES = {
    "A": (1, 1, 1, (0, 0), (0, 0), (0, 0), [[8 / 3, 5 / 6], [5 / 6, 1 / 3]], (0, 0),
          (2 * G_FU, G_FU / 2), (19.6124, 4.9031)),
    "C": (1, 1, 1, (0, np.pi / 2), (1, 1), (1, 1), [[5 / 3, 1 / 3], [1 / 3, 1 / 3]],
          (-1.5, 0.5), (1.5 * G_FU, 0), (0.5 + 1.5 * G_FU, 7 / 6)),
    "D": (1, 1, 1, (np.pi / 6, np.pi / 3), (1, -2), (0.5, 1.5),
          [[13 / 6, 7 / 12], [7 / 12, 1 / 3]], (0, SQ3_4), (12.7386274719, 0),
          (14.6969608052, 1.2246793686)),
    "E": (2, 1.5, 0.8, (0.3, -1.1), (0.7, 0.4), (-0.2, 0.9),
          [[2.142118943235, 0.537726138284], [0.537726138284, 0.32]],
          (0.308001263637, -0.209611971086), (22.835668559247, 4.09922719992),
          (23.199199558693, 4.070070001177)),
    "F": (2, 1.5, 0.8, (np.pi, np.pi / 4), (-1.3, 2.1), (0.4, -0.7),
          [[2.385489176606, 0.65941125497], [0.65941125497, 0.32]],
          (0.356381817718, 0.573605020899), (-23.772818310603, -4.160418310603),
          (-22.923828700721, -3.547048787717)),
}


@pytest.mark.parametrize("case", sorted(FU_CASES))
def test_fu_two_link_closed_form(case):
    m1, m2, l, q, qd, qdd, D, h, c, tau = FU_CASES[case]
    arm = two_link_rods(m1, m2, l)
    # printed values have 10-12 significant digits
    assert_close(oracle_mass_matrix(arm, q), D, 1e-11, what="D")
    assert_close(oracle_bias(arm, q, qd), h, 1e-10, what="h")
    assert_close(oracle_gravity(arm, q), c, 1e-10, what="c")
    assert_close(rnea(arm, q, qd, qdd), tau, 1e-10, what="tau")


def test_fu_case_E_exact_reference_torque():
    """The case named in the brief: tau = (23.199199558693, 4.070070001177)."""
    arm = two_link_rods(2.0, 1.5, 0.8)
    tau = rnea(arm, (0.3, -1.1), (0.7, 0.4), (-0.2, 0.9))
    np.testing.assert_allclose(tau, [23.199199558693, 4.070070001177], rtol=0, atol=2e-12)


def test_fu_perturbed_mass_is_detected():
    """Sanity: the tolerance used above is tight enough to see a 1e-6 mass change."""
    arm = two_link_rods(2.0, 1.5 * (1 + 1e-6), 0.8)
    tau = rnea(arm, (0.3, -1.1), (0.7, 0.4), (-0.2, 0.9))
    with pytest.raises(AssertionError):
        assert_close(tau, (23.199199558693, 4.070070001177), 1e-10)


def test_fu_forward_dynamics_and_damping_and_gravity_flip():
    # T9: feeding tau(E) back returns qdd(E)
    arm = two_link_rods(2.0, 1.5, 0.8)
    qdd = oracle_forward_dynamics(arm, (0.3, -1.1), (0.7, 0.4), (23.199199558693, 4.070070001177))
    np.testing.assert_allclose(qdd, (-0.2, 0.9), atol=1e-10)
    # T9: tau = 0 at (0, pi/2), qd = (1, 1), m = l = 1
    unit = two_link_rods(1, 1, 1)
    qdd = oracle_forward_dynamics(unit, (0, np.pi / 2), (1, 1), (0, 0))
    np.testing.assert_allclose(qdd, (1.5 - 1.125 * G_FU, -3 + 1.125 * G_FU), atol=1e-12)
    # T12: viscous damping b = (0.1, 0.2) on case D
    L = OracleLoads().damper(0, 0.1).damper(1, 0.2)
    tau = rnea(unit, (np.pi / 6, np.pi / 3), (1, -2), (0.5, 1.5), loads=L)
    np.testing.assert_allclose(tau, (14.79696080522, 0.82467936856), atol=1e-10)
    # T7: flipping gravity to +y negates c
    up = two_link_rods(2.0, 1.5, 0.8, gravity_dir=(0, 1, 0))
    np.testing.assert_allclose(oracle_gravity(up, (0.3, -1.1)),
                               (-22.835668559247, -4.09922719992), atol=1e-11)


def test_fu_prismatic_polar_arm_T16():
    """T16: theta-d polar arm (revolute + prismatic), built with SerialChain.from_dh."""
    m1, m2, r1 = 1.5, 2.0, 0.4
    rows = [dict(theta=0.0, offset=np.pi / 2, alpha=np.pi / 2), dict(kind="P")]
    links = [Link(m1, com=(0, 0, r1)), Link(m2)]
    arm = SerialChain.from_dh(rows, links, gravity=(0, -G_FU, 0))
    q, qd, qdd = (0.3, 0.8), (0.5, -0.2), (1.0, 0.3)
    th, d = q
    np.testing.assert_allclose(oracle_mass_matrix(arm, q), np.diag([m1 * r1**2 + m2 * d**2, m2]),
                               atol=1e-14)
    np.testing.assert_allclose(oracle_bias(arm, q, qd),
                               (2 * m2 * d * qd[1] * qd[0], -m2 * d * qd[0] ** 2), atol=1e-14)
    np.testing.assert_allclose(rnea(arm, q, qd, qdd), (21.810085495260, 5.995860501125),
                               atol=1e-11)


def test_fu_point_mass_arm_T17():
    d1, d2, m1, m2 = 0.7, 0.5, 1.3, 0.9
    T = np.eye(4)
    T[0, 3] = d1
    arm = SerialChain([Joint("R"), Joint("R", origin=T)],
                      [Link(m1, com=(d1, 0, 0)), Link(m2, com=(d2, 0, 0))],
                      gravity=(0, -G_FU, 0))
    np.testing.assert_allclose(rnea(arm, (0.4, 0.9), (0.3, -0.6), (0.5, 0.2)),
                               (16.021331535835, 1.458027043857), atol=1e-11)


def _planar(masses, lengths, g, point_masses=False, inertia3=None):
    joints, links = [], []
    for k, (m, l) in enumerate(zip(masses, lengths)):
        T = np.eye(4)
        if k:
            T[0, 3] = lengths[k - 1]
        joints.append(Joint("R", origin=T))
        links.append(Link(m, com=(l / 2, 0, 0), inertia=np.diag([0, m * l * l / 12, m * l * l / 12])))
    return SerialChain(joints, links, gravity=(0, -g, 0))


def test_craig_three_link_seed_003():
    """Seed 003 (Craig's exercise), the corrected values of docs/theory.md section 8."""
    T = np.eye(4)
    T[0, 3] = 0.5
    arm = SerialChain(
        [Joint("R"), Joint("R", origin=T), Joint("R", origin=T)],
        [Link(4.6, com=(0.5, 0, 0)), Link(2.3, com=(0.5, 0, 0)),
         Link(1.0, inertia=np.diag([0.05, 0.05, 0.1]))], gravity=(0, -9.8, 0))
    q, qd, qdd = (0.3, -0.5, 0.7), (0.4, 0.2, -0.1), (0.1, -0.2, 0.3)
    np.testing.assert_allclose(oracle_mass_matrix(arm, q),
                               [[4.348011, 1.649006, 0.1], [1.649006, 0.925, 0.1], [0.1, 0.1, 0.1]],
                               atol=1e-6)
    np.testing.assert_allclose(oracle_gravity(arm, q), (52.828752, 15.847677, 0), atol=1e-6)
    np.testing.assert_allclose(oracle_bias(arm, q, qd), (0.079105, -0.063284, 0), atol=1e-6)
    np.testing.assert_allclose(rnea(arm, q, qd, qdd), (53.042857, 15.794293, 0.02), atol=1e-6)
    np.testing.assert_allclose(point_position(arm, q, 2, (0, 0, 0)), (0.967702, 0.048425, 0),
                               atol=1e-6)
    J = oracle_point_jacobian(arm, q, 2, (0, 0, 0))
    np.testing.assert_allclose(J[:2], [[-0.048425, 0.099335, 0], [0.967702, 0.490033, 0]],
                               atol=1e-6)


def test_horn_three_link_planar_C1_C3():
    arm = _planar((1, 1, 1), (1, 1, 1), 9.81)
    q, qd = (0.3, 0.9, -0.6), (0.4, -0.7, 1.1)
    np.testing.assert_allclose(
        oracle_mass_matrix(arm, q),
        [[7.645502008847, 3.902085478545, 1.223669385351],
         [3.902085478545, 2.492002281576, 0.746001140788],
         [1.223669385351, 0.746001140788, 0.333333333333]], atol=1e-11)
    np.testing.assert_allclose(oracle_bias(arm, q, qd),
                               (0.166601156096, 0.366916755027, -0.001767294770), atol=1e-11)
    np.testing.assert_allclose(oracle_mass_matrix(arm, (0, 0, 0)),
                               [[9, 14 / 3, 4 / 3], [14 / 3, 8 / 3, 5 / 6], [4 / 3, 5 / 6, 1 / 3]],
                               atol=1e-13)
    arm = _planar((2, 1.5, 0.5), (1, 0.8, 0.3), 9.81)
    np.testing.assert_allclose(oracle_gravity(arm, q),
                               (32.277523125053, 4.161970250086, 0.607240678670), atol=1e-11)


def horn_spatial(I1=0.05, m2=2.0, l2=0.5, m3=1.5, l3=0.4, M2=0.0, M3=0.0, d2=0.0, d3=0.0,
                 g=(0, 0, -9.81)):
    """Seed 000 spatial chain (docs/theory.md section 8): z, then two joints about u2."""
    rod = lambda m, l, y: (m, (0, y, l / 2), np.diag([m * l * l / 12, m * l * l / 12, 0]))
    point = lambda m, p: (m, p, np.zeros((3, 3)))
    parts2 = [rod(m2, l2, d2)] + ([point(M2, (0, d2, l2))] if M2 else [])
    parts3 = [rod(m3, l3, 0.0)] + ([point(M3, (0, 0, l3))] if M3 else [])
    b2 = combine_bodies(parts2)
    b3 = combine_bodies(parts3)
    T3 = np.eye(4)
    T3[:3, 3] = (0, d3, l2)
    return SerialChain(
        [Joint("R", (0, 0, 1)), Joint("R", (0, 1, 0)), Joint("R", (0, 1, 0), origin=T3)],
        [Link(1.0, inertia=np.diag([I1 / 2, I1 / 2, I1])),
         Link(b2[0], com=b2[1], inertia=b2[2]), Link(b3[0], com=b3[1], inertia=b3[2])],
        gravity=g)


HORN = {
    "A1": (dict(), [[0.338900944088, 0, 0], [0, 0.897984964868, 0.2181591491],
                    [0, 0.2181591491, 0.08]],
           (-0.194676307326, -0.131962866112, -0.066109760479),
           (0, -8.769435357957, -0.869715968204),
           (-0.160786212917, -8.787248975825, -0.916193898863), 0.177885023632),
    "A2": (dict(M2=0.3, M3=0.7, g=(1.0, -2.0, -9.81)),
           [[0.50574247313, 0, 0], [0, 1.517882043188, 0.459107688261],
            [0, 0.459107688261, 0.192]],
           (-0.271423335742, -0.226283561873, -0.130447201802),
           (2.865365480817, -13.430513474283, -1.883305565616),
           (2.644516392388, -13.490952933996, -1.979531229766), 0.246436682231),
    "A3": (dict(d2=0.12, d3=0.2, M3=0.7, g=(1.0, -2.0, -9.81)),
           [[0.591416240988, -0.324974845178, -0.110819032739],
            [-0.324974845178, 1.442882043188, 0.459107688261],
            [-0.110819032739, 0.459107688261, 0.192]],
           (-0.120931179254, -0.217044970654, -0.130447201802),
           (2.899896511686, -12.440752796397, -1.883305565616),
           (2.806357697317, -12.53945114941, -1.99061313304), 0.296644421642),
}


@pytest.mark.parametrize("case", sorted(HORN))
def test_horn_spatial_chain(case):
    kw, Mx, h, G, tau, K = HORN[case]
    arm = horn_spatial(**kw)
    q, qd, qdd = (0.3, 0.7, -0.4), (0.5, -0.8, 1.2), (0.1, 0.2, -0.3)
    np.testing.assert_allclose(oracle_mass_matrix(arm, q), Mx, atol=1e-11)
    np.testing.assert_allclose(oracle_bias(arm, q, qd), h, atol=1e-11)
    np.testing.assert_allclose(oracle_gravity(arm, q), G, atol=1e-11)
    np.testing.assert_allclose(rnea(arm, q, qd, qdd), tau, atol=1e-11)
    np.testing.assert_allclose(oracle_kinetic_energy(arm, q, qd), K, atol=1e-12)


# ------------------------------------------------------ internal identities
SEEDS = range(6)


def _chain(seed, M=None):
    rng = np.random.default_rng(1000 + seed)
    M = M or int(rng.integers(1, 7))
    return rng, random_chain(rng, M)


@pytest.mark.parametrize("seed", SEEDS)
def test_oracle_energy_and_mass_matrix(seed):
    rng, ch = _chain(seed)
    M = ch.dof
    q, qd = rng.normal(size=M), rng.normal(size=M)
    I = oracle_mass_matrix(ch, q)
    np.testing.assert_allclose(I, I.T, atol=1e-13)
    assert np.linalg.eigvalsh(I).min() > 0
    np.testing.assert_allclose(oracle_kinetic_energy(ch, q, qd), 0.5 * qd @ I @ qd, rtol=1e-12)
    # gravity load = dV/dq (central differences)
    dV = derivative(lambda x: oracle_potential_energy(ch, x), q)
    assert_close(oracle_gravity(ch, q), dV, 1e-8)


@pytest.mark.parametrize("seed", SEEDS)
def test_oracle_power_balance(seed):
    """d(KE)/dt = qd . (tau - gravity) along any motion (no applied loads)."""
    rng, ch = _chain(seed)
    M = ch.dof
    q, qd, qdd = rng.normal(size=M), rng.normal(size=M), rng.normal(size=M)
    tau = rnea(ch, q, qd, qdd, gravity=np.zeros(3))
    dKE = directional_derivative(lambda t: oracle_kinetic_energy(ch, q + t * qd, qd + t * qdd),
                                 0.0, 1.0)
    assert abs(dKE - qd @ tau) <= 1e-7 * max(1.0, abs(dKE))


@pytest.mark.parametrize("seed", SEEDS)
def test_oracle_velocities_and_loads_by_virtual_work(seed):
    rng, ch = _chain(seed)
    M = ch.dof
    q, qd, qdd = rng.normal(size=M), rng.normal(size=M), rng.normal(size=M)
    link = int(rng.integers(M))
    p = rng.uniform(-0.5, 0.5, 3)
    J = oracle_point_jacobian(ch, q, link, p)
    x, v, a = oracle_point_motion(ch, q, qd, qdd, link, p)
    assert_close(x, point_position(ch, q, link, p), 1e-14)
    assert_close(v, J @ qd, 1e-8)
    Jr = oracle_rotation_jacobian(ch, q, link)
    w, wd = oracle_link_motion(ch, q, qd, qdd)
    assert_close(w[link], Jr @ qd, 1e-8)
    # acceleration = time derivative of velocity along q(t) = q + t qd + t^2/2 qdd
    h = 1e-5
    state = lambda t: (q + t * qd + t * t / 2 * qdd, qd + t * qdd, qdd)
    vd = directional_derivative(lambda t: oracle_point_motion(ch, *state(t), link, p)[1],
                                0.0, 1.0, h)
    assert_close(a, vd, 1e-7)
    wd_fd = directional_derivative(lambda t: oracle_link_motion(ch, *state(t))[0][link],
                                   0.0, 1.0, h)
    assert_close(wd[link], wd_fd, 1e-7)
    # applied loads by virtual work: T_L = -J^T f - Jr^T mu + k (q - rest) + c qd
    f, mu = rng.normal(size=3), rng.normal(size=3)
    L = OracleLoads().force(link, f, point=p).moment(link, mu).spring(0, 7.0, rest=0.2)
    L.damper(M - 1, 0.8)
    expect = -J.T @ f - Jr.T @ mu
    expect[0] += 7.0 * (q[0] - 0.2)
    expect[M - 1] += 0.8 * qd[M - 1]
    assert_close(oracle_load(ch, q, L, qd=qd), expect, 1e-8)
    # loads superpose onto the full inverse dynamics
    assert_close(rnea(ch, q, qd, qdd, loads=L), rnea(ch, q, qd, qdd) + expect, 1e-8)


@pytest.mark.parametrize("seed", SEEDS)
def test_oracle_invariances(seed):
    """Re-describing the same physical chain must not change the oracle's torques."""
    rng, ch = _chain(seed)
    M = ch.dof
    q, qd, qdd = rng.normal(size=M), rng.normal(size=M), rng.normal(size=M)
    tau = rnea(ch, q, qd, qdd)
    # 1. move the whole world: base and gravity rotated/translated together
    W = random_rigid(rng)
    moved = SerialChain(ch.joints, ch.links, gravity=W[:3, :3] @ ch.gravity,
                        base=W @ ch.base, frame_offsets=ch.frame_offsets)
    assert_close(rnea(moved, q, qd, qdd), tau, 1e-12)
    # 2. fold the frame offsets into the mass properties
    links = []
    for j in range(M):
        O = ch.frame_offsets[j]
        lk = ch.links[j]
        links.append(Link(lk.mass, com=O[:3, :3] @ lk.com + O[:3, 3],
                          inertia=O[:3, :3] @ lk.inertia @ O[:3, :3].T))
    folded = SerialChain(ch.joints, links, gravity=ch.gravity, base=ch.base)
    assert_close(rnea(folded, q, qd, qdd), tau, 1e-12)
    # 3. frames: F_j = K_j @ offset_j, and the kinematic frames follow the definition
    K = kinematic_frames(ch, q)
    np.testing.assert_allclose(oracle_frames(ch, q), K @ ch.frame_offsets, atol=1e-14)
    # 4. a perturbed link mass is visible beyond the comparison tolerance
    j = int(rng.integers(M))
    links = list(ch.links)
    lk = links[j]
    links[j] = Link(lk.mass * (1 + 1e-6), com=lk.com, inertia=lk.inertia)
    heavier = SerialChain(ch.joints, links, gravity=ch.gravity, base=ch.base,
                          frame_offsets=ch.frame_offsets)
    with pytest.raises(AssertionError):
        assert_close(rnea(heavier, q, qd, qdd), tau, 1e-10)
