"""Compiled serial-chain kernels (internal; optional, needs numba).

The numpy kernels of :mod:`kic.dynamics` take a batch in some 40-100 array
passes; each pass costs about a nanosecond per element, which bounds them at
about a microsecond per configuration of a 6-joint arm.  Compiled, the same
recursions run one configuration at a time in registers, without those
passes.  These kernels evaluate exactly the sums of :mod:`kic.dynamics`
(world-frame screws, composite inertias, Freeman's P* re-associated into
composite moments) and the tests compare them with the numpy kernels and with
the independent oracle.  :mod:`kic.backend` selects them (the ``fast`` extra)
unless :func:`kic.set_backend` says otherwise; callers get them, or their numpy
twins of the same names and signatures, from :func:`kic.backend.kernels`.

The arithmetic of one joint or link -- the frame step, the screw-motion step,
the link wrench -- and the Cholesky solve with kic's one singularity rule
(:func:`spd_pivot_ok`) are plain Python functions of floats and tuples, written
once here: numba compiles them into the kernels below, and their uncompiled
twins (:data:`plain`) run the plain-float kernels of :mod:`kic._scalar` when
numba is absent.  numba is imported only by :func:`load`, so ``import kic``
does not pay for it.

Layout: inputs ``q, qd, ...`` are (N, M) float64 (made C-contiguous here);
outputs are batch first, (N, M), (N, M, M), (N, M, M, M) (P* load index first).
The building blocks of the closed models' batched kernels (link frames, screw
motion, joint loads from a given motion) are batch last, (3, M, N), walked
joint by joint over the batch.
"""
from __future__ import annotations

import importlib.util
import math
import types

import numpy as np

__all__ = []

available = importlib.util.find_spec("numba") is not None
"""numba is installed (imported, and the kernels compiled, on first use)."""

_JITTED: list[str] = []      # names of the functions compiled by :func:`load`
_INLINED: set[str] = set()   # ... and of those inlined into their callers
_SHARED: list[str] = []      # ... and of those also run uncompiled (:data:`plain`)
_loaded = False


def _jit(fn):
    """Mark ``fn`` for compilation; numba is imported only when a kernel is needed,
    so ``import kic`` does not pay for it."""
    _JITTED.append(fn.__name__)
    return fn


def _inline(fn):
    """Like :func:`_jit`, for a helper compiled into each caller (a call that passes
    array views costs more than the helper's arithmetic)."""
    _INLINED.add(fn.__name__)
    return _jit(fn)


def _shared(fn):
    """An inlined helper of floats and tuples that also runs as plain Python."""
    _SHARED.append(fn.__name__)
    return _inline(fn)


# one signature per one-configuration entry point: any other input type (a list,
# a read-only or strided array, another dtype) raises TypeError at the call and
# the caller takes its validating path; nothing new is compiled
_SIGNATURES = {
    "_rnea1": "b1(f8[::1], f8[::1], f8[::1], f8[::1], f8[::1])",
    "_gravity1": "b1(f8[::1], f8[::1], f8[::1])",
    "_inertia1": "b1(f8[::1], f8[::1], f8[:, ::1])",
    "_forward1": "b1(f8[::1], f8[::1], f8[::1], f8[::1], f8[::1])",
    # one signature for every memory layout: compiled once, no per-layout variants
    "_cross4": "void(f8[:, :, :, :], f8[:, :, :, :], f8[:, :, :, :])",
}


def load() -> bool:
    """Import numba and wrap the kernels (they compile at their first call, or load
    from numba's cache).  False, with a warning, if numba cannot be imported."""
    global _loaded, available
    if _loaded:
        return True
    try:
        import numba
    except ImportError as exc:           # e.g. a numba built for another numpy
        import warnings
        warnings.warn(f"numba is installed but cannot be imported ({exc}); kic uses "
                      "its numpy kernels", RuntimeWarning, stacklevel=3)
        available = False
        return False
    g = globals()
    for name in _JITTED:
        g[name] = numba.njit(cache=True, nogil=True, error_model="numpy",
                             inline="always" if name in _INLINED else "never")(g[name])
    for name, sig in _SIGNATURES.items():
        g[name] = numba.njit(sig, cache=True, nogil=True, error_model="numpy")(g[name])
    _loaded = True
    return True


def shared_helpers() -> dict:
    """The shared arithmetic (:data:`plain` lists it) compiled, by name, for other
    compiled kernel modules to inline: their ``load`` calls this and puts the result
    in its namespace before compiling.  Loads numba (ImportError if it cannot)."""
    if not load():
        raise ImportError("numba cannot be imported")
    g = globals()
    return {name: g[name] for name in _SHARED}


# --------------------------------------------------------------------------
# the arithmetic shared with the plain-float kernels (kic._scalar)
# --------------------------------------------------------------------------
SPD_RTOL = 1e-12
"""Relative pivot tolerance of the symmetric positive definite solves."""


@_shared
def spd_pivot_ok(d, a):
    """kic's one singularity rule for SPD solves (I*, and every Cholesky in kic).

    ``d`` is the k-th pivot of the Cholesky factorization (the Schur complement
    ``L_kk^2``) and ``a`` the diagonal entry ``A_kk`` it came from; the matrix is
    taken as singular unless ``d > SPD_RTOL * a`` for every k.  The ratio
    ``d / a`` is the squared sine of the angle (in the metric of A) between
    coordinate k and the span of the coordinates before it, so the rule is
    independent of units and of the scaling of each coordinate (A -> D A D for
    a positive diagonal D leaves it unchanged), unlike a bound on the pivots
    relative to the largest one.  NaN fails it.  Works on floats and,
    elementwise, on arrays.
    """
    return d > SPD_RTOL * a


@_shared
def cholesky_solve(A, b, L, x):
    """x = A^-1 b for a small SPD ``A`` (indexed ``A[i][k]``: a 2-D array or a list
    of lists); ``L`` a work matrix like A, ``x`` the output like b.  False, with
    ``x`` undefined, when A fails :func:`spd_pivot_ok`."""
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


