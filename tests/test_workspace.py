"""Workspace sampling against plain geometry: the five-bar's reach (two
annuli), its modes, the Stewart platform's heights from the leg stroke."""
import numpy as np
import pytest

import kic
import mechanisms
from kic import indices, workspace

TIP = ("coupler1", (0.35, 0.0, 0.0))          # the five-bar's closing joint C


def _cross(a, b):
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _annuli(points, g):
    """Signed distance (m) inside both annuli |l - k| <= r <= l + k (positive inside)."""
    out = np.inf
    for O, l, k in (((0.0, 0.0), g.crank1, g.coupler1), ((g.base, 0.0), g.crank2, g.coupler2)):
        r = np.linalg.norm(points - np.array(O), axis=-1)
        out = np.minimum(out, np.minimum(r - abs(l - k), l + k - r))
    return out


def _elbow_points(q, g):
    A1 = g.crank1 * np.stack([np.cos(q[..., 0]), np.sin(q[..., 0])], -1)
    A2 = np.array([g.base, 0.0]) + g.crank2 * np.stack([np.cos(q[..., 1]),
                                                         np.sin(q[..., 1])], -1)
    return A1, A2


def test_grid_layout():
    P = workspace.grid([0.0, 1.0, 2.0], [5.0, 6.0])
    assert P.shape == (2, 3, 2) and P[1, 2].tolist() == [2.0, 6.0]
    assert workspace.grid([0.0], [1.0, 2.0], [3.0, 4.0, 5.0]).shape == (2, 1, 3, 3)
    with pytest.raises(kic.ModelError):
        workspace.grid([0.0, np.nan], [1.0])


def test_five_bar_reach_is_two_annuli_and_the_mode_is_kept():
    fb = mechanisms.five_bar()
    g = fb.geometry
    x, y = np.linspace(-0.45, 0.65, 34), np.linspace(-0.5, 0.65, 31)
    P = workspace.grid(x, y)
    W = workspace.point_workspace(fb, P, *TIP, inverse=g.inverse)
    assert W.status.shape == (31, 34) and W.q.shape == (31, 34, 2)
    inside = _annuli(P, g)
    clear = np.abs(inside) > 1e-6
    unreached = W.status == kic.Status.UNASSEMBLABLE
    assert np.array_equal(unreached[clear], (inside < 0)[clear])
    assert set(np.unique(W.status[inside > 1e-6])) == {0, int(kic.Status.OTHER_MODE)}
    # where reached: the cranks put the tip at the point, elbows and tip side as named
    ok = W.reachable
    q, C = W.q[ok], P[ok]
    A1, A2 = _elbow_points(q, g)
    np.testing.assert_allclose(np.linalg.norm(C - A1, axis=-1), g.coupler1, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(C - A2, axis=-1), g.coupler2, atol=1e-9)
    assert np.all(np.sign(_cross(A1, C - A1)) == g.elbows[0])
    assert np.all(np.sign(_cross(A2 - [g.base, 0.0], C - A2)) == g.elbows[1])
    assert np.all(_cross(A2 - A1, C - A1) > 0)
    # OTHER_MODE: the named elbows put C on the other side of A1 -> A2
    other = W.status == kic.Status.OTHER_MODE
    assert other.any()
    q_any, _ = g.inverse(P[other], tip_side=0)
    B1, B2 = _elbow_points(q_any, g)
    assert np.all(_cross(B2 - B1, P[other] - B1) < 0)
    assert np.all(np.isnan(W.q[~ok])) and np.all(np.isnan(W.condition[~ok]))
    # the conditioning is that of kic.indices at the same coordinates and length
    assert np.all(W.condition[ok] >= 1.0)
    ref = indices.point_conditioning(fb, q[::17], *TIP, length=W.length).condition
    np.testing.assert_allclose(W.condition[ok][::17], ref, rtol=1e-12)
    bound = 10.0
    assert np.array_equal(W.conditioned(bound), ok & (W.condition <= bound))
    assert 0 < W.conditioned(bound).sum() < ok.sum()
    assert np.array_equal(np.isfinite(W.map(bound)), W.conditioned(bound))
    # batched = one point at a time (given the same length)
    for k in np.flatnonzero(ok.ravel())[::40]:
        one = workspace.point_workspace(fb, P.reshape(-1, 2)[k], *TIP, inverse=g.inverse,
                                        length=W.length)
        assert one.status.shape == () and int(one.status) == 0
        np.testing.assert_allclose(one.condition, W.condition.ravel()[k], rtol=1e-12)


