"""Compiled kernels for closed mechanisms: one pose, stage by stage (internal).

A :class:`kic.closed_plan.ClosedPlan` (its buffers unpacked by name,
:class:`kic.kernels.layout.Plan`) describes the spanning tree of every joint
phi, the closures ``c(phi) = 0`` and the independent blocks of dependent
joints.  For one pose the stages here

1. assemble (:func:`assemble_pose`): Newton on the dependent joints of every
   block (steps limited to :data:`~kic.settings.NEWTON_MAX_STEP` in max-norm),
   converged when every reduced position row ``|r| < tol * L_char`` and every
   orientation row ``|r| < tol``;
2. form the transfer ``G^phi_q`` (:func:`transfer_pose`: rows q_idx the
   identity, rows of block b ``-A_b^-1 B_b``), with each block's dimensionless
   2-norm condition number and the sign of ``det A_b`` (the assembly mode);
3. phi' = G q', phi'' = G q'' - A^-1 b (:func:`pose_rates`; b the closure's
   velocity-product accelerations at phi'' = 0), block by block;
4. run one recursive Newton-Euler pass over the tree (:func:`rnea`: world-frame
   screws, each joint once; gravity as a base acceleration -g; the pass is
   :func:`kic.kernels.rnea.tree_loads`, a serial chain's in tree form):
   ``T_q = G^T T_phi`` (:func:`project`);
5. ``I*_q = G^T H G`` by composite rigid bodies on the tree
   (:func:`inertia_pose`: :func:`kic.kernels.inertia.tree_inertia_one`, the
   composites of the serial chain's I* summed over subtrees).

The physics is kic's transfer (docs/theory.md); only the evaluation differs: the
tree instead of overlapping chains, compiled loops instead of array passes.
The per-pose work arrays are a :class:`Work` (one per call, reused by every
pose of a batch).  The linear algebra is :mod:`kic.kernels.linalg`'s.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..settings import EXACT_START, NEWTON_MAX_STEP
from .frames import (base_tuple, frame_into, frame_product, identity_flags, joint_screw, placed,
                     rodrigues, rotation_product)
from .inertia import is_massless, tree_inertia_one
from .jit import jit
from .layout import unpack
from .linalg import cholesky_solve, condition_leading, lu_factor, lu_solve
from .rnea import screw_step, tree_loads

__all__ = ["OK", "NOT_ASSEMBLED", "SINGULAR_BLOCK", "SINGULAR_DYNAMICS", "OTHER_MODE",
           "Work", "work", "block_size", "tree_frames", "loop_frames", "closure_residual",
           "worst_residual", "closure_jacobian", "assemble_pose", "transfer_pose",
           "pose_rates", "rnea", "project", "inertia_pose", "is_massless", "pose_frames",
           "pose_jacobian", "newton_step", "in_mode", "settle", "settled", "actuator_solve",
           "all_finite", "batch", "AT_PHI",
           "ASSEMBLE", "INVERSE_DYNAMICS", "FORWARD_DYNAMICS", "ACTUATOR_LOADS", "TRANSFER",
           "INERTIA", "RATES", "ASSEMBLED_TRANSFER", "ACTUATED_FORWARD_DYNAMICS"]

# the codes of kic.Status
OK, NOT_ASSEMBLED, SINGULAR_BLOCK, SINGULAR_DYNAMICS, OTHER_MODE = 0, 1, 2, 3, 4

# what a batch evaluates (the argument ``what`` of :func:`batch`)
(ASSEMBLE, INVERSE_DYNAMICS, FORWARD_DYNAMICS, ACTUATOR_LOADS, TRANSFER, INERTIA, RATES,
 ASSEMBLED_TRANSFER, ACTUATED_FORWARD_DYNAMICS) = range(9)

Work = namedtuple("Work", [
    "F",            # (N, 4, 4) body frames
    "S",            # (N, 6) world screws [omega; v at the world origin]
    "X",            # (L, 2, 4, 4) the frames of both sides of every loop
    "r",            # (R,) reduced closure residuals (or velocity-product rows)
    "Jr",           # (R, N) reduced closure Jacobian
    "LU",           # (B, nb, nb) the blocks' LU factors
    "piv",          # (B, nb) their row swaps
    "G",            # (N, M) G^phi_q
    "phid",         # (N,) phi'
    "phidd",        # (N,) phi''
    "V",            # (N, 6) screw velocities
    "Av",           # (N, 6) velocity-product accelerations
    "acc",          # (N, 6) the phi'' part of the bodies' accelerations
    "fo",           # (N, 6) wrenches (force, moment about the world origin)
    "tau",          # (N,) joint loads T_phi
    "vec",          # (R,) a right-hand side (Newton step, a column of G)
    "block",        # (nb, nb) one block (to factor, or made dimensionless)
    "block_work",   # (nb, nb) work of the condition number
    "flags",        # (N + 2L,) int: the frames' identity rotations (identity_flags)
    "Ic",           # (N, 10, 1) the subtrees' composite inertias (tree_inertia_one)
    "HG",           # (N, M) its joint-space inertia times G
    "massless",     # (N,) bool: the bodies that carry nothing
    "qcol",         # (N,) int: the coordinate a unit row of G is, else -1
])
"""The work arrays of one pose, by name (N joints, M coordinates, L loops, R
reduced rows, B blocks of at most nb rows)."""


@jit(inline=True)
def largest_block(block_row):
    """The rows of the largest block (at least 1)."""
    nb = 1
    for b in range(block_row.shape[0] - 1):
        nb = max(nb, block_row[b + 1] - block_row[b])
    return nb


@jit(inline=True)
def block_size(P):
    """The rows of the largest block of plan P (at least 1)."""
    return largest_block(P.block_row)


@jit(inline=True)
def new_work(N, M, R, L, B, nb):
    """The work arrays of one pose (N joints, M coordinates, R reduced rows, L
    loops, B blocks of at most nb rows), reused by every pose of a call: views
    of one float, one int and one bool allocation (zeroed), as three allocations
    cost a one-pose call far less than twenty-three."""
    f = np.zeros(N * (16 + 6 + M + 1 + 1 + 24 + 1 + 10 + M) + L * 32 + R * (2 + N)
                 + B * nb * nb + 2 * nb * nb)
    # arrays of one shape are slices of one view (each reshape is a few hundred
    # instructions to compile, an index a few dozen)
    F = f[:16 * N].reshape((N, 4, 4))
    k = 16 * N
    screws = f[k:k + 30 * N].reshape((5, N, 6))
    k += 30 * N
    X = f[k:k + 32 * L].reshape((L, 2, 4, 4))
    k += 32 * L
    Jr = f[k:k + R * N].reshape((R, N))
    k += R * N
    G = f[k:k + N * M].reshape((N, M))
    k += N * M
    blocks = f[k:k + (B + 2) * nb * nb].reshape((B + 2, nb, nb))
    k += (B + 2) * nb * nb
    Ic = f[k:k + 10 * N].reshape((N, 10, 1))
    k += 10 * N
    HG = f[k:k + N * M].reshape((N, M))
    k += N * M
    i = np.zeros(B * nb + 2 * N + 2 * L, np.int64)
    return Work(F=F, S=screws[0], X=X, r=f[k:k + R], Jr=Jr, LU=blocks[:B],
                piv=i[:B * nb].reshape((B, nb)), G=G, phid=f[k + R:k + R + N],
                phidd=f[k + R + N:k + R + 2 * N], V=screws[1], Av=screws[2], acc=screws[3],
                fo=screws[4], tau=f[k + R + 2 * N:k + R + 3 * N],
                vec=f[k + R + 3 * N:k + 2 * R + 3 * N], block=blocks[B],
                block_work=blocks[B + 1], flags=i[B * nb:B * nb + N + 2 * L], Ic=Ic, HG=HG,
                massless=np.zeros(N, np.bool_), qcol=i[B * nb + N + 2 * L:])


@jit(inline=True)
def work(P):
    """The work arrays of one pose for plan P (reused by every pose of a call),
    with the identity flags of P's frames (a call with another plan's numbers
    sets them again: :func:`kic.kernels.frames.identity_flags`)."""
    W = new_work(P.N, P.M, P.R, P.L, P.B, largest_block(P.block_row))
    identity_flags(P.origin, P.offset, P.T_a, P.T_b, W.flags)
    return W


# --------------------------------------------------------------------------
# frames, closure residual and Jacobian
# --------------------------------------------------------------------------
@jit(bare=True)
def tree_frames(parent, order, isR, axis, origin, offset, phi, F, S, flags):
    """Body frames F (N, 4, 4) and world screws S (N, 6) = [omega; v at the origin]:
    joint j's frame is F_parent origin_j, turned (R) or slid (P) by phi_j about its
    axis, then offset_j; a product with an identity rotation (``flags``, from
    :func:`kic.kernels.frames.identity_flags`) is not formed (the same numbers)."""
    for jj in range(order.shape[0]):
        j = order[jj]
        fl = flags[j]
        r00, r01, r02, r10, r11, r12, r20, r21, r22, o0, o1, o2 = placed(F, parent[j], origin[j],
                                                                         fl & 1)
        a0, a1, a2 = axis[j, 0], axis[j, 1], axis[j, 2]
        s0 = r00 * a0 + r01 * a1 + r02 * a2
        s1 = r10 * a0 + r11 * a1 + r12 * a2
        s2 = r20 * a0 + r21 * a1 + r22 * a2
        S[j, 0], S[j, 1], S[j, 2], S[j, 3], S[j, 4], S[j, 5] = joint_screw(
            isR[j], (s0, s1, s2), (o0, o1, o2))
        x = phi[j]
        if isR[j]:
            r00, r01, r02, r10, r11, r12, r20, r21, r22 = rotation_product(
                (r00, r01, r02, r10, r11, r12, r20, r21, r22), rodrigues(a0, a1, a2, x))
        else:
            o0 += x * s0
            o1 += x * s1
            o2 += x * s2
        J = (r00, r01, r02, r10, r11, r12, r20, r21, r22, o0, o1, o2)
        if not fl & 2:
            J = frame_product(J, base_tuple(offset[j]), False)
        frame_into(J, F[j])


@jit(bare=True)
def loop_frames(body_a, T_a, body_b, T_b, F, X, flags):
    """Frames X (L, 2, 4, 4) of the two sides of every loop (side B on the ground: T_b;
    ``flags`` as :func:`tree_frames`)."""
    N = F.shape[0]
    for l in range(body_a.shape[0]):
        for side in range(2):       # one placement in the code: half of it to compile
            body = body_a[l] if side == 0 else body_b[l]
            T = T_a[l] if side == 0 else T_b[l]
            frame_into(placed(F, body, T, flags[N + 2 * l + side] & 1), X[l, side])


@jit(inline=True)
def reduced_row(U, l, c, k, w, p):
    """Reduced row c of loop l (``U`` (L, 6, 6) its basis): ``U[:, c] . [w; p]`` for a
    loop that closes in orientation and position (k = 6), ``U[:3, c] . p`` for
    one that closes in position (k = 3); w, p 3-tuples."""
    if k == 6:
        return U[l, 0, c] * w[0] + U[l, 1, c] * w[1] + U[l, 2, c] * w[2] \
            + U[l, 3, c] * p[0] + U[l, 4, c] * p[1] + U[l, 5, c] * p[2]
    return U[l, 0, c] * p[0] + U[l, 1, c] * p[1] + U[l, 2, c] * p[2]


@jit(bare=True)
def closure_residual(loop_k, loop_r, loop_row, U, X, r):
    """Reduced closure residuals r (R,): U^T [vex(R_A R_B^T); p_A - p_B] or U^T (p_A - p_B)
    (no allocations: a one-pose call is a few microseconds)."""
    for l in range(loop_k.shape[0]):
        k = loop_k[l]
        row = loop_row[l]
        # both sides' frames read once (an entry of a 4-index array is about a
        # hundred instructions to compile, of a tuple none)
        a00, a01, a02, a10, a11, a12, a20, a21, a22, ax, ay, az = base_tuple(X[l, 0])
        b00, b01, b02, b10, b11, b12, b20, b21, b22, bx, by, bz = base_tuple(X[l, 1])
        p0 = ax - bx
        p1 = ay - by
        p2 = az - bz
        if k == 6:
            # E = R_A R_B^T (entry (i, k): row i of R_A times row k of R_B); vex of
            # its skew part
            e01 = a00 * b10 + a01 * b11 + a02 * b12
            e02 = a00 * b20 + a01 * b21 + a02 * b22
            e10 = a10 * b00 + a11 * b01 + a12 * b02
            e12 = a10 * b20 + a11 * b21 + a12 * b22
            e20 = a20 * b00 + a21 * b01 + a22 * b02
            e21 = a20 * b10 + a21 * b11 + a22 * b12
            w0 = 0.5 * (e21 - e12)
            w1 = 0.5 * (e02 - e20)
            w2 = 0.5 * (e10 - e01)
        else:
            w0 = w1 = w2 = 0.0
        for c in range(loop_r[l]):
            r[row + c] = reduced_row(U, l, c, k, (w0, w1, w2), (p0, p1, p2))


@jit(bare=True)
def closure_jacobian(parent, loop_k, loop_r, loop_row, body_a, body_b, U, S, X, Jr):
    """Reduced closure Jacobian Jr (R, N): U^T [s; s x (x - o)] (R) or U^T [0; s] (P)
    summed over the joints from each side's body to the ground, side B subtracted."""
    R, N = Jr.shape
    for i in range(R):
        for j in range(N):
            Jr[i, j] = 0.0
    for l in range(loop_k.shape[0]):
        k = loop_k[l]
        row = loop_row[l]
        for side in range(2):
            j = body_a[l] if side == 0 else body_b[l]
            sign = 1.0 if side == 0 else -1.0
            x0, x1, x2 = X[l, side, 0, 3], X[l, side, 1, 3], X[l, side, 2, 3]
            while j >= 0:
                w0, w1, w2 = S[j, 0], S[j, 1], S[j, 2]
                # velocity of the side's point: v_O + omega x x
                v0 = S[j, 3] + w1 * x2 - w2 * x1
                v1 = S[j, 4] + w2 * x0 - w0 * x2
                v2 = S[j, 5] + w0 * x1 - w1 * x0
                for c in range(loop_r[l]):
                    Jr[row + c, j] += sign * reduced_row(U, l, c, k, (w0, w1, w2), (v0, v1, v2))
                j = parent[j]


