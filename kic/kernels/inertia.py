"""Effective inertia I*, inertia power P* and the gravity load of a serial chain
by composite (suffix) sums over the links, and of a tree (closed mechanisms) by
composites summed over subtrees: compiled form and numpy twin.

=========================================  ======================  ==========================
algorithm                                  compiled / plain floats  numpy (batch last)
=========================================  ======================  ==========================
a link's centroid and inertia in world     :func:`link_world`       :class:`LinkState`
add a link to the composite body after it  :func:`composite_step`   (suffix sums in LinkState)
I* of one pose (from its frames)           :func:`inertia_one`      :func:`inertia_numpy`
                                           :func:`inertia_floats`
P* of one pose (eq. 2-197)                 :func:`power_one`        :func:`power_numpy`
gravity load +dV/dq                        :func:`gravity_step`,    :func:`gravity_numpy`
                                           :func:`gravity_one`,
                                           :func:`gravity_floats`
a tree: composites of the subtrees         :func:`tree_composites`
a tree: I*_q = G^T H G, gravity at rest    :func:`tree_inertia`,
                                           :func:`tree_inertia_one`
=========================================  ======================  ==========================

One body enters every composite by :func:`link_world` and
:func:`composite_add`; a composite moves by :func:`composite_momentum` and
weighs by :func:`gravity_load`, on the chain and on the tree alike.

The zero-mass convention, the same on every path (:func:`is_massless`): a body
counts by its mass *and* its rotational inertia.  A body of zero mass with rotational inertia (a
rotor, a flywheel) adds its inertia to I* and P* like any other; its centroid
then places nothing (the mass moments it adds are zero).
"""
from __future__ import annotations

import numpy as np

from .._array import numpy_cross as cross, suffix_sum
from .frames import base_tuple, centroid, frame_tuple, rotations
from .jit import jit, plain

__all__ = ["inertia_tuple", "is_massless", "link_world", "composite_add", "composite_momentum",
           "composite_step", "gravity_load", "tree_composites", "inertia_times_transfer",
           "transfer_products", "tree_inertia", "tree_inertia_one", "link_world_into",
           "inertia_one", "power_one", "gravity_step", "gravity_one", "LinkState", "inertia_numpy",
           "power_numpy", "gravity_numpy", "inertia_floats", "gravity_floats"]


# --------------------------------------------------------------------------
# one link, tuples
# --------------------------------------------------------------------------
@jit(inline=True)
def inertia_tuple(I):
    """A symmetric (3, 3) inertia as the 6-tuple xx, xy, xz, yy, yz, zz."""
    return (I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2])


@jit(inline=True)
def link_world(com, I, T):
    """Centroid (3-tuple, m) and inertia about it in world axes (6-tuple: xx, xy, xz,
    yy, yz, zz; R I R^T) of a link with ``com`` and ``I`` given in link axes, placed
    at ``T`` (12-tuple, as in :func:`kic.kernels.frames.frame_step`)."""
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


@jit(inline=True)
def is_massless(mass, inertia, j):
    """Body j carries nothing: no mass and no rotational inertia either (the
    zero-mass convention; PUMA 560's link 1 has 0 kg and 0.35 kg m^2); a PSD
    inertia with a zero diagonal is zero."""
    return mass[j] <= 0.0 and inertia[j, 0, 0] == 0.0 and inertia[j, 1, 1] == 0.0 \
        and inertia[j, 2, 2] == 0.0


@jit(inline=True)
def composite_add(m, c, Iw, S):
    """Add a link (mass ``m``, world centroid ``c``, world inertia ``Iw`` about it,
    as :func:`link_world` gives them) to the composite ``S`` -- (mass, first
    moment (3), rotational inertia about the world origin (6: xx, xy, xz, yy, yz,
    zz)) -- by the parallel-axis theorem: I_O = Iw + m (|c|^2 1 - c c^T)."""
    cx, cy, cz = c
    S0, S1x, S1y, S1z, J00, J01, J02, J11, J12, J22 = S
    cc = cx * cx + cy * cy + cz * cz
    return (S0 + m, S1x + m * cx, S1y + m * cy, S1z + m * cz,
            J00 + (Iw[0] + m * (cc - cx * cx)), J01 + (Iw[1] - m * cx * cy),
            J02 + (Iw[2] - m * cx * cz), J11 + (Iw[3] + m * (cc - cy * cy)),
            J12 + (Iw[4] - m * cy * cz), J22 + (Iw[5] + m * (cc - cz * cz)))


