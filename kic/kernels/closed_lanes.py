"""Compiled kernels for design batches: the poses of a design side by side in lanes (internal).

A design batch evaluates D designs of one structure (one int buffer, a float
buffer per design, :mod:`kic.kernels.layout`) at n poses and K accelerations
each, in one call (:func:`design_loads`).  Each pose is assembled alone
(:mod:`kic.kernels.closed_pose`); then the poses of a design wait in lanes,
:data:`~kic.settings.LANE_WIDTH` side by side (the last axis of every lane
array), for the stages that vectorize across poses: the transfer of the poses
at rest (:func:`transfer_lanes`, by the lane variants of
:mod:`kic.kernels.linalg`), I* and the gravity load by composite rigid bodies
(:func:`composite_inertia`), and the actuations' condition numbers
(:func:`actuation_flush`).  Each pose gets the operations it would get alone,
so no pose's numbers depend on the others' (tests/test_designs.py compares
them with the per-pose path).

The lanes stay only where a benchmark shows they pay (benchmarks/designs.py:
the Stewart platform's design, 6.7 -> 3.5 ms); they use kic's one linear
algebra and the plan's one layout.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..settings import EXACT_START, FROBENIUS_MARGIN, LANE_WIDTH
from .closed_pose import (NOT_ASSEMBLED, OK, OTHER_MODE, SINGULAR_BLOCK, SINGULAR_DYNAMICS,
                          assemble_pose, block_size, closure_jacobian, closure_residual,
                          in_mode, loop_frames, pose_rates, project, rnea, settle,
                          tree_frames, work, worst_residual)
from .frames import identity_flags
from .inertia import tree_inertia
from .jit import jit
from .layout import unpack
from .linalg import (cholesky_solve, condition_leading, condition_numbers_lanes, lu_factor,
                     lu_factor_lanes, lu_solve_columns, lu_solve_lanes, round_robin_pairs)

__all__ = ["design_loads", "composite_inertia", "transfer_lanes", "actuation_flush",
           "LaneWork", "ActuationWork", "one_design"]


# --------------------------------------------------------------------------
# I* and the gravity load by composite rigid bodies
# --------------------------------------------------------------------------
@jit(inline=True)
def composite_inertia(nl, P, FL, SL, GL, qcol, LW, rest):
    """I*_q and, for the lanes at rest (``rest``, q' = 0), the gravity load
    T0 = G^T T_phi from the same composites: the tree's composite rigid bodies
    (:func:`kic.kernels.inertia.tree_inertia`, the per-pose path's I* in lanes),
    for the first ``nl`` of V poses of one design side by side.  Per lane:
    ``FL`` (N, 12, V) the rows 0..2 of the joints' frames F, ``SL`` (N, 6, V)
    their screws, ``GL`` (N, M, V) G^phi_q; out ``LW.IL`` (M, M, V), ``LW.T0L``
    (M, V) (lanes not at rest keep theirs); the rest of ``LW`` is work.
    ``qcol[j]`` is m where joint j is coordinate m, else -1."""
    tree_inertia(nl, P.parent, P.order, P.mass, P.com, P.inertia, P.gravity, FL, SL, GL, qcol,
                 LW.empty, LW.Ic, LW.HG, LW.Tphi, LW.fw, LW.hw, LW.IL, LW.T0L, rest)


# --------------------------------------------------------------------------
# the transfer of the poses at rest
# --------------------------------------------------------------------------
@jit(bare=True)
def block_into_lanes(nl, isR, row_is_rot, dep, r0, nb, Lc, JA, A, fro):
    """Block b (rows r0:r0 + nb) of each lane's closure Jacobian into ``A`` (nb,
    nb, V), and the square of its dimensionless Frobenius norm into ``fro``:
    position rows / L, prismatic columns * L (a bound: products, not divisions)."""
    inv_L = 1.0 / Lc
    for u in range(nl):
        fro[u] = 0.0
    for i in range(nb):
        rs = 1.0 if row_is_rot[r0 + i] else inv_L
        for c in range(nb):
            cs = 1.0 if isR[dep[r0 + c]] else Lc
            for u in range(nl):
                a = JA[r0 + i, c, u]
                A[i, c, u] = a
                a = a * rs * cs
                fro[u] += a * a


@jit(bare=True)
def inverse_frobenius(nl, isR, row_is_rot, dep, r0, nb, M, Lc, X, fri):
    """The square of the Frobenius norm of each lane's scaled block's inverse,
    Dc^-1 A^-1 Dr^-1 (A_s = Dr A Dc), from the columns M: M + nb of ``X``."""
    inv_L = 1.0 / Lc
    for u in range(nl):
        fri[u] = 0.0
    for i in range(nb):
        cs = 1.0 if isR[dep[r0 + i]] else inv_L
        for c in range(nb):
            rs = 1.0 if row_is_rot[r0 + c] else Lc
            for u in range(nl):
                a = X[i, M + c, u] * cs * rs
                fri[u] += a * a


@jit(bare=True)
def block_condition(row_is_rot, isR, dep, Lc, JA, r0, nb, u, As, Aw):
    """The dimensionless 2-norm condition of lane u's block (rows r0:r0 + nb), as
    :func:`~kic.kernels.closed_pose.transfer_pose` forms it (As, Aw (nb, nb) work)."""
    for i in range(nb):
        for c in range(nb):
            a = JA[r0 + i, c, u]
            if not row_is_rot[r0 + i]:
                a /= Lc
            if not isR[dep[r0 + c]]:
                a *= Lc
            As[i, c] = a
    return condition_leading(As, nb, nb, Aw)


@jit(bare=True)
def transfer_lanes(nl, P, JA, JQ, pending, GL, LW):
    """:func:`~kic.kernels.closed_pose.transfer_pose` for the first ``nl`` of V
    poses side by side in lanes: the blocks' LU factors
    (:func:`~kic.kernels.linalg.lu_factor_lanes`), each block's M columns of
    ``-A_b^-1 B_b`` and its nb columns of ``A_b^-1``
    (:func:`~kic.kernels.linalg.lu_solve_lanes`); G^phi_q into ``GL`` (N, M, V)
    where ``pending``.  In: ``JA`` (R, nb, V) each closure row's entries in its
    block's columns (``dep``), ``JQ`` (R, M, V) in the coordinates' columns.
    Out: ``LW.DS`` (B, V) the blocks' det signs, ``LW.ST`` (V,) SINGULAR_BLOCK
    where a block is singular, else OK.

    A block is singular where its dimensionless 2-norm condition is not below
    max_condition; the Frobenius condition ``kf`` of the scaled block bounds it
    (kappa_2 <= kf <= nb kappa_2) and decides where it is FROBENIUS_MARGIN away
    from the threshold, :func:`block_condition` elsewhere (or where not finite)."""
    isR, row_is_rot, dep, block_row = P.is_revolute, P.row_is_rot, P.dep, P.block_row
    M, Lc, maxc = P.M, P.L_char, P.max_condition
    A, X, sgn, ST, DS, PVL = LW.LUL, LW.XL, LW.sgnL, LW.ST, LW.DS, LW.PVL
    fro, fri, bigL, As, Aw = LW.fro, LW.fri, LW.bigL, LW.As, LW.Aw
    for u in range(nl):
        ST[u] = OK
    for b in range(P.B):
        r0, r1 = block_row[b], block_row[b + 1]
        nb = r1 - r0
        block_into_lanes(nl, isR, row_is_rot, dep, r0, nb, Lc, JA, A, fro)
        lu_factor_lanes(A, nb, PVL, sgn, bigL, nl)
        # the M + nb right-hand sides: -B_b and the identity
        for i in range(nb):
            for m in range(M):
                for u in range(nl):
                    X[i, m, u] = -JQ[r0 + i, m, u]
            for c in range(nb):
                for u in range(nl):
                    X[i, M + c, u] = 1.0 if i == c else 0.0
        lu_solve_lanes(A, nb, PVL, X, M + nb, nl)
        inverse_frobenius(nl, isR, row_is_rot, dep, r0, nb, M, Lc, X, fri)
        for u in range(nl):
            DS[b, u] = sgn[u]
            if not pending[u] or ST[u] != OK:
                continue
            kf = np.sqrt(fro[u] * fri[u])
            if sgn[u] == 0.0 or kf > FROBENIUS_MARGIN * nb * maxc:
                ST[u] = SINGULAR_BLOCK            # kappa_2 >= kappa_F / nb >= maxc
            elif not (kf * FROBENIUS_MARGIN < maxc) and not (
                    block_condition(row_is_rot, isR, dep, Lc, JA, r0, nb, u, As, Aw) < maxc):
                ST[u] = SINGULAR_BLOCK
        for i in range(nb):
            j = dep[r0 + i]
            for m in range(M):
                for u in range(nl):
                    GL[j, m, u] = X[i, m, u] if pending[u] else GL[j, m, u]


# --------------------------------------------------------------------------
# the actuations
# --------------------------------------------------------------------------
ActuationWork = namedtuple("ActuationWork", [
    "PGa",          # (NQ, Na, M) G^a of each waiting pose
    "PGs",          # (NQ, Na, M) the same, dimensionless
    "design",       # (NQ,) int its design
    "pose",         # (NQ,) int its pose
    "max_condition",    # (NQ,) its design's threshold
    "pairs",        # the Jacobi pairs of M columns (round robin)
    "work",         # (M, Na, NQ) the lanes of the condition numbers
    "norms",        # (M, NQ)
    "gam", "cs", "sn", "cond",      # (NQ,)
    "live", "turned",               # (NQ,) bool
    "At",           # (M, M) G^a^T, factored
    "pv",           # (M,) int its row swaps
    "TA",           # (M, K) the K right-hand sides
    "Ch",           # (M, M) G^a^T G^a (least-norm loads)
    "rhs", "sol",   # (M,)
])


@jit
def actuation_work(M, Na, K, NQ):
    return ActuationWork(
        PGa=np.empty((NQ, Na, M)), PGs=np.empty((NQ, Na, M)), design=np.zeros(NQ, np.int64),
        pose=np.zeros(NQ, np.int64), max_condition=np.empty(NQ), pairs=round_robin_pairs(M),
        work=np.empty((M, Na, NQ)), norms=np.empty((M, NQ)), gam=np.empty(NQ),
        cs=np.empty(NQ), sn=np.empty(NQ), cond=np.empty(NQ), live=np.empty(NQ, np.bool_),
        turned=np.empty(NQ, np.bool_), At=np.empty((M, M)), pv=np.zeros(M, np.int64),
        TA=np.empty((M, K)), Ch=np.empty((M, M)), rhs=np.empty(M), sol=np.empty(M))


@jit(bare=True)
def actuation_flush(count, AW, loads, status, acond, aloads):
    """The actuation of the ``count`` poses waiting in the buffers (design
    AW.design[u], pose AW.pose[u]; G^a in AW.PGa, its dimensionless copy in
    AW.PGs): the condition numbers (side by side,
    :func:`~kic.kernels.linalg.condition_numbers_lanes`), SINGULAR_DYNAMICS past
    the design's max_condition, else the actuator loads of the K accelerations
    from ``loads``: ``(G^a)^T tau_a = T_q`` (Na = M) or its least-norm solution."""
    condition_numbers_lanes(AW.PGs, count, AW.work, AW.norms, AW.gam, AW.cs, AW.sn, AW.pairs,
                            AW.cond, AW.live, AW.turned)
    PGa, At, TA, pv, Ch, rhs, sol = AW.PGa, AW.At, AW.TA, AW.pv, AW.Ch, AW.rhs, AW.sol
    design, pose, cond, max_condition = AW.design, AW.pose, AW.cond, AW.max_condition
    M = At.shape[0]
    K = loads.shape[2]
    Na = PGa.shape[1]
    for u in range(count):
        d = design[u]
        t = pose[u]
        acond[d, t] = cond[u]
        if not (acond[d, t] < max_condition[u]):
            status[d, t] = SINGULAR_DYNAMICS
            continue
        if Na == M:
            for i in range(M):
                for m in range(M):
                    At[m, i] = PGa[u, i, m]
            if lu_factor(At, M, pv) == 0.0:
                status[d, t] = SINGULAR_DYNAMICS
                continue
            for i in range(M):
                for k in range(K):
                    TA[i, k] = loads[d, t, k, i]
            lu_solve_columns(At, M, pv, TA)
            for k in range(K):
                for i in range(M):
                    aloads[d, t, k, i] = TA[i, k]
            continue
        # least-norm loads: tau = G (G^T G)^-1 T_q
        for k in range(K):
            for a in range(M):
                rhs[a] = loads[d, t, k, a]
                for b in range(M):
                    s = 0.0
                    for i in range(Na):
                        s += PGa[u, i, a] * PGa[u, i, b]
                    Ch[a, b] = s
            if not cholesky_solve(Ch, rhs, Ch, sol):
                status[d, t] = SINGULAR_DYNAMICS
                break
            for i in range(Na):
                s = 0.0
                for m in range(M):
                    s += PGa[u, i, m] * sol[m]
                aloads[d, t, k, i] = s
        if status[d, t] == SINGULAR_DYNAMICS:
            for k in range(K):
                for i in range(Na):
                    aloads[d, t, k, i] = np.nan


# --------------------------------------------------------------------------
# design batches: D designs x n poses x K accelerations
# --------------------------------------------------------------------------
LaneWork = namedtuple("LaneWork", [
    "FL",           # (N, 12, V) rows 0..2 of the body frames
    "SL",           # (N, 6, V) the screws
    "GL",           # (N, M, V) G^phi_q (the coordinates' unit rows stay)
    "IL",           # (M, M, V) I*
    "T0L",          # (M, V) the bias (q'' = 0)
    "rest",         # (V,) bool: the pose is at rest (q' = 0)
    "lane_t",       # (V,) int: its pose
    "pending",      # (V,) bool: its transfer waits in the lanes
    "alive",        # (V,) bool: it reaches the dynamics
    "JA",           # (R, nb, V) closure rows in their block's columns
    "JQ",           # (R, M, V) closure rows in the coordinates' columns
    "PHL",          # (N, V) joint values
    "stL",          # (V,) int: the status of its assembly
    "DS",           # (B, V) the blocks' det signs
    "ST",           # (V,) int: the status of its transfer
    "LUL",          # (nb, nb, V) a block's LU factors
    "PVL",          # (nb, V) int: their row swaps
    "XL",           # (nb, M + nb, V) right-hand sides, then solutions
    "fro", "fri", "sgnL", "bigL",   # (V,)
    "Ic",           # (N, 10, V) composite inertias
    "HG",           # (N, M, V) H G
    "Tphi",         # (N, V) joint loads of gravity at rest
    "fw",           # (6, V)
    "hw",           # (V,)
    "empty",        # (N,) bool: a subtree carries nothing
    "As", "Aw",     # (nb, nb) one block, dimensionless, and its Jacobi work
])


@jit
def lane_work(P, V):
    N, M, R, B = P.N, P.M, P.R, P.B
    nb = block_size(P)
    GL = np.zeros((N, M, V))
    for m in range(M):
        for u in range(V):
            GL[P.q_idx[m], m, u] = 1.0
    return LaneWork(
        FL=np.empty((N, 12, V)), SL=np.empty((N, 6, V)), GL=GL, IL=np.empty((M, M, V)),
        T0L=np.empty((M, V)), rest=np.empty(V, np.bool_), lane_t=np.empty(V, np.int64),
        pending=np.zeros(V, np.bool_), alive=np.empty(V, np.bool_), JA=np.empty((R, nb, V)),
        JQ=np.empty((R, M, V)), PHL=np.empty((N, V)), stL=np.empty(V, np.int64),
        DS=np.empty((B, V)), ST=np.empty(V, np.int64), LUL=np.empty((nb, nb, V)),
        PVL=np.empty((nb, V), np.int64), XL=np.empty((nb, M + nb, V)), fro=np.empty(V),
        fri=np.empty(V), sgnL=np.empty(V), bigL=np.empty(V), Ic=np.empty((N, 10, V)),
        HG=np.empty((N, M, V)), Tphi=np.empty((N, V)), fw=np.empty((6, V)), hw=np.empty(V),
        empty=np.empty(N, np.bool_), As=np.empty((nb, nb)), Aw=np.empty((nb, nb)))


DesignWork = namedtuple("DesignWork", [
    "phi", "last",  # (N,) joint values, and the last of a path
    "T0", "zero",   # (M,) a bias, zeros
    "cond",         # (B,) the blocks' conditions
    "col_scale",    # (M,) the coordinates' scales (L for prismatic ones)
    "prism_act",    # (Na,) bool: prismatic actuators
    "qcol",         # (N,) int: the coordinate a joint is, else -1
    "row_block",    # (R,) int: the block of each closure row
    "xT", "TK",     # (M, K) accelerations, loads
    "x_at",         # (2,) int: the (design, pose) of x in xT
])


@jit
def design_work(P, Na, K):
    N, M = P.N, P.M
    qcol = np.full(N, -1, np.int64)
    for m in range(M):
        qcol[P.q_idx[m]] = m
    row_block = np.empty(P.R, np.int64)
    for b in range(P.B):
        for i in range(P.block_row[b], P.block_row[b + 1]):
            row_block[i] = b
    return DesignWork(
        phi=np.empty(N), last=np.empty(N), T0=np.empty(M), zero=np.zeros(M),
        cond=np.empty(P.B), col_scale=np.empty(M), prism_act=np.empty(Na, np.bool_),
        qcol=qcol, row_block=row_block,
        xT=np.empty((M, K)), TK=np.empty((M, K)), x_at=np.full(2, -1, np.int64))


DesignOut = namedtuple("DesignOut", ["loads", "aloads", "I", "phi", "status", "resid", "dsign",
                                     "acond"])


@jit(inline=True)
def clear_pose(O, d, t):
    """NaN in every output of pose t of design d (loops: a slice would cost a view)."""
    loads, aloads, I, phi = O.loads, O.aloads, O.I, O.phi
    for k in range(loads.shape[2]):
        for a in range(loads.shape[3]):
            loads[d, t, k, a] = np.nan
        for i in range(aloads.shape[3]):
            aloads[d, t, k, i] = np.nan
    for a in range(I.shape[2]):
        for b in range(I.shape[3]):
            I[d, t, a, b] = np.nan
    for j in range(phi.shape[2]):
        phi[d, t, j] = np.nan
    O.resid[d, t] = np.nan
    O.acond[d, t] = np.nan


@jit(bare=True)
def into_lane(F, S, Jr, phi, dep, q_idx, block_row, row_block, FL, SL, JA, JQ, PHL, u,
              with_jacobian):
    """A pose's frames and screws into lane u and, ``with_jacobian``, its closure
    Jacobian's block and coordinate columns and its joint values (for the
    transfer in the lanes)."""
    N, M, R = F.shape[0], q_idx.shape[0], Jr.shape[0]
    for j in range(N):
        for i in range(3):
            for c in range(4):
                FL[j, 4 * i + c, u] = F[j, i, c]
        for c in range(6):
            SL[j, c, u] = S[j, c]
    if not with_jacobian:
        return
    for i in range(R):
        r0 = block_row[row_block[i]]      # the first row of its block
        for c in range(block_row[row_block[i] + 1] - r0):
            JA[i, c, u] = Jr[i, dep[r0 + c]]
        for m in range(M):
            JQ[i, m, u] = Jr[i, q_idx[m]]
    for j in range(N):
        PHL[j, u] = phi[j]


@jit(inline=True)
def transfer_now(P, W, LW, DW, u, st, phi, qd, at_rest, mode, phi_row, dsign_row):
    """The transfer of a pose that cannot wait for the lanes (the next start of
    a path, or the rates of a moving pose, need it) and, moving, its bias by one
    Newton-Euler pass at q'' = 0, into lane u.  Returns the pose's status."""
    st = settle(P, W, st, phi, phi_row, DW.cond, dsign_row, mode)
    if st != OK:
        return st
    N, M = P.N, P.M
    last = DW.last
    for j in range(N):
        last[j] = phi[j]
    if not at_rest:
        # the bias where it moves (the composites give it at rest)
        pose_rates(P, W, qd, DW.zero)
        rnea(P, W, True)
        T0, T0L = DW.T0, LW.T0L
        project(W.G, W.tau, T0)
        for m in range(M):
            T0L[m, u] = T0[m]
    G, GL = W.G, LW.GL
    for j in range(N):
        for m in range(M):
            GL[j, m, u] = G[j, m]
    return OK