@jit(inline=True)
def pose_frames(P, W, phi):
    """Body frames and screws, the loops' side frames and the reduced closure
    residuals at phi (into W.F, W.S, W.X, W.r)."""
    tree_frames(P.parent, P.order, P.is_revolute, P.axis, P.origin, P.offset, phi, W.F, W.S,
                W.flags)
    loop_frames(P.body_a, P.T_a, P.body_b, P.T_b, W.F, W.X, W.flags)
    closure_residual(P.loop_k, P.loop_r, P.loop_row, P.U, W.X, W.r)


@jit(inline=True)
def pose_jacobian(P, W):
    """The reduced closure Jacobian (W.Jr) from the frames and screws in W."""
    closure_jacobian(P.parent, P.loop_k, P.loop_r, P.loop_row, P.body_a, P.body_b, P.U, W.S,
                     W.X, W.Jr)


@jit(inline=True)
def worst_residual(row_is_rot, L_char, r, r0, r1):
    """The largest dimensionless residual of rows r0:r1: orientation rows as they
    are (rad), position rows over the characteristic length; NaN propagates."""
    worst = 0.0
    for i in range(r0, r1):
        e = abs(r[i]) if row_is_rot[i] else abs(r[i]) / L_char
        if not (e <= worst):
            worst = e
    return worst


