"""The ready-made models of ``mechanisms``.

* every builder builds, with the expected joints, and I* is symmetric positive
  definite at random configurations;
* frames against an independent DH computation (``helpers.dh_standard``,
  ``helpers.dh_modified``) and dynamics against the independent recursive
  Newton-Euler oracle (``oracles.rnea``), which read only the model
  description;
* published numbers for the PUMA 560 and the Panda (sources below);
* invalid dimensions raise ``kic.ModelError``.

Published reference numbers used here:

* PUMA 560 at the toolbox's nominal pose ``qn``: Robotics Toolbox for Python,
  ``tests/test_DHRobot.py`` (``test_inertia``, ``test_gravload``,
  ``test_coriolis``, ``test_itorque``), printed to 4 decimals, computed by the
  toolbox from the same parameter table (its inertia matrix includes the
  reflected motor inertia ``G^2 Jm`` on the diagonal).
* Panda frames at q = (1, ..., 7): the same file, ``test_fkine_all``
  (4 decimals; its last frame is the flange).
* Panda gravity: C. Gaz et al. (2019), ``get_GravityVector.m`` of the authors'
  repository (identified model, g = 9.80665), evaluated at ``qz`` and ``qr``.
  The chain uses the feasible parameters retrieved from that identification,
  which reproduce it only approximately (to about 0.1 N m).
"""
from __future__ import annotations

import numpy as np
import pytest

import kic
import mechanisms
from helpers import combine_bodies, dh_modified, dh_standard
from mechanisms import (PANDA_POSES, PUMA560_POSES, craig_three_link, fu_two_link,
                        horn_three_dof, panda, planar_three_link, planar_two_link, puma560,
                        puma560_drives, stanford_arm, stanford_drives)
from oracles.rnea import (oracle_bias, oracle_frames, oracle_gravity, oracle_mass_matrix,
                          oracle_tool_frame, rnea)

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels

PI = np.pi

# builder, expected joint kinds, sampler of valid configurations
BUILDERS = {
    "planar_two_link": (planar_two_link, "RR"),
    "planar_three_link": (planar_three_link, "RRR"),
    "craig_three_link": (craig_three_link, "RRR"),
    "fu_two_link": (fu_two_link, "RR"),
    "horn_three_dof": (horn_three_dof, "RRR"),
    "horn_three_dof_offsets": (lambda: horn_three_dof(M2=0.3, M3=0.7, delta2=0.12,
                                                      delta3=0.2), "RRR"),
    "puma560": (puma560, "RRRRRR"),
    "stanford_arm": (stanford_arm, "RRPRRR"),
    "panda": (panda, "RRRRRRR"),
}


def sample_q(chain, rng, n):
    """Random configurations; prismatic joints within 0.3-1.3 m (Stanford boom)."""
    q = rng.uniform(-PI, PI, (n, chain.dof))
    q[:, chain.is_prismatic] = rng.uniform(0.3, 1.3, (n, int(chain.is_prismatic.sum())))
    return q


def assert_stated(actual, expected, decimals, what=""):
    a, e = np.asarray(actual, float), np.asarray(expected, float)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    tol = 0.5 * 10.0 ** (-decimals) * (1 + 1e-9) + 1e-13 * np.maximum(1.0, np.abs(e))
    err = np.abs(a - e)
    assert np.all(err <= tol), f"{what}: max error {err.max():.3e}\n{a!r}\n{e!r}"


# ------------------------------------------------------------ construction
@pytest.mark.parametrize("key", sorted(BUILDERS))
def test_builds(key):
    build, kinds = BUILDERS[key]
    chain = build()
    assert isinstance(chain, kic.SerialChain)
    assert chain.dof == len(kinds)
    assert "".join(j.kind for j in chain.joints) == kinds
    assert chain.total_mass > 0
    assert chain.name


def test_package_exports():
    for name in mechanisms.__all__:
        assert hasattr(mechanisms, name), name
    builders = [n for n in mechanisms.__all__ if callable(getattr(mechanisms, n))
                and n[0].islower() and not n.endswith("_drives")]
    serial = {"planar_two_link", "planar_three_link", "craig_three_link", "fu_two_link",
              "horn_three_dof", "puma560", "stanford_arm", "panda"}
    closed = {"five_bar", "four_bar", "slider_crank", "bricard", "stewart_platform"}
    assert serial | closed <= set(builders)
    for n in builders:
        doc = getattr(mechanisms, n).__doc__
        for section in ("Parameters", "Returns", "Notes", "Examples"):
            assert section in doc, f"{n}: docstring lacks {section}"


