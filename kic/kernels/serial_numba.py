"""The compiled kernel set of serial chains (internal; needs numba).

The numpy kernels (:mod:`kic.kernels.serial_numpy`) take a batch in some 40-100
array passes; each pass costs about a nanosecond per element, which bounds them
at about a microsecond per configuration of a 6-joint arm.  Compiled, the same
recursions run one configuration at a time in registers, without those passes.
These are the drivers: the arithmetic is in :mod:`kic.kernels.frames` (frames),
:mod:`kic.kernels.rnea` (joint loads), :mod:`kic.kernels.inertia` (I*, P*, the
gravity load), :mod:`kic.kernels.articulated` (forward dynamics in O(M), from
:data:`kic.settings.ABA_MIN_JOINTS` joints on) and :mod:`kic.kernels.linalg` (the
SPD solve and its rule, the inverses), each beside its numpy twin.  Entry points
called from Python with one signature compile at their first call, so a first
call compiles what it reaches and nothing else.  :mod:`kic.backend` selects this set
unless :func:`kic.set_backend` says otherwise; callers get it, or its numpy twin
of the same names and signatures, from :func:`kic.backend.kernels`.

Layout: the chain is one packed float64 vector (:func:`pack`, ``ChainData.packed``);
inputs ``q, qd, ...`` are (N, M) float64 (made C-contiguous here); outputs are
batch first, (N, M), (N, M, M), (N, M, M, M) (P* load index first).

What a first call compiles (numba, PUMA 560, empty cache): one pose's inverse and
forward dynamics share one entry point (:func:`_dynamics1`, the solve inline), which
calls :func:`kic.kernels.rnea.rnea_one` once (forward dynamics' bias is the loads at
q'' = 0) and :func:`kic.kernels.inertia.inertia_one`; the first of the two calls
compiles the three, the second nothing.  Each compiled function is typed, lowered
and optimized once, and its code is linked into every entry point that calls it
and optimized and translated there again, so a compiled function between an entry
point and the building blocks is paid twice: the drivers here are inline in their
entry points.  numba's inlining of a function (``inline=True``) costs a copy and a
retyping of its code at each call site, more than the link of a compiled one for a
large function called once (``rnea_one``, ``inertia_one``).  The one-pose entry
points allocate nothing (their work on the stack, :func:`kic.kernels.jit.stack_vector`)
and are compiled bare (:func:`kic.kernels.jit.jit`): a call from Python costs
about 0.2 us less.
The building blocks of the closed models' batched kernels (link frames, screw
motion, joint loads from a given motion) are batch last, (3, M, N), walked
joint by joint over the batch.
"""
from __future__ import annotations

import math

import numpy as np

from ..settings import ABA_MIN_JOINTS, ONE_POSE_STACK_FLOATS
from . import jit as _registry
from .articulated import aba_buffers, aba_one
from .frames import frames_into, pose_lanes
from .inertia import gravity_one, inertia_one as inertia_pose, link_world_into, power_one
from .jit import jit, stack_vector, view
from .linalg import cholesky_solve, invert_stacked
from .rnea import motion_lanes, motion_loads_lanes, rnea_one

__all__ = ["inverse_dynamics", "gravity_load", "inertia", "inertia_power", "forward_dynamics",
           "inverse_dynamics_one", "gravity_load_one", "inertia_one", "forward_dynamics_one",
           "pose", "link_motion", "loads_from_motion", "cross", "small_inverse",
           "inverse_with_condition", "pack", "load"]


def load() -> bool:
    """Compile on first use (numba imported now): :func:`kic.kernels.jit.load`."""
    return _registry.load()