@jit(bare=True)
def settle_lanes(P, d, nl, LW, mode, O):
    """The statuses, det signs and joint values of the lanes whose transfer was
    formed in the lanes; ``LW.alive`` False where a pose fails."""
    pending, lane_t, alive, stL, ST, DS, PHL = LW.pending, LW.lane_t, LW.alive, LW.stL, LW.ST, \
        LW.DS, LW.PHL
    dsign, status, phi = O.dsign, O.status, O.phi
    for u in range(nl):
        if not pending[u]:
            continue
        tu = lane_t[u]
        for b in range(P.B):
            dsign[d, tu, b] = DS[b, u]
        alive[u] = False
        if stL[u] != OK:
            status[d, tu] = SINGULAR_BLOCK
            continue
        for j in range(P.N):
            phi[d, tu, j] = PHL[j, u]
        if ST[u] != OK:
            status[d, tu] = SINGULAR_BLOCK
            continue
        if not in_mode(dsign[d, tu], mode):
            status[d, tu] = OTHER_MODE
            continue
        alive[u] = True


@jit(inline=True)
def lane_loads(u, d, LW, DW, x, O):
    """I* of lane u and the loads ``T_q = T0 + I* q''`` of its K accelerations
    (the K sums are independent: innermost, overlapped, each in the order of b)."""
    IL, T0L, I, loads, x_at = LW.IL, LW.T0L, O.I, O.loads, DW.x_at
    M = IL.shape[0]
    K = x.shape[2]
    tu = LW.lane_t[u]
    for a in range(M):
        for b in range(M):
            I[d, tu, a, b] = IL[a, b, u]
    tx = tu if x.shape[1] > 1 else 0
    dx = d if x.shape[0] > 1 else 0
    xT, TK = DW.xT, DW.TK
    if tx != x_at[1] or dx != x_at[0]:
        for k in range(K):
            for b in range(M):
                xT[b, k] = x[dx, tx, k, b]
        x_at[0] = dx
        x_at[1] = tx
    for a in range(M):
        for k in range(K):
            TK[a, k] = T0L[a, u]
        for b in range(M):
            f = IL[a, b, u]
            for k in range(K):
                TK[a, k] += f * xT[b, k]
    for k in range(K):
        for a in range(M):
            loads[d, tu, k, a] = TK[a, k]