@pytest.mark.parametrize("key", sorted(BUILDERS))
def test_inertia_spd_random(key):
    build, _ = BUILDERS[key]
    chain = build()
    rng = np.random.default_rng(sum(map(ord, key)))
    Q = sample_q(chain, rng, 25)
    I = chain.dynamics(Q).I_star
    assert I.shape == (25, chain.dof, chain.dof)
    assert np.abs(I - np.swapaxes(I, 1, 2)).max() <= 1e-13 * np.abs(I).max()
    assert np.linalg.eigvalsh(I).min() > 0


@pytest.mark.parametrize("key", sorted(BUILDERS))
def test_dynamics_match_oracle(key):
    """kic's I*, h, gravity and inverse dynamics against the RNEA oracle."""
    build, _ = BUILDERS[key]
    chain = build()
    rng = np.random.default_rng(7 + len(key))
    for q in sample_q(chain, rng, 4):
        qd, qdd = rng.normal(size=chain.dof), rng.normal(size=chain.dof)
        dyn = chain.dynamics(q)
        scale = max(1.0, np.abs(oracle_mass_matrix(chain, q)).max())
        np.testing.assert_allclose(dyn.I_star, oracle_mass_matrix(chain, q),
                                   atol=1e-11 * scale, rtol=1e-10)
        np.testing.assert_allclose(dyn.velocity_term(qd), oracle_bias(chain, q, qd),
                                   atol=1e-10 * scale, rtol=1e-10)
        np.testing.assert_allclose(dyn.gravity_load, oracle_gravity(chain, q),
                                   atol=1e-10 * scale, rtol=1e-10)
        np.testing.assert_allclose(chain.inverse_dynamics(q, qd, qdd),
                                   rnea(chain, q, qd, qdd), atol=1e-10 * scale, rtol=1e-10)
        np.testing.assert_allclose(chain.frames(q), oracle_frames(chain, q), atol=1e-12)
        np.testing.assert_allclose(chain.tool_frame(q), oracle_tool_frame(chain, q),
                                   atol=1e-12)


# ---------------------------------------------------------------- frames
def _chain_product(mats):
    out, T = [], np.eye(4)
    for A in mats:
        T = T @ A
        out.append(T)
    return np.array(out)


def test_puma_frames_standard_dh():
    robot = puma560(d1=0.672)
    rows = [(0.672, 0.0, PI / 2), (0.0, 0.4318, 0.0), (0.15005, 0.0203, -PI / 2),
            (0.4318, 0.0, PI / 2), (0.0, 0.0, -PI / 2), (0.0, 0.0, 0.0)]
    rng = np.random.default_rng(560)
    for q in rng.uniform(-PI, PI, (5, 6)):
        F = _chain_product([dh_standard(q[k], *rows[k]) for k in range(6)])
        np.testing.assert_allclose(robot.frames(q), F, atol=1e-13)
        np.testing.assert_allclose(robot.tool_frame(q), F[-1], atol=1e-13)
    # qz: upper arm along +x, forearm up; z1 = -y carries d3 to y = -0.15005
    np.testing.assert_allclose(robot.tool_frame(np.zeros(6))[:3, 3],
                               [0.4318 + 0.0203, -0.15005, 0.672 + 0.4318], atol=1e-13)


def test_stanford_frames_standard_dh():
    arm = stanford_arm()
    rng = np.random.default_rng(1972)
    for q in sample_q(arm, rng, 5):
        mats = [dh_standard(q[0], 0.412, 0.0, -PI / 2), dh_standard(q[1], 0.154, 0.0, PI / 2),
                dh_standard(-PI / 2, q[2], 0.0, 0.0), dh_standard(q[3], 0.0, 0.0, -PI / 2),
                dh_standard(q[4], 0.0, 0.0, PI / 2), dh_standard(q[5], 0.263, 0.0, 0.0)]
        F = _chain_product(mats)
        np.testing.assert_allclose(arm.frames(q), F, atol=1e-13)
        np.testing.assert_allclose(arm.tool_frame(q), F[-1], atol=1e-13)


