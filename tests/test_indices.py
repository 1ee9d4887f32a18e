"""Conditioning indices (kic.indices): closed forms, an independent Gosselin-Angeles
formulation of the five-bar, Plücker lines of the Stewart platform, scale invariance,
batches, errors."""
import numpy as np
import pytest

import kic
import kic.indices as ki
import mechanisms
from helpers import five_bar_stretched

FIVE_BAR = dict(base=0.2, crank1=0.25, crank2=0.25, coupler1=0.35, coupler2=0.35)


# ----------------------------------------------------------------- pure functions
def two_r_jacobian(l1, l2, t1, t2):
    """Position Jacobian of a planar 2R arm's tip (m/rad), by hand."""
    t12 = t1 + t2
    return np.array([[-l1 * np.sin(t1) - l2 * np.sin(t12), -l2 * np.sin(t12)],
                     [l1 * np.cos(t1) + l2 * np.cos(t12), l2 * np.cos(t12)]])


def two_r_condition(l1, l2, t2):
    """kappa_2 of the 2R Jacobian from sigma1^2 + sigma2^2 = ||J||_F^2 and
    sigma1 sigma2 = |det J| = l1 l2 |sin t2|."""
    F2 = l1**2 + 2 * l2**2 + 2 * l1 * l2 * np.cos(t2)
    r = F2 / (l1 * l2 * abs(np.sin(t2)))
    return (r + np.sqrt(r**2 - 4)) / 2


def test_two_r_arm_condition_closed_form():
    arm = mechanisms.planar_two_link(l1=np.sqrt(2) * 0.3, l2=0.3)
    elbows = np.array([0.3, 1.0, 2.0, 3 * np.pi / 4, 2.8])
    q = np.stack([np.full_like(elbows, 0.4), elbows], -1)
    G = arm.kinematics(q, order=1).point(1, (0.3, 0, 0)).G[..., :2, :]
    assert np.allclose(G, [two_r_jacobian(np.sqrt(2) * 0.3, 0.3, 0.4, t) for t in elbows])
    kappa = ki.condition_number(G)
    closed = np.array([two_r_condition(np.sqrt(2) * 0.3, 0.3, t) for t in elbows])
    regular = np.arange(5) != 3             # the formula cancels (sqrt(r^2 - 4)) at isotropy
    assert np.allclose(kappa[regular], closed[regular], rtol=1e-12)
    assert np.isclose(kappa[3], 1.0, rtol=1e-12)          # isotropic: l1 = sqrt(2) l2, 135 deg
    assert np.allclose(ki.distance_to_singularity(G), 1 / kappa, rtol=1e-12)
    # Yoshikawa: w = |det J| = l1 l2 |sin t2| for a square Jacobian
    assert np.allclose(ki.manipulability(G), np.sqrt(2) * 0.09 * np.abs(np.sin(elbows)))
    # the elbow stretched: singular (inf), and the distance goes to 0 linearly
    assert ki.condition_number(two_r_jacobian(0.4, 0.3, 0.7, 0.0)) == np.inf
    d = ki.distance_to_singularity(np.array([two_r_jacobian(0.4, 0.3, 0.7, e)
                                             for e in (1e-3, 1e-4)]))
    assert 9 < d[0] / d[1] < 11


def test_pure_functions_batch_equals_single_and_nan_is_data(rng):
    J = rng.normal(size=(3, 4, 2, 3))
    J[1, 2] = np.nan
    for f in (ki.condition_number, ki.distance_to_singularity, ki.manipulability):
        out = f(J)
        assert out.shape == (3, 4)
        assert np.isnan(out[1, 2]) and np.all(np.isfinite(out[0]))
        single = np.array([[f(J[i, j]) for j in range(4)] for i in range(3)])
        assert np.array_equal(np.isnan(out), np.isnan(single))
        assert np.allclose(out[~np.isnan(out)], single[~np.isnan(single)], rtol=1e-14)
    sv = ki.singular_values(J)
    assert np.all(np.diff(sv[0], axis=-1) <= 0)                   # largest first
    dets = np.sqrt(np.linalg.det(J[0] @ J[0].swapaxes(-1, -2)))
    assert np.allclose(ki.manipulability(J[0]), dets, rtol=1e-12)
    assert np.all(ki.manipulability(J[0].swapaxes(-1, -2)) == 0)  # m > n


