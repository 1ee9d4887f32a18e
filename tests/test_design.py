"""Design studies (issue 9): five-bar modes and inverse kinematics, the builder's
reference found from the mode, the Stewart platform's leg kinematics, and the
examples' quick runs.

Independent evidence: the five-bar's holding torques against the virtual work
of gravity computed from plain geometry (central differences of the potential
energy, no kic); the closed-form inverse kinematics against kic's Newton
assembly in tip coordinates and against the assembled tip frame; the closed-
form crank rates against kic's influence coefficients and finite differences;
the leg lengths against the assembled prismatic joints.
"""
from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path

import numpy as np
import pytest

import kic
import mechanisms
from mechanisms.geometry import FIVE_BAR_HOME, FiveBarGeometry

ROOT = Path(__file__).resolve().parents[1]
MODES = [(e1, e2, s) for e1 in (1, -1) for e2 in (1, -1) for s in (1, -1)]


def tip_of(model, q):
    """The tip C (..., 2) from kic's kinematics (the frame of coupler 1)."""
    F = model.kinematics(q, 1).frame("coupler1")
    return (F @ [model.geometry.coupler1, 0.0, 0.0, 1.0])[..., :2]


def elbow_signs(model, q):
    """(elbow1, elbow2, tip side) by the cross-product definitions, from kic's frames."""
    kin = model.kinematics(q, 1)
    g = model.geometry
    O1, O2 = np.zeros(2), np.array([g.base, 0.0])
    A1 = kin.frame("coupler1")[..., :2, 3]
    A2 = kin.frame("coupler2")[..., :2, 3]
    C = tip_of(model, q)
    cross = lambda a, b: a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]     # noqa: E731
    return np.stack([np.sign(cross(A1 - O1, C - A1)), np.sign(cross(A2 - O2, C - A2)),
                     np.sign(cross(A2 - A1, C - A1))], -1).astype(int)


def holding_torque_by_virtual_work(geo: FiveBarGeometry, q, side, masses, g=9.81, h=1e-6):
    """dV/dq by central differences of the potential energy, from closed-form
    positions only (the linkage's own geometry, no kic model)."""
    m1, m2, n1, n2, mt = masses

    def V(c):
        C, _ = geo.forward(c, side)
        A1 = geo.crank1 * np.array([np.cos(c[0]), np.sin(c[0])])
        A2 = np.array([geo.base, 0.0]) + geo.crank2 * np.array([np.cos(c[1]), np.sin(c[1])])
        y = [(m1, A1[1] / 2), (m2, A2[1] / 2), (n1, (A1[1] + C[1]) / 2),
             (n2, (A2[1] + C[1]) / 2), (mt, C[1])]
        return g * sum(m * yy for m, yy in y)

    E = np.eye(2) * h
    return np.array([(V(q + E[k]) - V(q - E[k])) / (2 * h) for k in range(2)])


# --------------------------------------------------------------- defect a
def test_named_mode_gives_the_torques_of_that_assembly():
    """Issue 9 defect a: the tip at (0.1, 0.45) with elbows (+1, -1) (the cranks
    cross) and tip side -1.  The crank angles come from the inverse kinematics,
    the holding torques from the model built in that mode: +/-3.606 N m; the
    default model (tip side +1, the old "up") assembles those cranks with the
    tip at (0.1, -0.208) and answers +/-3.05 N m, and says so."""
    fb = mechanisms.five_bar(mode=(1, -1, -1))
    assert fb.geometry.mode == (1, -1, -1) and fb.mode == (1,)
    q, status = fb.geometry.inverse([0.1, 0.45])
    assert status == kic.Status.OK
    tau = fb.inverse_dynamics(q, [0.0, 0.0], [0.0, 0.0])
    assert np.allclose(tau, [3.606, -3.606], atol=5e-4), tau
    assert np.allclose(tip_of(fb, q), [0.1, 0.45], atol=1e-12)
    # the answer names its mode, by the joints and by the cross products
    assert fb.geometry.modes(fb.assemble(q)).tolist() == [1, -1, -1]
    assert elbow_signs(fb, q).tolist() == [1, -1, -1]
    # independent: virtual work of gravity on the closed-form geometry
    masses = (1.0, 1.0, 0.8, 0.8, 0.5)
    assert np.allclose(tau, holding_torque_by_virtual_work(fb.geometry, q, -1, masses),
                       atol=1e-6)
    # the same cranks in the other assembly: another tip, another answer, named
    up = mechanisms.five_bar()
    assert np.allclose(tip_of(up, q), [0.1, -0.2083886], atol=1e-6)
    assert np.allclose(up.inverse_dynamics(q, [0, 0], [0, 0]), [3.050, -3.050], atol=5e-4)
    assert up.geometry.modes(up.assemble(q))[2] == 1
    # asking for these elbows on the other tip side is reported, not switched
    q2, st2 = up.geometry.inverse([0.1, 0.45], elbows=(1, -1))
    assert st2 == kic.Status.OTHER_MODE and np.all(np.isnan(q2))
    # with failures as data, a batch names each pose's outcome
    tau_b, st_b = fb.inverse_dynamics(np.stack([q, q]), np.zeros(2), np.zeros(2),
                                      on_failure="nan")
    assert st_b.tolist() == [0, 0] and np.allclose(tau_b[1], tau)