# --------------------------------------------------------------------------
# the chain's constants and the work of one configuration
# --------------------------------------------------------------------------
# Every compiled kernel takes the chain as one packed float64 vector (each array
# argument costs a call from Python some 0.05-0.15 us) and its work as views of one
# allocation (one allocation costs about as much as a joint's arithmetic), made by
# kic.kernels.jit.view (a slice and a reshape cost a first compilation some 35 ms).
def pack(base, isR, O, mass, com, Iloc, grav) -> np.ndarray:
    """A chain's constants in one float64 vector: base (3, 4) then origins (M, 3, 4);
    centroids (M, 3) then gravity (3); inertias (M, 3, 3); masses (M); 1.0 for a
    revolute joint (M), in this order; :func:`_unpack` reads it."""
    return np.concatenate([np.ravel(x).astype(float) for x in
                           (base, O, com, grav, Iloc, mass, isR)])


@jit(inline=True)
def _dof(P):
    """The number of joints M of a :func:`pack` vector (26 M + 15 floats)."""
    return (P.shape[0] - 15) // 26


@jit(inline=True)
def _unpack(P):
    """The views (base, isR, O, mass, com, Iloc, grav) of a :func:`pack` vector."""
    M = _dof(P)
    k = 12 * (M + 1)                     # after base and origins: centroids, gravity
    m = k + 12 * M + 3                   # after the inertias: masses, then isR
    return (view(P, 0, (3, 4)), view(P, m + M, (M,)), view(P, 12, (M, 3, 4)),
            view(P, m, (M,)), view(P, k, (M, 3)), view(P, k + 3 * M + 3, (M, 3, 3)),
            view(P, k + 3 * M, (3,)))


@jit(inline=True)
def _frames_work(w, M):
    """Views A, t (M, 3), R (M, 3, 3), p (M, 3) of ``w[:18 M]``, the frames as
    :func:`kic.kernels.frames.frames_into` fills them, then a (M, 6) view of
    ``w[18 M:24 M]`` (the link wrenches of :func:`kic.kernels.rnea.rnea_one`, I*'s
    columns of :func:`kic.kernels.inertia.inertia_one`)."""
    return (view(w, 0, (M, 3)), view(w, 3 * M, (M, 3)), view(w, 6 * M, (M, 3, 3)),
            view(w, 15 * M, (M, 3)), view(w, 18 * M, (M, 6)))


@jit(inline=True)
def _forward_work(M):
    """The work of :func:`_forward_one`, views of one allocation: the frames and
    link wrenches (:func:`_frames_work`), I*'s columns (M, 6), I* (M, M) (factored
    in place), then the bias and zero rates (M)."""
    w = np.empty(M * (M + 32))
    return (_frames_work(w, M), view(w, 24 * M, (M, 6)), view(w, 30 * M, (M, M)),
            view(w, M * (M + 30), (M,)), view(w, M * (M + 31), (M,)))


@jit(inline=True)
def _aba_work(M):
    """The work of :func:`_aba_one`: the frames' views, then the recursion's buffers."""
    return _frames_work(np.empty(24 * M), M)[:4] + (aba_buffers(M),)


# The two forward dynamics of one configuration are inline: an entry point that calls
# a compiled function has that function's code linked into its own and optimized and
# translated again, so a function between an entry and the building blocks costs a
# first call twice (a one-configuration call and a batch each compile only theirs).
# They take the chain as :func:`_unpack` gives it and their work as made above, so
# that a batch makes its views once.
@jit(inline=True)
def _forward_one(chain, work, q, qd, tau, out):
    """q'' = I*^-1 (tau - bias) of one configuration into ``out``; False if I* fails
    the rule."""
    base, isR, O, mass, com, Iloc, grav = chain
    (A, t, R, p, W), cols, I, bias, zero = work
    M = q.shape[0]
    for j in range(M):
        zero[j] = 0.0
    rnea_one(base, isR, O, mass, com, Iloc, grav, q, qd, zero, A, t, R, p, W, bias)
    inertia_pose(mass, com, Iloc, R, p, A, t, cols, I)
    for j in range(M):
        bias[j] = tau[j] - bias[j]
    return cholesky_solve(I, bias, I, out)