@jit(inline=True)
def newton_step(dep, block_row, row_is_rot, Lc, tol, r, Jr, piv, Ab, step, phi, polished):
    """One Newton step on every block whose residual is not yet within ``tol``
    (every block once ``polished``), its length limited to NEWTON_MAX_STEP in
    max-norm; False when a block's LU meets a zero pivot."""
    for b in range(block_row.shape[0] - 1):
        r0, r1 = block_row[b], block_row[b + 1]
        nb = r1 - r0
        if worst_residual(row_is_rot, Lc, r, r0, r1) < tol and not polished:
            continue
        for i in range(nb):
            for c in range(nb):
                Ab[i, c] = Jr[r0 + i, dep[r0 + c]]
            step[i] = -r[r0 + i]
        if lu_factor(Ab, nb, piv[b]) == 0.0:
            return False
        lu_solve(Ab, nb, piv[b], step)
        lim = 0.0
        for i in range(nb):
            lim = max(lim, abs(step[i]))
        f = 1.0 if lim <= NEWTON_MAX_STEP else NEWTON_MAX_STEP / lim
        for i in range(nb):
            phi[dep[r0 + i]] += f * step[i]
    return True


AT_PHI = -1
"""``max_iter`` of :func:`newton` that takes no step: the frames, residual and
closure Jacobian at phi as it is (its residual reported, not corrected)."""


@jit(bare=True)
def newton(parent, order, isR, axis, origin, offset, loop_k, loop_r, loop_row, body_a, T_a,
           body_b, T_b, U, dep, block_row, row_is_rot, Lc, tol, max_iter, F, S, X, r, Jr, piv,
           Ab, step, phi, flags):
    """Newton on the dependent joints from phi (q already in place); leaves the
    frames F, screws S, side frames X and closure Jacobian Jr of the final phi
    (``flags`` as :func:`tree_frames`); ``max_iter`` :data:`AT_PHI`: no step.
    Returns (status, dimensionless worst residual).  Each stage is called at
    one place, and the function returns at one place (a call site compiles the
    callee's arguments once more, an exit the release of every argument)."""
    R = r.shape[0]
    worst = 0.0
    polished = False
    status = -1                             # iterating
    it = 0
    while status < 0:
        tree_frames(parent, order, isR, axis, origin, offset, phi, F, S, flags)
        loop_frames(body_a, T_a, body_b, T_b, F, X, flags)
        closure_residual(loop_k, loop_r, loop_row, U, X, r)
        worst = worst_residual(row_is_rot, Lc, r, 0, R)
        done = max_iter == AT_PHI or (worst < tol and (polished or worst < EXACT_START))
        if not done and (it >= max_iter or not np.isfinite(worst)):
            status = NOT_ASSEMBLED
        else:
            closure_jacobian(parent, loop_k, loop_r, loop_row, body_a, body_b, U, S, X, Jr)
            # once within the tolerance, one more full step takes the solution to
            # rounding, so it does not depend on where Newton started
            polished = worst < tol
            if done:
                status = OK
            elif not newton_step(dep, block_row, row_is_rot, Lc, tol, r, Jr, piv, Ab, step,
                                 phi, polished):
                status = SINGULAR_BLOCK
            elif it == max(max_iter, 0) + 1:
                status = NOT_ASSEMBLED
        it += 1
    return status, worst