def test_task_circle_in_the_named_mode():
    """The circle of 0.1 m diameter about (0.1, 0.45) in 0.5 s, 100 points, in the
    crossed mode: every pose reachable in the mode, rates from the closed form,
    torques finite, each pose's mode reported."""
    fb = mechanisms.five_bar(mode=(1, -1, -1))
    t = np.linspace(0.0, 0.5, 100, endpoint=False)
    w, r = 4 * np.pi, 0.05
    u = np.stack([np.cos(w * t), np.sin(w * t)], -1)
    X, Xd, Xdd = np.array([0.1, 0.45]) + r * u, r * w * u[:, ::-1] * [-1, 1], -r * w * w * u
    q, status = fb.geometry.inverse(X)
    assert np.all(status == kic.Status.OK)
    qd, qdd = fb.geometry.inverse_rates(q, X, Xd, Xdd)
    tau, st = fb.inverse_dynamics(q, qd, qdd, on_failure="nan")
    assert np.all(st == kic.Status.OK) and np.all(np.isfinite(tau))
    assert np.all(fb.geometry.modes(fb.assemble(q)) == [1, -1, -1])
    assert np.abs(tau).max() > 3.606            # the motion adds to the holding torques


# --------------------------------------------------------------- defect c
def test_the_reported_design_builds():
    fb = mechanisms.five_bar(base=0.2, crank1=0.3, crank2=0.3, coupler1=0.1, coupler2=0.1)
    assert fb.geometry.tip_side == 1 and fb.mode == (-1,)
    # the old fixed reference does not assemble this design at all
    assert np.all(np.isnan(fb.geometry.forward(FIVE_BAR_HOME)[0]))
    assert fb.geometry.regularity(fb.reference_phi) > 0.1
    # the crank pair assembles, with the tip where the closed form puts it
    C, st = fb.geometry.forward([1.3, 1.84])
    assert st == kic.Status.OK and np.allclose(tip_of(fb, [1.3, 1.84]), C, atol=1e-12)


def random_designs(n, seed=7):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        L = rng.uniform(0.05, 0.5, 5)
        if L.max() < L.sum() - L.max():         # the loop closes somewhere
            out.append(L)
    return np.array(out)


def test_no_feasible_design_is_rejected_and_the_mode_sign_relation():
    """300 random feasible designs build on both tip sides; the reference is in the
    requested tip side and regular; the crank model's mode is -tip_side."""
    designs = random_designs(300)
    old_rejects = 0
    for L in designs:
        for side in (1, -1):
            fb = mechanisms.five_bar(*L, tip_side=side)
            found = fb.geometry.modes(fb.reference_phi)
            assert found[2] == side and fb.geometry.mode == tuple(found)
            assert fb.mode == (-side,)
            assert fb.geometry.regularity(fb.reference_phi) > 0
        geo = FiveBarGeometry(*L)
        old_rejects += bool(np.isnan(geo.forward(FIVE_BAR_HOME)[0]).any())
    assert old_rejects >= 3          # the sample holds designs the fixed reference refused


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_of_the_default_linkage(mode):
    fb = mechanisms.five_bar(mode=mode)
    assert fb.geometry.modes(fb.reference_phi).tolist() == list(mode)
    assert elbow_signs(fb, fb.reference).tolist() == list(mode)
    assert fb.mode == (-mode[2],)


