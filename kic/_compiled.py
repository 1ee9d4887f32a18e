"""Compiled serial-chain kernels (internal; optional, needs numba).

The numpy kernels of :mod:`kic.dynamics` take a batch in some 40-100 array
passes; each pass costs about a nanosecond per element, which bounds them at
about a microsecond per configuration of a 6-joint arm.  Compiled, the same
recursions run one configuration at a time in registers, without those
passes.  These kernels evaluate exactly the sums of :mod:`kic.dynamics`
(world-frame screws, composite inertias, Freeman's P* re-associated into
composite moments) and the tests compare them with the numpy kernels and with
the independent oracle.  They are used when numba is installed (the ``fast``
extra) unless :func:`kic.set_backend` says otherwise.  The building blocks of
the batched numpy kernels that closed models use (link frames, screw motion,
joint loads from a given motion, cross products, small inverses with their
condition numbers) have compiled versions here too, written joint by joint over
the batch (batch-last arrays, walked in order).

Layout: inputs ``q, qd, ...`` are (N, M), C-contiguous float64; outputs are
batch first, (N, M), (N, M, M), (N, M, M, M) (P* load index first).
"""
from __future__ import annotations

import importlib.util

import numpy as np

__all__ = []

available = importlib.util.find_spec("numba") is not None
"""numba is installed (imported, and the kernels compiled, on first use)."""

_JITTED: list[str] = []      # names of the functions compiled by :func:`load`
_INLINED: set[str] = set()   # ... and of those inlined into their callers
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
    # one signature for every memory layout: compiled once, no per-layout variants
    g["_cross4"] = numba.njit("void(f8[:, :, :, :], f8[:, :, :, :], f8[:, :, :, :])",
                              cache=True, nogil=True)(g["_cross4"])
    _loaded = True
    return True


# --------------------------------------------------------------------------
# one configuration (helpers inlined by the compiler)
# --------------------------------------------------------------------------
@_jit
def _frames(base, isR, O, q, A, t, R, p):
    """Joint screws (A rotation part, zero for P; t moment part) and link frames."""
    M = q.shape[0]
    Rp = base[:3, :3]
    pp = base[:3, 3]
    for j in range(M):
        if j:
            Rp = R[j - 1]
            pp = p[j - 1]
        Oj = O[j]
        for i in range(3):
            b0 = Rp[i, 0] * Oj[0, 0] + Rp[i, 1] * Oj[1, 0] + Rp[i, 2] * Oj[2, 0]
            b1 = Rp[i, 0] * Oj[0, 1] + Rp[i, 1] * Oj[1, 1] + Rp[i, 2] * Oj[2, 1]
            b2 = Rp[i, 0] * Oj[0, 2] + Rp[i, 1] * Oj[1, 2] + Rp[i, 2] * Oj[2, 2]
            p[j, i] = Rp[i, 0] * Oj[0, 3] + Rp[i, 1] * Oj[1, 3] + Rp[i, 2] * Oj[2, 3] + pp[i]
            R[j, i, 0] = b0
            R[j, i, 1] = b1
            R[j, i, 2] = b2
        qj = q[j]
        if isR[j]:
            c = np.cos(qj)
            s = np.sin(qj)
            for i in range(3):
                b0 = R[j, i, 0]
                b1 = R[j, i, 1]
                R[j, i, 0] = c * b0 + s * b1
                R[j, i, 1] = c * b1 - s * b0
                A[j, i] = R[j, i, 2]
            # moment of the screw: r x s
            t[j, 0] = p[j, 1] * A[j, 2] - p[j, 2] * A[j, 1]
            t[j, 1] = p[j, 2] * A[j, 0] - p[j, 0] * A[j, 2]
            t[j, 2] = p[j, 0] * A[j, 1] - p[j, 1] * A[j, 0]
        else:
            for i in range(3):
                p[j, i] += qj * R[j, i, 2]
                A[j, i] = 0.0
                t[j, i] = R[j, i, 2]


@_jit
def _centroids(R, p, com, c):
    M = R.shape[0]
    for j in range(M):
        for i in range(3):
            c[j, i] = R[j, i, 0] * com[j, 0] + R[j, i, 1] * com[j, 1] + R[j, i, 2] * com[j, 2] + p[j, i]


