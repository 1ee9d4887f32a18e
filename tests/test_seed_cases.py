"""Numeric cases of the seed documents, with their errata applied.

Sources (the seeds, their closed forms, errata and case labels are stated in
``docs/theory.md``, section 8):

* seed 003, Craig's three-link arm;
* seed 000: A1-A7 (Horn-Hirokawa-Vazirani spatial chain); seed 001: B1-B8
  (two-link planar arm), C1-C4 (three-link planar);
* seed 002: cases A-F, T5-T9, T12, T13, T16, T17 (Fu, Gonzalez & Lee).

Torque convention everywhere: ``tau = M q'' + h + G`` with ``G = +dV/dq``
(kic: ``dyn.I_star``, ``dyn.velocity_term(qd)``, ``dyn.gravity_load``;
``chain.inverse_dynamics`` includes gravity).  Numbers are compared to the
digits they are stated with: ``assert_stated(actual, expected, decimals)``
allows half a unit in the last stated decimal (plus round-off), which is
1e-9 relative or tighter for every 10-12 digit value.  Closed forms of the
notes are checked at random configurations to 1e-12.
"""
from __future__ import annotations

import numpy as np
import pytest

import kic
from helpers import derivative, directional_derivative, max_rel_err
from mechanisms import (craig_three_link, fu_two_link, horn_three_dof, planar_three_link,
                        planar_two_link)

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels

PI = np.pi
G_FU = 9.8062          # Fu-Gonzalez-Lee's g
rng_seed = 19770415


def assert_stated(actual, expected, decimals, what=""):
    """``actual`` equals ``expected`` stated to ``decimals`` decimal places."""
    a = np.asarray(actual, float)
    e = np.asarray(expected, float)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    tol = 0.5 * 10.0 ** (-decimals) * (1 + 1e-9) + 1e-14 * np.maximum(1.0, np.abs(e))
    err = np.abs(a - e)
    assert np.all(err <= tol), (f"{what}: max error {err.max():.3e} exceeds half a unit in "
                                f"decimal {decimals}\nactual=\n{a!r}\nexpected=\n{e!r}")


def assert_close(actual, expected, tol=1e-12, what=""):
    """Closed-form comparison: ``|a - e| <= tol * max(1, |e|)`` elementwise."""
    a = np.asarray(actual, float)
    e = np.asarray(expected, float)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    err = max_rel_err(a, e)
    assert err <= tol, f"{what}: error {err:.3e} > {tol:.1e}\nactual=\n{a!r}\nexpected=\n{e!r}"


def christoffel(P):
    """Symmetric part of each load plane of P* (load index first)."""
    return 0.5 * (P + np.swapaxes(P, -1, -2))


# =========================================================== seed 003: Craig
class TestCraigThreeLink:
    """Seed 003 (corrected, docs/theory.md §8): q = (0.3, -0.5, 0.7), ..."""

    q = np.array([0.3, -0.5, 0.7])
    qd = np.array([0.4, 0.2, -0.1])
    qdd = np.array([0.1, -0.2, 0.3])

    @pytest.fixture(scope="class")
    @classmethod
    def arm(cls):
        return craig_three_link()

    def test_model(self, arm):
        assert arm.dof == 3
        assert arm.total_mass == pytest.approx(4.6 + 2.3 + 1.0)
        assert np.allclose(arm.gravity, (0.0, -9.8, 0.0))

    def test_inertia(self, arm):
        assert_stated(arm.dynamics(self.q).I_star,
                      [[4.348011, 1.649006, 0.1], [1.649006, 0.925, 0.1], [0.1, 0.1, 0.1]], 6, "M")

    def test_symmetric_inertia(self, arm):
        # the seed's hand derivation gives a non-symmetric M: the corrected one is symmetric
        M = arm.dynamics(self.q).I_star
        assert np.abs(M - M.T).max() <= 1e-15

    def test_gravity(self, arm):
        assert_stated(arm.dynamics(self.q).gravity_load, [52.828752, 15.847677, 0.0], 6, "G")
        assert_stated(arm.gravity_load(self.q), [52.828752, 15.847677, 0.0], 6, "G")

    def test_velocity_term(self, arm):
        assert_stated(arm.dynamics(self.q).velocity_term(self.qd),
                      [0.079105, -0.063284, 0.0], 6, "h")

    def test_torque(self, arm):
        expected = [53.042857, 15.794293, 0.02]
        assert_stated(arm.inverse_dynamics(self.q, self.qd, self.qdd), expected, 6, "tau")
        assert_stated(arm.dynamics(self.q).torque(self.qd, self.qdd), expected, 6, "tau")

    def test_tip_and_jacobian(self, arm):
        tip = [0.967702, 0.048425, 0.0]
        assert_stated(arm.tool_frame(self.q)[:3, 3], tip, 6, "tool")
        assert_stated(arm.frames(self.q)[2][:3, 3], tip, 6, "frame 3")
        G = arm.kinematics(self.q).point(2, (0.0, 0.0, 0.0)).G
        assert_stated(G[:2], [[-0.048425, 0.099335, 0.0], [0.967702, 0.490033, 0.0]], 6, "J")
        assert_stated(arm.kinematics(self.q).tool().G[:2], G[:2], 12, "tool J")


# ====================================================== seed 000: Horn (A)
def horn_closed_form(q, qd, I1, m2, l2, m3, l3, M2=0.0, M3=0.0, g=(0.0, 0.0, -9.81)):
    """M, h, G, Gamma of seed 000 (docs/theory.md §8, no offsets)."""
    t1, t2, t3 = q
    s1, c1, s2, c2, s3, c3 = np.sin(t1), np.cos(t1), np.sin(t2), np.cos(t2), np.sin(t3), np.cos(t3)
    s23, c23 = np.sin(t2 + t3), np.cos(t2 + t3)
    A = l2**2 * s2**2 + l2 * l3 * s2 * s23 + l3**2 / 3 * s23**2
    B = l2**2 + l2 * l3 * c3 + l3**2 / 3
    C = l2 * l3 * c3 + 2 * l3**2 / 3
    A_2 = 2 * l2**2 * s2 * c2 + l2 * l3 * (c2 * s23 + s2 * c23) + 2 * l3**2 / 3 * s23 * c23
    A_3 = l2 * l3 * s2 * c23 + 2 * l3**2 / 3 * s23 * c23
    X = l2 * s2 + l3 * s23
    Z = l2 * c2 + l3 * c23
    M = np.zeros((3, 3))
    M[0, 0] = I1 + (m2 / 3 + M2) * l2**2 * s2**2 + m3 * A + M3 * X**2
    M[1, 1] = (m2 / 3 + M2) * l2**2 + m3 * B + M3 * (l2**2 + 2 * l2 * l3 * c3 + l3**2)
    M[1, 2] = M[2, 1] = m3 * C / 2 + M3 * l3 * (l2 * c3 + l3)
    M[2, 2] = m3 * l3**2 / 3 + M3 * l3**2
    a_2 = (2 * m2 / 3 + 2 * M2) * l2**2 * s2 * c2 + m3 * A_2 + 2 * M3 * X * Z
    a_3 = m3 * A_3 + 2 * M3 * X * l3 * c23
    b_3 = -(m3 + 2 * M3) * l2 * l3 * s3
    c_3 = -(m3 / 2 + M3) * l2 * l3 * s3
    d1, d2, d3 = qd
    h = np.array([a_2 * d1 * d2 + a_3 * d1 * d3,
                  -0.5 * a_2 * d1**2 + b_3 * d2 * d3 + c_3 * d3**2,
                  -0.5 * a_3 * d1**2 - 0.5 * b_3 * d2**2])
    Gam = np.zeros((3, 3, 3))
    Gam[0, 0, 1] = Gam[0, 1, 0] = a_2 / 2
    Gam[0, 0, 2] = Gam[0, 2, 0] = a_3 / 2
    Gam[1, 0, 0] = -a_2 / 2
    Gam[1, 1, 2] = Gam[1, 2, 1] = b_3 / 2
    Gam[1, 2, 2] = c_3
    Gam[2, 0, 0] = -a_3 / 2
    Gam[2, 1, 1] = -b_3 / 2
    g1, g2, g3 = g
    mu_s = m2 * l2 / 2 * s2 + m3 * (l2 * s2 + l3 / 2 * s23) + M2 * l2 * s2 + M3 * X
    mu_c = m2 * l2 / 2 * c2 + m3 * (l2 * c2 + l3 / 2 * c23) + M2 * l2 * c2 + M3 * Z
    G = -np.array([-s1 * mu_s * g1 + c1 * mu_s * g2,
                   c1 * mu_c * g1 + s1 * mu_c * g2 - mu_s * g3,
                   (m3 / 2 + M3) * l3 * (c1 * c23 * g1 + s1 * c23 * g2 - s23 * g3)])
    dM = np.zeros((3, 3, 3))          # dM[i, j, k] = dM_ij / dq_k
    dM[0, 0, 1], dM[0, 0, 2] = a_2, a_3
    dM[1, 1, 2] = b_3
    dM[1, 2, 2] = dM[2, 1, 2] = c_3
    return M, h, G, Gam, dM