@jit(inline=True)
def _aba_one(chain, work, q, qd, tau, out):
    """q'' of one configuration by the articulated-body recursion
    (:func:`kic.kernels.articulated.aba_one`); False if a pivot fails the rule."""
    base, isR, O, mass, com, Iloc, grav = chain
    A, t, R, p, buffers = work
    frames_into(base, isR, O, q, A, t, R, p)
    return aba_one(isR, mass, com, Iloc, grav, A, t, R, p, qd, tau, buffers, out)


# --------------------------------------------------------------------------
# batched entry points
# --------------------------------------------------------------------------
@jit
def _rnea(P, q, qd, qdd, use_gravity, out):
    base, isR, O, mass, com, Iloc, grav = _unpack(P)
    N, M = q.shape
    A, t, R, p, W = _frames_work(np.empty(24 * M), M)
    field = grav if use_gravity else np.zeros(3)
    for n in range(N):
        rnea_one(base, isR, O, mass, com, Iloc, field, q[n], qd[n], qdd[n], A, t, R, p, W,
                 out[n])


@jit
def _gravity(P, q, out):
    base, isR, O, mass, com, Iloc, grav = _unpack(P)
    N, M = q.shape
    A, t, R, p, _ = _frames_work(np.empty(24 * M), M)
    for n in range(N):
        frames_into(base, isR, O, q[n], A, t, R, p)
        gravity_one(mass, com, grav, A, t, R, p, out[n])


@jit
def _inertia(P, q, out):
    base, isR, O, mass, com, Iloc, grav = _unpack(P)
    N, M = q.shape
    A, t, R, p, cols = _frames_work(np.empty(24 * M), M)
    for n in range(N):
        frames_into(base, isR, O, q[n], A, t, R, p)
        inertia_pose(mass, com, Iloc, R, p, A, t, cols, out[n])


@jit
def _inertia_power(P, q, with_inertia, I_out, P_out):
    base, isR, O, mass, com, Iloc, grav = _unpack(P)
    N, M = q.shape
    A, t, R, p, cols = _frames_work(np.empty(24 * M), M)
    c = np.empty((M, 3))
    Iw = np.empty((M, 3, 3))
    S0 = np.empty(M)
    S1 = np.empty((M, 3))
    S2 = np.empty((M, 3, 3))
    J = np.empty((M, 3, 3))
    Z = np.empty((M, M, 3))
    JA = np.empty((M, M, 3))
    C = np.empty((M, M, 3))
    for n in range(N):
        frames_into(base, isR, O, q[n], A, t, R, p)
        link_world_into(R, p, com, Iloc, c, Iw)
        if with_inertia:
            inertia_pose(mass, com, Iloc, R, p, A, t, cols, I_out[n])
        power_one(mass, c, Iw, A, t, S0, S1, S2, J, Z, JA, C, P_out[n])


@jit
def _forward(P, q, qd, tau, out, ok):
    chain, work = _unpack(P), _forward_work(q.shape[1])
    for n in range(q.shape[0]):
        ok[n] = _forward_one(chain, work, q[n], qd[n], tau[n], out[n])


@jit
def _aba(P, q, qd, tau, out, ok):
    chain, work = _unpack(P), _aba_work(q.shape[1])
    for n in range(q.shape[0]):
        ok[n] = _aba_one(chain, work, q[n], qd[n], tau[n], out[n])


# --------------------------------------------------------------------------
# one configuration from Python: one packed argument, one signature each
# --------------------------------------------------------------------------
# The shapes of 1-D inputs and the finiteness of the result are checked here: False
# sends the caller to its validating path, which names the argument at fault.  A
# non-finite input always gives a non-finite result (IEEE: 0 x NaN and inf - inf
# are NaN, sin(inf) is NaN, and nothing is reassociated), so the output check
# covers the inputs, and finite inputs whose result overflows.
@jit(inline=True)
def _finite(M, x):
    if x.shape[0] != M:
        return False
    for j in range(M):
        if not math.isfinite(x[j]):        # (math, not a numpy ufunc: less to compile)
            return False
    return True


