"""kic's linear algebra, each algorithm once: compiled form and numpy twin side by side.

=================================  ==============================  ==========================
algorithm                          compiled (one matrix, in place)  numpy (stacked, batch first)
=================================  ==============================  ==========================
the SPD singularity rule           :func:`spd_pivot_ok`             (the same function)
SPD solve (Cholesky)               :func:`cholesky_solve`           :func:`spd_factor`,
                                                                    :func:`spd_substitute`,
                                                                    :func:`spd_solve`
LU with partial pivoting, solve    :func:`lu_factor`, :func:`lu_solve`  :func:`lu_solve_stacked`
2-norm condition number            :func:`condition_number`        :func:`condition_numbers`
dimensionless condition number     (scale, then the above)          :func:`scaled_condition`
inverse (Gauss-Jordan)             :func:`invert_into`              :func:`small_inverse`
a bound on the condition number    :func:`frobenius_bound`          :func:`frobenius_bounds`
stacked inverses and their bounds  :func:`invert_stacked`           :func:`inverses_and_bounds`
=================================  ==============================  ==========================

The rules:

* **SPD solves** (I*, every Cholesky): a matrix is singular unless every pivot
  ``L_kk^2`` exceeds :data:`kic.settings.SPD_PIVOT_RTOL` times its own diagonal
  entry ``A_kk``.  The ratio is the squared sine of the angle (in the metric of A)
  between coordinate k and the span of the coordinates before it, so the rule does
  not change with units or with the scaling of any coordinate (A -> D A D).
* **Condition number**: the 2-norm one, ``sigma_max / sigma_min`` (inf when singular
  or not finite), compiled by one-sided Jacobi rotations (only singular values, high
  relative accuracy, no LAPACK call), in numpy by the SVD.  Made dimensionless by
  dividing length rows by a characteristic length and multiplying prismatic columns
  by it (:func:`scaled_condition`): the number at a pose then depends on the design,
  never on units.  The Frobenius product ``||A||_F ||A^-1||_F`` bounds it,
  ``kappa_2 <= kF <= n kappa_2``, and decides cheaply far from a threshold.

The compiled functions are plain Python until :func:`kic.kernels.jit.load`
compiles them; they index ``A[i][k]`` so that they run on nested lists as well.
"""
from __future__ import annotations

import math

import numpy as np

from ..settings import JACOBI_RTOL, JACOBI_SWEEPS, SPD_PIVOT_RTOL
from .jit import jit, plain

__all__ = ["spd_pivot_ok", "cholesky_solve", "spd_factor", "spd_substitute", "spd_solve",
           "lu_factor", "lu_solve", "lu_solve_stacked", "condition_number", "condition_leading",
           "condition_numbers", "scaled_condition", "invert_into", "small_inverse",
           "frobenius_bound", "frobenius_bounds", "invert_stacked", "inverses_and_bounds"]


# --------------------------------------------------------------------------
# the SPD solve and its singularity rule
# --------------------------------------------------------------------------
@jit(inline=True)
def spd_pivot_ok(d, a):
    """kic's one singularity rule of SPD solves: the k-th Cholesky pivot ``d``
    (``L_kk^2``) against the diagonal entry ``a`` (``A_kk``) it came from.
    NaN fails.  Works on floats and, elementwise, on arrays."""
    return d > SPD_PIVOT_RTOL * a


@jit(inline=True)
def cholesky_solve(A, b, L, x):
    """x = A^-1 b for a small SPD ``A``; ``L`` a work matrix like A (it may be A
    itself: the factor then overwrites its lower triangle), ``x`` the output like
    b.  False, with ``x`` undefined, when A fails :func:`spd_pivot_ok`."""
    M = len(b)
    for k in range(M):
        Lk = L[k]
        a = A[k][k]
        d = a
        for s in range(k):
            d -= Lk[s] * Lk[s]
        if not spd_pivot_ok(d, a):
            return False
        d = math.sqrt(d)
        Lk[k] = d
        for i in range(k + 1, M):
            Li = L[i]
            v = A[i][k]
            for s in range(k):
                v -= Li[s] * Lk[s]
            Li[k] = v / d
    for i in range(M):
        Li = L[i]
        v = b[i]
        for s in range(i):
            v -= Li[s] * x[s]
        x[i] = v / Li[i]
    for i in range(M - 1, -1, -1):
        v = x[i]
        for s in range(i + 1, M):
            v -= L[s][i] * x[s]
        x[i] = v / L[i][i]
    return True


