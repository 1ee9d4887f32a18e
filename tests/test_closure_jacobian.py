"""The closure Jacobian ``dc/dphi`` that coordinate selection scores
(:meth:`kic.ClosedModel.closure_jacobian`, :meth:`kic.ClosedModel.best_coordinates`):
the compiled kernels' (:func:`kic.kernels.closed.closure_rows`) against the
numpy one (:meth:`kic.loops.LoopSystem.jacobian`) on random joint values, and
against central differences of the closure residual at assembled poses (the
residual of the numpy loops, reduced by the plan's row projections ``U`` as the
closed_plan module docstring defines them), for a planar five-bar (one pose loop
reduced to three rows) and a Stewart platform (six point loops)."""
from __future__ import annotations

import numpy as np
import pytest

import kic
import mechanisms
from kic.kernels import closed as K

compiled = pytest.mark.skipif(not (K.available and K.load()), reason="needs numba")


def _five_bar():
    fb = mechanisms.five_bar()
    return fb, fb.assemble(np.array([[2.0, 1.1], [1.9, 1.0], [2.2, 0.8]]))


def _stewart():
    sp = mechanisms.stewart_platform()
    q = np.array([[0, 0, 0.6, 0, 0, 0], [0.05, -0.03, 0.62, 0.1, -0.05, 0.08],
                  [-0.04, 0.06, 0.55, -0.2, 0.07, -0.1]])
    return sp, sp.assemble(q)


CASES = [_five_bar, _stewart]


def reduced_residual(model, plan, phi: np.ndarray) -> np.ndarray:
    """The closure residual (R,) at joint values phi (N,), in loop order: the numpy
    loops' raw residual of each loop (orientation error, position difference)
    times ``U[l, :k, :r]`` (the plan's row projection)."""
    raw, _ = model.system.residuals(phi[None])
    return np.concatenate([r[0] @ plan.U[l, :plan.loop_k[l], :plan.loop_r[l]]
                           for l, r in enumerate(raw)])


@compiled
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_compiled_matches_numpy_on_random_poses(case):
    model, phi = case()
    rng = np.random.default_rng(7)
    P = model.reference_phi + rng.normal(scale=0.4, size=(40, model.N))
    Jc = K.closure_rows(model.evaluation.plan, P)[1]
    Jn = model.system.jacobian(P)
    assert Jc.shape == Jn.shape == (40, sum(l.rank for l in model.system.loops), model.N)
    assert np.abs(Jc - Jn).max() <= 1e-12 * np.abs(Jn).max()
    # one pose (N,) as a batch of one
    assert np.array_equal(K.closure_rows(model.evaluation.plan, P[3])[1], Jc[3:4])


@compiled
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_compiled_against_finite_differences(case):
    """At assembled poses the Jacobian is the derivative of the residual (for the
    orientation rows only there: d vex(R_A R_B^T) is omega_A - omega_B where the
    two frames agree); a wrong sign, row order or screw fails by O(1)."""
    model, phi = case()
    plan = model.evaluation.plan
    J = K.closure_rows(plan, phi)[1]
    h = 1e-6
    for k in range(phi.shape[0]):
        fd = np.empty(J.shape[1:])
        for j in range(model.N):
            e = np.zeros(model.N)
            e[j] = h
            fd[:, j] = (reduced_residual(model, plan, phi[k] + e)
                        - reduced_residual(model, plan, phi[k] - e)) / (2 * h)
        assert np.abs(J[k] - fd).max() <= 1e-8 * np.abs(fd).max()


@compiled
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_model_takes_the_compiled_jacobian(case, monkeypatch):
    """Under the compiled backend the model's Jacobian (and so best_coordinates, in
    joint coordinates) comes from the kernel; under numpy from the loops; the two
    agree."""
    model, phi = case()
    calls = []
    kernel = K.closure_rows
    monkeypatch.setattr(K, "closure_rows", lambda *a: calls.append(1) or kernel(*a))
    joints = model.in_coordinates(model.phi_names[:model.dof]) \
        if model.mechanism.primitive_joints == model.phi_names else None
    jacobians = {}
    for backend in ("numba", "numpy"):      # (the numpy backend adds no kernel call)
        previous = kic.set_backend(backend)
        try:
            jacobians[backend] = model.closure_jacobian(phi)
            if joints is not None:
                joints.best_coordinates(phi[0])
        finally:
            kic.set_backend(previous)
        assert len(calls) == (1 if joints is None else 2), backend
    Jc, Jn = jacobians["numba"], jacobians["numpy"]
    assert np.abs(Jc - Jn).max() <= 1e-12 * np.abs(Jn).max()


@compiled
def test_best_coordinates_same_on_both_backends():
    """The scores of every set agree to rounding on either backend, so the chosen
    set does too wherever the best two are not within rounding of a tie."""
    fb = mechanisms.five_bar()
    rng = np.random.default_rng(3)
    q = np.stack([rng.uniform(1.6, 2.4, 30), rng.uniform(0.6, 1.4, 30)], axis=-1)
    phi, status = fb.assemble(q, on_failure="nan")
    chosen = {}
    for backend in ("numba", "numpy"):
        previous = kic.set_backend(backend)
        try:
            chosen[backend] = [fb.best_coordinates(p) for p, s in zip(phi, status) if s == 0]
        finally:
            kic.set_backend(previous)
    assert len(chosen["numba"]) > 20
    for (names_c, cond_c), (names_n, cond_n) in zip(chosen["numba"], chosen["numpy"]):
        assert cond_c == pytest.approx(cond_n, rel=1e-9)
        assert names_c == names_n