@jit(inline=True)
def queue_actuation(P, u, d, LW, AW, DW, act, nq):
    """Lane u's G^a (and its dimensionless copy: prismatic coordinates * L,
    prismatic actuators / L) into the actuation buffers at nq."""
    Lc = P.L_char
    GL, PGa, PGs, col_scale, prism_act = LW.GL, AW.PGa, AW.PGs, DW.col_scale, DW.prism_act
    for i in range(act.shape[0]):
        a = act[i]
        for m in range(P.M):
            g = GL[a, m, u]
            PGa[nq, i, m] = g
            g *= col_scale[m]
            if prism_act[i]:
                g /= Lc
            PGs[nq, i, m] = g
    AW.design[nq] = d
    AW.pose[nq] = LW.lane_t[u]
    AW.max_condition[nq] = P.max_condition


@jit(bare=True)
def flush_lanes(P, d, nl, have_pending, LW, AW, DW, nq, x, act, mode, O):
    """The lanes are full (or the design is done): the transfer of the poses at
    rest, then I* and the bias of each, their loads, and their actuations into
    the actuation buffers (evaluated when those are full).  Returns the poses
    waiting there."""
    alive = LW.alive
    for u in range(nl):
        alive[u] = True
    if have_pending:
        transfer_lanes(nl, P, LW.JA, LW.JQ, LW.pending, LW.GL, LW)
        settle_lanes(P, d, nl, LW, mode, O)
    composite_inertia(nl, P, LW.FL, LW.SL, LW.GL, DW.qcol, LW, LW.rest)
    for u in range(nl):
        if not alive[u]:
            continue
        lane_loads(u, d, LW, DW, x, O)
        if act.shape[0] == 0:
            continue
        queue_actuation(P, u, d, LW, AW, DW, act, nq)
        nq += 1
        if nq == AW.design.shape[0]:
            actuation_flush(nq, AW, O.loads, O.status, O.acond, O.aloads)
            nq = 0
    return nq


