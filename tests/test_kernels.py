"""kic.kernels: each compiled function against its numpy twin (parity), and both
against numpy/LAPACK references, on random, ill-conditioned and singular inputs."""
import numpy as np
import pytest

from kic.kernels import jit, linalg
from kic.settings import SPD_PIVOT_RTOL

numba = pytest.importorskip("numba")


@pytest.fixture(scope="module", autouse=True)
def compiled():
    assert jit.load()


def test_one_pose_recursions_are_for_compiled_callers_only():
    """rnea_one and inertia_one are compiled without the wrappers of calls from
    Python (their entry points call them); a call from Python says so."""
    from kic.kernels import inertia, rnea
    for kernel in (rnea.rnea_one, inertia.inertia_one):
        with pytest.raises(TypeError, match="compiled callers only"):
            kernel()


def through_compiled(kernel):
    """A kernel compiled for compiled callers only (jit.compiled_callers_only),
    called from here through a compiled caller: its compiled code runs."""
    return numba.njit(lambda *args: kernel(*args))


def _spd(rng, m, cond=10.0):
    Q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    s = np.geomspace(1.0, 1.0 / cond, m)
    return (Q * s) @ Q.T


def test_functions_are_compiled_after_load():
    for name in ("cholesky_solve", "lu_factor", "lu_solve", "condition_number", "invert_into",
                 "frobenius_bound"):
        assert isinstance(getattr(linalg, name), numba.core.registry.CPUDispatcher), name
    # the plain twins stay reachable for code that runs without numba
    assert not isinstance(jit.plain("kic.kernels.linalg", "cholesky_solve"),
                          numba.core.registry.CPUDispatcher)


@pytest.mark.parametrize("m", [1, 2, 3, 6, 9])
def test_spd_solve_compiled_equals_numpy(m):
    rng = np.random.default_rng(m)
    A = np.stack([_spd(rng, m, 10.0 ** rng.uniform(0, 8)) for _ in range(20)])
    b = rng.standard_normal((20, m))
    L, ok = linalg.spd_factor(A)
    assert ok.all()
    x_np = linalg.spd_substitute(L, b)
    for k in range(20):
        x = np.empty(m)
        assert linalg.cholesky_solve(A[k].copy(), b[k], np.zeros((m, m)), x)
        np.testing.assert_allclose(x, x_np[k], rtol=1e-7 * np.linalg.cond(A[k]) * 1e-1,
                                   atol=0)
        np.testing.assert_allclose(A[k] @ x, b[k], atol=1e-9 * np.linalg.cond(A[k]))
        # in place: L may be A itself
        Ak, y = A[k].copy(), np.empty(m)
        assert linalg.cholesky_solve(Ak, b[k], Ak, y)
        np.testing.assert_array_equal(y, x)
        # and the plain function (no numba) gives the same numbers on lists
        plain = jit.plain("kic.kernels.linalg", "cholesky_solve")
        z = [0.0] * m
        assert plain(A[k].tolist(), b[k].tolist(), [[0.0] * m for _ in range(m)], z)
        np.testing.assert_allclose(z, x, rtol=1e-12, atol=1e-14 * np.abs(x).max())


def test_spd_rule_is_scale_invariant_and_same_on_both_paths():
    # a pivot ratio just above and just below the rule, then scaled by D A D
    for ratio, expect in ((SPD_PIVOT_RTOL * 4, True), (SPD_PIVOT_RTOL / 4, False)):
        e = np.sqrt(ratio)
        A = np.array([[1.0, np.sqrt(1 - ratio)], [np.sqrt(1 - ratio), 1.0]])
        # pivot 2: 1 - (1 - ratio) = ratio (to rounding); keep it away from the edge
        for D in (np.diag([1.0, 1.0]), np.diag([1e-3, 1e4])):
            B = D @ A @ D
            x = np.empty(2)
            assert linalg.cholesky_solve(B.copy(), np.ones(2), np.zeros((2, 2)), x) is expect
            assert bool(linalg.spd_factor(B)[1]) is expect
        assert e > 0


def test_spd_solve_names_the_batch_index():
    from kic import SingularityError
    A = np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0]), np.eye(3)])
    with pytest.raises(SingularityError, match=r"effective inertia I\* .* batch index \(1,\)"):
        linalg.spd_solve(A, np.ones((3, 3)), "effective inertia I*")
    nan = np.eye(2)[None].repeat(2, 0)
    nan[0, 0, 0] = np.nan
    with pytest.raises(SingularityError):
        linalg.spd_solve(nan, np.ones((2, 2)))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_lu_compiled_equals_numpy(n):
    rng = np.random.default_rng(10 + n)
    for _ in range(20):
        A = rng.standard_normal((n, n))
        b = rng.standard_normal(n)
        F, piv, x = A.copy(), np.zeros(n, np.int64), b.copy()
        sign = linalg.lu_factor(F, n, piv)
        linalg.lu_solve(F, n, piv, x)
        y, s = linalg.lu_solve_stacked(A, b)
        assert sign == s == np.sign(np.linalg.det(A))
        np.testing.assert_allclose(x, y, rtol=1e-9 * np.linalg.cond(A), atol=0)
        np.testing.assert_allclose(A @ x, b, atol=1e-10 * np.linalg.cond(A))


