"""Helpers shared by the model builders (internal).

Validation with messages that name the builder and the argument at fault,
rigid-body helpers (thin-rod inertias, composite bodies by the parallel-axis
theorem) and small homogeneous transforms.
"""
from __future__ import annotations

import numpy as np

from kic.errors import ModelError

__all__ = []


def _scalar(builder: str, name: str, value) -> float:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{builder}: {name} must be a real number, got {value!r}") from exc
    if arr.shape != ():
        raise ModelError(f"{builder}: {name} must be a scalar, got shape {arr.shape}")
    if not np.isfinite(arr):
        raise ModelError(f"{builder}: {name} must be finite, got {value!r}")
    return float(arr)


def finite(builder: str, name: str, value) -> float:
    """A finite real scalar (signed dimensions: DH offsets, lateral offsets)."""
    return _scalar(builder, name, value)


def length(builder: str, name: str, value) -> float:
    """A strictly positive length (m)."""
    v = _scalar(builder, name, value)
    if v <= 0.0:
        raise ModelError(f"{builder}: {name} is a length and must be > 0 m, got {value!r}")
    return v


def mass(builder: str, name: str, value) -> float:
    """A mass (kg), >= 0."""
    v = _scalar(builder, name, value)
    if v < 0.0:
        raise ModelError(f"{builder}: {name} is a mass and must be >= 0 kg, got {value!r}")
    return v


def moment(builder: str, name: str, value) -> float:
    """A moment of inertia (kg m^2), >= 0."""
    v = _scalar(builder, name, value)
    if v < 0.0:
        raise ModelError(f"{builder}: {name} is a moment of inertia and must be >= 0 "
                         f"kg m^2, got {value!r}")
    return v


def gravity_magnitude(builder: str, name: str, value) -> float:
    """A gravitational acceleration magnitude (m/s^2), >= 0."""
    v = _scalar(builder, name, value)
    if v < 0.0:
        raise ModelError(f"{builder}: {name} is the magnitude of gravity and must be >= 0 "
                         f"m/s^2 (its direction is fixed by the model), got {value!r}")
    return v


def vector3(builder: str, name: str, value) -> np.ndarray:
    """A finite 3-vector."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{builder}: {name} must be a 3-vector, got {value!r}") from exc
    if arr.shape != (3,):
        raise ModelError(f"{builder}: {name} must have 3 components, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{builder}: {name} contains NaN or infinite values: {arr.tolist()}")
    return arr


def table(builder: str, name: str, value, rows: int, cols: tuple[int, ...]) -> np.ndarray:
    """A finite array of shape ``(rows,) + cols`` (per-link parameter tables)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{builder}: {name} must be numeric, got {value!r}") from exc
    if arr.shape != (rows,) + tuple(cols):
        raise ModelError(f"{builder}: {name} must have shape {(rows,) + tuple(cols)}, "
                         f"got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{builder}: {name} contains NaN or infinite values")
    return arr


def masses(builder: str, name: str, value, rows: int) -> np.ndarray:
    arr = table(builder, name, value, rows, ())
    bad = np.flatnonzero(arr < 0)
    if bad.size:
        raise ModelError(f"{builder}: {name}[{int(bad[0])}] = {arr[bad[0]]!r} is a mass "
                         "and must be >= 0 kg")
    return arr


def inertia_table(builder: str, name: str, value, rows: int) -> np.ndarray:
    """Per-link centroidal inertias given as 3 principal moments or full 3x3 tensors."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{builder}: {name} must be numeric, got {value!r}") from exc
    if arr.shape == (rows, 3):
        arr = np.stack([np.diag(r) for r in arr])
    if arr.shape != (rows, 3, 3):
        raise ModelError(f"{builder}: {name} must have shape ({rows}, 3) (moments about "
                         f"the link axes) or ({rows}, 3, 3), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{builder}: {name} contains NaN or infinite values")
    return arr


# ------------------------------------------------------------ rigid bodies
def rod_inertia(m: float, l: float, axis: int) -> np.ndarray:
    """Centroidal inertia of a uniform thin rod of mass m and length l along ``axis``.

    ``m l^2 / 12`` about both transverse axes, zero about the rod's own axis
    (the principal moments satisfy the triangle inequality with equality).
    """
    d = np.full(3, m * l * l / 12.0)
    d[axis] = 0.0
    return np.diag(d)


def composite(parts) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, centroid and centroidal inertia of rigidly joined parts.

    ``parts`` is a sequence of ``(m, c, I_c)`` in one frame (I_c about each
    part's own centroid).  Parallel-axis theorem:
    ``I = sum I_c + m_k (|d_k|^2 1 - d_k d_k^T)`` with ``d_k = c_k - c``.
    When the total mass is zero the first part's centroid is kept.
    """
    m = float(sum(p[0] for p in parts))
    if m > 0.0:
        c = sum(p[0] * np.asarray(p[1], float) for p in parts) / m
    else:
        c = np.asarray(parts[0][1], float)
    I = np.zeros((3, 3))
    for mk, ck, Ik in parts:
        d = np.asarray(ck, float) - c
        I += np.asarray(Ik, float) + mk * (d @ d * np.eye(3) - np.outer(d, d))
    return m, np.asarray(c, float), 0.5 * (I + I.T)


def translation(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    """4x4 pure translation."""
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T
