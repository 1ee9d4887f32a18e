"""Frames of a mechanism's links, each algorithm once: compiled form and numpy twin.

==========================================  =========================  =====================
algorithm                                   compiled / plain floats    numpy (stacked)
==========================================  =========================  =====================
rotation about a unit axis (Rodrigues)      :func:`rodrigues`          :func:`rotation_matrices`
product of two rotations (9-tuples)         :func:`rotation_product`   (matmul)
product of two frames (12-tuples)           :func:`frame_product`      (matmul)
a frame given on a body of a tree           :func:`placed`
a joint's motion (R: rotation, P: slide)    (rodrigues, or the step)   :func:`joint_motions`
one joint of a serial chain (axis z)        :func:`frame_step`         (in :func:`pose_numpy`)
a point of a link in world coordinates      :func:`centroid`           (R c + p, inline)
a serial chain's frames, one pose           :func:`frames_into`        :func:`frames_floats`
a serial chain's frames, batch last         :func:`pose_lanes`         :func:`pose_numpy`
==========================================  =========================  =====================

A frame of the compiled and plain-float kernels is a 12-tuple: the rotation row
by row, then the origin.  A serial chain's joints are re-oriented so that every
axis is z (:class:`kic.backend.ChainData`): a revolute step is then a constant
3x4 product and a plane rotation of two columns, the cheapest exact form; the
general axis (trees, closed mechanisms) takes Rodrigues' formula.  The marked
functions are plain Python until :func:`kic.kernels.jit.load` compiles them.
"""
from __future__ import annotations

import math

import numpy as np

from .._array import numpy_cross
from .jit import jit, plain

__all__ = ["rodrigues", "rotation_tuple", "rotation_product",
           "rotation_matrices", "joint_motions", "frame_step", "centroid", "base_tuple",
           "frame_tuple", "is_identity", "identity_flags", "frame_product", "placed", "frame_into",
           "joint_screw", "frames_into", "frame_buffers", "pose_lanes",
           "frames_floats", "pose_numpy", "rotations"]


# --------------------------------------------------------------------------
# rotation about a unit axis
# --------------------------------------------------------------------------
@jit(inline=True)
def rodrigues(a0, a1, a2, x):
    """Rotation by angle ``x`` (rad) about the unit axis (a0, a1, a2), row by row
    (9-tuple): ``c I + s [a]x + (1 - c) a a^T``."""
    c = math.cos(x)
    s = math.sin(x)
    t = 1.0 - c
    return (c + t * a0 * a0, t * a0 * a1 - s * a2, t * a0 * a2 + s * a1,
            t * a1 * a0 + s * a2, c + t * a1 * a1, t * a1 * a2 - s * a0,
            t * a2 * a0 - s * a1, t * a2 * a1 + s * a0, c + t * a2 * a2)


@jit(inline=True)
def rotation_tuple(A):
    """The rotation part of a frame ``A`` ((3, >= 3) or (4, 4)), row by row (9-tuple)."""
    return (A[0, 0], A[0, 1], A[0, 2], A[1, 0], A[1, 1], A[1, 2], A[2, 0], A[2, 1], A[2, 2])


@jit(inline=True)
def rotation_product(A, B):
    """The product A B of two rotations given row by row (9-tuples), each entry
    summed over k = 0, 1, 2 in order."""
    a00, a01, a02, a10, a11, a12, a20, a21, a22 = A
    b00, b01, b02, b10, b11, b12, b20, b21, b22 = B
    return (a00 * b00 + a01 * b10 + a02 * b20, a00 * b01 + a01 * b11 + a02 * b21,
            a00 * b02 + a01 * b12 + a02 * b22, a10 * b00 + a11 * b10 + a12 * b20,
            a10 * b01 + a11 * b11 + a12 * b21, a10 * b02 + a11 * b12 + a12 * b22,
            a20 * b00 + a21 * b10 + a22 * b20, a20 * b01 + a21 * b11 + a22 * b21,
            a20 * b02 + a21 * b12 + a22 * b22)


def rotation_matrices(axis, angle) -> np.ndarray:
    """Rotations (..., 3, 3) by ``angle`` (...) rad about unit axes ``axis`` (..., 3)
    (leading axes broadcast): ``I + sin(x) K + (1 - cos(x)) K^2``, K = [a]x (the
    numpy twin of :func:`rodrigues`)."""
    a = np.asarray(axis, dtype=float)
    x = np.asarray(angle, dtype=float)[..., None, None]
    K = np.zeros(a.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2], K[..., 1, 2] = -a[..., 2], a[..., 1], -a[..., 0]
    K[..., 1, 0], K[..., 2, 0], K[..., 2, 1] = a[..., 2], -a[..., 1], a[..., 0]
    return np.eye(3) + np.sin(x) * K + (1.0 - np.cos(x)) * (K @ K)