@_shared
def frame_step(T, O, revolute, q):
    """One joint of the chain: the frame ``T`` of the link before it (12-tuple: R
    row by row, then the origin), the joint's constant origin ``O`` (12-tuple, its
    axis is z) and its coordinate ``q`` give the link's frame and the joint screw
    in world coordinates: ``(T_j, (a_x, a_y, a_z), (t_x, t_y, t_z))`` with ``a`` the
    axis (zero for a prismatic joint) and ``t`` the moment part (``r x s`` for R,
    ``s`` for P)."""
    R00, R01, R02, R10, R11, R12, R20, R21, R22, px, py, pz = T
    o00, o01, o02, o03, o10, o11, o12, o13, o20, o21, o22, o23 = O
    b00 = R00 * o00 + R01 * o10 + R02 * o20
    b01 = R00 * o01 + R01 * o11 + R02 * o21
    b02 = R00 * o02 + R01 * o12 + R02 * o22
    b10 = R10 * o00 + R11 * o10 + R12 * o20
    b11 = R10 * o01 + R11 * o11 + R12 * o21
    b12 = R10 * o02 + R11 * o12 + R12 * o22
    b20 = R20 * o00 + R21 * o10 + R22 * o20
    b21 = R20 * o01 + R21 * o11 + R22 * o21
    b22 = R20 * o02 + R21 * o12 + R22 * o22
    rx = R00 * o03 + R01 * o13 + R02 * o23 + px
    ry = R10 * o03 + R11 * o13 + R12 * o23 + py
    rz = R20 * o03 + R21 * o13 + R22 * o23 + pz
    if revolute:
        c = math.cos(q)
        s = math.sin(q)
        return ((c * b00 + s * b01, c * b01 - s * b00, b02,
                 c * b10 + s * b11, c * b11 - s * b10, b12,
                 c * b20 + s * b21, c * b21 - s * b20, b22, rx, ry, rz),
                (b02, b12, b22),
                (ry * b22 - rz * b12, rz * b02 - rx * b22, rx * b12 - ry * b02))
    return ((b00, b01, b02, b10, b11, b12, b20, b21, b22,
             rx + q * b02, ry + q * b12, rz + q * b22),
            (0.0, 0.0, 0.0), (b02, b12, b22))


@_shared
def screw_step(a, t, u, ud, V):
    """Add joint screw (a, t) at rate u and acceleration ud to the running link
    motion ``V = (w, v, aw, av)`` (12-tuple: angular velocity, velocity of the body
    point at the world origin, and their rates); d/dt of the screw is
    (w x a, w x t + v x a)."""
    ax, ay, az = a
    tx, ty, tz = t
    wx, wy, wz, vx, vy, vz, awx, awy, awz, avx, avy, avz = V
    wx += ax * u
    wy += ay * u
    wz += az * u
    vx += tx * u
    vy += ty * u
    vz += tz * u
    return (wx, wy, wz, vx, vy, vz,
            awx + ax * ud + (wy * az - wz * ay) * u,
            awy + ay * ud + (wz * ax - wx * az) * u,
            awz + az * ud + (wx * ay - wy * ax) * u,
            avx + tx * ud + (wy * tz - wz * ty + vy * az - vz * ay) * u,
            avy + ty * ud + (wz * tx - wx * tz + vz * ax - vx * az) * u,
            avz + tz * ud + (wx * ty - wy * tx + vx * ay - vy * ax) * u)


@_shared
def link_wrench(m, com, I, T, V):
    """d'Alembert wrench (force, moment about the world origin) of one link of mass
    ``m``, centroid ``com`` (3-tuple) and inertia ``I`` (6-tuple: xx, xy, xz, yy, yz,
    zz about the centroid) in link axes, placed at ``T`` (12-tuple, as in
    :func:`frame_step`) and moving with the world screw motion ``V`` (as in
    :func:`screw_step`)."""
    R00, R01, R02, R10, R11, R12, R20, R21, R22, px, py, pz = T
    wx, wy, wz, vx, vy, vz, awx, awy, awz, avx, avy, avz = V
    I00, I01, I02, I11, I12, I22 = I
    c0, c1, c2 = com
    cx = R00 * c0 + R01 * c1 + R02 * c2 + px
    cy = R10 * c0 + R11 * c1 + R12 * c2 + py
    cz = R20 * c0 + R21 * c1 + R22 * c2 + pz
    ux = vx + wy * cz - wz * cy                  # centroid velocity
    uy = vy + wz * cx - wx * cz
    uz = vz + wx * cy - wy * cx
    Fx = m * (avx + awy * cz - awz * cy + wy * uz - wz * uy)
    Fy = m * (avy + awz * cx - awx * cz + wz * ux - wx * uz)
    Fz = m * (avz + awx * cy - awy * cx + wx * uy - wy * ux)
    # Euler's equation in link axes
    wlx = R00 * wx + R10 * wy + R20 * wz
    wly = R01 * wx + R11 * wy + R21 * wz
    wlz = R02 * wx + R12 * wy + R22 * wz
    alx = R00 * awx + R10 * awy + R20 * awz
    aly = R01 * awx + R11 * awy + R21 * awz
    alz = R02 * awx + R12 * awy + R22 * awz
    hx = I00 * wlx + I01 * wly + I02 * wlz
    hy = I01 * wlx + I11 * wly + I12 * wlz
    hz = I02 * wlx + I12 * wly + I22 * wlz
    nx = I00 * alx + I01 * aly + I02 * alz + wly * hz - wlz * hy
    ny = I01 * alx + I11 * aly + I12 * alz + wlz * hx - wlx * hz
    nz = I02 * alx + I12 * aly + I22 * alz + wlx * hy - wly * hx
    return (Fx, Fy, Fz,
            cy * Fz - cz * Fy + R00 * nx + R01 * ny + R02 * nz,
            cz * Fx - cx * Fz + R10 * nx + R11 * ny + R12 * nz,
            cx * Fy - cy * Fx + R20 * nx + R21 * ny + R22 * nz)