@jit(inline=True)
def _shapes(M, a, b, c, out):
    return a.shape[0] == M and b.shape[0] == M and c.shape[0] == M and out.shape[0] == M


# one signature per entry point: any other input type (a list, a read-only or
# strided array, another dtype) raises TypeError at the call and the caller takes
# its validating path; nothing new is compiled.  Their work is on the stack (bare:
# no allocation, no reference counting of the arguments, the GIL held).
@jit(signature="b1(f8[::1], b1, f8[::1], f8[::1], f8[::1], f8[::1])", bare=True)
def _dynamics1(P, forward, q, qd, x, out):
    """One configuration: the joint loads ``out`` at rates ``qd`` and accelerations
    ``x`` (``forward`` False), or the accelerations ``out`` under the loads ``x``
    (``forward`` True: q'' = I*^-1 (x - bias), the bias the loads at q'' = 0).  One
    entry point and one call of the Newton-Euler recursion for both: a first use of
    both compiles the recursion's code into one entry point, not two (PUMA 560:
    0.4 s less)."""
    M = _dof(P)
    need = M * (M + 31) if forward else 24 * M
    if not _shapes(M, q, qd, x, out) or need > ONE_POSE_STACK_FLOATS:
        return False
    base, isR, O, mass, com, Iloc, grav = _unpack(P)
    w = stack_vector(need)
    A, t, R, p, W = _frames_work(w, M)          # the Newton-Euler work
    rates = x
    if forward:
        rates = view(w, 24 * M, (M,))
        for j in range(M):
            rates[j] = 0.0
    rnea_one(base, isR, O, mass, com, Iloc, grav, q, qd, rates, A, t, R, p, W, out)
    if forward:
        # I* (M, M) from the frames just made, its columns (M, 6) after the zero rates
        cols = view(w, 25 * M, (M, 6))
        I = view(w, 31 * M, (M, M))
        inertia_pose(mass, com, Iloc, R, p, A, t, cols, I)
        for j in range(M):
            rates[j] = x[j] - out[j]
        if not cholesky_solve(I, rates, I, out):      # I* factored in place
            return False
    return _finite(M, out)


@jit(signature="b1(f8[::1], f8[::1], f8[::1])", bare=True)
def _gravity1(P, q, out):
    base, isR, O, mass, com, Iloc, grav = _unpack(P)
    M = mass.shape[0]
    if q.shape[0] != M or out.shape[0] != M or 24 * M > ONE_POSE_STACK_FLOATS:
        return False
    A, t, R, p, _ = _frames_work(stack_vector(24 * M), M)
    frames_into(base, isR, O, q, A, t, R, p)
    gravity_one(mass, com, grav, A, t, R, p, out)
    return _finite(M, out)


@jit(signature="b1(f8[::1], f8[::1], f8[:, ::1])", bare=True)
def _inertia1(P, q, out):
    base, isR, O, mass, com, Iloc, grav = _unpack(P)
    M = mass.shape[0]
    if (q.shape[0] != M or out.shape[0] != M or out.shape[1] != M
            or 24 * M > ONE_POSE_STACK_FLOATS):
        return False
    A, t, R, p, cols = _frames_work(stack_vector(24 * M), M)
    frames_into(base, isR, O, q, A, t, R, p)
    inertia_pose(mass, com, Iloc, R, p, A, t, cols, out)
    return _finite(M * M, out.reshape(M * M))


@jit(signature="b1(f8[::1], f8[::1], f8[::1], f8[::1], f8[::1])")
def _aba1(P, q, qd, tau, out):
    M = _dof(P)
    return (_shapes(M, q, qd, tau, out)
            and _aba_one(_unpack(P), _aba_work(M), q, qd, tau, out) and _finite(M, out))