def joint_motions(revolute: bool, axis, value) -> np.ndarray:
    """Homogeneous motions (..., 4, 4) of a joint with unit ``axis`` (..., 3) at
    ``value`` (...): a rotation by it (rad) for a revolute joint, a slide along
    the axis (m) for a prismatic one."""
    a = np.asarray(axis, dtype=float)
    x = np.asarray(value, dtype=float)
    lead = np.broadcast_shapes(a.shape[:-1], x.shape)
    T = np.zeros(lead + (4, 4))
    T[..., 3, 3] = 1.0
    if revolute:
        T[..., :3, :3] = rotation_matrices(a, x)
    else:
        T[..., :3, :3] = np.eye(3)
        T[..., :3, 3] = x[..., None] * a
    return T


# --------------------------------------------------------------------------
# one joint of a serial chain, 12-tuples
# --------------------------------------------------------------------------
@jit(inline=True)
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


@jit(inline=True)
def centroid(com, T):
    """World position (3-tuple, m) of a link's point ``com`` (link axes) at ``T``."""
    R00, R01, R02, R10, R11, R12, R20, R21, R22, px, py, pz = T
    c0, c1, c2 = com
    return (R00 * c0 + R01 * c1 + R02 * c2 + px, R10 * c0 + R11 * c1 + R12 * c2 + py,
            R20 * c0 + R21 * c1 + R22 * c2 + pz)


@jit(inline=True)
def base_tuple(base):
    """A placement (rows 0..2 of a (3, 4) or (4, 4) frame) as a 12-tuple frame."""
    return (base[0, 0], base[0, 1], base[0, 2], base[1, 0], base[1, 1], base[1, 2],
            base[2, 0], base[2, 1], base[2, 2], base[0, 3], base[1, 3], base[2, 3])


@jit(inline=True)
def frame_tuple(R, p):
    """A link frame from its rotation R (3x3, any layout) and origin p as a 12-tuple."""
    return (R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2],
            R[2, 0], R[2, 1], R[2, 2], p[0], p[1], p[2])


# --------------------------------------------------------------------------
# a serial chain's frames
# --------------------------------------------------------------------------
@jit(inline=True)
def is_identity(A, n):
    """The leading n x n block of ``A`` is exactly the identity (a sum of absolute
    differences: no branch per entry)."""
    d = 0.0
    for i in range(n):
        for c in range(n):
            d += abs(A[i, c] - (1.0 if i == c else 0.0))
    return d == 0.0


@jit(bare=True)
def identity_flags(origin, offset, T_a, T_b, flags):
    """Which products of a tree's frames need not be formed, for :func:`placed`
    and :func:`kic.kernels.closed_pose.tree_frames`: per joint j, bit 0 the
    rotation of ``origin[j]`` is the identity, bit 1 ``offset[j]`` is the
    identity; per loop side (N + 2 l + side, side 0 on ``T_a``, 1 on ``T_b``),
    bit 0 the rotation of its frame is the identity.  ``flags`` (N + 2L,) int."""
    N = origin.shape[0]
    for j in range(N):
        flags[j] = (1 if is_identity(origin[j], 3) else 0) | (2 if is_identity(offset[j], 4)
                                                               else 0)
    for l in range(T_a.shape[0]):
        flags[N + 2 * l] = 1 if is_identity(T_a[l], 3) else 0
        flags[N + 2 * l + 1] = 1 if is_identity(T_b[l], 3) else 0


@jit(inline=True)
def frame_product(A, B, rotation_is_identity):
    """The product A B of two frames (12-tuples, as :func:`base_tuple`), each
    entry summed over k = 0, 1, 2 in order, the origin's after A's own; where B's
    rotation is the identity (``rotation_is_identity``) A's rotation stands as it
    is (the product's numbers: a copy is not formed)."""
    a00, a01, a02, a10, a11, a12, a20, a21, a22, ax, ay, az = A
    b00, b01, b02, b10, b11, b12, b20, b21, b22, bx, by, bz = B
    if rotation_is_identity:
        R = (a00, a01, a02, a10, a11, a12, a20, a21, a22)
    else:
        R = rotation_product((a00, a01, a02, a10, a11, a12, a20, a21, a22),
                             (b00, b01, b02, b10, b11, b12, b20, b21, b22))
    return (R[0], R[1], R[2], R[3], R[4], R[5], R[6], R[7], R[8],
            a00 * bx + a01 * by + a02 * bz + ax, a10 * bx + a11 * by + a12 * bz + ay,
            a20 * bx + a21 * by + a22 * bz + az)


@jit(inline=True)
def placed(F, b, T, rotation_is_identity):
    """The frame ``T`` (4, 4) given on body b of a tree whose body frames are ``F``
    (N, 4, 4), in world coordinates (a 12-tuple): F[b] T, or T where b < 0 (the
    ground); ``rotation_is_identity``: T's rotation is (:func:`identity_flags`)."""
    Tt = base_tuple(T)
    if b < 0:
        return Tt
    return frame_product(base_tuple(F[b]), Tt, rotation_is_identity)