def test_a_mode_that_does_not_exist_is_refused():
    """A short crank 1 and long couplers: C never lies on the right of A1 -> A2 with
    both elbows +1 (checked by 200,000 random crank pairs, independently of the
    builder's grid); the builder says so instead of building another mode."""
    L = (0.063, 0.106, 0.352, 0.341, 0.327)
    geo = FiveBarGeometry(*L)
    Q = np.random.default_rng(0).uniform(-np.pi, np.pi, (200_000, 2))
    m = geo.modes(geo.joint_values(Q, -1))
    assert not np.any(np.all(m == [1, 1, -1], axis=1))
    assert np.any(np.all(m == [1, -1, -1], axis=1))
    with pytest.raises(kic.ModelError, match=r"no configuration in the mode elbows=\(1, 1\)"):
        mechanisms.five_bar(*L, mode=(1, 1, -1))
    assert mechanisms.five_bar(*L, mode=(1, -1, -1)).geometry.mode == (1, -1, -1)
    with pytest.raises(kic.ModelError, match="not the requested"):
        mechanisms.five_bar(home=FIVE_BAR_HOME, mode=(1, -1, -1))
    with pytest.raises(kic.ModelError, match="closes nowhere"):
        mechanisms.five_bar(base=1.0, crank1=0.1, crank2=0.1, coupler1=0.1, coupler2=0.1)


def test_bad_mode_arguments():
    for kw in (dict(mode=(1, 2, 1)), dict(elbows=(1,)), dict(tip_side=0),
               dict(branch="up", tip_side=-1), dict(branch="sideways"),
               dict(mode=(1, 1, 1), elbows=(-1, 1)), dict(coordinates="joints"),
               dict(home=(0.0, np.nan))):
        with pytest.raises(kic.ModelError):
            mechanisms.five_bar(**kw)
    g = mechanisms.five_bar().geometry
    with pytest.raises(kic.ModelError, match=r"\(\.\.\., 2\)"):
        g.inverse([0.1, 0.2, 0.3])
    with pytest.raises(kic.ModelError, match="tip_side"):
        g.inverse([0.1, 0.4], tip_side=2)


def test_branch_stays_an_alias_of_the_tip_side():
    assert mechanisms.five_bar(branch="down").geometry.tip_side == -1
    assert mechanisms.five_bar(branch="up").mode == mechanisms.five_bar().mode
    q = np.array([2.0, 1.1])
    assert np.allclose(mechanisms.five_bar(branch="down").assemble(q),
                       mechanisms.five_bar(tip_side=-1).assemble(q), atol=1e-12)


# ------------------------------------------------- inverse kinematics checks
def workspace_points(model, n, seed=3):
    """Tips within 0.1 m of the model's reference tip (some out of reach)."""
    rng = np.random.default_rng(seed)
    C, _ = model.geometry.forward(model.reference_phi[:2])
    return C + rng.uniform(-0.1, 0.1, (n, 2))


@pytest.mark.parametrize("mode", MODES)
def test_inverse_against_forward_and_the_assembled_tip(mode):
    fb = mechanisms.five_bar(mode=mode)
    geo = fb.geometry
    X = workspace_points(fb, 400)
    q, st = geo.inverse(X)
    ok = st == kic.Status.OK
    assert ok.sum() > 20 and np.all(np.isnan(q[~ok]))
    reach = (st == kic.Status.OK) | (st == kic.Status.OTHER_MODE)
    assert np.all(geo.inverse(X, tip_side=0)[1][reach] == kic.Status.OK)
    C, _ = geo.forward(q[ok])
    assert np.allclose(C, X[ok], atol=1e-12)
    assert np.allclose(tip_of(fb, q[ok]), X[ok], atol=1e-10)
    assert np.all(geo.modes(fb.assemble(q[ok])) == mode)
    assert np.all(elbow_signs(fb, q[ok]) == mode)