@_shared
def centroid(com, T):
    """World position (3-tuple, m) of a link's centroid ``com`` (link axes) at ``T``."""
    R00, R01, R02, R10, R11, R12, R20, R21, R22, px, py, pz = T
    c0, c1, c2 = com
    return (R00 * c0 + R01 * c1 + R02 * c2 + px, R10 * c0 + R11 * c1 + R12 * c2 + py,
            R20 * c0 + R21 * c1 + R22 * c2 + pz)


@_shared
def gravity_step(m, c, a, t, g, S):
    """Add a link (mass ``m``, world centroid ``c``) to the running mass and first
    moment ``S = (S0, S1x, S1y, S1z)`` of the links after it and return ``(S', T)``,
    T the gravity load of the link's joint (screw ``a``, ``t``) in the field ``g``:
    +dV/dq = -(a . (S1 x g) + S0 t . g)."""
    S0, S1x, S1y, S1z = S
    S0 += m
    S1x += m * c[0]
    S1y += m * c[1]
    S1z += m * c[2]
    gx, gy, gz = g
    return ((S0, S1x, S1y, S1z),
            -(a[0] * (S1y * gz - S1z * gy) + a[1] * (S1z * gx - S1x * gz)
              + a[2] * (S1x * gy - S1y * gx) + S0 * (t[0] * gx + t[1] * gy + t[2] * gz)))


@_shared
def link_world(com, I, T):
    """Centroid (3-tuple, m) and inertia about it in world axes (6-tuple: xx, xy, xz,
    yy, yz, zz; R I R^T) of a link with ``com`` and ``I`` given in link axes, placed
    at ``T`` (12-tuple, as in :func:`frame_step`)."""
    R00, R01, R02, R10, R11, R12, R20, R21, R22, px, py, pz = T
    I00, I01, I02, I11, I12, I22 = I
    # rows of R I, then (R I) R^T
    a00 = R00 * I00 + R01 * I01 + R02 * I02
    a01 = R00 * I01 + R01 * I11 + R02 * I12
    a02 = R00 * I02 + R01 * I12 + R02 * I22
    a10 = R10 * I00 + R11 * I01 + R12 * I02
    a11 = R10 * I01 + R11 * I11 + R12 * I12
    a12 = R10 * I02 + R11 * I12 + R12 * I22
    a20 = R20 * I00 + R21 * I01 + R22 * I02
    a21 = R20 * I01 + R21 * I11 + R22 * I12
    a22 = R20 * I02 + R21 * I12 + R22 * I22
    return (centroid(com, T),
            (a00 * R00 + a01 * R01 + a02 * R02, a00 * R10 + a01 * R11 + a02 * R12,
             a00 * R20 + a01 * R21 + a02 * R22, a10 * R10 + a11 * R11 + a12 * R12,
             a10 * R20 + a11 * R21 + a12 * R22, a20 * R20 + a21 * R21 + a22 * R22))


@_shared
def composite_step(m, c, Iw, a, t, S):
    """Add a link (mass ``m``, world centroid ``c``, world inertia ``Iw`` about it,
    as :func:`link_world` gives them) to the running composite ``S`` of the links
    after it -- (mass, first moment (3), rotational inertia about the world origin
    (6: xx, xy, xz, yy, yz, zz)) -- and return ``(S', (f, n))``: the new composite
    and the composite momentum (force, moment about the origin) of a unit rate of
    the link's joint (screw ``a``, ``t``): f = S0 t - S1 x a, n = J a + S1 x t.
    I*[k, j] = a_k . n_j + t_k . f_j for k <= j."""
    cx, cy, cz = c
    S0, S1x, S1y, S1z, J00, J01, J02, J11, J12, J22 = S
    cc = cx * cx + cy * cy + cz * cz
    J00 += Iw[0] + m * (cc - cx * cx)
    J01 += Iw[1] - m * cx * cy
    J02 += Iw[2] - m * cx * cz
    J11 += Iw[3] + m * (cc - cy * cy)
    J12 += Iw[4] - m * cy * cz
    J22 += Iw[5] + m * (cc - cz * cz)
    S0 += m
    S1x += m * cx
    S1y += m * cy
    S1z += m * cz
    ax, ay, az = a
    tx, ty, tz = t
    return ((S0, S1x, S1y, S1z, J00, J01, J02, J11, J12, J22),
            (S0 * tx - (S1y * az - S1z * ay), S0 * ty - (S1z * ax - S1x * az),
             S0 * tz - (S1x * ay - S1y * ax),
             J00 * ax + J01 * ay + J02 * az + S1y * tz - S1z * ty,
             J01 * ax + J11 * ay + J12 * az + S1z * tx - S1x * tz,
             J02 * ax + J12 * ay + J22 * az + S1x * ty - S1y * tx))


# --------------------------------------------------------------------------
# one configuration
# --------------------------------------------------------------------------
@_inline
def _base_tuple(base):
    return (base[0, 0], base[0, 1], base[0, 2], base[1, 0], base[1, 1], base[1, 2],
            base[2, 0], base[2, 1], base[2, 2], base[0, 3], base[1, 3], base[2, 3])


