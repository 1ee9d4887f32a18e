"""Joint loads of a serial chain by the recursive Newton-Euler algorithm in world
coordinates (screw motion forward, link wrenches summed backward): compiled form
and numpy twin.

=======================================  ========================  =========================
algorithm                                compiled / plain floats    numpy (batch last)
=======================================  ========================  =========================
add a joint's screw to the link motion   :func:`screw_step`         (prefix sums, link_motion)
d'Alembert wrench of one link            :func:`link_wrench`        (in :func:`wrench_loads`)
joint loads of one pose                  :func:`rnea_one`,          :func:`wrench_loads`
                                         :func:`loads_floats`
link motion over a batch                 :func:`motion_lanes`       :func:`link_motion`
joint loads from a given motion          :func:`motion_loads_lanes` :func:`loads_from_motion`
the same on a tree (parent, order)       :func:`tree_loads`
=======================================  ========================  =========================

A serial chain is the tree whose joint j has the parent j - 1; a tree (closed
mechanisms, :mod:`kic.kernels.closed_pose`) walks its joints in ``order``
(parents before children) and sums each subtree's wrench into its parent.
A link's motion is the 12-tuple ``(w, v, aw, av)``: angular velocity, velocity of
the body point at the world origin, and their rates; gravity enters as the base
acceleration ``-g``.  A body of zero mass with rotational inertia counts (its
wrench is the Euler moment alone).
"""
from __future__ import annotations

import numpy as np

from .._array import numpy_cross as cross, prefix_sum, suffix_sum
from .frames import base_tuple, joint_frame_into, rotations
from .inertia import inertia_tuple, is_massless
from .jit import jit, plain

__all__ = ["screw_step", "link_wrench", "rnea_one", "motion_lanes", "motion_loads_lanes",
           "tree_loads", "loads_floats", "link_motion", "wrench_loads", "loads_from_motion"]


@jit(inline=True)
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


@jit(inline=True)
def link_wrench(m, com, I, T, V):
    """d'Alembert wrench (force, moment about the world origin) of one link of mass
    ``m``, centroid ``com`` (3-tuple) and inertia ``I`` (6-tuple: xx, xy, xz, yy, yz,
    zz about the centroid) in link axes, placed at ``T`` (12-tuple, as in
    :func:`kic.kernels.frames.frame_step`) and moving with the world screw motion
    ``V`` (as in :func:`screw_step`)."""
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


# --------------------------------------------------------------------------
# compiled
# --------------------------------------------------------------------------
@jit(bare=True)
def rnea_one(base, isR, O, mass, com, Iloc, grav, q, qd, qdd, A, t, R, p, W, out):
    """Joint loads of one configuration (world-frame screw recursion) in the uniform
    field ``grav`` (3,) (m/s^2; zeros: none; the base accelerates by -grav), its
    frames computed on the way by :func:`kic.kernels.frames.frame_step` and left in
    A, t (M, 3), R (M, 3, 3), p (M, 3) as :func:`kic.kernels.frames.frames_into`
    gives them (one pass: the frames are used while they are in registers); W (M, 6)
    work.  (The field as an array, not a flag: a constant flag would compile a
    second specialization for the callers that pass one.)"""
    M = q.shape[0]
    V = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -grav[0], -grav[1], -grav[2])
    T = base_tuple(base)
    for j in range(M):
        T, a, tj = joint_frame_into(j, T, O, isR, q, A, t, R, p)
        V = screw_step(a, tj, qd[j], qdd[j], V)
        W[j, 0], W[j, 1], W[j, 2], W[j, 3], W[j, 4], W[j, 5] = link_wrench(
            mass[j], (com[j, 0], com[j, 1], com[j, 2]), inertia_tuple(Iloc[j]), T, V)
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


@jit
def motion_lanes(sR, sv, qd, qdd, use_qdd, grav, use_grav, w, v, aw, av):
    """World screw motion of the links (:func:`link_motion`), joint by joint over
    the batch: running sums of the screws times the rates."""
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