@pytest.fixture
def numpy_backend():
    previous = kic.set_backend("numpy")
    yield
    kic.set_backend(previous)


@pytest.mark.parametrize("mode", [(-1, 1, 1), (1, -1, -1), (1, 1, 1)])
def test_closed_form_against_newton_in_tip_coordinates(mode, numpy_backend):
    """The model in tip coordinates (kic.PointPosition), solved by Newton from
    the closed-form guess, agrees with the closed form to 1e-10 rad."""
    tm = mechanisms.five_bar(mode=mode, coordinates="tip")
    assert tm.coordinate_names == ["tip.x", "tip.y"]
    X = workspace_points(tm, 200, seed=5)
    q, st = tm.geometry.inverse(X)
    ok = st == kic.Status.OK
    phi, ast = tm.assemble(X[ok], on_failure="nan")
    good = ast == kic.Status.OK
    assert good.mean() > 0.9
    cranks = phi[good][:, [tm.phi_names.index("crank1"), tm.phi_names.index("crank2")]]
    gap = np.angle(np.exp(1j * (cranks - q[ok][good])))
    assert np.abs(gap).max() < 1e-10
    assert np.all(tm.geometry.modes(phi[good], tm.phi_names) == mode)


def test_tip_coordinates_answer_does_not_depend_on_the_backend():
    X = np.array([[0.1, 0.45], [0.05, 0.4], [0.1, 0.2], [0.3, 0.3]])
    answers = []
    for backend in ("numpy", "numba"):
        previous = kic.set_backend(backend)
        try:
            tm = mechanisms.five_bar(mode=(1, -1, -1), coordinates="tip")
            answers.append(tm.geometry.modes(tm.assemble(X), tm.phi_names))
        finally:
            kic.set_backend(previous)
    assert np.array_equal(answers[0], answers[1])


def test_crank_rates_against_influence_coefficients_and_differences():
    fb = mechanisms.five_bar(mode=(1, -1, -1))
    geo = fb.geometry
    rng = np.random.default_rng(11)
    X = np.array([0.1, 0.45]) + rng.uniform(-0.05, 0.05, (20, 2))
    Xd, Xdd = rng.normal(size=(20, 2)), rng.normal(size=(20, 2))
    q, _ = geo.inverse(X)
    qd, qdd = geo.inverse_rates(q, X, Xd, Xdd)
    p = fb.kinematics(q, 2).point("coupler1", (geo.coupler1, 0, 0))
    G, H = p.G[:, :2], p.H[:, :2]
    assert np.allclose(np.einsum("nij,nj->ni", G, qd), Xd, atol=1e-12)
    xdd = np.einsum("nij,nj->ni", G, qdd) + np.einsum("nj,nijk,nk->ni", qd, H, qd)
    assert np.allclose(xdd, Xdd, atol=1e-10)
    h = 1e-6                         # along x(s) = X + s Xd: dq/ds = qd
    fd = (geo.inverse(X + h * Xd)[0] - geo.inverse(X - h * Xd)[0]) / (2 * h)
    assert np.allclose(fd, qd, rtol=1e-6, atol=1e-7)
    assert np.allclose(geo.inverse_rates(q, X, Xd), qd)


def test_modes_per_pose_in_a_mixed_batch():
    fb = mechanisms.five_bar()
    rng = np.random.default_rng(2)
    Q = rng.uniform(-np.pi, np.pi, (300, 2))
    phi, st = fb.assemble(Q, on_failure="nan")
    ok = st == kic.Status.OK
    m = fb.geometry.modes(phi)
    assert np.all(m[ok, 2] == 1) and np.all(m[~ok] == 0)
    assert len({tuple(r) for r in m[ok]}) == 4            # every elbow pair occurs
    assert np.array_equal(m[ok], elbow_signs(fb, Q[ok]))
    assert m.shape == (300, 3) and fb.geometry.modes(phi.reshape(3, 100, 5)).shape == (3, 100, 3)