def horn_offset_parts(q, qd, qdd, l2, l3, delta2, delta3):
    """Per-body torques with offsets (§2.1.5, errata applied), per unit mass.

    Returns ``(tau_link2 / m2, tau_link3 / m3, tau_load / M3)``.
    """
    t1, t2, t3 = q
    d1, d2, d3 = qd
    a1, a2, a3 = qdd
    s2, c2, s3, c3 = np.sin(t2), np.cos(t2), np.sin(t3), np.cos(t3)
    s23, c23 = np.sin(t2 + t3), np.cos(t2 + t3)
    A = l2**2 * s2**2 + l2 * l3 * s2 * s23 + l3**2 / 3 * s23**2
    B = l2**2 + l2 * l3 * c3 + l3**2 / 3
    C = l2 * l3 * c3 + 2 * l3**2 / 3
    A_2 = 2 * l2**2 * s2 * c2 + l2 * l3 * (c2 * s23 + s2 * c23) + 2 * l3**2 / 3 * s23 * c23
    X = l2 * s2 + l3 * s23
    Z = l2 * c2 + l3 * c23
    tau2 = 0.5 * np.array([
        2 * (delta2**2 + l2**2 * s2**2 / 3) * a1 - l2 * delta2 * c2 * a2
        + 4 * l2**2 / 3 * s2 * c2 * d1 * d2 + l2 * delta2 * s2 * d2**2,
        -l2 * delta2 * c2 * a1 + 2 * l2**2 / 3 * a2 - 2 * l2**2 / 3 * s2 * c2 * d1**2,
        0.0])
    tau3 = 0.5 * np.array([
        2 * (A + delta3**2) * a1 - delta3 * (2 * l2 * c2 + l3 * c23) * a2
        - delta3 * l3 * c23 * a3 + 2 * A_2 * d1 * d2 + delta3 * (2 * l2 * s2 + l3 * s23) * d2**2
        + 2 * delta3 * l3 * s23 * d2 * d3 + delta3 * l3 * s23 * d3**2
        + 2 * l3 * c23 * (l2 * s2 + 2 * l3 / 3 * s23) * d3 * d1,
        -delta3 * (2 * l2 * c2 + l3 * c23) * a1 + 2 * B * a2 + C * a3 - A_2 * d1**2
        - 2 * l2 * l3 * s3 * d2 * d3 - l2 * l3 * s3 * d3**2,
        -delta3 * l3 * c23 * a1 + C * a2 + 2 * l3**2 / 3 * a3
        - l3 * c23 * (l2 * s2 + 2 * l3 / 3 * s23) * d1**2 + l2 * l3 * s3 * d2**2])
    load = np.array([
        (X**2 + delta3**2) * a1 - delta3 * Z * a2 - delta3 * l3 * c23 * a3 + 2 * X * Z * d1 * d2
        + delta3 * X * d2**2 + 2 * delta3 * l3 * s23 * d2 * d3 + delta3 * l3 * s23 * d3**2
        + 2 * l3 * c23 * X * d3 * d1,
        -delta3 * Z * a1 + (l2**2 + 2 * l2 * l3 * c3 + l3**2) * a2 + l3 * (l2 * c3 + l3) * a3
        - X * Z * d1**2 - 2 * l2 * l3 * s3 * d2 * d3 - l2 * l3 * s3 * d3**2,
        -delta3 * l3 * c23 * a1 + l3 * (l2 * c3 + l3) * a2 + l3**2 * a3
        - l3 * c23 * X * d1**2 + l2 * l3 * s3 * d2**2])
    return tau2, tau3, load


def horn_offset_gravity(q, m2, l2, m3, l3, M3, delta2, delta3, g):
    """Required gravity torque with offsets, G = -(T_g + T'_g) of §2.1.5."""
    t1, t2, t3 = q
    s1, c1, s2, c2 = np.sin(t1), np.cos(t1), np.sin(t2), np.cos(t2)
    s23, c23 = np.sin(t2 + t3), np.cos(t2 + t3)
    X = l2 * s2 + l3 * s23
    Z = l2 * c2 + l3 * c23
    g1, g2, g3 = g
    Tg = np.array([
        g1 * (-m2 * (l2 / 2 * s1 * s2 + delta2 * c1) - m3 * (l2 * s2 + l3 * s23 / 2) * s1
              - m3 * delta3 * c1)
        + g2 * (m2 * (l2 / 2 * c1 * s2 - delta2 * s1) + m3 * (l2 * s2 + l3 * s23 / 2) * c1
                - m3 * delta3 * s1),
        g1 * (m2 * l2 / 2 * c1 * c2 + m3 * (l2 * c2 + l3 * c23 / 2) * c1)
        + g2 * (m2 * l2 / 2 * s1 * c2 + m3 * (l2 * c2 + l3 * c23 / 2) * s1)
        + g3 * (-m2 * l2 / 2 * s2 - m3 * (l2 * s2 + l3 * s23 / 2)),
        m3 * l3 / 2 * (g1 * c23 * c1 + g2 * c23 * s1 - g3 * s23)])
    Tg_load = M3 * np.array([
        -g1 * (X * s1 + delta3 * c1) + g2 * (X * c1 - delta3 * s1),
        g1 * Z * c1 + g2 * Z * s1 - g3 * X,
        l3 * (g1 * c23 * c1 + g2 * c23 * s1 - g3 * s23)])
    return -(Tg + Tg_load)


A1 = dict(I1=0.05, m2=2.0, l2=0.5, m3=1.5, l3=0.4)
Q_A = np.array([0.3, 0.7, -0.4])
QD_A = np.array([0.5, -0.8, 1.2])
QDD_A = np.array([0.1, 0.2, -0.3])