@jit(bare=True)
def one_design(P, d, W, LW, AW, DW, nq, q, qd, x, act, phi0, path, mode, skip, O):
    """The n poses of design d, each assembled (a start that closes the loops to
    rounding, residual < EXACT_START: an exact closed-form inverse kinematics,
    is taken as it is, since Newton's polishing step would not move it; else
    Newton from it) and put in a lane: at rest (and not on a path) with its
    closure Jacobian, for the transfer in the lanes, else with its transfer now
    (:func:`transfer_now`); V at a time through the lanes (:func:`flush_lanes`).
    Returns the poses waiting in the actuation buffers."""
    # the plan's and the work's arrays as locals, once per design (each P.x in
    # the pose loop would take and drop a reference: atomic operations, per pose)
    parent, order, isR, axis, origin, offset = P.parent, P.order, P.is_revolute, P.axis, \
        P.origin, P.offset
    body_a, T_a, body_b, T_b, loop_k, loop_r, loop_row, U = P.body_a, P.T_a, P.body_b, \
        P.T_b, P.loop_k, P.loop_r, P.loop_row, P.U
    row_is_rot, dep, block_row, q_idx, Lc = P.row_is_rot, P.dep, P.block_row, P.q_idx, \
        P.L_char
    N, M, R = P.N, P.M, P.R
    F, S, X, r, Jr = W.F, W.S, W.X, W.r, W.Jr
    FL, SL, JA, JQ, PHL = LW.FL, LW.SL, LW.JA, LW.JQ, LW.PHL
    rest, lane_t, pending, stL = LW.rest, LW.lane_t, LW.pending, LW.stL
    phi, last, row_block, flags = DW.phi, DW.last, DW.row_block, W.flags
    # this design's frames (W came with the first design's flags)
    identity_flags(origin, offset, T_a, T_b, flags)
    status, resid, phi_out, dsign = O.status, O.resid, O.phi, O.dsign
    col_scale, prism_act = DW.col_scale, DW.prism_act
    for m in range(M):
        col_scale[m] = 1.0 if isR[q_idx[m]] else Lc
    for i in range(act.shape[0]):
        prism_act[i] = not isR[act[i]]
    dq = d if q.shape[0] > 1 else 0
    dv = d if qd.shape[0] > 1 else 0
    dp = d if phi0.shape[0] > 1 else 0
    V = rest.shape[0]
    have_last = False
    have_pending = False
    u = 0                                   # the next free lane
    for t in range(skip.shape[1]):
        clear_pose(O, d, t)
        if skip[d, t] != 0:
            status[d, t] = skip[d, t]
            continue
        tq = t if q.shape[1] > 1 else 0
        tv = t if qd.shape[1] > 1 else 0
        tp = t if phi0.shape[1] > 1 else 0
        for j in range(N):
            phi[j] = last[j] if path and have_last else phi0[dp, tp, j]
        for m in range(M):
            phi[q_idx[m]] = q[dq, tq, m]
        tree_frames(parent, order, isR, axis, origin, offset, phi, F, S, flags)
        loop_frames(body_a, T_a, body_b, T_b, F, X, flags)
        closure_residual(loop_k, loop_r, loop_row, U, X, r)
        res = worst_residual(row_is_rot, Lc, r, 0, R)
        if res < EXACT_START:
            st = OK
            closure_jacobian(parent, loop_k, loop_r, loop_row, body_a, body_b, U, S, X, Jr)
        else:
            st, res = assemble_pose(P, W, phi)
        resid[d, t] = res
        if st == NOT_ASSEMBLED:
            status[d, t] = st
            continue
        at_rest = True
        for m in range(M):
            if qd[dv, tv, m] != 0.0:
                at_rest = False
        waits = at_rest and not path
        into_lane(F, S, Jr, phi, dep, q_idx, block_row, row_block, FL, SL, JA, JQ, PHL, u,
                  waits)
        if waits:
            stL[u] = st
        else:
            st = transfer_now(P, W, LW, DW, u, st, phi, qd[dv, tv], at_rest, mode,
                              phi_out[d, t], dsign[d, t])
            if st != OK:
                status[d, t] = st
                continue
            have_last = True
        pending[u] = waits
        rest[u] = at_rest
        lane_t[u] = t
        have_pending = have_pending or waits
        u += 1
        if u == V:
            nq = flush_lanes(P, d, u, have_pending, LW, AW, DW, nq, x, act, mode, O)
            u = 0
            have_pending = False
    if u > 0:
        nq = flush_lanes(P, d, u, have_pending, LW, AW, DW, nq, x, act, mode, O)
    return nq


