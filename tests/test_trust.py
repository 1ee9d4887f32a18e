"""Answers that mean what they say (issue 18, items 1, 3 and 11).

* limits apply to every evaluation that takes a pose, on every path (the
  compiled one-pose path, the compiled batch, the numpy path, design batches,
  indices): ``Status.OUTSIDE_LIMITS``, raised naming the joint, its value, its
  range and the batch index, or NaN + status;
* type I singularities (the edge of the workspace) get a status by the same
  rule and threshold as type II;
* a batch equals its poses asked one by one, bit for bit, whatever their order,
  and revolute joints the closure solves for lie on the reference's branch.
"""
import numpy as np
import pytest

import kic
import kic.indices
import kic.limits
import mechanisms
from helpers import hand_four_bar
from kic.settings import MAX_CONDITION
from mechanisms.geometry import five_bar_inverse

pytestmark = pytest.mark.usefixtures("each_backend")

OUT = int(kic.Status.OUTSIDE_LIMITS)


# ------------------------------------------------------------------ limits
def _stewart_poses():
    """A pose inside the stroke (0.5, 0.7) and one whose legs are 0.94 m."""
    return np.array([[0.0, 0.0, 0.6, 0.0, 0.0, 0.0], [0.0, 0.0, 0.9, 0.0, 0.0, 0.0]])


def test_stroke_applies_to_every_evaluation():
    sp = mechanisms.stewart_platform(stroke=(0.5, 0.7))
    inside, outside = _stewart_poses()
    legs = sp.geometry.leg_lengths(outside)
    assert np.allclose(legs, 0.9435, atol=1e-4)
    z = np.zeros(6)
    calls = {
        "assemble": lambda q: sp.assemble(q),
        "inverse_dynamics": lambda q: sp.inverse_dynamics(q, z, z),
        "forward_dynamics": lambda q: sp.forward_dynamics(q, z, z),
        "actuator_loads": lambda q: sp.actuator_loads(q, z, z, sp.actuators),
        "actuator_jacobian": lambda q: sp.actuator_jacobian(q, sp.actuators),
        "joint_rates": lambda q: sp.joint_rates(q, z),
        "dynamics": lambda q: sp.dynamics(q).I_star,
        "kinematics": lambda q: sp.kinematics(q).phi,
        "gravity_load": lambda q: sp.gravity_load(q),
        "condition": lambda q: sp.condition(q),
        "task_conditioning": lambda q: kic.indices.task_conditioning(sp, q,
                                                                      sp.actuators).condition,
    }
    for name, call in calls.items():
        assert np.all(np.isfinite(call(inside))), name
        with pytest.raises(kic.ClosureError) as info:    # one pose: the compiled fast path
            call(outside)
        msg = str(info.value)
        assert "outside the joint limits" in msg and "'leg0.p' = 0.9435 m" in msg, name
        assert "[0.5, 0.7] m" in msg, name
        assert info.value.status == [kic.Status.OUTSIDE_LIMITS], name
        with pytest.raises(kic.ClosureError, match=r"at batch index \(1,\)") as info:
            call(np.stack([inside, outside]))             # a batch
        assert info.value.indices == [(1,)], name
    q = np.stack([inside, outside, inside])
    zz = np.zeros((3, 6))
    for name, (out, status) in {
            "assemble": sp.assemble(q, on_failure="nan"),
            "inverse_dynamics": sp.inverse_dynamics(q, zz, zz, on_failure="nan"),
            "forward_dynamics": sp.forward_dynamics(q, zz, zz, on_failure="nan"),
            "actuator_loads": sp.actuator_loads(q, zz, zz, sp.actuators, on_failure="nan"),
            "condition": sp.condition(q, on_failure="nan")}.items():
        assert np.asarray(status).tolist() == [0, OUT, 0], name
        out = np.asarray(out).reshape(3, -1)
        assert np.all(np.isnan(out[1])) and np.all(np.isfinite(out[[0, 2]])), name
    # one pose, NaN + status (forward dynamics has a compiled one-pose path for it)
    qdd, status = sp.forward_dynamics(outside, z, z, on_failure="nan")
    assert int(status) == OUT and np.all(np.isnan(qdd))
    c = kic.indices.task_conditioning(sp, q, sp.actuators, on_failure="nan")
    assert np.asarray(c.status).tolist() == [0, OUT, 0]