def test_homogeneous_jacobian_units_and_scale():
    J = np.array([[0.2, 3.0, 0.5], [4.0, 0.7, 0.1]])      # rows (t, r), columns (r, t, r)
    H = ki.homogeneous_jacobian(J, "tr", "rtr", 0.5)
    # m/rad entries divided by L, rad/m multiplied, m/m and rad/rad unchanged
    assert np.allclose(H, [[0.4, 3.0, 1.0], [4.0, 0.35, 0.1]])
    s = 1e-3                                                # the same matrix at 1/1000 size
    Js = J * np.array([[s, 1, s], [1, 1 / s, 1]])
    assert np.allclose(ki.homogeneous_jacobian(Js, "tr", "rtr", 0.5 * s), H, rtol=1e-14)
    # batched lengths broadcast over the batch
    Hb = ki.homogeneous_jacobian(np.stack([J, J]), "tr", "rtr", [0.5, 1.0])
    assert np.allclose(Hb[0], H) and np.allclose(Hb[1], ki.homogeneous_jacobian(J, "tr", "rtr", 1))


def test_characteristic_length_maximises_the_global_conditioning_index(rng):
    J = rng.normal(size=(5, 3, 3)) * [1.0, 1.0, 0.05]       # mixed: rows t t r, cols r r t
    L = ki.best_conditioning_length(J, "ttr", "rrt")
    gci = lambda L: ki.distance_to_singularity(                      # noqa: E731
        ki.homogeneous_jacobian(J, "ttr", "rrt", L)).mean()
    grid = L * np.exp(np.linspace(-3, 3, 2001))
    assert gci(L) >= max(gci(x) for x in grid) - 1e-12
    assert gci(L) > gci(L * 1.001) and gci(L) > gci(L / 1.001)
    # scale covariance: the same linkage at 1/100 size has L / 100, to rounding
    s = 1e-2
    k = np.array([1, 1, 0])[:, None] - np.array([0, 0, 1])[None, :]
    assert np.isclose(ki.best_conditioning_length(J * s**k, "ttr", "rrt"), L * s, rtol=1e-13)
    # per-design lengths along a kept batch axis
    both = ki.best_conditioning_length(np.stack([J, J * s**k]), "ttr", "rrt", axis=1)
    assert both.shape == (2,) and np.allclose(both, [L, L * s], rtol=1e-13)
    # condition independent of L: the RMS scale of the entries
    P = rng.normal(size=(4, 2, 2))
    rms = np.sqrt(np.mean(P**2, axis=(-2, -1)))
    assert np.isclose(ki.best_conditioning_length(P, "tt", "rr"), np.median(rms))
    assert np.isclose(ki.best_conditioning_length(1 / P, "rr", "tt"), 1 / np.median(
        np.sqrt(np.mean(P**-2, axis=(-2, -1)))))


def test_errors_name_the_part_at_fault():
    with pytest.raises(kic.ModelError, match="row_kinds"):
        ki.homogeneous_jacobian(np.eye(2), "t", "rr", 1.0)
    with pytest.raises(kic.ModelError, match=r"col_kinds\[1\]"):
        ki.homogeneous_jacobian(np.eye(2), "tt", "rx", 1.0)
    with pytest.raises(kic.ModelError, match="length"):
        ki.homogeneous_jacobian(np.eye(2), "tt", "rr", -1.0)
    with pytest.raises(kic.ModelError, match="shape"):
        ki.condition_number([1.0, 2.0])
    with pytest.raises(kic.ModelError, match="rows"):
        ki.singularity_measures(np.eye(2), np.eye(3), "tt", "rrr", 1.0)
    with pytest.raises(kic.ModelError, match="axis"):
        ki.best_conditioning_length(np.ones((2, 2, 2)), "tt", "rr", axis=3)
    fb = mechanisms.five_bar()
    with pytest.raises(kic.ModelError, match="task components"):
        ki.point_conditioning(fb, [2.0, 1.1], "coupler1", (0.35, 0, 0), axes="xyz")
    with pytest.raises(kic.ModelError, match="actuators"):
        ki.task_conditioning(fb, [2.0, 1.1], ["crank1"])