def test_stanford_prismatic_influence():
    """Joint 3 slides the wrist along the boom: its column of G is the boom axis."""
    arm = stanford_arm()
    q = np.array([0.4, -0.7, 0.8, 0.3, 0.2, -0.5])
    kin = arm.kinematics(q)
    boom = arm.frames(q)[1][:3, 2]                  # z of DH frame 2 = joint-3 axis
    np.testing.assert_allclose(kin.tool().G[:, 2], boom, atol=1e-14)
    np.testing.assert_allclose(kin.rotation(5).G[:, 2], 0.0, atol=1e-15)
    d = 1e-6
    dq = np.zeros(6)
    dq[2] = d
    np.testing.assert_allclose((arm.tool_frame(q + dq) - arm.tool_frame(q - dq))[:3, 3] / (2 * d),
                               boom, atol=1e-9)


def test_panda_frames_modified_dh():
    robot = panda()
    rows = [(0.0, 0.0, 0.333), (-PI / 2, 0.0, 0.0), (PI / 2, 0.0, 0.316),
            (PI / 2, 0.0825, 0.0), (-PI / 2, -0.0825, 0.384), (PI / 2, 0.0, 0.0),
            (PI / 2, 0.088, 0.0)]
    rng = np.random.default_rng(2019)
    for q in rng.uniform(-PI, PI, (5, 7)):
        F = _chain_product([dh_modified(al, a, q[k], d) for k, (al, a, d) in enumerate(rows)])
        np.testing.assert_allclose(robot.frames(q), F, atol=1e-13)
        flange = F[-1].copy()
        flange[:3, 3] += 0.107 * F[-1][:3, 2]
        np.testing.assert_allclose(robot.tool_frame(q), flange, atol=1e-13)


def test_panda_frames_published():
    """Robotics Toolbox for Python, tests/test_DHRobot.py, test_fkine_all (4 decimals)."""
    robot = panda()
    q = np.arange(1.0, 8.0)
    published = [
        [[0.5403, -0.8415, 0, 0], [0.8415, 0.5403, 0, 0], [0, 0, 1, 0.333]],
        [[-0.2248, -0.4913, -0.8415, 0], [-0.3502, -0.7651, 0.5403, 0],
         [-0.9093, 0.4161, 0, 0.333]],
        [[0.1038, 0.8648, 0.4913, 0.1552], [0.4229, -0.4855, 0.7651, 0.2418],
         [0.9002, 0.1283, -0.4161, 0.2015]],
        [[-0.4397, -0.2425, -0.8648, 0.1638], [-0.8555, -0.1801, 0.4855, 0.2767],
         [-0.2735, 0.9533, -0.1283, 0.2758]],
        [[-0.9540, -0.1763, -0.2425, 0.107], [0.2229, -0.9581, -0.1801, 0.2781],
         [-0.2006, -0.2258, 0.9533, 0.6644]],
        [[-0.8482, -0.4994, 0.1763, 0.107], [0.2643, -0.1106, 0.9581, 0.2781],
         [-0.4590, 0.8593, 0.2258, 0.6644]],
        [[-0.5236, 0.6902, 0.4994, 0.08575], [0.8287, 0.5487, 0.1106, 0.3132],
         [-0.1977, 0.4718, -0.8593, 0.5321]],     # the toolbox's frame 7 is the flange
    ]
    F = robot.frames(q)
    for k in range(6):
        assert_stated(F[k][:3], published[k], 4, f"frame {k + 1}")
    assert_stated(robot.tool_frame(q)[:3], published[6], 4, "flange")


def test_fu_and_craig_frames():
    rng = np.random.default_rng(3)
    fu = fu_two_link(l=0.8)
    craig = craig_three_link()
    for q in rng.uniform(-PI, PI, (4, 3)):
        F = _chain_product([dh_standard(q[0], 0, 0.8, 0), dh_standard(q[1], 0, 0.8, 0)])
        np.testing.assert_allclose(fu.frames(q[:2]), F, atol=1e-14)
        F = _chain_product([dh_modified(0, 0, q[0], 0), dh_modified(0, 0.5, q[1], 0),
                            dh_modified(0, 0.5, q[2], 0)])
        np.testing.assert_allclose(craig.frames(q), F, atol=1e-14)
        np.testing.assert_allclose(craig.tool_frame(q), F[-1], atol=1e-14)


