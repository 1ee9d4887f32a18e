"""The backend switch and the compiled kernels against the numpy kernels.

The compiled kernels also run the oracle, literal-formula, seed, finite-difference
and Pinocchio tests (those modules use the ``each_backend`` fixture); here they
are compared with the numpy kernels directly, on batches with leading axes, and
the switch itself is checked.
"""
import numpy as np
import pytest

import kic
from kic import backend
from kic.kernels import jit, linalg, serial_numba, serial_numpy
from helpers import random_chain
from kic.settings import ABA_MIN_JOINTS

needs_numba = pytest.mark.skipif(not jit.available, reason="numba not installed")


def shifted(x):
    """A rigid placement translated by x along the previous frame's x axis."""
    T = np.eye(4)
    T[0, 3] = x
    return T


def under(name, fn):
    """fn() under backend ``name``."""
    previous = kic.set_backend(name)
    try:
        return fn()
    finally:
        kic.set_backend(previous)


def both(fn):
    """fn() under the numpy and the compiled backend."""
    return [under(name, fn) for name in ("numpy", "numba")]


def rel(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1.0)


@needs_numba
@pytest.mark.parametrize("seed, M", [(0, 1), (1, 2), (2, 4), (3, 6), (4, 7), (5, 9)])
def test_compiled_equals_numpy_on_random_batches(seed, M):
    rng = np.random.default_rng(700 + seed)
    chain = random_chain(rng, M)
    shape = (2, 3, M)                     # leading batch axes
    q, qd, qdd = (rng.uniform(-3, 3, shape) for _ in range(3))
    tau = rng.normal(size=shape)

    def run():
        dyn = chain.dynamics(q)
        return (dyn.I_star, dyn.P_star, dyn.gravity_load, chain.inverse_dynamics(q, qd, qdd),
                chain.forward_dynamics(q, qd, tau), chain.gravity_load(q))

    ref, fast = both(run)
    for name, a, b in zip(("I*", "P*", "gravity", "ID", "FD", "gravity_load"), fast, ref):
        assert a.shape == b.shape, name
        assert rel(a, b) < 1e-12, (name, rel(a, b))


@needs_numba
def test_compiled_P_star_with_or_without_I_star_first():
    rng = np.random.default_rng(5)
    chain = random_chain(rng, 5)
    q = rng.uniform(-3, 3, (4, 5))
    previous = kic.set_backend("numba")
    try:
        a = chain.dynamics(q)
        I_first, P_after = a.I_star, a.P_star
        b = chain.dynamics(q)
        P_first, I_after = b.P_star, b.I_star
    finally:
        kic.set_backend(previous)
    np.testing.assert_array_equal(I_first, I_after)
    np.testing.assert_array_equal(P_after, P_first)
    assert I_after.shape == (4, 5, 5) and P_first.shape == (4, 5, 5, 5)


@needs_numba
def test_compiled_single_configuration_shapes_and_values():
    rng = np.random.default_rng(9)
    chain = random_chain(rng, 6)
    q, qd, qdd = (rng.uniform(-2, 2, 6) for _ in range(3))
    ref, fast = both(lambda: (chain.inverse_dynamics(q, qd, qdd), chain.dynamics(q).I_star,
                              chain.gravity_load(q),
                              chain.forward_dynamics(q, qd, np.ones(6))))
    for a, b in zip(fast, ref):
        assert a.shape == b.shape
        assert rel(a, b) < 1e-12


@needs_numba
def test_compiled_forward_dynamics_reports_singular_inertia():
    chain = kic.SerialChain([kic.Joint("R"), kic.Joint("R", origin=shifted(1.0))],
                            [kic.Link(1.0, com=(0.5, 0, 0)), kic.Link(0.0)], gravity=(0, 0, 0))
    previous = kic.set_backend("numba")
    try:
        with pytest.raises(kic.SingularityError, match="effective inertia"):
            chain.forward_dynamics(np.zeros((3, 2)), np.zeros((3, 2)), np.ones((3, 2)))
        with pytest.raises(kic.ModelError, match="NaN"):
            chain.inverse_dynamics([np.nan, 0.0], [0.0, 0.0], [0.0, 0.0])
    finally:
        kic.set_backend(previous)



