"""Helpers shared by the model builders (internal).

Validation with messages that name the builder and the argument at fault
(one model's scalars, or a design batch's arrays), rigid-body helpers
(thin-rod inertias; composite bodies come from kic.composite_body)
and small homogeneous transforms.
"""
from __future__ import annotations

import numpy as np

from kic.errors import ModelError

__all__ = []


#: each kind of parameter: its least value (None: any finite value), whether that
#: value itself is allowed, and what a message calls it (one rule for the builders'
#: scalars and the design writers' arrays)
KINDS = {"finite": (None, True, "a finite number"), "angle": (None, True, "a finite angle"),
         "length": (0.0, False, "a length > 0 m"), "mass": (0.0, True, "a mass >= 0 kg"),
         "moment": (0.0, True, "a moment of inertia >= 0 kg m^2"),
         "gravity": (0.0, True, "a gravity magnitude >= 0 m/s^2 (its direction is fixed "
                                "by the model)")}


def invalid(kind: str, values) -> np.ndarray:
    """Where ``values`` are not of the ``kind`` (:data:`KINDS`), elementwise."""
    least, allowed, _ = KINDS[kind]
    a = np.asarray(values, float)
    bad = ~np.isfinite(a)
    if least is not None:
        bad |= ~(a >= least) if allowed else ~(a > least)
    return bad


def _scalar(builder: str, name: str, value, kind: str = "finite") -> float:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{builder}: {name} must be a real number, got {value!r}") from exc
    if arr.shape != ():
        raise ModelError(f"{builder}: {name} must be a scalar, got shape {arr.shape}")
    if invalid(kind, arr):
        raise ModelError(f"{builder}: {name} must be {KINDS[kind][2]}, got {value!r}")
    return float(arr)


def finite(builder: str, name: str, value) -> float:
    """A finite real scalar (signed dimensions: DH offsets, lateral offsets)."""
    return _scalar(builder, name, value)


def length(builder: str, name: str, value) -> float:
    """A strictly positive length (m)."""
    return _scalar(builder, name, value, "length")


def mass(builder: str, name: str, value) -> float:
    """A mass (kg), >= 0."""
    return _scalar(builder, name, value, "mass")


def moment(builder: str, name: str, value) -> float:
    """A moment of inertia (kg m^2), >= 0."""
    return _scalar(builder, name, value, "moment")


def gravity_magnitude(builder: str, name: str, value) -> float:
    """A gravitational acceleration magnitude (m/s^2), >= 0."""
    return _scalar(builder, name, value, "gravity")


def checked(builder: str, kinds: dict, values: dict) -> dict:
    """One model's parameters, each checked against its kind (``kinds``: name ->
    kind of :data:`KINDS`), as floats by name."""
    return {k: _scalar(builder, k, values[k], kind) for k, kind in kinds.items()}


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


def design_arrays(builder: str, kinds: dict, values: dict) -> tuple[dict, int]:
    """Design parameters broadcast to arrays (D,) and checked against their kinds
    (``kinds``: name -> kind of :data:`KINDS`); the message names the parameter
    and the first bad design.  Returns the arrays by name and D."""
    arrays = {k: np.asarray(values[k], dtype=float) for k in kinds}
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError as exc:
        raise ModelError(f"{builder}: the design parameters do not broadcast: "
                         f"{ {k: a.shape for k, a in arrays.items()} }") from exc
    if len(shape) > 1:
        raise ModelError(f"{builder}: design parameters are scalars or arrays (D,), "
                         f"got shape {shape}")
    D = shape[0] if shape else 1
    out = {}
    for k, kind in kinds.items():
        out[k] = np.broadcast_to(arrays[k], (D,)).copy()
        bad = invalid(kind, out[k])
        if bad.any():
            d = int(np.argmax(bad))
            raise ModelError(f"{builder}: {k} of design {d} is {float(out[k][d])!r}, not "
                             f"{KINDS[kind][2]}")
    return out, D


# ------------------------------------------------------------ rigid bodies
def rod_inertia(m, l, axis: int) -> np.ndarray:
    """Centroidal inertia (..., 3, 3) of uniform thin rods of mass m (...) and
    length l (...) along ``axis``.

    ``m l^2 / 12`` about both transverse axes, zero about the rod's own axis
    (the principal moments satisfy the triangle inequality with equality).
    """
    v = np.asarray(m * l * l / 12.0, float)
    out = np.zeros(v.shape + (3, 3))
    for k in {0, 1, 2} - {axis}:
        out[..., k, k] = v
    return out




def translation(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    """4x4 pure translation."""
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T
