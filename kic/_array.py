"""Array helpers shared by the numeric modules (internal).

Internally kic works on *batch-last* arrays: a vector quantity for N
configurations has shape ``(3, N)``, a per-link one ``(3, L, N)``.  Element-wise
numpy work on the contiguous last axis is several times faster than on a
leading batch axis; public functions convert at their boundary with
:func:`as_batch` / :func:`from_batch`.
"""
from __future__ import annotations

import numpy as np

from .backend import kernels
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
    if arr.shape == (m,) and batch == (1,) or (batch == () and arr.shape == (m,)):
        # one configuration: the lean path (a control loop calls this every tick)
        if not np.isfinite(arr).all():
            raise ModelError(f"{name} contains NaN or infinite values")
        return arr.reshape(m, 1)
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
    """Cross product along ``axis`` (0 or 1; 3 components), broadcasting the rest
    (the kernel set's, :func:`kic.backend.kernels`)."""
    return kernels().cross(a, b, axis)


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


def rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def small_inverse(A: np.ndarray) -> np.ndarray:
    """Inverses of stacked (..., m, m) matrices; NaN or inf where singular (callers
    check the condition): closed forms for m <= 3 (numpy), Gauss-Jordan elimination
    with partial pivoting (compiled)."""
    return kernels().small_inverse(A)


def inverse_with_condition(A: np.ndarray):
    """Inverses of stacked (..., m, m) matrices and their 1-norm condition numbers
    ``||A||_1 ||A^-1||_1`` (...): inf/NaN where singular, or ``np.linalg.LinAlgError``
    from LAPACK (m > 3, numpy kernels)."""
    return kernels().inverse_with_condition(A)


def spd_solve(A: np.ndarray, b: np.ndarray, what: str = "matrix"):
    """Solve stacked SPD systems ``A x = b`` (leading batch axes).

    Raises :class:`~kic.SingularityError` naming the configuration when a matrix
    fails kic's singularity rule, :func:`kic._compiled.spd_pivot_ok`: a Cholesky
    pivot ``L_kk^2`` not above ``1e-12 A_kk`` (relative to its own diagonal entry,
    hence independent of the units of each coordinate).
    """
    from ._scalar import spd_factor, spd_substitute
    from .errors import SingularityError
    A = np.asarray(A, dtype=float)
    L, ok = spd_factor(A)
    if np.all(ok):
        return spd_substitute(L, b)
    bad = ~ok
    with np.errstate(invalid="ignore", divide="ignore"):
        sv = np.linalg.svd(np.where(np.isfinite(A), A, 0.0), compute_uv=False)
    smin, smax = sv[..., -1], sv[..., 0]
    cond = np.where(smin > 0, smax / np.where(smin > 0, smin, 1.0), np.inf)
    # the failing configuration with the largest condition number (ties: the first)
    idx = (np.unravel_index(int(np.argmax(np.where(bad, cond, -1.0))), cond.shape)
           if cond.ndim else ())
    raise SingularityError(
        f"{what} is singular or not positive definite"
        + (f" at batch index {idx}" if idx else "")
        + f": smallest singular value {float(smin[idx]):.3e}, "
          f"condition number {float(cond[idx]):.3e}",
        sigma_min=float(smin[idx]), condition=float(cond[idx]), where=what,
        index=idx if idx else None)