class TestHornSpatial:
    """Seed 000, cases A: the three-DOF chain of MIT AI Memo 478."""

    def _check(self, arm, M, h, G, tau, K, dec):
        dyn = arm.dynamics(Q_A)
        assert_stated(dyn.I_star, M, dec[0], "M")
        assert_stated(dyn.velocity_term(QD_A), h, dec[1], "h")
        assert_stated(dyn.gravity_load, G, dec[2], "G")
        assert_stated(arm.inverse_dynamics(Q_A, QD_A, QDD_A), tau, dec[3], "tau")
        assert_stated(dyn.torque(QD_A, QDD_A), tau, dec[3], "tau (model)")
        assert_stated(dyn.kinetic_energy(QD_A), K, dec[4], "K")
        assert_stated(arm.kinetic_energy(Q_A, QD_A), K, dec[4], "K")

    def test_A1_rods_only(self):
        arm = horn_three_dof(**A1, gravity=(0, 0, -9.81))
        self._check(arm,
                    [[0.338900944088, 0, 0], [0, 0.897984964868, 0.2181591491],
                     [0, 0.2181591491, 0.08]],
                    [-0.194676307326, -0.131962866112, -0.066109760479],
                    [0, -8.769435357957, -0.869715968204],
                    [-0.160786212917, -8.787248975825, -0.916193898863],
                    0.177885023632, (10, 12, 12, 12, 12))

    def test_A2_point_masses_general_gravity(self):
        arm = horn_three_dof(**A1, M2=0.3, M3=0.7, gravity=(1.0, -2.0, -9.81))
        self._check(arm,
                    [[0.50574247313, 0, 0], [0, 1.517882043188, 0.459107688261],
                     [0, 0.459107688261, 0.192]],
                    [-0.271423335742, -0.226283561873, -0.130447201802],
                    [2.865365480817, -13.430513474283, -1.883305565616],
                    [2.644516392388, -13.490952933996, -1.979531229766],
                    0.246436682231, (11, 12, 12, 12, 12))

    def test_A3_offsets_and_load(self):
        # tests the corrected T'1 (2 delta3 l3 s23, not the memo's 2 delta3 l2 s23)
        arm = horn_three_dof(**A1, M3=0.7, delta2=0.12, delta3=0.2, gravity=(1.0, -2.0, -9.81))
        self._check(arm,
                    [[0.591416240988, -0.324974845178, -0.110819032739],
                     [-0.324974845178, 1.442882043188, 0.459107688261],
                     [-0.110819032739, 0.459107688261, 0.192]],
                    [-0.120931179254, -0.217044970654, -0.130447201802],
                    [2.899896511686, -12.440752796397, -1.883305565616],
                    [2.806357697317, -12.53945114941, -1.99061313304],
                    0.296644421642, (12, 12, 12, 11, 12))

    def test_A4_hand_checkable(self):
        I1, m2, l2, m3, l3 = (A1[k] for k in ("I1", "m2", "l2", "m3", "l3"))
        g = 9.81
        arm = horn_three_dof(**A1, gravity=(0, 0, -g))
        q, qd = [0.0, PI / 2, 0.0], [1.0, 0.0, 0.0]
        dyn = arm.dynamics(q)
        M22 = m2 * l2**2 / 3 + m3 * (l2**2 + l2 * l3 + l3**2 / 3)
        M = np.array([[I1 + M22, 0, 0], [0, M22, m3 * (l2 * l3 / 2 + l3**2 / 3)],
                      [0, m3 * (l2 * l3 / 2 + l3**2 / 3), m3 * l3**2 / 3]])
        assert_close(dyn.I_star, M, 1e-14, "M")
        assert dyn.I_star[0, 0] == pytest.approx(0.971666666666667, abs=1e-14)
        assert dyn.I_star[1, 1] == pytest.approx(0.921666666666667, abs=1e-14)
        assert_stated(dyn.I_star[1:, 1:], [[M22, 0.23], [0.23, 0.08]], 14, "M23, M33")
        assert_close(dyn.velocity_term(qd), np.zeros(3), 1e-14, "h")
        assert_stated(dyn.gravity_load, [0.0, -15.2055, -2.943], 12, "G")
        assert_close(dyn.gravity_load,
                     [0, -g * (m2 * l2 / 2 + m3 * (l2 + l3 / 2)), -g * m3 * l3 / 2], 1e-14)
        # §2.1.6: tip influence coefficients at this configuration (rows x, y, z)
        assert_close(arm.kinematics(q).tool().G,
                     [[0, 0, 0], [l2 + l3, 0, 0], [0, -(l2 + l3), -l3]], 1e-14, "tip G")

    def test_A5_structure(self):
        rng = np.random.default_rng(rng_seed)
        arm = horn_three_dof(**A1, M2=0.3, M3=0.7, gravity=(0, 0, -9.81))
        Q = rng.uniform(-PI, PI, (20, 3))
        dyn = arm.dynamics(Q)
        M = dyn.I_star
        # M12 = M13 = 0 for every q without offsets
        assert np.abs(M[:, 0, 1:]).max() <= 1e-15 and np.abs(M[:, 1:, 0]).max() <= 1e-15
        # G1 = 0 whenever g is along z
        assert np.abs(dyn.gravity_load[:, 0]).max() <= 1e-14
        # symmetric positive definite
        assert np.abs(M - np.swapaxes(M, 1, 2)).max() <= 1e-15
        assert np.linalg.eigvalsh(M).min() > 0
        # arm vertical (theta2 = theta3 = 0): M11 = I1 exactly, with point masses too
        for t1 in (0.0, 0.7, -2.0):
            assert arm.dynamics([t1, 0.0, 0.0]).I_star[0, 0] == pytest.approx(A1["I1"],
                                                                              abs=1e-16)

    @pytest.mark.parametrize("masses", [dict(), dict(M2=0.3, M3=0.7)])
    def test_A5_closed_form_and_christoffel(self, masses):
        rng = np.random.default_rng(rng_seed + 1)
        g = np.array([1.0, -2.0, -9.81])
        arm = horn_three_dof(**A1, **masses, gravity=g)
        for _ in range(8):
            q, qd = rng.uniform(-PI, PI, 3), rng.normal(size=3)
            M, h, G, Gam, dM = horn_closed_form(q, qd, **A1, **masses, g=g)
            dyn = arm.dynamics(q)
            assert_close(dyn.I_star, M, 1e-13, "M")
            assert_close(dyn.velocity_term(qd), h, 1e-13, "h")
            assert_close(dyn.gravity_load, G, 1e-13, "G")
            # the j-k-symmetric part of P* equals the Christoffel symbols (all others 0)
            assert_close(christoffel(dyn.P_star), Gam, 1e-13, "sym P*")
            # q'^T (M' - 2C) q' = 0, C[n, m] = sum_l P*[n, m, l] q'_l
            Mdot = dM @ qd
            C = dyn.P_star @ qd
            assert abs(qd @ (Mdot - 2 * C) @ qd) <= 1e-13 * max(1.0, abs(qd @ Mdot @ qd))

    def test_A5_offset_closed_forms(self):
        """§2.1.5 (errata applied): inertia changes and gravity with offsets."""
        rng = np.random.default_rng(rng_seed + 2)
        p = dict(**A1, M3=0.7, delta2=0.12, delta3=0.2)
        g = np.array([1.0, -2.0, -9.81])
        arm = horn_three_dof(**p, gravity=g)
        m2, l2, m3, l3, M3, d2, d3 = (p[k] for k in ("m2", "l2", "m3", "l3", "M3", "delta2",
                                                      "delta3"))
        for _ in range(8):
            q = rng.uniform(-PI, PI, 3)
            c2, c23 = np.cos(q[1]), np.cos(q[1] + q[2])
            Z = l2 * c2 + l3 * c23
            M0, _, _, _, _ = horn_closed_form(q, np.zeros(3), **A1, M3=M3)
            M = M0.copy()
            M[0, 0] += m2 * d2**2 + (m3 + M3) * d3**2
            M[0, 1] = M[1, 0] = -m2 * l2 * d2 * c2 / 2 - m3 * d3 * (l2 * c2 + l3 * c23 / 2) \
                - M3 * d3 * Z
            M[0, 2] = M[2, 0] = -m3 * d3 * l3 * c23 / 2 - M3 * d3 * l3 * c23
            dyn = arm.dynamics(q)
            assert_close(dyn.I_star, M, 1e-13, "M with offsets")
            assert_close(dyn.gravity_load,
                         horn_offset_gravity(q, m2, l2, m3, l3, M3, d2, d3, g), 1e-13,
                         "G with offsets")

    def test_A6_per_link_torques(self):
        """The memo's T_ij: each body alone (others massless), with offsets."""
        rng = np.random.default_rng(rng_seed + 3)
        l2, l3, d2, d3 = 0.5, 0.4, 0.12, 0.2
        zero_g = (0.0, 0.0, 0.0)
        link2 = horn_three_dof(I1=0.0, m2=2.0, l2=l2, m3=0.0, l3=l3, delta2=d2, delta3=d3,
                               gravity=zero_g)
        link3 = horn_three_dof(I1=0.0, m2=0.0, l2=l2, m3=1.5, l3=l3, delta2=d2, delta3=d3,
                               gravity=zero_g)
        load = horn_three_dof(I1=0.0, m2=0.0, l2=l2, m3=0.0, l3=l3, M3=0.7, delta2=d2,
                              delta3=d3, gravity=zero_g)
        for _ in range(8):
            q, qd, qdd = rng.uniform(-PI, PI, 3), rng.normal(size=3), rng.normal(size=3)
            t2, t3, tl = horn_offset_parts(q, qd, qdd, l2, l3, d2, d3)
            assert_close(link2.inverse_dynamics(q, qd, qdd), 2.0 * t2, 1e-13, "tau_i2")
            assert_close(link3.inverse_dynamics(q, qd, qdd), 1.5 * t3, 1e-13, "T_i3")
            assert_close(load.inverse_dynamics(q, qd, qdd), 0.7 * tl, 1e-13, "T'_i")
        # the memo's printed T'1 (2 delta3 l2 s23 q2' q3') is off by 2 M3 d3 (l2 - l3) s23 q2' q3'
        q, qd = np.array([0.3, 0.7, -0.4]), np.array([0.0, 1.0, 1.0])
        corrected = 0.7 * horn_offset_parts(q, qd, np.zeros(3), l2, l3, d2, d3)[2][0]
        printed = corrected + 2 * 0.7 * d3 * (l2 - l3) * np.sin(q[1] + q[2]) * qd[1] * qd[2]
        tau1 = load.inverse_dynamics(q, qd, np.zeros(3))[0]
        assert_close(tau1, corrected, 1e-13)
        assert abs(tau1 - printed) > 1e-3

    def test_A6_ice_skater(self):
        m2, l2 = 2.0, 0.5
        link2 = horn_three_dof(I1=0.0, m2=m2, l2=l2, m3=0.0, l3=0.4, gravity=(0, 0, 0))
        tau = link2.inverse_dynamics([0.0, PI / 4, 0.0], [1.0, 1.0, 0.0], np.zeros(3))
        assert tau[0] == pytest.approx(m2 * l2**2 / 3, abs=1e-15)

    def test_A7_gravity_as_kic_transpose(self):
        """G = -sum_bodies (dr_c/dq)^T (m g), with dr_c/dq from §2.1.6."""
        rng = np.random.default_rng(rng_seed + 4)
        l2, l3, d2, d3, m2, m3, M3 = 0.5, 0.4, 0.12, 0.2, 2.0, 1.5, 0.7
        arm = horn_three_dof(I1=0.05, m2=m2, l2=l2, m3=m3, l3=l3, M3=M3, delta2=d2,
                             delta3=d3)
        for _ in range(5):
            q = rng.uniform(-PI, PI, 3)
            gvec = rng.normal(size=3) * 5.0
            chain = kic.SerialChain(arm.joints, arm.links, gravity=gvec, tool=arm.tool)
            kin = chain.kinematics(q, order=1)
            s1, c1, s2, c2 = np.sin(q[0]), np.cos(q[0]), np.sin(q[1]), np.cos(q[1])
            s23, c23 = np.sin(q[1] + q[2]), np.cos(q[1] + q[2])

            def kic_link3(s):        # §2.1.6, point at distance s along link 3
                rho, zeta = l2 * s2 + s * s23, l2 * c2 + s * c23
                return np.array([[-rho * s1 - d3 * c1, zeta * c1, s * c23 * c1],
                                 [rho * c1 - d3 * s1, zeta * s1, s * c23 * s1],
                                 [0.0, -rho, -s * s23]])

            G3 = kin.point(2, (0.0, d3, l3 / 2)).G
            GL = kin.point(2, (0.0, d3, l3)).G
            G2 = kin.point(1, (0.0, d2, l2 / 2)).G
            assert_close(G3, kic_link3(l3 / 2), 1e-14, "centroid of link 3")
            assert_close(GL, kic_link3(l3), 1e-14, "load")
            expected = -(m2 * G2.T @ gvec + m3 * G3.T @ gvec + M3 * GL.T @ gvec)
            assert_close(chain.gravity_load(q), expected, 1e-13, "G = -sum G^T m g")
            # rotational influence coefficients: [z, u2, 0] and [z, u2, u2]
            u2 = np.array([-s1, c1, 0.0])
            assert_close(kin.rotation(1).G, np.column_stack([[0, 0, 1], u2, [0, 0, 0]]), 1e-15)
            assert_close(kin.rotation(2).G, np.column_stack([[0, 0, 1], u2, u2]), 1e-15)

    def test_D_frame_invariance(self):
        """Rotating g about z by alpha and shifting theta1 by alpha leaves G unchanged."""
        arm = horn_three_dof(**A1, M3=0.7, delta2=0.12, delta3=0.2,
                             gravity=(1.0, -2.0, -9.81))
        alpha = 0.83
        ca, sa = np.cos(alpha), np.sin(alpha)
        g_rot = np.array([[ca, -sa, 0], [sa, ca, 0], [0, 0, 1]]) @ arm.gravity
        rotated = kic.SerialChain(arm.joints, arm.links, gravity=g_rot, tool=arm.tool)
        q = Q_A
        assert_close(rotated.gravity_load(q + [alpha, 0, 0]), arm.gravity_load(q), 1e-13)