@pytest.mark.parametrize("M", [ABA_MIN_JOINTS - 1, ABA_MIN_JOINTS + 3])
def test_forward_dynamics_of_long_chains_both_backends(M):
    """Either side of kic.settings.ABA_MIN_JOINTS (I* factored, or the articulated-body
    recursion): both backends, one configuration and a batch, equal the solve of
    I* q'' = T - bias; a joint left without inertia is a SingularityError."""
    rng = np.random.default_rng(900 + M)
    chain = random_chain(rng, M)
    q, qd = rng.uniform(-2, 2, (2, 3, M)), rng.uniform(-2, 2, (2, 3, M))
    tau = rng.normal(scale=5.0, size=(2, 3, M))
    I = chain.dynamics(q).I_star
    ref = np.linalg.solve(I, (tau - chain.inverse_dynamics(q, qd, 0 * q))[..., None])[..., 0]
    names = ("numpy", "numba") if jit.available else ("numpy",)
    for name in names:
        batch = under(name, lambda: chain.forward_dynamics(q, qd, tau))
        one = under(name, lambda: chain.forward_dynamics(q[1, 2], qd[1, 2], tau[1, 2]))
        assert rel(batch, ref) < 1e-10 and rel(one, ref[1, 2]) < 1e-10, name
    joints = list(chain.joints) + [kic.Joint("R", origin=shifted(0.3))]
    bare = kic.SerialChain(joints, list(chain.links) + [kic.Link(0.0)], gravity=(0, 0, -9.81))
    for name in names:
        with pytest.raises(kic.SingularityError, match="effective inertia"):
            under(name, lambda: bare.forward_dynamics(np.zeros((2, M + 1)), np.zeros((2, M + 1)),
                                                      np.ones((2, M + 1))))
        with pytest.raises(kic.SingularityError, match="effective inertia"):
            under(name, lambda: bare.forward_dynamics(np.zeros(M + 1), np.zeros(M + 1),
                                                      np.ones(M + 1)))

def test_set_backend_validates_and_restores(monkeypatch):
    previous = kic.set_backend("numpy")
    try:
        assert kic.get_backend() == "numpy"
        with pytest.raises(ValueError, match="unknown kic backend 'cuda'"):
            kic.set_backend("cuda")
        assert kic.get_backend() == "numpy"
        monkeypatch.setattr(jit, "available", False)
        with pytest.raises(ImportError, match="kic\\[fast\\]"):
            kic.set_backend("numba")
        kic.set_backend("auto")
        assert kic.get_backend() == "numpy"          # auto without numba
    finally:
        monkeypatch.undo()
        assert kic.set_backend(previous) == "auto"
    if previous == "auto":
        assert kic.get_backend() == ("numba" if jit.available else "numpy")


def test_environment_variable_sets_the_first_choice(monkeypatch):
    monkeypatch.setattr(backend, "_choice", None)
    monkeypatch.setattr(backend, "_use", None)
    monkeypatch.setenv("KIC_BACKEND", "numpy")
    assert kic.get_backend() == "numpy"
    monkeypatch.setattr(backend, "_choice", None)
    monkeypatch.setattr(backend, "_use", None)
    monkeypatch.setenv("KIC_BACKEND", "fortran")
    with pytest.raises(ValueError, match="KIC_BACKEND"):
        kic.get_backend()
    monkeypatch.setattr(backend, "_choice", None)
    monkeypatch.setattr(backend, "_use", None)