def test_geometry_and_models_pickle():
    for model in (mechanisms.five_bar(mode=(1, -1, -1)),
                  mechanisms.five_bar(coordinates="tip"),
                  mechanisms.stewart_platform(stroke=(0.5, 0.8))):
        again = pickle.loads(pickle.dumps(model))
        q = model.reference
        assert np.allclose(again.assemble(q), model.assemble(q), atol=1e-12)
        assert repr(again.geometry) == repr(model.geometry)
    g = pickle.loads(pickle.dumps(mechanisms.five_bar(mode=(1, -1, -1)).geometry))
    assert g.mode == (1, -1, -1)
    assert np.allclose(g.inverse([0.1, 0.45])[0], [0.50433209, 2.63726056], atol=1e-8)


# ------------------------------------------------------------------- Stewart
def test_leg_lengths_against_the_assembled_actuators():
    sp = mechanisms.stewart_platform(stroke=(0.5, 0.8))
    rng = np.random.default_rng(4)
    P = np.array([0, 0, 0.6, 0, 0, 0]) + rng.uniform(-1, 1, (3, 4, 6)) * [0.08, 0.08, 0.05,
                                                                        0.17, 0.17, 0.17]
    L = sp.geometry.leg_lengths(P)
    assert L.shape == (3, 4, 6)
    phi = sp.assemble(P)
    legs = [sp.phi_names.index(f"leg{i}.p") for i in range(6)]
    assert np.allclose(phi[..., legs], L, atol=1e-12)
    st = sp.geometry.status(P)
    assert st.shape == (3, 4)
    inside = np.all((L >= 0.5) & (L <= 0.8), axis=-1)
    assert np.array_equal(st == kic.Status.OK, inside)
    far = np.array([0.0, 0.0, 1.2, 0.0, 0.0, 0.0])
    assert sp.geometry.status(far) == kic.Status.OUTSIDE_LIMITS
    assert np.all(mechanisms.stewart_platform().geometry.status(far[None]) == kic.Status.OK)
    with pytest.raises(kic.ModelError, match="stroke"):
        mechanisms.stewart_platform(stroke=(0.8, 0.5))
    with pytest.raises(kic.ModelError, match=r"\(\.\.\., 6\)"):
        sp.geometry.leg_lengths([0.0, 0.6])