@jit
def design_loads(fstack, ibuf, q, qd, x, act, phi0, path, modes, skip, loads, aloads, Iout,
                 phi_out, status, resid, dsign, acond):
    """Loads of D designs x n poses x K accelerations in one call.

    ``fstack`` (D, F): one plan float buffer per design, all of the structure
    ``ibuf``.  ``q``, ``qd`` (Dq, nq, M), ``x`` (Dx, nx, K, M) accelerations,
    ``phi0`` (Dp, np, N) start values, each with Dq etc. 1 (shared by every
    design) or D, and nq etc. 1 (shared by every pose) or n.  ``modes`` (D, B)
    of +1/-1/0, or (D, 0): no mode check.  ``skip`` (D, n) int64: a nonzero
    entry is a status the caller already knows (the pose is not evaluated).

    Per pose, once: assembly (a start that closes the loops to rounding,
    residual < EXACT_START, is taken as it is, else Newton from it); the
    transfer; I* by composite rigid bodies (:func:`composite_inertia`) and the
    bias ``T0 = q'^T P* q' + T_gravity``: from the same composites at rest
    (q' = 0), else by phi', the velocity products and one Newton-Euler pass at
    q'' = 0; then for each of the K accelerations ``T_q = T0 + I* q''`` (the
    loads are affine in q'') and, with actuators, ``(G^a)^T tau_a = T_q``
    (least-norm when Na > M).

    The poses of a design wait in lanes (LANE_WIDTH side by side) after their
    assembly (:func:`one_design`): the transfer of the poses at rest
    (:func:`transfer_lanes`; a moving pose, or one whose joint values start the
    next pose of a path, has its own at once), I* and T0 go through the lanes
    together, and the actuations' condition numbers through lanes of their own
    (:func:`actuation_flush`).  Each pose gets the operations it would get
    alone, so no pose's numbers depend on the others'.

    Fills (the caller's arrays, every entry) loads (D, n, K, M), actuator loads
    (D, n, K, Na), I* (D, n, M, M), phi (D, n, N), status (D, n), residual
    (D, n), det signs (D, n, B), actuation condition (D, n); status codes as
    :func:`~kic.kernels.closed_pose.batch` (SINGULAR_DYNAMICS: actuation
    singular, the coordinate loads are still given; the actuator loads are NaN)."""
    O = DesignOut(loads=loads, aloads=aloads, I=Iout, phi=phi_out, status=status, resid=resid,
                  dsign=dsign, acond=acond)
    P0 = unpack(fstack[0], ibuf)
    W = work(P0)
    LW = lane_work(P0, LANE_WIDTH)
    AW = actuation_work(P0.M, act.shape[0], x.shape[2], LANE_WIDTH)
    DW = design_work(P0, act.shape[0], x.shape[2])
    nq = 0
    for d in range(fstack.shape[0]):
        nq = one_design(unpack(fstack[d], ibuf), d, W, LW, AW, DW, nq, q, qd, x, act, phi0,
                        path, modes[d], skip, O)
    if nq > 0:
        actuation_flush(nq, AW, loads, status, acond, aloads)


# the lanes' stages run inside design_loads only: compiled without Python's wrappers
from .jit import compiled_callers_only  # noqa: E402  (after the marks it reads)

compiled_callers_only(__name__, but=("design_loads",))