@needs_numba
def test_compiled_primitives_equal_numpy():
    """The compiled cross product (any strides) and small-matrix inverse."""
    from kic.backend import cross, small_inverse
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(3, 5, 7)), rng.normal(size=(3, 5, 7))
    views = [(a, b, 0), (a[:, :4:2], b[:, 1::2], 0), (a.transpose(1, 0, 2), b.transpose(1, 0, 2), 1),
             (a[:, 0], b[:, 0], 0), (a[:, :, 0].T, b[:, :, 0].T, 1)]
    for x, y, axis in views:
        fast = under("numba", lambda: cross(x, y, axis))
        np.testing.assert_allclose(fast, np.cross(x, y, axis=axis), rtol=0, atol=1e-14)
    for m in (1, 2, 3, 4, 6, 9):
        A = rng.normal(size=(4, 2, m, m)) + 3 * np.eye(m)
        ref, fast = both(lambda: small_inverse(A))
        np.testing.assert_allclose(fast, np.linalg.inv(A), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ref, np.linalg.inv(A), rtol=1e-12, atol=1e-12)
    S = np.ones((2, 4, 4))                              # rank one: no inverse
    S[1] = np.eye(4)
    assert np.isnan(under("numba", lambda: small_inverse(S))[0]).all()
    np.testing.assert_array_equal(under("numba", lambda: small_inverse(S))[1], np.eye(4))


def test_unimportable_numba_falls_back_to_numpy(monkeypatch):
    """numba present but broken (say, built for another numpy): a warning, then numpy."""
    import sys
    previous = kic.set_backend("auto")
    try:
        monkeypatch.setattr(jit, "available", True)
        monkeypatch.setattr(jit, "_loaded", False)
        monkeypatch.setitem(sys.modules, "numba", None)      # makes `import numba` fail
        monkeypatch.setattr(backend, "_use", None)
        with pytest.warns(RuntimeWarning, match="cannot be imported"):
            assert kic.get_backend() == "numpy"
        assert jit.available is False
        with pytest.raises(ImportError, match="kic\\[fast\\]"):
            kic.set_backend("numba")
    finally:
        monkeypatch.undo()
        kic.set_backend(previous)


@needs_numba
def test_read_only_and_strided_inputs_reuse_the_compiled_kernels():
    """Inputs of any layout (broadcast, read-only, strided) give the same results and
    compile nothing new: one specialization per kernel."""
    rng = np.random.default_rng(11)
    chain = random_chain(rng, 4)
    q = rng.uniform(-2, 2, (6, 4))
    qd = rng.normal(size=(6, 4))
    kernels = ("_rnea", "_inertia", "_inertia_power", "_gravity", "_forward",
               "_dynamics1", "_gravity1", "_inertia1")
    from kic.kernels import frames

    def counts_now():
        return {**{k: len(getattr(serial_numba, k).signatures) for k in kernels},
                "pose_lanes": len(frames.pose_lanes.signatures)}

    def run(q_, qd_):
        dyn = chain.dynamics(q_)
        return (chain.inverse_dynamics(q_, qd_, qd_), dyn.I_star, dyn.P_star,
                chain.gravity_load(q_), chain.forward_dynamics(q_, qd_, qd_),
                chain.kinematics(q_, 2).point(3, [0.1, 0.2, 0.3]).H)

    previous = kic.set_backend("numba")
    try:
        ref = run(q, qd)
        counts = counts_now()
        frozen, frozen_d = q.copy(), qd.copy()                   # read-only, contiguous
        frozen.flags.writeable = frozen_d.flags.writeable = False
        cases = ((frozen, frozen_d), (frozen[1], frozen_d[1]),
                 (np.broadcast_to(q[2], (6, 4)), np.broadcast_to(qd[2], (6, 4))),  # stride 0
                 (np.asfortranarray(q), np.asfortranarray(qd)))                    # strided
        for q_, qd_ in cases:
            for a, b in zip(run(q_, qd_), run(np.array(q_), np.array(qd_))):
                np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
        assert rel(run(q[2], qd[2])[0], ref[0][2]) < 1e-13
        assert counts_now() == counts
    finally:
        kic.set_backend(previous)