# ------------------------------------------------------------------------ five-bar
def five_bar_cranks(C, dims=FIVE_BAR):
    """Crank angles putting the tip at C with both elbows bent outwards, and the
    elbow angles (the crank-coupler angle at each elbow), by hand."""
    O = [np.zeros(2), np.array([dims["base"], 0.0])]
    out, elbows = [], []
    for i, sign in ((0, 1.0), (1, -1.0)):
        l, k = dims[f"crank{i + 1}"], dims[f"coupler{i + 1}"]
        d = C - O[i]
        r = np.hypot(*d)
        a = np.arccos(np.clip((l**2 + r**2 - k**2) / (2 * l * r), -1, 1))
        out.append(np.arctan2(d[1], d[0]) + sign * a)
        elbows.append(np.arccos(np.clip((l**2 + k**2 - r**2) / (2 * l * k), -1, 1)))
    return np.array(out), np.pi - np.array(elbows)


def five_bar_relation(fb, q, dims=FIVE_BAR):
    """Gosselin and Angeles' J_x, J_q of the five-bar from |C - A_i| = k_i:
    (C - A_i) . C' = (C - A_i) . (z x (A_i - O_i)) theta_i'."""
    kin = fb.kinematics(q, order=1)
    C = kin.frame("coupler1")[..., :2, :] @ [dims["coupler1"], 0, 0, 1]
    A = [kin.frame(f"coupler{i}")[..., :2, 3] for i in (1, 2)]
    O = [np.zeros(2), np.array([dims["base"], 0.0])]
    Jx = np.stack([C - A[0], C - A[1]], -2)
    cross = [(A[i] - O[i])[..., 0] * (C - A[i])[..., 1] - (A[i] - O[i])[..., 1] * (C - A[i])[..., 0]
             for i in (0, 1)]
    Jq = -np.stack([np.stack([cross[0], 0 * cross[0]], -1),
                    np.stack([0 * cross[1], cross[1]], -1)], -2)
    return Jx, Jq, C


def test_five_bar_near_its_workspace_boundary_and_at_a_regular_pose():
    fb = mechanisms.five_bar(**FIVE_BAR)
    reach = FIVE_BAR["crank1"] + FIVE_BAR["coupler1"]
    direction = np.array([np.cos(1.2), np.sin(1.2)])
    tips = np.stack([0.4 * direction + [0.06, 0.0],               # regular
                     reach * (1 - 1e-5) * direction])               # elbow 1 nearly stretched
    q = np.stack([five_bar_cranks(C)[0] for C in tips])
    elbows = np.stack([five_bar_cranks(C)[1] for C in tips])
    Jx, Jq, C = five_bar_relation(fb, q)
    assert np.allclose(C, tips, atol=1e-12)                         # the intended assembly
    c = ki.point_conditioning(fb, q, "coupler1", (FIVE_BAR["coupler1"], 0, 0))
    assert c.condition[0] < 5 and c.condition[1] > 50
    # type I, not type II (the measures depend on L: with the model's own length the
    # regular pose scores 0.40, 0.56 with the length fitted to these two poses)
    assert c.type_one[1] < 0.05 < 0.3 < c.type_one[0]
    assert c.type_two[1] > 0.3 and c.type_two[0] > 0.3
    assert abs(elbows[1, 0]) < 0.05 < abs(elbows[0]).min()
    # the independent Gosselin-Angeles formulation gives the same measures
    t1, t2 = ki.singularity_measures(Jx, Jq, "tt", "rr", c.length)
    assert np.allclose(c.type_one, t1, rtol=1e-9) and np.allclose(c.type_two, t2, rtol=1e-9)
    # and its direct-kinematic Jacobian gives the task Jacobian: G = -J_x^-1 J_q
    G = -np.linalg.solve(Jx, Jq)
    assert np.allclose(c.task_jacobian, G / c.length, rtol=1e-9)
    assert np.allclose(c.condition, ki.condition_number(G), rtol=1e-9)
    assert np.allclose(c.manipulability, np.abs(np.linalg.det(G)) / c.length**2, rtol=1e-9)
    assert not c.singular.any()


