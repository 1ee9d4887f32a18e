"""Array helpers shared by the numeric modules (internal).

Internally kic works on *batch-last* arrays: a vector quantity for N
configurations has shape ``(3, N)``, a per-link one ``(3, L, N)``.  Element-wise
numpy work on the contiguous last axis is several times faster than on a
leading batch axis; public functions convert at their boundary with
:func:`as_batch` / :func:`from_batch`.
"""
from __future__ import annotations

import numpy as np

from .backend import use_compiled
from ._compiled import cross_into, inverse
from ._compiled import inverse_with_condition as inverse_with_condition_compiled
from .errors import ModelError

__all__ = []


def finite_array(value, name: str, shape: tuple | None = None,
                 dtype=float) -> np.ndarray:
    """``np.asarray`` that rejects NaN/inf and (optionally) a wrong shape."""
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{name} must be numeric, got {value!r}") from exc
    if shape is not None and arr.shape != shape:
        raise ModelError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{name} contains NaN or infinite values: {arr!r}")
    return arr


def as_batch(q, m: int, name: str = "q") -> tuple[np.ndarray, tuple]:
    """Validate ``q`` of shape ``(..., m)`` and return ``(q_T, batch_shape)``.

    ``q_T`` has shape ``(m, N)`` (batch last, contiguous) with
    ``N = prod(batch_shape)``.
    """
    arr = np.asarray(q, dtype=float)
    if arr.ndim == 0 or arr.shape[-1] != m:
        raise ModelError(
            f"{name} must have shape (..., {m}) for this {m}-coordinate model, "
            f"got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ModelError(f"{name} contains a NaN or infinite value at index "
                         f"{tuple(int(i) for i in bad)}")
    batch = arr.shape[:-1]
    return np.ascontiguousarray(arr.reshape(-1, m).T), batch