@needs_numba
@pytest.mark.parametrize("seed, M", [(0, 1), (1, 3), (2, 7)])
def test_compiled_motion_and_loads_from_motion_equal_numpy(seed, M):
    """The kernels the closed models use: link frames, screw motion, and joint loads
    from a given velocity-product motion (with and without gravity)."""
    rng = np.random.default_rng(900 + seed)
    chain = random_chain(rng, M)
    d = backend.chain_data(chain)
    qT, qdT, qddT = (rng.uniform(-2, 2, (M, 37)) for _ in range(3))

    def run():
        k = backend.kernels()
        Fc, sR, sv = k.pose(d, qT)
        out = [Fc, sR, sv]
        out += list(k.link_motion(sR, sv, qdT))
        out += list(k.link_motion(sR, sv, qdT, qddT, chain.gravity))
        motion = k.link_motion(sR, sv, qdT)
        out += [k.loads_from_motion(d, Fc, sR, sv, motion, qddT, True),
                k.loads_from_motion(d, Fc, sR, sv, motion, qddT, False)]
        return out

    ref, fast = both(run)
    for k, (a, b) in enumerate(zip(fast, ref)):
        assert a.shape == b.shape, k
        assert rel(a, b) < 1e-12, (k, rel(a, b))
    # the loads from the motion are the inverse dynamics (gravity included)
    tau = under("numpy", lambda: chain.inverse_dynamics(qT.T, qdT.T, qddT.T))
    assert rel(ref[-2].T, tau) < 1e-12


def test_kernel_sets_have_the_same_functions_and_signatures():
    """One dispatch: both kernel sets provide every function of backend.KERNELS with
    the same parameters, and kernels() follows set_backend."""
    import inspect
    for name in backend.KERNELS:
        a, b = getattr(serial_numpy, name), getattr(serial_numba, name)
        assert list(inspect.signature(a).parameters) == list(inspect.signature(b).parameters), name
    assert under("numpy", backend.kernels) is serial_numpy
    if jit.available:
        assert under("numba", backend.kernels) is serial_numba