# ================================================= seed 001: two-link (B)
class TestHornTwoLink:
    """Seed 001, cases B: planar two-link arm of uniform rods."""

    q = np.array([0.4, 1.1])
    qd = np.array([0.7, -0.5])

    def test_B1(self):
        arm = planar_two_link()
        dyn = arm.dynamics(self.q)
        assert_stated(dyn.I_star, [[2.120262788092, 0.560131394046],
                                   [0.560131394046, 0.333333333333]], 12, "M")
        assert_stated(dyn.velocity_term(self.qd), [0.200521656014, 0.218345803215], 12, "h")
        det = np.linalg.det(dyn.I_star)
        assert_stated(det, 0.393007084101, 12, "det M")
        assert det == pytest.approx(0.25 * (16 / 9 - np.cos(self.q[1]) ** 2), rel=1e-14)

    def test_B2_decoupling(self):
        arm = planar_two_link()
        t2 = np.arccos(-2 / 3)
        assert_stated(t2, 2.300523983022, 12, "arccos(-2/3)")
        M = arm.dynamics([0.3, t2]).I_star
        assert_close(M, np.diag([1.0, 1 / 3]), 1e-15, "decoupled M")
        assert abs(M[0, 1]) <= 1e-15
        assert arm.dynamics([0.3, t2 + 1e-3]).I_star[0, 1] < 0

    @pytest.mark.parametrize("t2, expected", [(0.0, [[8 / 3, 5 / 6], [5 / 6, 1 / 3]]),
                                              (PI, [[2 / 3, -1 / 6], [-1 / 6, 1 / 3]])])
    def test_B3_extremes(self, t2, expected):
        m, l = 1.7, 0.6
        arm = planar_two_link(l1=l, l2=l, m1=m, m2=m)
        M = arm.dynamics([0.9, t2]).I_star
        assert_close(M, m * l * l * np.array(expected), 1e-14)
        assert np.linalg.det(M) == pytest.approx(7 / 36 * m**2 * l**4, rel=1e-13)

    def test_B4_forward_dynamics(self):
        arm = planar_two_link(g=0.0)
        T = np.array([1.0, 0.5])
        expected = [0.276660212610, 0.380064378656]
        assert_stated(arm.forward_dynamics(self.q, self.qd, T), expected, 12, "qdd")
        assert_stated(arm.dynamics(self.q).acceleration(self.qd, T), expected, 12, "qdd")
        # the memo's inverse formula (m = l = 1)
        t1d, t2d = self.qd
        s2, c2 = np.sin(self.q[1]), np.cos(self.q[1])
        den = 0.5 * (16 / 9 - c2**2)
        T1p = (T[0] + 0.5 * s2 * t2d * (2 * t1d + t2d)) / den
        T2p = (T[1] - 0.5 * s2 * t1d**2) / den
        memo = [2 / 3 * T1p - (2 / 3 + c2) * T2p, -(2 / 3 + c2) * T1p + 2 * (5 / 3 + c2) * T2p]
        assert_close(arm.forward_dynamics(self.q, self.qd, T), memo, 1e-13)

    def test_B5_gravity(self):
        arm = planar_two_link(l1=1.0, l2=0.8, m1=2.0, m2=1.5, g=9.81)
        assert_stated(arm.gravity_load(self.q), [23.005380046937, 0.416359169016], 12, "G")
        c1, c12 = np.cos(0.4), np.cos(1.5)
        assert_close(arm.gravity_load(self.q),
                     9.81 * np.array([(1.0 + 1.5) * c1 + 0.75 * 0.8 * c12, 0.75 * 0.8 * c12]))

    def test_B6_statics(self):
        l1, l2 = 1.0, 0.8
        arm = planar_two_link(l1=l1, l2=l2, m1=2.0, m2=1.5)
        F = np.array([3.0, -2.0])                    # exerted by the tip on the pin
        J = arm.kinematics(self.q).tool().G[:2]
        tau = J.T @ F
        assert_stated(tau, [-5.517544505450, -2.507167490518], 12, "tau = J^T F")
        # the same through kic.Loads: the pin pushes on the tip with -F
        loads = kic.Loads().force(1, np.r_[-F, 0.0], point=(l2, 0.0, 0.0))
        assert_stated(arm.dynamics(self.q).load(loads), tau, 12, "T_L of the pin force")
        # inverse statics (p. 12) recovers F
        t1, t12 = self.q[0], self.q.sum()
        s2 = np.sin(self.q[1])
        u = (l2 * np.cos(t12) * tau[0] - (l1 * np.cos(t1) + l2 * np.cos(t12)) * tau[1]) \
            / (l1 * l2 * s2)
        v = (l2 * np.sin(t12) * tau[0] - (l1 * np.sin(t1) + l2 * np.sin(t12)) * tau[1]) \
            / (l1 * l2 * s2)
        assert_close([u, v], F, 1e-13)
        # det J = l1 l2 s2: the inverse blows up like 1/(l1 l2 s2) as theta2 -> 0
        for t2 in (1.1, 1e-3, 1e-6):
            Jt = arm.kinematics([0.4, t2]).tool().G[:2]
            assert np.linalg.det(Jt) == pytest.approx(l1 * l2 * np.sin(t2), rel=1e-9)

    def test_B7_inverse_kinematics(self):
        l1, l2 = 1.0, 0.8
        arm = planar_two_link(l1=l1, l2=l2, m1=2.0, m2=1.5)
        tip = arm.tool_frame(self.q)[:3, 3]
        assert_stated(tip, [0.977650755337, 1.187414331592, 0.0], 12, "tip")
        other = np.array([1.363964571195, -1.1])
        assert_stated(arm.tool_frame(other)[:3, 3], tip, 11, "second solution")
        # §2.2.1 closed form: the two solutions
        x, y = tip[:2]
        c2 = (x * x + y * y - l1 * l1 - l2 * l2) / (2 * l1 * l2)
        sols = []
        for t2 in (np.arccos(c2), -np.arccos(c2)):
            t1 = np.arctan2(y, x) - np.arctan2(l2 * np.sin(t2), l1 + l2 * np.cos(t2))
            sols.append((t1, t2))
        assert_stated(sols[0], self.q, 11, "elbow 1")
        assert_stated(sols[1], other, 11, "elbow 2")
        # on the boundary r = l1 + l2 only theta2 = 0 reaches it
        r = np.linalg.norm(arm.tool_frame([0.7, 0.0])[:2, 3])
        assert r == pytest.approx(l1 + l2, abs=1e-15)
        assert (r * r - l1 * l1 - l2 * l2) / (2 * l1 * l2) == pytest.approx(1.0, abs=1e-14)

    def test_B8_kinematic_identities(self):
        rng = np.random.default_rng(rng_seed + 5)
        l1, l2 = 1.0, 0.8
        arm = planar_two_link(l1=l1, l2=l2)
        t2 = 1.1
        Q = np.column_stack([rng.uniform(-PI, PI, 7), np.full(7, t2)])
        r2 = (arm.tool_frame(Q)[:, :2, 3] ** 2).sum(axis=1)
        assert_close(r2, np.full(7, l1**2 + 2 * l1 * l2 * np.cos(t2) + l2**2), 1e-14, "r^2")
        # equal links: half-angle form
        eq = planar_two_link(l1=0.7, l2=0.7)
        for t1, t2 in rng.uniform(-PI, PI, (5, 2)):
            x, y = eq.tool_frame([t1, t2])[:2, 3]
            ch = np.cos(t2 / 2)
            assert_close([x, y], [2 * 0.7 * ch * np.cos(t1 + t2 / 2),
                                  2 * 0.7 * ch * np.sin(t1 + t2 / 2)], 1e-14)
        # s1, c1 closed forms
        for t1, t2 in rng.uniform(-PI, PI, (5, 2)):
            x, y = arm.tool_frame([t1, t2])[:2, 3]
            k = l1 + l2 * np.cos(t2)
            r2 = x * x + y * y
            assert_close([(-l2 * np.sin(t2) * x + k * y) / r2, (l2 * np.sin(t2) * y + k * x) / r2],
                         [np.sin(t1), np.cos(t1)], 1e-13)
        # second-order KIC of the tip (§2.2.3) and tip acceleration J q'' + q'^T H q'
        for _ in range(5):
            q, qd, qdd = rng.uniform(-PI, PI, 2), rng.normal(size=2), rng.normal(size=2)
            c1, c12 = np.cos(q[0]), np.cos(q.sum())
            s1, s12 = np.sin(q[0]), np.sin(q.sum())
            Hx = [[-(l1 * c1 + l2 * c12), -l2 * c12], [-l2 * c12, -l2 * c12]]
            Hy = [[-(l1 * s1 + l2 * s12), -l2 * s12], [-l2 * s12, -l2 * s12]]
            tip = arm.kinematics(q).tool()
            assert_close(tip.H[:2], [Hx, Hy], 1e-14, "tip H")
            assert_close(tip.H[2], np.zeros((2, 2)), 1e-15)
            acc = tip.G @ qdd + np.einsum("pmn,m,n->p", np.array([Hx, Hy, np.zeros((2, 2))]),
                                          qd, qd)
            assert_close(tip.acceleration(qd, qdd), acc, 1e-14, "tip acceleration")

    def test_general_closed_form(self):
        """Unequal links and masses (§2.2.3, derived): M, h and gravity."""
        rng = np.random.default_rng(rng_seed + 6)
        l1, l2, m1, m2, g = 0.9, 0.6, 2.5, 1.2, 9.81
        arm = planar_two_link(l1=l1, l2=l2, m1=m1, m2=m2, g=g)
        for _ in range(8):
            q, qd = rng.uniform(-PI, PI, 2), rng.normal(size=2)
            c2, s2 = np.cos(q[1]), np.sin(q[1])
            M = [[m1 * l1**2 / 3 + m2 * (l1**2 + l2**2 / 3 + l1 * l2 * c2),
                  m2 * (l2**2 / 3 + l1 * l2 * c2 / 2)],
                 [m2 * (l2**2 / 3 + l1 * l2 * c2 / 2), m2 * l2**2 / 3]]
            h = [-m2 * l1 * l2 * s2 * (qd[0] * qd[1] + qd[1] ** 2 / 2),
                 m2 * l1 * l2 * s2 * qd[0] ** 2 / 2]
            G = [g * ((m1 / 2 + m2) * l1 * np.cos(q[0]) + m2 * l2 / 2 * np.cos(q.sum())),
                 g * m2 * l2 / 2 * np.cos(q.sum())]
            dyn = arm.dynamics(q)
            assert_close(dyn.I_star, M, 1e-14)
            assert_close(dyn.velocity_term(qd), h, 1e-14)
            assert_close(dyn.gravity_load, G, 1e-14)