def match_batch(x, m: int, batch: tuple, name: str) -> np.ndarray:
    """Like :func:`as_batch` for a second input that must broadcast to ``batch``."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0 or arr.shape[-1] != m:
        raise ModelError(f"{name} must have shape (..., {m}), got {arr.shape}")
    try:
        arr = np.broadcast_to(arr, batch + (m,))
    except ValueError as exc:
        raise ModelError(f"{name} of shape {arr.shape} does not match the batch "
                         f"shape {batch} of q") from exc
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{name} contains NaN or infinite values")
    return np.ascontiguousarray(arr.reshape(-1, m).T)


def from_batch(x: np.ndarray, batch: tuple, ndim_tail: int) -> np.ndarray:
    """Move the trailing batch axis of ``x`` to the front and unflatten it.

    ``x`` has shape ``tail + (N,)`` with ``len(tail) == ndim_tail``.
    """
    out = x.transpose((x.ndim - 1,) + tuple(range(x.ndim - 1)))   # np.moveaxis costs 2 us
    return out.reshape(batch + out.shape[1:])


BLOCK = 1000
"""Configurations per block in the batched kernels: arrays of a block stay in
cache and come from the heap, which is 2-4x faster than one pass over a large
batch (measured; see docs/performance.md).  Not a power of two: rows of
(..., BLOCK) arrays 8 KiB apart alias in the cache when a compiled loop walks
several at once (the compiled frames took 1.6x longer at 1024)."""


def blocks(N: int) -> list[slice]:
    """Slices of at most :data:`BLOCK` configurations covering ``range(N)``."""
    return [slice(i, min(i + BLOCK, N)) for i in range(0, N, BLOCK)]


def cross(a: np.ndarray, b: np.ndarray, axis: int = 0) -> np.ndarray:
    """Cross product along ``axis`` (0 or 1; 3 components), broadcasting the rest.

    Written into one preallocated output: 3-5x faster than ``np.cross`` or a
    stacked expression on batched arrays in numpy 2.
    """
    # np.broadcast_shapes costs 3 us, more than a small product
    out = np.empty(a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape))
    if use_compiled() and cross_into(a, b, out, axis):
        return out
    if axis == 0:
        a0, a1, a2, b0, b1, b2 = a[0], a[1], a[2], b[0], b[1], b[2]
        o0, o1, o2 = out[0], out[1], out[2]
    else:
        a0, a1, a2, b0, b1, b2 = a[:, 0], a[:, 1], a[:, 2], b[:, 0], b[:, 1], b[:, 2]
        o0, o1, o2 = out[:, 0], out[:, 1], out[:, 2]
    np.multiply(a1, b2, out=o0)
    o0 -= a2 * b1
    np.multiply(a2, b0, out=o1)
    o1 -= a0 * b2
    np.multiply(a0, b1, out=o2)
    o2 -= a1 * b0
    return out


def prefix_sum(x: np.ndarray, axis: int = 1) -> np.ndarray:
    """Running sum over the link axis (sum over j <= k).

    An in-place loop over the few links is ~7x faster than ``np.cumsum``
    along a non-last axis of a batched array.
    """
    out = np.array(x, copy=True)
    pre = (slice(None),) * axis
    for j in range(1, out.shape[axis]):
        out[pre + (j,)] += out[pre + (j - 1,)]
    return out


def suffix_sum(x: np.ndarray, axis: int = 1) -> np.ndarray:
    """Running sum from the last link down (sum over j >= k)."""
    out = np.array(x, copy=True)
    pre = (slice(None),) * axis
    for j in range(out.shape[axis] - 2, -1, -1):
        out[pre + (j,)] += out[pre + (j + 1,)]
    return out


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dot product along axis 0."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def matvec(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``R @ v`` for R of shape (3, 3, ...) and v of shape (3, ...)."""
    return (R * v[None]).sum(axis=1)


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` for stacks of shape (3, 3, ...) (batch last)."""
    return (A[:, :, None] * B[None, :, :]).sum(axis=1)


def skew(v) -> np.ndarray:
    """3x3 skew-symmetric matrix of a single vector: ``skew(v) @ x == v x x``."""
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rotation_about(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix about a unit ``axis`` by ``angle`` (rad), Rodrigues."""
    k = skew(axis)
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def homogeneous(R=None, p=None) -> np.ndarray:
    """4x4 homogeneous transform from a rotation and a translation."""
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def rot_x(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def small_inverse(A: np.ndarray) -> np.ndarray:
    """Inverse of stacked (..., m, m) matrices; closed form (adjugate) for m <= 3.

    LAPACK's per-matrix call costs about a microsecond however small the matrix;
    the adjugate of a 3x3 is a few dozen batched products.  Singular matrices give
    inf/nan, which the callers' condition checks catch.  Under the compiled backend,
    Gauss-Jordan elimination with partial pivoting, one matrix at a time.
    """
    m = A.shape[-1]
    if use_compiled():
        return inverse(A)
    if m > 3:
        return np.linalg.inv(A)
    with np.errstate(divide="ignore", invalid="ignore"):
        if m == 1:
            return 1.0 / A
        if m == 2:
            a, b, c, d = A[..., 0, 0], A[..., 0, 1], A[..., 1, 0], A[..., 1, 1]
            det = a * d - b * c
            return np.stack([np.stack([d, -b], -1), np.stack([-c, a], -1)], -2) \
                / det[..., None, None]
        a0, a1, a2 = A[..., 0, :], A[..., 1, :], A[..., 2, :]
        c0 = cross(a1.T, a2.T).T          # rows of the adjugate's transpose
        c1 = cross(a2.T, a0.T).T
        c2 = cross(a0.T, a1.T).T
        det = (a0 * c0).sum(-1)
        return np.stack([c0, c1, c2], -1) / det[..., None, None]


def inverse_with_condition(A: np.ndarray):
    """Inverses of stacked (..., m, m) matrices and their 1-norm condition numbers
    ``||A||_1 ||A^-1||_1`` (...): inf/NaN where singular, or ``np.linalg.LinAlgError``
    from LAPACK (m > 3, numpy kernels)."""
    if use_compiled():
        return inverse_with_condition_compiled(A)
    Ai = small_inverse(A)
    with np.errstate(invalid="ignore"):
        cond = _norm1(A) * _norm1(Ai)
    return Ai, cond


def _norm1(A: np.ndarray) -> np.ndarray:
    """Largest column sum of |A| (..., m, m) -> (...): a loop over the few rows and
    columns is 3-5x faster than numpy's reductions over small trailing axes."""
    a = np.abs(A)
    m = A.shape[-1]
    col = a[..., 0, :].copy()
    for i in range(1, m):
        col += a[..., i, :]
    out = col[..., 0].copy()
    for j in range(1, m):
        np.maximum(out, col[..., j], out=out)
    return out


def spd_solve(A: np.ndarray, b: np.ndarray, what: str = "matrix"):
    """Solve stacked SPD systems ``A x = b`` (leading batch axes).

    Raises :class:`~kic.SingularityError` naming the configuration when a
    matrix is not positive definite to working precision.
    """
    from .errors import SingularityError
    try:
        L = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        L = None
    if L is not None:
        diag = np.diagonal(L, axis1=-2, axis2=-1)
        dmin = diag.min(axis=-1) if diag.size else np.ones(A.shape[:-2])
        dmax = diag.max(axis=-1) if diag.size else np.ones(A.shape[:-2])
        ok = dmin > 1e-8 * dmax
        if np.all(ok):
            # forward and back substitution over the few rows, batched in numpy
            # (LAPACK's per-matrix calls cost more than the arithmetic here)
            m = A.shape[-1]
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
    sv = np.linalg.svd(A, compute_uv=False)
    smin, smax = sv[..., -1], sv[..., 0]
    cond = np.where(smin > 0, smax / np.where(smin > 0, smin, 1.0), np.inf)
    idx = np.unravel_index(int(np.argmax(cond)), cond.shape) if cond.ndim else ()
    raise SingularityError(
        f"{what} is singular or not positive definite"
        + (f" at batch index {idx}" if idx else "")
        + f": smallest singular value {float(smin[idx]):.3e}, "
          f"condition number {float(cond[idx]):.3e}",
        sigma_min=float(smin[idx]), condition=float(cond[idx]), where=what,
        index=idx if idx else None)