@_jit
def _world_inertias(R, Iloc, Iw):
    """R I R^T per link (about the centroid, world axes; I symmetric)."""
    M = R.shape[0]
    for j in range(M):
        I = Iloc[j]
        Rj = R[j]
        for a in range(3):
            # row a of R I
            x0 = Rj[a, 0] * I[0, 0] + Rj[a, 1] * I[1, 0] + Rj[a, 2] * I[2, 0]
            x1 = Rj[a, 0] * I[0, 1] + Rj[a, 1] * I[1, 1] + Rj[a, 2] * I[2, 1]
            x2 = Rj[a, 0] * I[0, 2] + Rj[a, 1] * I[1, 2] + Rj[a, 2] * I[2, 2]
            for b in range(a, 3):
                v = x0 * Rj[b, 0] + x1 * Rj[b, 1] + x2 * Rj[b, 2]
                Iw[j, a, b] = v
                Iw[j, b, a] = v


@_inline
def _link_wrench(m, com, I, R, o, wx, wy, wz, vx, vy, vz, awx, awy, awz, avx, avy, avz):
    """d'Alembert wrench (force, moment about the world origin) of one link with
    rotation R (3x3, any layout), origin o, centroid ``com`` and inertia ``I`` in
    link axes, moving with the world screw motion (w, v) and its rate (aw, av)."""
    cx = R[0, 0] * com[0] + R[0, 1] * com[1] + R[0, 2] * com[2] + o[0]
    cy = R[1, 0] * com[0] + R[1, 1] * com[1] + R[1, 2] * com[2] + o[1]
    cz = R[2, 0] * com[0] + R[2, 1] * com[1] + R[2, 2] * com[2] + o[2]
    ux = vx + wy * cz - wz * cy                  # centroid velocity
    uy = vy + wz * cx - wx * cz
    uz = vz + wx * cy - wy * cx
    Fx = m * (avx + awy * cz - awz * cy + wy * uz - wz * uy)
    Fy = m * (avy + awz * cx - awx * cz + wz * ux - wx * uz)
    Fz = m * (avz + awx * cy - awy * cx + wx * uy - wy * ux)
    # Euler's equation in link axes
    wlx = R[0, 0] * wx + R[1, 0] * wy + R[2, 0] * wz
    wly = R[0, 1] * wx + R[1, 1] * wy + R[2, 1] * wz
    wlz = R[0, 2] * wx + R[1, 2] * wy + R[2, 2] * wz
    alx = R[0, 0] * awx + R[1, 0] * awy + R[2, 0] * awz
    aly = R[0, 1] * awx + R[1, 1] * awy + R[2, 1] * awz
    alz = R[0, 2] * awx + R[1, 2] * awy + R[2, 2] * awz
    hx = I[0, 0] * wlx + I[0, 1] * wly + I[0, 2] * wlz
    hy = I[1, 0] * wlx + I[1, 1] * wly + I[1, 2] * wlz
    hz = I[2, 0] * wlx + I[2, 1] * wly + I[2, 2] * wlz
    nx = I[0, 0] * alx + I[0, 1] * aly + I[0, 2] * alz + wly * hz - wlz * hy
    ny = I[1, 0] * alx + I[1, 1] * aly + I[1, 2] * alz + wlz * hx - wlx * hz
    nz = I[2, 0] * alx + I[2, 1] * aly + I[2, 2] * alz + wlx * hy - wly * hx
    return (Fx, Fy, Fz,
            cy * Fz - cz * Fy + R[0, 0] * nx + R[0, 1] * ny + R[0, 2] * nz,
            cz * Fx - cx * Fz + R[1, 0] * nx + R[1, 1] * ny + R[1, 2] * nz,
            cx * Fy - cy * Fx + R[2, 0] * nx + R[2, 1] * ny + R[2, 2] * nz)


@_jit
def _frame_buffers(M):
    """Work arrays of ``_frames``: A, t (M, 3), R (M, 3, 3), p (M, 3)."""
    return np.empty((M, 3)), np.empty((M, 3)), np.empty((M, 3, 3)), np.empty((M, 3))