@jit(inline=True)
def assemble_pose(P, W, phi):
    """:func:`newton` on plan P with the work W (the stages get the arrays they
    use, not the tuples: a call boundary costs a reference count per array)."""
    return newton(P.parent, P.order, P.is_revolute, P.axis, P.origin, P.offset, P.loop_k,
                  P.loop_r, P.loop_row, P.body_a, P.T_a, P.body_b, P.T_b, P.U, P.dep,
                  P.block_row, P.row_is_rot, P.L_char, P.tol, P.max_iter, W.F, W.S, W.X, W.r,
                  W.Jr, W.piv, W.block, W.vec, phi, W.flags)


@jit(bare=True)
def transfer(isR, row_is_rot, dep, block_row, q_idx, Lc, maxc, Jr, LU, piv, G, col, As, Aw,
             cond, dsign):
    """G^phi_q (G) from the closure Jacobian Jr; the blocks' LU factors stay in LU,
    piv for the acceleration closure.  Fills cond and dsign (B,); returns status.
    ``col`` (R,), ``As``, ``Aw`` (nb, nb) are work."""
    N, M = G.shape
    for j in range(N):
        for m in range(M):
            G[j, m] = 0.0
    for m in range(M):
        G[q_idx[m], m] = 1.0
    status = OK
    for b in range(block_row.shape[0] - 1):
        r0, r1 = block_row[b], block_row[b + 1]
        nb = r1 - r0
        A = LU[b]
        for i in range(nb):
            for c in range(nb):
                a = Jr[r0 + i, dep[r0 + c]]
                A[i, c] = a
                # dimensionless: position rows / L, prismatic columns * L
                if not row_is_rot[r0 + i]:
                    a /= Lc
                if not isR[dep[r0 + c]]:
                    a *= Lc
                As[i, c] = a
        cond[b] = condition_leading(As, nb, nb, Aw)
        dsign[b] = lu_factor(A, nb, piv[b])
        if dsign[b] == 0.0 or not (cond[b] < maxc):
            status = SINGULAR_BLOCK
            continue
        for m in range(M):
            for i in range(nb):
                col[i] = -Jr[r0 + i, q_idx[m]]
            lu_solve(A, nb, piv[b], col)
            for i in range(nb):
                G[dep[r0 + i], m] = col[i]
    return status


@jit(inline=True)
def transfer_pose(P, W, cond, dsign):
    """:func:`transfer` of plan P from the closure Jacobian in W (into W.G, W.LU, W.piv)."""
    return transfer(P.is_revolute, P.row_is_rot, P.dep, P.block_row, P.q_idx, P.L_char,
                    P.max_condition, W.Jr, W.LU, W.piv, W.G, W.vec, W.block, W.block_work,
                    cond, dsign)


@jit(bare=True)
def rates(parent, order, loop_k, loop_r, loop_row, body_a, body_b, U, dep, block_row, S, X,
          r, LU, piv, G, qd, qdd, phid, phidd, V, Av, col):
    """phi' = G q' (phid) and phi'' = G q'' - A^-1 b (phidd); screw velocities V and
    the velocity-product accelerations Av (at phi'' = 0, no gravity); r and col
    are overwritten."""
    N, M = G.shape
    for j in range(N):
        a = 0.0
        b = 0.0
        for m in range(M):
            a += G[j, m] * qd[m]
            b += G[j, m] * qdd[m]
        phid[j] = a
        phidd[j] = b
    for jj in range(N):
        j = order[jj]
        p = parent[j]
        if p >= 0:
            Vp = (V[p, 0], V[p, 1], V[p, 2], V[p, 3], V[p, 4], V[p, 5],
                  Av[p, 0], Av[p, 1], Av[p, 2], Av[p, 3], Av[p, 4], Av[p, 5])
        else:
            Vp = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        (V[j, 0], V[j, 1], V[j, 2], V[j, 3], V[j, 4], V[j, 5],
         Av[j, 0], Av[j, 1], Av[j, 2], Av[j, 3], Av[j, 4], Av[j, 5]) = screw_step(
            (S[j, 0], S[j, 1], S[j, 2]), (S[j, 3], S[j, 4], S[j, 5]), phid[j], 0.0, Vp)
    # closure velocity-product accelerations, reduced: r <- b
    for l in range(loop_k.shape[0]):
        k = loop_k[l]
        aw0 = aw1 = aw2 = ap0 = ap1 = ap2 = 0.0      # [angular; the point's] of A minus B
        for side in range(2):
            j = body_a[l] if side == 0 else body_b[l]
            if j < 0:
                continue
            sign = 1.0 if side == 0 else -1.0
            x0, x1, x2 = X[l, side, 0, 3], X[l, side, 1, 3], X[l, side, 2, 3]
            w0, w1, w2, v0, v1, v2 = V[j, 0], V[j, 1], V[j, 2], V[j, 3], V[j, 4], V[j, 5]
            a0, a1, a2, b0, b1, b2 = Av[j, 0], Av[j, 1], Av[j, 2], Av[j, 3], Av[j, 4], Av[j, 5]
            u0 = v0 + w1 * x2 - w2 * x1           # the point's velocity
            u1 = v1 + w2 * x0 - w0 * x2
            u2 = v2 + w0 * x1 - w1 * x0
            aw0 += sign * a0
            aw1 += sign * a1
            aw2 += sign * a2
            ap0 += sign * (b0 + a1 * x2 - a2 * x1 + w1 * u2 - w2 * u1)
            ap1 += sign * (b1 + a2 * x0 - a0 * x2 + w2 * u0 - w0 * u2)
            ap2 += sign * (b2 + a0 * x1 - a1 * x0 + w0 * u1 - w1 * u0)
        row = loop_row[l]
        for c in range(loop_r[l]):
            r[row + c] = reduced_row(U, l, c, k, (aw0, aw1, aw2), (ap0, ap1, ap2))
    for b in range(block_row.shape[0] - 1):
        r0, r1 = block_row[b], block_row[b + 1]
        nb = r1 - r0
        for i in range(nb):
            col[i] = r[r0 + i]
        lu_solve(LU[b], nb, piv[b], col)
        for i in range(nb):
            phidd[dep[r0 + i]] -= col[i]