def spd_factor(A: np.ndarray):
    """Cholesky factors of stacked SPD matrices (..., m, m) and where they are valid:
    ``(L, ok (...))``, ok False where A fails :func:`spd_pivot_ok` or is not finite
    (L is then unusable there)."""
    A = np.asarray(A, dtype=float)
    m = A.shape[-1]
    diag = np.diagonal(A, axis1=-2, axis2=-1)
    rule = plain(__name__, "spd_pivot_ok")      # on arrays: never the compiled one
    good = rule(diag, 0.0).all(-1) & np.isfinite(A).all((-2, -1))
    # factor the matrices that can be; the others get the identity, flagged
    Afix = np.where(good[..., None, None], A, np.eye(m))
    ok = good.copy()
    try:
        L = np.linalg.cholesky(Afix)
    except np.linalg.LinAlgError:          # some are not positive definite: one by one
        L = np.empty(A.shape)
        flat_A, flat_L, flat_ok = Afix.reshape(-1, m, m), L.reshape(-1, m, m), ok.reshape(-1)
        for i in range(flat_A.shape[0]):
            try:
                flat_L[i] = np.linalg.cholesky(flat_A[i])
            except np.linalg.LinAlgError:
                flat_L[i] = np.eye(m)
                flat_ok[i] = False
    Ld = np.diagonal(L, axis1=-2, axis2=-1)
    # LAPACK's pivots are the same L_kk^2 as the compiled loop's: the same rule
    return L, ok & rule(Ld * Ld, diag).all(-1)