def test_planar_tips():
    rng = np.random.default_rng(4)
    arm = planar_three_link(l1=0.9, l2=0.6, l3=0.25)
    for q in rng.uniform(-PI, PI, (4, 3)):
        phi = np.cumsum(q)
        tip = (np.array([0.9, 0.6, 0.25]) * np.stack([np.cos(phi), np.sin(phi)])).sum(axis=1)
        T = arm.tool_frame(q)
        np.testing.assert_allclose(T[:2, 3], tip, atol=1e-14)
        assert np.arctan2(T[1, 0], T[0, 0]) == pytest.approx(np.angle(np.exp(1j * phi[-1])),
                                                             abs=1e-13)


def test_horn_geometry():
    """Link 2 along Rz(t1) Ry(t2) z, offsets along u2 = Rz(t1) y (docs/theory.md, seed 000)."""
    l2, l3, d2, d3 = 0.5, 0.4, 0.12, 0.2
    arm = horn_three_dof(l2=l2, l3=l3, delta2=d2, delta3=d3)
    rng = np.random.default_rng(5)
    for t1, t2, t3 in rng.uniform(-PI, PI, (4, 3)):
        s1, c1, s2, c2 = np.sin(t1), np.cos(t1), np.sin(t2), np.cos(t2)
        s23, c23 = np.sin(t2 + t3), np.cos(t2 + t3)
        kin = arm.kinematics([t1, t2, t3], order=1)
        F = arm.frames([t1, t2, t3])
        for s in (0.1, 0.37):
            r2 = F[1] @ [0.0, d2, s, 1.0]
            np.testing.assert_allclose(r2[:3], [s * c1 * s2 - d2 * s1, s * s1 * s2 + d2 * c1,
                                                s * c2], atol=1e-14)
            r3 = F[2] @ [0.0, d3, s, 1.0]
            np.testing.assert_allclose(r3[:3], [(l2 * s2 + s * s23) * c1 - d3 * s1,
                                                (l2 * s2 + s * s23) * s1 + d3 * c1,
                                                l2 * c2 + s * c23], atol=1e-14)
        np.testing.assert_allclose(arm.tool_frame([t1, t2, t3])[:3, 3],
                                   F[2][:3, :3] @ [0, d3, l3] + F[2][:3, 3], atol=1e-14)
        np.testing.assert_allclose(kin.axes, [[0, 0, 1], [-s1, c1, 0], [-s1, c1, 0]],
                                   atol=1e-15)


def test_horn_composite_links():
    """Rod + point mass combined by the parallel-axis theorem."""
    m2, l2, M2, m3, l3, M3, d2, d3 = 2.0, 0.5, 0.3, 1.5, 0.4, 0.7, 0.12, 0.2
    arm = horn_three_dof(I1=0.05, m2=m2, l2=l2, m3=m3, l3=l3, M2=M2, M3=M3, delta2=d2,
                         delta3=d3)
    for link, (m, l, M, d) in zip(arm.links[1:], ((m2, l2, M2, d2), (m3, l3, M3, d3))):
        rod = (m, (0, d, l / 2), np.diag([m * l * l / 12, m * l * l / 12, 0.0]))
        mt, ct, It = combine_bodies([rod, (M, (0, d, l), np.zeros((3, 3)))])
        assert link.mass == pytest.approx(mt, abs=1e-15)
        np.testing.assert_allclose(link.com, ct, atol=1e-15)
        np.testing.assert_allclose(link.inertia, It, atol=1e-15)
        assert link.inertia[2, 2] == 0.0           # zero axial inertia
        # about the joint end: m l^2 / 3 + M l^2
        assert link.inertia[0, 0] + link.mass * (link.com[2] ** 2) == pytest.approx(
            m * l * l / 3 + M * l * l, rel=1e-14)
    assert arm.links[0].inertia[2, 2] == 0.05
    assert arm.total_mass == pytest.approx(m2 + M2 + m3 + M3)