@jit(inline=True)
def frame_into(T, out):
    """The frame ``T`` (12-tuple) into the homogeneous ``out`` (4, 4)."""
    out[0, 0], out[0, 1], out[0, 2], out[0, 3] = T[0], T[1], T[2], T[9]
    out[1, 0], out[1, 1], out[1, 2], out[1, 3] = T[3], T[4], T[5], T[10]
    out[2, 0], out[2, 1], out[2, 2], out[2, 3] = T[6], T[7], T[8], T[11]
    out[3, 0], out[3, 1], out[3, 2], out[3, 3] = 0.0, 0.0, 0.0, 1.0


@jit(inline=True)
def joint_screw(revolute, s, o):
    """The world screw (6-tuple: angular part, velocity of the body point at the
    world origin) of a joint with world unit axis ``s`` through the point ``o``
    (3-tuples): revolute [s; o x s] (omega x (0 - o)), prismatic [0; s]."""
    s0, s1, s2 = s
    if revolute:
        o0, o1, o2 = o
        return (s0, s1, s2, o1 * s2 - o2 * s1, o2 * s0 - o0 * s2, o0 * s1 - o1 * s0)
    return (0.0, 0.0, 0.0, s0, s1, s2)


@jit(inline=True)
def joint_frame_into(j, T, O, isR, q, A, t, R, p):
    """The frame T (a base_tuple) carried over joint j at q[j] (frame_step), its
    screw and frame stored in row j of A, t, R, p (as :func:`frames_into`);
    returns (T, a, t_j) for a caller that uses them while they are at hand."""
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
    return T, a, tj


@jit(bare=True)
def frames_into(base, isR, O, q, A, t, R, p):
    """Joint screws (A (M, 3) rotation part, zero for P; t (M, 3) moment part) and
    link frames (R (M, 3, 3), p (M, 3)) of one configuration q (M,)."""
    T = base_tuple(base)
    for j in range(q.shape[0]):
        T = joint_frame_into(j, T, O, isR, q, A, t, R, p)[0]


@jit
def frame_buffers(M):
    """Work arrays of :func:`frames_into`: A, t (M, 3), R (M, 3, 3), p (M, 3)."""
    return np.empty((M, 3)), np.empty((M, 3)), np.empty((M, 3, 3)), np.empty((M, 3))


@jit
def pose_lanes(base, isR, O, qT, Fc, sR, sv):
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
                T = base_tuple(base)
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


def frames_floats(d, q) -> list:
    """Per joint ``(T, a, t)`` of one configuration ``q`` (Python floats): the link
    frame and the world joint screw, by the plain twin of :func:`frame_step`."""
    step = _plain_frame_step
    T = d.base_t
    out = []
    for (revolute, O), qj in zip(d.joints_t, q):
        T, a, t = step(T, O, revolute, qj)
        out.append((T, a, t))
    return out


def pose_numpy(d, qT: np.ndarray):
    """Link frames by columns, batch last, Fc[j, k, i, n] = T_j[i, k] (k = 3: the
    origin), and the joint screws sR, sv (3, M, N): (Fc, sR, sv) of qT (M, N), the
    numpy twin of :func:`pose_lanes` (one configuration: Python floats by
    :func:`frames_floats`, packed the same way)."""
    M, N = qT.shape
    if N == 1:
        frames = frames_floats(d, np.asarray(qT[:, 0], dtype=float).tolist())
        T = np.array([f[0] for f in frames])                  # (M, 12)
        Fc = np.empty((M, 4, 3, 1))
        Fc[:, :3, :, 0] = T[:, :9].reshape(M, 3, 3).transpose(0, 2, 1)
        Fc[:, 3, :, 0] = T[:, 9:]
        sR = np.array([f[1] for f in frames]).T[:, :, None]
        sv = np.array([f[2] for f in frames]).T[:, :, None]
        return Fc, sR, sv
    # the product with a joint's constant origin is one BLAS call; the joint
    # rotation mixes two contiguous columns
    Fc = np.empty((M, 4, 3, N))
    sR = np.zeros((3, M, N))
    sv = np.empty((3, M, N))
    T = np.empty((4, 3, N))
    T[:3] = d.base[:, :3].T[:, :, None]
    T[3] = d.base[:, 3][:, None]
    c, s = np.cos(qT), np.sin(qT)
    for j in range(M):
        Fj = Fc[j]
        np.matmul(d.O4[j].T, T.reshape(4, -1), out=Fj.reshape(4, -1))
        if d.isR[j]:
            x = Fj[0].copy()
            Fj[0] *= c[j]
            Fj[0] += s[j] * Fj[1]
            Fj[1] *= c[j]
            Fj[1] -= s[j] * x
            sR[:, j] = Fj[2]
            sv[:, j] = numpy_cross(Fj[3], Fj[2])        # r x s: moment of the screw
        else:
            Fj[3] += qT[j] * Fj[2]
            sv[:, j] = Fj[2]
        T = Fj
    return Fc, sR, sv


def rotations(Fc):
    """(R (3, 3, M, N), p (3, M, N)) views of the frames of :func:`pose_numpy`."""
    return Fc[:, :3].transpose(2, 1, 0, 3), Fc[:, 3].transpose(1, 0, 2)


# the plain twin, bound once (the float kernels call it per joint)
_plain_frame_step = plain(__name__, "frame_step")