@_inline
def _screw_step(ax, ay, az, tx, ty, tz, u, ud, wx, wy, wz, vx, vy, vz,
                awx, awy, awz, avx, avy, avz):
    """Add joint screw (a, t) at rate u and acceleration ud to the running link
    motion (w, v) and its rate (aw, av); d/dt of the screw is (w x a, w x t + v x a)."""
    wx += ax * u
    wy += ay * u
    wz += az * u
    vx += tx * u
    vy += ty * u
    vz += tz * u
    awx += ax * ud + (wy * az - wz * ay) * u
    awy += ay * ud + (wz * ax - wx * az) * u
    awz += az * ud + (wx * ay - wy * ax) * u
    avx += tx * ud + (wy * tz - wz * ty + vy * az - vz * ay) * u
    avy += ty * ud + (wz * tx - wx * tz + vz * ax - vx * az) * u
    avz += tz * ud + (wx * ty - wy * tx + vx * ay - vy * ax) * u
    return wx, wy, wz, vx, vy, vz, awx, awy, awz, avx, avy, avz


@_jit
def _rnea_one(isR, mass, com, Iloc, grav, A, t, R, p, qd, qdd, use_gravity, W, out):
    """Joint loads of one configuration (world-frame screw recursion)."""
    M = qd.shape[0]
    wx = wy = wz = vx = vy = vz = awx = awy = awz = 0.0
    if use_gravity:
        avx = -grav[0]
        avy = -grav[1]
        avz = -grav[2]
    else:
        avx = avy = avz = 0.0
    for j in range(M):
        wx, wy, wz, vx, vy, vz, awx, awy, awz, avx, avy, avz = _screw_step(
            A[j, 0], A[j, 1], A[j, 2], t[j, 0], t[j, 1], t[j, 2], qd[j], qdd[j],
            wx, wy, wz, vx, vy, vz, awx, awy, awz, avx, avy, avz)
        W[j, 0], W[j, 1], W[j, 2], W[j, 3], W[j, 4], W[j, 5] = _link_wrench(
            mass[j], com[j], Iloc[j], R[j], p[j], wx, wy, wz, vx, vy, vz,
            awx, awy, awz, avx, avy, avz)
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
def _inertia_one(mass, c, Iw, A, t, cols, out):
    """I* of one configuration from composite inertias about the world origin."""
    M = mass.shape[0]
    S0 = S1x = S1y = S1z = 0.0
    J00 = J01 = J02 = J11 = J12 = J22 = 0.0
    for j in range(M - 1, -1, -1):
        m = mass[j]
        cx, cy, cz = c[j, 0], c[j, 1], c[j, 2]
        cc = cx * cx + cy * cy + cz * cz
        J00 += Iw[j, 0, 0] + m * (cc - cx * cx)
        J01 += Iw[j, 0, 1] - m * cx * cy
        J02 += Iw[j, 0, 2] - m * cx * cz
        J11 += Iw[j, 1, 1] + m * (cc - cy * cy)
        J12 += Iw[j, 1, 2] - m * cy * cz
        J22 += Iw[j, 2, 2] + m * (cc - cz * cz)
        S0 += m
        S1x += m * cx
        S1y += m * cy
        S1z += m * cz
        ax, ay, az = A[j, 0], A[j, 1], A[j, 2]
        tx, ty, tz = t[j, 0], t[j, 1], t[j, 2]
        # composite momentum of a unit rate of joint j
        cols[j, 0] = S0 * tx - (S1y * az - S1z * ay)
        cols[j, 1] = S0 * ty - (S1z * ax - S1x * az)
        cols[j, 2] = S0 * tz - (S1x * ay - S1y * ax)
        cols[j, 3] = J00 * ax + J01 * ay + J02 * az + S1y * tz - S1z * ty
        cols[j, 4] = J01 * ax + J11 * ay + J12 * az + S1z * tx - S1x * tz
        cols[j, 5] = J02 * ax + J12 * ay + J22 * az + S1x * ty - S1y * tx
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
def _cholesky_solve(Ain, b, L, x):
    """x = A^-1 b for a small SPD A; returns False if A is not positive definite."""
    M = b.shape[0]
    dmax = 0.0
    for i in range(M):
        dmax = max(dmax, Ain[i, i])
    for k in range(M):
        d = Ain[k, k]
        for s in range(k):
            d -= L[k, s] * L[k, s]
        if not d > 1e-16 * dmax:        # the numpy path's 1e-8 on the diagonal of L
            return False
        d = np.sqrt(d)
        L[k, k] = d
        for i in range(k + 1, M):
            v = Ain[i, k]
            for s in range(k):
                v -= L[i, s] * L[k, s]
            L[i, k] = v / d
    for i in range(M):
        v = b[i]
        for s in range(i):
            v -= L[i, s] * x[s]
        x[i] = v / L[i, i]
    for i in range(M - 1, -1, -1):
        v = x[i]
        for s in range(i + 1, M):
            v -= L[s, i] * x[s]
        x[i] = v / L[i, i]
    return True


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
    """+dV/dq = -sum_k (A_k . (S1_k x g) + t_k . S0_k g) by suffix sums."""
    N, M = q.shape
    A, t, R, p = _frame_buffers(M)
    c = np.empty((M, 3))
    gx, gy, gz = grav[0], grav[1], grav[2]
    for n in range(N):
        _frames(base, isR, O, q[n], A, t, R, p)
        _centroids(R, p, com, c)
        S0 = S1x = S1y = S1z = 0.0
        for j in range(M - 1, -1, -1):
            m = mass[j]
            S0 += m
            S1x += m * c[j, 0]
            S1y += m * c[j, 1]
            S1z += m * c[j, 2]
            out[n, j] = -(A[j, 0] * (S1y * gz - S1z * gy) + A[j, 1] * (S1z * gx - S1x * gz)
                          + A[j, 2] * (S1x * gy - S1y * gx)
                          + S0 * (t[j, 0] * gx + t[j, 1] * gy + t[j, 2] * gz))