def test_lu_singular_and_not_finite():
    A = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert linalg.lu_factor(A.copy(), 2, np.zeros(2, np.int64)) == 0.0
    x, s = linalg.lu_solve_stacked(np.stack([A, np.eye(2)]), np.ones((2, 2)))
    assert s.tolist() == [0.0, 1.0] and np.isnan(x[0]).all() and np.allclose(x[1], 1.0)
    B = np.eye(2)
    B[1, 0] = np.inf
    assert linalg.lu_factor(B.copy(), 2, np.zeros(2, np.int64)) == 0.0
    assert linalg.lu_solve_stacked(B, np.ones(2))[1] == 0.0


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (6, 6), (6, 3), (9, 4)])
def test_condition_compiled_equals_numpy(shape):
    rng = np.random.default_rng(sum(shape))
    m, n = shape
    for k in range(20):
        U, _ = np.linalg.qr(rng.standard_normal((m, m)))
        V, _ = np.linalg.qr(rng.standard_normal((n, n)))
        s = np.geomspace(1.0, 10.0 ** -rng.uniform(0, 12), n) * 10.0 ** rng.uniform(-6, 6)
        A = (U[:, :n] * s) @ V.T
        c = linalg.condition_number(A, np.empty((m, n)))
        cn = linalg.condition_numbers(A)
        exact = s.max() / s.min()
        # one-sided Jacobi keeps high relative accuracy in the singular values
        assert c == pytest.approx(exact, rel=1e-6 + exact * 1e-15)
        assert cn == pytest.approx(c, rel=1e-6 + c * 1e-14)


def test_condition_singular_and_not_finite_is_inf():
    # exactly singular: inf or a rounding-level sigma_min (never a modest number)
    Z = np.array([[1.0, 1.0], [1.0, 1.0]])
    assert linalg.condition_number(Z, np.empty((2, 2))) > 1e15
    assert linalg.condition_numbers(Z) > 1e15
    assert linalg.condition_numbers(np.zeros((3, 3))) == np.inf
    N = np.array([[1.0, np.nan], [0.0, 1.0]])
    assert linalg.condition_number(N, np.empty((2, 2))) == np.inf
    assert linalg.condition_numbers(np.stack([N, np.eye(2)])).tolist() == [np.inf, 1.0]


def test_scaled_condition_is_unit_free():
    # a 2x2 with a length row and a prismatic column: metres vs millimetres agree
    rng = np.random.default_rng(3)
    A = rng.standard_normal((5, 2, 2))
    rows, cols = np.array([False, True]), np.array([True, False])
    k_m = linalg.scaled_condition(A, rows, cols, 0.4)
    # the same mechanism in mm: length rows x1000, prismatic columns (per mm) /1000
    A_mm = A * np.where(rows, 1e3, 1.0)[:, None] * np.where(cols, 1e-3, 1.0)[None, :]
    k_mm = linalg.scaled_condition(A_mm, rows, cols, 400.0)
    np.testing.assert_allclose(k_mm, k_m, rtol=1e-12)


@pytest.mark.parametrize("m", [1, 2, 3, 4, 7])
def test_inverse_compiled_equals_numpy(m):
    rng = np.random.default_rng(20 + m)
    A = rng.standard_normal((15, m, m))
    Ai = linalg.small_inverse(A)
    for k in range(15):
        out = np.empty((m, m))
        assert linalg.invert_into(A[k], out, np.empty((m, 2 * m)))
        np.testing.assert_allclose(out, Ai[k], rtol=1e-9, atol=1e-9 * np.linalg.cond(A[k]))
        np.testing.assert_allclose(out @ A[k], np.eye(m), atol=1e-10 * np.linalg.cond(A[k]))
        kf = linalg.frobenius_bound(A[k], out, m)
        assert kf == pytest.approx(linalg.frobenius_bounds(A[k], Ai[k]), rel=1e-9)
        kappa = np.linalg.cond(A[k])
        assert kappa * (1 - 1e-12) <= kf <= m * kappa * (1 + 1e-12)


def test_inverse_singular():
    out = np.empty((2, 2))
    assert not linalg.invert_into(np.zeros((2, 2)), out, np.empty((2, 4)))
    assert np.isnan(out).all()
    S = np.zeros((2, 5, 5))
    S[1] = np.eye(5)
    Si = linalg.small_inverse(S)
    assert np.isnan(Si[0]).all() and np.allclose(Si[1], np.eye(5))
    assert not np.isfinite(linalg.small_inverse(np.zeros((3, 3)))).all()