# ------------------------------------------------------------------ examples
def load_example(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_five_bar_example_quick(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    pytest.importorskip("scipy")
    ex = load_example("five_bar_optimization")
    assert ex.main(["--quick", "--popsize", "3", "--maxiter", "2", "--out",
                    str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "generation   2:" in out and "optimum after" in out
    for f in ("five_bar_optimum.png", "five_bar_torques.png"):
        assert (tmp_path / f).stat().st_size > 5000
    # a design that cannot reach the task is a penalty, not an exception
    r = ex.evaluate((0.05, 0.1, 0.1))
    assert r["objective"] >= ex.FAIL_PENALTY and np.isnan(r["peak"])
    assert np.any(r["status"] == kic.Status.UNASSEMBLABLE)


def test_five_bar_example_batched_objective(tmp_path, capsys):
    """The example's design-batch objective (one batch per generation) equals its
    one-design-at-a-time objective, failures and penalties included."""
    pytest.importorskip("matplotlib")
    ex = load_example("five_bar_optimization")
    rng = np.random.default_rng(3)
    lo, hi = np.array(ex.BOUNDS).T
    X = np.vstack([lo + rng.uniform(size=(12, 3)) * (hi - lo),
                   [[0.2, 0.25, 0.35], [0.05, 0.1, 0.1], [0.2, 0.1, 0.5055]]])
    one = np.array([ex.objective(x) for x in X])
    assert np.any(one >= ex.FAIL_PENALTY) and np.any(one < ex.FAIL_PENALTY)
    np.testing.assert_allclose(ex.objectives(X.T), one, rtol=1e-6)
    assert ex.main(["--quick", "--batch", "--popsize", "3", "--maxiter", "2", "--out",
                    str(tmp_path)]) == 0
    assert "optimum after" in capsys.readouterr().out


def test_stewart_example_quick(tmp_path, capsys):
    """The example's design batches honour the stroke and report failures as data;
    its headline design is feasible, checked against a model of that design."""
    pytest.importorskip("matplotlib")
    ex = load_example("stewart_sweep")
    assert ex.main(["--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "4 designs singular at every pose inside the stroke" in out   # equal half-angles
    assert (tmp_path / "stewart_pareto.png").stat().st_size > 5000
    res = kic.sweep.SweepResult.from_npz(tmp_path / "stewart_sweep.npz")
    d, r = res.designs, res.results
    equal = np.isclose(d["base_half_angle"], d["plat_half_angle"])
    assert np.array_equal(ex.everywhere_singular(r), equal)       # as data, no exception
    assert np.all(np.isnan(r["peak_force"][equal])) and np.all(r["feasible"][equal] == 0)
    P, A = ex.poses(30), ex.accelerations()
    q, qdd = np.repeat(P, len(A), axis=0), np.tile(A, (len(P), 1))
    for i in range(len(d)):                # every design against its own model
        kw = {k: float(d[k][i]) for k in ex.NAMES}
        sp = mechanisms.stewart_platform(**kw, stroke=ex.STROKE)
        outside = sp.geometry.status(P) == kic.Status.OUTSIDE_LIMITS
        if not equal[i]:                   # (singular everywhere: SINGULAR_LOAD first)
            assert r["outside_stroke"][i] == pytest.approx(outside.mean())
        L = sp.geometry.leg_lengths(P)
        assert r["shortest_leg"][i] == pytest.approx(L.min(), rel=1e-12)
        assert r["longest_leg"][i] == pytest.approx(L.max(), rel=1e-12)
        if r["feasible"][i] == 1.0:
            f, status = sp.actuator_loads(q, np.zeros(6), qdd, sp.actuators, on_failure="nan")
            assert np.all(status == kic.Status.OK) and not outside.any()
            assert r["peak_force"][i] == pytest.approx(np.abs(f).max(), rel=1e-9)
    some_outside = (r["outside_stroke"] > 0) & ~equal
    assert some_outside.any()                          # the stroke matters in this grid
    feasible = r["feasible"] == 1.0
    best = int(np.argmin(np.where(feasible, r["peak_force"], np.inf)))
    assert feasible[best] and f"{r['peak_force'][best]:.1f} N" in out


@pytest.mark.parametrize("elbows", [(1, 1), (1, -1), (-1, 1), (-1, -1)])
def test_each_working_mode_is_a_mode_of_the_tip_model(elbows):
    """In tip coordinates the closure's one block is block-triangular: leg 1's
    joints first (elbow 1's sign), then the rest (elbow 2's).  Each elbow pair is
    its own assembly mode, kept by both backends along a batch of tip points."""
    X = np.array([[0.1, 0.45], [0.05, 0.4], [0.12, 0.3], [0.15, 0.42]])
    answers = []
    for backend in ("numpy", "numba"):
        previous = kic.set_backend(backend)
        try:
            tm = mechanisms.five_bar(mode=elbows + (1,), coordinates="tip")
            assert len(tm.mode) == 2 and len(tm.block_mode) == 1
            assert sorted(map(sorted, tm.mode_parts)) == [
                ["crank1", "elbow1"], ["crank2", "elbow2", "tip"]]
            phi, status = tm.assemble(X, on_failure="nan")
            ok = status == kic.Status.OK
            assert ok.sum() >= 3
            modes = tm.geometry.modes(phi[ok], tm.phi_names)
            assert np.all(modes[:, :2] == elbows), modes
            answers.append(phi)
        finally:
            kic.set_backend(previous)
    assert np.allclose(answers[0], answers[1], equal_nan=True, atol=1e-12)


def test_blocks_that_do_not_refine_keep_their_mode():
    assert len(mechanisms.five_bar().mode) == 1
    assert len(mechanisms.four_bar().mode) == 1
    sp = mechanisms.stewart_platform()
    assert len(sp.mode) == len(sp.block_mode) == len(sp.blocks)