@jit(inline=True)
def composite_momentum(S, a, t):
    """The momentum (force, moment about the origin) of the composite ``S`` (as
    :func:`composite_add`) moving with the unit screw (``a``, ``t``: angular
    velocity, velocity of the point at the origin): f = S0 t - S1 x a,
    n = J a + S1 x t (the spatial inertia [[J, [S1]x], [-[S1]x, S0 1]] times the
    screw)."""
    S0, S1x, S1y, S1z, J00, J01, J02, J11, J12, J22 = S
    ax, ay, az = a
    tx, ty, tz = t
    return (S0 * tx - (S1y * az - S1z * ay), S0 * ty - (S1z * ax - S1x * az),
            S0 * tz - (S1x * ay - S1y * ax),
            J00 * ax + J01 * ay + J02 * az + S1y * tz - S1z * ty,
            J01 * ax + J11 * ay + J12 * az + S1z * tx - S1x * tz,
            J02 * ax + J12 * ay + J22 * az + S1x * ty - S1y * tx)


@jit(inline=True)
def composite_step(m, c, Iw, a, t, S):
    """Add a link (mass ``m``, world centroid ``c``, world inertia ``Iw`` about it,
    as :func:`link_world` gives them) to the running composite ``S`` of the links
    after it (:func:`composite_add`) and return ``(S', (f, n))``: the new composite
    and its momentum for a unit rate of the link's joint (screw ``a``, ``t``;
    :func:`composite_momentum`).  I*[k, j] = a_k . n_j + t_k . f_j for k <= j."""
    S = composite_add(m, c, Iw, S)
    return S, composite_momentum(S, a, t)


@jit(inline=True)
def gravity_load(m, h, a, t, g):
    """The gravity load of a joint (screw ``a``, ``t``) carrying the mass ``m`` with
    first moment ``h`` (3-tuple, about the world origin) in the field ``g``:
    +dV/dq = -(a . (h x g) + m t . g)."""
    hx, hy, hz = h
    gx, gy, gz = g
    return -(a[0] * (hy * gz - hz * gy) + a[1] * (hz * gx - hx * gz)
             + a[2] * (hx * gy - hy * gx) + m * (t[0] * gx + t[1] * gy + t[2] * gz))


@jit(inline=True)
def gravity_step(m, c, a, t, g, S):
    """Add a link (mass ``m``, world centroid ``c``) to the running mass and first
    moment ``S = (S0, S1x, S1y, S1z)`` of the links after it and return ``(S', T)``,
    T the gravity load of the link's joint (screw ``a``, ``t``) in the field ``g``
    (:func:`gravity_load`)."""
    S0, S1x, S1y, S1z = S
    S0 += m
    S1x += m * c[0]
    S1y += m * c[1]
    S1z += m * c[2]
    return (S0, S1x, S1y, S1z), gravity_load(S0, (S1x, S1y, S1z), a, t, g)


# --------------------------------------------------------------------------
# one configuration, compiled (arrays from kic.kernels.frames.frames_into)
# --------------------------------------------------------------------------
@jit
def link_world_into(R, p, com, Iloc, c, Iw):
    """Centroids c (M, 3) and world inertias Iw (M, 3, 3) of the links (for P*:
    :func:`power_one`)."""
    for j in range(R.shape[0]):
        cj, Ij = link_world((com[j, 0], com[j, 1], com[j, 2]), inertia_tuple(Iloc[j]),
                            frame_tuple(R[j], p[j]))
        c[j, 0], c[j, 1], c[j, 2] = cj
        Iw[j, 0, 0], Iw[j, 0, 1], Iw[j, 0, 2] = Ij[0], Ij[1], Ij[2]
        Iw[j, 1, 0], Iw[j, 1, 1], Iw[j, 1, 2] = Ij[1], Ij[3], Ij[4]
        Iw[j, 2, 0], Iw[j, 2, 1], Iw[j, 2, 2] = Ij[2], Ij[4], Ij[5]