@_jit
def _frames(base, isR, O, q, A, t, R, p):
    """Joint screws (A rotation part, zero for P; t moment part) and link frames."""
    T = _base_tuple(base)
    for j in range(q.shape[0]):
        Oj = O[j]
        T, a, tj = frame_step(T, (Oj[0, 0], Oj[0, 1], Oj[0, 2], Oj[0, 3], Oj[1, 0], Oj[1, 1],
                                  Oj[1, 2], Oj[1, 3], Oj[2, 0], Oj[2, 1], Oj[2, 2], Oj[2, 3]),
                              isR[j], q[j])
        R[j, 0, 0], R[j, 0, 1], R[j, 0, 2] = T[0], T[1], T[2]
        R[j, 1, 0], R[j, 1, 1], R[j, 1, 2] = T[3], T[4], T[5]
        R[j, 2, 0], R[j, 2, 1], R[j, 2, 2] = T[6], T[7], T[8]
        p[j, 0], p[j, 1], p[j, 2] = T[9], T[10], T[11]
        A[j, 0], A[j, 1], A[j, 2] = a
        t[j, 0], t[j, 1], t[j, 2] = tj


@_inline
def _frame_tuple(R, p):
    """A link frame from its rotation R (3x3, any layout) and origin p as a 12-tuple."""
    return (R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2],
            R[2, 0], R[2, 1], R[2, 2], p[0], p[1], p[2])


@_inline
def _inertia_tuple(I):
    return (I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2])


@_jit
def _link_world(R, p, com, Iloc, c, Iw):
    """Centroids c (M, 3) and world inertias Iw (M, 3, 3) of the links."""
    for j in range(R.shape[0]):
        cj, Ij = link_world((com[j, 0], com[j, 1], com[j, 2]), _inertia_tuple(Iloc[j]),
                            _frame_tuple(R[j], p[j]))
        c[j, 0], c[j, 1], c[j, 2] = cj
        Iw[j, 0, 0], Iw[j, 0, 1], Iw[j, 0, 2] = Ij[0], Ij[1], Ij[2]
        Iw[j, 1, 0], Iw[j, 1, 1], Iw[j, 1, 2] = Ij[1], Ij[3], Ij[4]
        Iw[j, 2, 0], Iw[j, 2, 1], Iw[j, 2, 2] = Ij[2], Ij[4], Ij[5]


@_jit
def _frame_buffers(M):
    """Work arrays of ``_frames``: A, t (M, 3), R (M, 3, 3), p (M, 3)."""
    return np.empty((M, 3)), np.empty((M, 3)), np.empty((M, 3, 3)), np.empty((M, 3))


@_jit
def _rnea_one(isR, mass, com, Iloc, grav, A, t, R, p, qd, qdd, use_gravity, W, out):
    """Joint loads of one configuration (world-frame screw recursion)."""
    M = qd.shape[0]
    g = (-grav[0], -grav[1], -grav[2]) if use_gravity else (0.0, 0.0, 0.0)
    V = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, g[0], g[1], g[2])
    for j in range(M):
        V = screw_step((A[j, 0], A[j, 1], A[j, 2]), (t[j, 0], t[j, 1], t[j, 2]),
                       qd[j], qdd[j], V)
        W[j, 0], W[j, 1], W[j, 2], W[j, 3], W[j, 4], W[j, 5] = link_wrench(
            mass[j], (com[j, 0], com[j, 1], com[j, 2]), _inertia_tuple(Iloc[j]),
            _frame_tuple(R[j], p[j]), V)
    fx = fy = fz = nx = ny = nz = 0.0
    for j in range(M - 1, -1, -1):
        fx += W[j, 0]
        fy += W[j, 1]
        fz += W[j, 2]
        nx += W[j, 3]
        ny += W[j, 4]
        nz += W[j, 5]
        out[j] = (A[j, 0] * nx + A[j, 1] * ny + A[j, 2] * nz
                  + t[j, 0] * fx + t[j, 1] * fy + t[j, 2] * fz)


@_jit
def _gravity_one(mass, com, grav, A, t, R, p, out):
    """+dV/dq of one configuration by suffix sums of mass and first moment."""
    g = (grav[0], grav[1], grav[2])
    S = (0.0, 0.0, 0.0, 0.0)
    for j in range(mass.shape[0] - 1, -1, -1):
        S, out[j] = gravity_step(mass[j], centroid((com[j, 0], com[j, 1], com[j, 2]),
                                                   _frame_tuple(R[j], p[j])),
                                 (A[j, 0], A[j, 1], A[j, 2]), (t[j, 0], t[j, 1], t[j, 2]), g, S)


@_jit
def _forward_one(base, isR, O, mass, com, Iloc, grav, q, qd, tau, out, work):
    """q'' = I*^-1 (tau - bias) of one configuration; False if I* fails the rule.
    ``work``: the buffers of :func:`_forward_buffers`."""
    A, t, R, p, c, Iw, W, cols, I, L, bias, zero = work
    M = q.shape[0]
    _frames(base, isR, O, q, A, t, R, p)
    _rnea_one(isR, mass, com, Iloc, grav, A, t, R, p, qd, zero, True, W, bias)
    _link_world(R, p, com, Iloc, c, Iw)
    _inertia_one(mass, c, Iw, A, t, cols, I)
    for j in range(M):
        bias[j] = tau[j] - bias[j]
    return cholesky_solve(I, bias, L, out)


@_jit
def _forward_buffers(M):
    A, t, R, p = _frame_buffers(M)
    return (A, t, R, p, np.empty((M, 3)), np.empty((M, 3, 3)), np.empty((M, 6)),
            np.empty((M, 6)), np.empty((M, M)), np.empty((M, M)), np.empty(M), np.zeros(M))


# --------------------------------------------------------------------------
# batched entry points
# --------------------------------------------------------------------------
@_jit
def _rnea(base, isR, O, mass, com, Iloc, grav, q, qd, qdd, use_gravity, out):
    N, M = q.shape
    A, t, R, p = _frame_buffers(M)
    W = np.empty((M, 6))
    for n in range(N):
        _frames(base, isR, O, q[n], A, t, R, p)
        _rnea_one(isR, mass, com, Iloc, grav, A, t, R, p, qd[n], qdd[n], use_gravity, W, out[n])


