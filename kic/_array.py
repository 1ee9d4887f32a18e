"""Array helpers shared by the numeric modules (internal).

Internally kic works on *batch-last* arrays: a vector quantity for N
configurations has shape ``(3, N)``, a per-link one ``(3, L, N)``.  Element-wise
numpy work on the contiguous last axis is several times faster than on a
leading batch axis; public functions convert at their boundary with
:func:`as_batch` / :func:`from_batch`.
"""
from __future__ import annotations

import numpy as np

from .errors import ModelError

__all__ = []


def numeric(value, name: str, dtype=float) -> np.ndarray:
    """``np.asarray(value, dtype)`` for numbers only: the one place where user input
    becomes an array.  A string, a dict, None, a ragged list, objects and complex
    numbers (whose imaginary part numpy would drop with only a warning) raise
    :class:`kic.ModelError` naming the argument; Python and numpy bools and
    integers are numbers."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value if value.dtype == dtype else value.astype(dtype)
    if isinstance(value, (str, bytes, dict)) or value is None:
        raise ModelError(f"{name} must be numeric, got {type(value).__name__} {value!r:.80}")
    try:
        raw = np.asarray(value)
        if raw.dtype.kind not in "biuf":
            raise TypeError(f"elements of dtype {raw.dtype}")
        return raw.astype(dtype, copy=False)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{name} must be a numeric array (..., n), got {value!r:.80} "
                         f"({exc})") from None


def finite_array(value, name: str, shape: tuple | None = None,
                 dtype=float) -> np.ndarray:
    """``np.asarray`` that rejects NaN/inf and (optionally) a wrong shape."""
    arr = numeric(value, name, dtype)
    if shape is not None and arr.shape != shape:
        raise ModelError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.isfinite(arr).all():          # the method call: about half np.all's overhead
        raise ModelError(f"{name} contains NaN or infinite values: {arr!r}")
    return arr


def as_batch(q, m: int, name: str = "q") -> tuple[np.ndarray, tuple]:
    """Validate ``q`` of shape ``(..., m)`` and return ``(q_T, batch_shape)``.

    ``q_T`` has shape ``(m, N)`` (batch last, contiguous) with
    ``N = prod(batch_shape)``.
    """
    arr = numeric(q, name)
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
    arr = numeric(x, name)
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
    """Slices of at most :data:`BLOCK` configurations covering ``range(N)``; one
    empty slice for an empty batch (numpy's convention: empty in, empty out)."""
    return [slice(i, min(i + BLOCK, N)) for i in range(0, N, BLOCK)] or [slice(0, 0)]


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


def numpy_cross(a: np.ndarray, b: np.ndarray, axis: int = 0) -> np.ndarray:
    """Cross product along ``axis`` (0 or 1; 3 components), broadcasting the rest.

    Written into one preallocated output: 3-5x faster than ``np.cross`` or a
    stacked expression on batched arrays in numpy 2.
    """
    # np.broadcast_shapes costs 3 us, more than a small product
    out = np.empty(a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape))
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