def test_composite_is_batched_and_keeps_a_massless_bodys_inertia():
    """One composite-body function for one body and for D designs (the builders'
    and the design writers'); a body of zero mass keeps its rotational inertia
    (it counts, as in every kic model) and has its centroid at the frame origin."""
    from kic import composite_body as composite
    from mechanisms._common import rod_inertia
    rng = np.random.default_rng(3)
    D = 5
    m, L, M = rng.uniform(0.5, 2, D), rng.uniform(0.1, 0.6, D), rng.uniform(0, 1, D)
    m[2] = M[2] = 0.0                                    # a massless design
    on_x = lambda x: np.stack([x, 0 * x, 0 * x], -1)     # noqa: E731
    Jc = np.diag([0.01, 0.02, 0.03])                     # a massless rotor's inertia
    parts = [(m, on_x(L / 2), rod_inertia(m, L, 0)), (M, on_x(L), np.zeros((D, 3, 3))),
             (0.0 * m, on_x(0.3 * L), np.broadcast_to(Jc, (D, 3, 3)))]
    mt, ct, It = composite(parts)
    assert mt.shape == (D,) and ct.shape == (D, 3) and It.shape == (D, 3, 3)
    for d in range(D):
        one = composite([(p[0][d], p[1][d], p[2][d]) for p in parts])
        assert one[0] == mt[d]
        np.testing.assert_array_equal(one[1], ct[d])
        np.testing.assert_array_equal(one[2], It[d])
        if d != 2:
            ref = combine_bodies([(p[0][d], p[1][d], p[2][d]) for p in parts])
            np.testing.assert_allclose(ct[d], ref[1], rtol=1e-14)
            np.testing.assert_allclose(It[d], ref[2], rtol=1e-14, atol=1e-16)
    assert mt[2] == 0.0 and np.all(ct[2] == 0.0)
    np.testing.assert_array_equal(It[2], Jc)             # the rotor's inertia counts
    with pytest.raises(AssertionError):                  # (the check can fail)
        np.testing.assert_array_equal(It[0], composite(parts[:2])[2][0])


# ------------------------------------------------------------- PUMA 560
QN = PUMA560_POSES["qn"]


def test_puma_table():
    robot = puma560()
    assert [l.mass for l in robot.links] == [0.0, 17.4, 4.8, 0.82, 0.34, 0.09]
    assert robot.total_mass == pytest.approx(23.45)
    np.testing.assert_allclose(robot.links[1].com, [-0.3638, 0.006, 0.2275])
    np.testing.assert_allclose(np.diag(robot.links[2].inertia), [0.066, 0.086, 0.0125])
    # links 1 and 3 of the published table violate the triangle inequality
    for k in (0, 2):
        with pytest.raises(kic.ModelError, match="triangle"):
            kic.Link(robot.links[k].mass, robot.links[k].com, robot.links[k].inertia)
    for k in (1, 3, 4, 5):
        kic.Link(robot.links[k].mass, robot.links[k].com, robot.links[k].inertia)


def test_puma_inertia_published():
    """RTB-Python test_inertia: p560.inertia(qn), which adds G^2 Jm to the diagonal."""
    published = [[3.6594, -0.4044, 0.1006, -0.0025, 0.0000, -0.0000],
                 [-0.4044, 4.4137, 0.3509, 0.0000, 0.0024, 0.0000],
                 [0.1006, 0.3509, 0.9378, 0.0000, 0.0015, 0.0000],
                 [-0.0025, 0.0000, 0.0000, 0.1925, 0.0000, 0.0000],
                 [0.0000, 0.0024, 0.0015, 0.0000, 0.1713, 0.0000],
                 [-0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.1941]]
    for d1 in (0.0, 0.672):              # the base height does not change I*
        M = puma560(d1=d1).dynamics(QN).I_star + np.diag(puma560_drives().reflected_inertia)
        assert_stated(M, published, 4, "p560.inertia(qn)")


def test_puma_gravity_published():
    """RTB-Python test_gravload: p560.gravload(qn), g = 9.81."""
    for d1 in (0.0, 0.672):
        assert_stated(puma560(d1=d1).gravity_load(QN), [0.0, 31.6399, 6.0351, 0.0, 0.0283, 0.0],
                      4, "gravload(qn)")


