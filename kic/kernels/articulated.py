"""Forward dynamics of a serial chain in O(M) by articulated-body inertias
(Featherstone's articulated-body algorithm), in world coordinates: compiled form,
plain-float twin and numpy twin.

=========================================  ==========================  ====================
algorithm                                  compiled / plain floats      numpy (batch last)
=========================================  ==========================  ====================
a link's spatial inertia about the origin  :func:`rigid_inertia_into`   (in :func:`aba_numpy`)
velocity-product acceleration of a joint   :func:`joint_bias`           (in :func:`aba_numpy`)
articulated inertias tip to base, then     :func:`articulated_solve`    :func:`aba_numpy`
q'' base to tip
q'' of one pose                            :func:`aba_one`,
                                           :func:`aba_floats`
=========================================  ==========================  ====================

Forward dynamics through I* (:mod:`kic.kernels.inertia` forms I*, the Cholesky
solve of :mod:`kic.kernels.linalg` factors it) costs O(M^2) to form and O(M^3) to
factor; beyond :data:`kic.settings.ABA_MIN_JOINTS` joints this recursion is
cheaper.  Both solve ``I* q'' = T - q'^T P* q' - T_gravity`` exactly.

Every quantity is in world coordinates about the world origin, as in
:mod:`kic.kernels.rnea`: a motion is ``(w, v)`` (angular velocity, velocity of
the body point at the origin), a wrench ``(n, f)`` (moment about the origin,
force), so that power is their dot product; joint j's screw is ``s_j = (a_j,
t_j)`` (:func:`kic.kernels.frames.frame_step`).  No transform between links is
needed: the articulated inertia of the links from j on, ``IA_j`` (6 x 6,
symmetric), is handed to the link before as ``IA_j - U U^T / D`` with ``U =
IA_j s_j`` and ``D = s_j^T IA_j s_j``, its bias wrench as ``pA_j + Ia c_j + U u
/ D`` with ``u = T_j - s_j^T pA_j`` and ``c_j = V_j x s_j q'_j`` the acceleration
a rate adds; then from the base, accelerated by -g, ``q''_j = (u - U^T a) / D``.

``D_j`` is the pivot of the factorization of I* from the tip (I* = L^T D L), so
kic's one singularity rule (:func:`kic.kernels.linalg.spd_pivot_ok`) applies to
it against its own diagonal entry ``I*_jj = s_j^T IC_j s_j`` (IC_j the composite
rigid inertia of the links from j on).  A body of zero mass with rotational
inertia counts, as everywhere in kic.
"""
from __future__ import annotations

import numpy as np

from .._array import numpy_cross as cross, prefix_sum
from .inertia import LinkState, inertia_tuple, link_world
from .jit import jit, plain
from .linalg import spd_pivot_ok
from .rnea import link_wrench
from .frames import frame_tuple

__all__ = ["rigid_inertia_into", "joint_bias", "articulated_solve", "aba_one", "aba_buffers",
           "aba_floats", "aba_numpy"]


# --------------------------------------------------------------------------
# one link, one joint (arrays or Python lists: [i][k] indexing)
# --------------------------------------------------------------------------
@jit(inline=True)
def rigid_inertia_into(m, c, Iw, out):
    """Spatial inertia (6 x 6, motion (w, v) to momentum (n, f) about the world
    origin) of a link of mass ``m`` with world centroid ``c`` (3-tuple) and world
    inertia ``Iw`` about it (6-tuple xx, xy, xz, yy, yz, zz, as
    :func:`kic.kernels.inertia.link_world` gives them) into ``out``:
    ``[[J, [h]x], [[h]x^T, m 1]]`` with ``h = m c`` and ``J = Iw + m (|c|^2 1 - c c^T)``."""
    cx, cy, cz = c
    cc = cx * cx + cy * cy + cz * cz
    hx, hy, hz = m * cx, m * cy, m * cz
    J00, J01, J02 = Iw[0] + m * (cc - cx * cx), Iw[1] - hx * cy, Iw[2] - hx * cz
    J11, J12, J22 = Iw[3] + m * (cc - cy * cy), Iw[4] - hy * cz, Iw[5] + m * (cc - cz * cz)
    r0, r1, r2, r3, r4, r5 = out[0], out[1], out[2], out[3], out[4], out[5]
    r0[0], r0[1], r0[2], r0[3], r0[4], r0[5] = J00, J01, J02, 0.0, -hz, hy
    r1[0], r1[1], r1[2], r1[3], r1[4], r1[5] = J01, J11, J12, hz, 0.0, -hx
    r2[0], r2[1], r2[2], r2[3], r2[4], r2[5] = J02, J12, J22, -hy, hx, 0.0
    r3[0], r3[1], r3[2], r3[3], r3[4], r3[5] = 0.0, hz, -hy, m, 0.0, 0.0
    r4[0], r4[1], r4[2], r4[3], r4[4], r4[5] = -hz, 0.0, hx, 0.0, m, 0.0
    r5[0], r5[1], r5[2], r5[3], r5[4], r5[5] = hy, -hx, 0.0, 0.0, 0.0, m