# --------------------------------------------------------------------------
# frames
# --------------------------------------------------------------------------
def _unit(rng, n):
    a = rng.standard_normal((n, 3))
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def test_rodrigues_compiled_equals_numpy():
    from kic.kernels import frames
    rng = np.random.default_rng(31)
    a, x = _unit(rng, 20), rng.uniform(-7, 7, 20)
    R = frames.rotation_matrices(a, x)
    plain = jit.plain("kic.kernels.frames", "rodrigues")
    for k in range(20):
        fast = np.array(frames.rodrigues(a[k, 0], a[k, 1], a[k, 2], x[k])).reshape(3, 3)
        slow = np.array(plain(a[k, 0], a[k, 1], a[k, 2], x[k])).reshape(3, 3)
        np.testing.assert_allclose(fast, R[k], atol=1e-15)
        np.testing.assert_allclose(slow, fast, atol=1e-15)
        # a rotation, about a, by x: R a = a, trace = 1 + 2 cos x
        np.testing.assert_allclose(R[k] @ R[k].T, np.eye(3), atol=1e-15)
        np.testing.assert_allclose(R[k] @ a[k], a[k], atol=1e-15)
        assert np.trace(R[k]) == pytest.approx(1 + 2 * np.cos(x[k]), abs=1e-14)
    # against scipy's rotation vectors
    from scipy.spatial.transform import Rotation
    np.testing.assert_allclose(R, Rotation.from_rotvec(a * x[:, None]).as_matrix(), atol=1e-14)
    T = frames.joint_motions(True, a, x)
    np.testing.assert_array_equal(T[:, :3, :3], R)
    S = frames.joint_motions(False, a[0], x)
    np.testing.assert_allclose(S[:, :3, 3], x[:, None] * a[0])
    np.testing.assert_array_equal(S[:, :3, :3], np.broadcast_to(np.eye(3), (20, 3, 3)))


@pytest.mark.parametrize("revolute", [True, False])
def test_frame_step_compiled_equals_plain_and_matrices(revolute):
    from kic.kernels import frames
    rng = np.random.default_rng(32 + revolute)
    plain = jit.plain("kic.kernels.frames", "frame_step")
    for _ in range(10):
        R = frames.rotation_matrices(_unit(rng, 1)[0], rng.uniform(-3, 3))
        T = tuple(R.ravel()) + tuple(rng.standard_normal(3))
        Ro = frames.rotation_matrices(_unit(rng, 1)[0], rng.uniform(-3, 3))
        O = np.hstack([Ro, rng.standard_normal((3, 1))])
        q = rng.uniform(-3, 3)
        fast = frames.frame_step(T, tuple(O.ravel()), revolute, q)
        slow = plain(T, tuple(O.ravel()), revolute, q)
        np.testing.assert_allclose(np.hstack(fast), np.hstack(slow), atol=1e-15)
        # the matrix form: T_j = T O motion_z(q), screw (s, r x s) or (0, s)
        H = np.eye(4)
        H[:3, :3], H[:3, 3] = np.reshape(T[:9], (3, 3)), T[9:]
        J = H @ np.vstack([O, [0, 0, 0, 1]])
        Tj = J @ frames.joint_motions(revolute, (0.0, 0.0, 1.0), q)
        np.testing.assert_allclose(fast[0], np.hstack([Tj[:3, :3].ravel(), Tj[:3, 3]]),
                                   atol=1e-14)
        s, r = J[:3, 2], J[:3, 3]
        np.testing.assert_allclose(fast[1], s if revolute else 0 * s, atol=1e-15)
        np.testing.assert_allclose(fast[2], np.cross(r, s) if revolute else s, atol=1e-14)


# --------------------------------------------------------------------------
# the serial chain's kernels: each compiled function against its numpy twin and
# its plain-float twin (the kernel sets compose them; tests/test_compiled.py)
# --------------------------------------------------------------------------
def _chain_data(seed, M):
    from helpers import random_chain
    rng = np.random.default_rng(seed)
    chain = random_chain(rng, M)
    return rng, chain.kernel_data


def _one_pose(d, q):
    from kic.kernels import frames
    M = d.dof
    A, t, R, p = np.empty((M, 3)), np.empty((M, 3)), np.empty((M, 3, 3)), np.empty((M, 3))
    frames.frames_into(d.base, d.isR, d.O, q, A, t, R, p)
    return A, t, R, p