@_jit
def _inertia(base, isR, O, mass, com, Iloc, q, out):
    N, M = q.shape
    A, t, R, p = _frame_buffers(M)
    c = np.empty((M, 3))
    Iw = np.empty((M, 3, 3))
    cols = np.empty((M, 6))
    for n in range(N):
        _frames(base, isR, O, q[n], A, t, R, p)
        _centroids(R, p, com, c)
        _world_inertias(R, Iloc, Iw)
        _inertia_one(mass, c, Iw, A, t, cols, out[n])


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
        _centroids(R, p, com, c)
        _world_inertias(R, Iloc, Iw)
        if with_inertia:
            _inertia_one(mass, c, Iw, A, t, cols, I_out[n])
        _power_one(mass, c, Iw, A, t, S0, S1, S2, J, Z, JA, C, P_out[n])


@_jit
def _forward(base, isR, O, mass, com, Iloc, grav, q, qd, tau, out, ok):
    N, M = q.shape
    A, t, R, p = _frame_buffers(M)
    c = np.empty((M, 3))
    Iw = np.empty((M, 3, 3))
    W = np.empty((M, 6))
    cols = np.empty((M, 6))
    I = np.empty((M, M))
    L = np.empty((M, M))
    bias = np.empty(M)
    zero = np.zeros(M)
    for n in range(N):
        _frames(base, isR, O, q[n], A, t, R, p)
        _rnea_one(isR, mass, com, Iloc, grav, A, t, R, p, qd[n], zero, True, W, bias)
        _centroids(R, p, com, c)
        _world_inertias(R, Iloc, Iw)
        _inertia_one(mass, c, Iw, A, t, cols, I)
        for j in range(M):
            bias[j] = tau[n, j] - bias[j]
        ok[n] = _cholesky_solve(I, bias, L, out[n])