@jit(inline=True)
def joint_bias(a, t, w, v, u):
    """``c = (w, v) x (a, t) u``: the acceleration (6-tuple, (w', v')) that joint
    screw (a, t) at rate ``u`` adds to a link moving with (w, v) (the screw turns
    with the link before it: d/dt s = V x s, V x s = V_after x s)."""
    ax, ay, az = a
    tx, ty, tz = t
    wx, wy, wz = w
    vx, vy, vz = v
    return ((wy * az - wz * ay) * u, (wz * ax - wx * az) * u, (wx * ay - wy * ax) * u,
            (wy * tz - wz * ty + vy * az - vz * ay) * u,
            (wz * tx - wx * tz + vz * ax - vx * az) * u,
            (wx * ty - wy * tx + vx * ay - vy * ax) * u)


# --------------------------------------------------------------------------
# the two passes (compiled; the plain twin runs on Python lists)
# --------------------------------------------------------------------------
@jit
def articulated_solve(S, C, B, I, tau, grav, IA, IC, pA, acc, U, D, u, out):
    """q'' of one pose into ``out`` (M) from per joint j: screw ``S[j]`` (6),
    velocity-product acceleration ``C[j]`` (6, :func:`joint_bias`), the link's
    velocity-product wrench ``B[j]`` (6, (n, f)) and its spatial inertia ``I[j]``
    (6 x 6, :func:`rigid_inertia_into`); the loads ``tau`` (M) and gravity
    ``grav`` (3).  Work: IA, IC (6 x 6), pA, acc (6), U (M x 6), D, u (M).  False,
    with ``out`` undefined, when a pivot fails kic's singularity rule."""
    M = len(tau)
    for i in range(6):
        IAi, ICi = IA[i], IC[i]
        for k in range(6):
            IAi[k] = 0.0
            ICi[k] = 0.0
        pA[i] = 0.0
    # tip to base: articulated inertias and bias wrenches
    for j in range(M - 1, -1, -1):
        s, Ij, Bj, Uj = S[j], I[j], B[j], U[j]
        d = 0.0
        dc = 0.0
        sp = 0.0
        for i in range(6):
            IAi, ICi, Iji = IA[i], IC[i], Ij[i]
            x = 0.0
            y = 0.0
            for k in range(6):
                IAi[k] += Iji[k]
                ICi[k] += Iji[k]
                x += IAi[k] * s[k]
                y += ICi[k] * s[k]
            pA[i] += Bj[i]
            Uj[i] = x
            d += s[i] * x
            dc += s[i] * y
            sp += s[i] * pA[i]
        if not spd_pivot_ok(d, dc):
            return False
        uj = tau[j] - sp
        D[j] = d
        u[j] = uj
        if j:                            # hand IA - U U^T / D and its bias to the link before
            Cj = C[j]
            r = uj / d
            for i in range(6):
                IAi = IA[i]
                x = Uj[i] / d
                for k in range(6):
                    IAi[k] -= x * Uj[k]
            for i in range(6):
                IAi = IA[i]
                y = Uj[i] * r
                for k in range(6):
                    y += IAi[k] * Cj[k]
                pA[i] += y
    # base to tip: accelerations (the base accelerates by -g: gravity)
    acc[0], acc[1], acc[2] = 0.0, 0.0, 0.0
    acc[3], acc[4], acc[5] = -grav[0], -grav[1], -grav[2]
    for j in range(M):
        s, Cj, Uj = S[j], C[j], U[j]
        x = u[j]
        for i in range(6):
            acc[i] += Cj[i]
            x -= Uj[i] * acc[i]
        qdd = x / D[j]
        out[j] = qdd
        for i in range(6):
            acc[i] += s[i] * qdd
    return True