def test_design_batches_report_outside_limits():
    batch = mechanisms.stewart_designs(rb=[0.5, 0.45], stroke=(0.5, 0.7))
    assert batch.limits is not None and batch.limits["leg3.p"] == (0.5, 0.7)
    q = _stewart_poses()
    for d in range(2):
        legs = batch.model(d).geometry.leg_lengths(q)
        assert np.all(legs[0] < 0.7) and np.all(legs[1] > 0.7)
    res = batch.loads(q, np.zeros(6), np.zeros(6))
    assert res.status.tolist() == [[0, OUT], [0, OUT]]
    assert np.all(np.isnan(res.actuator_loads[:, 1])) and np.all(np.isnan(res.loads[:, 1]))
    assert np.all(np.isnan(res.phi[:, 1])) and np.all(np.isnan(res.inertia[:, 1]))
    assert np.all(np.isfinite(res.actuator_loads[:, 0]))
    # the design batch and the design's model agree
    for d in range(2):
        _, st = batch.model(d).actuator_loads(q, np.zeros((2, 6)), np.zeros((2, 6)),
                                              batch.actuators, on_failure="nan")
        assert st.tolist() == res.status[d].tolist()
    assert mechanisms.stewart_designs().limits is None


def test_violations_name_the_joint_its_value_and_range():
    sp = mechanisms.stewart_platform(stroke=(0.5, 0.7))
    phi = sp.assemble(_stewart_poses()[0])
    assert sp.limits.within(phi) and sp.limits.violations(phi) == []
    phi = phi.copy()
    phi[sp.phi_names.index("leg4.p")] = 0.75
    phi[sp.phi_names.index("leg1.p")] = 0.4
    v = sp.limits.violations(phi)
    assert not sp.limits.within(phi)
    assert [(x.joint, x.value, x.limit, x.unit) for x in v] == [
        ("leg1.p", 0.4, (0.5, 0.7), "m"), ("leg4.p", 0.75, (0.5, 0.7), "m")]   # worst first
    assert v[0].margin == pytest.approx(-0.5) and v[1].margin == pytest.approx(-0.25)
    assert str(v[1]) == "joint 'leg4.p' = 0.75 m outside its range [0.5, 0.7] m"
    with pytest.raises(kic.ModelError, match="finite"):
        sp.limits.violations(np.full(sp.N, np.nan))


def test_one_pose_test_is_the_batched_one():
    m = mechanisms.five_bar().mechanism.copy()
    m.set_limits("crank1", (0.5, 2.0))
    m.set_limits("elbow1", (-3.0, 4.0))            # wider than a turn: never binds
    m.set_limits("tip", (-2.5, -1.0))
    lim = kic.limits.JointLimits(m, m.primitive_joints)
    rng = np.random.default_rng(3)
    phi = rng.uniform(-7.0, 7.0, (400, len(m.primitive_joints)))
    i = [m.primitive_joints.index(n) for n in ("crank1", "tip")]
    phi[:20, i] = [0.5, -1.0]                       # on the bounds
    phi[20:40, i] = [2.0 + 2 * np.pi, -2.5 - 4 * np.pi]
    phi[40, 0] = np.nan
    expected = lim.check(phi).ok
    assert 0 < expected.sum() < len(phi) and expected[:40].all() and not expected[40]
    assert [lim.within(p) for p in phi] == expected.tolist()


def test_stewart_reference_is_the_nominal_pose():
    for h0 in (0.6, 0.45):
        sp = mechanisms.stewart_platform(h0=h0)
        ref = dict(zip(sp.phi_names, sp.reference_phi))
        assert ref["platform.z"] == pytest.approx(h0, abs=1e-12)
        assert all(abs(ref[f"platform.{k}"]) < 1e-12
                   for k in ("x", "y", "yaw", "pitch", "roll"))
        np.testing.assert_allclose(sp.assemble([0, 0, h0, 0, 0, 0]), sp.reference_phi,
                                   atol=1e-12)


# ------------------------------------------------------------------ type I
def _edge_of_reach():
    """Five-bar tips on the circle that crank 1 and coupler 1 reach stretched out,
    and nearer and nearer to it; their crank angles in the default mode."""
    fb = mechanisms.five_bar()
    geo = fb.geometry
    r = geo.crank1 + geo.coupler1
    a = np.linspace(0.8, 1.35, 6)          # crank 2 reaches the tip there too
    gap = np.array([1e-3, 1e-6, 1e-9, 1e-12, 1e-14, 0.0])
    tips = (r * (1 - gap))[:, None] * np.stack([np.cos(a), np.sin(a)], -1)
    cranks, status = five_bar_inverse(geo.lengths, tips, geo.elbows, geo.tip_side)
    assert np.all(status == 0)
    return fb, geo, cranks, tips