@_jit
def _pose(base, isR, O, qT, Fc, sR, sv):
    """Link frames by columns, batch last (the layout of ``kinematics._Pose``):
    Fc[j, k, i, n] = T_j[i, k]; sR, sv (3, M, N) the joint screws.

    Joint by joint over the whole batch, so that every array is walked in
    order; rows a power-of-two apart would alias in the cache (hence
    ``_array.BLOCK`` = 1000)."""
    M, N = qT.shape
    for j in range(M):
        Oj = O[j]
        for n in range(N):
            if j == 0:
                r00, r10, r20 = base[0, 0], base[1, 0], base[2, 0]
                r01, r11, r21 = base[0, 1], base[1, 1], base[2, 1]
                r02, r12, r22 = base[0, 2], base[1, 2], base[2, 2]
                px, py, pz = base[0, 3], base[1, 3], base[2, 3]
            else:
                r00, r10, r20 = Fc[j - 1, 0, 0, n], Fc[j - 1, 0, 1, n], Fc[j - 1, 0, 2, n]
                r01, r11, r21 = Fc[j - 1, 1, 0, n], Fc[j - 1, 1, 1, n], Fc[j - 1, 1, 2, n]
                r02, r12, r22 = Fc[j - 1, 2, 0, n], Fc[j - 1, 2, 1, n], Fc[j - 1, 2, 2, n]
                px, py, pz = Fc[j - 1, 3, 0, n], Fc[j - 1, 3, 1, n], Fc[j - 1, 3, 2, n]
            # columns of R_prev @ O_j, and the new origin
            b0x = r00 * Oj[0, 0] + r01 * Oj[1, 0] + r02 * Oj[2, 0]
            b0y = r10 * Oj[0, 0] + r11 * Oj[1, 0] + r12 * Oj[2, 0]
            b0z = r20 * Oj[0, 0] + r21 * Oj[1, 0] + r22 * Oj[2, 0]
            b1x = r00 * Oj[0, 1] + r01 * Oj[1, 1] + r02 * Oj[2, 1]
            b1y = r10 * Oj[0, 1] + r11 * Oj[1, 1] + r12 * Oj[2, 1]
            b1z = r20 * Oj[0, 1] + r21 * Oj[1, 1] + r22 * Oj[2, 1]
            b2x = r00 * Oj[0, 2] + r01 * Oj[1, 2] + r02 * Oj[2, 2]
            b2y = r10 * Oj[0, 2] + r11 * Oj[1, 2] + r12 * Oj[2, 2]
            b2z = r20 * Oj[0, 2] + r21 * Oj[1, 2] + r22 * Oj[2, 2]
            ox = r00 * Oj[0, 3] + r01 * Oj[1, 3] + r02 * Oj[2, 3] + px
            oy = r10 * Oj[0, 3] + r11 * Oj[1, 3] + r12 * Oj[2, 3] + py
            oz = r20 * Oj[0, 3] + r21 * Oj[1, 3] + r22 * Oj[2, 3] + pz
            qj = qT[j, n]
            if isR[j]:
                c = np.cos(qj)
                s = np.sin(qj)
                Fc[j, 0, 0, n] = c * b0x + s * b1x
                Fc[j, 0, 1, n] = c * b0y + s * b1y
                Fc[j, 0, 2, n] = c * b0z + s * b1z
                Fc[j, 1, 0, n] = c * b1x - s * b0x
                Fc[j, 1, 1, n] = c * b1y - s * b0y
                Fc[j, 1, 2, n] = c * b1z - s * b0z
                sR[0, j, n] = b2x
                sR[1, j, n] = b2y
                sR[2, j, n] = b2z
                sv[0, j, n] = oy * b2z - oz * b2y       # r x s
                sv[1, j, n] = oz * b2x - ox * b2z
                sv[2, j, n] = ox * b2y - oy * b2x
            else:
                Fc[j, 0, 0, n] = b0x
                Fc[j, 0, 1, n] = b0y
                Fc[j, 0, 2, n] = b0z
                Fc[j, 1, 0, n] = b1x
                Fc[j, 1, 1, n] = b1y
                Fc[j, 1, 2, n] = b1z
                ox += qj * b2x
                oy += qj * b2y
                oz += qj * b2z
                sR[0, j, n] = 0.0
                sR[1, j, n] = 0.0
                sR[2, j, n] = 0.0
                sv[0, j, n] = b2x
                sv[1, j, n] = b2y
                sv[2, j, n] = b2z
            Fc[j, 2, 0, n] = b2x
            Fc[j, 2, 1, n] = b2y
            Fc[j, 2, 2, n] = b2z
            Fc[j, 3, 0, n] = ox
            Fc[j, 3, 1, n] = oy
            Fc[j, 3, 2, n] = oz


def pose(d: "ChainData", qT: np.ndarray):
    """(Fc (M, 4, 3, N), sR (3, M, N), sv (3, M, N)) of configurations qT (M, N)."""
    load()
    qT = _rows(qT)
    M, N = qT.shape
    Fc = np.empty((M, 4, 3, N))
    sR = np.empty((3, M, N))
    sv = np.empty((3, M, N))
    _pose(d.base, d.isR, d.O, qT, Fc, sR, sv)
    return Fc, sR, sv