# --------------------------------------------------------------------------
# one configuration, compiled (frames from kic.kernels.frames.frames_into)
# --------------------------------------------------------------------------
@jit(inline=True)
def aba_buffers(M):
    """Work arrays of :func:`aba_one` (views of one allocation): S, C, B (M, 6),
    I (M, 6, 6), IA, IC (6, 6), pA, acc (6), U (M, 6), D, u (M)."""
    w = np.empty(M * 62 + 84)
    S = w[:6 * M].reshape((M, 6))
    C = w[6 * M:12 * M].reshape((M, 6))
    B = w[12 * M:18 * M].reshape((M, 6))
    I = w[18 * M:54 * M].reshape((M, 6, 6))
    U = w[54 * M:60 * M].reshape((M, 6))
    D = w[60 * M:61 * M]
    u = w[61 * M:62 * M]
    k = 62 * M
    return (S, C, B, I, w[k:k + 36].reshape((6, 6)), w[k + 36:k + 72].reshape((6, 6)),
            w[k + 72:k + 78], w[k + 78:k + 84], U, D, u)


@jit
def aba_one(isR, mass, com, Iloc, grav, A, t, R, p, qd, tau, work, out):
    """q'' of one configuration from its frames (:func:`kic.kernels.frames.frames_into`)
    into ``out``; ``work`` from :func:`aba_buffers`.  False when a pivot fails the rule."""
    S, C, B, I, IA, IC, pA, acc, U, D, u = work
    M = qd.shape[0]
    wx = wy = wz = vx = vy = vz = 0.0
    for j in range(M):
        a = (A[j, 0], A[j, 1], A[j, 2])
        tj = (t[j, 0], t[j, 1], t[j, 2])
        uj = qd[j]
        wx += a[0] * uj
        wy += a[1] * uj
        wz += a[2] * uj
        vx += tj[0] * uj
        vy += tj[1] * uj
        vz += tj[2] * uj
        Sj, Cj, Bj = S[j], C[j], B[j]
        Sj[0], Sj[1], Sj[2], Sj[3], Sj[4], Sj[5] = a[0], a[1], a[2], tj[0], tj[1], tj[2]
        Cj[0], Cj[1], Cj[2], Cj[3], Cj[4], Cj[5] = joint_bias(a, tj, (wx, wy, wz),
                                                              (vx, vy, vz), uj)
        com_j = (com[j, 0], com[j, 1], com[j, 2])
        I_j = inertia_tuple(Iloc[j])
        T = frame_tuple(R[j], p[j])
        f0, f1, f2, n0, n1, n2 = link_wrench(mass[j], com_j, I_j, T,
                                             (wx, wy, wz, vx, vy, vz, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
        Bj[0], Bj[1], Bj[2], Bj[3], Bj[4], Bj[5] = n0, n1, n2, f0, f1, f2
        c, Iw = link_world(com_j, I_j, T)
        rigid_inertia_into(mass[j], c, Iw, I[j])
    return articulated_solve(S, C, B, I, tau, grav, IA, IC, pA, acc, U, D, u, out)


# --------------------------------------------------------------------------
# one configuration, Python floats (frames from kic.kernels.frames.frames_floats)
# --------------------------------------------------------------------------
def aba_floats(d, frames, qd, tau) -> list | None:
    """q'' (list) of one configuration, or None when a pivot fails the rule."""
    world, wrench, bias, rigid = (_plain_link_world, _plain_link_wrench, _plain_joint_bias,
                                  _plain_rigid_inertia_into)
    M = len(frames)
    S, C, B, I = [], [], [], []
    w = v = (0.0, 0.0, 0.0)
    for (T, a, t), (m, com, Iloc), uj in zip(frames, d.links_t, qd):
        w = (w[0] + a[0] * uj, w[1] + a[1] * uj, w[2] + a[2] * uj)
        v = (v[0] + t[0] * uj, v[1] + t[1] * uj, v[2] + t[2] * uj)
        S.append(a + t)
        C.append(bias(a, t, w, v, uj))
        f0, f1, f2, n0, n1, n2 = wrench(m, com, Iloc, T, w + v + (0.0,) * 6)
        B.append((n0, n1, n2, f0, f1, f2))
        c, Iw = world(com, Iloc, T)
        Ij = [[0.0] * 6 for _ in range(6)]
        rigid(m, c, Iw, Ij)
        I.append(Ij)
    out = [0.0] * M
    ok = _plain_articulated_solve(
        S, C, B, I, tau, d.gravity.tolist(), [[0.0] * 6 for _ in range(6)],
        [[0.0] * 6 for _ in range(6)], [0.0] * 6, [0.0] * 6, [[0.0] * 6 for _ in range(M)],
        [0.0] * M, [0.0] * M, out)
    return out if ok else None


# --------------------------------------------------------------------------
# batches, numpy (batch last; frames from kic.kernels.frames.pose_numpy)
# --------------------------------------------------------------------------
def aba_numpy(d, Fc, sR, sv, qdT, tauT):
    """(q'' (M, N), ok (N,)) of a block of configurations: the two passes of
    :func:`articulated_solve` joint by joint over the batch; ok is False where a
    pivot fails the rule (q'' is then not finite or meaningless there)."""
    M, N = qdT.shape
    state = LinkState(d, Fc)
    c, Iw, m = state.c, state.I, d.mass
    w = prefix_sum(sR * qdT)
    v = prefix_sum(sv * qdT)
    S = np.concatenate([sR, sv])                                  # (6, M, N)
    C = np.concatenate([cross(w, sR), cross(w, sv) + cross(v, sR)]) * qdT
    # velocity-product wrench of each link: f = m w x (v + w x c), n = c x f + w x Iw w
    f = m[None, :, None] * cross(w, v + cross(w, c))
    n = cross(c, f) + cross(w, np.einsum("ijmn,jmn->imn", Iw, w))
    B = np.concatenate([n, f])
    # spatial inertias about the origin: [[J, [h]x], [[h]x^T, m 1]]
    h = m[None, :, None] * c
    I = np.zeros((6, 6, M, N))
    I[:3, :3] = Iw - m[None, None, :, None] * (c[:, None] * c[None])
    I[[0, 1, 2], [0, 1, 2]] += m[:, None] * (c * c).sum(0)
    X = np.zeros((3, 3, M, N))                                   # [h]x
    X[0, 1], X[0, 2], X[1, 2] = -h[2], h[1], -h[0]
    X[1, 0], X[2, 0], X[2, 1] = h[2], -h[1], h[0]
    I[:3, 3:] = X
    I[3:, :3] = -X
    I[[3, 4, 5], [3, 4, 5]] = m[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):     # where a pivot fails
        return _passes_numpy(S, C, B, I, tauT, d.gravity)


def _passes_numpy(S, C, B, I, tauT, grav):
    """The two passes of :func:`articulated_solve` over a batch: (q'', ok)."""
    M, N = tauT.shape
    IA = np.zeros((6, 6, N))
    IC = np.zeros((6, 6, N))
    pA = np.zeros((6, N))
    U = np.empty((6, M, N))
    D = np.empty((M, N))
    u = np.empty((M, N))
    ok = np.ones(N, dtype=bool)
    for j in range(M - 1, -1, -1):          # tip to base
        s = S[:, j]
        IA += I[:, :, j]
        IC += I[:, :, j]
        pA += B[:, j]
        U[:, j] = Uj = np.einsum("ikn,kn->in", IA, s)
        D[j] = d = np.einsum("in,in->n", s, Uj)
        ok &= _plain_spd_pivot_ok(d, np.einsum("in,ikn,kn->n", s, IC, s))
        u[j] = tauT[j] - np.einsum("in,in->n", s, pA)
        if j:
            r = 1.0 / d
            IA -= Uj[:, None] * (Uj * r)[None]
            pA += np.einsum("ikn,kn->in", IA, C[:, j]) + Uj * (u[j] * r)
    acc = np.zeros((6, N))                  # base to tip, the base accelerated by -g
    acc[3:] = -grav[:, None]
    qdd = np.empty((M, N))
    for j in range(M):
        acc += C[:, j]
        qdd[j] = (u[j] - np.einsum("in,in->n", U[:, j], acc)) / D[j]
        acc += S[:, j] * qdd[j]
    return qdd, ok


# the plain twins, bound once (the float kernel calls them per link)
_plain_link_world = plain("kic.kernels.inertia", "link_world")
_plain_link_wrench = plain("kic.kernels.rnea", "link_wrench")
_plain_joint_bias = plain(__name__, "joint_bias")
_plain_rigid_inertia_into = plain(__name__, "rigid_inertia_into")
_plain_articulated_solve = plain(__name__, "articulated_solve")
_plain_spd_pivot_ok = plain("kic.kernels.linalg", "spd_pivot_ok")     # on arrays, elementwise
