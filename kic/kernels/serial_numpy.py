"""The kernel set of serial chains without numba: numpy for batches, Python floats
for one configuration (internal).

The same functions, by name and signature, as :mod:`kic.kernels.serial_numba`;
the algorithms are the numpy twins beside the compiled forms in
:mod:`kic.kernels.frames`, :mod:`kic.kernels.rnea`, :mod:`kic.kernels.inertia`
and :mod:`kic.kernels.linalg`.

*Batches* run as numpy array passes, batch last ((3, M, N) arrays: element-wise
work on the contiguous last axis is several times faster than on a leading
batch axis), in blocks of :data:`kic._array.BLOCK` configurations: world-frame
joint screws, link motion by prefix sums, joint loads by suffix sums of the
link wrenches, I* from composite inertias, P* re-associated into composite
moments (Freeman's eq. 2-196, 2-197; see :mod:`kic.dynamics`); forward dynamics
of chains of :data:`kic.settings.ABA_MIN_JOINTS` joints or more by the O(M)
articulated-body recursion (:mod:`kic.kernels.articulated`).

*One configuration* costs a numpy kernel 100-300 calls of about a microsecond
each; the same recursion in Python floats (about 10 ns a flop) takes tens of
microseconds.  It runs the arithmetic the compiled kernels are made of -- the
frame step, the screw step, the link wrench, the composite step and the
Cholesky solve -- uncompiled (their plain twins, :func:`kic.kernels.jit.plain`),
so both backends evaluate one configuration by the same code.
"""
from __future__ import annotations

import math

import numpy as np

from .._array import blocks, numpy_cross as cross
from ..settings import ABA_MIN_JOINTS
from .articulated import aba_floats, aba_numpy
from .frames import frames_floats, pose_numpy as pose
from .inertia import (LinkState, gravity_floats, gravity_numpy, inertia_floats, inertia_numpy,
                      power_numpy)
from .jit import plain
from .linalg import inverses_and_bounds as inverse_with_condition, small_inverse
from .linalg import spd_factor, spd_substitute
from .rnea import link_motion, loads_floats, loads_from_motion, wrench_loads

_plain_cholesky_solve = plain("kic.kernels.linalg", "cholesky_solve")

__all__ = ["inverse_dynamics", "gravity_load", "inertia", "inertia_power", "forward_dynamics",
           "inverse_dynamics_one", "gravity_load_one", "inertia_one", "forward_dynamics_one",
           "pose", "link_motion", "loads_from_motion", "cross", "small_inverse",
           "inverse_with_condition"]


# --------------------------------------------------------------------------
# one configuration, Python floats
# --------------------------------------------------------------------------
def _floats(x, M: int):
    """A float64 vector of shape (M,) with finite values as a list, else None."""
    if type(x) is not np.ndarray or x.shape != (M,) or x.dtype != np.float64:
        return None
    v = x.tolist()
    return v if all(map(math.isfinite, v)) else None        # NaN or inf


def _finite_into(out, values) -> bool:
    """``out[:] = values`` (a list, or a list of lists); False when a value is not
    finite (finite inputs that overflow: the caller's validating path reports it)."""
    out[:] = values
    return bool(np.isfinite(out).all())


def inverse_dynamics_one(d, q, qd, qdd, out) -> bool:
    """Joint loads of one configuration into ``out`` (M,); False for inputs that are
    not finite float64 vectors of shape (M,)."""
    M = d.dof
    q, qd, qdd = _floats(q, M), _floats(qd, M), _floats(qdd, M)
    if q is None or qd is None or qdd is None:
        return False
    return _finite_into(out, loads_floats(d, frames_floats(d, q), qd, qdd))


def gravity_load_one(d, q, out) -> bool:
    """+dV/dq of one configuration into ``out`` (M,)."""
    q = _floats(q, d.dof)
    if q is None:
        return False
    return _finite_into(out, gravity_floats(d, frames_floats(d, q)))


def inertia_one(d, q, out) -> bool:
    """I* of one configuration into ``out`` (M, M)."""
    q = _floats(q, d.dof)
    if q is None:
        return False
    return _finite_into(out, inertia_floats(d, frames_floats(d, q)))