@jit(inline=True)
def pose_rates(P, W, qd, qdd):
    """:func:`rates` of plan P at the transfer in W (into W.phid, W.phidd, W.V, W.Av)."""
    rates(P.parent, P.order, P.loop_k, P.loop_r, P.loop_row, P.body_a, P.body_b, P.U, P.dep,
          P.block_row, W.S, W.X, W.r, W.LU, W.piv, W.G, qd, qdd, W.phid, W.phidd, W.V, W.Av,
          W.vec)


@jit(inline=True)
def project(G, tau, out):
    """out = G^T tau."""
    N, M = G.shape
    for m in range(M):
        acc = 0.0
        for j in range(N):
            acc += G[j, m] * tau[j]
        out[m] = acc


@jit(inline=True)
def rnea(P, W, with_gravity):
    """The joint loads of plan P's tree at the rates in W (into W.tau): the tree's
    recursive Newton-Euler pass, :func:`kic.kernels.rnea.tree_loads`."""
    tree_loads(P.parent, P.order, P.mass, P.com, P.inertia, W.F, W.S, W.V, W.Av, W.phidd,
               P.gravity, with_gravity, W.acc, W.fo, W.tau)


@jit(inline=True)
def inertia_pose(P, W, I):
    """I*_q of plan P at the transfer in W: the tree's composite rigid bodies,
    :func:`kic.kernels.inertia.tree_inertia_one`."""
    tree_inertia_one(P.parent, P.order, P.mass, P.com, P.inertia, W.F, W.S, W.G, I, W.Ic,
                     W.HG, W.massless, W.qcol)


# --------------------------------------------------------------------------
# batches of poses
# --------------------------------------------------------------------------
@jit(inline=True)
def in_mode(dsign, mode):
    """The blocks' det signs agree with the assembly mode (B,) of +1/-1 (0: any
    sign), or ``mode`` is empty (no mode asked for)."""
    for b in range(mode.shape[0]):
        if mode[b] != 0.0 and dsign[b] != mode[b]:
            return False
    return True


@jit(inline=True)
def settled(st, st2, phi, phi_row, dsign, mode):
    """A pose's status from its assembly (``st``) and transfer (``st2``) statuses
    and the assembly mode; phi into ``phi_row`` where assembled."""
    if st != OK:
        # a zero pivot on the way: not assembled (cond, dsign: at the last iterate)
        return SINGULAR_BLOCK
    for j in range(phi.shape[0]):
        phi_row[j] = phi[j]
    if st2 != OK:
        return SINGULAR_BLOCK
    if not in_mode(dsign, mode):
        return OTHER_MODE
    return OK


@jit(inline=True)
def settle(P, W, st, phi, phi_row, cond, dsign, mode):
    """After the assembly (status ``st``): the transfer, the blocks' conditions
    and det signs (``cond``, ``dsign`` (B,)) and the assembly mode; phi into
    ``phi_row`` where assembled (it stays as it is where not).  Returns the
    pose's status."""
    if st == NOT_ASSEMBLED:
        return st
    return settled(st, transfer_pose(P, W, cond, dsign), phi, phi_row, dsign, mode)


@jit(inline=True)
def all_finite(a):
    """Every entry of the flat array ``a`` is finite."""
    for i in range(a.shape[0]):
        if not np.isfinite(a[i]):
            return False
    return True


DynamicsWork = namedtuple("DynamicsWork", [
    "Tq",           # (M,) coordinate loads
    "zero",         # (M,) zeros (q'' = 0)
    "Im",           # (M, M) I*, or G^a^T G^a
    "Ga",           # (Na, M) the actuated rows of G
    "Gs",           # (Na, M) the same, dimensionless
    "Gw",           # (Na, M) work of its condition number
    "rhs",          # (max(Na, M),) a right-hand side
    "sol",          # (M,) a solution
    "At",           # (M, M) G^a^T to factor
    "pv",           # (M,) its row swaps
])


@jit(inline=True)
def dynamics_work(M, Na):
    """The dynamics' work arrays (M coordinates, Na actuators): views of one float
    and one int allocation (zeroed)."""
    nr = max(Na, M)
    f = np.zeros(M * (3 + 2 * M) + 3 * Na * M + nr)
    square = f[:2 * M * M].reshape((2, M, M))          # Im, At
    ga = f[2 * M * M:2 * M * M + 3 * Na * M].reshape((3, Na, M))     # Ga, Gs, Gw
    k = 2 * M * M + 3 * Na * M
    return DynamicsWork(Tq=f[k:k + M], zero=f[k + M:k + 2 * M], Im=square[0], Ga=ga[0],
                        Gs=ga[1], Gw=ga[2], rhs=f[k + 3 * M:k + 3 * M + nr],
                        sol=f[k + 2 * M:k + 3 * M], At=square[1],
                        pv=np.zeros(M, np.int64))


