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