@pytest.mark.parametrize("seed, M", [(1, 1), (2, 3), (3, 7)])
def test_frames_of_a_chain_compiled_equal_numpy_and_floats(seed, M):
    from kic.kernels import frames
    rng, d = _chain_data(seed, M)
    qT = rng.uniform(-3, 3, (M, 9))
    Fc, sR, sv = np.empty((M, 4, 3, 9)), np.empty((3, M, 9)), np.empty((3, M, 9))
    frames.pose_lanes(d.base, d.isR, d.O, qT, Fc, sR, sv)
    ref = frames.pose_numpy(d, qT)
    for a, b in zip((Fc, sR, sv), ref):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)
    R, p = frames.rotations(Fc)
    for n in range(9):
        one = frames.pose_numpy(d, qT[:, n:n + 1])          # floats, packed alike
        for a, b in zip(one, ref):
            np.testing.assert_allclose(a[..., 0], b[..., n], rtol=0, atol=1e-14)
        A, t, Rn, pn = _one_pose(d, qT[:, n].copy())
        np.testing.assert_allclose(A.T, sR[:, :, n], atol=1e-14)
        np.testing.assert_allclose(t.T, sv[:, :, n], atol=1e-14)
        np.testing.assert_allclose(Rn, R[..., n].transpose(2, 0, 1), atol=1e-14)
        np.testing.assert_allclose(pn.T, p[..., n], atol=1e-14)


@pytest.mark.parametrize("seed, M", [(4, 1), (5, 4), (6, 7)])
def test_joint_loads_compiled_equal_numpy_and_floats(seed, M):
    from kic.kernels import frames, rnea
    rng, d = _chain_data(seed, M)
    rnea_one = through_compiled(rnea.rnea_one)
    N = 6
    qT, qdT, qddT = (rng.uniform(-2, 2, (M, N)) for _ in range(3))
    Fc, sR, sv = frames.pose_numpy(d, qT)
    for gravity in (True, False):
        motion = rnea.link_motion(sR, sv, qdT, qddT, d.gravity if gravity else None)
        ref = rnea.wrench_loads(d, Fc, sR, sv, *motion)
        lanes = [np.empty(sR.shape) for _ in range(4)]
        rnea.motion_lanes(sR, sv, qdT, qddT, True, d.gravity, gravity, *lanes)
        for a, b in zip(lanes, motion):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
        velocity = rnea.link_motion(sR, sv, qdT)
        from_motion = rnea.loads_from_motion(d, Fc, sR, sv, velocity, qddT, gravity)
        tau = np.empty((M, N))
        rnea.motion_loads_lanes(Fc, sR, sv, *(np.ascontiguousarray(x) for x in velocity),
                                qddT, d.gravity, gravity, d.mass, d.com, d.inertia,
                                np.empty((6, N)), np.empty((6, M, N)), tau)
        scale = max(1.0, np.abs(ref).max())
        np.testing.assert_allclose(from_motion, ref, atol=1e-12 * scale)
        np.testing.assert_allclose(tau, ref, atol=1e-12 * scale)
        for n in range(N):
            q, qd, qdd = qT[:, n].copy(), qdT[:, n].copy(), qddT[:, n].copy()
            A, t, R, p = _one_pose(d, q)
            out = np.empty(M)
            frames_out = [np.empty(x.shape) for x in (A, t, R, p)]
            rnea_one(d.base, d.isR, d.O, d.mass, d.com, d.inertia,
                     d.gravity if gravity else np.zeros(3), q, qd, qdd, *frames_out,
                     np.empty((M, 6)), out)
            for a, b in zip(frames_out, (A, t, R, p)):        # the frames left on the way
                np.testing.assert_array_equal(a, b)
            floats = rnea.loads_floats(d, frames.frames_floats(d, q.tolist()), qd.tolist(),
                                       qdd.tolist(), gravity)
            np.testing.assert_allclose(out, ref[:, n], atol=1e-12 * scale)
            np.testing.assert_allclose(floats, out, atol=1e-12 * scale)