def test_import_kic_does_not_import_numba():
    """numba is optional and imported at the first kernel call, not by ``import kic``
    or by building a model (default backend choice)."""
    import os
    import subprocess
    import sys
    code = ("import sys, kic, mechanisms; mechanisms.puma560(); a = 'numba' in sys.modules; "
            "kic.set_backend('numpy'); mechanisms.puma560().inverse_dynamics([0.0] * 6, "
            "[0.0] * 6, [0.0] * 6); print(a, 'numba' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "KIC_BACKEND"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.split() == ["False", "False"]



def test_import_kic_is_light_and_every_name_resolves():
    """``import kic`` imports no scipy, networkx, matplotlib or numba (the modules that
    need them load on first use of their names); every public name resolves, the
    lazy ones to the objects of their modules, with no import cycle."""
    import os
    import subprocess
    import sys
    code = ("import sys, kic; print(sorted(m for m in ('scipy', 'networkx', 'matplotlib', "
            "'numba') if m in sys.modules)); from kic import *; "
            "import kic.closure, kic.topology; "
            "print(kic.ClosedModel is kic.closure.ClosedModel, kic.Mechanism is "
            "kic.topology.Mechanism, all(hasattr(kic, n) for n in kic.__all__))")
    env = {k: v for k, v in os.environ.items() if k != "KIC_BACKEND"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True True True"]
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        kic.nonexistent

@pytest.mark.parametrize("name", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_one_configuration_path_equals_the_batch_and_validates(name):
    """The one-configuration entry points (one kernel call) give the batch kernels'
    values; inputs they do not take (lists, ints, read-only, strided, NaN, wrong size)
    go through the validating path: same values, or a ModelError naming the argument."""
    rng = np.random.default_rng(21)
    chain = random_chain(rng, 5)
    q, qd, qdd, tau = (rng.uniform(-2, 2, (3, 5)) for _ in range(4))

    def run():
        one = [np.array([f(k) for k in range(3)]) for f in (
            lambda k: chain.inverse_dynamics(q[k], qd[k], qdd[k]),
            lambda k: chain.forward_dynamics(q[k], qd[k], tau[k]),
            lambda k: chain.gravity_load(q[k]),
            lambda k: chain.dynamics(q[k]).I_star,
            lambda k: chain.dynamics(q[k]).gravity_load,
            lambda k: chain.dynamics(q[k]).P_star)]
        dyn = chain.dynamics(q)
        batch = [chain.inverse_dynamics(q, qd, qdd), chain.forward_dynamics(q, qd, tau),
                 chain.gravity_load(q), dyn.I_star, dyn.gravity_load, dyn.P_star]
        for a, b in zip(one, batch):
            assert a.shape == b.shape
            assert rel(a, b) < 1e-12
        ref = chain.inverse_dynamics(q[0], qd[0], qdd[0])
        frozen = q[0].copy()
        frozen.flags.writeable = False
        # a list, read-only, strided, (1, M)
        for q_ in (q[0].tolist(), frozen, np.repeat(q[0], 2)[::2], q[0][None]):
            got = chain.inverse_dynamics(q_, qd[0], qdd[0])
            assert rel(got.ravel(), ref) < 1e-14
        assert chain.inverse_dynamics(q[0], qd[0], np.zeros(5, dtype=int)).shape == (5,)
        bad = qd[0].copy()
        bad[2] = np.nan
        with pytest.raises(kic.ModelError, match="qd"):
            chain.inverse_dynamics(q[0], bad, qdd[0])
        with pytest.raises(kic.ModelError, match="tau"):
            chain.forward_dynamics(q[0], qd[0], np.r_[tau[0], 1.0])
        with pytest.raises(kic.ModelError, match="q"):
            chain.gravity_load(np.full(5, np.inf))
        with pytest.raises(kic.ModelError, match="q"):
            chain.dynamics(np.full(4, 0.0))
    under(name, run)


def test_spd_rule_is_relative_and_independent_of_units():
    """The one singularity rule: a pivot below 1e-12 of its own diagonal entry.  Scaling
    the coordinates (units: m vs mm for a prismatic joint) changes no decision; the
    plain-float Cholesky, the batched numpy factor and spd_solve agree."""
    from kic.backend import spd_solve
    plain_solve = jit.plain("kic.kernels.linalg", "cholesky_solve")
    rng = np.random.default_rng(4)
    B = rng.normal(size=(4, 4))
    A = B @ B.T + 0.1 * np.eye(4)
    b = rng.normal(size=4)
    x = np.linalg.solve(A, b)
    for scale in (np.ones(4), np.array([1e3, 1.0, 1e-3, 1e6])):
        D = np.diag(scale)
        As = D @ A @ D                           # the same system in other units
        xs = [0.0] * 4
        assert plain_solve(As.tolist(), (scale * b).tolist(), [[0.0] * 4 for _ in range(4)], xs)
        np.testing.assert_allclose(scale * np.array(xs), x, rtol=1e-9)
        np.testing.assert_allclose(scale * spd_solve(As, scale * b), x, rtol=1e-9)
        # a nearly dependent coordinate: the last pivot is 1e-14 of its diagonal entry
        C = A.copy()
        v = C[:3, :3] @ np.array([1.0, -2.0, 0.5])
        C[3, :3] = C[:3, 3] = v
        C[3, 3] = np.array([1.0, -2.0, 0.5]) @ v * (1 + 1e-14)
        Cs = D @ C @ D
        assert not plain_solve(Cs.tolist(), b.tolist(), [[0.0] * 4 for _ in range(4)], [0.0] * 4)
        assert not linalg.spd_factor(Cs[None])[1][0]
        with pytest.raises(kic.SingularityError):
            spd_solve(Cs, b)
    assert linalg.spd_pivot_ok(2e-12, 1.0) and not linalg.spd_pivot_ok(1e-12, 1.0)
    assert not jit.plain("kic.kernels.linalg", "spd_pivot_ok")(np.nan, 1.0)


@needs_numba
def test_shared_arithmetic_compiled_equals_plain():
    """The frame step, screw step and link wrench run compiled inside the kernels and
    uncompiled in the plain-float kernels: the numba one-configuration results equal
    the plain ones."""
    rng = np.random.default_rng(8)
    chain = random_chain(rng, 6)
    d = backend.chain_data(chain)
    q, qd, qdd = (rng.uniform(-2, 2, 6) for _ in range(3))
    for name, args, shape in (("inverse_dynamics_one", (q, qd, qdd), (6,)),
                              ("gravity_load_one", (q,), (6,)),
                              ("inertia_one", (q,), (6, 6)),
                              ("forward_dynamics_one", (q, qd, qdd), (6,))):
        a, b = np.empty(shape), np.empty(shape)
        assert getattr(serial_numpy, name)(d, *args, a)
        under("numba", lambda: getattr(serial_numba, name)(d, *args, b))
        assert rel(a, b) < 1e-13, name


def test_kernel_data_pickles_and_matches_the_kinematics_pose():
    """The chain's kernel data (built once with the chain) survives pickling, and the
    public Pose of ChainKinematics is the kernel set's pose."""
    import pickle
    rng = np.random.default_rng(31)
    chain = random_chain(rng, 4)
    q, qd, tau = (rng.uniform(-2, 2, 4) for _ in range(3))
    copy = pickle.loads(pickle.dumps(chain))
    np.testing.assert_array_equal(copy.forward_dynamics(q, qd, tau),
                                  chain.forward_dynamics(q, qd, tau))
    qs = rng.uniform(-2, 2, (5, 4))
    pose = chain.kinematics(qs).pose
    Fc, sR, sv = backend.kernels().pose(backend.chain_data(chain), qs.T)
    for a, b in ((pose.Fc, Fc), (pose.sR, sR), (pose.sv, sv)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)


@needs_numba
def test_kernels_compile_into_another_module_and_stay_plain_for_floats():
    """A compiled module marked after load() calls the kernels of kic.kernels (the
    closed models' route to the same Cholesky and singularity rule); their plain
    twins call plain twins, never dispatchers, also after load()."""
    import numba
    assert jit.load()

    def solve(A, b):
        x = np.empty(b.shape[0])
        ok = linalg.cholesky_solve(A, b, np.empty(A.shape), x)
        return ok, x
    solve = numba.njit(solve)
    A = np.array([[4.0, 1.0], [1.0, 3.0]])
    ok, x = solve(A, np.array([1.0, 2.0]))
    assert ok and np.allclose(A @ x, [1.0, 2.0])
    assert not solve(np.array([[1.0, 1.0], [1.0, 1.0]]), np.ones(2))[0]
    dispatcher = numba.core.registry.CPUDispatcher
    for module, name in (("kic.kernels.linalg", "cholesky_solve"),
                         ("kic.kernels.inertia", "link_world"),
                         ("kic.kernels.frames", "frame_step")):
        twin = jit.plain(module, name)
        assert not isinstance(twin, dispatcher)
        assert not any(isinstance(v, dispatcher) for v in twin.__globals__.values()
                       if callable(v) and getattr(v, "__module__", "").startswith("kic.kernels"))


@needs_numba
def test_compilation_notice_once_when_cold_and_never_when_warm(tmp_path):
    """A kernel missing from numba's cache prints one line on stderr as it compiles;
    loaded from the cache, nothing (and a user's own numba functions never)."""
    import os
    import subprocess
    import sys
    code = ("import numba, numpy as np, kic; from kic.backend import small_inverse; "
            "numba.njit(lambda x: x + 1)(1); kic.set_backend('numba'); "
            "small_inverse(np.eye(4)[None]); small_inverse(2 * np.eye(5)[None])")
    env = {k: v for k, v in os.environ.items() if k != "KIC_BACKEND"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, check=True).stderr for _ in range(2)]
    assert runs[0].count("kic: compiling kernels") == 1 and str(tmp_path) in runs[0]
    assert "kic:" not in runs[1]


@needs_numba
def test_view_and_stack_vector_compiled_equal_plain():
    """jit.view: the C-contiguous array of a shape at an offset of a vector, sharing
    its data (compiled: no slice, reshape or checks) as numpy's slice and reshape
    give it; jit.stack_vector: n floats on the stack of a compiled function."""
    import numba
    assert jit.load()
    view, stack = serial_numba.view, serial_numba.stack_vector    # bound at load()

    def carve(w, M):
        a, b, c = view(w, 1, (M,)), view(w, 1 + M, (M, 3)), view(w, 1 + 4 * M, (2, M, 3))
        a[0] = -1.0                                   # written through to w
        s = stack(3 * M)
        for i in range(3 * M):
            s[i] = b[i // 3, i % 3] + c[1, i // 3, i % 3]
        total = 0.0
        for i in range(3 * M):
            total += s[i]
        return a.sum(), b[M - 1, 2], c[1, 0, 1], total

    M = 4
    w = np.arange(1.0 + 10 * M)
    compiled = numba.njit(carve)(w.copy(), M)
    plain = jit.plain("kic.kernels.jit", "view")
    b, c = plain(w, 1 + M, (M, 3)), plain(w, 1 + 4 * M, (2, M, 3))
    a = plain(w, 1, (M,)).copy()
    a[0] = -1.0
    assert np.shares_memory(b, w) and b.flags.c_contiguous
    assert compiled == (a.sum(), b[M - 1, 2], c[1, 0, 1], (b + c[1]).sum())
    assert jit.plain("kic.kernels.jit", "stack_vector")(5).shape == (5,)


@needs_numba
def test_kernels_imported_after_load_compile_each_recursion_once(tmp_path):
    """The compiled backend chosen before any chain exists: the serial kernels'
    module is imported after load() and still compiles (its jit.view and
    jit.stack_vector are the compiled ones), with the numpy kernels' numbers; one
    pose and batches call rnea_one and inertia_one with the same argument types
    (gravity as an array, not a constant flag), so each is compiled once."""
    import os
    import subprocess
    import sys
    code = ("import sys, numpy as np, kic; kic.set_backend('numba'); "
            "assert 'kic.kernels.serial_numba' not in sys.modules; import mechanisms; "
            "from kic.backend import kernels; from kic.kernels import inertia, rnea; "
            "arm = mechanisms.puma560(); q = np.full(6, 0.3); "
            "run = lambda x: np.concatenate([np.ravel(y) for y in ("
            "arm.inverse_dynamics(x, x, x), arm.forward_dynamics(x, x, x), "
            "arm.gravity_load(x), arm.dynamics(x).I_star, kernels().inverse_dynamics("
            "arm.kernel_data, np.atleast_2d(x), np.atleast_2d(x), np.atleast_2d(x), False))]); "
            "a = [run(q), run(q[None])]; "
            "assert len(rnea.rnea_one.signatures) == len(inertia.inertia_one.signatures) == 1; "
            "kic.set_backend('numpy'); b = [run(q), run(q[None])]; "
            "assert np.allclose(a, b, rtol=1e-12, atol=1e-12), (a, b)")
    env = {k: v for k, v in os.environ.items() if k != "KIC_BACKEND"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)                  # compiled, not loaded
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)


@needs_numba
def test_a_kernel_first_reached_from_a_bare_one_keeps_its_reference_counts(tmp_path):
    """numba gives a function whose reference counting is left unset the setting of
    the compilation that first reaches it: a kernel that allocates, first compiled
    from a bare caller's (jit bare: none), failed to compile, and only on a first
    use that took that path (a cold LSODA simulation did: DCFODE's work array).
    kic sets it on every kernel, so the order of first calls does not matter."""
    import os
    import subprocess
    import sys
    (tmp_path / "reach.py").write_text(
        "import numpy as np\n"
        "from kic.kernels.jit import jit\n\n\n"
        "@jit\n"
        "def allocates(n):\n"
        "    return np.zeros(n).sum() + n\n\n\n"
        "@jit(bare=True)\n"
        "def bare_caller(n):\n"
        "    return allocates(n)\n")
    code = ("from kic.kernels import jit; assert jit.load(); import reach; "
            "assert reach.bare_caller(3) == 3.0; assert reach.allocates(2) == 2.0")
    env = {k: v for k, v in os.environ.items() if k != "KIC_BACKEND"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")          # compiled, not loaded
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