@jit(bare=True)
def actuator_solve(isR, q_idx, Lc, maxc, G, act, Tq, Ga, Gs, Gw, rhs, sol, Im, At, pv, out):
    """Loads of the actuated joints ``act`` (into ``out`` (Na,)) that give the
    coordinate loads Tq: ``(G^a)^T tau_a = T_q`` (Na = M) or its least-norm
    solution ``tau_a = G^a (G^a^T G^a)^-1 T_q`` (Na > M).  Returns (status,
    dimensionless 2-norm condition of G^a): SINGULAR_DYNAMICS where it is not
    below max_condition or a solve fails.  Ga, Gs, Gw (Na, M), rhs (max(Na, M),),
    sol (M,), Im, At (M, M), pv (M,) are work."""
    M = G.shape[1]
    Na = act.shape[0]
    for i in range(Na):
        a = act[i]
        for m in range(M):
            g = G[a, m]
            Ga[i, m] = g
            # dimensionless: prismatic coordinates * L, prismatic actuators / L
            if not isR[q_idx[m]]:
                g *= Lc
            if not isR[a]:
                g /= Lc
            Gs[i, m] = g
    cond = condition_leading(Gs, Na, M, Gw)
    status = SINGULAR_DYNAMICS              # until a solve succeeds (one exit: see newton)
    if not (cond < maxc):
        pass
    elif Na == M:
        for i in range(M):
            for m in range(M):
                At[m, i] = Ga[i, m]
            rhs[i] = Tq[i]
        if lu_factor(At, M, pv) != 0.0:
            lu_solve(At, M, pv, rhs)
            for i in range(M):
                out[i] = rhs[i]
            status = OK
    else:
        # least-norm loads: tau = G (G^T G)^-1 T_q
        for a in range(M):
            for b in range(M):
                s = 0.0
                for i in range(Na):
                    s += Ga[i, a] * Ga[i, b]
                Im[a, b] = s
        if cholesky_solve(Im, Tq, Im, sol):
            for i in range(Na):
                s = 0.0
                for m in range(M):
                    s += Ga[i, m] * sol[m]
                out[i] = s
            status = OK
    return status, cond


@jit(inline=True)
def actuator_pose(P, W, act, D, out):
    """:func:`actuator_solve` of plan P at the transfer in W for the loads D.Tq."""
    return actuator_solve(P.is_revolute, P.q_idx, P.L_char, P.max_condition, W.G, act, D.Tq,
                          D.Ga, D.Gs, D.Gw, D.rhs, D.sol, D.Im, D.At, D.pv, out)


@jit(inline=True)
def output_width(what, N, M, Na):
    """The columns of one pose's output for ``what``."""
    if what == INVERSE_DYNAMICS or what == FORWARD_DYNAMICS or \
            what == ACTUATED_FORWARD_DYNAMICS:
        return M
    if what == ACTUATOR_LOADS:
        return Na
    if what == TRANSFER or what == ASSEMBLED_TRANSFER:
        return N * M
    if what == INERTIA:
        return M * M
    if what == RATES:
        return 2 * N
    return 0


@jit(inline=True)
def first_bad(q, qd, x, phi0):
    """1-4 for the first of q, qd, x, phi0 that is not finite, else 0 (one loop
    over the four: the check compiled once)."""
    k = 0
    for a in (q, qd, x, phi0):
        k += 1
        if not all_finite(a):
            return k
    return 0


@jit(inline=True)
def start(q_idx, phi, q, phi0, last, G_last, predict):
    """Where a pose's assembly starts (into phi): the start values ``phi0``, or on
    a path (``predict``) the tangent predictor from the last pose, phi + G^phi_q dq
    (Newton then needs a step fewer; it polishes to rounding anyway)."""
    N, M = G_last.shape
    if predict:
        for j in range(N):
            acc = last[j]
            for m in range(M):
                acc += G_last[j, m] * (q[m] - last[q_idx[m]])
            phi[j] = acc
    else:
        for j in range(N):
            phi[j] = phi0[j]


@jit(inline=True)
def rows_of(a, width):
    """The rows of a flat array ``a`` of rows of ``width`` (1 for width 0)."""
    return a.shape[0] // width if width > 0 else 1


@jit(inline=True)
def net_loads(actuated, G, act, x, Tq, rhs):
    """rhs = the applied coordinate loads minus Tq: x itself, or with ``actuated`` the
    actuators' loads x (Na,) at the coordinates, (G^a)^T x (G^a: rows ``act`` of G)."""
    for m in range(rhs.shape[0]):
        if actuated:
            applied = 0.0
            for i in range(act.shape[0]):
                applied += G[act[i], m] * x[i]
        else:
            applied = x[m]
        rhs[m] = applied - Tq[m]


@jit(inline=True)
def clear_rows(buf, n, wide, at, B):
    """n rows of ``wide`` in buf: NaN but the B determinant signs from ``at`` on, 0."""
    buf[:] = np.nan
    for t in range(n):
        for b in range(B):
            buf[t * wide + at + b] = 0.0


@jit(inline=True)
def same_as_before(a, w, t, n):
    """Row t of ``a`` (n flat rows of w; one row serves every t) equals row t - 1."""
    if n <= 1:
        return True
    for i in range(w):
        if a[w * t + i] != a[w * (t - 1) + i]:
            return False
    return True


@jit(inline=True)
def keep_pose(phi, G, last, G_last):
    """Remember a pose (its phi and G^phi_q) as the start of the next on a path.
    Copies here and in :func:`batch` go element by element: an array assigned to
    a slice compiles numba's formatting of its shape-mismatch message (1.6 s of
    CPU at first use)."""
    N, M = G_last.shape
    for j in range(N):
        last[j] = phi[j]
        for m in range(M):
            G_last[j, m] = G[j, m]


@jit(inline=True)
def one_pose_result(buf, K, N, B, wide, phi_one):
    """One pose's results from its row of :func:`batch`: (its output row, status,
    worst block condition, bad), its phi written into ``phi_one``; bad -1 where
    the output row is not all finite (a failed pose's NaN, or an overflow)."""
    cond = 1.0 if B == 0 else buf[K + N + 1]
    for b in range(1, B):
        cond = max(cond, buf[K + N + 1 + b])
    for j in range(N):
        phi_one[j] = buf[K + j]
    return buf[:K].copy(), int(buf[wide - 1]), cond, 0 if all_finite(buf[:K]) else -1