def test_type_one_singularity_has_a_status():
    fb, geo, cranks, tips = _edge_of_reach()
    rate = np.tile([0.3, -0.2], (len(tips), 1))
    # the measure of kic.indices (the task point of the crank-angle model)
    c = kic.indices.point_conditioning(fb, cranks, "coupler1", (geo.coupler1, 0, 0),
                                       on_failure="nan")
    singular = ~(np.asarray(c.condition) < MAX_CONDITION)
    # kappa grows as 1 / sqrt(gap): 1.4e4 at 1e-9, 4e5 at 1e-12, 4e6 at 1e-14
    assert singular.tolist() == [False, False, False, False, True, True]
    qd, status = geo.inverse_rates(cranks, tips, rate, on_failure="nan")
    assert status.tolist() == np.where(singular, int(kic.Status.SINGULAR_LOAD), 0).tolist()
    assert np.all(np.isnan(qd[singular])) and np.all(np.isfinite(qd[~singular]))
    with pytest.raises(kic.SingularityError, match=r"type I.*batch indices \(4,\), \(5,\)"):
        geo.inverse_rates(cranks, tips, rate)
    geo.inverse_rates(cranks[:4], tips[:4], rate[:4])          # regular: no error
    # finite differences of the closed-form IK agree where regular
    h = 1e-7
    ahead, _ = five_bar_inverse(geo.lengths, tips[:2] + h * rate[:2], geo.elbows, geo.tip_side)
    back, _ = five_bar_inverse(geo.lengths, tips[:2] - h * rate[:2], geo.elbows, geo.tip_side)
    np.testing.assert_allclose((ahead - back) / (2 * h), qd[:2], rtol=1e-5)
    # the design batches' task: the same rule, the same statuses
    task = mechanisms.five_bar_task(mechanisms.five_bar_designs(), tips, rate, 0 * rate)
    np.testing.assert_allclose(task.condition[0][:5], c.condition[:5], rtol=1e-6)
    assert task.status[0].tolist() == status.tolist()
    assert np.all(np.isnan(task.torques[0][singular]))
    assert np.all(np.isfinite(task.torques[0][~singular]))


# ------------------------------------------------------- batch-mates, branches
def _cases():
    rng = np.random.default_rng(18)
    fb = mechanisms.five_bar()
    base = np.asarray(fb.geometry.reference_cranks())
    five = base + rng.uniform(-0.6, 0.6, (24, 2))
    sp = mechanisms.stewart_platform()
    stew = np.column_stack([rng.uniform(-0.08, 0.08, (16, 2)), rng.uniform(0.5, 0.7, 16),
                            rng.uniform(-0.15, 0.15, (16, 3))])
    crank = rng.permutation(np.linspace(-np.pi, 3 * np.pi, 48))[:, None]
    return (("four-bar", hand_four_bar(), crank),
            ("five-bar", fb, five), ("Stewart", sp, stew))


def test_a_batch_equals_its_poses_alone_bit_for_bit():
    rng = np.random.default_rng(11)
    for name, model, q in _cases():
        alone = np.array([model.assemble(p, on_failure="nan")[0] for p in q])
        ok = np.all(np.isfinite(alone), axis=1)
        assert ok.sum() >= 0.75 * len(q), name
        for order in (np.arange(len(q)), rng.permutation(len(q)), rng.permutation(len(q))):
            phi, _ = model.assemble(q[order], on_failure="nan")
            np.testing.assert_array_equal(phi, alone[order], err_msg=name)
        asm = model.assembly(q)
        np.testing.assert_array_equal(asm.phi[ok], alone[ok], err_msg=name)
        # the dynamics of a batch are those of its poses alone too
        z = np.zeros_like(q)
        T, st = model.inverse_dynamics(q, z, z, on_failure="nan")
        T1 = np.array([model.inverse_dynamics(p, 0 * p, 0 * p, on_failure="nan")[0] for p in q])
        np.testing.assert_array_equal(T, T1, err_msg=name)
        # the compiled one-pose shortcut (one configuration, default on_failure)
        # starts where the batch does: the same answer, bit for bit
        good = st == 0
        fast = np.array([model.inverse_dynamics(p, 0 * p, 0 * p) for p in q[good]])
        np.testing.assert_array_equal(fast, T[good], err_msg=name)
        qd = np.broadcast_to(np.linspace(-0.2, 0.3, q.shape[1]), q.shape)
        tau = np.broadcast_to(np.linspace(0.1, -0.4, q.shape[1]), q.shape)
        # solves of stacked matrices: numpy's LAPACK rounds a stack and a single
        # matrix differently (the joint values agree bit for bit, above)
        same = (np.testing.assert_array_equal if kic.get_backend() == "numba" else
                lambda a, b, err_msg: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12,
                                                                 err_msg=err_msg))
        A = model.forward_dynamics(q[good], qd[good], tau[good])
        same(np.array([model.forward_dynamics(p, v, t) for p, v, t in
                       zip(q[good], np.array(qd[good]), np.array(tau[good]))]), A, err_msg=name)
        if model.actuators:
            L = model.actuator_loads(q[good], qd[good], 0 * q[good], model.actuators)
            same(np.array([model.actuator_loads(p, v, 0 * p, model.actuators) for p, v in
                           zip(q[good], np.array(qd[good]))]), L, err_msg=name)