def test_five_bar_exactly_at_a_type_one_singularity():
    """Elbow 1 stretched: the task Jacobian loses rank (its inverse does not exist);
    the measures stay finite and say type I."""
    fb = mechanisms.five_bar(**FIVE_BAR)
    C = (FIVE_BAR["crank1"] + FIVE_BAR["coupler1"]) * np.array([np.cos(1.3), np.sin(1.3)])
    q, elbows = five_bar_cranks(C)
    assert abs(elbows[0]) < 1e-6
    c = ki.point_conditioning(fb, q, "coupler1", (FIVE_BAR["coupler1"], 0, 0), length=0.25)
    # rank lost to rounding (whether condition is inf is up to the last digits)
    assert c.singular and c.condition > 1e12 and c.inverse_condition < 1e-12
    assert c.type_one < 1e-12
    assert np.isnan(c.type_two)          # the other leg's equation is lost in G there
    assert c.manipulability < 1e-12
    # the independent relation still knows leg 2: type II is far (couplers not aligned)
    Jx, Jq, _ = five_bar_relation(fb, q)
    t1, t2 = ki.singularity_measures(Jx, Jq, "tt", "rr", 0.25)
    assert t1 < 1e-12 and t2 > 0.3


def test_five_bar_type_two_approach():
    """Couplers nearly collinear (the direct-kinematic singularity, docs/closed.md
    section 10): type II -> 0 like the square root of the distance, type I stays."""
    wide = dict(FIVE_BAR, base=0.4)
    fb = mechanisms.five_bar(**wide)
    th1, th2 = five_bar_stretched()
    q = np.stack([np.full(3, th1), th2 + np.array([0.3, 1e-2, 1e-4])], -1)
    c = ki.point_conditioning(fb, q, "coupler1", (0.35, 0, 0), length=0.25)
    assert np.all(np.diff(c.type_two) < 0) and c.type_two[2] < 0.02
    assert 5 < c.type_two[1] / c.type_two[2] < 20                   # sqrt(100) = 10
    assert np.all(c.type_one > 0.3)
    assert np.all(np.diff(c.condition) > 0)
    Jx, Jq, _ = five_bar_relation(fb, q, wide)
    t1, t2 = ki.singularity_measures(Jx, Jq, "tt", "rr", c.length)
    assert np.allclose(c.type_one, t1, rtol=1e-8) and np.allclose(c.type_two, t2, rtol=1e-6)


def test_five_bar_indices_are_scale_invariant():
    """Defect b: condition() gave 7.8 at full size and 75.5 at 1/10; these indices
    do not move."""
    q = np.array([[2.0, 1.1], [np.pi / 2 + 0.3, np.pi / 2 - 0.3], [2.2, 0.8]])
    ref = None
    for s in (1.0, 0.1, 1e-3):
        fb = mechanisms.five_bar(**{k: v * s for k, v in FIVE_BAR.items()})
        c = ki.point_conditioning(fb, q, "coupler1", (0.35 * s, 0, 0))
        vals = np.stack([c.condition, c.type_one, c.type_two, c.manipulability,
                         c.inverse_condition])
        if ref is None:
            ref, L = vals, c.length
        else:
            assert np.allclose(vals, ref, rtol=1e-9, atol=0)
            assert np.isclose(c.length, L * s, rtol=1e-9)


def test_five_bar_batch_equals_single():
    fb = mechanisms.five_bar(**FIVE_BAR)
    q = np.array([[[2.0, 1.1], [2.1, 1.0], [1.9, 1.2]], [[2.2, 0.8], [2.0, 0.9], [1.8, 1.0]]])
    c = ki.point_conditioning(fb, q, "coupler1", (0.35, 0, 0), length=0.25)
    assert c.condition.shape == (2, 3) and c.jacobian.shape == (2, 3, 2, 2)
    for idx in np.ndindex(2, 3):
        one = ki.point_conditioning(fb, q[idx], "coupler1", (0.35, 0, 0), length=0.25)
        for name in ("condition", "type_one", "type_two", "manipulability"):
            assert np.isclose(getattr(c, name)[idx], getattr(one, name), rtol=1e-12)


