"""Closed mechanisms: transfer identities, finite differences along the closure
manifold, energy, composition of transfers, singularities and bad input.

The independent Lagrange-multiplier comparisons are in test_closed_oracle*.py.
"""
import zlib

import numpy as np
import pytest

import kic
import mechanisms
from kic.transfer import Transfer

from helpers import derivative, rel_err, five_bar_stretched, five_bar_gap

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels

H_STEP = 1e-5     # finite-difference step; the closure converges to ~1e-15


def _near(model, rng, scale=0.05):
    q0 = model.reference
    return q0 + scale * rng.uniform(-1, 1, model.dof)


MODELS = {
    "five_bar": (mechanisms.five_bar, 0.1),
    "four_bar": (mechanisms.four_bar, 0.3),
    "slider_crank": (mechanisms.slider_crank, 0.5),
    "bricard": (mechanisms.bricard, 0.05),
    "stewart": (mechanisms.stewart_platform, 0.03),
    "redundant_arm": (mechanisms.redundant_planar_arm, 0.05),
    "two_arms": (mechanisms.two_arm_object, 0.03),
    "four_bar_point_x": (lambda: mechanisms.four_bar(
        coordinate=kic.PointPosition("coupler", (0.2, 0.05, 0.0), axes="x")), 0.01),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def case(request):
    build, scale = MODELS[request.param]
    model = build()
    rng = np.random.default_rng(zlib.crc32(request.param.encode()))   # stable across runs
    return request.param, model, _near(model, rng, scale), rng


def _fd(fn, q, h=H_STEP):
    """Central differences of fn along each coordinate, stacked on a new axis 0, with
    one Richardson step (steps 20h and 10h: truncation O(h^4), round-off ~1e-12/h)."""
    return derivative(fn, q, 10 * h, axis=0, richardson=True)


def _rel(a, b):
    return rel_err(a, b, floor=1e-12, ord=np.inf)


def test_assembly_closes_every_loop(case):
    name, model, q, _ = case
    phi = model.assemble(q)
    res, _ = model.system.residuals(phi[None])
    assert max(np.abs(r).max() for r in res) < 1e-12
    assert np.allclose(phi[model.system.q_idx], q)


def test_transfer_H_and_D_by_finite_differences(case):
    """H^phi_qq from G^phi_q and D^phi_qqq from H^phi_qq, re-solving the closure."""
    name, model, q, _ = case
    tr = model.kinematics(q, 3).transfer                 # one configuration: (N, M, ...)
    G = lambda x: model.kinematics(x, 1).transfer.G             # noqa: E731
    H = lambda x: model.kinematics(x, 2).transfer.H             # noqa: E731
    assert tr.G.shape == (model.N, model.dof)
    assert _rel(np.moveaxis(_fd(G, q), 0, 1), tr.H) < 1e-6
    assert _rel(np.moveaxis(_fd(H, q), 0, 1), tr.D) < 1e-6


def test_body_influence_by_finite_differences(case):
    """A body point's G in q against the motion of the point, and its H."""
    name, model, q, rng = case
    body = sorted(model.system.owner)[-1]
    p = rng.normal(size=3) * 0.1
    kin = model.kinematics(q, 2)
    inf = kin.point(body, p)

    def pos(x):
        F = model.kinematics(x, 1).frame(body)
        return F[:3, :3] @ p + F[:3, 3]

    assert _rel(_fd(pos, q).T, inf.G) < 1e-6
    Gp = lambda x: model.kinematics(x, 1).point(body, p).G      # noqa: E731
    assert _rel(np.moveaxis(_fd(Gp, q), 0, 1), inf.H) < 1e-6


def test_christoffel_identity_and_power(case):
    """sym(P*) = Christoffel symbols of I* in the new coordinates; q'.(q'P*q') = q'I*'q'/2."""
    name, model, q, rng = case
    dyn = model.dynamics(q)
    P = dyn.P_star
    dI = np.moveaxis(_fd(lambda x: model.dynamics(x).I_star, q), 0, -1)   # dI[n, m, l]
    gamma = 0.5 * (dI + np.einsum("nlm->nml", dI) - np.einsum("mln->nml", dI))
    assert _rel(0.5 * (P + np.swapaxes(P, -1, -2)), gamma) < 1e-6
    qd = rng.normal(size=model.dof)
    Idot = np.einsum("nml,l->nm", dI, qd)
    assert abs(qd @ dyn.velocity_term(qd) - 0.5 * qd @ Idot @ qd) < 1e-6 * max(
        1.0, abs(qd @ Idot @ qd))


def test_gravity_load_is_dV_dq(case):
    name, model, q, _ = case
    dV = _fd(lambda x: model.dynamics(x).potential_energy, q)
    assert _rel(model.dynamics(q).gravity_load, dV) < 1e-7


def test_recursive_and_model_torques_agree_and_invert(case):
    """inverse_dynamics (closure accelerations + chain RNEA, no P*) equals
    I* q'' + q'P*q' + gravity; forward dynamics inverts it; batches agree."""
    name, model, q, rng = case
    qd, qdd = rng.normal(size=(2, model.dof))
    tau = model.inverse_dynamics(q, qd, qdd)
    assert _rel(model.dynamics(q).torque(qd, qdd), tau) < 1e-12
    assert _rel(model.forward_dynamics(q, qd, tau), qdd) < 1e-10
    qb = np.stack([q, q + 0.001, q - 0.002])
    tb = model.inverse_dynamics(qb, np.stack([qd] * 3), np.stack([qdd] * 3))
    assert _rel(tb[0], tau) < 1e-12
    assert _rel(tb[2], model.inverse_dynamics(q - 0.002, qd, qdd)) < 1e-12


def test_joint_rates_match_differentiated_assembly(case):
    name, model, q, rng = case
    qd, qdd = rng.normal(size=(2, model.dof))
    phid, phidd = model.joint_rates(q, qd, qdd)
    tr = model.kinematics(q, 2).transfer
    d1, d2 = tr.rates(qd, qdd)
    assert _rel(phid, d1) < 1e-12 and _rel(phidd, d2) < 1e-12
    dphi = _fd(model.assemble, q).T @ qd
    assert _rel(phid, dphi) < 1e-6


def test_point_coordinate_constrains_only_its_axes():
    """A coupler point's x as the coordinate of a four-bar: y and z stay free."""
    fb = mechanisms.four_bar(coordinate=kic.PointPosition("coupler", (0.2, 0.05, 0.0),
                                                          axes="x"))
    q = fb.reference + 0.01
    F = fb.kinematics(q, 1).frame("coupler")
    assert abs((F[:3, :3] @ [0.2, 0.05, 0.0] + F[:3, 3])[0] - q[0]) < 1e-12
    crank = mechanisms.four_bar()
    theta = fb.assemble(q)[fb.phi_names.index("crank")]
    tau = crank.inverse_dynamics([theta], [0.0], [0.0])          # holding torque at the crank
    G = crank.kinematics([theta], 1).point("coupler", (0.2, 0.05, 0.0)).G[0, 0]
    assert abs(fb.inverse_dynamics(q, [0.0], [0.0])[0] - tau[0] / G) < 1e-9 * abs(tau[0] / G)


def test_batched_assembly_continues_along_a_trajectory():
    """Without a closed-form guess, a full crank turn assembles batched (continuation)."""
    m = mechanisms.four_bar().in_coordinates(["crank"])
    q = np.linspace(1.0, 1.0 + 2 * np.pi, 73)[:, None]
    phi = m.assemble(q)
    m.assemble(q[0])
    one = np.array([m.assemble(x) for x in q])          # one call per sample, warm started
    assert np.allclose(np.cos(phi), np.cos(one)) and np.allclose(np.sin(phi), np.sin(one))
    assert np.allclose(np.cos(phi[0]), np.cos(phi[-1]))  # back on the same branch
    # no path is needed: a far crank angle is reached by continuation on the branch
    far = m.assemble(np.array([[1.0], [1.2], [np.pi / 2 + 2.0]]))
    assert np.allclose(far[2], m.assemble(np.array([[np.pi / 2 + 2.0]]))[0])
    rocker = mechanisms.four_bar().in_coordinates(["rocker"])
    r0 = rocker.reference[0]
    with pytest.raises(kic.ClosureError, match=r"batch index \(2,\)") as err:
        rocker.assemble(np.array([[r0], [r0 + 0.01], [0.0]]))   # B out of reach at 0 rad
    assert err.value.index == (2,) and err.value.indices == [(2,)]
    assert err.value.status == [kic.Status.UNASSEMBLABLE]


def test_transfers_compose():
    """phi -> q -> x equals phi -> x: the Stewart model in leg lengths equals
    the platform model transferred by G^q_a = (G^a_q)^-1."""
    sp = mechanisms.stewart_platform()
    act = sp.actuator_model()
    x = np.array([0.02, -0.01, 0.62, 0.05, -0.03, 0.08])
    legs = [sp.phi_names.index(n) for n in sp.actuators]
    a = sp.assemble(x)[legs]
    trq = sp.kinematics(x[None], 3).transfer             # a batch of one: (1, N, M, ...)
    to_legs = Transfer(trq.G[0][legs], trq.H[0][legs], trq.D[0][legs])
    back = to_legs.inverse()                     # q as a function of the leg lengths
    composed = trq.rows(np.arange(sp.N)).then(Transfer(back.G[None], back.H[None],
                                                       back.D[None]))
    direct = act.kinematics(a[None], 3).transfer
    order = [sp.phi_names.index(n) for n in act.phi_names if n in sp.phi_names]
    mine = [act.phi_names.index(n) for n in act.phi_names if n in sp.phi_names]
    for X, Y in ((composed.G, direct.G), (composed.H, direct.H), (composed.D, direct.D)):
        assert _rel(X[0][order], Y[0][mine]) < 1e-9
    Iq = sp.dynamics(x).I_star
    Ia = act.dynamics(a).I_star
    assert _rel(back.G.T @ Iq @ back.G, Ia) < 1e-12
    Pa = back.power(Iq, sp.dynamics(x).P_star)
    sym = lambda P: 0.5 * (P + np.swapaxes(P, -1, -2))           # noqa: E731
    assert _rel(sym(Pa), sym(act.dynamics(a).P_star)) < 1e-9


def test_the_cut_joint_does_not_change_the_model():
    """Opening the five-bar's loop at another joint gives the same model."""
    fb = mechanisms.five_bar()
    q, qd, qdd = np.array([2.0, 1.2]), np.array([0.3, -0.1]), np.array([0.2, 0.5])
    ref = dict(zip(fb.phi_names, fb.assemble(q)))
    for cut in ("elbow2", "crank2", "elbow1"):
        alt = fb.mechanism.model(["crank1", "crank2"], reference=ref, cuts=[cut])
        assert alt.loops == [cut]
        assert _rel(alt.inverse_dynamics(q, qd, qdd), fb.inverse_dynamics(q, qd, qdd)) < 1e-12
        assert _rel(alt.dynamics(q).I_star, fb.dynamics(q).I_star) < 1e-12
        P1, P2 = alt.dynamics(q).P_star, fb.dynamics(q).P_star
        sym = lambda P: P + np.swapaxes(P, -1, -2)                 # noqa: E731
        assert _rel(sym(P1), sym(P2)) < 1e-12


def _spread(phi):
    n = phi.shape[0]
    return (phi[:, 1] - phi[:, 0], np.broadcast_to([-1.0, 1.0], (n, 2)),
            np.zeros((n, 2, 2)), np.zeros((n, 2, 2, 2)))


def _sine(phi):
    x = phi[:, 0]
    return (np.sin(x), np.cos(x)[:, None], -np.sin(x)[:, None, None],
            -np.cos(x)[:, None, None, None])


def test_coordinate_function_is_a_change_of_coordinates():
    """q = (crank1, crank2 - crank1) on the five-bar: T_new = G^T T_old, I*_new = G^T I* G."""
    fb = mechanisms.five_bar()
    m = fb.in_coordinates(["crank1", kic.CoordinateFunction("spread", ["crank1", "crank2"],
                                                            _spread)])
    G = np.array([[1.0, 0.0], [1.0, 1.0]])                   # old = G new
    q_old, qd_old, qdd_old = np.array([2.0, 1.2]), np.array([0.3, -0.2]), np.array([0.1, 0.4])
    q, qd, qdd = (np.linalg.solve(G, x) for x in (q_old, qd_old, qdd_old))
    # agreement to the closure tolerance (1e-12 m/rad), not to the last bit
    assert _rel(m.inverse_dynamics(q, qd, qdd), G.T @ fb.inverse_dynamics(q_old, qd_old,
                                                                           qdd_old)) < 1e-10
    assert _rel(m.dynamics(q).I_star, G.T @ fb.dynamics(q_old).I_star @ G) < 1e-10
    assert _rel(m.forward_dynamics(q, qd, m.inverse_dynamics(q, qd, qdd)), qdd) < 1e-10


def test_nonlinear_coordinate_function_by_finite_differences():
    """q = (crank1, sin(crank2)): the transfer's H and D against differences of G and H."""
    fb = mechanisms.five_bar()
    m = fb.in_coordinates(["crank1", kic.CoordinateFunction("s2", ["crank2"], _sine)])
    q = np.array([2.0, np.sin(1.2)])
    tr = m.kinematics(q, 3).transfer
    G = lambda x: m.kinematics(x, 1).transfer.G              # noqa: E731
    H = lambda x: m.kinematics(x, 2).transfer.H              # noqa: E731
    assert _rel(np.moveaxis(_fd(G, q), 0, 1), tr.H) < 1e-6
    assert _rel(np.moveaxis(_fd(H, q), 0, 1), tr.D) < 1e-6
    rng = np.random.default_rng(3)
    qd, qdd = rng.normal(size=(2, 2))
    assert _rel(m.dynamics(q).torque(qd, qdd), m.inverse_dynamics(q, qd, qdd)) < 1e-12
    with pytest.raises(kic.ModelError, match="unknown joints"):
        fb.in_coordinates(["crank1", kic.CoordinateFunction("x", ["nope"], _sine)])
    bad = kic.CoordinateFunction("b", ["crank2"], lambda phi: (phi[:, 0], phi, phi, phi))
    with pytest.raises(kic.ModelError, match="H must have shape"):
        fb.in_coordinates(["crank1", bad])


def test_free_motion_conserves_energy():
    fb = mechanisms.four_bar()
    sim = kic.simulate(fb, (0.0, 1.0), [1.0], [0.0])
    assert sim.conservative and sim.energy_drift < 1e-6
    assert np.ptp(sim.q[:, 0]) > 0.1       # it did move


def test_leg_rates_are_anchor_velocities_along_the_legs():
    sp = mechanisms.stewart_platform()
    x = np.array([0.03, 0.02, 0.58, -0.06, 0.04, 0.1])
    xd = np.array([0.1, -0.2, 0.05, 0.3, -0.1, 0.2])
    Ga = sp.actuator_jacobian(x, sp.actuators)
    B, P = sp.anchors
    kin = sp.kinematics(x, 1)
    for i in range(6):
        v = kin.point("platform", P[i]).velocity(xd)
        F = kin.frame("platform")
        n = F[:3, :3] @ P[i] + F[:3, 3] - B[i]
        assert abs(Ga[i] @ xd - n @ v / np.linalg.norm(n)) < 1e-12


def test_bricard_rank_deficient_closure_is_reduced():
    br = mechanisms.bricard()
    assert br.mechanism.grubler() == 0 and br.mobility == 1
    assert [l.reduction for l in br.system.loops] == ["svd"] and br.system.loops[0].rank == 5


def test_planar_loops_keep_three_rows():
    fb = mechanisms.five_bar()
    assert [(l.reduction, l.rank) for l in fb.system.loops] == [("fixed", 3)]


def test_condition_grows_towards_a_singularity():
    """The cranks opened symmetrically, ``q = (pi/2 + s, pi/2 - s)``, stretch the
    couplers towards one line (s = pi/2: the elbows 0.7 m apart, the couplers'
    length together): there the closure cannot give the dependent joints.  On
    the way the condition grows without bound, as 1 / sin of the angle between
    the couplers (from the geometry alone: each coupler makes alpha with the
    base, ``cos alpha = (0.1 + 0.25 sin s) / 0.35``)."""
    fb = mechanisms.five_bar(crank1=0.25, crank2=0.25, coupler1=0.35, coupler2=0.35)
    away = np.array([0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4, 1e-4])     # pi/2 - s (rad)
    s = np.pi / 2 - away
    c, status = fb.condition(np.stack([np.pi / 2 + s, np.pi / 2 - s], axis=-1),
                             on_failure="nan")
    assert np.all(status == kic.Status.OK)
    assert np.all(np.diff(c) > 0) and c[0] > 1.0
    assert c[-1] > 1e4                                   # 1e-4 rad from the singularity
    alpha = np.arccos((0.1 + 0.25 * np.sin(s)) / 0.35)
    growth = c * np.sin(2 * alpha)                       # the couplers meet at pi - 2 alpha
    assert np.ptp(growth) < 0.03 * growth[-1]


# ------------------------------------------------------------- bad input
def _crank_slider_mech():
    mech = kic.Mechanism(gravity=(0, -9.81, 0))
    mech.add_body("a", mass=1.0, com=(0.1, 0, 0))
    mech.add_body("b", mass=1.0, com=(0.1, 0, 0))
    return mech


def test_unknown_body_and_disconnected_graph():
    mech = _crank_slider_mech()
    with pytest.raises(kic.ModelError, match="unknown child body 'c'"):
        mech.add_joint("j", "R", "a", "c")
    mech.add_joint("j1", "R", "ground", "a")
    with pytest.raises(kic.ModelError, match=r"\['b'\] are not connected"):
        mech.model(["j1"])
    with pytest.raises(kic.ModelError, match="unknown joint kind 'X'"):
        mech.add_joint("j2", "X", "a", "b")


def test_coordinates_that_do_not_match_the_mobility():
    fb = mechanisms.five_bar()
    with pytest.raises(kic.ModelError, match="do not fix it|do not match the mobility"):
        fb.in_coordinates(["crank1"])
    with pytest.raises(kic.ModelError, match="do not match the mobility"):
        fb.in_coordinates(["crank1", "crank2", "elbow1"])
    with pytest.raises(kic.ModelError, match="not a joint"):
        fb.in_coordinates(["crank1", "nope"])


def test_unreachable_configuration_is_a_closure_error():
    fb = mechanisms.five_bar(coupler1=0.3, coupler2=0.3)
    with pytest.raises(kic.ClosureError) as err:
        fb.assemble([np.pi, 0.0])            # cranks point apart: the couplers cannot meet
    assert "cannot be assembled" in str(err.value)
    four = mechanisms.four_bar()
    m = four.in_coordinates(["rocker"])      # no closed-form guess: Newton reports the loop
    with pytest.raises(kic.ClosureError) as err:
        m.assemble([0.0])                    # the rocker's tip out of the crank's reach
    assert err.value.loop == "B" and err.value.residual > 0


def test_singular_configuration_is_reported():
    """Five-bar type II singularity: the two couplers collinear (fully stretched)."""
    fb = mechanisms.five_bar(base=0.4)
    th1, th2 = five_bar_stretched()          # |A1 A2| = coupler1 + coupler2
    q = np.array([th1, th2])
    with pytest.raises(kic.SingularityError) as err:
        fb.inverse_dynamics(q, [0.1, 0.1], [0.0, 0.0])
    e = err.value
    assert e.condition > fb.max_condition and e.sigma_min > 0
    assert e.where["loops"] == ["tip"] and "elbow1" in e.where["joints"]
    assert "condition number" in str(e) and "'tip'" in str(e)
    # approaching it, the condition number grows like 1/sqrt(distance)
    inside = -np.sign(five_bar_gap([th1, th2 + 1e-3]))                  # the direction that closes the gap
    c = fb.condition(np.stack([q + [0.0, inside * s] for s in (1e-2, 1e-4, 1e-6)]))
    assert np.all(np.diff(c) > 0) and 5 < c[1] / c[0] < 20


def test_singular_configuration_is_located_in_a_large_batch():
    """A singular pose deep in a multi-dimensional batch (processed internally in
    blocks) is reported with its own index in the caller's batch."""
    fb = mechanisms.five_bar(base=0.4)
    singular = five_bar_stretched()
    Q = np.tile(singular + [0.0, 0.3], (30, 100, 1))
    Q[25, 7] = singular                       # flat index 2507: the third block of 1024
    Z = np.zeros_like(Q)
    calls = {"inverse dynamics": lambda: fb.inverse_dynamics(Q, Z, Z),
             "actuator loads": lambda: fb.actuator_loads(Q, Z, Z, fb.actuators),
             "I*": lambda: fb.dynamics(Q).I_star,
             "forward dynamics": lambda: fb.forward_dynamics(Q, Z, Z)}
    for name, call in calls.items():
        with pytest.raises(kic.SingularityError) as err:
            call()
        assert err.value.index == (25, 7), name
        assert str(err.value).endswith("at batch index (25, 7)"), name
        assert "batch index 4" not in str(err.value)     # no block-local index left
    assert fb.assemble(Q).shape == (30, 100, 5)         # the position closes there
    assert fb.condition(Q)[25, 7] > fb.max_condition    # reported, not raised
    with pytest.raises(kic.SingularityError) as err:     # rates are not defined there
        fb.kinematics(Q)
    assert err.value.index == (25, 7)
    Q[25, 7] = [np.pi, 0.0]                   # cranks apart: the couplers cannot meet
    with pytest.raises(kic.ClosureError) as err:
        fb.inverse_dynamics(Q, Z, Z)
    assert err.value.index == (25, 7) and str(err.value).endswith("at batch index (25, 7)")
    assert err.value.residual > 0


def test_stewart_angles_are_radians():
    with pytest.raises(kic.ModelError, match=r"np.radians\(15"):
        mechanisms.stewart_platform(base_half_angle=15)
    sp = mechanisms.stewart_platform(base_half_angle=np.radians(20))
    B, _ = sp.anchors
    assert np.isclose(np.degrees(np.arctan2(B[1, 1], B[1, 0])), 20.0)


def test_bad_rates_shape():
    fb = mechanisms.five_bar()
    with pytest.raises(kic.ModelError, match=r"\(\.\.\., 2\)"):
        fb.inverse_dynamics([2.0, 1.2], [0.0], [0.0, 0.0])
    with pytest.raises(kic.ModelError, match="NaN"):
        fb.inverse_dynamics([2.0, np.nan], [0.0, 0.0], [0.0, 0.0])