# --------------------------------------------------------------------------
# array primitives
# --------------------------------------------------------------------------
# one signature for every memory layout: compiled once, no per-layout variants
@jit(signature="void(f8[:, :, :, :], f8[:, :, :, :], f8[:, :, :, :])")
def _cross4(a, b, out):
    """out[p, :, q, r] = a[p, :, q, r] x b[p, :, q, r] (any strides)."""
    P, _, Q, S = out.shape
    for i in range(P):
        for k in range(Q):
            for m in range(S):
                a0, a1, a2 = a[i, 0, k, m], a[i, 1, k, m], a[i, 2, k, m]
                b0, b1, b2 = b[i, 0, k, m], b[i, 1, k, m], b[i, 2, k, m]
                out[i, 0, k, m] = a1 * b2 - a2 * b1
                out[i, 1, k, m] = a2 * b0 - a0 * b2
                out[i, 2, k, m] = a0 * b1 - a1 * b0


def cross_into(a: np.ndarray, b: np.ndarray, out: np.ndarray, axis: int) -> bool:
    """``out = a x b`` along ``axis`` for same-shaped float arrays of 2 or 3 dims.

    Returns False (nothing written) for other cases, which numpy handles.
    """
    load()
    if (a.shape != b.shape or a.ndim not in (2, 3) or a.dtype != np.float64
            or b.dtype != np.float64 or not (a.flags.writeable and b.flags.writeable)):
        return False                     # the compiled signature takes writeable float64
    # as (P, 3, Q, S) views
    if axis == 0:
        ix = (None, slice(None), slice(None), None) if a.ndim == 2 else (None,)
    else:
        ix = (slice(None), slice(None), None, None) if a.ndim == 2 else (Ellipsis, None)
    _cross4(a[ix], b[ix], out[ix])
    return True


def cross(a: np.ndarray, b: np.ndarray, axis: int = 0) -> np.ndarray:
    """Cross product along ``axis`` (0 or 1), compiled for same-shaped float64
    arrays of 2 or 3 dimensions, numpy's otherwise (broadcasting)."""
    out = np.empty(a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape))
    if cross_into(a, b, out, axis):
        return out
    from .._array import numpy_cross
    return numpy_cross(a, b, axis)


def inverse_with_condition(A: np.ndarray):
    """(inverses (..., m, m), Frobenius bounds ``||A||_F ||A^-1||_F`` (...) on the
    2-norm condition numbers) in one pass, by :func:`kic.kernels.linalg.invert_stacked`
    (NaN inverses and an infinite bound where singular)."""
    load()
    A3 = _rows(A).reshape((-1,) + A.shape[-2:])
    out = np.empty(A3.shape)
    bound = np.empty(A3.shape[0])
    invert_stacked(A3, out, bound)
    return out.reshape(A.shape), bound.reshape(A.shape[:-2])


def small_inverse(A: np.ndarray) -> np.ndarray:
    """Inverses of stacked (..., m, m) float matrices; NaN where singular."""
    return inverse_with_condition(A)[0]


# --------------------------------------------------------------------------
# Python wrappers: the kernel set (kic.backend.kernels); the numpy twins in
# kic.kernels.serial_numpy have the same names and signatures
# --------------------------------------------------------------------------
def _rows(x: np.ndarray) -> np.ndarray:
    """C-contiguous, writeable float64: the one array type the kernels are compiled
    for (a read-only or strided input would compile another specialization)."""
    a = np.ascontiguousarray(x, dtype=float)
    return a if a.flags.writeable else a.copy()


def pose(d, qT: np.ndarray):
    """(Fc (M, 4, 3, N), sR (3, M, N), sv (3, M, N)) of configurations qT (M, N)."""
    qT = _rows(qT)
    M, N = qT.shape
    Fc = np.empty((M, 4, 3, N))
    sR = np.empty((3, M, N))
    sv = np.empty((3, M, N))
    pose_lanes(d.base, d.isR, d.O, qT, Fc, sR, sv)
    return Fc, sR, sv


_ZERO3 = np.zeros(3)