# =============================================== seed 001: three-link (C)
class TestHornThreeLink:
    """Seed 001, cases C: planar three-link arm of uniform rods."""

    q = np.array([0.3, 0.9, -0.6])

    def test_C1(self):
        arm = planar_three_link()
        dyn = arm.dynamics(self.q)
        assert_stated(dyn.I_star, [[7.645502008847, 3.902085478545, 1.223669385351],
                                   [3.902085478545, 2.492002281576, 0.746001140788],
                                   [1.223669385351, 0.746001140788, 0.333333333333]], 12, "M")
        assert_stated(dyn.velocity_term([0.4, -0.7, 1.1]),
                      [0.166601156096, 0.366916755027, -0.001767294770], 12, "h")

    def test_C2_zero_configuration(self):
        rng = np.random.default_rng(rng_seed + 7)
        m, l = 1.3, 0.7
        arm = planar_three_link(l1=l, l2=l, l3=l, m1=m, m2=m, m3=m)
        dyn = arm.dynamics(np.zeros(3))
        assert_close(dyn.I_star, m * l * l * np.array([[9, 14 / 3, 4 / 3], [14 / 3, 8 / 3, 5 / 6],
                                                       [4 / 3, 5 / 6, 1 / 3]]), 1e-14)
        for qd in rng.normal(size=(5, 3)):
            assert np.abs(dyn.velocity_term(qd)).max() <= 1e-14

    def test_C3_gravity(self):
        arm = planar_three_link(l1=1.0, l2=0.8, l3=0.3, m1=2.0, m2=1.5, m3=0.5, g=9.81)
        assert_stated(arm.gravity_load(self.q),
                      [32.277523125053, 4.161970250086, 0.607240678670], 12, "G")

    def test_C4_statics_with_tip_torque(self):
        l1, l2, l3 = 1.0, 0.8, 0.3
        arm = planar_three_link(l1=l1, l2=l2, l3=l3, m1=2.0, m2=1.5, m3=0.5)
        kin = arm.kinematics(self.q)
        A = np.vstack([kin.tool().G[:2], kin.rotation(2).G[2]]).T     # A = J^T of (x, y, phi)
        w = np.array([3.0, -2.0, 0.5])                                 # (u, v, tau)
        T = A @ w
        assert_stated(T, [-6.117279406721, -3.320045808485, -0.503379595001], 12, "T")
        assert_stated(np.linalg.det(A), 0.626661527702, 12, "det A")
        assert np.linalg.det(A) == pytest.approx(l1 * l2 * np.sin(self.q[1]), rel=1e-14)
        # the same through kic.Loads (the object pushes back on the hand with -F, -tau)
        loads = kic.Loads().force(2, [-3.0, 2.0, 0.0], point=(l3, 0.0, 0.0)).moment(
            2, [0.0, 0.0, -0.5])
        assert_stated(arm.dynamics(self.q).load(loads), T, 12, "T_L")
        # the adjugate inverse (§2.3) recovers (u, v, tau)
        t1, t12, t123 = np.cumsum(self.q)
        s2, s3, s23 = np.sin(self.q[1]), np.sin(self.q[2]), np.sin(self.q[1] + self.q[2])
        c1, c12, s1, s12 = np.cos(t1), np.cos(t12), np.sin(t1), np.sin(t12)
        inv = np.array([[l2 * c12, -(l1 * c1 + l2 * c12), l1 * c1],
                        [l2 * s12, -(l1 * s1 + l2 * s12), l1 * s1],
                        [l2 * l3 * s3, -(l1 * l3 * s23 + l2 * l3 * s3),
                         l1 * l2 * s2 + l1 * l3 * s23]]) / (l1 * l2 * s2)
        assert_close(inv @ T, w, 1e-13)

    def test_equal_link_closed_forms(self):
        """§2.3 dynamics (equal links, sticks) and gravity, at random states."""
        rng = np.random.default_rng(rng_seed + 8)
        m, l, g = 1.4, 0.55, 9.81
        arm = planar_three_link(l1=l, l2=l, l3=l, m1=m, m2=m, m3=m, g=g)
        k = 0.5 * m * l * l
        for _ in range(8):
            q, qd = rng.uniform(-PI, PI, 3), rng.normal(size=3)
            c2, c3, c23 = np.cos(q[1]), np.cos(q[2]), np.cos(q[1] + q[2])
            s2, s3, s23 = np.sin(q[1]), np.sin(q[2]), np.sin(q[1] + q[2])
            M = k * np.array([[2 * (4 + 3 * c2 + c23 + c3), 10 / 3 + 3 * c2 + c23 + 2 * c3,
                               2 / 3 + c23 + c3],
                              [10 / 3 + 3 * c2 + c23 + 2 * c3, 2 * (5 / 3 + c3), 2 / 3 + c3],
                              [2 / 3 + c23 + c3, 2 / 3 + c3, 2 / 3]])
            d1, d2, d3 = qd
            h = k * np.array([
                -(6 * s2 + 2 * s23) * d1 * d2 - (2 * s3 + 2 * s23) * d1 * d3
                - (3 * s2 + s23) * d2**2 - (2 * s3 + 2 * s23) * d2 * d3 - (s3 + s23) * d3**2,
                (3 * s2 + s23) * d1**2 - 2 * s3 * d1 * d3 - 2 * s3 * d2 * d3 - s3 * d3**2,
                (s3 + s23) * d1**2 + 2 * s3 * d1 * d2 + s3 * d2**2])
            c1, c12, c123 = np.cos(np.cumsum(q))
            G = g * m * l * np.array([2.5 * c1 + 1.5 * c12 + 0.5 * c123,
                                      1.5 * c12 + 0.5 * c123, 0.5 * c123])
            dyn = arm.dynamics(q)
            assert_close(dyn.I_star, M, 1e-14)
            assert_close(dyn.velocity_term(qd), h, 1e-14)
            assert_close(dyn.gravity_load, G, 1e-14)