def test_puma_coriolis_published():
    """RTB-Python test_coriolis: C(qn, qd) with h = C qd (friction excluded)."""
    qd = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0])
    C = np.array([[-0.1735, -2.0494, -0.1178, -0.0002, -0.0045, 0.0001],
                  [0.6274, 1.1572, 1.9287, -0.0015, -0.0003, -0.0000],
                  [-0.3608, -0.7734, -0.0018, -0.0009, -0.0064, -0.0000],
                  [0.0011, 0.0005, -0.0001, 0.0002, 0.0002, -0.0001],
                  [-0.0002, 0.0028, 0.0046, -0.0002, -0.0000, -0.0000],
                  [0.0001, 0.0000, 0.0000, 0.0000, 0.0000, 0]])
    h = puma560().dynamics(QN).velocity_term(qd)
    # each printed entry carries up to 5e-5 of rounding, weighted by |qd|
    np.testing.assert_allclose(h, C @ qd, rtol=0, atol=5e-5 * np.abs(qd).sum() + 1e-12)


def test_puma_itorque_published():
    """RTB-Python test_itorque: inertia(qn) @ qdd including the reflected motor inertia."""
    qdd = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0])
    robot = puma560()
    tau = robot.dynamics(QN).I_star @ qdd + puma560_drives().reflected_inertia * qdd
    assert_stated(tau, [3.1500, 9.4805, 3.6189, 0.1901, 0.3519, 0.5823], 4, "itorque")
    # the chain alone: inverse dynamics without gravity or velocity = I* qdd
    no_g = kic.SerialChain(robot.joints, robot.links, gravity=(0, 0, 0), tool=robot.tool,
                           frame_offsets=robot.frame_offsets)
    np.testing.assert_allclose(no_g.inverse_dynamics(QN, np.zeros(6), qdd),
                               robot.dynamics(QN).I_star @ qdd, atol=1e-12)


def test_puma_drives():
    dr = puma560_drives()
    assert isinstance(dr, mechanisms.DriveTrain)
    np.testing.assert_allclose(dr.gear_ratio, [-62.6111, 107.815, -53.7063, 76.0364, 71.923,
                                               76.686])
    np.testing.assert_allclose(dr.motor_inertia, [200e-6] * 3 + [33e-6] * 3)
    np.testing.assert_allclose(dr.reflected_inertia, dr.gear_ratio ** 2 * dr.motor_inertia)
    np.testing.assert_allclose(dr.reflected_viscous_friction,
                               dr.gear_ratio ** 2 * dr.viscous_friction)
    assert dr.coulomb_friction.shape == (6, 2)
    assert np.all(dr.coulomb_friction[:, 0] > 0) and np.all(dr.coulomb_friction[:, 1] < 0)
    assert "mdl_puma560" in dr.source


def test_puma_named_poses():
    robot = puma560()
    # qr: arm straight up (wrist centre above the shoulder), qs: stretched along x
    T = robot.tool_frame(PUMA560_POSES["qr"])
    np.testing.assert_allclose(T[:3, 3], [0.0203, -0.15005, 0.4318 + 0.4318], atol=1e-13)
    T = robot.tool_frame(PUMA560_POSES["qs"])
    np.testing.assert_allclose(T[:3, 3], [0.4318 + 0.4318, -0.15005, -0.0203], atol=1e-13)


# ----------------------------------------------------------------- Panda
def test_panda_physically_consistent():
    robot = panda()
    # every link satisfies the triangle inequality (built with check_triangle=True)
    for link in robot.links:
        ev = np.linalg.eigvalsh(link.inertia)
        assert ev[0] > 0 and ev[0] + ev[1] >= ev[2]
    assert robot.total_mass == pytest.approx(16.062132, abs=1e-9)
    assert robot.links[6].com == pytest.approx([1.0517e-02, -4.252e-03, 6.1597e-02])


@pytest.mark.parametrize("pose, published", [
    ("qz", [0.0, -3.4819126374, 0.0, -3.2060709146, 0.0, 1.6858781447, 0.0]),
    ("qr", [0.0, -16.6562685257, -0.2792841563, 19.2584542869, 0.6773751572,
            1.7293099729, -0.0039753518]),
])
def test_panda_gravity_vs_identified_model(pose, published):
    """Gaz et al.'s identified gravity vector; the retrieved feasible parameters
    reproduce it to about 0.1 N m (they are not identical by construction)."""
    robot = panda(gravity=(0.0, 0.0, -9.80665))
    G = robot.gravity_load(PANDA_POSES[pose])
    np.testing.assert_allclose(G, published, rtol=0, atol=0.1)
    # signs and magnitudes of the loaded joints agree
    big = np.abs(published) > 1.0
    assert np.all(np.sign(G[big]) == np.sign(np.asarray(published)[big]))