@pytest.mark.parametrize("seed, M", [(7, 1), (8, 3), (9, 6)])
def test_inertia_power_gravity_compiled_equal_numpy_and_floats(seed, M):
    from kic.kernels import frames, inertia
    rng, d = _chain_data(seed, M)
    inertia_one = through_compiled(inertia.inertia_one)
    N = 5
    qT = rng.uniform(-3, 3, (M, N))
    Fc, sR, sv = frames.pose_numpy(d, qT)
    state = inertia.LinkState(d, Fc)
    I_ref = inertia.inertia_numpy(sR, sv, state)
    P_ref = inertia.power_numpy(sR, sv, state)
    g_ref = inertia.gravity_numpy(d, Fc, sR, sv)
    for n in range(N):
        q = qT[:, n].copy()
        A, t, R, p = _one_pose(d, q)
        c, Iw = np.empty((M, 3)), np.empty((M, 3, 3))
        inertia.link_world_into(R, p, d.com, d.inertia, c, Iw)
        np.testing.assert_allclose(c.T, state.c[..., n], atol=1e-14)
        np.testing.assert_allclose(Iw, state.I[..., n].transpose(2, 0, 1), atol=1e-14)
        I = np.empty((M, M))
        inertia_one(d.mass, d.com, d.inertia, R, p, A, t, np.empty((M, 6)), I)
        P = np.empty((M, M, M))
        inertia.power_one(d.mass, c, Iw, A, t, np.empty(M), np.empty((M, 3)),
                          np.empty((M, 3, 3)), np.empty((M, 3, 3)), np.empty((M, M, 3)),
                          np.empty((M, M, 3)), np.empty((M, M, 3)), P)
        g = np.empty(M)
        inertia.gravity_one(d.mass, d.com, d.gravity, A, t, R, p, g)
        fl = frames.frames_floats(d, q.tolist())
        for fast, ref, floats in ((I, I_ref[..., n], inertia.inertia_floats(d, fl)),
                                  (P, P_ref[..., n], None),
                                  (g, g_ref[:, n], inertia.gravity_floats(d, fl))):
            scale = max(1.0, np.abs(ref).max())
            np.testing.assert_allclose(fast, ref, atol=1e-12 * scale)
            if floats is not None:
                np.testing.assert_allclose(np.array(floats), fast, atol=1e-12 * scale)
        # P* is the Christoffel symbol of I*: sym part of P[n, a, b] =
        # dI[n,a]/dq_b + dI[n,b]/dq_a - dI[a,b]/dq_n, halved (central differences)
        def I_at(x):
            Fc_, sR_, sv_ = frames.pose_numpy(d, x[:, None])
            return inertia.inertia_numpy(sR_, sv_, inertia.LinkState(d, Fc_))[..., 0]
        h = 1e-6
        dI = np.stack([(I_at(q + h * e) - I_at(q - h * e)) / (2 * h) for e in np.eye(M)], -1)
        chris = 0.5 * (dI + np.swapaxes(dI, 1, 2) - np.moveaxis(dI, 2, 0))
        np.testing.assert_allclose(0.5 * (P + np.swapaxes(P, 1, 2)), chris,
                                   atol=1e-6 * max(1.0, np.abs(I).max()))



def _tree_of_chain(d, q):
    """A serial chain's pose in the tree form of the closed kernels: body frames F
    (M, 4, 4), world screws S (M, 6) = [a; t], parents j - 1, order 0..M-1."""
    M = d.dof
    A, t, R, p = _one_pose(d, q)
    F = np.zeros((M, 4, 4))
    F[:, :3, :3], F[:, :3, 3], F[:, 3, 3] = R, p, 1.0
    return np.arange(M) - 1, np.arange(M), F, np.hstack([A, t])


def _tree_work(N, M):
    """tree_inertia_one's work (Ic, HG, empty, qcol), left with garbage in it: the
    kernel must not read what it has not written."""
    return (np.full((N, 10, 1), np.nan), np.full((N, M), np.nan), np.ones(N, bool),
            np.full(N, -7, np.int64))


@pytest.mark.parametrize("seed, M, massless", [(21, 1, None), (22, 4, 1), (23, 6, 2)])
def test_tree_forms_of_a_chain_equal_the_chain_kernels(seed, M, massless):
    """rnea.tree_loads and inertia.tree_inertia_one / tree_inertia on a serial chain
    (the tree with parents j - 1) against the chain's own kernels (numpy), with a
    body of zero mass and rotational inertia (it counts) and one that carries nothing
    (it is skipped); lanes of tree_inertia against one pose each, bit for bit."""
    from kic.kernels import frames, inertia, rnea
    rng, d = _chain_data(seed, M)
    if massless is not None:
        d.mass[massless % M] = 0.0                      # a rotor: zero mass, inertia counts
        if M > 2:
            d.mass[0], d.inertia[0] = 0.0, 0.0           # carries nothing
    N = 4
    qT, qdT, qddT = (rng.uniform(-2, 2, (M, N)) for _ in range(3))
    Fc, sR, sv = frames.pose_numpy(d, qT)
    I_ref = inertia.inertia_numpy(sR, sv, inertia.LinkState(d, Fc))
    g_ref = inertia.gravity_numpy(d, Fc, sR, sv)
    V = 3
    FL, SL, GL = np.empty((M, 12, V)), np.empty((M, 6, V)), np.empty((M, M, V))
    for n in range(N):
        parent, order, F, S = _tree_of_chain(d, qT[:, n].copy())
        scale = max(1.0, np.abs(I_ref[..., n]).max())
        I = np.empty((M, M))
        inertia.tree_inertia_one(parent, order, d.mass, d.com, d.inertia, F, S, np.eye(M), I,
                                 *_tree_work(M, M))
        np.testing.assert_allclose(I, I_ref[..., n], rtol=0, atol=1e-13 * scale)
        np.testing.assert_array_equal(I, I.T)
        for gravity in (True, False):
            vel = [np.ascontiguousarray(x[..., 0].T) for x in
                   rnea.link_motion(sR[..., n:n + 1], sv[..., n:n + 1], qdT[:, n:n + 1])]
            Vs, Av = np.hstack(vel[:2]), np.hstack(vel[2:])
            tau = np.empty(M)
            rnea.tree_loads(parent, order, d.mass, d.com, d.inertia, F, S, Vs, Av,
                            qddT[:, n].copy(), d.gravity, gravity, np.empty((M, 6)),
                            np.empty((M, 6)), tau)
            ref = rnea.wrench_loads(d, Fc[..., n:n + 1], sR[..., n:n + 1], sv[..., n:n + 1],
                                    *rnea.link_motion(sR[..., n:n + 1], sv[..., n:n + 1],
                                                      qdT[:, n:n + 1], qddT[:, n:n + 1],
                                                      d.gravity if gravity else None))[:, 0]
            np.testing.assert_allclose(tau, ref, atol=1e-12 * max(1.0, np.abs(ref).max()))
        # the same pose in lane n % V of a lane batch: I* bit for bit, and the
        # gravity load at rest from the composites (the Newton-Euler pass's)
        u = n % V
        FL[..., u] = F[:, :3, :].reshape(M, 12)
        SL[..., u], GL[..., u] = S, np.eye(M)
        if u == V - 1 or n == N - 1:
            nl = u + 1
            IL, T0 = np.empty((M, M, V)), np.empty((M, V))
            inertia.tree_inertia(nl, parent, order, d.mass, d.com, d.inertia, d.gravity, FL,
                                 SL, GL, np.arange(M), np.empty(M, bool),
                                 np.empty((M, 10, V)), np.empty((M, M, V)), np.empty((M, V)),
                                 np.empty((6, V)), np.empty(V), IL, T0, np.ones(V, bool))
            for k in range(nl):
                nk = n - u + k
                one = np.empty((M, M))
                parent, order, F, S = _tree_of_chain(d, qT[:, nk].copy())
                inertia.tree_inertia_one(parent, order, d.mass, d.com, d.inertia, F, S,
                                         np.eye(M), one, *_tree_work(M, M))
                np.testing.assert_array_equal(IL[..., k], one)
                np.testing.assert_allclose(T0[:, k], g_ref[:, nk],
                                           atol=1e-12 * max(1.0, np.abs(g_ref).max()))