@jit
def motion_loads_lanes(Fc, sR, sv, w, v, aw, av, qdd, grav, use_grav, mass, com, Iloc,
                       acc, W, tau):
    """Joint loads (M, N) from the velocity-product motion (w, v, aw, av) plus the
    q'' terms (:func:`loads_from_motion`), joint by joint."""
    _, M, N = sR.shape
    for n in range(N):
        for i in range(6):
            acc[i, n] = 0.0
        if use_grav:
            acc[3, n], acc[4, n], acc[5, n] = -grav[0], -grav[1], -grav[2]
    for j in range(M):
        cj = (com[j, 0], com[j, 1], com[j, 2])
        Ij = inertia_tuple(Iloc[j])
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


@jit(bare=True)
def tree_loads(parent, order, mass, com, inertia, F, S, V, Av, qdd, grav, use_gravity, acc,
               wrench, tau):
    """Joint loads ``tau`` (N,) of a tree (joint j moves body j after ``parent[j]``,
    -1 the ground; ``order`` parents before children) from its velocity-product
    motion plus the q'' terms: ``F`` (N, 4, 4) the body frames, ``S`` (N, 6) the
    world screws [a; t] (as :func:`screw_step`), ``V`` (N, 6) the screw
    velocities (w, v) and ``Av`` (N, 6) their rates at q'' = 0 (aw, av), ``qdd``
    (N,) the joint accelerations; ``use_gravity``: the base accelerates by
    ``-grav`` (m/s^2).  ``acc`` (N, 6) (the q'' part of each body's acceleration) and
    ``wrench`` (N, 6) (force, moment about the origin: each subtree's) are work.
    A body that carries nothing (:func:`~kic.kernels.inertia.is_massless`) is
    skipped."""
    g = (-grav[0], -grav[1], -grav[2]) if use_gravity else (0.0, 0.0, 0.0)
    for jj in range(order.shape[0]):
        j = order[jj]
        p = parent[j]
        u = qdd[j]
        if p >= 0:
            for i in range(6):
                acc[j, i] = acc[p, i] + S[j, i] * u
        else:
            acc[j, 0], acc[j, 1], acc[j, 2] = S[j, 0] * u, S[j, 1] * u, S[j, 2] * u
            acc[j, 3], acc[j, 4], acc[j, 5] = (g[0] + S[j, 3] * u, g[1] + S[j, 4] * u,
                                               g[2] + S[j, 5] * u)
        if is_massless(mass, inertia, j):
            for i in range(6):
                wrench[j, i] = 0.0
            continue
        (wrench[j, 0], wrench[j, 1], wrench[j, 2], wrench[j, 3], wrench[j, 4],
         wrench[j, 5]) = link_wrench(
            mass[j], (com[j, 0], com[j, 1], com[j, 2]), inertia_tuple(inertia[j]),
            base_tuple(F[j]),
            (V[j, 0], V[j, 1], V[j, 2], V[j, 3], V[j, 4], V[j, 5],
             Av[j, 0] + acc[j, 0], Av[j, 1] + acc[j, 1], Av[j, 2] + acc[j, 2],
             Av[j, 3] + acc[j, 3], Av[j, 4] + acc[j, 4], Av[j, 5] + acc[j, 5]))
    # backward: each joint transmits the wrench of its subtree
    for jj in range(order.shape[0] - 1, -1, -1):
        j = order[jj]
        tau[j] = (S[j, 0] * wrench[j, 3] + S[j, 1] * wrench[j, 4] + S[j, 2] * wrench[j, 5]
                  + S[j, 3] * wrench[j, 0] + S[j, 4] * wrench[j, 1] + S[j, 5] * wrench[j, 2])
        p = parent[j]
        if p >= 0:
            for i in range(6):
                wrench[p, i] += wrench[j, i]


