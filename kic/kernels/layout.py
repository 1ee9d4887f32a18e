"""The flat buffers of a closed plan: one table each, and everything derived from it.

The compiled closed-mechanism kernels take a :class:`kic.closed_plan.ClosedPlan`
as two flat buffers, int64 (the structure) and float64 (the numbers of one
design), one numba dispatch argument each rather than a tuple of ~26 arrays
that costs microseconds to type per call.  :data:`INT_FIELDS` and
:data:`FLOAT_FIELDS` say what the buffers hold, in order; from them

* :func:`pack` lays out a plan's buffers,
* :func:`float_views` gives named views of float buffers (one per design, the
  design writers set a design's numbers through them),
* :func:`unpack`, compiled, gives the kernels the plan as a :class:`Plan`
  named tuple of views (``P.parent``, ``P.origin``, ``P.L_char`` ...): its
  source is generated from the tables (:data:`UNPACK_SOURCE`), so no kernel
  reads a buffer by position.

A field's count is a dimension of the plan: ``N`` joints, ``M`` coordinates,
``L`` loops, ``R`` reduced closure rows, ``B + 1`` block boundaries, or ``""``
for a field of its own shape only; the int buffer starts with the dimensions
(:data:`HEADER`).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .jit import jit

__all__ = ["HEADER", "INT_FIELDS", "FLOAT_FIELDS", "SCALE_FIELDS", "Plan", "pack",
           "float_views", "float_size", "unpack", "UNPACK_SOURCE"]

HEADER = ("N", "M", "L", "R", "B", "max_iter")
"""The int buffer's first entries: the plan's dimensions and Newton's step limit."""

INT_FIELDS = (("parent", "N"), ("order", "N"), ("is_revolute", "N"), ("loop_k", "L"),
              ("loop_r", "L"), ("loop_row", "L"), ("body_a", "L"), ("body_b", "L"),
              ("row_is_rot", "R"), ("dep", "R"), ("block_row", "B + 1"),
              ("block_loop", "B + 1"), ("block_loops", "L"), ("q_idx", "M"))
"""The int buffer after :data:`HEADER`: (name, count), each a vector."""

FLOAT_FIELDS = (("axis", "N", (3,)), ("origin", "N", (4, 4)), ("offset", "N", (4, 4)),
                ("mass", "N", ()), ("com", "N", (3,)), ("inertia", "N", (3, 3)),
                ("gravity", "", (3,)), ("T_a", "L", (4, 4)), ("T_b", "L", (4, 4)),
                ("U", "L", (6, 6)), ("scale", "", (3,)))
"""The float buffer: (name, count, shape of one item); ``scale`` holds
:data:`SCALE_FIELDS`."""

SCALE_FIELDS = ("L_char", "tol", "max_condition")
"""The entries of the ``scale`` field, in order (the kernels see them by name)."""

Plan = namedtuple("Plan", HEADER + tuple(n for n, _ in INT_FIELDS)
                  + tuple(n for n, _, _ in FLOAT_FIELDS if n != "scale") + SCALE_FIELDS)
"""A plan as the kernels see it: the dimensions, the int and float fields as
views of the buffers, the scalars of ``scale`` as floats."""


def _count(per: str, dims: dict) -> int:
    """The number of items of a field counted by ``per`` (a key of the tables)."""
    if per == "":
        return 1
    return dims["B"] + 1 if per == "B + 1" else dims[per]


def pack(plan) -> tuple[np.ndarray, np.ndarray]:
    """The (float64, int64) buffers of ``plan`` (an object with the fields of the
    tables as attributes, and ``L_char``, ``tol``, ``max_condition``, ``max_iter``)."""
    dims = dict(N=plan.parent.shape[0], M=plan.q_idx.shape[0], L=plan.loop_k.shape[0],
                R=plan.dep.shape[0], B=plan.block_row.shape[0] - 1, max_iter=plan.max_iter)
    ints = [np.array([dims[h] for h in HEADER], np.int64)]
    for name, per in INT_FIELDS:
        a = np.ravel(getattr(plan, name)).astype(np.int64)
        if a.shape[0] != _count(per, dims):
            raise ValueError(f"plan field {name} has {a.shape[0]} entries, not {per}")
        ints.append(a)
    floats = []
    for name, per, shape in FLOAT_FIELDS:
        value = ([getattr(plan, s) for s in SCALE_FIELDS] if name == "scale"
                 else getattr(plan, name))
        a = np.ravel(np.asarray(value, np.float64))
        if a.shape[0] != _count(per, dims) * math.prod(shape):
            raise ValueError(f"plan field {name} has {a.shape[0]} numbers")
        floats.append(a)
    return (np.ascontiguousarray(np.concatenate(floats)),
            np.ascontiguousarray(np.concatenate(ints)))


def float_size(N: int, L: int) -> int:
    """Length of the float buffer of a plan with N joints and L loops."""
    return sum(_count(per, dict(N=N, L=L)) * math.prod(shape) for _, per, shape in FLOAT_FIELDS)


def float_views(buffers: np.ndarray, N: int, L: int) -> dict:
    """Named views of float buffers ``buffers`` (..., F) (leading axes kept):
    shape (..., N, 4, 4) for ``origin`` etc.; writing into a view writes the
    buffers."""
    lead = buffers.shape[:-1]
    out, k = {}, 0
    for name, per, shape in FLOAT_FIELDS:
        full = shape if per == "" else (_count(per, dict(N=N, L=L)),) + shape
        size = math.prod(full)
        out[name] = buffers[..., k:k + size].reshape(lead + full)
        k += size
    return out


def _unpack_source() -> str:
    """The source of :func:`unpack`, written from the tables."""
    lines = ["def unpack(fb, ib):",
             '    """The plan of buffers ``fb`` (float64), ``ib`` (int64) as a Plan of views."""']
    lines += [f"    {name} = ib[{i}]" for i, name in enumerate(HEADER)]
    lines.append(f"    k = {len(HEADER)}")
    for name, per in INT_FIELDS:
        lines += [f"    {name} = ib[k:k + {per}]", f"    k += {per}"]
    lines.append("    f = 0")
    for name, per, shape in FLOAT_FIELDS:
        full = ((per,) if per else ()) + tuple(str(s) for s in shape)
        size = " * ".join(s if " " not in s else f"({s})" for s in full)
        view = f"fb[f:f + {size}]"
        if len(full) > 1:
            view += f".reshape(({', '.join(full)}))"
        lines += [f"    {name} = {view}", f"    f += {size}"]
    lines += [f"    {s} = scale[{i}]" for i, s in enumerate(SCALE_FIELDS)]
    lines.append("    return Plan(" + ", ".join(f"{f}={f}" for f in Plan._fields) + ")")
    return "\n".join(lines) + "\n"


UNPACK_SOURCE = _unpack_source()
"""The generated source of :func:`unpack` (read it to see the layout in full)."""

# compiled with this file's name: numba's cache of it is then keyed on this file,
# whose tables the source comes from (a changed table changes the file)
exec(compile(UNPACK_SOURCE, __file__, "exec"), globals())
# inline: a function of its own returning the ~45 views costs each entry point a
# second of compilation, the views themselves nothing
unpack = jit(unpack, inline=True)  # noqa: F821  (defined by the exec above)