def test_tree_inertia_of_a_branched_tree_gives_its_kinetic_energy():
    """I* of a tree with two branches, through a transfer G (N, M) that mixes the
    joints, against the kinetic energy of its bodies summed in numpy (independent:
    each body's twist from its path's screws)."""
    from kic.kernels import inertia
    rng = np.random.default_rng(31)
    parent = np.array([-1, 0, 1, 0, 3, -1])           # two branches off body 0, a second root
    order = np.array([0, 3, 1, 4, 2, 5])               # parents before children, not by index
    N, M = 6, 3
    mass = rng.uniform(0.5, 2.0, N)
    mass[2] = 0.0                                       # a rotor: zero mass, inertia counts
    com = rng.uniform(-0.3, 0.3, (N, 3))
    Iloc = np.stack([_spd(rng, 3) * 0.1 for _ in range(N)])
    F = np.zeros((N, 4, 4))
    for j in range(N):
        F[j, :3, :3] = np.linalg.qr(rng.standard_normal((3, 3)))[0]
        F[j, :3, 3], F[j, 3, 3] = rng.uniform(-1, 1, 3), 1.0
    a = rng.standard_normal((N, 3))
    a /= np.linalg.norm(a, axis=1)[:, None]
    S = np.hstack([a, np.cross(rng.uniform(-1, 1, (N, 3)), a)])
    S[5, :3] = 0.0                                      # a prismatic joint
    G = rng.standard_normal((N, M))
    G[1] = [0.0, 1.0, 0.0]                              # a coordinate's unit row
    I = np.empty((M, M))
    inertia.tree_inertia_one(parent, order, mass, com, Iloc, F, S, G, I, *_tree_work(N, M))
    qd = rng.standard_normal(M)
    phid = G @ qd
    energy = 0.0
    for j in range(N):
        twist, k = np.zeros(6), j
        while k >= 0:
            twist += S[k] * phid[k]
            k = parent[k]
        w, v0 = twist[:3], twist[3:]
        R, c = F[j, :3, :3], F[j, :3, :3] @ com[j] + F[j, :3, 3]
        vc = v0 + np.cross(w, c)
        energy += 0.5 * mass[j] * vc @ vc + 0.5 * w @ (R @ Iloc[j] @ R.T) @ w
    assert 0.5 * qd @ I @ qd == pytest.approx(energy, rel=1e-13)
    np.testing.assert_allclose(I, I.T, rtol=0, atol=0)
    assert np.all(np.linalg.eigvalsh(I) > 0)

def _articulated_chain(seed, M, kinds, rotor):
    """A random chain (R and P joints); ``rotor``: link 1 has zero mass and inertia."""
    import kic
    from helpers import random_chain
    rng = np.random.default_rng(seed)
    chain = random_chain(rng, M, kinds=kinds)
    if rotor:
        links = list(chain.links)
        links[min(1, M - 1)] = kic.Link(0.0, com=(0.2, -0.1, 0.3),
                                        inertia=np.diag([0.02, 0.03, 0.04]))
        chain = kic.SerialChain(chain.joints, links, gravity=chain.gravity, base=chain.base,
                                tool=chain.tool, frame_offsets=chain.frame_offsets)
    return rng, chain.kernel_data