@jit
def batch(fbuf, ibuf, what, q, qd, x, act, phi0, path, mode, phi_one):
    """The one compiled entry of a closed model's poses, for one pose and for
    batches alike (one compiled function: each level of compiled calls
    re-optimizes and re-emits everything it calls, seconds at first use).

    ``what`` one of ASSEMBLE, INVERSE_DYNAMICS (x = q''), FORWARD_DYNAMICS (x =
    tau), ACTUATOR_LOADS (x = q''), TRANSFER and INERTIA at given phi0,
    ASSEMBLED_TRANSFER (G^phi_q after assembly), ACTUATED_FORWARD_DYNAMICS (x =
    tau_a of the joints ``act``), RATES (phi', phi''; x = q'').  q, qd, x, phi0
    are flat: n rows (of M, M, M or Na, N) or one row (used for every pose; the
    caller checks that).  ``mode`` (B,) of +1/-1 (0: any), or empty: the
    assembly mode a pose must be in (else OTHER_MODE).

    Returns ``(out, status, condition, bad)``; ``bad`` is 1-4 when q, qd, x or
    phi0 is not finite (nothing evaluated), else 0.  ``phi_one`` (N,): one pose,
    its phi written there, out (K,) its output row (K as
    :func:`output_width`), its status and worst block condition, ``bad`` -1
    where out is not all finite (its caller then needs no pass over it).
    ``phi_one`` empty: a batch, out the flat buffer (n rows of K + N + 3 + 2B:
    out K | phi N | residual | condition B | det sign B | actuation condition |
    status), status and condition zero.  Each array handed back to Python
    costs a few hundred nanoseconds: one pose hands back one.

    The stages get the plan's and the work's arrays by name here, once: a named
    tuple handed to a helper is copied with a reference count per member, which
    made this entry's compiled code three times longer (and its first call
    seconds slower)."""
    bad = first_bad(q, qd, x, phi0)
    if bad:     # before the plan's and the work's arrays: an exit that drops none
        return np.empty(0), 0, 0.0, bad
    P = unpack(fbuf, ibuf)
    N, M, B, R, Na = P.N, P.M, P.B, P.R, act.shape[0]
    parent, order, isR, q_idx, dep, block_row = (P.parent, P.order, P.is_revolute, P.q_idx,
                                                 P.dep, P.block_row)
    loop_k, loop_r, loop_row, body_a, body_b, U = (P.loop_k, P.loop_r, P.loop_row, P.body_a,
                                                   P.body_b, P.U)
    mass, com, inertia, row_is_rot, Lc, maxc = (P.mass, P.com, P.inertia, P.row_is_rot,
                                                P.L_char, P.max_condition)
    # work(P), written out: the plan's tuple is not copied into another scope
    W = new_work(N, M, R, P.L, B, largest_block(block_row))
    identity_flags(P.origin, P.offset, P.T_a, P.T_b, W.flags)
    F, S, X, r, Jr, LU, piv, G = W.F, W.S, W.X, W.r, W.Jr, W.LU, W.piv, W.G
    V, Av, phid, phidd, tau, col = W.V, W.Av, W.phid, W.phidd, W.tau, W.vec
    D = dynamics_work(M, Na)
    Tq, Im, rhs, sol = D.Tq, D.Im, D.rhs[:M], D.sol
    one = phi_one.shape[0] > 0
    nq, nqd, nphi = rows_of(q, M), rows_of(qd, M), rows_of(phi0, N)
    wx = Na if what == ACTUATED_FORWARD_DYNAMICS else M
    nx = rows_of(x, wx)
    # the step from one pose's row to the next: 0 where one row serves every pose
    sq, sqd, sx, sphi = (M if nq > 1 else 0, M if nqd > 1 else 0, wx if nx > 1 else 0,
                         N if nphi > 1 else 0)
    n = 1 if one else max(nq, nqd, nx, nphi)
    K = output_width(what, N, M, Na)
    wide = K + N + 3 + 2 * B
    # the poses' locals and, for one pose, its output row in one allocation (the
    # results are copied out of it); a batch's rows in one output buffer (each
    # array handed back to Python costs about a microsecond)
    loc = np.empty(2 * N + N * M + (wide if one else 0))
    phi, last = loc[:N], loc[N:2 * N]
    G_last = loc[2 * N:2 * N + N * M].reshape((N, M))
    buf = loc[2 * N + N * M:] if one else np.empty(n * wide)
    clear_rows(buf, n, wide, K + N + 1 + B, B)
    have_last = False
    # off a path a row with the joint values and start of the row before is that pose
    # again (the same numbers): its assembly and transfer, still in the work arrays,
    # serve (several rates, loads or accelerations at one pose)
    reuse, assembled = not path and what != TRANSFER and what != INERTIA, OK
    for t in range(n):
        row = buf[t * wide:(t + 1) * wide]
        qt = q[sq * t:sq * t + M]
        if reuse and t > 0 and same_as_before(q, M, t, nq) and same_as_before(phi0, N, t, nphi):
            for i in range(K, K + N + 1 + 2 * B):   # no slice = array: see keep_pose
                row[i] = buf[(t - 1) * wide + i]
            row[wide - 1] = assembled
            if assembled != OK:
                continue
        else:
            start(q_idx, phi, qt, phi0[sphi * t:sphi * t + N], last, G_last, path and have_last)
            row[wide - 1] = OK
            if what != TRANSFER and what != INERTIA:
                for m in range(M):
                    phi[q_idx[m]] = qt[m]
            # TRANSFER, INERTIA: at the given phi (its residual reported, not corrected)
            st, res = newton(parent, order, isR, P.axis, P.origin, P.offset, loop_k, loop_r,
                             loop_row, body_a, P.T_a, body_b, P.T_b, U, dep, block_row,
                             row_is_rot, Lc, P.tol,
                             AT_PHI if what == TRANSFER or what == INERTIA else P.max_iter, F,
                             S, X, r, Jr, piv, W.block, col, phi, W.flags)
            row[K + N] = res
            if st == NOT_ASSEMBLED:
                row[wide - 1] = assembled = st
                continue
            cond, dsign = row[K + N + 1:K + N + 1 + B], row[K + N + 1 + B:K + N + 1 + 2 * B]
            st2 = transfer(isR, row_is_rot, dep, block_row, q_idx, Lc, maxc, Jr, LU, piv, G,
                           col, W.block, W.block_work, cond, dsign)
            assembled = settled(st, st2, phi, row[K:K + N], dsign, mode)
            row[wide - 1] = assembled
            if assembled != OK:
                continue
        keep_pose(phi, G, last, G_last)    # a path continues from regular poses in the mode
        have_last = True
        if what == ASSEMBLE:
            continue
        out = row[:K]
        if what == TRANSFER or what == ASSEMBLED_TRANSFER:
            for j in range(N):
                for m in range(M):
                    out[j * M + m] = G[j, m]
            continue
        if what == INERTIA or what == FORWARD_DYNAMICS or what == ACTUATED_FORWARD_DYNAMICS:
            # I* at one call site (rates and loads below leave F, S and G as they are)
            tree_inertia_one(parent, order, mass, com, inertia, F, S, G, Im, W.Ic, W.HG,
                             W.massless, W.qcol)
        if what == INERTIA:
            for a in range(M):
                for b in range(M):
                    out[a * M + b] = Im[a, b]
            continue
        xt = x[sx * t:sx * t + wx]
        rates(parent, order, loop_k, loop_r, loop_row, body_a, body_b, U, dep, block_row, S,
              X, r, LU, piv, G, qd[sqd * t:sqd * t + M],
              xt if what == RATES or what == INVERSE_DYNAMICS or what == ACTUATOR_LOADS
              else D.zero, phid, phidd, V, Av, col)
        if what == RATES:
            for j in range(N):
                out[j] = phid[j]
                out[N + j] = phidd[j]
            continue
        tree_loads(parent, order, mass, com, inertia, F, S, V, Av, phidd, P.gravity, True, W.acc,
                   W.fo, tau)
        project(G, tau, Tq)
        if what == INVERSE_DYNAMICS:
            for m in range(M):
                out[m] = Tq[m]
        elif what == FORWARD_DYNAMICS or what == ACTUATED_FORWARD_DYNAMICS:
            net_loads(what == ACTUATED_FORWARD_DYNAMICS, G, act, xt, Tq, rhs)
            if not cholesky_solve(Im, rhs, Im, sol):
                row[wide - 1] = SINGULAR_DYNAMICS
                continue
            for m in range(M):
                out[m] = sol[m]
        else:
            status, row[K + N + 1 + 2 * B] = actuator_solve(
                isR, q_idx, Lc, maxc, G, act, Tq, D.Ga, D.Gs, D.Gw, D.rhs, sol, Im, D.At, D.pv,
                out)
            row[wide - 1] = status
    if not one:
        return buf, 0, 0.0, 0
    return one_pose_result(buf, K, N, B, wide, phi_one)