# --------------------------------------------------------------------------
# one configuration, Python floats (frames from kic.kernels.frames.frames_floats)
# --------------------------------------------------------------------------
def loads_floats(d, frames, qd, qdd, gravity: bool = True) -> list:
    """Joint loads (list) of one configuration from its frames."""
    step, wrench = _plain_screw_step, _plain_link_wrench
    g = d.gravity
    V = (0.0,) * 9 + ((-float(g[0]), -float(g[1]), -float(g[2])) if gravity else (0.0,) * 3)
    wrenches = []
    for (T, a, t), (m, com, I), u, ud in zip(frames, d.links_t, qd, qdd):
        V = step(a, t, u, ud, V)
        wrenches.append(wrench(m, com, I, T, V))
    M = len(frames)
    tau = [0.0] * M
    fx = fy = fz = nx = ny = nz = 0.0
    for j in range(M - 1, -1, -1):
        Fx, Fy, Fz, Nx, Ny, Nz = wrenches[j]
        fx += Fx; fy += Fy; fz += Fz        # noqa: E702
        nx += Nx; ny += Ny; nz += Nz        # noqa: E702
        _, (ax, ay, az), (tx, ty, tz) = frames[j]
        tau[j] = ax * nx + ay * ny + az * nz + tx * fx + ty * fy + tz * fz
    return tau


# --------------------------------------------------------------------------
# batches, numpy (batch last; frames from kic.kernels.frames.pose_numpy)
# --------------------------------------------------------------------------
def link_motion(sR, sv, qdT, qddT=None, gravity=None):
    """World screw motion of every link, batch last: (w, v, aw, av), each (3, M, N),
    prefix sums of ``xi_n q'_n`` and ``xi_n q''_n + V_n x xi_n q'_n``."""
    w = prefix_sum(sR * qdT)
    v = prefix_sum(sv * qdT)
    dw = cross(w, sR)
    dw *= qdT
    dv = cross(w, sv)
    dv += cross(v, sR)
    dv *= qdT
    if qddT is not None:
        dw += sR * qddT
        dv += sv * qddT
    if gravity is not None:             # a uniform field: the base accelerates by -g
        dv[:, 0] -= gravity[:, None]
    return w, v, prefix_sum(dw), prefix_sum(dv)


def loads_from_motion(d, Fc, sR, sv, motion, qddT, gravity: bool) -> np.ndarray:
    """Joint loads (M, N) from the link motion ``motion`` = (w, v, aw, av) of the
    rates (velocity products only) plus the q'' terms and, if ``gravity``, the
    base acceleration -g: suffix sums of the link wrenches."""
    w, v, aw, av = motion
    dv = sv * qddT
    if gravity:
        dv[:, 0] -= d.gravity[:, None]
    return wrench_loads(d, Fc, sR, sv, w, v, aw + prefix_sum(sR * qddT), av + prefix_sum(dv))


def wrench_loads(d, Fc, sR, sv, w, v, aw, av) -> np.ndarray:
    """Joint loads (M, N) of the full link motion (w, v, aw, av), gravity included
    in av if wanted."""
    R, p = rotations(Fc)
    c = np.einsum("ijmn,jm->imn", R, d.com.T)
    c += p
    u = cross(w, c)
    u += v                               # centroid velocity
    F = cross(w, u)
    F += cross(aw, c)
    F += av
    F *= d.mass[None, :, None]
    # Euler's equation in link axes (constant inertia, one BLAS product per link),
    # rotated back; link-axis vectors are laid out (M, 3, N)
    wl = np.einsum("ijmn,imn->mjn", R, w)
    al = np.einsum("ijmn,imn->mjn", R, aw)
    Nl = cross(wl, np.matmul(d.inertia, wl), axis=1)
    Nl += np.matmul(d.inertia, al)
    n0 = np.einsum("ijmn,mjn->imn", R, Nl)
    n0 += cross(c, F)
    return (np.einsum("imn,imn->mn", sR, suffix_sum(n0))
            + np.einsum("imn,imn->mn", sv, suffix_sum(F)))


# the plain twins, bound once (the float kernels call them per link)
_plain_screw_step = plain(__name__, "screw_step")
_plain_link_wrench = plain(__name__, "link_wrench")


# the serial chain's one-pose recursion is called by compiled entry points only: no
# wrappers for calls from Python (its plain twin, jit.plain, runs from Python)
from .jit import compiled_callers_only  # noqa: E402  (after the marks it reads)

compiled_callers_only(__name__, only=("rnea_one",))