@jit(bare=True)
def inertia_one(mass, com, Iloc, R, p, A, t, cols, out):
    """I* of one configuration from its frames (as
    :func:`kic.kernels.frames.frames_into` gives them) by composite inertias about
    the world origin; each link enters by :func:`link_world` on the way (no
    centroid or world inertia stored: one loop, less to compile).  ``cols`` (M, 6)
    work."""
    M = mass.shape[0]
    S = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for j in range(M - 1, -1, -1):
        c, Iw = link_world((com[j, 0], com[j, 1], com[j, 2]), inertia_tuple(Iloc[j]),
                           frame_tuple(R[j], p[j]))
        S, col = composite_step(mass[j], c, Iw, (A[j, 0], A[j, 1], A[j, 2]),
                                (t[j, 0], t[j, 1], t[j, 2]), S)
        for i in range(6):
            cols[j, i] = col[i]
    for n in range(M):
        for k in range(n + 1):
            x = (A[k, 0] * cols[n, 3] + A[k, 1] * cols[n, 4] + A[k, 2] * cols[n, 5]
                 + t[k, 0] * cols[n, 0] + t[k, 1] * cols[n, 1] + t[k, 2] * cols[n, 2])
            out[k, n] = x
            out[n, k] = x


@jit
def _power_moments(mass, c, Iw, A, S0, S1, S2, J, JA, C):
    """The composite sums P* is made of: mass S0, first and second mass moments
    S1, S2 and world inertia J of the links from j on; C[x, y] = A_x x A_y and
    JA[K, x] = J_K A_x."""
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


@jit
def power_one(mass, c, Iw, A, t, S0, S1, S2, J, Z, JA, C, out):
    """P* of one configuration (eq. 2-197), the sums of :func:`power_numpy`.

    Z[k, n] = sum_{j >= max(k,n)} m_j G_c[k] x G_c[n] from the composite mass
    moments S0, S1, S2; translational part A_min(a,b) . Z[max(a,b), n];
    rotational parts [a<b] (A_a x A_b) . J_max(n,b) A_n and
    (A_n x A_b) . J_max(n,a,b) A_a, with J_K the suffix sum of world inertias.
    """
    M = mass.shape[0]
    _power_moments(mass, c, Iw, A, S0, S1, S2, J, JA, C)
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
                    x += (C[a, b, 0] * JA[K, n, 0] + C[a, b, 1] * JA[K, n, 1]
                          + C[a, b, 2] * JA[K, n, 2])
                K = max(n, hi)
                x += C[n, b, 0] * JA[K, a, 0] + C[n, b, 1] * JA[K, a, 1] + C[n, b, 2] * JA[K, a, 2]
                out[n, a, b] = x


@jit(bare=True)
def gravity_one(mass, com, grav, A, t, R, p, out):
    """+dV/dq of one configuration by suffix sums of mass and first moment."""
    g = (grav[0], grav[1], grav[2])
    S = (0.0, 0.0, 0.0, 0.0)
    for j in range(mass.shape[0] - 1, -1, -1):
        S, out[j] = gravity_step(mass[j], centroid((com[j, 0], com[j, 1], com[j, 2]),
                                                   frame_tuple(R[j], p[j])),
                                 (A[j, 0], A[j, 1], A[j, 2]), (t[j, 0], t[j, 1], t[j, 2]), g, S)