@jit(signature="void(f8[::1], i8[::1], f8[:, ::1], f8[:, ::1], f8[:, :, ::1])")
def closure_rows(fbuf, ibuf, phi, r, J):
    """The reduced closure residual ``r`` (n, R) and Jacobian ``J = dc/dphi``
    (n, R, N) at each of the joint values ``phi`` (n, N): the tree's frames and
    screws (:func:`pose_frames`), then :func:`pose_jacobian`; rows in loop order
    (loop l's rows after those of the loops before it, as
    :meth:`kic.loops.LoopSystem.jacobian` numbers them), not in block order.
    Not finite where phi is not.  What coordinate selection scores and the
    projection onto the closure iterates on, a pose a few microseconds."""
    P = unpack(fbuf, ibuf)
    W = work(P)
    for t in range(phi.shape[0]):
        pose_frames(P, W, phi[t])
        pose_jacobian(P, W)
        rows_in_loop_order(P, W, r[t], J[t])


@jit(inline=True)
def rows_in_loop_order(P, W, r, J):
    """The reduced closure rows ``W.r`` and Jacobian ``W.Jr`` into ``r`` (R,) and
    ``J`` (R, N) in loop order (loop l's rows after those of the loops before it)."""
    k = 0
    for l in range(P.L):
        for c in range(P.loop_r[l]):
            r[k] = W.r[P.loop_row[l] + c]
            for j in range(P.N):
                J[k, j] = W.Jr[P.loop_row[l] + c, j]
            k += 1


@jit(signature="void(f8[::1], i8[::1], f8[:, ::1], f8[:, ::1], f8[:, :, ::1], f8[:, ::1], "
               "f8[:, :, ::1], f8[:, ::1])")
def joint_space(fbuf, ibuf, phi, phid, H, b, J, c):
    """The tree held together by its closures, in every joint value: at each of
    the joint values and rates ``phi``, ``phid`` (n, N) the tree's joint-space
    inertia ``H`` (n, N, N) (:func:`kic.kernels.inertia.tree_inertia_one` with
    the identity for G), the loads ``b`` (n, N) its joints need at phi'' = 0
    (velocity products and gravity: :func:`kic.kernels.rnea.tree_loads`), the
    reduced closure Jacobian ``J`` (n, R, N) and the closure's velocity-product
    accelerations ``c`` (n, R) (:func:`rates` over the identity, no block
    solved), rows in loop order as :func:`closure_rows`: ``H phi'' + b =
    J^T lambda``, ``J phi'' + c = 0``."""
    P = unpack(fbuf, ibuf)
    W = work(P)
    N = P.N
    eye = np.zeros((N, N))
    for j in range(N):
        eye[j, j] = 1.0
    zero = np.zeros(N)
    HG = np.empty((N, N))               # (W.HG is (N, M): G^phi_q's columns)
    for t in range(phi.shape[0]):
        pose_frames(P, W, phi[t])
        pose_jacobian(P, W)
        # phi' = I phid exactly, the screw velocities and the closure rows' velocity
        # products into W.r (block_row[:1]: no block to solve)
        rates(P.parent, P.order, P.loop_k, P.loop_r, P.loop_row, P.body_a, P.body_b, P.U,
              P.dep, P.block_row[:1], W.S, W.X, W.r, W.LU, W.piv, eye, phid[t], zero, W.phid,
              W.phidd, W.V, W.Av, W.vec)
        tree_loads(P.parent, P.order, P.mass, P.com, P.inertia, W.F, W.S, W.V, W.Av, zero,
                   P.gravity, True, W.acc, W.fo, b[t])
        tree_inertia_one(P.parent, P.order, P.mass, P.com, P.inertia, W.F, W.S, eye, H[t],
                         W.Ic, HG, W.massless, W.qcol)
        rows_in_loop_order(P, W, c[t], J[t])


# the stages above run inside compiled entry points only (batch here, the design
# batches of closed_lanes, the integrator): compiled without Python's wrappers
from .jit import compiled_callers_only  # noqa: E402  (after the marks it reads)

compiled_callers_only(__name__, but=("batch", "closure_rows", "joint_space"))
