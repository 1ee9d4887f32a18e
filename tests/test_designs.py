"""Design batches (issue 9 item 1): one structure, many designs' numbers, one call.

Evidence:
- the vectorized writers against the builders: every design's float buffer, reference
  and mode equal those of the model the builder makes for it (the Stewart writer's
  characteristic length against its closed form at the nominal pose);
- the design batch's loads against building each design's model and evaluating it
  with today's API (``inverse_dynamics``, ``actuator_loads``), for random designs
  including infeasible ones and singular ones (NaN + status, no exception), on both
  backends: the numpy path evaluates each model through its open chains (kic's
  transfer), the compiled one the spanning tree in one kernel;
- the accelerations' affine shortcut against one acceleration per pose;
- the five-bar conditioning index against ``kic.indices.point_conditioning`` and its
  invariance under a change of scale;
- pickling.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import kic
import kic.indices
import mechanisms
from kic.designs import DesignBatch
from mechanisms import five_bar_task
from mechanisms.geometry import stewart_anchors

import helpers

MODE = (-1, 1, 1)
REL = 1e-10


def rel_err(a, b) -> float:
    """The largest entry's error against the largest reference entry (floor 1)."""
    return helpers.rel_err(a, b, floor=1.0, ord=np.inf)


def five_bar_params(rng, D: int) -> dict:
    p = dict(base=rng.uniform(0.05, 0.4, D), crank1=rng.uniform(0.1, 0.45, D),
             crank2=rng.uniform(0.1, 0.45, D), coupler1=rng.uniform(0.1, 0.6, D),
             coupler2=rng.uniform(0.1, 0.6, D), m_crank1=rng.uniform(0.2, 2.0, D),
             m_coupler2=rng.uniform(0.2, 2.0, D), m_tip=rng.uniform(0.0, 1.0, D))
    # a design whose loop never closes: infeasible, kept as data
    p["base"][1], p["crank1"][1], p["crank2"][1] = 2.0, 0.1, 0.1
    p["coupler1"][1], p["coupler2"][1] = 0.1, 0.1
    return p


def circle(n: int = 40, centre=(0.1, 0.45), radius: float = 0.05, period: float = 0.5):
    t = np.linspace(0.0, period, n, endpoint=False)
    w = 2 * np.pi / period
    u = np.stack([np.cos(w * t), np.sin(w * t)], -1)
    v = np.stack([-np.sin(w * t), np.cos(w * t)], -1)
    return np.asarray(centre) + radius * u, radius * w * v, -radius * w * w * u


def build_five_bar(**kw):
    return mechanisms.five_bar(**kw, mode=MODE)


@pytest.fixture(scope="module")
def five_bars():
    rng = np.random.default_rng(7)
    p = five_bar_params(rng, 14)
    return p, mechanisms.five_bar_designs(**p, mode=MODE), DesignBatch.from_builder(
        build_five_bar, p)


def stewart_params(rng, D: int) -> dict:
    p = dict(rb=rng.uniform(0.4, 0.6, D), rp=rng.uniform(0.2, 0.4, D),
             base_half_angle=np.radians(rng.uniform(5, 25, D)),
             plat_half_angle=np.radians(rng.uniform(15, 55, D)), h0=rng.uniform(0.5, 0.7, D),
             m_plat=rng.uniform(5, 15, D), m_cyl=rng.uniform(1, 3, D),
             m_rod=rng.uniform(0.5, 2, D))
    p["plat_half_angle"][2] = p["base_half_angle"][2]      # singular everywhere
    return p