def spd_substitute(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x = (L L^T)^-1 b for stacked factors: forward and back substitution over the
    few rows, batched (LAPACK's per-matrix calls cost more than the arithmetic)."""
    m = L.shape[-1]
    x = np.array(b, dtype=float, copy=True)
    for i in range(m):
        if i:
            x[..., i] -= (L[..., i, :i] * x[..., :i]).sum(-1)
        x[..., i] /= L[..., i, i]
    for i in range(m - 1, -1, -1):
        if i < m - 1:
            x[..., i] -= (L[..., i + 1:, i] * x[..., i + 1:]).sum(-1)
        x[..., i] /= L[..., i, i]
    return x


def spd_solve(A: np.ndarray, b: np.ndarray, what: str = "matrix") -> np.ndarray:
    """Solve stacked SPD systems ``A x = b`` (leading batch axes).

    Raises :class:`kic.SingularityError` naming ``what`` and the batch index of
    the worst failing matrix (largest condition number; ties: the first) when a
    matrix fails :func:`spd_pivot_ok`."""
    from ..errors import SingularityError
    A = np.asarray(A, dtype=float)
    L, ok = spd_factor(A)
    if np.all(ok):
        return spd_substitute(L, b)
    cond = condition_numbers(np.where(np.isfinite(A), A, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        sv = np.linalg.svd(np.where(np.isfinite(A), A, 0.0), compute_uv=False)
    smin = sv[..., -1]
    idx = (tuple(int(i) for i in np.unravel_index(int(np.argmax(np.where(~ok, cond, -1.0))),
                                                  cond.shape))
           if cond.ndim else ())
    raise SingularityError(
        f"{what} is singular or not positive definite"
        + (f" at batch index {idx}" if idx else "")
        + f": smallest singular value {float(smin[idx]):.3e}, "
          f"condition number {float(cond[idx]):.3e}",
        sigma_min=float(smin[idx]), condition=float(cond[idx]), where=what,
        index=idx if idx else None)


# --------------------------------------------------------------------------
# LU with partial pivoting
# --------------------------------------------------------------------------
@jit(bare=True)
def lu_factor(A, n, piv):
    """In-place LU with partial pivoting of ``A[:n, :n]`` (row swaps in ``piv``);
    returns the sign of det A (0.0 when a pivot is zero or not finite: singular)."""
    sgn = 1.0
    for k in range(n):
        p = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                big = abs(A[i, k])
                p = i
        piv[k] = p
        if not (big > 0.0) or not np.isfinite(big):
            return 0.0
        if p != k:
            sgn = -sgn
            for c in range(n):
                t = A[k, c]
                A[k, c] = A[p, c]
                A[p, c] = t
        if A[k, k] < 0.0:
            sgn = -sgn
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            A[i, k] *= inv
            f = A[i, k]
            if f != 0.0:
                for c in range(k + 1, n):
                    A[i, c] -= f * A[k, c]
    return sgn


@jit(bare=True)
def lu_solve(A, n, piv, b):
    """Solve in place (``b`` of length >= n) with the factors of :func:`lu_factor`."""
    for k in range(n):
        p = piv[k]
        if p != k:
            t = b[k]
            b[k] = b[p]
            b[p] = t
    for i in range(n):
        acc = b[i]
        for c in range(i):
            acc -= A[i, c] * b[c]
        b[i] = acc
    for i in range(n - 1, -1, -1):
        acc = b[i]
        for c in range(i + 1, n):
            acc -= A[i, c] * b[c]
        b[i] = acc / A[i, i]


def lu_solve_stacked(A: np.ndarray, b: np.ndarray):
    """``(x, sign)`` of stacked systems ``A x = b`` (A (..., n, n), b (..., n) or
    (..., n, k)) by LAPACK's LU with partial pivoting, and the sign of det A
    (0 where singular: x is NaN there), the numpy twin of :func:`lu_factor` and
    :func:`lu_solve`."""
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    vector = b.ndim == A.ndim - 1
    rhs = b[..., None] if vector else b
    with np.errstate(invalid="ignore", over="ignore"):
        sign, logdet = np.linalg.slogdet(np.where(np.isfinite(A), A, 0.0))
    ok = (sign != 0) & np.isfinite(logdet) & np.isfinite(A).all((-2, -1))
    Afix = np.where(ok[..., None, None], A, np.eye(A.shape[-1]))
    x = np.linalg.solve(Afix, rhs)
    x = np.where(ok[..., None, None], x, np.nan)
    return (x[..., 0] if vector else x), np.where(ok, sign, 0.0)


# --------------------------------------------------------------------------
# the 2-norm condition number
# --------------------------------------------------------------------------
@jit(inline=True)
def jacobi_rotation(alpha, beta, gamma):
    """Cosine, sine of the one-sided Jacobi rotation that makes two columns with
    squared norms alpha, beta and product gamma orthogonal."""
    zeta = (beta - alpha) / (2.0 * gamma)
    t = (1.0 if zeta >= 0.0 else -1.0) / (abs(zeta) + np.sqrt(1.0 + zeta * zeta))
    cs = 1.0 / np.sqrt(1.0 + t * t)
    return cs, cs * t


@jit(bare=True)
def column_norm_ratio(work, m, n):
    """Largest over smallest norm of the first n columns (rows :m) of ``work``:
    the 2-norm condition number once one-sided Jacobi has made them orthogonal
    (their norms are then the singular values); inf where a norm is zero or not
    finite."""
    smax = 0.0
    smin = np.inf
    for c in range(n):
        acc = 0.0
        for i in range(m):
            acc += work[i, c] * work[i, c]
        sv = np.sqrt(acc)
        if not np.isfinite(sv):
            return np.inf
        smax = max(smax, sv)
        smin = min(smin, sv)
    if not (smin > 0.0):
        return np.inf
    return smax / smin


@jit(bare=True)
def condition_leading(A, m, n, work):
    """2-norm condition number of the leading (m, n) block of A, m >= n, from its
    singular values by one-sided Jacobi rotations; ``work`` (at least (m, n)) is
    overwritten.  inf if singular or not finite.  (A block of a larger buffer by
    its size, not a slice: one compiled variant for every caller.)"""
    for i in range(m):
        for c in range(n):
            work[i, c] = A[i, c]
    for sweep in range(JACOBI_SWEEPS):
        rotated = False
        for p in range(n - 1):
            for r in range(p + 1, n):
                alpha = 0.0
                beta = 0.0
                gamma = 0.0
                for i in range(m):
                    alpha += work[i, p] * work[i, p]
                    beta += work[i, r] * work[i, r]
                    gamma += work[i, p] * work[i, r]
                if not (abs(gamma) > JACOBI_RTOL * np.sqrt(alpha * beta)):
                    continue
                rotated = True
                cs, sn = jacobi_rotation(alpha, beta, gamma)
                for i in range(m):
                    x = work[i, p]
                    y = work[i, r]
                    work[i, p] = cs * x - sn * y
                    work[i, r] = sn * x + cs * y
        if not rotated:
            break
    return column_norm_ratio(work, m, n)


@jit(inline=True)
def condition_number(A, work):
    """2-norm condition number of A (m, n), m >= n (:func:`condition_leading` of
    all of A); ``work`` (m, n) is overwritten.  inf if singular or not finite."""
    return condition_leading(A, A.shape[0], A.shape[1], work)


def condition_numbers(A: np.ndarray) -> np.ndarray:
    """2-norm condition numbers of stacked matrices (..., m, n) by the SVD (the
    numpy twin of :func:`condition_number`); inf where singular or not finite."""
    A = np.asarray(A, dtype=float)
    finite = np.isfinite(A).all((-2, -1))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        sv = np.linalg.svd(np.where(finite[..., None, None], A, 0.0), compute_uv=False)
        cond = np.where(sv[..., -1] > 0, sv[..., 0] / np.where(sv[..., -1] > 0, sv[..., -1], 1.0),
                        np.inf)
    return np.where(finite, cond, np.inf)


def scaled_condition(A: np.ndarray, length_rows: np.ndarray, length_cols: np.ndarray,
                     length: float) -> np.ndarray:
    """The dimensionless 2-norm condition number of ``A`` (..., m, n).

    Rows that are lengths (``length_rows``) are divided by the characteristic
    length ``length`` (m), columns of prismatic coordinates (``length_cols``)
    multiplied by it, so the figure does not change with units or the size of
    the mechanism."""
    row = np.where(length_rows, 1.0 / length, 1.0)
    col = np.where(length_cols, length, 1.0)
    return condition_numbers(np.asarray(A, dtype=float) * row[:, None] * col[None, :])


# --------------------------------------------------------------------------
# inverses and the Frobenius bound
# --------------------------------------------------------------------------
@jit
def invert_into(A, out, W):
    """``out = A^-1`` for one (m, m) matrix by Gauss-Jordan elimination with
    partial pivoting (``W`` (m, 2m) work); False, with ``out`` NaN, when a pivot
    is zero or not finite."""
    m = A.shape[0]
    for i in range(m):
        for j in range(m):
            W[i, j] = A[i, j]
            W[i, m + j] = 1.0 if i == j else 0.0
    for c in range(m):
        piv = c
        best = abs(W[c, c])
        for i in range(c + 1, m):
            v = abs(W[i, c])
            if v > best:
                best = v
                piv = i
        if best == 0.0 or not np.isfinite(best):
            for i in range(m):
                for j in range(m):
                    out[i, j] = np.nan
            return False
        if piv != c:
            for j in range(2 * m):
                t = W[c, j]
                W[c, j] = W[piv, j]
                W[piv, j] = t
        inv = 1.0 / W[c, c]
        for j in range(2 * m):
            W[c, j] *= inv
        for i in range(m):
            if i != c:
                f = W[i, c]
                if f != 0.0:
                    for j in range(c, 2 * m):
                        W[i, j] -= f * W[c, j]
    for i in range(m):
        for j in range(m):
            out[i, j] = W[i, m + j]
    return True


def small_inverse(A: np.ndarray) -> np.ndarray:
    """Inverses of stacked (..., m, m) matrices (the numpy twin of
    :func:`invert_into`); closed forms (adjugate) for m <= 3, since LAPACK's
    per-matrix call costs about a microsecond however small the matrix.  NaN or
    inf where singular: callers check the condition."""
    A = np.asarray(A, dtype=float)
    m = A.shape[-1]
    if m > 3:
        finite = np.isfinite(A).all((-2, -1))
        _, sign = lu_solve_stacked(A, np.zeros(A.shape[:-1]))
        ok = finite & (sign != 0)
        Ai = np.linalg.inv(np.where(ok[..., None, None], A, np.eye(m)))
        return np.where(ok[..., None, None], Ai, np.nan)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if m == 1:
            return 1.0 / A
        if m == 2:
            a, b, c, d = A[..., 0, 0], A[..., 0, 1], A[..., 1, 0], A[..., 1, 1]
            det = a * d - b * c
            return np.stack([np.stack([d, -b], -1), np.stack([-c, a], -1)], -2) \
                / det[..., None, None]
        a0, a1, a2 = A[..., 0, :], A[..., 1, :], A[..., 2, :]
        c0 = _cross(a1, a2)          # rows of the adjugate's transpose
        c1 = _cross(a2, a0)
        c2 = _cross(a0, a1)
        det = (a0 * c0).sum(-1)
        return np.stack([c0, c1, c2], -1) / det[..., None, None]


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # along the last axis; np.cross costs ~30 us a call in numpy 2
    return np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                     a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], -1)


@jit
def frobenius_bound(A, Ainv, n):
    """``||A||_F ||A^-1||_F`` of the leading (n, n) block: a bound on the 2-norm
    condition number, ``kappa_2 <= bound <= n kappa_2`` (inf if not finite)."""
    a = 0.0
    b = 0.0
    for i in range(n):
        for j in range(n):
            a += A[i, j] * A[i, j]
            b += Ainv[i, j] * Ainv[i, j]
    v = np.sqrt(a * b)
    return v if np.isfinite(v) else np.inf


def frobenius_bounds(A: np.ndarray, Ainv: np.ndarray) -> np.ndarray:
    """``||A||_F ||A^-1||_F`` of stacked matrices (the numpy twin of
    :func:`frobenius_bound`); inf where not finite."""
    with np.errstate(invalid="ignore", over="ignore"):
        v = np.sqrt((np.square(A).sum((-2, -1))) * np.square(Ainv).sum((-2, -1)))
    return np.where(np.isfinite(v), v, np.inf)


# --------------------------------------------------------------------------
# stacked inverses with their bound (the kernel sets' inverse_with_condition)
# --------------------------------------------------------------------------
@jit
def invert_stacked(A, out, bound):
    """``out[k] = A[k]^-1`` for (K, m, m) matrices by :func:`invert_into`, and
    ``bound[k]`` their :func:`frobenius_bound` (inf, with NaN inverses, where a
    pivot is zero or not finite)."""
    K, m, _ = A.shape
    W = np.empty((m, 2 * m))
    for k in range(K):
        if invert_into(A[k], out[k], W):
            bound[k] = frobenius_bound(A[k], out[k], m)
        else:
            bound[k] = np.inf


def inverses_and_bounds(A: np.ndarray):
    """(inverses (..., m, m), Frobenius bounds (...)) of stacked matrices: the
    numpy twin of :func:`invert_stacked` (NaN or inf inverses and an infinite
    bound where singular)."""
    A = np.asarray(A, dtype=float)
    Ai = None
    if A.shape[-1] > 3 and np.isfinite(A).all():
        try:                   # one LAPACK call; it raises only for an exactly zero pivot
            Ai = np.linalg.inv(A)
        except np.linalg.LinAlgError:
            pass
    if Ai is None:
        Ai = small_inverse(A)
    return Ai, frobenius_bounds(A, Ai)


# lane variants: many small matrices side by side (design batches)
# --------------------------------------------------------------------------
# A lane variant evaluates V matrices at once, each stored along the last axis
# (entry (i, c) of matrix u at [i, c, u]): every step is a loop over the lanes
# without branches, which the compiler turns into vector instructions.  Each
# lane sees the operations of the per-matrix function in their order (choices
# become selects), so its numbers are that function's, bit for bit (LU), or to
# rounding (the Jacobi condition number, whose savings are listed there);
# tests/test_kernels.py holds the parity tests.
@jit(inline=True)
def swap_rows_lanes(X, k, n, piv, width, count):
    """Row k <-> row ``piv[k, u]`` (> k, or k: none) of each of the first ``count``
    lanes of ``X`` (n, >= width, V), its first ``width`` columns: a select per
    lane and row below k (no branch on the lane)."""
    for i in range(k + 1, n):
        for c in range(width):
            for u in range(count):
                sel = piv[k, u] == i
                x = X[k, c, u]
                y = X[i, c, u]
                X[k, c, u] = y if sel else x
                X[i, c, u] = x if sel else y


@jit(bare=True)
def lu_factor_lanes(A, n, piv, sign, big, count):
    """:func:`lu_factor` of the first ``count`` lanes of ``A`` (n, n, V), in place:
    the pivots' choices and row swaps as selects per lane.  ``piv`` (n, V) int
    the row swaps, ``sign`` (V,) the sign of each det (0.0 where a pivot is zero
    or not finite: that lane's factors are then unusable), ``big`` (V,) work."""
    for u in range(count):
        sign[u] = 1.0
    for k in range(n):
        for u in range(count):
            big[u] = abs(A[k, k, u])
            piv[k, u] = k
        for i in range(k + 1, n):
            for u in range(count):
                v = abs(A[i, k, u])
                take = v > big[u]
                big[u] = v if take else big[u]
                piv[k, u] = i if take else piv[k, u]
        swap_rows_lanes(A, k, n, piv, n, count)
        for u in range(count):
            bad = not (big[u] > 0.0) or not np.isfinite(big[u])
            s = -sign[u] if piv[k, u] != k else sign[u]
            s = -s if A[k, k, u] < 0.0 else s
            sign[u] = 0.0 if bad or sign[u] == 0.0 else s
        for i in range(k + 1, n):
            for u in range(count):
                A[i, k, u] *= 1.0 / A[k, k, u]
            for c in range(k + 1, n):
                for u in range(count):
                    A[i, c, u] -= A[i, k, u] * A[k, c, u]


@jit(bare=True)
def lu_solve_lanes(A, n, piv, X, width, count):
    """:func:`lu_solve` of the first ``count`` lanes with the factors of
    :func:`lu_factor_lanes`, for ``width`` right-hand sides at once: ``X`` (n,
    >= width, V) is overwritten by the solutions, each column by the operations
    of :func:`lu_solve`."""
    for k in range(n):
        swap_rows_lanes(X, k, n, piv, width, count)
    for i in range(n):
        for c in range(i):
            for m in range(width):
                for u in range(count):
                    X[i, m, u] -= A[i, c, u] * X[c, m, u]
    for i in range(n - 1, -1, -1):
        for c in range(i + 1, n):
            for m in range(width):
                for u in range(count):
                    X[i, m, u] -= A[i, c, u] * X[c, m, u]
        for m in range(width):
            for u in range(count):
                X[i, m, u] = X[i, m, u] / A[i, i, u]


@jit(bare=True)
def lu_solve_columns(A, n, piv, X):
    """:func:`lu_solve` for the columns of ``X`` (>= n, K) at once, in place,
    each column by the operations of :func:`lu_solve` (the K sums of a row are
    independent: overlapped, not one after the other)."""
    K = X.shape[1]
    for i in range(n):
        p = piv[i]
        if p != i:
            for k in range(K):
                f = X[i, k]
                X[i, k] = X[p, k]
                X[p, k] = f
    for i in range(n):
        for c in range(i):
            f = A[i, c]
            for k in range(K):
                X[i, k] -= f * X[c, k]
    for i in range(n - 1, -1, -1):
        for c in range(i + 1, n):
            f = A[i, c]
            for k in range(K):
                X[i, k] -= f * X[c, k]
        f = A[i, i]
        for k in range(K):
            X[i, k] = X[i, k] / f


@jit
def round_robin_pairs(n):
    """The n (n - 1) / 2 column pairs (p < q) of a Jacobi sweep in round-robin
    order: n - 1 rounds (n rounded up to even) of disjoint pairs, so consecutive
    rotations are independent."""
    n2 = n + (n % 2)
    pos = np.arange(n2)
    pairs = np.empty((n * (n - 1) // 2, 2), np.int64)
    k = 0
    for rnd in range(n2 - 1):
        for i in range(n2 // 2):
            a, b = pos[i], pos[n2 - 1 - i]
            if a < n and b < n:
                pairs[k, 0] = min(a, b)
                pairs[k, 1] = max(a, b)
                k += 1
        last = pos[n2 - 1]
        for i in range(n2 - 1, 1, -1):
            pos[i] = pos[i - 1]
        pos[1] = last
    return pairs


@jit(bare=True)
def condition_numbers_lanes(A, count, work, norms, gam, cs, sn, pairs, cond, live, turned):
    """2-norm condition numbers of the matrices ``A[:count]`` (each m x n, m >= n)
    into ``cond[:count]``: :func:`condition_number`'s one-sided Jacobi rotations and
    stopping rule (a sweep without a rotation; inf if singular or not finite),
    with savings that change its numbers by rounding only:

    * the column pairs of a sweep in the order ``pairs`` (:func:`round_robin_pairs`);
    * the test of a pair squared (no square root) and the rotation's tangent with
      one division fewer;
    * the squared column norms kept up to date through the rotations
      (``alpha - t gamma``, ``beta + t gamma``) and formed anew at the start of
      every sweep, so a pair costs one dot product, not three (a sweep that ends
      the iteration rotates nothing, so its test uses exact norms; the singular
      values are the norms of the final columns, formed from them);
    * the matrices side by side in lanes: ``work`` (n, m, V) holds entry (i, c) of
      matrix u at ``[c, i, u]``, and every step is a loop over the V lanes
      without branches, which the compiler turns into vector instructions (the
      square roots and divisions of a rotation bound the cost; V >= 32 fills the
      vector loop).  A lane that does not rotate (its pair is orthogonal, or
      its matrix has converged) takes t = 0, cos = 1, sin = 0, which leaves its
      numbers as they are; the sweeps go on while any lane rotates.  Each
      matrix sees the operations of one matrix alone, so the numbers do not
      depend on the others or on the vector width.

    ``norms`` (n, V), ``gam``, ``cs``, ``sn`` (V,), ``live`` and ``turned`` (V,)
    bool are overwritten; lanes past ``count`` hold the identity."""
    m, n = A.shape[1], A.shape[2]
    V = work.shape[2]
    for c in range(n):
        for i in range(m):
            for u in range(V):
                work[c, i, u] = A[u, i, c] if u < count else (1.0 if i == c else 0.0)
    for u in range(V):
        live[u] = u < count
    for sweep in range(JACOBI_SWEEPS):
        for u in range(V):
            turned[u] = False
        for c in range(n):
            for u in range(V):
                norms[c, u] = 0.0
            for i in range(m):
                for u in range(V):
                    norms[c, u] += work[c, i, u] * work[c, i, u]
        for k in range(pairs.shape[0]):
            p = pairs[k, 0]
            r = pairs[k, 1]
            for u in range(V):
                gam[u] = 0.0
            for i in range(m):
                for u in range(V):
                    gam[u] += work[p, i, u] * work[r, i, u]
            for u in range(V):
                alpha = norms[p, u]
                beta = norms[r, u]
                gamma = gam[u]
                # |gamma| > JACOBI_RTOL sqrt(alpha beta), squared: no square root per pair
                rot = live[u] & (gamma * gamma > JACOBI_RTOL * JACOBI_RTOL * (alpha * beta))
                # t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)), zeta = (beta - alpha) /
                # (2 gamma), times 2 |gamma| above and below: one division fewer
                db = beta - alpha
                g2 = 2.0 * abs(gamma)
                t = g2 / (abs(db) + np.sqrt(db * db + g2 * g2))
                t = -t if db * gamma < 0.0 else t
                t = t if rot else 0.0
                c_ = 1.0 / np.sqrt(1.0 + t * t)
                cs[u] = c_
                sn[u] = c_ * t
                turned[u] = turned[u] | rot
                norms[p, u] = alpha - t * gamma
                norms[r, u] = beta + t * gamma
            for i in range(m):
                for u in range(V):
                    x = work[p, i, u]
                    y = work[r, i, u]
                    work[p, i, u] = cs[u] * x - sn[u] * y
                    work[r, i, u] = sn[u] * x + cs[u] * y
        more = False
        for u in range(V):
            live[u] = live[u] & turned[u]
            more = more or live[u]
        if not more:
            break
    for u in range(count):
        cond[u] = column_norm_ratio(work[:, :, u].T, m, n)     # lane u's columns as columns


# the stages of the condition number run inside compiled callers only: compiled
# without Python's wrappers (the ones named here are called from Python as well:
# serial_numba's stacked inverses, and the parity tests of tests/test_kernels.py)
from .jit import compiled_callers_only  # noqa: E402  (after the marks it reads)

compiled_callers_only(__name__, but=("lu_factor", "lu_solve", "invert_into", "frobenius_bound",
                                     "invert_stacked", "lu_factor_lanes", "lu_solve_lanes",
                                     "lu_solve_columns", "round_robin_pairs",
                                     "condition_numbers_lanes"))