# ================================================= seed 002: Fu-Gonzalez-Lee
FU_CASES = {
    # name: (m1, m2, l, theta, theta', theta'', D, h, c, tau, decimals (D, h, c, tau))
    "A": (1, 1, 1, (0, 0), (0, 0), (0, 0), [[8 / 3, 5 / 6], [5 / 6, 1 / 3]], (0, 0),
          (19.6124, 4.9031), (19.6124, 4.9031), (14, 14, 12, 12)),
    "B": (1, 1, 1, (PI / 2, 0), (0, 0), (0, 0), [[8 / 3, 5 / 6], [5 / 6, 1 / 3]], (0, 0),
          (0, 0), (0, 0), (14, 14, 12, 12)),
    "C": (1, 1, 1, (0, PI / 2), (1, 1), (1, 1), [[5 / 3, 1 / 3], [1 / 3, 1 / 3]], (-1.5, 0.5),
          (14.7093, 0), (15.2093, 7 / 6), (14, 14, 12, 12)),
    "D": (1, 1, 1, (PI / 6, PI / 3), (1, -2), (0.5, 1.5), [[13 / 6, 7 / 12], [7 / 12, 1 / 3]],
          (0, 0.4330127019), (12.7386274719, 0), (14.6969608052, 1.2246793686),
          (14, 10, 10, 10)),
    "E": (2, 1.5, 0.8, (0.3, -1.1), (0.7, 0.4), (-0.2, 0.9),
          [[2.142118943235, 0.537726138284], [0.537726138284, 0.32]],
          (0.308001263637, -0.209611971086), (22.835668559247, 4.09922719992),
          (23.199199558693, 4.070070001177), (12, 12, 11, 12)),
    "F": (2, 1.5, 0.8, (PI, PI / 4), (-1.3, 2.1), (0.4, -0.7),
          [[2.385489176606, 0.65941125497], [0.65941125497, 0.32]],
          (0.356381817718, 0.573605020899), (-23.772818310603, -4.160418310603),
          (-22.923828700721, -3.547048787717), (11, 12, 12, 12)),
}