@pytest.mark.parametrize("seed, M, kinds, rotor", [
    (21, 1, "R", False), (22, 2, "PR", True), (23, 5, None, False), (24, 6, "PPPPPP", True),
    (25, 9, "RPRRPRRPR", True), (26, 14, None, False)])
def test_articulated_body_equals_forward_dynamics_through_I_star(seed, M, kinds, rotor):
    """The O(M) recursion, compiled, in floats and in numpy, against an independent
    solve of I* q'' = T - bias (I* and the bias from their own kernels)."""
    from kic.kernels import articulated, frames, inertia, rnea
    rng, d = _articulated_chain(seed, M, kinds, rotor)
    N = 6
    qT, qdT = rng.uniform(-2, 2, (M, N)), rng.uniform(-2, 2, (M, N))
    tauT = rng.normal(scale=5.0, size=(M, N))
    Fc, sR, sv = frames.pose_numpy(d, qT)
    I = inertia.inertia_numpy(sR, sv, inertia.LinkState(d, Fc))
    bias = rnea.wrench_loads(d, Fc, sR, sv, *rnea.link_motion(sR, sv, qdT, None, d.gravity))
    ref = np.stack([np.linalg.solve(I[..., n], tauT[:, n] - bias[:, n]) for n in range(N)], -1)
    qdd, ok = articulated.aba_numpy(d, Fc, sR, sv, qdT, tauT)
    assert ok.all()
    scale = max(1.0, np.abs(ref).max())
    np.testing.assert_allclose(qdd, ref, rtol=0, atol=1e-10 * scale)
    for n in range(N):
        q, qd, tau = qT[:, n].copy(), qdT[:, n].copy(), tauT[:, n].copy()
        A, t, R, p = _one_pose(d, q)
        out = np.empty(M)
        assert articulated.aba_one(d.isR, d.mass, d.com, d.inertia, d.gravity, A, t, R, p, qd,
                                   tau, articulated.aba_buffers(M), out)
        floats = articulated.aba_floats(d, frames.frames_floats(d, q.tolist()), qd.tolist(),
                                        tau.tolist())
        np.testing.assert_allclose(out, ref[:, n], rtol=0, atol=1e-10 * scale)
        np.testing.assert_allclose(floats, out, rtol=0, atol=1e-12 * scale)


def test_articulated_body_applies_the_one_singularity_rule():
    """A distal link with neither mass nor inertia leaves its joint without inertia:
    the recursion's pivot fails kic's rule on every path (as the Cholesky of I* does)."""
    import kic
    from kic.kernels import articulated, frames
    chain = kic.SerialChain([kic.Joint("R"), kic.Joint("P", axis=(1, 0, 0))],
                            [kic.Link(1.0, com=(0.5, 0, 0)), kic.Link(0.0)])
    d = chain.kernel_data
    q = np.array([0.3, 0.1])
    A, t, R, p = _one_pose(d, q)
    assert not articulated.aba_one(d.isR, d.mass, d.com, d.inertia, d.gravity, A, t, R, p,
                                   np.zeros(2), np.ones(2), articulated.aba_buffers(2),
                                   np.empty(2))
    assert articulated.aba_floats(d, frames.frames_floats(d, q.tolist()), [0.0, 0.0],
                                  [1.0, 1.0]) is None
    qT = np.stack([q, q], -1)
    _, ok = articulated.aba_numpy(d, *frames.pose_numpy(d, qT), np.zeros((2, 2)),
                                  np.ones((2, 2)))
    assert not ok.any()