# --------------------------------------------------------------------------
# a tree (parent, order), its poses side by side in lanes
# --------------------------------------------------------------------------
# A tree's joint j moves body j after joint ``parent[j]`` (-1: the ground);
# ``order`` lists the joints parents before children (a serial chain is the
# tree with parent j - 1).  Its arrays hold V poses side by side along the last
# axis (the lanes; one pose: V = 1, as :func:`tree_inertia_one`), so that the
# loops over the lanes carry no branches and become vector instructions.
ZERO_COMPOSITE = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
"""The composite of nothing (:func:`composite_add`)."""


@jit(bare=True)
def tree_composites(nl, parent, order, mass, com, inertia, FL, empty, Ic):
    """The composite (:func:`composite_add`: m, h = m c, the upper triangle of
    I_O) of every joint's subtree about the world origin, per lane, into ``Ic``
    (N, 10, V): each body's own (at its frame, ``FL`` (N, 12, V) the rows 0..2
    of its 4x4 frame), then children into parents.  ``empty[j]`` (the same in
    every lane): the subtree carries nothing (:func:`is_massless`, Ic zero)."""
    N = mass.shape[0]
    for j in range(N):
        empty[j] = is_massless(mass, inertia, j)
        if empty[j]:
            for a in range(10):
                for u in range(nl):
                    Ic[j, a, u] = 0.0
            continue
        m, k, Il = mass[j], (com[j, 0], com[j, 1], com[j, 2]), inertia_tuple(inertia[j])
        for u in range(nl):
            c, Iw = link_world(k, Il, (FL[j, 0, u], FL[j, 1, u], FL[j, 2, u], FL[j, 4, u],
                                       FL[j, 5, u], FL[j, 6, u], FL[j, 8, u], FL[j, 9, u],
                                       FL[j, 10, u], FL[j, 3, u], FL[j, 7, u], FL[j, 11, u]))
            composite_into(Ic, j, u, composite_add(m, c, Iw, ZERO_COMPOSITE))
    add_subtrees(nl, parent, order, empty, Ic)


@jit(inline=True)
def composite_at(Ic, j, u):
    """The composite of joint j in lane u of ``Ic`` (N, 10, V), a 10-tuple."""
    return (Ic[j, 0, u], Ic[j, 1, u], Ic[j, 2, u], Ic[j, 3, u], Ic[j, 4, u], Ic[j, 5, u],
            Ic[j, 6, u], Ic[j, 7, u], Ic[j, 8, u], Ic[j, 9, u])


@jit(inline=True)
def composite_into(Ic, j, u, S):
    """The composite ``S`` (10-tuple) into joint j, lane u of ``Ic`` (N, 10, V)."""
    Ic[j, 0, u], Ic[j, 1, u], Ic[j, 2, u], Ic[j, 3, u], Ic[j, 4, u] = S[0], S[1], S[2], S[3], S[4]
    Ic[j, 5, u], Ic[j, 6, u], Ic[j, 7, u], Ic[j, 8, u], Ic[j, 9, u] = S[5], S[6], S[7], S[8], S[9]


@jit(inline=True)
def add_subtrees(nl, parent, order, empty, Ic):
    """Each composite of ``Ic`` (N, 10, V) added into its parent's, children before
    parents: the bodies' own become their subtrees' (``empty`` likewise)."""
    for jj in range(order.shape[0] - 1, -1, -1):
        j = order[jj]
        p = parent[j]
        if p >= 0 and not empty[j]:
            empty[p] = False
            for a in range(10):
                for u in range(nl):
                    Ic[p, a, u] += Ic[j, a, u]


@jit(inline=True)
def add_scaled_row(nl, HG, i, hw, GL, j, qj):
    """HG[i] += hw G[j] per lane; where joint j is coordinate ``qj`` (>= 0) its row
    of G is the unit row e_qj, so only its 1 adds."""
    if qj >= 0:
        for u in range(nl):
            HG[i, qj, u] += hw[u]
    else:
        for a in range(GL.shape[1]):
            for u in range(nl):
                HG[i, a, u] += hw[u] * GL[j, a, u]


