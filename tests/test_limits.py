"""Joint limits: description, validation, the batched check against closed
forms, and the OUTSIDE_LIMITS reports of assembly (NaN + status, or an error
listing every failing index)."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import kic
import mechanisms
from kic.limits import ConeLimit, JointLimits, JointRange


def _serial():
    """ground -R- a -P- b -U- c -S- d (no loops)."""
    m = kic.Mechanism()
    for b in "abcd":
        m.add_body(b, mass=1.0, inertia=np.eye(3) * 0.01)
    m.add_joint("r", "R", "ground", "a")
    m.add_joint("p", "P", "a", "b", axis=(1, 0, 0))
    m.add_joint("u", "U", "b", "c")
    m.add_joint("s", "S", "c", "d")
    return m


def test_limits_are_validated_and_name_the_joint():
    m = _serial()
    for joint, value, words in (("r", (1.0, 1.0), "lower < upper"),
                                ("r", (2.0, 1.0), "lower < upper"),
                                ("p", (0.0, np.inf), "finite"),
                                ("p", 0.3, "(lower, upper)"),
                                ("u", 0.0, "(0, pi]"),
                                ("s", 3.5, "(0, pi]"),
                                ("u", (0.1, 0.2), "cone angle")):
        with pytest.raises(kic.ModelError, match=repr(joint)) as info:
            m.set_limits(joint, value)
        assert words in str(info.value)
    with pytest.raises(kic.ModelError, match="unknown joint 'nope'"):
        m.set_limits("nope", (0, 1))
    with pytest.raises(kic.ModelError, match="'u2'.*parallel"):
        m.add_joint("u2", "U", "d", "ground", axes=[(1, 0, 0), (1, 0, 0)], limits=0.5)
    assert "u2" not in m.joints                  # a rejected joint is not added
    assert m.limits == {}


def test_limits_on_the_description_and_the_model():
    m = _serial()
    m.set_limits("r", (-1.0, 2.0))
    m.set_limits("p", (0.1, 0.4))
    m.set_limits("u", 0.5)
    m.set_limits("s", np.pi, axis=(1, 0, 0))
    m.set_limits("u1", (-0.3, 0.3))               # a part of a compound joint
    lim = m.limits
    assert lim["r"] == (-1.0, 2.0) and isinstance(lim["r"], JointRange)
    assert lim["u"] == ConeLimit(0.5, (0.0, 0.0, 1.0))
    assert lim["s"].axis == (1.0, 0.0, 0.0)
    lim["r"] = (0, 1)                             # a copy: the description is unchanged
    assert m.limits["r"] == (-1.0, 2.0)
    m.set_limits("u1", None)
    assert "u1" not in m.limits
    copy = m.copy()
    copy.set_limits("r", None)
    assert "r" in m.limits and "r" not in copy.limits
    m.remove_joint("s")
    assert "s" not in m.limits
    # assigning a whole mapping validates it and keeps the old one on failure
    with pytest.raises(kic.ModelError, match="'p'"):
        m.limits = {"r": (0.0, 1.0), "p": (1.0, 0.0)}
    assert m.limits["r"] == (-1.0, 2.0)


def test_range_check_modulo_two_pi_and_fraction_of_range():
    m = _serial()
    m.set_limits("r", (0.0, 1.0))
    m.set_limits("p", (0.1, 0.5))
    lim = JointLimits(m, m.primitive_joints)
    names = m.primitive_joints
    phi = np.zeros((5, len(names)))
    phi[:, 0] = [0.5 + 2 * np.pi, -0.2, 3.5, 1.0 - 4 * np.pi, 0.9]
    phi[:, 1] = [0.2, 0.5, 0.6, 0.0, 0.3]
    c = lim.check(phi)
    assert c.names == ["r", "p"]
    np.testing.assert_allclose(c.margin[:, 0], [0.5, -0.2, -2.5, 0.0, 0.1], atol=1e-12)
    np.testing.assert_allclose(c.margin[:, 1], [0.25, 0.0, -0.25, -0.25, 0.5], atol=1e-12)
    assert c.ok.tolist() == [True, False, False, False, True]
    assert c.violated(2) == ["r", "p"]
    # a range of a full turn never binds
    m.set_limits("r", (-4.0, 4.0))
    assert JointLimits(m, names).check(phi).within[:, 0].all()


def test_cone_angles_against_rotations():
    m = _serial()
    m.set_limits("u", 0.6)
    m.set_limits("s", 0.9)
    lim = JointLimits(m, m.primitive_joints)
    rng = np.random.default_rng(3)
    phi = rng.uniform(-1.0, 1.0, (50, len(m.primitive_joints)))
    names = m.primitive_joints
    a, b = phi[:, names.index("u1")], phi[:, names.index("u2")]
    s = phi[:, [names.index(f"s{k}") for k in (1, 2, 3)]]
    c = lim.check(phi)
    # U with axes x, y: cos theta = cos a cos b
    np.testing.assert_allclose(c.margin[:, 0], 0.6 - np.arccos(np.cos(a) * np.cos(b)),
                               atol=1e-12)
    # S with axes x, y, z (intrinsic XYZ), reference axis z
    z = Rotation.from_euler("XYZ", s).apply([0.0, 0.0, 1.0])
    np.testing.assert_allclose(c.margin[:, 1], 0.9 - np.arccos(np.clip(z[:, 2], -1, 1)),
                               atol=1e-12)
    assert c.within.any() and not c.within.all()          # the sample crosses both cones
    # batched over any leading shape = one at a time
    many = lim.check(phi.reshape(5, 10, -1)).margin
    one = np.array([lim.check(p).margin for p in phi])
    np.testing.assert_allclose(many.reshape(50, -1), one, rtol=0, atol=0)


def _five_bar_with_crank_limits(lower, upper):
    fb = mechanisms.five_bar()
    mech = fb.mechanism.copy()
    mech.set_limits("crank1", (lower, upper))
    ref = dict(zip(fb.phi_names, fb.reference_phi))
    return fb, mech.model(["crank1", "crank2"], reference=ref)


def test_assemble_reports_outside_limits(each_backend):
    fb, model = _five_bar_with_crank_limits(1.6, 2.2)
    assert model.limits["crank1"] == (1.6, 2.2)
    assert dict(fb.limits) == {}                      # the copy's limits only
    base = fb.reference
    q = np.array([base + [0.0, 0.0], base + [0.2, 0.0], base + [-0.5, 0.0],
                  base + [0.1, 0.05], base + [0.5, 0.0]])
    inside = (q[:, 0] >= 1.6) & (q[:, 0] <= 2.2)
    assert inside.tolist() == [True, True, False, True, False]
    phi, status = model.assemble(q, on_failure="nan")
    assert status.tolist() == [0 if k else int(kic.Status.OUTSIDE_LIMITS) for k in inside]
    assert np.all(np.isnan(phi[~inside])) and np.all(np.isfinite(phi[inside]))
    np.testing.assert_allclose(phi[inside], fb.assemble(q[inside]), atol=1e-12)
    # batched = one at a time, in any batch shape
    single = [model.assemble(qq, on_failure="nan")[1] for qq in q]
    assert [int(s) for s in single] == status.tolist()
    _, st2 = model.assemble(np.stack([q, q]), on_failure="nan")
    assert st2.tolist() == [status.tolist()] * 2
    # raising (the default) lists every failing index
    with pytest.raises(kic.ClosureError) as info:
        model.assemble(q)
    err = info.value
    assert err.indices == [(2,), (4,)]
    assert err.status == [kic.Status.OUTSIDE_LIMITS] * 2
    assert "batch indices (2,), (4,)" in str(err) and "crank1" in str(err)
    assert "outside the joint limits" in str(err)
    with pytest.raises(kic.ClosureError, match=r"batch indices \(0, 2\), \(0, 4\), \(1, 2\)"):
        model.assemble(np.stack([q, q]))
    model.assemble(q[inside])                     # within: no error


def test_stewart_stroke_is_the_legs_range(each_backend):
    sp = mechanisms.stewart_platform(stroke=(0.5, 0.7))
    assert all(sp.limits[f"leg{i}.p"] == (0.5, 0.7) for i in range(6))
    assert len(mechanisms.stewart_platform().limits) == 0
    rng = np.random.default_rng(1)
    q = np.column_stack([rng.uniform(-0.1, 0.1, (40, 2)), rng.uniform(0.35, 0.8, 40),
                         rng.uniform(-0.1, 0.1, (40, 3))])
    _, status = sp.assemble(q, on_failure="nan")
    L = sp.geometry.leg_lengths(q)
    expected = np.where(np.all((L >= 0.5) & (L <= 0.7), -1), 0, int(kic.Status.OUTSIDE_LIMITS))
    assert status.tolist() == expected.tolist()
    assert 0 < np.count_nonzero(expected) < 40
    np.testing.assert_array_equal(status, sp.geometry.status(q))


def test_cone_of_a_joint_closed_as_a_point_is_refused():
    sp = mechanisms.stewart_platform()
    mech = sp.mechanism.copy()
    mech.set_limits("leg0.s", 0.5)
    with pytest.raises(kic.ModelError, match="'leg0.s'"):
        mech.model([kic.BodyPose("platform")], reference=dict(zip(sp.phi_names,
                                                                     sp.reference_phi)))
    # the U cone of a leg is checked: the angle between the leg and the vertical
    mech = sp.mechanism.copy()
    mech.set_limits("leg0.u", 0.6)
    model = mech.model([kic.BodyPose("platform")], guess=sp.guess,
                       reference=dict(zip(sp.phi_names, sp.reference_phi)))
    q = np.array([[0, 0, 0.6, 0, 0, 0], [-0.3, 0, 0.4, 0, 0, 0.0], [0.3, 0, 0.4, 0, 0, 0]])
    _, status = model.assemble(q, on_failure="nan")
    d = sp.geometry.legs(q)[:, 0]
    tilt = np.arccos(d[:, 2] / np.linalg.norm(d, axis=-1))
    assert status.tolist() == np.where(tilt <= 0.6, 0, 5).tolist()
    assert tilt[0] < 0.6 < tilt[1] and tilt[2] < 0.6


def test_range_on_a_joint_closed_as_a_point_is_refused():
    sp = mechanisms.stewart_platform()
    mech = sp.mechanism.copy()
    mech.set_limits("leg2.s1", (-1.0, 1.0))
    with pytest.raises(kic.ModelError, match="'leg2.s1'"):
        mech.model([kic.BodyPose("platform")], reference=dict(zip(sp.phi_names,
                                                                     sp.reference_phi)))