def test_stacked_inverses_compiled_equal_numpy():
    rng = np.random.default_rng(12)
    for m in (1, 2, 3, 5):
        A = rng.standard_normal((8, m, m)) + 2 * np.eye(m)
        A[3] = 0.0                                       # singular
        out, bound = np.empty(A.shape), np.empty(8)
        linalg.invert_stacked(A, out, bound)
        Ai, kF = linalg.inverses_and_bounds(A)
        ok = np.arange(8) != 3
        np.testing.assert_allclose(out[ok], Ai[ok], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(bound[ok], kF[ok], rtol=1e-10)
        assert np.isnan(out[3]).all() and bound[3] == np.inf and kF[3] == np.inf
        kappa = np.linalg.cond(A[ok])
        assert np.all(kappa * (1 - 1e-12) <= bound[ok]) and np.all(bound[ok] <= m * kappa * 1.0001)


def test_composite_body_parallel_axis_and_zero_mass():
    """Two halves of a box joined give the box; a massless rotor's inertia is kept."""
    from kic.chain import composite_body
    m, (a, b, c) = 2.0, (0.4, 0.2, 0.1)
    box = m / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    half = m / 24 * np.diag([b * b + c * c, (a / 2) ** 2 + c * c, (a / 2) ** 2 + b * b])
    centre = np.array([0.3, -0.2, 0.5])
    parts = [(m / 2, centre + (-a / 4, 0, 0), half), (m / 2, centre + (a / 4, 0, 0), half)]
    M, C, I = composite_body(parts)
    assert M == m
    np.testing.assert_allclose(C, centre, atol=1e-15)
    np.testing.assert_allclose(I, box, atol=1e-15)
    rotor = np.diag([0.01, 0.01, 0.02])
    M, C, I = composite_body(parts + [(0.0, (9.0, 9.0, 9.0), rotor)])
    np.testing.assert_allclose(I, box + rotor, atol=1e-15)
    M, C, I = composite_body([(0.0, (1.0, 2.0, 3.0), rotor), (0.0, (0.0, 0.0, 1.0), rotor)])
    assert M == 0.0 and np.all(C == 0.0)
    np.testing.assert_array_equal(I, 2 * rotor)


# lane variants (design batches): each lane equals the per-matrix function
# --------------------------------------------------------------------------
def _lanes(mats):
    """Matrices (count, n, n) -> lanes (n, n, V), V = LANE_WIDTH (spare lanes: identity)."""
    from kic.settings import LANE_WIDTH
    count, n = mats.shape[0], mats.shape[1]
    out = np.zeros((n, n, LANE_WIDTH))
    out[:, :, :] = np.eye(n)[:, :, None]
    out[:, :, :count] = np.moveaxis(mats, 0, -1)
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6])
def test_lu_lanes_equal_lu_per_matrix_bit_for_bit(n):
    rng = np.random.default_rng(100 + n)
    count, width = 27, 5
    mats = rng.standard_normal((count, n, n)) * 10.0 ** rng.uniform(-3, 3, (count, 1, 1))
    if n > 1:
        mats[3, :, 0] = mats[3, :, 1] * 2.0          # singular
        mats[5, 0, :] = 0.0                          # a zero row
    rhs = rng.standard_normal((count, n, width))
    A = _lanes(mats)
    X = np.zeros((n, width, A.shape[2]))
    X[:, :, :count] = np.moveaxis(rhs, 0, -1)
    piv, sign, big = np.zeros((n, A.shape[2]), np.int64), np.empty(A.shape[2]), np.empty(A.shape[2])
    linalg.lu_factor_lanes(A, n, piv, sign, big, count)
    linalg.lu_solve_lanes(A, n, piv, X, width, count)
    for u in range(count):
        F, p = mats[u].copy(), np.zeros(n, np.int64)
        s = linalg.lu_factor(F, n, p)
        assert sign[u] == s
        if s == 0.0:
            continue
        np.testing.assert_array_equal(A[:, :, u], F)
        np.testing.assert_array_equal(piv[:, u], p)
        for m in range(width):
            b = rhs[u, :, m].copy()
            linalg.lu_solve(F, n, p, b)
            np.testing.assert_array_equal(X[:, m, u], b)
        # the columns variant: the same numbers for all right-hand sides at once
        B = rhs[u].copy()
        linalg.lu_solve_columns(F, n, p, B)
        np.testing.assert_array_equal(B, X[:, :width, u])


@pytest.mark.parametrize("shape", [(2, 2), (3, 3), (6, 6), (6, 3)])
def test_condition_lanes_equal_condition_per_matrix(shape):
    from kic.settings import LANE_WIDTH
    rng = np.random.default_rng(sum(shape) + 7)
    m, n = shape
    count = 20
    A = np.empty((count, m, n))
    for k in range(count):
        U, _ = np.linalg.qr(rng.standard_normal((m, m)))
        V, _ = np.linalg.qr(rng.standard_normal((n, n)))
        s = np.geomspace(1.0, 10.0 ** -rng.uniform(0, 8), n)
        A[k] = (U[:, :n] * s) @ V.T
    A[1][:, -1] = A[1][:, 0]                          # singular
    A[2, 0, 0] = np.nan
    V_ = LANE_WIDTH
    pairs = linalg.round_robin_pairs(n)
    assert sorted(map(tuple, pairs.tolist())) == [(p, q) for p in range(n)
                                                  for q in range(p + 1, n)]
    work, norms = np.empty((n, m, V_)), np.empty((n, V_))
    gam, cs, sn, cond = np.empty(V_), np.empty(V_), np.empty(V_), np.empty(V_)
    live, turned = np.empty(V_, bool), np.empty(V_, bool)
    linalg.condition_numbers_lanes(A, count, work, norms, gam, cs, sn, pairs, cond, live, turned)
    for k in range(count):
        one = linalg.condition_number(A[k], np.empty((m, n)))
        if not np.isfinite(one) or one > 1e14:
            assert not (cond[k] < 1e14)
        else:
            assert cond[k] == pytest.approx(one, rel=1e-12 * max(one, 1.0))