def link_motion(sR, sv, qdT, qddT=None, gravity=None):
    """(w, v, aw, av), each (3, M, N), as :func:`kic.kernels.rnea.link_motion`."""
    qdT = _rows(qdT)
    out = [np.empty(sR.shape) for _ in range(4)]
    motion_lanes(_rows(sR), _rows(sv), qdT, qdT if qddT is None else _rows(qddT),
                 qddT is not None, _ZERO3 if gravity is None else _rows(gravity),
                 gravity is not None, *out)
    return tuple(out)


def loads_from_motion(d, Fc, sR, sv, motion, qddT, gravity: bool) -> np.ndarray:
    """Joint loads (M, N) as :func:`kic.kernels.rnea.loads_from_motion`."""
    M, N = qddT.shape
    tau = np.empty((M, N))
    w, v, aw, av = (_rows(x) for x in motion)
    motion_loads_lanes(_rows(Fc), _rows(sR), _rows(sv), w, v, aw, av, _rows(qddT), d.gravity,
                       gravity, d.mass, d.com, d.inertia, np.empty((6, N)),
                       np.empty((6, M, N)), tau)
    return tau


def inverse_dynamics(d, q, qd, qdd, gravity: bool = True) -> np.ndarray:
    """Joint loads (N, M) of configurations q, qd, qdd (N, M)."""
    q = _rows(q)
    out = np.empty(q.shape)
    _rnea(d.packed, q, _rows(qd), _rows(qdd), gravity, out)
    return out


def gravity_load(d, q) -> np.ndarray:
    """+dV/dq (N, M) of configurations q (N, M)."""
    q = _rows(q)
    out = np.empty(q.shape)
    _gravity(d.packed, q, out)
    return out


def inertia(d, q) -> np.ndarray:
    """I* (N, M, M)."""
    q = _rows(q)
    N, M = q.shape
    out = np.empty((N, M, M))
    _inertia(d.packed, q, out)
    return out


def inertia_power(d, q, with_inertia: bool = True):
    """(I* (N, M, M) or None, P* (N, M, M, M)) in one pass over the batch."""
    q = _rows(q)
    N, M = q.shape
    I = np.empty((N, M, M) if with_inertia else (1, M, M))
    P = np.empty((N, M, M, M))
    _inertia_power(d.packed, q, with_inertia, I, P)
    return (I if with_inertia else None), P


def forward_dynamics(d, q, qd, tau):
    """(q'' (N, M), ok (N,)): ok is False where I* fails
    :func:`kic.kernels.linalg.spd_pivot_ok` (from :data:`kic.settings.ABA_MIN_JOINTS`
    joints on, where a pivot of the articulated-body recursion fails it)."""
    q = _rows(q)
    out = np.empty(q.shape)
    ok = np.empty(q.shape[0], dtype=np.bool_)
    run = _aba if d.dof >= ABA_MIN_JOINTS else _forward
    run(d.packed, q, _rows(qd), _rows(tau), out, ok)
    return out, ok


# One configuration: ``out`` is written and True returned when every input is a
# writeable, contiguous float64 array of shape (M,) with finite values (and I* passes
# the rule, for forward dynamics); False otherwise, with ``out`` undefined.
def inverse_dynamics_one(d, q, qd, qdd, out) -> bool:
    """Joint loads of one configuration into ``out`` (M,)."""
    try:
        return _dynamics1(d.packed, False, q, qd, qdd, out)
    except TypeError:                    # not a float64 vector: the caller validates
        return False


def gravity_load_one(d, q, out) -> bool:
    """+dV/dq of one configuration into ``out`` (M,)."""
    try:
        return _gravity1(d.packed, q, out)
    except TypeError:
        return False


def inertia_one(d, q, out) -> bool:
    """I* of one configuration into ``out`` (M, M)."""
    try:
        return _inertia1(d.packed, q, out)
    except TypeError:
        return False


def forward_dynamics_one(d, q, qd, tau, out) -> bool:
    """q'' of one configuration into ``out`` (M,)."""
    try:
        if d.dof >= ABA_MIN_JOINTS:
            return _aba1(d.packed, q, qd, tau, out)
        return _dynamics1(d.packed, True, q, qd, tau, out)
    except TypeError:
        return False