class TestFuTwoLink:
    """Seed 002, cases A-F and T5-T9, T12, T13 (errata E2/E3 applied)."""

    @pytest.mark.parametrize("case", sorted(FU_CASES))
    def test_T5_to_T8_cases(self, case):
        m1, m2, l, q, qd, qdd, D, h, c, tau, dec = FU_CASES[case]
        arm = fu_two_link(m1=m1, m2=m2, l=l)
        dyn = arm.dynamics(q)
        assert_stated(dyn.I_star, D, dec[0], f"D (case {case})")                  # T5
        assert_stated(dyn.velocity_term(qd), h, dec[1], f"h (case {case})")      # T6
        assert_stated(dyn.gravity_load, c, dec[2], f"c (case {case})")           # T7
        assert_stated(arm.inverse_dynamics(q, qd, qdd), tau, dec[3], f"tau ({case})")  # T8
        assert_stated(dyn.torque(qd, qdd), tau, dec[3], f"tau ({case}, model)")

    def test_T5_closed_form_and_q1_independence(self):
        rng = np.random.default_rng(rng_seed + 9)
        m1, m2, l = 2.0, 1.5, 0.8
        arm = fu_two_link(m1=m1, m2=m2, l=l)
        for t2 in rng.uniform(-PI, PI, 5):
            C2 = np.cos(t2)
            D = [[m1 * l * l / 3 + 4 / 3 * m2 * l * l + m2 * l * l * C2,
                  m2 * l * l / 3 + m2 * l * l * C2 / 2],
                 [m2 * l * l / 3 + m2 * l * l * C2 / 2, m2 * l * l / 3]]
            Ds = arm.dynamics(np.column_stack([rng.uniform(-PI, PI, 4), np.full(4, t2)])).I_star
            for Dk in Ds:                      # D does not depend on theta1
                assert_close(Dk, D, 1e-14)

    def test_T6_coefficients(self):
        """h_112 = h_121 = h_122 = -m2 l^2 S2 / 2, h_211 = +m2 l^2 S2 / 2, others 0."""
        rng = np.random.default_rng(rng_seed + 10)
        m1, m2, l = 2.0, 1.5, 0.8
        arm = fu_two_link(m1=m1, m2=m2, l=l)
        for q in rng.uniform(-PI, PI, (5, 2)):
            k = 0.5 * m2 * l * l * np.sin(q[1])
            expected = np.zeros((2, 2, 2))
            expected[0, 0, 1] = expected[0, 1, 0] = expected[0, 1, 1] = -k
            expected[1, 0, 0] = k
            assert_close(christoffel(arm.dynamics(q).P_star), expected, 1e-14)

    def test_T7_gravity_sign(self):
        arm = fu_two_link(m1=2.0, m2=1.5, l=0.8)
        up = kic.SerialChain.from_dh([dict(a=0.8), dict(a=0.8)], arm.links,
                                     gravity=(0.0, G_FU, 0.0))
        q = FU_CASES["E"][3]
        assert_stated(up.gravity_load(q), -np.asarray(FU_CASES["E"][8]), 11, "flipped c")
        assert_close(up.gravity_load(q), -arm.gravity_load(q), 1e-15)

    def test_T9_forward_dynamics(self):
        m1, m2, l, q, qd, qdd, D, h, c, tau, dec = FU_CASES["E"]
        arm = fu_two_link(m1=m1, m2=m2, l=l)
        assert_stated(arm.forward_dynamics(q, qd, tau), qdd, 11, "qdd from tau(E)")
        unit = fu_two_link()
        qdd0 = unit.forward_dynamics([0.0, PI / 2], [1.0, 1.0], [0.0, 0.0])
        assert_stated(qdd0, [-9.531975, 8.031975], 12, "free fall")
        assert_close(qdd0, [1.5 - 1.125 * G_FU, -3 + 1.125 * G_FU], 1e-14)

    def test_T12_viscous_damping(self):
        arm = fu_two_link()
        q, qd, qdd = FU_CASES["D"][3:6]
        loads = kic.Loads().damper(0, 0.1).damper(1, 0.2)
        expected = [14.79696080522, 0.82467936856]
        assert_stated(arm.inverse_dynamics(q, qd, qdd, loads), expected, 11, "damped tau")
        assert_stated(arm.dynamics(q).torque(qd, qdd, loads), expected, 11, "damped tau")
        # tau_i gains exactly b_i q'_i
        assert_close(arm.inverse_dynamics(q, qd, qdd, loads) - arm.inverse_dynamics(q, qd, qdd),
                     np.array([0.1, 0.2]) * qd, 1e-13)

    def test_T13_structure(self):
        rng = np.random.default_rng(rng_seed + 11)
        m1, m2, l = 2.0, 1.5, 0.8
        arm = fu_two_link(m1=m1, m2=m2, l=l)
        for _ in range(6):
            q, qd = rng.uniform(-PI, PI, 2), rng.normal(size=2)
            dyn = arm.dynamics(q)
            D, P = dyn.I_star, dyn.P_star
            assert np.abs(D - D.T).max() <= 1e-15
            assert np.linalg.eigvalsh(D).min() > 0
            Gam = christoffel(P)
            assert_close(Gam, np.swapaxes(Gam, 1, 2), 1e-15, "h_ikm = h_imk")
            for i in range(2):
                assert abs(P[i, i, i]) <= 1e-15, "h_iii = 0"
            dD = derivative(lambda x: arm.dynamics(x).I_star, q)       # dI*_ab/dq_k, k last
            for i in range(2):
                assert abs(dD[i, i, i]) <= 1e-8, "dD_ii/dq_i = 0"
            assert np.abs(dD[:, :, 0]).max() <= 1e-8, "D independent of q1"
            # D' - 2C skew-symmetric, C[i, k] = sum_m h_ikm q'_m
            Ddot = dD @ qd
            S = Ddot - 2 * Gam @ qd
            assert np.abs(S + S.T).max() <= 1e-8
            k = m2 * l * l * np.sin(q[1]) * (qd[0] + qd[1] / 2)
            assert_close(S, [[0, k], [-k, 0]], 1e-8, "D' - 2C closed form")
            assert np.linalg.det(D) == pytest.approx(
                m2 * l**4 * (m1 / 9 + m2 / 3 - m2 * np.cos(q[1]) ** 2 / 4), rel=1e-13)

    def test_T16_prismatic_polar_arm(self):
        """theta-d polar arm, vertical plane, gravity -y (Prob. 3.18 type)."""
        m1, m2, r1 = 1.5, 2.0, 0.4
        rows = [dict(theta=0.0, offset=PI / 2, d=0.0, a=0.0, alpha=PI / 2),
                dict(kind="P", theta=0.0, a=0.0, alpha=0.0)]
        arm = kic.SerialChain.from_dh(rows, [kic.Link(m1, com=(0, 0, r1)), kic.Link(m2)],
                                      gravity=(0.0, -G_FU, 0.0))
        q, qd, qdd = np.array([0.3, 0.8]), np.array([0.5, -0.2]), np.array([1.0, 0.3])
        th, d = q
        dyn = arm.dynamics(q)
        assert_close(dyn.I_star, np.diag([m1 * r1**2 + m2 * d**2, m2]), 1e-14, "D")
        assert_close(dyn.velocity_term(qd), [2 * m2 * d * qd[1] * qd[0], -m2 * d * qd[0] ** 2],
                     1e-14, "h")
        assert_close(dyn.gravity_load, [(m1 * r1 + m2 * d) * G_FU * np.cos(th),
                                        m2 * G_FU * np.sin(th)], 1e-14, "c")
        assert_stated(arm.inverse_dynamics(q, qd, qdd), [21.810085495260, 5.995860501125], 12,
                      "tau")

    def test_T17_point_mass_arm(self):
        """Two point masses at the distal ends (Prob. 3.16 type), gravity -y."""
        d1, d2, m1, m2 = 0.7, 0.5, 1.3, 0.9
        arm = kic.SerialChain.from_dh([dict(a=d1), dict(a=d2)], [kic.Link(m1), kic.Link(m2)],
                                      gravity=(0.0, -G_FU, 0.0))
        q, qd, qdd = np.array([0.4, 0.9]), np.array([0.3, -0.6]), np.array([0.5, 0.2])
        C2, S2 = np.cos(q[1]), np.sin(q[1])
        dyn = arm.dynamics(q)
        D12 = m2 * d2**2 + m2 * d1 * d2 * C2
        assert_close(dyn.I_star, [[(m1 + m2) * d1**2 + m2 * d2**2 + 2 * m2 * d1 * d2 * C2, D12],
                                  [D12, m2 * d2**2]], 1e-14, "D")
        assert_close(dyn.velocity_term(qd),
                     [-m2 * d1 * d2 * S2 * (2 * qd[0] * qd[1] + qd[1] ** 2),
                      m2 * d1 * d2 * S2 * qd[0] ** 2], 1e-14, "h")
        C1, C12 = np.cos(q[0]), np.cos(q.sum())
        assert_close(dyn.gravity_load, [(m1 + m2) * G_FU * d1 * C1 + m2 * G_FU * d2 * C12,
                                        m2 * G_FU * d2 * C12], 1e-14, "c")
        assert_stated(arm.inverse_dynamics(q, qd, qdd), [16.021331535835, 1.458027043857], 12,
                      "tau")