@_jit
def _gravity(base, isR, O, mass, com, grav, q, out):
    N, M = q.shape
    A, t, R, p = _frame_buffers(M)
    for n in range(N):
        _frames(base, isR, O, q[n], A, t, R, p)
        _gravity_one(mass, com, grav, A, t, R, p, out[n])


@_jit
def _inertia(base, isR, O, mass, com, Iloc, q, out):
    N, M = q.shape
    A, t, R, p = _frame_buffers(M)
    c = np.empty((M, 3))
    Iw = np.empty((M, 3, 3))
    cols = np.empty((M, 6))
    for n in range(N):
        _frames(base, isR, O, q[n], A, t, R, p)
        _link_world(R, p, com, Iloc, c, Iw)
        _inertia_one(mass, c, Iw, A, t, cols, out[n])


@_jit
def _inertia_one(mass, c, Iw, A, t, cols, out):
    """I* of one configuration from composite inertias about the world origin."""
    M = mass.shape[0]
    S = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for j in range(M - 1, -1, -1):
        S, col = composite_step(mass[j], (c[j, 0], c[j, 1], c[j, 2]),
                                (Iw[j, 0, 0], Iw[j, 0, 1], Iw[j, 0, 2], Iw[j, 1, 1], Iw[j, 1, 2],
                                 Iw[j, 2, 2]),
                                (A[j, 0], A[j, 1], A[j, 2]), (t[j, 0], t[j, 1], t[j, 2]), S)
        for i in range(6):
            cols[j, i] = col[i]
    for n in range(M):
        for k in range(n + 1):
            x = (A[k, 0] * cols[n, 3] + A[k, 1] * cols[n, 4] + A[k, 2] * cols[n, 5]
                 + t[k, 0] * cols[n, 0] + t[k, 1] * cols[n, 1] + t[k, 2] * cols[n, 2])
            out[k, n] = x
            out[n, k] = x


@_jit
def _power_one(mass, c, Iw, A, t, S0, S1, S2, J, Z, JA, C, out):
    """P* of one configuration (eq. 2-197), the sums of ``kic.dynamics._power``.

    Z[k, n] = sum_{j >= max(k,n)} m_j G_c[k] x G_c[n] from the composite mass
    moments S0, S1, S2; translational part A_min(a,b) . Z[max(a,b), n];
    rotational parts [a<b] (A_a x A_b) . J_max(n,b) A_n and
    (A_n x A_b) . J_max(n,a,b) A_a, with J_K the suffix sum of world inertias.
    """
    M = mass.shape[0]
    s0 = 0.0
    for j in range(M - 1, -1, -1):
        s0 += mass[j]
        S0[j] = s0
        m = mass[j]
        for a in range(3):
            S1[j, a] = m * c[j, a] + (S1[j + 1, a] if j + 1 < M else 0.0)
            for b in range(3):
                S2[j, a, b] = m * c[j, a] * c[j, b] + (S2[j + 1, a, b] if j + 1 < M else 0.0)
                J[j, a, b] = Iw[j, a, b] + (J[j + 1, a, b] if j + 1 < M else 0.0)
    for x in range(M):
        for y in range(M):
            C[x, y, 0] = A[x, 1] * A[y, 2] - A[x, 2] * A[y, 1]
            C[x, y, 1] = A[x, 2] * A[y, 0] - A[x, 0] * A[y, 2]
            C[x, y, 2] = A[x, 0] * A[y, 1] - A[x, 1] * A[y, 0]
    for K in range(M):
        for x in range(K + 1):
            for i in range(3):
                JA[K, x, i] = J[K, i, 0] * A[x, 0] + J[K, i, 1] * A[x, 1] + J[K, i, 2] * A[x, 2]
    for k in range(M):
        for n in range(M):
            K = max(k, n)
            s1x, s1y, s1z = S1[K, 0], S1[K, 1], S1[K, 2]
            akx, aky, akz = A[k, 0], A[k, 1], A[k, 2]
            anx, any_, anz = A[n, 0], A[n, 1], A[n, 2]
            tkx, tky, tkz = t[k, 0], t[k, 1], t[k, 2]
            tnx, tny, tnz = t[n, 0], t[n, 1], t[n, 2]
            ak_tn = akx * tnx + aky * tny + akz * tnz
            s1_tn = s1x * tnx + s1y * tny + s1z * tnz
            tk_s1 = tkx * s1x + tky * s1y + tkz * s1z
            tk_an = tkx * anx + tky * any_ + tkz * anz
            ckn0, ckn1, ckn2 = C[k, n, 0], C[k, n, 1], C[k, n, 2]
            s0 = S0[K]
            Z[k, n, 0] = (S2[K, 0, 0] * ckn0 + S2[K, 0, 1] * ckn1 + S2[K, 0, 2] * ckn2
                          + s1x * ak_tn - akx * s1_tn + anx * tk_s1 - s1x * tk_an
                          + s0 * (tky * tnz - tkz * tny))
            Z[k, n, 1] = (S2[K, 1, 0] * ckn0 + S2[K, 1, 1] * ckn1 + S2[K, 1, 2] * ckn2
                          + s1y * ak_tn - aky * s1_tn + any_ * tk_s1 - s1y * tk_an
                          + s0 * (tkz * tnx - tkx * tnz))
            Z[k, n, 2] = (S2[K, 2, 0] * ckn0 + S2[K, 2, 1] * ckn1 + S2[K, 2, 2] * ckn2
                          + s1z * ak_tn - akz * s1_tn + anz * tk_s1 - s1z * tk_an
                          + s0 * (tkx * tny - tky * tnx))
    for n in range(M):
        for a in range(M):
            for b in range(M):
                lo = min(a, b)
                hi = max(a, b)
                x = A[lo, 0] * Z[hi, n, 0] + A[lo, 1] * Z[hi, n, 1] + A[lo, 2] * Z[hi, n, 2]
                if a < b:
                    K = max(n, b)
                    x += C[a, b, 0] * JA[K, n, 0] + C[a, b, 1] * JA[K, n, 1] + C[a, b, 2] * JA[K, n, 2]
                K = max(n, hi)
                x += C[n, b, 0] * JA[K, a, 0] + C[n, b, 1] * JA[K, a, 1] + C[n, b, 2] * JA[K, a, 2]
                out[n, a, b] = x