def test_five_bar_crank_limits_shrink_the_workspace():
    fb = mechanisms.five_bar()
    g = fb.geometry
    mech = fb.mechanism.copy()
    mech.set_limits("crank1", (1.2, 2.6))
    model = mech.model(["crank1", "crank2"],
                       reference=dict(zip(fb.phi_names, fb.reference_phi)))
    P = workspace.grid(np.linspace(-0.4, 0.6, 21), np.linspace(-0.1, 0.65, 16))
    free = workspace.point_workspace(fb, P, *TIP, inverse=g.inverse)
    W = workspace.point_workspace(model, P, *TIP, inverse=g.inverse)
    q1 = free.q[..., 0]
    within = (q1 >= 1.2) & (q1 <= 2.6)
    assert np.array_equal(W.reachable, free.reachable & within)
    assert np.array_equal(W.status == kic.Status.OUTSIDE_LIMITS, free.reachable & ~within)
    assert (free.reachable & ~within).any() and W.reachable.any()


def test_five_bar_by_newton_stays_in_reach():
    """Without a closed form: Newton in the tip's coordinates, then the crank model."""
    fb = mechanisms.five_bar()
    g = fb.geometry
    P = workspace.grid(np.linspace(-0.3, 0.5, 6), np.linspace(0.0, 0.6, 5))
    W = workspace.point_workspace(fb, P, *TIP)
    ok = W.reachable
    assert ok.sum() >= 10
    assert np.all(_annuli(P[ok], g) >= -1e-9)
    A1, A2 = _elbow_points(W.q[ok], g)
    C = P[ok]
    np.testing.assert_allclose(np.linalg.norm(C - A1, axis=-1), g.coupler1, atol=1e-8)
    np.testing.assert_allclose(np.linalg.norm(C - A2, axis=-1), g.coupler2, atol=1e-8)
    assert np.all(_cross(A2 - A1, C - A1) > 0)          # the crank model's assembly mode
    assert not W.reachable[_annuli(P, g) < -1e-6].any()


def _stewart_offset(rb, rp, ba, pa):
    """Horizontal distance (m) between a leg's anchors at the home orientation."""
    return np.sqrt(rb ** 2 + rp ** 2 - 2 * rb * rp * np.cos(pa - ba))


def test_stewart_heights_from_the_stroke():
    lo, hi = 0.55, 0.75
    sp = mechanisms.stewart_platform(stroke=(lo, hi))
    rb, rp = np.linalg.norm(sp.anchors[0][0]), np.linalg.norm(sp.anchors[1][0])
    ba = np.radians(15.0)
    pa = np.radians(45.0)
    assert np.isclose(rb, 0.5) and np.isclose(rp, 0.3)       # the builder's defaults
    d = _stewart_offset(rb, rp, ba, pa)
    z_lo, z_hi = np.sqrt(lo ** 2 - d ** 2), np.sqrt(hi ** 2 - d ** 2)
    z = np.linspace(0.05, 1.0, 39)
    W = workspace.pose_workspace(sp, np.column_stack([0 * z, 0 * z, z]))
    clear = (np.abs(z - z_lo) > 1e-6) & (np.abs(z - z_hi) > 1e-6)
    assert np.array_equal(W.reachable[clear], ((z >= z_lo) & (z <= z_hi))[clear])
    assert np.all(W.status[~W.reachable] == kic.Status.OUTSIDE_LIMITS)
    assert W.reachable.sum() >= 5
    q = np.column_stack([0 * z, 0 * z, z, 0 * z, 0 * z, 0 * z])[W.reachable]
    np.testing.assert_array_equal(W.q[W.reachable], q)
    ref = indices.task_conditioning(sp, q, length=W.length).condition
    np.testing.assert_allclose(W.condition[W.reachable], ref, rtol=1e-10)


def test_stewart_positions_at_a_tilt():
    lo, hi = 0.5, 0.72
    sp = mechanisms.stewart_platform(stroke=(lo, hi))
    B, Pp = sp.anchors
    P = workspace.grid(np.linspace(-0.25, 0.25, 9), [0.05], np.linspace(0.35, 0.75, 9))
    yaw = 0.1
    W = workspace.pose_workspace(sp, P, (yaw, 0.0, 0.0))
    Rz = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
    legs = P[..., None, :] + Pp @ Rz.T - B
    L = np.linalg.norm(legs, axis=-1)
    expected = np.all((L >= lo) & (L <= hi), -1)
    assert np.array_equal(W.reachable, expected)
    assert 0 < expected.sum() < expected.size
    assert W.q.shape == P.shape[:-1] + (6,)
    np.testing.assert_allclose(W.q[expected][:, 3], yaw)


def test_bad_input():
    fb = mechanisms.five_bar()
    with pytest.raises(kic.ModelError, match="task components"):
        workspace.point_workspace(fb, np.zeros((3, 3)), *TIP, axes="xyz")
    sp = mechanisms.stewart_platform()
    with pytest.raises(kic.ModelError, match="coordinates"):
        workspace.pose_workspace(sp, np.zeros((3, 3)), (0.0, 0.0))