def stewart_poses(n: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    half = np.array([0.06, 0.06, 0.04, *np.radians([8.0, 8.0, 8.0])])
    P = np.array([0, 0, 0.6, 0, 0, 0]) + rng.uniform(-1, 1, (n, 6)) * half
    a = np.diag([2.0, 2.0, 2.0, 5.0, 5.0, 5.0])
    return P, np.concatenate([a, -a])


# ------------------------------------------------------------------ writers
def test_five_bar_writer_equals_builder(five_bars):
    p, batch, generic = five_bars
    assert np.array_equal(batch.feasible, generic.feasible)
    assert not batch.feasible[1] and batch.feasible.sum() >= 10
    f = batch.feasible
    for d in np.nonzero(f)[0]:
        scale = np.abs(generic.floats[d]).max()
        assert np.abs(batch.floats[d] - generic.floats[d]).max() <= 1e-14 * scale, d
    assert np.abs(batch.reference_phi[f] - generic.reference_phi[f]).max() < 1e-12
    assert np.array_equal(batch.modes[f], generic.modes[f])


def test_writers_check_their_parameters():
    with pytest.raises(kic.ModelError, match="crank2 of design 2"):
        mechanisms.five_bar_designs(crank2=[0.2, 0.3, -0.1])
    with pytest.raises(kic.ModelError, match="m_tip of design 0"):
        mechanisms.five_bar_designs(m_tip=[-1.0, 0.5])
    with pytest.raises(kic.ModelError, match="plat_half_angle of design 1"):
        mechanisms.stewart_designs(plat_half_angle=[0.3, 1.2])


def test_stewart_writer_equals_builder():
    rng = np.random.default_rng(11)
    p = stewart_params(rng, 5)
    batch = mechanisms.stewart_designs(**p)
    generic = DesignBatch.from_builder(mechanisms.stewart_platform, p)
    fb, fg = batch.fields, generic.fields
    for name in fb:          # the scale too: the builder's reference is the nominal pose
        assert np.abs(fb[name] - fg[name]).max() <= 1e-14 * max(np.abs(fg[name]).max(), 1)
    assert np.array_equal(batch.modes, generic.modes)
    # the reference is the nominal pose (0, 0, h0, 0, 0, 0); the characteristic
    # length in closed form: the largest distance between the joints' points, the
    # base anchors (U), the platform anchors (where the legs' P joints have carried
    # their rods), the world origin (x, y, z) and the platform centre (yaw, pitch,
    # roll), as the model measures it
    B, P = stewart_anchors(p["rb"], p["rp"], p["base_half_angle"], p["plat_half_angle"])
    centre = np.stack([0 * p["h0"], 0 * p["h0"], p["h0"]], -1)[:, None]
    pts = np.concatenate([B, P + centre, 0 * centre, centre], axis=1)
    L = np.linalg.norm(pts[:, :, None] - pts[:, None], axis=-1).max(axis=(1, 2))
    assert np.allclose(fb["scale"][:, 0], L, rtol=1e-14, atol=0)
    assert np.allclose([mechanisms.stewart_platform(**{k: v[d] for k, v in p.items()})
                        .characteristic_length for d in range(len(L))], L, rtol=1e-14, atol=0)
    assert np.allclose(batch.reference_phi[:, 18:21], np.stack(
        [0 * p["h0"], 0 * p["h0"], p["h0"]], -1), atol=0)


def test_writer_api_from_template_fields_reference():
    """The public write API: copies of a template model, numbers written by field
    name, the reference (and with it the characteristic length) set per design;
    the designs then equal the models built with those numbers."""
    template = mechanisms.five_bar()
    g = np.array([9.81, 3.71, 1.62])
    # (build: the numpy backend evaluates each design through its model)
    batch = DesignBatch.from_template(template, 3, parameters={"g": g}, build=mechanisms.five_bar)
    assert len(batch) == 3 and batch.feasible.all() and batch.actuators == ("crank1", "crank2")
    f = batch.fields
    f["gravity"][:] = 0.0
    f["gravity"][:, 1] = -g                              # a view: writes the buffers
    assert np.array_equal(batch.floats, np.stack([
        DesignBatch.from_models([mechanisms.five_bar(g=v)]).floats[0] for v in g]))
    q = np.array([[np.pi / 2 + 0.3, np.pi / 2 - 0.3]])
    res = batch.loads(q, 0 * q, 0 * q)
    for d in range(3):
        assert rel_err(res.loads[d], mechanisms.five_bar(g=g[d]).gravity_load(q)) < REL
    # the reference sets the characteristic length (as ClosedModel's)
    longer = mechanisms.five_bar(coupler1=0.45, coupler2=0.45)
    one = DesignBatch.from_template(template, 1)
    j = one.plan.phi_names.index("tip")
    one.fields["origin"][0, j, 0, 3] = 0.45
    one.fields["T_b"][0, 0, 0, 3] = 0.45
    assert one.fields["scale"][0, 0] == template.characteristic_length
    one.set_reference(longer.reference_phi[None])
    assert one.fields["scale"][0, 0] == pytest.approx(longer.characteristic_length,
                                                      rel=1e-14)
    assert np.array_equal(one.reference_phi[0], longer.reference_phi)
    with pytest.raises(kic.ModelError, match=r"shape \(1, 5\)"):
        one.set_reference(np.zeros(5))
    with pytest.raises(kic.ModelError, match="number of designs"):
        DesignBatch.from_template(template, 0)


def test_writer_check_catches_a_mismatch():
    """The writers check themselves against their template model: a derivation
    that drifts from the builder's is caught, with the field named."""
    from mechanisms import designs
    from mechanisms.closed import five_bar_numbers
    template = DesignBatch.from_models([mechanisms.five_bar()])
    p = {k: np.array([v]) for k, v in dict(
        base=0.2, crank1=0.25, crank2=0.25, coupler1=0.35, coupler2=0.35, m_crank1=1.0,
        m_crank2=1.0, m_coupler1=0.8, m_coupler2=0.8, m_tip=0.5, g=9.81).items()}
    designs._check_writer("five_bar_designs", template, five_bar_numbers(p),
                          template.reference_phi)
    p["m_tip"] = np.array([0.5 + 1e-9])
    with pytest.raises(RuntimeError, match="field '(mass|com|inertia)'"):
        designs._check_writer("five_bar_designs", template, five_bar_numbers(p),
                              template.reference_phi)


# ----------------------------------------------- against today's per-model API
@pytest.mark.usefixtures("each_backend")
def test_five_bar_task_equals_models(five_bars):
    p, batch, generic = five_bars
    X, Xd, Xdd = circle()
    task = five_bar_task(batch, X, Xd, Xdd)
    assert task.mode == MODE
    assert task.torques.shape == (14, 40, 2) and task.status.shape == (14, 40)
    assert np.all(task.status[1] == kic.Status.UNASSEMBLABLE)
    assert np.all(np.isnan(task.torques[1]))
    n_ok = 0
    for d in np.nonzero(batch.feasible)[0]:
        m = generic.model(d)
        q, st = m.geometry.inverse(X)
        ok = st == kic.Status.OK
        assert np.array_equal(np.where(ok, 0, st), np.where(ok, 0, task.status[d]))
        if not ok.any():
            continue
        qd, qdd = m.geometry.inverse_rates(q[ok], X[ok], Xd[ok], Xdd[ok])
        # the same assembled configuration (near a singularity the answer depends
        # on the last Newton step as much as the condition number amplifies it)
        start = np.where(np.isnan(task.phi[d][ok]), 0.0, task.phi[d][ok])
        T, s2 = m.inverse_dynamics(q[ok], qd, qdd, on_failure="nan", start=start)
        assert np.array_equal(s2, task.status[d][ok])
        good = s2 == kic.Status.OK
        n_ok += int(good.sum())
        # per pose; near a type II singularity two exact formulations differ by
        # rounding amplified like the loads' second-order closure terms, ~ eps kappa^3
        # (kappa the closure block's condition number)
        kappa = np.asarray(m.condition(q[ok][good]))
        err = np.abs(task.torques[d][ok][good] - T[good]).max(-1) / np.maximum(
            np.abs(T[good]).max(-1), 1.0)
        assert np.all(err <= REL + 1e-16 * kappa ** 3), (d, err.max())
        assert np.allclose(task.cranks[d][ok][good], q[ok][good], rtol=0, atol=1e-13)
        # the joint values are the model's own assembly at q (from its reference)
        assert np.allclose(task.phi[d][ok][good], m.assemble(q[ok][good]), rtol=0, atol=1e-7)
        I = m.dynamics(q[ok][good], start=start[good]).I_star
        err = np.abs(task.inertia[d][ok][good] - I).max((-2, -1)) / np.abs(I).max((-2, -1))
        assert np.all(err <= REL + 1e-16 * kappa ** 2), (d, err.max())
        assert np.all(np.isnan(task.torques[d][~ok]))
        cond = kic.indices.point_conditioning(m, q[ok][good], "coupler1",
                                              (m.geometry.coupler1, 0, 0)).condition
        # (point_conditioning assembles from the model's reference: near a singularity
        # its configuration differs at the closure tolerance times the condition)
        assert np.allclose(task.condition[d][ok][good], cond, rtol=1e-12 * cond ** 2 + 1e-10)
    assert n_ok > 100


def test_five_bar_condition_is_scale_invariant(five_bars):
    p, batch, _ = five_bars
    X, Xd, Xdd = circle()
    small = {k: (v / 10 if not k.startswith("m_") else v) for k, v in p.items()}
    scaled = mechanisms.five_bar_designs(**small, mode=MODE)
    a = five_bar_task(batch, X, Xd, Xdd)
    b = five_bar_task(scaled, X / 10, Xd / 10, Xdd / 10)
    assert np.array_equal(a.status, b.status)
    ok = a.status == kic.Status.OK
    assert np.allclose(a.condition[ok], b.condition[ok], rtol=1e-9)
    assert np.all(a.condition[ok] >= 1.0 - 1e-12)


@pytest.mark.usefixtures("each_backend")
def test_stewart_batch_equals_models():
    rng = np.random.default_rng(5)
    p = stewart_params(rng, 4)
    batch = mechanisms.stewart_designs(**p)
    P, A = stewart_poses(6)
    res = batch.loads(P, np.zeros(6), accelerations=A)
    assert res.actuator_loads.shape == (4, 6, 12, 6) and res.status.shape == (4, 6)
    # the singular design (equal half-angles): status, NaN, no exception
    assert np.all(res.status[2] == kic.Status.SINGULAR_LOAD)
    assert np.all(np.isnan(res.actuator_loads[2]))
    assert np.all(res.actuation_condition[2] > 1e12)
    q, qdd = np.repeat(P, 12, axis=0), np.tile(A, (6, 1))
    for d in range(4):
        m = mechanisms.stewart_platform(**{k: float(v[d]) for k, v in p.items()})
        start = np.repeat(batch.guess(batch.parameters, P[None])[d], 12, axis=0)
        f, st = m.actuator_loads(q, np.zeros(6), qdd, m.actuators, on_failure="nan",
                                 start=start)
        assert np.array_equal(st.reshape(6, 12)[:, 0], res.status[d])
        T = m.inverse_dynamics(q, np.zeros(6), qdd, start=start)
        assert rel_err(res.loads[d].reshape(-1, 6), T) < REL
        if d != 2:
            assert rel_err(res.actuator_loads[d].reshape(-1, 6), f) < REL


@pytest.mark.usefixtures("each_backend")
def test_from_models_rates_and_path():
    """Generic route, nonzero rates, one acceleration per pose, path from the reference."""
    rng = np.random.default_rng(2)
    models = [mechanisms.four_bar(crank=c, coupler=k) for c, k in ((0.1, 0.35), (0.08, 0.3),
                                                                   (0.12, 0.4))]
    batch = DesignBatch.from_models(models)
    q = np.linspace(0.2, 1.4, 7)[:, None]
    qd, qdd = rng.normal(size=(7, 1)), rng.normal(size=(7, 1))
    res = batch.loads(q, qd, qdd)
    assert res.loads.shape == (3, 7, 1) and res.actuator_loads.shape == (3, 7, 1)
    for d, m in enumerate(models):
        T, st = m.inverse_dynamics(q, qd, qdd, on_failure="nan")
        assert np.array_equal(st, res.status[d])
        assert rel_err(res.loads[d], T) < REL
        assert rel_err(res.bias[d], m.inverse_dynamics(q, qd, 0 * qdd)) < REL
    # K accelerations at every pose = one acceleration per pose, repeated
    A = rng.normal(size=(4, 1))
    many = batch.loads(q, qd, accelerations=A)
    for k in range(4):
        one = batch.loads(q, qd, np.broadcast_to(A[k], (7, 1)))
        assert rel_err(many.loads[:, :, k], one.loads) < REL


def test_backends_agree(five_bars):
    if not kic.kernels.jit.available:
        pytest.skip("numba not installed")
    p, batch, _ = five_bars
    X, Xd, Xdd = circle(12)
    rng = np.random.default_rng(4)
    sp = stewart_params(rng, 3)
    sb = mechanisms.stewart_designs(**sp)
    P, A = stewart_poses(4)
    out = {}
    for backend in ("numba", "numpy"):
        previous = kic.set_backend(backend)
        try:
            out[backend] = (five_bar_task(batch, X, Xd, Xdd),
                            sb.loads(P, np.zeros(6), accelerations=A))
        finally:
            kic.set_backend(previous)
    (ta, sa), (tb, sb_) = out["numba"], out["numpy"]
    assert np.array_equal(ta.status, tb.status) and np.array_equal(sa.status, sb_.status)
    ok = ta.status == 0
    assert rel_err(ta.torques[ok], tb.torques[ok]) < REL
    ok = sa.status == 0
    assert rel_err(sa.actuator_loads[ok], sb_.actuator_loads[ok]) < REL
    assert np.allclose(sa.actuation_condition[ok], sb_.actuation_condition[ok], rtol=1e-8)


# ------------------------------------------------------------ structure, pickling
def test_from_models_rejects_another_structure():
    with pytest.raises(kic.ModelError, match="design 1 has another joints"):
        DesignBatch.from_models([mechanisms.five_bar(), mechanisms.four_bar()])
    with pytest.raises(kic.ModelError, match="no models"):
        DesignBatch.from_models([])
    batch = DesignBatch.from_models([mechanisms.five_bar(), mechanisms.five_bar(base=0.25)])
    with pytest.raises(kic.ModelError, match="qdd"):
        batch.loads(np.zeros((3, 2)), np.zeros(2))
    with pytest.raises(kic.ModelError, match="q contains NaN"):
        batch.loads([np.nan, 0.0], np.zeros(2), np.zeros(2))


def test_pickle(five_bars):
    p, batch, generic = five_bars
    X, Xd, Xdd = circle(8)
    again = pickle.loads(pickle.dumps(batch))
    assert np.array_equal(again.floats, batch.floats)
    r1, r2 = five_bar_task(batch, X, Xd, Xdd), five_bar_task(again, X, Xd, Xdd)
    assert np.array_equal(r1.status, r2.status)
    assert np.array_equal(np.nan_to_num(r1.torques), np.nan_to_num(r2.torques))
    again = pickle.loads(pickle.dumps(generic))          # its models rebuilt on demand
    q = np.array([[2.0, 1.2], [1.9, 1.3]])
    r1, r2 = generic.loads(q, 0 * q, q), again.loads(q, 0 * q, q)
    assert np.array_equal(r1.status, r2.status)
    assert np.array_equal(np.nan_to_num(r1.loads), np.nan_to_num(r2.loads))
    assert again.model(0).dof == 2
    sb = mechanisms.stewart_designs(rb=[0.5, 0.55])
    again = pickle.loads(pickle.dumps(sb))
    P, A = stewart_poses(2)
    assert np.array_equal(again.loads(P, np.zeros(6), accelerations=A).actuator_loads,
                          sb.loads(P, np.zeros(6), accelerations=A).actuator_loads)


def test_five_bar_writer_other_modes():
    rng = np.random.default_rng(8)
    p = five_bar_params(rng, 6)
    for mode in ((1, -1, -1), (1, 1, 1)):
        batch = mechanisms.five_bar_designs(**p, mode=mode)
        generic = DesignBatch.from_builder(
            lambda **kw: mechanisms.five_bar(**kw, mode=mode), p)
        assert np.array_equal(batch.feasible, generic.feasible)
        f = batch.feasible
        assert f.sum() == 5 and not f[1]
        assert np.abs(batch.floats[f] - generic.floats[f]).max() < 1e-14
        assert np.abs(batch.reference_phi[f] - generic.reference_phi[f]).max() < 1e-12
        assert np.array_equal(batch.modes[f], generic.modes[f])
    with pytest.raises(kic.ModelError, match="no design could be built"):
        DesignBatch.from_builder(build_five_bar, {"base": [3.0], "crank1": 0.1})


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("max_condition", [1e3, 6.0, 1.05])
def test_singular_blocks_at_max_condition(max_condition):
    """A block is singular where its 2-norm condition reaches max_condition, as in the
    model.  The compiled batch decides that through the Frobenius bound and forms
    the 2-norm condition only near the threshold: 1e3 is accepted by the bound at
    every pose, 6.0 lies inside the path's range (4.4 .. 9.4, decided by Jacobi on
    both sides of it), 1.05 rejects part of the path by the bound, the rest by
    Jacobi."""
    fb = mechanisms.five_bar()
    fb.max_condition = max_condition
    q1 = np.linspace(1.0, 3.0, 81)
    q = np.stack([q1, np.full_like(q1, 1.2)], -1)
    cond = fb.condition(q)
    expected = np.where(cond < max_condition, 0, int(kic.Status.SINGULAR))
    if max_condition == 6.0:
        assert 0 < np.count_nonzero(expected) < q1.size
    res = DesignBatch.from_models([fb]).loads(q, 0 * q, 0 * q)
    assert np.array_equal(res.status[0], expected)
    _, st = fb.inverse_dynamics(q, 0 * q, 0 * q, on_failure="nan")
    assert np.array_equal(res.status[0], st)
    assert np.all(np.isnan(res.loads[0][expected != 0]))
    assert np.all(np.isfinite(res.loads[0][expected == 0]))


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("rate", [0.0, 0.3])
def test_start_in_another_mode(rate):
    """Starts in the other assembly mode, at rest (the compiled batch decides the
    mode of those poses side by side) and moving (pose by pose): solved again
    from the model's guess (a batch of models, as the model does) or the
    writer's closed form (a writer's batch); a batch without either (the
    writer's guess removed, no models) reports them as in another mode, NaN."""
    up = mechanisms.five_bar(mode=MODE)
    down = mechanisms.five_bar(mode=MODE[:2] + (-MODE[2],))
    q = np.array([[2.0, 1.2], [1.9, 1.0], [2.2, 0.8], [2.1, 1.1]])
    start = np.concatenate([down.assemble(q[:2]), up.assemble(q[2:])])
    qd = np.full_like(q, rate)
    T, st = up.inverse_dynamics(q, qd, 0 * q, on_failure="nan", start=start)
    assert np.all(st == 0)
    g = up.geometry
    writer = mechanisms.five_bar_designs(base=g.base, crank1=g.crank1, crank2=g.crank2,
                                         coupler1=g.coupler1, coupler2=g.coupler2, mode=MODE)
    for batch in (DesignBatch.from_models([up]), writer):
        res = batch.loads(q, qd, 0 * q, start=start)
        assert np.array_equal(res.status[0], st)
        assert rel_err(res.loads[0], T) < 1e-9
    if kic.get_backend() == "numba":        # the numpy path evaluates each design's model
        writer.guess = None
        res = writer.loads(q, qd, 0 * q, start=start)
        assert np.array_equal(res.status[0], [4, 4, 0, 0])
        assert np.all(np.isnan(res.loads[0, :2])) and rel_err(res.loads[0, 2:], T[2:]) < 1e-9