def forward_dynamics_one(d, q, qd, tau, out) -> bool:
    """q'' of one configuration into ``out`` (M,); False also when I* fails the rule."""
    M = d.dof
    q, qd, tau = _floats(q, M), _floats(qd, M), _floats(tau, M)
    if q is None or qd is None or tau is None:
        return False
    frames = frames_floats(d, q)
    if M >= ABA_MIN_JOINTS:               # the O(M) recursion (kic.settings)
        x = aba_floats(d, frames, qd, tau)
        return x is not None and _finite_into(out, x)
    bias = loads_floats(d, frames, qd, [0.0] * M)
    x = [0.0] * M
    if not _plain_cholesky_solve(inertia_floats(d, frames), [t - b for t, b in zip(tau, bias)],
                                 [[0.0] * M for _ in range(M)], x):
        return False
    return _finite_into(out, x)


# --------------------------------------------------------------------------
# batches, numpy (batch last inside, in blocks)
# --------------------------------------------------------------------------
def _by_blocks(q, shape, fn) -> np.ndarray:
    """``fn(qT)`` (shape + (n,)) over blocks of the batch q (N, M), batch first out."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    N = q.shape[0]
    out = np.empty((N,) + shape)
    qT = np.ascontiguousarray(q.T)
    # silent arithmetic, as in the compiled kernels: the callers check that the
    # results are finite and name an overflow (a ModelError), once, for both sets
    with np.errstate(over="ignore", invalid="ignore"):
        for sl in blocks(N):
            x = fn(sl, qT[:, sl])
            out[sl] = np.moveaxis(x, -1, 0)
    return out


def inverse_dynamics(d, q, qd, qdd, gravity: bool = True) -> np.ndarray:
    """Joint loads (N, M) of configurations q, qd, qdd (N, M)."""
    qdT, qddT = (np.atleast_2d(np.asarray(x, dtype=float)).T for x in (qd, qdd))

    def run(sl, qT):
        Fc, sR, sv = pose(d, qT)
        motion = link_motion(sR, sv, qdT[:, sl], qddT[:, sl], d.gravity if gravity else None)
        return wrench_loads(d, Fc, sR, sv, *motion)
    return _by_blocks(q, (d.dof,), run)


def gravity_load(d, q) -> np.ndarray:
    """+dV/dq = -sum G_c^T m g (N, M), by suffix sums of mass and first moment."""
    return _by_blocks(q, (d.dof,), lambda sl, qT: gravity_numpy(d, *pose(d, qT)))


def inertia(d, q) -> np.ndarray:
    """I* (N, M, M)."""
    def run(sl, qT):
        Fc, sR, sv = pose(d, qT)
        return inertia_numpy(sR, sv, LinkState(d, Fc))
    return _by_blocks(q, (d.dof, d.dof), run)


def inertia_power(d, q, with_inertia: bool = True):
    """(I* (N, M, M) or None, P* (N, M, M, M))."""
    M = d.dof
    I = np.empty((q.shape[0], M, M)) if with_inertia else None

    def run(sl, qT):
        Fc, sR, sv = pose(d, qT)
        state = LinkState(d, Fc)
        if with_inertia:
            I[sl] = np.moveaxis(inertia_numpy(sR, sv, state), -1, 0)
        return power_numpy(sR, sv, state)
    return I, _by_blocks(q, (M, M, M), run)


def forward_dynamics(d, q, qd, tau):
    """(q'' (N, M), ok (N,)): ok is False where I* fails the singularity rule
    (:func:`kic.kernels.linalg.spd_pivot_ok`; from :data:`kic.settings.ABA_MIN_JOINTS`
    joints on, where a pivot of the articulated-body recursion fails it)."""
    M = d.dof
    qdT = np.asarray(qd, dtype=float).T
    if M >= ABA_MIN_JOINTS:
        return _aba_by_blocks(d, q, qdT, np.asarray(tau, dtype=float).T)
    I = np.empty((np.shape(q)[0], M, M))

    def run(sl, qT):                      # one pose per block for the bias and I*
        Fc, sR, sv = pose(d, qT)
        I[sl] = np.moveaxis(inertia_numpy(sR, sv, LinkState(d, Fc)), -1, 0)
        return wrench_loads(d, Fc, sR, sv, *link_motion(sR, sv, qdT[:, sl], None, d.gravity))
    bias = _by_blocks(q, (M,), run)
    L, ok = spd_factor(I)
    return spd_substitute(L, np.asarray(tau, dtype=float) - bias), ok


def _aba_by_blocks(d, q, qdT, tauT):
    """(q'' (N, M), ok (N,)) by :func:`kic.kernels.articulated.aba_numpy` in blocks."""
    ok = np.empty(np.shape(q)[0], dtype=bool)

    def run(sl, qT):
        qdd, ok[sl] = aba_numpy(d, *pose(d, qT), qdT[:, sl], tauT[:, sl])
        return qdd
    return _by_blocks(q, (d.dof,), run), ok