# ------------------------------------------------------------------------- Stewart
def plucker_jacobian(rb, rp, ba, pa, h):
    """Leg-rate Jacobian of the Stewart platform at (0, 0, h, 0, 0, 0), by hand: leg i's
    rate is u_i . (v + w x p_i) = [u_i, p_i x u_i] . (v, w); at zero angles
    (yaw', pitch', roll') = (w_z, w_y, w_x)."""
    ab = np.array([np.radians(120 * k) + s * ba for k in range(3) for s in (-1, 1)])
    ap = np.array([np.radians(120 * k) + s * pa for k in range(3) for s in (-1, 1)])
    B = np.stack([rb * np.cos(ab), rb * np.sin(ab), 0 * ab], -1)
    P = np.stack([rp * np.cos(ap), rp * np.sin(ap), 0 * ap], -1)
    d = P + [0, 0, h] - B
    u = d / np.linalg.norm(d, axis=-1, keepdims=True)
    m = np.cross(P, u)
    return np.concatenate([u, m[:, ::-1]], axis=-1)


def test_stewart_singular_design_is_reported_singular():
    x = np.array([[0, 0, 0.6, 0, 0, 0], [0.05, -0.03, 0.55, 0.1, -0.05, 0.08]])
    same = mechanisms.stewart_platform(base_half_angle=np.radians(30),
                                       plat_half_angle=np.radians(30))
    good = mechanisms.stewart_platform()
    bad = ki.task_conditioning(same, x)
    ok = ki.task_conditioning(good, x)
    assert bad.singular.all() and np.all(bad.condition > 1e12)
    assert np.all(bad.type_two < 1e-12) and np.all(bad.inverse_condition < 1e-12)
    assert np.all(bad.type_one > 0.1)                   # prismatic legs: never type I
    assert np.all(ki.task_conditioning(same, x, length=0.5).type_one > 0.1)
    assert not ok.singular.any() and np.all(ok.condition < 20)
    assert np.all(ok.type_two > 0.1) and np.all(ok.type_one > 0.1)
    # the leg Jacobian from Plücker lines, homogenised with the same length
    J = plucker_jacobian(0.5, 0.3, np.radians(15), np.radians(45), 0.6)
    assert np.allclose(good.actuator_jacobian(x[0], good.actuators), J, atol=1e-10)
    H = ki.homogeneous_jacobian(J, "tttttt", "tttrrr", ok.length)
    assert np.isclose(ok.condition[0], ki.condition_number(H), rtol=1e-8)
    t1, t2 = ki.singularity_measures(-J, np.eye(6), "tttrrr", "tttttt", ok.length)
    assert np.isclose(ok.type_one[0], t1, rtol=1e-8) and np.isclose(ok.type_two[0], t2,
                                                                     rtol=1e-8)


def test_stewart_indices_are_scale_invariant_and_batched():
    x = np.array([[0, 0, 0.6, 0, 0, 0], [0.1, 0.05, 0.55, 0.1, 0.05, -0.1]])
    ref = None
    for s in (1.0, 0.1, 1e-3):
        sp = mechanisms.stewart_platform(rb=0.5 * s, rp=0.3 * s, h0=0.6 * s)
        # the design's length scaled with it (here the base radius)
        c = ki.task_conditioning(sp, x * [s, s, s, 1, 1, 1], length=0.5 * s)
        vals = np.stack([c.condition, c.type_one, c.type_two, c.manipulability])
        if ref is None:
            ref = vals
        else:
            assert np.allclose(vals, ref, rtol=1e-9, atol=0)
    sp = mechanisms.stewart_platform()
    # by default the model's own length: a pose's numbers never depend on its batch-mates
    one = ki.task_conditioning(sp, x[1])
    both = ki.task_conditioning(sp, x)
    assert both.length == one.length == sp.characteristic_length
    for name in ("condition", "type_one", "type_two", "manipulability"):
        assert getattr(both, name)[1] == getattr(one, name)