# ======================================================= cross-cutting (D)
class TestCrossCutting:
    """Checks common to the seeds (docs/theory.md §8; seed 002 T14): energy, superposition."""

    def test_T14_energy_two_link(self):
        """Free motion from theta = (0.3, -0.4) at rest, m = l = 1: E0 = 3.857402150682579."""
        arm = fu_two_link()
        q0 = np.array([0.3, -0.4])
        E0 = 3.857402150682579
        assert float(arm.potential_energy(q0)) == pytest.approx(E0, rel=1e-15, abs=1e-15)
        assert_close(arm.potential_energy(q0),
                     G_FU * (0.5 * np.sin(0.3) + np.sin(0.3) + 0.5 * np.sin(-0.1)), 1e-15)
        sim = kic.simulate(arm, (0.0, 2.0), q0, np.zeros(2))
        assert sim.energy[0] == pytest.approx(E0, rel=1e-14)
        assert sim.conservative
        assert sim.energy_drift < 1e-7

    def test_energy_balance_spatial(self):
        """tau = 0 conserves K + P for the offset chain with a load, general g."""
        arm = horn_three_dof(**A1, M2=0.3, M3=0.7, delta2=0.12, delta3=0.2,
                             gravity=(1.0, -2.0, -9.81))
        sim = kic.simulate(arm, (0.0, 1.0), Q_A, QD_A)
        assert sim.conservative
        assert sim.energy_drift < 1e-7
        assert sim.energy[0] == pytest.approx(
            float(arm.kinetic_energy(Q_A, QD_A) + arm.potential_energy(Q_A)), rel=1e-14)

    def test_power_balance(self):
        """tau . q' = dE/dt along any motion: q'.h = q'^T I*' q' / 2 (finite differences)."""
        rng = np.random.default_rng(rng_seed + 12)
        arm = horn_three_dof(**A1, M3=0.7, delta2=0.12, delta3=0.2, gravity=(1.0, -2.0, -9.81))
        for _ in range(4):
            q, qd, qdd = rng.uniform(-PI, PI, 3), rng.normal(size=3), rng.normal(size=3)
            tau = arm.inverse_dynamics(q, qd, qdd)
            E = lambda t: float(arm.kinetic_energy(q + qd * t + qdd * t * t / 2, qd + qdd * t)
                                + arm.potential_energy(q + qd * t + qdd * t * t / 2))
            dEdt = directional_derivative(E, 0.0, 1.0)
            assert tau @ qd == pytest.approx(dEdt, rel=1e-7, abs=1e-8)

    def test_superposition(self):
        """Gravity computed separately and added (both seeds use this)."""
        rng = np.random.default_rng(rng_seed + 13)
        arm = horn_three_dof(**A1, M2=0.3, M3=0.7, gravity=(1.0, -2.0, -9.81))
        free = kic.SerialChain(arm.joints, arm.links, gravity=(0.0, 0.0, 0.0), tool=arm.tool)
        for _ in range(4):
            q, qd, qdd = rng.uniform(-PI, PI, 3), rng.normal(size=3), rng.normal(size=3)
            assert_close(arm.inverse_dynamics(q, qd, qdd),
                         free.inverse_dynamics(q, qd, qdd) + arm.gravity_load(q), 1e-13)
            dyn = arm.dynamics(q)
            assert_close(arm.inverse_dynamics(q, qd, qdd),
                         dyn.I_star @ qdd + dyn.velocity_term(qd) + dyn.gravity_load, 1e-13)