def test_best_coordinates_bad_input():
    fb = mechanisms.five_bar()
    with pytest.raises(kic.ModelError, match="max_candidates"):
        fb.best_coordinates(fb.reference_phi, max_candidates=3)
    tip = fb.in_coordinates([kic.PointPosition("coupler1", (0.35, 0, 0))])
    with pytest.raises(kic.ModelError, match="joint coordinates"):
        tip.best_coordinates(tip.reference_phi)
    with pytest.raises(kic.ModelError, match="shape"):
        fb.closure_jacobian(np.zeros(4))


# ------------------------------------------------------------ joint space
JOINT_SPACE = [mechanisms.five_bar, mechanisms.stewart_platform, mechanisms.slider_crank,
               mechanisms.two_arm_object]


@compiled
@pytest.mark.parametrize("make", JOINT_SPACE, ids=lambda m: m.__name__)
def test_joint_space_compiled_matches_numpy(make):
    """The near pass's ``M phi'' + b = J^T lambda, J phi'' + c = 0`` from the
    compiled tree (composite rigid bodies, Newton-Euler, the closure rows) equals
    the open chains' numpy models on random joint values and rates, batch shape
    kept (prismatic joints, shared trunks and several loops among the cases)."""
    model = make()
    rng = np.random.default_rng(11)
    phi = model.reference_phi + rng.normal(scale=0.3, size=(2, 3, model.N))
    phid = rng.normal(size=(2, 3, model.N))
    out = {}
    for backend in ("numba", "numpy"):
        previous = kic.set_backend(backend)
        try:
            out[backend] = model.joint_space_dynamics(phi, phid)
        finally:
            kic.set_backend(previous)
    R = sum(l.rank for l in model.system.loops)
    shapes = [(2, 3, model.N, model.N), (2, 3, model.N), (2, 3, R, model.N), (2, 3, R)]
    for a, b, shape in zip(out["numba"], out["numpy"], shapes):
        assert a.shape == b.shape == shape
        assert np.abs(a - b).max() <= 1e-12 * max(np.abs(b).max(), 1.0)


# ------------------------------------------------ switching on the compiled path
def _equal_float64():
    """A float64 descriptor equal to numpy's but another object, as the arrays of
    numba's kernels loaded from its cache carry."""
    import pickle
    distinct = pickle.loads(pickle.dumps(np.dtype(np.float64)))
    assert distinct == np.float64 and distinct is not np.dtype(np.float64)
    return distinct


@compiled
def test_one_pose_takes_an_equal_float64_descriptor(monkeypatch):
    """A model's one-pose compiled path (:meth:`kic.closed_eval.CompiledEvaluation.one`)
    takes arrays whose float64 descriptor is equal to numpy's but another object,
    with the same numbers bit for bit; byte-swapped arrays go the general path (which
    converts them) and give the same answer to rounding."""
    fb = mechanisms.five_bar()
    distinct = _equal_float64()
    calls = []
    one = K.one
    monkeypatch.setattr(K, "one", lambda *a: calls.append(1) or one(*a))
    q = fb.reference[fb.joint_indices(fb.coordinate_names)] + 0.1
    qd, qdd = np.array([0.7, -0.4]), np.array([1.5, 2.0])
    previous = kic.set_backend("numba")
    try:
        plain = fb.inverse_dynamics(q, qd, qdd)
        assert len(calls) == 1
        same = fb.inverse_dynamics(q.view(distinct), qd.view(distinct), qdd.view(distinct))
        assert len(calls) == 2
        np.testing.assert_array_equal(same, plain)
        swapped = [a.astype(a.dtype.newbyteorder()) for a in (q, qd, qdd)]
        converted = fb.inverse_dynamics(*swapped)
        assert len(calls) == 2
        np.testing.assert_allclose(converted, plain, rtol=1e-12, atol=1e-12)
    finally:
        kic.set_backend(previous)