# ------------------------------------------------------------- one definition (issue 18)
def test_one_definition_of_conditioning_and_one_threshold():
    """indices, design batches and the max_condition test of actuator_loads give one
    number per pose (dimensionless with the model's characteristic length) and flip
    to singular at one threshold, the model's max_condition."""
    from kic.designs import DesignBatch
    sp = mechanisms.stewart_platform()
    x = np.array([[0, 0, 0.6, 0, 0, 0], [0.05, -0.03, 0.55, 0.1, -0.05, 0.08],
                  [0, 0, 0.6, np.pi / 2 - 1e-3, 0, 0]])          # near yaw = pi/2: poor
    c = ki.task_conditioning(sp, x)
    zero = np.zeros((3, 6))
    batch = DesignBatch.from_models([sp]).loads(x, zero, zero, actuators=sp.actuators)
    np.testing.assert_allclose(batch.actuation_condition[0], c.condition, rtol=1e-10)
    assert 5e3 < c.condition[2] < 5e4 and not c.singular.any()
    sp.actuator_loads(x, zero, zero, sp.actuators)             # all below the threshold
    sp.max_condition = 5e3                                     # the same rule flips together
    c = ki.task_conditioning(sp, x, on_failure="nan")
    assert c.singular.tolist() == [False, False, True]
    assert c.status.tolist() == [kic.Status.OK, kic.Status.OK, kic.Status.SINGULAR_LOAD]
    with pytest.raises(kic.SingularityError):
        sp.actuator_loads(x[2], zero[0], zero[0], sp.actuators)


def test_a_pose_near_a_singularity_alone_equals_it_among_others():
    sp = mechanisms.stewart_platform()
    near = np.array([0, 0, 0.6, np.pi / 2 - 1e-6, 0, 0])
    centre = np.array([0, 0, 0.6, 0, 0, 0])
    alone = ki.task_conditioning(sp, near, on_failure="nan")
    mixed = ki.task_conditioning(sp, np.stack([centre, near, centre]), on_failure="nan")
    assert alone.condition > 1e6 and alone.status == kic.Status.SINGULAR_LOAD
    for name in ("condition", "type_one", "type_two", "manipulability", "status"):
        assert getattr(mixed, name)[1] == getattr(alone, name), name
    fb = mechanisms.five_bar(**FIVE_BAR)
    q = np.array([[2.0, 1.1], [2.3, 0.9]])
    one = ki.point_conditioning(fb, q[1], "coupler1", (0.35, 0, 0))
    two = ki.point_conditioning(fb, q, "coupler1", (0.35, 0, 0))
    assert two.condition[1] == one.condition and two.length == one.length


def test_indices_return_failures_as_data():
    sp = mechanisms.stewart_platform(stroke=(0.5, 0.7))
    x = np.array([[0, 0, 0.6, 0, 0, 0], [0, 0, 0.9, 0, 0, 0]])     # legs of 0.94 m: too long
    with pytest.raises(kic.KicError):
        ki.task_conditioning(sp, x)
    c = ki.task_conditioning(sp, x, on_failure="nan")
    assert c.status.tolist() == [kic.Status.OK, kic.Status.OUTSIDE_LIMITS]
    assert np.isfinite(c.condition[0]) and np.isnan(c.condition[1])
    assert np.isnan(c.jacobian[1]).all() and not c.singular[1]
    fb = mechanisms.five_bar(**{**FIVE_BAR, "coupler1": 0.2, "coupler2": 0.2})
    q = np.array([fb.reference, [np.pi, 0.0]])   # then cranks 0.7 m apart, couplers 0.4 m
    with pytest.raises(kic.KicError):
        ki.point_conditioning(fb, q, "coupler1", (0.2, 0, 0))
    c = ki.point_conditioning(fb, q, "coupler1", (0.2, 0, 0), on_failure="nan")
    assert c.status[0] == kic.Status.OK and c.status[1] != kic.Status.OK
    assert np.isfinite(c.condition[0]) and np.isnan(c.condition[1])
    with pytest.raises(kic.ModelError, match="on_failure"):
        ki.point_conditioning(fb, q, "coupler1", (0.2, 0, 0), on_failure="skip")