@_jit
def _motion(sR, sv, qd, qdd, use_qdd, grav, use_grav, w, v, aw, av):
    """World screw motion of the links (``kinematics.link_motion``), joint by joint
    over the batch: running sums of the screws times the rates."""
    _, M, N = sR.shape
    for j in range(M):
        for n in range(N):
            if j:
                wx, wy, wz = w[0, j - 1, n], w[1, j - 1, n], w[2, j - 1, n]
                vx, vy, vz = v[0, j - 1, n], v[1, j - 1, n], v[2, j - 1, n]
                bx, by, bz = aw[0, j - 1, n], aw[1, j - 1, n], aw[2, j - 1, n]
                cx, cy, cz = av[0, j - 1, n], av[1, j - 1, n], av[2, j - 1, n]
            else:
                wx = wy = wz = vx = vy = vz = bx = by = bz = 0.0
                cx = cy = cz = 0.0
                if use_grav:             # a uniform field: the base accelerates by -g
                    cx, cy, cz = -grav[0], -grav[1], -grav[2]
            wx, wy, wz, vx, vy, vz, bx, by, bz, cx, cy, cz = _screw_step(
                sR[0, j, n], sR[1, j, n], sR[2, j, n], sv[0, j, n], sv[1, j, n], sv[2, j, n],
                qd[j, n], qdd[j, n] if use_qdd else 0.0,
                wx, wy, wz, vx, vy, vz, bx, by, bz, cx, cy, cz)
            w[0, j, n], w[1, j, n], w[2, j, n] = wx, wy, wz
            v[0, j, n], v[1, j, n], v[2, j, n] = vx, vy, vz
            aw[0, j, n], aw[1, j, n], aw[2, j, n] = bx, by, bz
            av[0, j, n], av[1, j, n], av[2, j, n] = cx, cy, cz


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
        for n in range(N):
            ud = qdd[j, n]
            acc[0, n] += sR[0, j, n] * ud
            acc[1, n] += sR[1, j, n] * ud
            acc[2, n] += sR[2, j, n] * ud
            acc[3, n] += sv[0, j, n] * ud
            acc[4, n] += sv[1, j, n] * ud
            acc[5, n] += sv[2, j, n] * ud
            W[0, j, n], W[1, j, n], W[2, j, n], W[3, j, n], W[4, j, n], W[5, j, n] = \
                _link_wrench(mass[j], com[j], Iloc[j], Fc[j, :3, :, n].T, Fc[j, 3, :, n],
                             w[0, j, n], w[1, j, n], w[2, j, n], v[0, j, n], v[1, j, n],
                             v[2, j, n], aw[0, j, n] + acc[0, n], aw[1, j, n] + acc[1, n],
                             aw[2, j, n] + acc[2, n], av[0, j, n] + acc[3, n],
                             av[1, j, n] + acc[4, n], av[2, j, n] + acc[5, n])
    for j in range(M - 1, -1, -1):
        for n in range(N):
            if j < M - 1:
                for i in range(6):
                    W[i, j, n] += W[i, j + 1, n]
            tau[j, n] = (sR[0, j, n] * W[3, j, n] + sR[1, j, n] * W[4, j, n]
                         + sR[2, j, n] * W[5, j, n] + sv[0, j, n] * W[0, j, n]
                         + sv[1, j, n] * W[1, j, n] + sv[2, j, n] * W[2, j, n])


def link_motion(sR, sv, qdT, qddT=None, gravity=None):
    """(w, v, aw, av), each (3, M, N), as ``kinematics.link_motion``."""
    load()
    qdT = _rows(qdT)
    out = [np.empty(sR.shape) for _ in range(4)]
    _motion(_rows(sR), _rows(sv), qdT, qdT if qddT is None else _rows(qddT), qddT is not None,
            _ZERO3 if gravity is None else _rows(gravity), gravity is not None, *out)
    return tuple(out)