@jit(bare=True)
def inertia_times_transfer(nl, parent, gravity, SL, GL, qcol, empty, Ic, HG, Tphi, fw, hw):
    """HG = H G (N, M, V), pair by pair along every path (H_ij = S_i^T Ic_j S_j, i
    an ancestor of j or j; ``SL`` (N, 6, V) the world screws [a; t], ``GL`` (N, M,
    V) the transfer to the coordinates), and the joint loads of gravity at rest
    ``Tphi`` (N, V) (:func:`gravity_load` of each subtree).  ``qcol[j]`` is m
    where joint j is coordinate m (its row of G the unit row e_m), else -1;
    ``fw`` (6, V), ``hw`` (V,) are work."""
    N, M = GL.shape[0], GL.shape[1]
    for j in range(N):
        for a in range(M):
            for u in range(nl):
                HG[j, a, u] = 0.0
    g = (gravity[0], gravity[1], gravity[2])
    for j in range(N):
        if empty[j]:
            for u in range(nl):
                Tphi[j, u] = 0.0
            continue
        for u in range(nl):
            Sj = composite_at(Ic, j, u)
            a = (SL[j, 0, u], SL[j, 1, u], SL[j, 2, u])
            t = (SL[j, 3, u], SL[j, 4, u], SL[j, 5, u])
            fw[0, u], fw[1, u], fw[2, u], fw[3, u], fw[4, u], fw[5, u] = \
                composite_momentum(Sj, a, t)
            Tphi[j, u] = gravity_load(Sj[0], (Sj[1], Sj[2], Sj[3]), a, t, g)
        qj = qcol[j]
        i = j
        while i >= 0:
            for u in range(nl):
                hw[u] = (SL[i, 0, u] * fw[3, u] + SL[i, 1, u] * fw[4, u]
                         + SL[i, 2, u] * fw[5, u] + SL[i, 3, u] * fw[0, u]
                         + SL[i, 4, u] * fw[1, u] + SL[i, 5, u] * fw[2, u])
            add_scaled_row(nl, HG, i, hw, GL, j, qj)
            if i != j:
                add_scaled_row(nl, HG, j, hw, GL, i, qcol[i])
            i = parent[i]


@jit(bare=True)
def transfer_products(nl, GL, qcol, HG, Tphi, hw, Im, T0, rest):
    """I* = G^T (H G) (M, M, V) and, in the lanes at rest (``rest`` (V,)), the
    gravity load T0 = G^T T_phi (M, V) (the other lanes keep theirs)."""
    N, M = GL.shape[0], GL.shape[1]
    # I* = G^T (H G), each entry summed over j in order (a coordinate's unit row
    # adds its row of HG to its own row of I* only), symmetric to rounding: the
    # mean of the two triangles
    for a in range(M):
        for b in range(M):
            for u in range(nl):
                Im[a, b, u] = 0.0
            for j in range(N):
                if qcol[j] >= 0:
                    if qcol[j] == a:
                        for u in range(nl):
                            Im[a, b, u] += HG[j, b, u]
                    continue
                for u in range(nl):
                    Im[a, b, u] += GL[j, a, u] * HG[j, b, u]
    for a in range(M):
        for b in range(a):
            for u in range(nl):
                v = 0.5 * (Im[a, b, u] + Im[b, a, u])
                Im[a, b, u] = v
                Im[b, a, u] = v
    # T0 = G^T T_phi where at rest (the sums in the order of j)
    for m in range(M):
        for u in range(nl):
            hw[u] = 0.0
        for j in range(N):
            for u in range(nl):
                hw[u] += GL[j, m, u] * Tphi[j, u]
        for u in range(nl):
            T0[m, u] = hw[u] if rest[u] else T0[m, u]