def test_rows_repeating_a_pose_give_the_numbers_of_the_pose_alone():
    """Several rates or accelerations at one pose (rows repeating the pose before,
    which the compiled batch assembles once): each row's numbers are those of its
    pose alone, bit for bit, failed poses (not assembled, singular) included."""
    rng = np.random.default_rng(21)
    for name, model, q in _cases():
        q = np.repeat(q[:12], 3, axis=0)
        if name == "five-bar":
            q[3:6] = [np.pi, 0.0]      # the couplers stretched (0.2 + 2 x 0.25 = 0.7): singular
        M = q.shape[1]
        qd, qdd = rng.uniform(-0.5, 0.5, q.shape), rng.uniform(-1.0, 1.0, q.shape)
        # (numpy's LAPACK rounds a stack and a single matrix differently)
        same = (np.testing.assert_array_equal if kic.get_backend() == "numba" else
                lambda a, b, err_msg="": np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12,
                                                                    err_msg=err_msg))
        T, st = model.inverse_dynamics(q, qd, qdd, on_failure="nan")
        alone = [model.inverse_dynamics(p, v, a, on_failure="nan") for p, v, a in zip(q, qd, qdd)]
        same(T, np.array([a[0] for a in alone]), err_msg=name)
        np.testing.assert_array_equal(st, np.array([a[1] for a in alone]), err_msg=name)
        assert (st[3:6] != 0).all() if name == "five-bar" else True
        phi, _ = model.assemble(q, on_failure="nan")
        np.testing.assert_array_equal(phi, np.array([model.assemble(p, on_failure="nan")[0]
                                                     for p in q]), err_msg=name)
        good = st == 0
        A = model.forward_dynamics(q[good], qd[good], T[good] + 0.1)
        same(A, np.array([model.forward_dynamics(p, v, t + 0.1) for p, v, t in
                          zip(q[good], qd[good], T[good])]), err_msg=name)
        if model.actuators:
            L = model.actuator_loads(q[good], qd[good], qdd[good], model.actuators)
            same(L, np.array([model.actuator_loads(p, v, a, model.actuators) for p, v, a in
                              zip(q[good], qd[good], qdd[good])]), err_msg=name)
        # one pose, many accelerations: q given once
        Q1 = np.broadcast_to(q[good][0], (5, M))
        T1 = model.inverse_dynamics(Q1, qd[:5], qdd[:5])
        same(T1, np.array([model.inverse_dynamics(q[good][0], v, a)
                           for v, a in zip(qd[:5], qdd[:5])]))


def test_revolute_joints_on_the_reference_branch():
    model = hand_four_bar()
    turn = np.linspace(-np.pi, 3 * np.pi, 97)[:, None]
    phi = model.assemble(turn)
    ref = model.reference_phi
    solved = [model.phi_names.index(n) for n in ("A", "rocker", "B")]
    d = phi[:, solved] - ref[solved]
    assert np.all((d >= -np.pi) & (d < np.pi))
    np.testing.assert_array_equal(phi[:, 0], turn[:, 0])      # the coordinate as given
    # a whole turn of the crank gives the same joint values of the solved joints
    again = model.assemble(turn + 2 * np.pi)
    np.testing.assert_allclose(again[:, solved], phi[:, solved], atol=1e-12)
    # with an explicit warm start, the start's branch
    start = ref + np.array([0.0, 2 * np.pi, 0.0, -2 * np.pi])
    p1 = model.assemble([1.2], start=start)
    d1 = p1[solved] - start[solved]
    assert np.all((d1 >= -np.pi) & (d1 < np.pi))