def loads_from_motion(d: "ChainData", Fc, sR, sv, motion, qddT, gravity: bool) -> np.ndarray:
    """Joint loads (M, N) as ``dynamics._inverse_dynamics(..., motion=motion)``."""
    load()
    M, N = qddT.shape
    tau = np.empty((M, N))
    w, v, aw, av = (_rows(x) for x in motion)
    _loads_from_motion(_rows(Fc), _rows(sR), _rows(sv), w, v, aw, av, _rows(qddT), d.gravity,
                       gravity, d.mass, d.com, d.inertia, np.empty((6, N)), np.empty((6, M, N)),
                       tau)
    return tau


_ZERO3 = np.zeros(3)


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


def inverse(A: np.ndarray) -> np.ndarray:
    """Inverses of stacked (..., m, m) float matrices; NaN where singular."""
    return inverse_with_condition(A)[0]


def inverse_with_condition(A: np.ndarray):
    """(inverses (..., m, m), 1-norm condition numbers (...)) in one pass."""
    load()
    A3 = _rows(A).reshape((-1,) + A.shape[-2:])
    out = np.empty(A3.shape)
    cond = np.empty(A3.shape[0])
    _inverse(A3, out, cond)
    return out.reshape(A.shape), cond.reshape(A.shape[:-2])


# --------------------------------------------------------------------------
# Python wrappers
# --------------------------------------------------------------------------
class ChainData:
    """A chain's constants as contiguous float arrays, built once per chain."""

    __slots__ = ("base", "isR", "O", "mass", "com", "inertia", "gravity")

    def __init__(self, chain) -> None:
        self.base = np.ascontiguousarray(chain.base[:3], dtype=float)
        self.isR = np.ascontiguousarray(chain.is_revolute, dtype=np.bool_)
        self.O = np.ascontiguousarray(chain._origin_z[:, :3], dtype=float)
        self.mass = np.ascontiguousarray(chain.masses, dtype=float)
        self.com = np.ascontiguousarray(chain._com, dtype=float)
        self.inertia = np.ascontiguousarray(chain._inertia, dtype=float)
        self.gravity = np.ascontiguousarray(chain.gravity, dtype=float)


def _rows(x: np.ndarray) -> np.ndarray:
    """C-contiguous, writeable float64: the one array type the kernels are compiled
    for (a read-only or strided input would compile another specialization)."""
    a = np.ascontiguousarray(x, dtype=float)
    return a if a.flags.writeable else a.copy()


def inverse_dynamics(d: ChainData, q, qd, qdd, gravity: bool = True) -> np.ndarray:
    """Joint loads (N, M) of configurations q, qd, qdd (N, M)."""
    load()
    q = _rows(q)
    out = np.empty(q.shape)
    _rnea(d.base, d.isR, d.O, d.mass, d.com, d.inertia, d.gravity, q, _rows(qd), _rows(qdd),
          gravity, out)
    return out


def gravity_load(d: ChainData, q) -> np.ndarray:
    load()
    q = _rows(q)
    out = np.empty(q.shape)
    _gravity(d.base, d.isR, d.O, d.mass, d.com, d.gravity, q, out)
    return out


def inertia(d: ChainData, q) -> np.ndarray:
    """I* (N, M, M)."""
    load()
    q = _rows(q)
    N, M = q.shape
    out = np.empty((N, M, M))
    _inertia(d.base, d.isR, d.O, d.mass, d.com, d.inertia, q, out)
    return out


def inertia_power(d: ChainData, q, with_inertia: bool = True):
    """(I* (N, M, M) or None, P* (N, M, M, M)) in one pass over the batch."""
    load()
    q = _rows(q)
    N, M = q.shape
    I = np.empty((N, M, M) if with_inertia else (1, M, M))
    P = np.empty((N, M, M, M))
    _inertia_power(d.base, d.isR, d.O, d.mass, d.com, d.inertia, q, with_inertia, I, P)
    return (I if with_inertia else None), P


def forward_dynamics(d: ChainData, q, qd, tau):
    """(q'' (N, M), ok (N,)): ok is False where I* is not positive definite."""
    load()
    q = _rows(q)
    out = np.empty(q.shape)
    ok = np.empty(q.shape[0], dtype=np.bool_)
    _forward(d.base, d.isR, d.O, d.mass, d.com, d.inertia, d.gravity, q, _rows(qd), _rows(tau),
             out, ok)
    return out, ok