@jit(inline=True)
def tree_inertia(nl, parent, order, mass, com, inertia, gravity, FL, SL, GL, qcol, empty, Ic,
                 HG, Tphi, fw, hw, IL, T0L, rest):
    """I*_q = G^T H G (``IL`` (M, M, V)) of a tree by composite rigid bodies and,
    in the lanes at ``rest`` (q' = 0), the gravity load T0 = G^T T_phi (``T0L``
    (M, V)) from the same composites, for the first ``nl`` of V poses side by
    side (arrays as :func:`tree_composites`, :func:`inertia_times_transfer`).

    A body's spatial inertia about the world origin, in the screw coordinates
    [omega; v_O], is ``[[I_O, [h]x], [-[h]x, m 1]]`` (kinetic energy s^T M s / 2):
    m its mass, h = m c its first moment, I_O its inertia about the origin.  Those
    ten numbers add over a subtree, so the composite Ic_j of the subtree of joint
    j gives its momentum for the joint's unit screw (:func:`composite_momentum`),
    the joint-space inertia H_ij = S_i^T Ic_j S_j (i an ancestor of j, or j) and
    I*_q = G^T H G; at rest the joint loads of gravity are S_j^T Ic_j [0; -g]
    (:func:`gravity_load` of the subtree: its weight, as a Newton-Euler pass with
    the base accelerated by -g)."""
    tree_composites(nl, parent, order, mass, com, inertia, FL, empty, Ic)
    inertia_times_transfer(nl, parent, gravity, SL, GL, qcol, empty, Ic, HG, Tphi, fw, hw)
    transfer_products(nl, GL, qcol, HG, Tphi, hw, IL, T0L, rest)


@jit(bare=True)
def tree_inertia_one(parent, order, mass, com, inertia, F, S, G, I, Ic, HG, empty, qcol):
    """I*_q (``I`` (M, M)) of one pose of a tree by composite rigid bodies: the
    sums of :func:`tree_inertia` for one lane, in the same order (its numbers, bit
    for bit), from the body frames ``F`` (N, 4, 4), world screws ``S`` (N, 6) and
    transfer ``G`` (N, M).  A row of G that is a unit row e_m (a coordinate's)
    takes the unit-row shortcut (it adds the same numbers).  Work (the caller's,
    so that a pose allocates nothing): ``Ic`` (N, 10, 1) the composites (one
    lane of :func:`add_subtrees`), ``HG`` (N, M), ``empty`` (N,) bool, ``qcol``
    (N,) int."""
    N, M = G.shape
    for j in range(N):
        for m in range(M):
            HG[j, m] = 0.0
    for j in range(N):
        qcol[j] = unit_row(G, j)
        empty[j] = is_massless(mass, inertia, j)
        if empty[j]:
            for a in range(10):
                Ic[j, a, 0] = 0.0
            continue
        c, Iw = link_world((com[j, 0], com[j, 1], com[j, 2]), inertia_tuple(inertia[j]),
                           base_tuple(F[j]))
        composite_into(Ic, j, 0, composite_add(mass[j], c, Iw, ZERO_COMPOSITE))
    add_subtrees(1, parent, order, empty, Ic)
    for j in range(N):
        if empty[j]:
            continue
        f0, f1, f2, n0, n1, n2 = composite_momentum(
            composite_at(Ic, j, 0), (S[j, 0], S[j, 1], S[j, 2]), (S[j, 3], S[j, 4], S[j, 5]))
        i = j
        while i >= 0:
            h = (S[i, 0] * n0 + S[i, 1] * n1 + S[i, 2] * n2 + S[i, 3] * f0 + S[i, 4] * f1
                 + S[i, 5] * f2)
            add_scaled_row_one(HG, i, h, G, j, qcol[j])
            if i != j:
                add_scaled_row_one(HG, j, h, G, i, qcol[i])
            i = parent[i]
    for a in range(M):
        for b in range(M):
            x = 0.0
            for j in range(N):
                if qcol[j] >= 0:
                    if qcol[j] == a:
                        x += HG[j, b]
                    continue
                x += G[j, a] * HG[j, b]
            I[a, b] = x
    for a in range(M):
        for b in range(a):
            v = 0.5 * (I[a, b] + I[b, a])
            I[a, b] = v
            I[b, a] = v


@jit(inline=True)
def unit_row(G, j):
    """m where row j of ``G`` is exactly the unit row e_m, else -1."""
    m = -1
    for a in range(G.shape[1]):
        g = G[j, a]
        if g == 1.0 and m < 0:
            m = a
        elif g != 0.0:
            return -1
    return m