@_jit
def _inertia_power(base, isR, O, mass, com, Iloc, q, with_inertia, I_out, P_out):
    N, M = q.shape
    A, t, R, p = _frame_buffers(M)
    c = np.empty((M, 3))
    Iw = np.empty((M, 3, 3))
    cols = np.empty((M, 6))
    S0 = np.empty(M)
    S1 = np.empty((M, 3))
    S2 = np.empty((M, 3, 3))
    J = np.empty((M, 3, 3))
    Z = np.empty((M, M, 3))
    JA = np.empty((M, M, 3))
    C = np.empty((M, M, 3))
    for n in range(N):
        _frames(base, isR, O, q[n], A, t, R, p)
        _link_world(R, p, com, Iloc, c, Iw)
        if with_inertia:
            _inertia_one(mass, c, Iw, A, t, cols, I_out[n])
        _power_one(mass, c, Iw, A, t, S0, S1, S2, J, Z, JA, C, P_out[n])




@_jit
def _forward(base, isR, O, mass, com, Iloc, grav, q, qd, tau, out, ok):
    work = _forward_buffers(q.shape[1])
    for n in range(q.shape[0]):
        ok[n] = _forward_one(base, isR, O, mass, com, Iloc, grav, q[n], qd[n], tau[n], out[n],
                             work)


# one configuration, 1-D inputs checked here (shape, finiteness): False sends the
# caller to its validating path, which names the argument at fault
@_inline
def _finite(M, x):
    if x.shape[0] != M:
        return False
    for j in range(M):
        if not np.isfinite(x[j]):
            return False
    return True


def pack(base, isR, O, mass, com, Iloc, grav) -> np.ndarray:
    """A chain's constants in one float64 vector (one argument to pass instead of
    seven: each array argument costs the call some 0.15 us): base (3, 4), origins
    (M, 3, 4), masses (M), centroids (M, 3), inertias (M, 3, 3), gravity (3), and
    1.0 for a revolute joint (M), in this order; :func:`_unpack` reads it."""
    return np.concatenate([np.ravel(x).astype(float) for x in
                           (base, O, mass, com, Iloc, grav, isR)])


@_inline
def _unpack(P):
    """The views (base, isR, O, mass, com, Iloc, grav) of a :func:`pack` vector."""
    M = (P.shape[0] - 15) // 26
    k = 12 + 12 * M
    base = P[:12].reshape((3, 4))
    O = P[12:k].reshape((M, 3, 4))
    mass = P[k:k + M]
    com = P[k + M:k + 4 * M].reshape((M, 3))
    Iloc = P[k + 4 * M:k + 13 * M].reshape((M, 3, 3))
    grav = P[k + 13 * M:k + 13 * M + 3]
    isR = P[k + 13 * M + 3:k + 14 * M + 3] > 0.5
    return base, isR, O, mass, com, Iloc, grav


def _rnea1(P, q, qd, qdd, out):
    base, isR, O, mass, com, Iloc, grav = _unpack(P)
    M = mass.shape[0]
    if not (_finite(M, q) and _finite(M, qd) and _finite(M, qdd)) or out.shape[0] != M:
        return False
    A, t, R, p = _frame_buffers(M)
    _frames(base, isR, O, q, A, t, R, p)
    _rnea_one(isR, mass, com, Iloc, grav, A, t, R, p, qd, qdd, True, np.empty((M, 6)), out)
    return True


def _gravity1(P, q, out):
    base, isR, O, mass, com, Iloc, grav = _unpack(P)
    M = mass.shape[0]
    if not _finite(M, q) or out.shape[0] != M:
        return False
    A, t, R, p = _frame_buffers(M)
    _frames(base, isR, O, q, A, t, R, p)
    _gravity_one(mass, com, grav, A, t, R, p, out)
    return True


def _inertia1(P, q, out):
    base, isR, O, mass, com, Iloc, grav = _unpack(P)
    M = mass.shape[0]
    if not _finite(M, q) or out.shape[0] != M or out.shape[1] != M:
        return False
    A, t, R, p = _frame_buffers(M)
    c = np.empty((M, 3))
    Iw = np.empty((M, 3, 3))
    _frames(base, isR, O, q, A, t, R, p)
    _link_world(R, p, com, Iloc, c, Iw)
    _inertia_one(mass, c, Iw, A, t, np.empty((M, 6)), out)
    return True


def _forward1(P, q, qd, tau, out):
    base, isR, O, mass, com, Iloc, grav = _unpack(P)
    M = mass.shape[0]
    if not (_finite(M, q) and _finite(M, qd) and _finite(M, tau)) or out.shape[0] != M:
        return False
    return _forward_one(base, isR, O, mass, com, Iloc, grav, q, qd, tau, out,
                        _forward_buffers(M))


@_jit
def _pose(base, isR, O, qT, Fc, sR, sv):
    """Link frames by columns, batch last (the layout of ``kinematics.Pose``):
    Fc[j, k, i, n] = T_j[i, k]; sR, sv (3, M, N) the joint screws.

    Joint by joint over the whole batch, so that every array is walked in
    order; rows a power-of-two apart would alias in the cache (hence
    ``_array.BLOCK`` = 1000)."""
    M, N = qT.shape
    for j in range(M):
        Oj = O[j]
        Ot = (Oj[0, 0], Oj[0, 1], Oj[0, 2], Oj[0, 3], Oj[1, 0], Oj[1, 1],
              Oj[1, 2], Oj[1, 3], Oj[2, 0], Oj[2, 1], Oj[2, 2], Oj[2, 3])
        for n in range(N):
            if j == 0:
                T = _base_tuple(base)
            else:
                F = Fc[j - 1]
                T = (F[0, 0, n], F[1, 0, n], F[2, 0, n], F[0, 1, n], F[1, 1, n], F[2, 1, n],
                     F[0, 2, n], F[1, 2, n], F[2, 2, n], F[3, 0, n], F[3, 1, n], F[3, 2, n])
            T, a, t = frame_step(T, Ot, isR[j], qT[j, n])
            for i in range(3):
                for k in range(3):
                    Fc[j, k, i, n] = T[3 * i + k]
                Fc[j, 3, i, n] = T[9 + i]
                sR[i, j, n] = a[i]
                sv[i, j, n] = t[i]