@compiled
def test_fall_does_not_depend_on_where_kernels_came_from(monkeypatch):
    """The five-bar's fall through its flat configuration (coordinate switches and
    crossings) gives the same motion bit for bit whether the kernels' arrays carry
    numpy's float64 descriptor (kernels compiled in the process) or an equal other
    one (kernels loaded from numba's cache): the one-pose calls of the switching,
    crossing and record code take the compiled path either way."""
    from kic import closed_eval
    fb = mechanisms.five_bar()
    distinct = _equal_float64()
    one, declined, reached = closed_eval.CompiledEvaluation.one, [], []

    def counted(self, *a, **kw):
        out = one(self, *a, **kw)
        declined[-1] += out is None
        reached[-1] += any(isinstance(x, np.ndarray) and x.dtype is distinct for x in a)
        return out
    monkeypatch.setattr(closed_eval.CompiledEvaluation, "one", counted)

    def fall():
        declined.append(0)
        reached.append(0)
        return kic.simulate(fb, (0.0, 0.9), fb.reference, [0.0, 0.0], rtol=1e-8,
                            atol=1e-10)

    previous = kic.set_backend("numba")
    try:
        compiled_here = fall()
        for name in ("one", "free_motion"):
            kernel = getattr(K, name)
            monkeypatch.setattr(K, name, lambda *a, _k=kernel: tuple(
                a.view(distinct) if isinstance(a, np.ndarray) and a.dtype == np.float64
                else a for a in _k(*a)))
        from_cache = fall()
    finally:
        kic.set_backend(previous)
    assert compiled_here.switches and compiled_here.crossings
    # the planted descriptor reaches one-pose calls, and none declines (a decline
    # would take the general path: a millisecond a call, other rounding)
    assert reached[1] > 0 and declined == [0, 0]
    for name in ("t", "q", "qd", "phi", "energy"):
        np.testing.assert_array_equal(getattr(from_cache, name),
                                      getattr(compiled_here, name), err_msg=name)


# ------------------------------------------------------------ projection
@compiled
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_projection_on_the_compiled_rows(case):
    """The minimum-norm projection onto the closure (how a crossing lands) iterates
    on the compiled rows under the compiled backend: it reaches the closure (the
    numpy loops' residual, raw rows, below the tolerance) at the numpy path's
    answer to rounding."""
    from kic.settings import CLOSURE_TOLERANCE

    model, phi = case()
    rng = np.random.default_rng(5)
    start = phi + rng.normal(scale=1e-3, size=phi.shape)
    out = {}
    for backend in ("numba", "numpy"):
        previous = kic.set_backend(backend)
        try:
            out[backend] = model.project(start)
        finally:
            kic.set_backend(previous)
    (pc, wc), (pn, wn) = out["numba"], out["numpy"]
    assert np.all(wc < CLOSURE_TOLERANCE) and np.all(wn < CLOSURE_TOLERANCE)
    assert np.all(model.system.scaled_residual(pc)[0] < CLOSURE_TOLERANCE)
    assert np.abs(pc - pn).max() < 1e-10
    assert np.abs(pc - start).max() < 1e-2              # nearby, not elsewhere


# ------------------------------------------------------------ assembly mode
@compiled
@pytest.mark.parametrize("make", [mechanisms.five_bar, mechanisms.stewart_platform,
                                  mechanisms.two_arm_object,
                                  lambda: mechanisms.five_bar(coordinates="tip")],
                         ids=["five_bar", "stewart", "two_arm_object", "five_bar_tip_refined"])
def test_mode_at_from_the_compiled_jacobian(make):
    """The assembly mode's signs from the compiled closure Jacobian (the block rows
    read from it) are the numpy loops' signs, blocks of several loops and a block
    that refines into two parts (a five-bar in its tip's coordinates) included,
    and flip where the elbow does."""
    model = make()
    rng = np.random.default_rng(9)
    phi = model.reference_phi + rng.normal(scale=0.2, size=(40, model.N))
    found = {}
    for backend in ("numba", "numpy"):
        previous = kic.set_backend(backend)
        try:
            found[backend] = model.mode_at(phi.reshape(4, 10, model.N))
        finally:
            kic.set_backend(previous)
    assert found["numba"].shape == (4, 10, len(model.mode_parts))
    assert np.array_equal(found["numba"], found["numpy"])
    assert np.array_equal(found["numba"].reshape(40, -1), model.system.mode(phi))
    assert np.array_equal(model.mode_at(model.reference_phi), np.asarray(model.mode, float))


def test_near_pass_integrated_within_its_energy_check(monkeypatch):
    """A near pass is integrated at most at CROSSING_RTOL / 10 whatever the run's
    tolerance: at rtol 1e-6 the 2 s fall's pass near the flat configuration at
    0.771 s, integrated at the run's tolerance, changed the energy by 2e-6 of it
    and failed the pass's energy check (CROSSING_RTOL), leaving the motion to
    coordinates singular there (energy drift 2.3e-5); integrated tighter it
    passes (drift 8e-7)."""
    from kic import simulation
    from kic.settings import CROSSING_RTOL

    fb = mechanisms.five_bar()
    passes = []
    dop853 = simulation.INTEGRATORS["DOP853"]

    def recorded(fun, t0, y0, t_bound, **options):
        if np.size(y0) == 2 * fb.N:                 # every joint value: a near pass
            passes.append(options["rtol"])
        return dop853(fun, t0, y0, t_bound, **options)
    monkeypatch.setitem(simulation.INTEGRATORS, "DOP853", recorded)
    sim = kic.simulate(fb, (0.0, 1.0), fb.reference, [0.0, 0.0], rtol=1e-6, atol=1e-8)
    assert passes and max(passes) <= CROSSING_RTOL / 10
    assert [c["kind"] for c in sim.crossings] == ["bifurcation", "near pass"]
    assert sim.energy_drift < 1e-5