@jit(inline=True)
def add_scaled_row_one(HG, i, h, G, j, qj):
    """HG[i] += h G[j] (:func:`add_scaled_row` for one pose)."""
    if qj >= 0:
        HG[i, qj] += h
    else:
        for a in range(G.shape[1]):
            HG[i, a] += h * G[j, a]


# --------------------------------------------------------------------------
# one configuration, Python floats (frames from kic.kernels.frames.frames_floats)
# --------------------------------------------------------------------------
def inertia_floats(d, frames) -> list:
    """I* (list of M lists) of one configuration by composite inertias."""
    world, step = _plain_link_world, _plain_composite_step
    M = len(frames)
    S = (0.0,) * 10
    cols = [None] * M
    for j in range(M - 1, -1, -1):
        T, a, t = frames[j]
        m, com, I = d.links_t[j]
        c, Iw = world(com, I, T)
        S, cols[j] = step(m, c, Iw, a, t, S)
    out = [[0.0] * M for _ in range(M)]
    for n in range(M):
        fx, fy, fz, nx, ny, nz = cols[n]
        for k in range(n + 1):
            _, (ax, ay, az), (tx, ty, tz) = frames[k]
            x = ax * nx + ay * ny + az * nz + tx * fx + ty * fy + tz * fz
            out[k][n] = x
            out[n][k] = x
    return out


def gravity_floats(d, frames) -> list:
    """+dV/dq (list) of one configuration by suffix sums of mass and first moment."""
    place, step = _plain_centroid, _plain_gravity_step
    g = tuple(d.gravity.tolist())
    S = (0.0, 0.0, 0.0, 0.0)
    tau = [0.0] * len(frames)
    for j in range(len(frames) - 1, -1, -1):
        T, a, t = frames[j]
        m, com, _ = d.links_t[j]
        S, tau[j] = step(m, place(com, T), a, t, g, S)
    return tau


# --------------------------------------------------------------------------
# batches, numpy (batch last; frames from kic.kernels.frames.pose_numpy)
# --------------------------------------------------------------------------
class LinkState:
    """Centroids, world inertias and composite sums of a chain at a pose."""

    def __init__(self, d, Fc) -> None:
        R, p = rotations(Fc)
        self.c = np.einsum("ijmn,jm->imn", R, d.com.T) + p
        RI = np.einsum("ikmn,mkl->ilmn", R, d.inertia)           # R I_local
        self.I = np.einsum("ilmn,jlmn->ijmn", RI, R)             # R I_local R^T
        self.m = d.mass
        self.S0 = suffix_sum(d.mass, 0)                          # (M,)
        self.S1 = suffix_sum(d.mass[None, :, None] * self.c, 1)  # (3, M, N)


def inertia_numpy(sR, sv, state: LinkState) -> np.ndarray:
    """I* (M, M, N) from composite spatial inertias about the world origin."""
    c, m = state.c, state.m
    M = sR.shape[1]
    # rotational inertia of each link about the world origin: I + m(|c|^2 1 - c c^T)
    Jo = state.I - m[None, None, :, None] * (c[:, None] * c[None])
    cc = m[:, None] * (c * c).sum(0)
    for i in range(3):
        Jo[i, i] += cc
    Jc = suffix_sum(Jo, 2)
    S0, S1 = state.S0[None, :, None], state.S1
    f = S0 * sv - cross(S1, sR)                 # composite momentum of each screw
    n = np.einsum("ijmn,jmn->imn", Jc, sR) + cross(S1, sv)
    X = np.einsum("imn,ikn->mkn", sR, n) + np.einsum("imn,ikn->mkn", sv, f)
    a, b = np.indices((M, M))
    return X[np.minimum(a, b), np.maximum(a, b)]