@_jit
def _motion(sR, sv, qd, qdd, use_qdd, grav, use_grav, w, v, aw, av):
    """World screw motion of the links (``kinematics.link_motion``), joint by joint
    over the batch: running sums of the screws times the rates."""
    _, M, N = sR.shape
    for j in range(M):
        for n in range(N):
            if j:
                V = (w[0, j - 1, n], w[1, j - 1, n], w[2, j - 1, n],
                     v[0, j - 1, n], v[1, j - 1, n], v[2, j - 1, n],
                     aw[0, j - 1, n], aw[1, j - 1, n], aw[2, j - 1, n],
                     av[0, j - 1, n], av[1, j - 1, n], av[2, j - 1, n])
            elif use_grav:               # a uniform field: the base accelerates by -g
                V = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -grav[0], -grav[1], -grav[2])
            else:
                V = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            V = screw_step((sR[0, j, n], sR[1, j, n], sR[2, j, n]),
                           (sv[0, j, n], sv[1, j, n], sv[2, j, n]),
                           qd[j, n], qdd[j, n] if use_qdd else 0.0, V)
            for i in range(3):
                w[i, j, n] = V[i]
                v[i, j, n] = V[3 + i]
                aw[i, j, n] = V[6 + i]
                av[i, j, n] = V[9 + i]


@_jit
def _loads_from_motion(Fc, sR, sv, w, v, aw, av, qdd, grav, use_grav, mass, com, Iloc,
                       acc, W, tau):
    """Joint loads (M, N) from the velocity-product motion (w, v, aw, av) plus the
    q'' terms (``dynamics._inverse_dynamics`` with ``motion``), joint by joint."""
    _, M, N = sR.shape
    for n in range(N):
        for i in range(6):
            acc[i, n] = 0.0
        if use_grav:
            acc[3, n], acc[4, n], acc[5, n] = -grav[0], -grav[1], -grav[2]
    for j in range(M):
        cj = (com[j, 0], com[j, 1], com[j, 2])
        Ij = _inertia_tuple(Iloc[j])
        F = Fc[j]
        for n in range(N):
            ud = qdd[j, n]
            for i in range(3):
                acc[i, n] += sR[i, j, n] * ud
                acc[3 + i, n] += sv[i, j, n] * ud
            T = (F[0, 0, n], F[1, 0, n], F[2, 0, n], F[0, 1, n], F[1, 1, n], F[2, 1, n],
                 F[0, 2, n], F[1, 2, n], F[2, 2, n], F[3, 0, n], F[3, 1, n], F[3, 2, n])
            V = (w[0, j, n], w[1, j, n], w[2, j, n], v[0, j, n], v[1, j, n], v[2, j, n],
                 aw[0, j, n] + acc[0, n], aw[1, j, n] + acc[1, n], aw[2, j, n] + acc[2, n],
                 av[0, j, n] + acc[3, n], av[1, j, n] + acc[4, n], av[2, j, n] + acc[5, n])
            W[0, j, n], W[1, j, n], W[2, j, n], W[3, j, n], W[4, j, n], W[5, j, n] = \
                link_wrench(mass[j], cj, Ij, T, V)
    for j in range(M - 1, -1, -1):
        for n in range(N):
            if j < M - 1:
                for i in range(6):
                    W[i, j, n] += W[i, j + 1, n]
            tau[j, n] = (sR[0, j, n] * W[3, j, n] + sR[1, j, n] * W[4, j, n]
                         + sR[2, j, n] * W[5, j, n] + sv[0, j, n] * W[0, j, n]
                         + sv[1, j, n] * W[1, j, n] + sv[2, j, n] * W[2, j, n])



# --------------------------------------------------------------------------
# array primitives
# --------------------------------------------------------------------------
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


@_jit
def _inverse(A, out, cond):
    """Inverses of (K, m, m) matrices by Gauss-Jordan elimination with partial
    pivoting, and the 1-norm condition numbers ||A||_1 ||A^-1||_1; a matrix with
    an exactly zero pivot gives NaN and an infinite condition (callers check)."""
    K, m, _ = A.shape
    W = np.empty((m, 2 * m))
    for k in range(K):
        norm = 0.0
        for j in range(m):
            col = 0.0
            for i in range(m):
                col += abs(A[k, i, j])
            norm = max(norm, col)
        for i in range(m):
            for j in range(m):
                W[i, j] = A[k, i, j]
                W[i, m + j] = 1.0 if i == j else 0.0
        singular = False
        for c in range(m):
            piv = c
            best = abs(W[c, c])
            for i in range(c + 1, m):
                v = abs(W[i, c])
                if v > best:
                    best = v
                    piv = i
            if best == 0.0 or not np.isfinite(best):
                singular = True
                break
            if piv != c:
                for j in range(2 * m):
                    W[c, j], W[piv, j] = W[piv, j], W[c, j]
            inv = 1.0 / W[c, c]
            for j in range(2 * m):
                W[c, j] *= inv
            for i in range(m):
                if i != c:
                    f = W[i, c]
                    if f != 0.0:
                        for j in range(c, 2 * m):
                            W[i, j] -= f * W[c, j]
        norm_inv = 0.0
        for j in range(m):
            col = 0.0
            for i in range(m):
                v = np.nan if singular else W[i, m + j]
                out[k, i, j] = v
                col += abs(v)
            norm_inv = max(norm_inv, col)
        cond[k] = np.inf if singular else norm * norm_inv