# -------------------------------------------------------------- Stanford
def test_stanford_table_and_drives():
    arm = stanford_arm()
    assert [l.mass for l in arm.links] == [9.29, 5.01, 4.25, 1.08, 0.63, 0.51]
    assert arm.total_mass == pytest.approx(20.77)
    with pytest.raises(kic.ModelError, match="triangle"):
        kic.Link(0.63, inertia=arm.links[4].inertia)
    dr = stanford_drives()
    np.testing.assert_allclose(dr.reflected_inertia, [0.953, 2.193, 0.782, 0.106, 0.097, 0.020])
    # prismatic joint: the load on joint 3 holding the boom is a force (N)
    q = np.array([0.0, PI / 2, 0.5, 0.0, 0.0, 0.0])      # boom horizontal
    G = arm.gravity_load(q)
    assert abs(G[2]) <= 1e-9                               # gravity normal to the boom
    q = np.array([0.0, 0.0, 0.5, 0.0, 0.0, 0.0])           # boom vertical
    outboard = sum(l.mass for l in arm.links[2:])
    assert arm.gravity_load(q)[2] == pytest.approx(9.81 * outboard, rel=1e-12)


def test_custom_tables():
    """Tables can be replaced (e.g. a payload on the PUMA's last link)."""
    masses = [0.0, 17.4, 4.8, 0.82, 0.34, 0.09 + 2.0]
    base, heavy = puma560(), puma560(masses=masses)
    q = PUMA560_POSES["qn"]
    assert heavy.total_mass == pytest.approx(base.total_mass + 2.0)
    assert heavy.gravity_load(q)[1] > base.gravity_load(q)[1]


# ------------------------------------------------------------- validation
INVALID = [
    (planar_two_link, dict(l1=-1.0)),
    (planar_two_link, dict(l2=0.0)),
    (planar_two_link, dict(m2=-0.5)),
    (planar_two_link, dict(g=float("nan"))),
    (planar_two_link, dict(I1=-0.1)),
    (planar_three_link, dict(l3=-0.2)),
    (planar_three_link, dict(m1=-1.0)),
    (craig_three_link, dict(l1=-0.5)),
    (craig_three_link, dict(m3=-1.0)),
    (craig_three_link, dict(I3=(-0.1, 0.1, 0.1))),
    (fu_two_link, dict(l=-1.0)),
    (fu_two_link, dict(m1=-2.0)),
    (fu_two_link, dict(g=-9.8)),
    (horn_three_dof, dict(l2=-0.5)),
    (horn_three_dof, dict(l3=0.0)),
    (horn_three_dof, dict(m2=-2.0)),
    (horn_three_dof, dict(M3=-0.7)),
    (horn_three_dof, dict(I1=-0.05)),
    (horn_three_dof, dict(delta2=float("inf"))),
    (horn_three_dof, dict(gravity=(0.0, -9.81))),
    (puma560, dict(masses=[0.0, -17.4, 4.8, 0.82, 0.34, 0.09])),
    (puma560, dict(masses=[0.0, 17.4, 4.8])),
    (puma560, dict(a2=float("nan"))),
    (puma560, dict(coms=np.zeros((6, 2)))),
    (stanford_arm, dict(masses=[9.29, 5.01, -4.25, 1.08, 0.63, 0.51])),
    (stanford_arm, dict(d1=float("nan"))),
    (panda, dict(masses=[4.97, 0.65, 3.23, 3.59, 1.23, 1.67, -0.74])),
    (panda, dict(inertias=-np.ones((7, 3)))),
    (panda, dict(flange=float("inf"))),
]


@pytest.mark.parametrize("build, kwargs", INVALID,
                         ids=[f"{b.__name__}-{sorted(k)[0]}" for b, k in INVALID])
def test_invalid_dimensions(build, kwargs):
    with pytest.raises(kic.ModelError):
        build(**kwargs)


def test_error_names_the_argument():
    with pytest.raises(kic.ModelError, match="l1"):
        planar_two_link(l1=-1.0)
    with pytest.raises(kic.ModelError, match="M3"):
        horn_three_dof(M3=-1.0)
    with pytest.raises(ValueError):          # ModelError is a ValueError
        fu_two_link(m2=-1.0)