def power_numpy(A, t, state: LinkState) -> np.ndarray:
    """P* (M, M, M, N), Freeman's eq. 2-197 re-associated into composite sums.

    With A_n = s^R_n, t_n the moment part of screw n and K the largest index:
    translational  A_min(a,b) . Z[max(a,b), n],
    rotational     [a<b] (A_a x A_b) . J_K A_n  +  (A_n x A_b) . J_K A_a,
    where Z[k, n] = sum_{j>=max(k,n)} m_j G_c[k] x G_c[n] is expanded in the
    composite mass moments (see docs/theory.md).
    """
    m, c, I = state.m, state.c, state.I
    M = A.shape[1]
    S0 = state.S0
    S1 = state.S1
    S2 = suffix_sum(m[None, None, :, None] * (c[:, None] * c[None]), 2)   # (3,3,M,N)
    J = suffix_sum(I, 2)                                     # (3,3,M,N)
    k, n = np.indices((M, M))
    K = np.maximum(k, n)
    # Z[k, n] = sum_{j >= K} m_j (G_c[k] x G_c[n]) with G_c[x] = A_x x c + t_x
    Ak, An, tk, tn = A[:, :, None], A[:, None, :], t[:, :, None], t[:, None, :]
    S1K = S1[:, K]
    C = cross(Ak, An)                                        # C[:, x, y] = A_x x A_y
    Z = (np.einsum("ijqrN,jqrN->iqrN", S2[:, :, K], C)
         + S1K * np.einsum("iqN,irN->qrN", A, t) - Ak * np.einsum("iqrN,irN->qrN", S1K, t)
         + An * np.einsum("iqN,iqrN->qrN", t, S1K) - S1K * np.einsum("iqN,irN->qrN", t, A)
         + S0[K][None, ..., None] * cross(tk, tn))
    JA = np.einsum("ijKN,jxN->ixKN", J, A)                   # JA[:, x, K] = J_K A_x
    # translational: A_min(a,b) . Z[max(a,b), n]
    T1 = np.einsum("piN,pknN->iknN", A, Z)
    lo, hi = np.minimum(k, n), np.maximum(k, n)
    out = T1[lo, hi].transpose(2, 0, 1, 3).copy()           # [n, a, b]
    # rotational, from H_rot: [a < b] (A_a x A_b) . J_max(n,b) A_n
    W = JA[:, k, K]                                          # W[:, n, b] = J_max(n,b) A_n
    out += np.einsum("pabN,pnbN->nabN", C * (k < n)[None, ..., None], W)
    # rotational, gyroscopic: (A_n x A_b) . J_max(n,a,b) A_a, grouped by L = max(n, b)
    ar = np.arange(M)
    for L in range(M):
        nL, bL = np.nonzero(K == L)
        V = JA[:, ar, np.maximum(ar, L)]                     # V[:, a] = J_max(a,L) A_a
        out[nL, :, bL] += np.einsum("pqN,paN->qaN", C[:, nL, bL], V)
    return out


def gravity_numpy(d, Fc, sR, sv) -> np.ndarray:
    """+dV/dq = -sum G_c^T m g (M, N), by suffix sums of mass and first moment."""
    g = d.gravity[:, None, None]
    S0 = suffix_sum(d.mass, 0)[None, :, None]
    R, p = rotations(Fc)
    c = np.einsum("ijmn,jm->imn", R, d.com.T) + p
    S1 = suffix_sum(d.mass[None, :, None] * c, 1)
    return -(sR * cross(S1, g) + sv * (S0 * g)).sum(axis=0)


# --------------------------------------------------------------------------
# rigid bodies joined into one (description time)
# --------------------------------------------------------------------------
# the plain twins, bound once (the float kernels call them per link)
_plain_link_world = plain(__name__, "link_world")
_plain_composite_step = plain(__name__, "composite_step")
_plain_gravity_step = plain(__name__, "gravity_step")
_plain_centroid = plain("kic.kernels.frames", "centroid")


# the serial chain's one-pose recursion is called by compiled entry points only: no
# wrappers for calls from Python (its plain twin, jit.plain, runs from Python)
from .jit import compiled_callers_only  # noqa: E402  (after the marks it reads)

compiled_callers_only(__name__, only=("inertia_one",))