def small_inverse(A: np.ndarray) -> np.ndarray:
    """Inverses of stacked (..., m, m) float matrices; NaN where singular."""
    return inverse_with_condition(A)[0]



def cross(a: np.ndarray, b: np.ndarray, axis: int = 0) -> np.ndarray:
    """Cross product along ``axis`` (0 or 1), compiled for same-shaped float64
    arrays of 2 or 3 dimensions, numpy's otherwise (broadcasting)."""
    out = np.empty(a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape))
    if cross_into(a, b, out, axis):
        return out
    from ._array import numpy_cross
    return numpy_cross(a, b, axis)


def inverse_with_condition(A: np.ndarray):
    """(inverses (..., m, m), 1-norm condition numbers (...)) in one pass."""
    load()
    A3 = _rows(A).reshape((-1,) + A.shape[-2:])
    out = np.empty(A3.shape)
    cond = np.empty(A3.shape[0])
    _inverse(A3, out, cond)
    return out.reshape(A.shape), cond.reshape(A.shape[:-2])



# --------------------------------------------------------------------------
# Python wrappers: the kernel set (kic.backend.kernels), numpy's twins in
# kic.dynamics, kic.kinematics and kic._array have the same names and signatures
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
    _pose(d.base, d.isR, d.O, qT, Fc, sR, sv)
    return Fc, sR, sv


def link_motion(sR, sv, qdT, qddT=None, gravity=None):
    """(w, v, aw, av), each (3, M, N), as ``kinematics.link_motion``."""
    qdT = _rows(qdT)
    out = [np.empty(sR.shape) for _ in range(4)]
    _motion(_rows(sR), _rows(sv), qdT, qdT if qddT is None else _rows(qddT), qddT is not None,
            _ZERO3 if gravity is None else _rows(gravity), gravity is not None, *out)
    return tuple(out)


def loads_from_motion(d, Fc, sR, sv, motion, qddT, gravity: bool) -> np.ndarray:
    """Joint loads (M, N) as ``dynamics._inverse_dynamics(..., motion=motion)``."""
    M, N = qddT.shape
    tau = np.empty((M, N))
    w, v, aw, av = (_rows(x) for x in motion)
    _loads_from_motion(_rows(Fc), _rows(sR), _rows(sv), w, v, aw, av, _rows(qddT), d.gravity,
                       gravity, d.mass, d.com, d.inertia, np.empty((6, N)), np.empty((6, M, N)),
                       tau)
    return tau


_ZERO3 = np.zeros(3)


def inverse_dynamics(d, q, qd, qdd, gravity: bool = True) -> np.ndarray:
    """Joint loads (N, M) of configurations q, qd, qdd (N, M)."""
    q = _rows(q)
    out = np.empty(q.shape)
    _rnea(d.base, d.isR, d.O, d.mass, d.com, d.inertia, d.gravity, q, _rows(qd), _rows(qdd),
          gravity, out)
    return out


def gravity_load(d, q) -> np.ndarray:
    """+dV/dq (N, M) of configurations q (N, M)."""
    q = _rows(q)
    out = np.empty(q.shape)
    _gravity(d.base, d.isR, d.O, d.mass, d.com, d.gravity, q, out)
    return out


def inertia(d, q) -> np.ndarray:
    """I* (N, M, M)."""
    q = _rows(q)
    N, M = q.shape
    out = np.empty((N, M, M))
    _inertia(d.base, d.isR, d.O, d.mass, d.com, d.inertia, q, out)
    return out


def inertia_power(d, q, with_inertia: bool = True):
    """(I* (N, M, M) or None, P* (N, M, M, M)) in one pass over the batch."""
    q = _rows(q)
    N, M = q.shape
    I = np.empty((N, M, M) if with_inertia else (1, M, M))
    P = np.empty((N, M, M, M))
    _inertia_power(d.base, d.isR, d.O, d.mass, d.com, d.inertia, q, with_inertia, I, P)
    return (I if with_inertia else None), P


def forward_dynamics(d, q, qd, tau):
    """(q'' (N, M), ok (N,)): ok is False where I* fails :func:`spd_pivot_ok`."""
    q = _rows(q)
    out = np.empty(q.shape)
    ok = np.empty(q.shape[0], dtype=np.bool_)
    _forward(d.base, d.isR, d.O, d.mass, d.com, d.inertia, d.gravity, q, _rows(qd), _rows(tau),
             out, ok)
    return out, ok


# One configuration: ``out`` is written and True returned when every input is a
# writeable, contiguous float64 array of shape (M,) with finite values (and I* passes
# the rule, for forward dynamics); False otherwise, with ``out`` undefined.
def inverse_dynamics_one(d, q, qd, qdd, out) -> bool:
    """Joint loads of one configuration into ``out`` (M,)."""
    try:
        return _rnea1(d.packed, q, qd, qdd, out)
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
        return _forward1(d.packed, q, qd, tau, out)
    except TypeError:
        return False


# the uncompiled twins of the shared arithmetic, bound to each other (not to the
# compiled versions that replace them in this module when numba loads)
_plain_ns = dict(globals())
plain = types.SimpleNamespace()
"""The shared helpers (:func:`frame_step`, :func:`screw_step`, :func:`link_wrench`,
:func:`centroid`, :func:`gravity_step`, :func:`link_world`, :func:`composite_step`,
:func:`cholesky_solve`, :func:`spd_pivot_ok`)
as plain Python, for kic._scalar."""
for _name in _SHARED:
    _f = _plain_ns[_name]
    _plain_ns[_name] = types.FunctionType(_f.__code__, _plain_ns, _name, _f.__defaults__)
    setattr(plain, _name, _plain_ns[_name])
del _name, _f
