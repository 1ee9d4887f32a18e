"""Compiled kernels for closed mechanisms, one pose per loop iteration (internal).

A :class:`kic.closed_plan.ClosedPlan` (plain arrays) describes the spanning tree
of every joint phi, the closures ``c(phi) = 0`` and the independent blocks of
dependent joints.  For each pose of a batch the kernels here, compiled by numba,

1. assemble: Newton on the dependent joints of every block (steps limited to 0.5
   in max-norm, as :mod:`kic.closure`), converged when every reduced position
   row ``|r| < tol * L_char`` and every orientation row ``|r| < tol``;
2. form the transfer ``G^phi_q`` (rows q_idx the identity, rows of block b
   ``-A_b^-1 B_b``), with each block's dimensionless 2-norm condition number
   and the sign of ``det A_b`` (the assembly mode);
3. phi' = G q', phi'' = G q'' - A^-1 b (b the closure's velocity-product
   accelerations at phi'' = 0), block by block;
4. run one recursive Newton-Euler pass over the tree (world-frame screws, each
   joint once; gravity as a base acceleration -g): ``T_q = G^T T_phi``;
5. forward dynamics: ``I*_q = sum_bodies J_q^T I J_q`` (J_q the body's screw
   Jacobian in q, the prefix sum of ``S_j G_j``), the bias ``G^T T_phi`` at
   q'' = 0 and q'' by Cholesky;
6. actuator loads: ``(G^a)^T tau_a = T_q`` (Na = M) or its least-norm solution
   ``tau_a = G^a (G^a^T G^a)^-1 T_q`` (Na > M).

The physics is kic's transfer (method.md); only the evaluation differs: the
tree instead of overlapping chains, compiled loops instead of array passes.

Failures are data, per pose: ``status`` 0 ok, 1 not assembled (Newton did not
converge), 2 singular closure block (a zero pivot on the way, or the condition
number of a block at the solution >= ``max_condition``), 3 singular I* or
actuation, 4 assembled in another assembly mode than the one asked for (the
codes of :class:`kic.Status`).  Outputs of a failed pose are NaN (phi stays
finite for status 2, 3, 4).

numba is imported on first use (:func:`load`); without it this module imports
and :data:`available` is False, so that callers can keep the numpy path.
"""
from __future__ import annotations

import importlib.util

import numpy as np

__all__ = ["available", "load", "assemble", "inverse_dynamics", "forward_dynamics",
           "actuator_loads", "rates", "transfer", "inertia", "OK", "NOT_ASSEMBLED", "SINGULAR_BLOCK",
           "SINGULAR_DYNAMICS", "OTHER_MODE"]

# the codes of kic.Status
OK, NOT_ASSEMBLED, SINGULAR_BLOCK, SINGULAR_DYNAMICS, OTHER_MODE = 0, 1, 2, 3, 4

available = importlib.util.find_spec("numba") is not None
"""numba is installed (imported, and the kernels compiled, on first use)."""

_JITTED: list[str] = []
_loaded = False


def _jit(fn):
    """Mark ``fn`` for compilation by :func:`load` (numba is imported lazily)."""
    _JITTED.append(fn.__name__)
    return fn


def load() -> bool:
    """Import numba and compile (or load from cache) the kernels; False if numba
    cannot be imported."""
    global _loaded, available
    if _loaded:
        return True
    try:
        import numba
    except ImportError:
        available = False
        return False
    g = globals()
    for name in _JITTED:
        g[name] = numba.njit(cache=True, nogil=True, error_model="numpy")(g[name])
    _loaded = True
    return True


def _require() -> None:
    if not (available and load()):
        raise ImportError("kic's compiled closed-mechanism kernels need numba "
                          "(pip install 'kic[fast]'); use the numpy ClosedModel instead")


# --------------------------------------------------------------------------
# one pose: small helpers
# --------------------------------------------------------------------------
@_jit
def _frames(parent, order, isR, axis, origin, offset, phi, F, S):
    """Body frames F (N, 4, 4) and world screws S (N, 6) = [omega; v at the origin]."""
    J = np.empty((3, 4))
    Rm = np.empty((3, 3))
    for jj in range(order.shape[0]):
        j = order[jj]
        pj = parent[j]
        O = origin[j]
        # J = F_parent @ origin (rows 0..2)
        if pj < 0:
            for i in range(3):
                for c in range(4):
                    J[i, c] = O[i, c]
        else:
            P = F[pj]
            for i in range(3):
                for c in range(4):
                    J[i, c] = P[i, 0] * O[0, c] + P[i, 1] * O[1, c] + P[i, 2] * O[2, c]
                J[i, 3] += P[i, 3]
        a0, a1, a2 = axis[j, 0], axis[j, 1], axis[j, 2]
        s0 = J[0, 0] * a0 + J[0, 1] * a1 + J[0, 2] * a2
        s1 = J[1, 0] * a0 + J[1, 1] * a1 + J[1, 2] * a2
        s2 = J[2, 0] * a0 + J[2, 1] * a1 + J[2, 2] * a2
        o0, o1, o2 = J[0, 3], J[1, 3], J[2, 3]
        x = phi[j]
        if isR[j]:
            c = np.cos(x)
            s = np.sin(x)
            t = 1.0 - c
            # Rodrigues: c I + s [a]x + (1 - c) a a^T
            Rm[0, 0] = c + t * a0 * a0
            Rm[0, 1] = t * a0 * a1 - s * a2
            Rm[0, 2] = t * a0 * a2 + s * a1
            Rm[1, 0] = t * a1 * a0 + s * a2
            Rm[1, 1] = c + t * a1 * a1
            Rm[1, 2] = t * a1 * a2 - s * a0
            Rm[2, 0] = t * a2 * a0 - s * a1
            Rm[2, 1] = t * a2 * a1 + s * a0
            Rm[2, 2] = c + t * a2 * a2
            for i in range(3):
                b0 = J[i, 0] * Rm[0, 0] + J[i, 1] * Rm[1, 0] + J[i, 2] * Rm[2, 0]
                b1 = J[i, 0] * Rm[0, 1] + J[i, 1] * Rm[1, 1] + J[i, 2] * Rm[2, 1]
                b2 = J[i, 0] * Rm[0, 2] + J[i, 1] * Rm[1, 2] + J[i, 2] * Rm[2, 2]
                J[i, 0] = b0
                J[i, 1] = b1
                J[i, 2] = b2
            S[j, 0] = s0
            S[j, 1] = s1
            S[j, 2] = s2
            # the velocity of the body point at the world origin: omega x (0 - o) = o x s
            S[j, 3] = o1 * s2 - o2 * s1
            S[j, 4] = o2 * s0 - o0 * s2
            S[j, 5] = o0 * s1 - o1 * s0
        else:
            J[0, 3] += x * s0
            J[1, 3] += x * s1
            J[2, 3] += x * s2
            S[j, 0] = 0.0
            S[j, 1] = 0.0
            S[j, 2] = 0.0
            S[j, 3] = s0
            S[j, 4] = s1
            S[j, 5] = s2
        Of = offset[j]
        Fj = F[j]
        for i in range(3):
            for c in range(4):
                Fj[i, c] = J[i, 0] * Of[0, c] + J[i, 1] * Of[1, c] + J[i, 2] * Of[2, c]
            Fj[i, 3] += J[i, 3]
        Fj[3, 0] = 0.0
        Fj[3, 1] = 0.0
        Fj[3, 2] = 0.0
        Fj[3, 3] = 1.0


@_jit
def _side_frames(body_a, T_a, body_b, T_b, F, X):
    """Frames X (L, 2, 4, 4) of the two sides of every loop (side B on the ground: T_b)."""
    L = body_a.shape[0]
    for l in range(L):
        for side in range(2):
            b = body_a[l] if side == 0 else body_b[l]
            T = T_a[l] if side == 0 else T_b[l]
            Xs = X[l, side]
            if b < 0:
                for i in range(4):
                    for c in range(4):
                        Xs[i, c] = T[i, c]
            else:
                Fb = F[b]
                for i in range(3):
                    for c in range(4):
                        Xs[i, c] = Fb[i, 0] * T[0, c] + Fb[i, 1] * T[1, c] + Fb[i, 2] * T[2, c]
                    Xs[i, 3] += Fb[i, 3]
                Xs[3, 0] = 0.0
                Xs[3, 1] = 0.0
                Xs[3, 2] = 0.0
                Xs[3, 3] = 1.0


@_jit
def _residual(loop_k, loop_r, loop_row, U, X, r):
    """Reduced closure residuals r (R,): U^T [vex(R_A R_B^T); p_A - p_B] or U^T (p_A - p_B)
    (no allocations: a one-pose call is a few microseconds)."""
    for l in range(loop_k.shape[0]):
        k = loop_k[l]
        row = loop_row[l]
        p0 = X[l, 0, 0, 3] - X[l, 1, 0, 3]
        p1 = X[l, 0, 1, 3] - X[l, 1, 1, 3]
        p2 = X[l, 0, 2, 3] - X[l, 1, 2, 3]
        if k == 6:
            # E = R_A R_B^T; vex of its skew part
            e01 = X[l, 0, 0, 0] * X[l, 1, 1, 0] + X[l, 0, 0, 1] * X[l, 1, 1, 1] \
                + X[l, 0, 0, 2] * X[l, 1, 1, 2]
            e02 = X[l, 0, 0, 0] * X[l, 1, 2, 0] + X[l, 0, 0, 1] * X[l, 1, 2, 1] \
                + X[l, 0, 0, 2] * X[l, 1, 2, 2]
            e10 = X[l, 0, 1, 0] * X[l, 1, 0, 0] + X[l, 0, 1, 1] * X[l, 1, 0, 1] \
                + X[l, 0, 1, 2] * X[l, 1, 0, 2]
            e12 = X[l, 0, 1, 0] * X[l, 1, 2, 0] + X[l, 0, 1, 1] * X[l, 1, 2, 1] \
                + X[l, 0, 1, 2] * X[l, 1, 2, 2]
            e20 = X[l, 0, 2, 0] * X[l, 1, 0, 0] + X[l, 0, 2, 1] * X[l, 1, 0, 1] \
                + X[l, 0, 2, 2] * X[l, 1, 0, 2]
            e21 = X[l, 0, 2, 0] * X[l, 1, 1, 0] + X[l, 0, 2, 1] * X[l, 1, 1, 1] \
                + X[l, 0, 2, 2] * X[l, 1, 1, 2]
            w0 = 0.5 * (e21 - e12)
            w1 = 0.5 * (e02 - e20)
            w2 = 0.5 * (e10 - e01)
            for c in range(loop_r[l]):
                acc = 0.0
                acc += U[l, 0, c] * w0
                acc += U[l, 1, c] * w1
                acc += U[l, 2, c] * w2
                acc += U[l, 3, c] * p0
                acc += U[l, 4, c] * p1
                acc += U[l, 5, c] * p2
                r[row + c] = acc
        else:
            for c in range(loop_r[l]):
                acc = 0.0
                acc += U[l, 0, c] * p0
                acc += U[l, 1, c] * p1
                acc += U[l, 2, c] * p2
                r[row + c] = acc


@_jit
def _jacobian(parent, loop_k, loop_r, loop_row, body_a, body_b, U, S, X, Jr):
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
                    acc = 0.0
                    if k == 6:
                        acc += U[l, 0, c] * w0
                        acc += U[l, 1, c] * w1
                        acc += U[l, 2, c] * w2
                        acc += U[l, 3, c] * v0
                        acc += U[l, 4, c] * v1
                        acc += U[l, 5, c] * v2
                    else:
                        acc += U[l, 0, c] * v0
                        acc += U[l, 1, c] * v1
                        acc += U[l, 2, c] * v2
                    Jr[row + c, j] += sign * acc
                j = parent[j]


@_jit
def _lu(A, n, piv):
    """In-place LU with partial pivoting of A[:n, :n]; returns the sign of det A
    (0.0 when a pivot is zero or not finite)."""
    sgn = 1.0
    for k in range(n):
        p = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                big = abs(A[i, k])
                p = i
        piv[k] = p
        if not (big > 0.0) or not np.isfinite(big):
            return 0.0
        if p != k:
            sgn = -sgn
            for c in range(n):
                t = A[k, c]
                A[k, c] = A[p, c]
                A[p, c] = t
        if A[k, k] < 0.0:
            sgn = -sgn
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            A[i, k] *= inv
            f = A[i, k]
            if f != 0.0:
                for c in range(k + 1, n):
                    A[i, c] -= f * A[k, c]
    return sgn


@_jit
def _lu_solve(A, n, piv, b):
    """Solve in place with the factors of :func:`_lu` (b of length >= n)."""
    for k in range(n):
        p = piv[k]
        if p != k:
            t = b[k]
            b[k] = b[p]
            b[p] = t
    for i in range(n):
        acc = b[i]
        for c in range(i):
            acc -= A[i, c] * b[c]
        b[i] = acc
    for i in range(n - 1, -1, -1):
        acc = b[i]
        for c in range(i + 1, n):
            acc -= A[i, c] * b[c]
        b[i] = acc / A[i, i]


@_jit
def _jacobi_turn(alpha, beta, gamma):
    """Cosine, sine of the one-sided Jacobi rotation that makes two columns with
    squared norms alpha, beta and product gamma orthogonal."""
    zeta = (beta - alpha) / (2.0 * gamma)
    t = (1.0 if zeta >= 0.0 else -1.0) / (abs(zeta) + np.sqrt(1.0 + zeta * zeta))
    cs = 1.0 / np.sqrt(1.0 + t * t)
    return cs, cs * t


@_jit
def _norm_ratio(work, m, n):
    """Largest over smallest norm of the first n columns (rows :m) of ``work``:
    the 2-norm condition number once one-sided Jacobi has made them orthogonal
    (their norms are the singular values); inf where a norm is zero or not
    finite."""
    smax = 0.0
    smin = np.inf
    for c in range(n):
        acc = 0.0
        for i in range(m):
            acc += work[i, c] * work[i, c]
        sv = np.sqrt(acc)
        if not np.isfinite(sv):
            return np.inf
        smax = max(smax, sv)
        smin = min(smin, sv)
    if not (smin > 0.0):
        return np.inf
    return smax / smin


@_jit
def _condition(A, work):
    """2-norm condition number of A (m, n), m >= n, from its singular values by
    one-sided Jacobi rotations (high relative accuracy, no LAPACK call; only the
    values are used, never the vectors).  ``work`` (m, n) is overwritten.
    inf if singular or not finite."""
    m, n = A.shape
    for i in range(m):
        for c in range(n):
            work[i, c] = A[i, c]
    for sweep in range(60):
        rotated = False
        for p in range(n - 1):
            for r in range(p + 1, n):
                alpha = 0.0
                beta = 0.0
                gamma = 0.0
                for i in range(m):
                    alpha += work[i, p] * work[i, p]
                    beta += work[i, r] * work[i, r]
                    gamma += work[i, p] * work[i, r]
                if not (abs(gamma) > 1e-15 * np.sqrt(alpha * beta)):
                    continue
                rotated = True
                cs, sn = _jacobi_turn(alpha, beta, gamma)
                for i in range(m):
                    x = work[i, p]
                    y = work[i, r]
                    work[i, p] = cs * x - sn * y
                    work[i, r] = sn * x + cs * y
        if not rotated:
            break
    return _norm_ratio(work, m, n)


@_jit
def _work(N, M, R, L, B, nb):
    """Per-call work buffers (reused by every pose of the batch)."""
    return (np.empty((N, 4, 4)), np.empty((N, 6)), np.empty((L, 2, 4, 4)), np.empty(R),
            np.zeros((R, N)), np.empty((B, nb, nb)), np.zeros((B, nb), np.int64),
            np.empty((N, M)), np.empty(N), np.empty(N), np.empty((N, 6)), np.empty((N, 6)),
            np.empty((N, 6)), np.empty(N), np.empty(R), np.empty((nb, nb)), np.empty((nb, nb)),
            np.empty(3), np.empty((3, 3)), np.empty((3, 3)))


# --------------------------------------------------------------------------
# one pose: the stages
# --------------------------------------------------------------------------
#: joint values whose worst dimensionless closure residual is below this close
#: the loops to rounding (an exact closed form, the same pose again, or a Newton
#: iterate that got there): they are taken as they are, since Newton's polishing
#: step would not move them
EXACT_START = 2e-15


@_jit
def _assemble_pose(P, W, phi):
    """Newton on the dependent joints from phi (q already in place); leaves the
    frames, screws, side frames and closure Jacobian of the final phi in W.
    Returns (status, dimensionless worst residual)."""
    (parent, order, isR, axis, origin, offset, mass, com, inertia, gravity, loop_k, loop_r,
     loop_row, body_a, T_a, body_b, T_b, U, row_is_rot, dep, block_row, block_loop,
     block_loops, q_idx, scal, max_iter) = P
    F, S, X, r, Jr, LU, piv = W[0], W[1], W[2], W[3], W[4], W[5], W[6]
    Ab = W[15]
    step = W[14]
    Lc, tol = scal[0], scal[1]
    nB = block_row.shape[0] - 1
    R = dep.shape[0]
    worst = 0.0
    polished = False
    for it in range(max_iter + 2):
        _frames(parent, order, isR, axis, origin, offset, phi, F, S)
        _side_frames(body_a, T_a, body_b, T_b, F, X)
        _residual(loop_k, loop_r, loop_row, U, X, r)
        worst = 0.0
        for i in range(R):
            e = abs(r[i]) if row_is_rot[i] else abs(r[i]) / Lc
            if not (e <= worst):          # NaN propagates as the worst
                worst = e
        if worst < tol and (polished or worst < EXACT_START):
            _jacobian(parent, loop_k, loop_r, loop_row, body_a, body_b, U, S, X, Jr)
            return 0, worst
        if it >= max_iter or not np.isfinite(worst):
            return 1, worst
        # once within the tolerance, one more full step takes the solution to
        # rounding, so it does not depend on where Newton started
        polished = worst < tol
        _jacobian(parent, loop_k, loop_r, loop_row, body_a, body_b, U, S, X, Jr)
        for b in range(nB):
            r0, r1 = block_row[b], block_row[b + 1]
            nb = r1 - r0
            bw = 0.0
            for i in range(r0, r1):
                e = abs(r[i]) if row_is_rot[i] else abs(r[i]) / Lc
                bw = max(bw, e)
            if bw < tol and not polished:
                continue
            for i in range(nb):
                for c in range(nb):
                    Ab[i, c] = Jr[r0 + i, dep[r0 + c]]
                step[i] = -r[r0 + i]
            if _lu(Ab, nb, piv[b]) == 0.0:
                return 2, worst
            _lu_solve(Ab, nb, piv[b], step)
            lim = 0.0
            for i in range(nb):
                lim = max(lim, abs(step[i]))
            f = 1.0 if lim <= 0.5 else 0.5 / lim
            for i in range(nb):
                phi[dep[r0 + i]] += f * step[i]
    return 1, worst


@_jit
def _transfer_pose(P, W, cond, dsign):
    """G^phi_q (W[7]) from the closure Jacobian in W; the blocks' LU factors stay in
    W for the acceleration closure.  Fills cond and dsign (B,); returns status."""
    (parent, order, isR, axis, origin, offset, mass, com, inertia, gravity, loop_k, loop_r,
     loop_row, body_a, T_a, body_b, T_b, U, row_is_rot, dep, block_row, block_loop,
     block_loops, q_idx, scal, max_iter) = P
    Jr, LU, piv, G, col = W[4], W[5], W[6], W[7], W[14]
    Lc, maxc = scal[0], scal[2]
    N, M = G.shape
    nB = block_row.shape[0] - 1
    G[:, :] = 0.0
    for m in range(M):
        G[q_idx[m], m] = 1.0
    status = 0
    for b in range(nB):
        r0, r1 = block_row[b], block_row[b + 1]
        nb = r1 - r0
        As = W[15][:nb, :nb]
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
        cond[b] = _condition(As, W[16][:nb, :nb])
        dsign[b] = _lu(A, nb, piv[b])
        if dsign[b] == 0.0 or not (cond[b] < maxc):
            status = 2
            continue
        for m in range(M):
            for i in range(nb):
                col[i] = -Jr[r0 + i, q_idx[m]]
            _lu_solve(A, nb, piv[b], col)
            for i in range(nb):
                G[dep[r0 + i], m] = col[i]
    return status


@_jit
def _rates(P, W, qd, qdd):
    """phi' = G q' (W[8]) and phi'' = G q'' - A^-1 b (W[9]); screw velocities V (W[10])
    and the velocity-product accelerations Av (W[11], at phi'' = 0, no gravity)."""
    (parent, order, isR, axis, origin, offset, mass, com, inertia, gravity, loop_k, loop_r,
     loop_row, body_a, T_a, body_b, T_b, U, row_is_rot, dep, block_row, block_loop,
     block_loops, q_idx, scal, max_iter) = P
    S, X, r, LU, piv, G = W[1], W[2], W[3], W[5], W[6], W[7]
    phid, phidd, V, Av, col = W[8], W[9], W[10], W[11], W[14]
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
        u = phid[j]
        for i in range(6):
            V[j, i] = (V[p, i] if p >= 0 else 0.0) + S[j, i] * u
        # (V_parent x S_j) u: the motion cross product [w x w2; w x v2 + v x w2]
        if p >= 0:
            w0, w1, w2 = V[p, 0], V[p, 1], V[p, 2]
            v0, v1, v2 = V[p, 3], V[p, 4], V[p, 5]
        else:
            w0 = w1 = w2 = v0 = v1 = v2 = 0.0
        s0, s1, s2, t0, t1, t2 = S[j, 0], S[j, 1], S[j, 2], S[j, 3], S[j, 4], S[j, 5]
        c0 = (w1 * s2 - w2 * s1) * u
        c1 = (w2 * s0 - w0 * s2) * u
        c2 = (w0 * s1 - w1 * s0) * u
        c3 = (w1 * t2 - w2 * t1 + v1 * s2 - v2 * s1) * u
        c4 = (w2 * t0 - w0 * t2 + v2 * s0 - v0 * s2) * u
        c5 = (w0 * t1 - w1 * t0 + v0 * s1 - v1 * s0) * u
        if p >= 0:
            c0 += Av[p, 0]
            c1 += Av[p, 1]
            c2 += Av[p, 2]
            c3 += Av[p, 3]
            c4 += Av[p, 4]
            c5 += Av[p, 5]
        Av[j, 0], Av[j, 1], Av[j, 2], Av[j, 3], Av[j, 4], Av[j, 5] = c0, c1, c2, c3, c4, c5
    # closure velocity-product accelerations, reduced: r <- b
    raw = np.empty(6)
    for l in range(loop_k.shape[0]):
        k = loop_k[l]
        for i in range(6):
            raw[i] = 0.0
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
            p0 = b0 + a1 * x2 - a2 * x1 + w1 * u2 - w2 * u1
            p1 = b1 + a2 * x0 - a0 * x2 + w2 * u0 - w0 * u2
            p2 = b2 + a0 * x1 - a1 * x0 + w0 * u1 - w1 * u0
            if k == 6:
                raw[0] += sign * a0
                raw[1] += sign * a1
                raw[2] += sign * a2
                raw[3] += sign * p0
                raw[4] += sign * p1
                raw[5] += sign * p2
            else:
                raw[0] += sign * p0
                raw[1] += sign * p1
                raw[2] += sign * p2
        row = loop_row[l]
        for c in range(loop_r[l]):
            acc = 0.0
            for i in range(k):
                acc += U[l, i, c] * raw[i]
            r[row + c] = acc
    nB = block_row.shape[0] - 1
    for b in range(nB):
        r0, r1 = block_row[b], block_row[b + 1]
        nb = r1 - r0
        for i in range(nb):
            col[i] = r[r0 + i]
        _lu_solve(LU[b], nb, piv[b], col)
        for i in range(nb):
            phidd[dep[r0 + i]] -= col[i]


@_jit
def _rnea(P, W, with_gravity):
    """Joint loads T_phi (W[13]) of the tree at (phi, phi', phi'') by recursive
    Newton-Euler in world screws; uses V (W[10]) and Av (W[11]) from _rates."""
    (parent, order, isR, axis, origin, offset, mass, com, inertia, gravity, loop_k, loop_r,
     loop_row, body_a, T_a, body_b, T_b, U, row_is_rot, dep, block_row, block_loop,
     block_loops, q_idx, scal, max_iter) = P
    F, S, phidd, V, Av, fo, tau = W[0], W[1], W[9], W[10], W[11], W[12], W[13]
    c, Iw, RI = W[17], W[18], W[19]
    N = S.shape[0]
    A = np.empty(6)
    for jj in range(N):
        j = order[jj]
        for i in range(6):
            fo[j, i] = 0.0
        m = mass[j]
        # massless only without rotational inertia too (PUMA 560's link 1: 0 kg,
        # 0.35 kg m^2); a PSD inertia with a zero diagonal is zero
        if m <= 0.0 and inertia[j, 0, 0] == 0.0 and inertia[j, 1, 1] == 0.0 \
                and inertia[j, 2, 2] == 0.0:
            continue
        # body acceleration: the velocity products (Av) plus the joint accelerations
        # of the path, plus the base acceleration -g
        for i in range(6):
            A[i] = Av[j, i]
        k = j
        while k >= 0:
            u = phidd[k]
            for i in range(6):
                A[i] += S[k, i] * u
            k = parent[k]
        if with_gravity:
            A[3] -= gravity[0]
            A[4] -= gravity[1]
            A[5] -= gravity[2]
        Fj = F[j]
        for i in range(3):
            c[i] = Fj[i, 0] * com[j, 0] + Fj[i, 1] * com[j, 1] + Fj[i, 2] * com[j, 2] + Fj[i, 3]
        # R I R^T
        for i in range(3):
            for q in range(3):
                RI[i, q] = Fj[i, 0] * inertia[j, 0, q] + Fj[i, 1] * inertia[j, 1, q] \
                    + Fj[i, 2] * inertia[j, 2, q]
        for i in range(3):
            for q in range(3):
                Iw[i, q] = RI[i, 0] * Fj[q, 0] + RI[i, 1] * Fj[q, 1] + RI[i, 2] * Fj[q, 2]
        w0, w1, w2, v0, v1, v2 = V[j, 0], V[j, 1], V[j, 2], V[j, 3], V[j, 4], V[j, 5]
        vc0 = v0 + w1 * c[2] - w2 * c[1]
        vc1 = v1 + w2 * c[0] - w0 * c[2]
        vc2 = v2 + w0 * c[1] - w1 * c[0]
        ac0 = A[3] + A[1] * c[2] - A[2] * c[1] + w1 * vc2 - w2 * vc1
        ac1 = A[4] + A[2] * c[0] - A[0] * c[2] + w2 * vc0 - w0 * vc2
        ac2 = A[5] + A[0] * c[1] - A[1] * c[0] + w0 * vc1 - w1 * vc0
        f0, f1, f2 = m * ac0, m * ac1, m * ac2
        h0 = Iw[0, 0] * w0 + Iw[0, 1] * w1 + Iw[0, 2] * w2
        h1 = Iw[1, 0] * w0 + Iw[1, 1] * w1 + Iw[1, 2] * w2
        h2 = Iw[2, 0] * w0 + Iw[2, 1] * w1 + Iw[2, 2] * w2
        # moment about the world origin: Iw a + w x Iw w + c x f
        fo[j, 0] = Iw[0, 0] * A[0] + Iw[0, 1] * A[1] + Iw[0, 2] * A[2] + w1 * h2 - w2 * h1 \
            + c[1] * f2 - c[2] * f1
        fo[j, 1] = Iw[1, 0] * A[0] + Iw[1, 1] * A[1] + Iw[1, 2] * A[2] + w2 * h0 - w0 * h2 \
            + c[2] * f0 - c[0] * f2
        fo[j, 2] = Iw[2, 0] * A[0] + Iw[2, 1] * A[1] + Iw[2, 2] * A[2] + w0 * h1 - w1 * h0 \
            + c[0] * f1 - c[1] * f0
        fo[j, 3], fo[j, 4], fo[j, 5] = f0, f1, f2
    # backward: each joint transmits the wrench of its subtree
    for jj in range(N - 1, -1, -1):
        j = order[jj]
        t = 0.0
        for i in range(6):
            t += S[j, i] * fo[j, i]
        tau[j] = t
        p = parent[j]
        if p >= 0:
            for i in range(6):
                fo[p, i] += fo[j, i]


@_jit
def _project(G, tau, out):
    """out = G^T tau."""
    N, M = G.shape
    for m in range(M):
        acc = 0.0
        for j in range(N):
            acc += G[j, m] * tau[j]
        out[m] = acc


@_jit
def _inertia_pose(P, W, I):
    """I*_q = sum over massive bodies of J_q^T I J_q (J_q = prefix sums of S_j G_j)."""
    (parent, order, isR, axis, origin, offset, mass, com, inertia, gravity, loop_k, loop_r,
     loop_row, body_a, T_a, body_b, T_b, U, row_is_rot, dep, block_row, block_loop,
     block_loops, q_idx, scal, max_iter) = P
    F, S, G = W[0], W[1], W[7]
    N, M = G.shape
    I[:, :] = 0.0
    Jw = np.empty((3, M))
    Jv = np.empty((3, M))
    Iw = np.empty((3, 3))
    RI = np.empty((3, 3))
    H = np.empty((3, M))
    c = np.empty(3)
    for j in range(N):
        m = mass[j]
        # massless only without rotational inertia too (PUMA 560's link 1: 0 kg,
        # 0.35 kg m^2); a PSD inertia with a zero diagonal is zero
        if m <= 0.0 and inertia[j, 0, 0] == 0.0 and inertia[j, 1, 1] == 0.0 \
                and inertia[j, 2, 2] == 0.0:
            continue
        Jw[:, :] = 0.0
        Jv[:, :] = 0.0
        k = j
        while k >= 0:
            for a in range(M):
                g = G[k, a]
                if g != 0.0:
                    for i in range(3):
                        Jw[i, a] += S[k, i] * g
                        Jv[i, a] += S[k, 3 + i] * g
            k = parent[k]
        Fj = F[j]
        for i in range(3):
            c[i] = Fj[i, 0] * com[j, 0] + Fj[i, 1] * com[j, 1] + Fj[i, 2] * com[j, 2] + Fj[i, 3]
        for i in range(3):
            for q in range(3):
                RI[i, q] = Fj[i, 0] * inertia[j, 0, q] + Fj[i, 1] * inertia[j, 1, q] \
                    + Fj[i, 2] * inertia[j, 2, q]
        for i in range(3):
            for q in range(3):
                Iw[i, q] = RI[i, 0] * Fj[q, 0] + RI[i, 1] * Fj[q, 1] + RI[i, 2] * Fj[q, 2]
        # centroid velocities per coordinate: v + w x c (overwrite Jv)
        for a in range(M):
            w0, w1, w2 = Jw[0, a], Jw[1, a], Jw[2, a]
            Jv[0, a] += w1 * c[2] - w2 * c[1]
            Jv[1, a] += w2 * c[0] - w0 * c[2]
            Jv[2, a] += w0 * c[1] - w1 * c[0]
            for i in range(3):
                H[i, a] = Iw[i, 0] * w0 + Iw[i, 1] * w1 + Iw[i, 2] * w2
        for a in range(M):
            for b in range(a, M):
                v = m * (Jv[0, a] * Jv[0, b] + Jv[1, a] * Jv[1, b] + Jv[2, a] * Jv[2, b]) \
                    + Jw[0, a] * H[0, b] + Jw[1, a] * H[1, b] + Jw[2, a] * H[2, b]
                I[a, b] += v
    for a in range(M):
        for b in range(a):
            I[a, b] = I[b, a]


@_jit
def _cholesky_solve(A, b, x):
    """Solve A x = b for SPD A by Cholesky (A overwritten by L).  False when a pivot
    is <= 1e-12 of its diagonal entry (a relative rule, invariant under any
    scaling of the coordinates' units)."""
    n = A.shape[0]
    for i in range(n):
        d0 = A[i, i]
        for k in range(i):
            s = A[i, k]
            for c in range(k):
                s -= A[i, c] * A[k, c]
            A[i, k] = s / A[k, k]
        d = d0
        for c in range(i):
            d -= A[i, c] * A[i, c]
        if not (d > 1e-12 * d0) or not np.isfinite(d):
            return False
        A[i, i] = np.sqrt(d)
    for i in range(n):
        s = b[i]
        for c in range(i):
            s -= A[i, c] * x[c]
        x[i] = s / A[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for c in range(i + 1, n):
            s -= A[c, i] * x[c]
        x[i] = s / A[i, i]
    return True


# --------------------------------------------------------------------------
# batch drivers
# --------------------------------------------------------------------------
@_jit
def _unpack(fb, ib):
    """The plan's arrays as views of its two flat buffers (layout: ClosedPlan.args)."""
    N, M, L, R, B, max_iter = ib[0], ib[1], ib[2], ib[3], ib[4], ib[5]
    k = 6
    parent = ib[k:k + N]
    k += N
    order = ib[k:k + N]
    k += N
    isR = ib[k:k + N]
    k += N
    loop_k = ib[k:k + L]
    k += L
    loop_r = ib[k:k + L]
    k += L
    loop_row = ib[k:k + L]
    k += L
    body_a = ib[k:k + L]
    k += L
    body_b = ib[k:k + L]
    k += L
    row_is_rot = ib[k:k + R]
    k += R
    dep = ib[k:k + R]
    k += R
    block_row = ib[k:k + B + 1]
    k += B + 1
    block_loop = ib[k:k + B + 1]
    k += B + 1
    block_loops = ib[k:k + L]
    k += L
    q_idx = ib[k:k + M]
    f = 0
    axis = fb[f:f + 3 * N].reshape((N, 3))
    f += 3 * N
    origin = fb[f:f + 16 * N].reshape((N, 4, 4))
    f += 16 * N
    offset = fb[f:f + 16 * N].reshape((N, 4, 4))
    f += 16 * N
    mass = fb[f:f + N]
    f += N
    com = fb[f:f + 3 * N].reshape((N, 3))
    f += 3 * N
    inertia = fb[f:f + 9 * N].reshape((N, 3, 3))
    f += 9 * N
    gravity = fb[f:f + 3]
    f += 3
    T_a = fb[f:f + 16 * L].reshape((L, 4, 4))
    f += 16 * L
    T_b = fb[f:f + 16 * L].reshape((L, 4, 4))
    f += 16 * L
    U = fb[f:f + 36 * L].reshape((L, 6, 6))
    f += 36 * L
    scal = fb[f:f + 3]
    return (parent, order, isR, axis, origin, offset, mass, com, inertia, gravity, loop_k,
            loop_r, loop_row, body_a, T_a, body_b, T_b, U, row_is_rot, dep, block_row,
            block_loop, block_loops, q_idx, scal, max_iter)


@_jit
def _dims(P):
    (parent, order, isR, axis, origin, offset, mass, com, inertia, gravity, loop_k, loop_r,
     loop_row, body_a, T_a, body_b, T_b, U, row_is_rot, dep, block_row, block_loop,
     block_loops, q_idx, scal, max_iter) = P
    nB = block_row.shape[0] - 1
    nb = 1
    for b in range(nB):
        nb = max(nb, block_row[b + 1] - block_row[b])
    return parent.shape[0], q_idx.shape[0], dep.shape[0], loop_k.shape[0], nB, nb


@_jit
def _finite(a):
    for v in a.ravel():
        if not np.isfinite(v):
            return False
    return True


@_jit
def _batch(fbuf, ibuf, what, n, q, qd, x, act, phi0, path, mode):
    """All entry points: what = 0 assemble, 1 inverse dynamics (x = q''), 2 forward
    dynamics (x = tau), 3 actuator loads (x = q''), 4 transfer at given phi0,
    5 inertia at given phi0, 6 rates (phi', phi''; x = q'').  q, qd, x, phi0 have n rows or one (used for every
    pose).  ``mode`` (B,) of +1/-1 (0: any), or empty: the assembly mode a pose must
    be in (else status 4).  Returns (buf, status, bad): buf (n, K + N + 2 + 2B) holds
    out (n, K) (K = M, Na, N*M, M*M or 2N as the case needs), phi, the residual,
    the blocks' conditions and det signs and the actuation condition (see
    :func:`_split`); ``bad`` is 1-4 when q, qd, x or phi0 is not finite (nothing
    evaluated), else 0."""
    P = _unpack(fbuf, ibuf)
    (parent, order, isR, axis, origin, offset, mass, com, inertia, gravity, loop_k, loop_r,
     loop_row, body_a, T_a, body_b, T_b, U, row_is_rot, dep, block_row, block_loop,
     block_loops, q_idx, scal, max_iter) = P
    N, M, R, L, nB, nb = _dims(P)
    bad = 0
    if not _finite(q):
        bad = 1
    elif not _finite(qd):
        bad = 2
    elif not _finite(x):
        bad = 3
    elif not _finite(phi0):
        bad = 4
    if bad:
        n = 0
    W = _work(N, M, R, L, nB, nb)
    Na = act.shape[0]
    K = 0
    if what == 1 or what == 2:
        K = M
    elif what == 3:
        K = Na
    elif what == 4:
        K = N * M
    elif what == 5:
        K = M * M
    elif what == 6:
        K = 2 * N
    # one output buffer (each array handed back to Python costs about a microsecond):
    # columns [out K | phi N | residual | condition B | det sign B | actuation cond]
    buf = np.empty((n, K + N + 2 + 2 * nB))
    buf[:, :] = np.nan
    out = buf[:, :K]
    phi_out = buf[:, K:K + N]
    resid = buf[:, K + N]
    cond = buf[:, K + N + 1:K + N + 1 + nB]
    dsign = buf[:, K + N + 1 + nB:K + N + 1 + 2 * nB]
    acond = buf[:, K + N + 1 + 2 * nB]
    dsign[:, :] = 0.0
    status = np.zeros(n, np.int64)
    phi = np.empty(N)
    last = np.empty(N)
    have_last = False
    G_last = np.empty((N, M))
    Tq = np.empty(M)
    zero = np.zeros(M)
    Im = np.empty((M, M))
    Ga = np.empty((Na, M))
    Gs = np.empty((Na, M))
    tmp = np.empty(max(Na, M))
    Gw = np.empty((Na, M))
    sol = np.empty(M)
    At = np.empty((M, M))
    pv = np.zeros(M, np.int64)
    Lc, maxc = scal[0], scal[2]
    for t in range(n):
        tq = t if q.shape[0] > 1 else 0
        tv = t if qd.shape[0] > 1 else 0
        tx = t if x.shape[0] > 1 else 0
        if path and have_last:
            # tangent predictor from the last pose of the path, phi + G^phi_q dq
            # (Newton then needs a step fewer; it polishes to rounding anyway)
            for j in range(N):
                acc = last[j]
                for m in range(M):
                    acc += G_last[j, m] * (q[tq, m] - last[q_idx[m]])
                phi[j] = acc
        else:
            phi[:] = phi0[t if phi0.shape[0] > 1 else 0]
        if what <= 3 or what == 6:
            for m in range(M):
                phi[q_idx[m]] = q[tq, m]
            st, res = _assemble_pose(P, W, phi)
        else:
            # given phi: evaluate there (its residual is reported, not corrected)
            st = 0
            res = 0.0
            _frames(parent, order, isR, axis, origin, offset, phi, W[0], W[1])
            _side_frames(body_a, T_a, body_b, T_b, W[0], W[2])
            _residual(loop_k, loop_r, loop_row, U, W[2], W[3])
            for i in range(R):
                e = abs(W[3][i]) if row_is_rot[i] else abs(W[3][i]) / Lc
                res = max(res, e)
            _jacobian(parent, loop_k, loop_r, loop_row, body_a, body_b, U, W[1], W[2], W[4])
        resid[t] = res
        if st == 1:
            status[t] = 1
            phi_out[t, :] = np.nan
            continue
        phi_out[t] = phi
        st2 = _transfer_pose(P, W, cond[t], dsign[t])
        if st != 0:
            # a zero pivot on the way: not assembled (cond, dsign: at the last iterate)
            status[t] = 2
            phi_out[t, :] = np.nan
            continue
        if st2 != 0:
            status[t] = 2
            continue
        if mode.shape[0]:
            other = False
            for b in range(nB):
                if mode[b] != 0.0 and dsign[t, b] != mode[b]:
                    other = True
            if other:
                status[t] = 4
                continue
        # a path continues from poses that are regular and in the mode only
        last[:] = phi
        G_last[:, :] = W[7]
        have_last = True
        if what == 0:
            continue
        G = W[7]
        if what == 4:
            for j in range(N):
                for m in range(M):
                    out[t, j * M + m] = G[j, m]
            continue
        if what == 5:
            _inertia_pose(P, W, Im)
            for a in range(M):
                for b in range(M):
                    out[t, a * M + b] = Im[a, b]
            continue
        if what == 2:
            _rates(P, W, qd[tv], zero)
        else:
            _rates(P, W, qd[tv], x[tx])
        if what == 6:
            for j in range(N):
                out[t, j] = W[8][j]
                out[t, N + j] = W[9][j]
            continue
        _rnea(P, W, True)
        _project(G, W[13], Tq)
        if what == 1:
            for m in range(M):
                out[t, m] = Tq[m]
        elif what == 2:
            _inertia_pose(P, W, Im)
            for m in range(M):
                tmp[m] = x[tx, m] - Tq[m]
            if _cholesky_solve(Im, tmp[:M].copy(), sol):
                for m in range(M):
                    out[t, m] = sol[m]
            else:
                status[t] = 3
        else:
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
            acond[t] = _condition(Gs, Gw)
            if not (acond[t] < maxc):
                status[t] = 3
                continue
            if Na == M:
                for i in range(M):
                    for m in range(M):
                        At[m, i] = Ga[i, m]
                    tmp[i] = Tq[i]
                if _lu(At, M, pv) == 0.0:
                    status[t] = 3
                    continue
                _lu_solve(At, M, pv, tmp)
                for i in range(M):
                    out[t, i] = tmp[i]
            else:
                # least-norm loads: tau = G (G^T G)^-1 T_q
                for a in range(M):
                    for b in range(M):
                        s = 0.0
                        for i in range(Na):
                            s += Ga[i, a] * Ga[i, b]
                        Im[a, b] = s
                if not _cholesky_solve(Im, Tq.copy(), sol):
                    status[t] = 3
                    continue
                for i in range(Na):
                    s = 0.0
                    for m in range(M):
                        s += Ga[i, m] * sol[m]
                    out[t, i] = s
    return buf, status, bad


@_jit
def _single(fbuf, ibuf, what, q, qd, x, act, phi0, path, mode, nB):
    """One configuration given as vectors: :func:`_batch` on one row, with the
    output row, phi and the worst block condition taken out here (each array
    handed back to Python or reshaped there costs a few hundred nanoseconds, a
    tenth of a five-bar pose).  Returns (out, phi, status, condition, bad)."""
    N = phi0.shape[0]
    buf, status, bad = _batch(fbuf, ibuf, what, 1, q.reshape((1, q.shape[0])),
                              qd.reshape((1, qd.shape[0])), x.reshape((1, x.shape[0])), act,
                              phi0.reshape((1, N)), path, mode)
    if bad:
        return np.empty(0), np.empty(0), 0, 0.0, bad
    K = buf.shape[1] - N - 2 - 2 * nB
    cond = 1.0 if nB == 0 else buf[0, K + N + 1]
    for b in range(1, nB):
        cond = max(cond, buf[0, K + N + 1 + b])
    return buf[0, :K].copy(), buf[0, K:K + N].copy(), status[0], cond, 0


# --------------------------------------------------------------------------
# free motion: scipy's DOP853, step for step, in one compiled loop
# --------------------------------------------------------------------------
@_jit
def _place(P, W, phi, q, mode, cond, dsign):
    """Assemble at the coordinates q starting from the joint values in phi (in
    place), form the transfer and check the assembly mode; returns the status
    (0 ok, 1 not assembled, 2 singular block, 4 other mode)."""
    q_idx = P[23]
    for m in range(q_idx.shape[0]):
        phi[q_idx[m]] = q[m]
    st, _ = _assemble_pose(P, W, phi)
    if st == 1:
        return 1
    st2 = _transfer_pose(P, W, cond, dsign)
    if st != 0 or st2 != 0:
        return 2
    for b in range(mode.shape[0]):
        if mode[b] != 0.0 and dsign[b] != mode[b]:
            return 4
    return 0


@_jit
def _free_rhs(P, W, start, phi, y, f, mode, cond, dsign, Im, Tq, b, sol, zero):
    """f = (q', q'') of the free motion (gravity only) at the state y = (q, q'),
    the joint values assembled from ``start``; returns the status."""
    M = Tq.shape[0]
    phi[:] = start
    st = _place(P, W, phi, y[:M], mode, cond, dsign)
    if st != 0:
        return st
    _rates(P, W, y[M:], zero)
    _rnea(P, W, True)
    _project(W[7], W[13], Tq)
    _inertia_pose(P, W, Im)
    for m in range(M):
        b[m] = -Tq[m]
    if not _cholesky_solve(Im, b, sol):
        return 3
    for m in range(M):
        f[m] = y[M + m]
        f[M + m] = sol[m]
    return 0


@_jit
def _rms(x):
    s = 0.0
    for v in x:
        s += v * v
    return np.sqrt(s / x.shape[0])


@_jit
def _free_motion(fbuf, ibuf, mode, A, B, C, E3, E5, order, t, t_end, y0, phi0, h_abs, rtol,
                 atol, max_step, stop_condition, relax, capacity):
    """Integrate the free motion from (t, y0) towards t_end by DOP853 with scipy's
    coefficients, error norm and step-size control (``scipy.integrate.DOP853``,
    step for step), every trial point assembled from the joint values of the last
    accepted step, every accepted step tracked (assembled) and recorded.

    ``h_abs`` <= 0 selects the first step as scipy does.  Stops at t_end (code 0),
    after an accepted step whose worst block condition exceeds ``stop_condition``
    (1), when a trial point fails (2; ``failed`` its status), when the step
    underflows (3), when ``capacity`` steps are recorded (4), or when an accepted
    point cannot be tracked (5; that state is returned, not recorded).  Once a
    step's condition is at most ``relax``, ``stop_condition`` falls to ``relax``
    (hysteresis: a raised threshold holds only while the condition stays high);
    the threshold in effect is returned last."""
    P = _unpack(fbuf, ibuf)
    N, M, R, L, nB, nb = _dims(P)
    W = _work(N, M, R, L, nB, nb)
    n = 2 * M
    S = A.shape[0]
    K = np.empty((S + 1, n))
    ytmp = np.empty(n)
    y = y0.copy()
    y_new = np.empty(n)
    f = np.empty(n)
    start = phi0.copy()
    phi = np.empty(N)
    cond = np.empty(nB)
    dsign = np.empty(nB)
    Im = np.empty((M, M))
    Tq = np.empty(M)
    b = np.empty(M)
    sol = np.empty(M)
    zero = np.zeros(M)
    scale = np.empty(n)
    ts = np.empty(capacity)
    ys = np.empty((capacity, n))
    phis = np.empty((capacity, N))
    conds = np.empty(capacity)
    nfev = 1
    failed = _free_rhs(P, W, start, phi, y, f, mode, cond, dsign, Im, Tq, b, sol, zero)
    k = 0
    code = 0
    last = 0.0
    if failed != 0:
        return 2, 0, ts, ys, phis, conds, t, y, start, h_abs, nfev, failed, last, stop_condition
    exponent = -1.0 / (order + 1)
    if h_abs <= 0.0:
        # scipy.integrate._ivp.common.select_initial_step
        length = t_end - t
        for i in range(n):
            scale[i] = atol + abs(y[i]) * rtol
        d0 = 0.0
        d1 = 0.0
        for i in range(n):
            d0 += (y[i] / scale[i]) ** 2
            d1 += (f[i] / scale[i]) ** 2
        d0 = np.sqrt(d0 / n)
        d1 = np.sqrt(d1 / n)
        h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
        h0 = min(h0, length)
        for i in range(n):
            ytmp[i] = y[i] + h0 * f[i]
        failed = _free_rhs(P, W, start, phi, ytmp, K[0], mode, cond, dsign, Im, Tq, b, sol,
                           zero)
        nfev += 1
        if failed != 0:
            return (2, 0, ts, ys, phis, conds, t, y, start, h_abs,
                    nfev, failed, last, stop_condition)
        d2 = 0.0
        for i in range(n):
            d2 += ((K[0, i] - f[i]) / scale[i]) ** 2
        d2 = np.sqrt(d2 / n) / h0
        if d1 <= 1e-15 and d2 <= 1e-15:
            h1 = max(1e-6, h0 * 1e-3)
        else:
            h1 = (0.01 / max(d1, d2)) ** (1.0 / (order + 1))
        h_abs = min(100 * h0, h1, length, max_step)
    while True:
        if not (t < t_end):
            code = 0
            break
        if k >= capacity:
            code = 4
            break
        min_step = 10 * abs(np.nextafter(t, np.inf) - t)
        h = min(h_abs, max_step) if h_abs > min_step else min_step
        rejected = False
        while True:
            if h < min_step:
                return 3, k, ts, ys, phis, conds, t, y, start, h, nfev, 0, last, stop_condition
            t_new = t + h
            if t_new > t_end:
                t_new = t_end
            h = t_new - t
            # scipy.integrate._ivp.rk.rk_step
            K[0, :] = f
            for s in range(1, S):
                for i in range(n):
                    acc = 0.0
                    for j in range(s):
                        acc += K[j, i] * A[s, j]
                    ytmp[i] = y[i] + acc * h
                failed = _free_rhs(P, W, start, phi, ytmp, K[s], mode, cond, dsign, Im, Tq, b,
                                   sol, zero)
                nfev += 1
                if failed != 0:
                    return (2, k, ts, ys, phis, conds, t, y, start, h,
                            nfev, failed, last, stop_condition)
            for i in range(n):
                acc = 0.0
                for j in range(S):
                    acc += K[j, i] * B[j]
                y_new[i] = y[i] + h * acc
            failed = _free_rhs(P, W, start, phi, y_new, K[S], mode, cond, dsign, Im, Tq, b,
                               sol, zero)
            nfev += 1
            if failed != 0:
                return (2, k, ts, ys, phis, conds, t, y, start, h,
                        nfev, failed, last, stop_condition)
            # DOP853._estimate_error_norm
            e5 = 0.0
            e3 = 0.0
            for i in range(n):
                sc = atol + max(abs(y[i]), abs(y_new[i])) * rtol
                a5 = 0.0
                a3 = 0.0
                for j in range(S + 1):
                    a5 += K[j, i] * E5[j]
                    a3 += K[j, i] * E3[j]
                e5 += (a5 / sc) ** 2
                e3 += (a3 / sc) ** 2
            if e5 == 0.0 and e3 == 0.0:
                error = 0.0
            else:
                error = h * e5 / np.sqrt((e5 + 0.01 * e3) * n)
            if error < 1.0:
                factor = 10.0 if error == 0.0 else min(10.0, 0.9 * error ** exponent)
                if rejected:
                    factor = min(1.0, factor)
                h_abs = h * factor
                break
            h = h * max(0.2, 0.9 * error ** exponent)
            rejected = True
        last = t_new - t
        t = t_new
        y[:] = y_new
        f[:] = K[S]
        phi[:] = start
        st = _place(P, W, phi, y[:M], mode, cond, dsign)
        if st != 0:
            return 5, k, ts, ys, phis, conds, t, y, start, h_abs, nfev, st, last, stop_condition
        start[:] = phi
        worst = 1.0
        for c in range(nB):
            worst = max(worst, cond[c])
        if worst <= relax:
            stop_condition = min(stop_condition, relax)
        ts[k] = t
        ys[k] = y
        phis[k] = phi
        conds[k] = worst
        k += 1
        if worst > stop_condition:
            code = 1
            break
    return code, k, ts, ys, phis, conds, t, y, start, h_abs, nfev, 0, last, stop_condition


# --------------------------------------------------------------------------
# Python entry points
# --------------------------------------------------------------------------
_F8 = np.dtype(np.float64)
_I8 = np.dtype(np.int64)
_EMPTY_I = np.zeros(0, np.int64)
_NAMES = ("", "q", "qd", "qdd or tau", "phi_start")


def _rows(a, width: int, name: str) -> np.ndarray:
    """A C-contiguous float64 (k, width) view or copy of ``a`` ((width,) -> (1, width)).
    Kept lean: this runs on every single-pose call."""
    if type(a) is not np.ndarray or a.dtype is not _F8 or not a.flags.c_contiguous:
        a = np.ascontiguousarray(a, dtype=np.float64)
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2 or a.shape[1] != width:
        from .errors import ModelError
        raise ModelError(f"{name} must have shape (n, {width}) or ({width},), got {a.shape}")
    return a


_NO_MODE = np.zeros(0)


def _mode(plan, mode) -> np.ndarray:
    if mode is None:
        return _NO_MODE
    m = np.ascontiguousarray(np.asarray(mode, dtype=np.float64).reshape(-1))
    # a few blocks: a plain-Python check is cheaper than numpy reductions
    if m.shape[0] != plan.block_row.shape[0] - 1 or any(v not in (-1.0, 0.0, 1.0)
                                                          for v in m.tolist()):
        from .errors import ModelError
        raise ModelError(f"mode must give -1, 0 or +1 for each of the "
                         f"{plan.block_row.shape[0] - 1} blocks, got {mode!r}")
    return m


def _call(plan, what: int, q, qd, x, act, phi, path: bool, mode=None):
    """Check the batch sizes, run the kernel, turn non-finite inputs into ModelError."""
    n = max(q.shape[0], qd.shape[0], x.shape[0], phi.shape[0])
    for a, name in ((q, "q"), (qd, "qd"), (x, "qdd or tau"), (phi, "phi_start")):
        if a.shape[0] not in (1, n):
            from .errors import ModelError
            raise ModelError(f"{name} has {a.shape[0]} rows for a batch of {n}")
    buf, status, bad = _batch(plan.args[0], plan.args[1], what, n, q, qd, x, act, phi, path,
                              _mode(plan, mode))
    if bad:
        from .errors import ModelError
        raise ModelError(f"{_NAMES[bad]} contains NaN or infinite values")
    return _split(plan, buf, status)


_CODE = {"assemble": 0, "inverse_dynamics": 1, "forward_dynamics": 2, "actuator_loads": 3}


def one(plan, what: str, q, qd, x, act, phi_start, path: bool, mode) -> tuple:
    """The lean call for one configuration whose arguments the caller has laid
    out already: ``q``, ``qd``, ``x`` float64 C-contiguous (M,), ``phi_start``
    (N,), ``act`` int64 (Na,) (or empty), ``mode`` float64 (B,) checked once.
    Returns ``(output row, phi, status, worst block condition)``, arrays of
    their own; NaN inputs still raise ModelError."""
    out, phi, status, cond, bad = _single(plan.args[0], plan.args[1], _CODE[what], q, qd, x,
                                          act, phi_start, path, mode,
                                          plan.block_row.shape[0] - 1)
    if bad:
        from .errors import ModelError
        raise ModelError(f"{_NAMES[bad]} contains NaN or infinite values")
    return out, phi, status, cond


def _split(plan, buf, status):
    """(out, phi, status, residual, condition, det_sign, actuation_condition): views
    of the kernel's one output buffer."""
    N, B = plan.parent.shape[0], plan.block_row.shape[0] - 1
    K = buf.shape[1] - N - 2 - 2 * B
    return (buf[:, :K], buf[:, K:K + N], status, buf[:, K + N], buf[:, K + N + 1:K + N + 1 + B],
            buf[:, K + N + 1 + B:K + N + 1 + 2 * B], buf[:, K + N + 1 + 2 * B])


def assemble(plan, q, phi_start, path: bool = False, mode=None):
    """Assemble poses: Newton on the dependent joints from ``phi_start``.

    Parameters
    ----------
    plan : ClosedPlan
    q : array_like, shape (n, M) or (M,)
    phi_start : array_like, shape (n, N) or (N,)
        Start values of every joint (the coordinates are replaced by q); one
        row is used for every pose.
    path : bool
        Treat the batch as a path: each pose starts from the previous assembled
        pose (the first from ``phi_start``), which keeps the assembly branch.
    mode : array_like (B,), optional
        The assembly mode (sign of ``det A_b`` per block, 0 for any) the poses
        must be in, e.g. ``model.mode``; status 4 where they are not.

    Returns
    -------
    phi : ndarray (n, N)
        NaN where not assembled (status 1, or 2 when Newton met a zero pivot).
    status : ndarray (n,) int64
        0 ok, 1 not assembled, 2 singular block, 4 other assembly mode.
    residual : ndarray (n,)
        Worst reduced closure row at the last iterate, position rows divided by
        ``L_char`` (converged: < ``plan.tol``).
    condition : ndarray (n, B)
        Dimensionless 2-norm condition number of each block's ``A_b``.
    det_sign : ndarray (n, B)
        Sign of ``det A_b`` (the assembly mode; 0 if singular).

    Raises
    ------
    kic.ModelError
        Wrong shapes, or NaN/inf inputs.
    ImportError
        numba is not available (check :data:`available` first).
    """
    _require()
    M, N = plan.q_idx.shape[0], plan.parent.shape[0]
    qa = _rows(q, M, "q")
    out = _call(plan, 0, qa, qa, qa, _EMPTY_I, _rows(phi_start, N, "phi_start"), path, mode)
    return out[1], out[2], out[3], out[4], out[5]


def inverse_dynamics(plan, q, qd, qdd, phi_start, path: bool = False, mode=None):
    """Required coordinate loads ``T_q = G^T T_phi`` (n, M), gravity included, after
    assembly (arguments as :func:`assemble`; qd, qdd (n, M) or (M,)).

    Returns ``(T_q, phi, status, residual, condition, det_sign)``; NaN rows where
    status != 0.
    """
    _require()
    M, N = plan.q_idx.shape[0], plan.parent.shape[0]
    out = _call(plan, 1, _rows(q, M, "q"), _rows(qd, M, "qd"), _rows(qdd, M, "qdd"),
                _EMPTY_I, _rows(phi_start, N, "phi_start"), path, mode)
    return out[0], out[1], out[2], out[3], out[4], out[5]


def forward_dynamics(plan, q, qd, tau, phi_start, path: bool = False, mode=None):
    """Coordinate accelerations ``q'' = I*^-1 (tau - bias)`` (n, M), after assembly.

    Returns ``(qdd, phi, status, residual, condition, det_sign)``; status 3 where
    I* is singular (a Cholesky pivot <= 1e-12 of its diagonal entry).
    """
    _require()
    M, N = plan.q_idx.shape[0], plan.parent.shape[0]
    out = _call(plan, 2, _rows(q, M, "q"), _rows(qd, M, "qd"), _rows(tau, M, "tau"),
                _EMPTY_I, _rows(phi_start, N, "phi_start"), path, mode)
    return out[0], out[1], out[2], out[3], out[4], out[5]


def actuator_loads(plan, q, qd, qdd, act_idx, phi_start, path: bool = False, mode=None):
    """Loads of the actuated joints ``act_idx`` (n, Na) for a motion, after assembly.

    ``(G^a)^T tau_a = T_q`` solved exactly when Na = M, by its least-norm solution
    ``tau_a = G^a (G^a^T G^a)^-1 T_q`` when Na > M.  Returns ``(tau_a, phi,
    status, residual, condition, det_sign, actuation_condition)``, the last the
    dimensionless 2-norm condition number of ``G^a`` (prismatic coordinates
    times ``L_char``, prismatic actuators divided by it); status 3 where it is
    >= ``plan.max_condition``.
    """
    _require()
    M, N = plan.q_idx.shape[0], plan.parent.shape[0]
    act = act_idx
    if type(act) is not np.ndarray or act.dtype is not _I8 or act.ndim != 1 or \
            not act.flags.c_contiguous:
        act = np.ascontiguousarray(np.asarray(act_idx, dtype=np.int64).reshape(-1))
    idx = act.tolist()                  # plain ints: cheaper than numpy reductions here
    if len(idx) < M or min(idx) < 0 or max(idx) >= N or len(set(idx)) != len(idx):
        from .errors import ModelError
        raise ModelError(f"act_idx must name at least {M} distinct joints in 0..{N - 1}, "
                         f"got {idx}")
    out = _call(plan, 3, _rows(q, M, "q"), _rows(qd, M, "qd"), _rows(qdd, M, "qdd"), act,
                _rows(phi_start, N, "phi_start"), path, mode)
    return out[0], out[1], out[2], out[3], out[4], out[5], out[6]


def rates(plan, q, qd, qdd, phi_start, path: bool = False, mode=None):
    """Joint rates phi' = G q' and accelerations phi'' = G q'' - A^-1 b (n, N) each,
    after assembly.  Returns ``(phid, phidd, phi, status, residual, condition,
    det_sign)``."""
    _require()
    M, N = plan.q_idx.shape[0], plan.parent.shape[0]
    out = _call(plan, 6, _rows(q, M, "q"), _rows(qd, M, "qd"), _rows(qdd, M, "qdd"),
                _EMPTY_I, _rows(phi_start, N, "phi_start"), path, mode)
    return out[0][:, :N], out[0][:, N:], out[1], out[2], out[3], out[4], out[5]


def _at_phi(plan, phi, what: int):
    _require()
    M, N = plan.q_idx.shape[0], plan.parent.shape[0]
    ph = _rows(phi, N, "phi")
    z = np.zeros((1, M))
    return _call(plan, what, z, z, z, _EMPTY_I, ph, False)


def transfer(plan, phi):
    """``G^phi_q`` (n, N, M) at assembled joint values ``phi`` (n, N) or (N,).

    Returns ``(G, status, residual, condition, det_sign)``; the residual of phi
    is reported, not corrected.
    """
    out = _at_phi(plan, phi, 4)
    n, N, M = out[1].shape[0], plan.parent.shape[0], plan.q_idx.shape[0]
    return out[0].reshape(n, N, M), out[2], out[3], out[4], out[5]


def inertia(plan, phi):
    """Effective inertia ``I*_q`` (n, M, M) at assembled joint values ``phi``.

    Returns ``(I_star, status, residual, condition, det_sign)``.
    """
    out = _at_phi(plan, phi, 5)
    n, M = out[1].shape[0], plan.q_idx.shape[0]
    return out[0].reshape(n, M, M), out[2], out[3], out[4], out[5]


# --------------------------------------------------------------------------
# design axis: many float buffers (designs) sharing one int buffer (structure)
# --------------------------------------------------------------------------
@_jit
def _composite_inertia(nl, parent, order, mass, com, inertia, gravity, FL, SL, GL, qcol,
                       empty, Ic, HG, Tphi, fw, hw, Im, T0, rest):
    """I*_q and, for the lanes at rest (``rest``, q' = 0), the gravity load
    T0 = G^T T_phi from the same composites, by composite rigid bodies on the
    tree, for the first ``nl`` of V poses of one design side by side (the lanes:
    the last axis of every array, as :func:`_conditions_lanes`; the loops over
    them carry no branches, so they become vector instructions).  Per lane: ``FL`` (N, 12, V)
    the rows 0..2 of the joints' frames F, ``SL`` (N, 6, V) their screws, ``GL``
    (N, M, V) G^phi_q; out ``Im`` (M, M, V), ``T0`` (M, V) (lanes not at rest
    keep theirs); ``Ic`` (N, 10, V), ``HG`` (N, M, V), ``Tphi`` (N, V), ``fw``
    (6, V), ``hw`` (V,) and ``empty`` (N,) bool are work.

    A body's spatial inertia about the world origin, in the screw coordinates
    [omega; v_O] of :func:`_frames`, is ``[[I_O, [h]x], [-[h]x, m 1]]`` (kinetic
    energy ``s^T M s / 2``): m its mass, h = m c its first moment (c its world
    centroid), I_O = I_w + m (|c|^2 1 - c c^T) its inertia about the origin (I_w
    the central inertia in world axes), [h]x the cross-product matrix.  Those
    ten numbers (m, h, the upper triangle of I_O) add over a subtree, so a
    composite is kept as them: Ic_j of the subtree of joint j gives
    ``f_j = Ic_j S_j = [I_O w + h x v; m v - h x w]`` (S_j = [w; v]), the
    joint-space inertia ``H_ij = S_i^T f_j`` (i an ancestor of j, or j) and
    ``I*_q = G^T H G``; at rest the joint loads of gravity are
    ``S_j^T Ic_j [0; -g] = -w . (h x g) - m v . g`` (the subtree's weight, as the
    Newton-Euler pass with the base accelerated by -g).  ``qcol[j]`` is m where
    joint j is coordinate m (its row of G the unit row e_m), else -1."""
    N, M = GL.shape[0], GL.shape[1]
    for j in range(N):
        m = mass[j]
        empty[j] = m <= 0.0 and inertia[j, 0, 0] == 0.0 and inertia[j, 1, 1] == 0.0 \
            and inertia[j, 2, 2] == 0.0
        if empty[j]:
            for a in range(10):
                for u in range(nl):
                    Ic[j, a, u] = 0.0
            continue
        k0, k1, k2 = com[j, 0], com[j, 1], com[j, 2]
        J00, J01, J02 = inertia[j, 0, 0], inertia[j, 0, 1], inertia[j, 0, 2]
        J10, J11, J12 = inertia[j, 1, 0], inertia[j, 1, 1], inertia[j, 1, 2]
        J20, J21, J22 = inertia[j, 2, 0], inertia[j, 2, 1], inertia[j, 2, 2]
        for u in range(nl):
            R00, R01, R02, o0 = FL[j, 0, u], FL[j, 1, u], FL[j, 2, u], FL[j, 3, u]
            R10, R11, R12, o1 = FL[j, 4, u], FL[j, 5, u], FL[j, 6, u], FL[j, 7, u]
            R20, R21, R22, o2 = FL[j, 8, u], FL[j, 9, u], FL[j, 10, u], FL[j, 11, u]
            c0 = R00 * k0 + R01 * k1 + R02 * k2 + o0
            c1 = R10 * k0 + R11 * k1 + R12 * k2 + o1
            c2 = R20 * k0 + R21 * k1 + R22 * k2 + o2
            # I_w = R I R^T, its upper triangle (the rows of R I once)
            a0 = R00 * J00 + R01 * J10 + R02 * J20
            a1 = R00 * J01 + R01 * J11 + R02 * J21
            a2 = R00 * J02 + R01 * J12 + R02 * J22
            b0 = R10 * J00 + R11 * J10 + R12 * J20
            b1 = R10 * J01 + R11 * J11 + R12 * J21
            b2 = R10 * J02 + R11 * J12 + R12 * J22
            e0 = R20 * J00 + R21 * J10 + R22 * J20
            e1 = R20 * J01 + R21 * J11 + R22 * J21
            e2 = R20 * J02 + R21 * J12 + R22 * J22
            cc = c0 * c0 + c1 * c1 + c2 * c2
            Ic[j, 0, u] = m
            Ic[j, 1, u] = m * c0
            Ic[j, 2, u] = m * c1
            Ic[j, 3, u] = m * c2
            Ic[j, 4, u] = (a0 * R00 + a1 * R01 + a2 * R02) + m * (cc - c0 * c0)
            Ic[j, 5, u] = (a0 * R10 + a1 * R11 + a2 * R12) - m * c0 * c1
            Ic[j, 6, u] = (a0 * R20 + a1 * R21 + a2 * R22) - m * c0 * c2
            Ic[j, 7, u] = (b0 * R10 + b1 * R11 + b2 * R12) + m * (cc - c1 * c1)
            Ic[j, 8, u] = (b0 * R20 + b1 * R21 + b2 * R22) - m * c1 * c2
            Ic[j, 9, u] = (e0 * R20 + e1 * R21 + e2 * R22) + m * (cc - c2 * c2)
    # composites: children before parents (``empty`` becomes: the subtree is,
    # the design's, the same in every lane)
    for jj in range(N - 1, -1, -1):
        j = order[jj]
        p = parent[j]
        if p >= 0 and not empty[j]:
            empty[p] = False
            for a in range(10):
                for u in range(nl):
                    Ic[p, a, u] += Ic[j, a, u]
    # HG = H G, pair by pair along every path
    for j in range(N):
        for a in range(M):
            for u in range(nl):
                HG[j, a, u] = 0.0
    gx, gy, gz = gravity[0], gravity[1], gravity[2]
    for j in range(N):
        if empty[j]:
            for u in range(nl):
                Tphi[j, u] = 0.0
            continue
        for u in range(nl):
            m, h0, h1, h2 = Ic[j, 0, u], Ic[j, 1, u], Ic[j, 2, u], Ic[j, 3, u]
            w0, w1, w2 = SL[j, 0, u], SL[j, 1, u], SL[j, 2, u]
            v0, v1, v2 = SL[j, 3, u], SL[j, 4, u], SL[j, 5, u]
            fw[0, u] = Ic[j, 4, u] * w0 + Ic[j, 5, u] * w1 + Ic[j, 6, u] * w2 \
                + (h1 * v2 - h2 * v1)
            fw[1, u] = Ic[j, 5, u] * w0 + Ic[j, 7, u] * w1 + Ic[j, 8, u] * w2 \
                + (h2 * v0 - h0 * v2)
            fw[2, u] = Ic[j, 6, u] * w0 + Ic[j, 8, u] * w1 + Ic[j, 9, u] * w2 \
                + (h0 * v1 - h1 * v0)
            fw[3, u] = m * v0 - (h1 * w2 - h2 * w1)
            fw[4, u] = m * v1 - (h2 * w0 - h0 * w2)
            fw[5, u] = m * v2 - (h0 * w1 - h1 * w0)
            # S_j^T Ic_j [0; -g] = -w . (h x g) - m v . g
            Tphi[j, u] = -(w0 * (h1 * gz - h2 * gy) + w1 * (h2 * gx - h0 * gz)
                           + w2 * (h0 * gy - h1 * gx)) - m * (v0 * gx + v1 * gy + v2 * gz)
        qj = qcol[j]
        i = j
        while i >= 0:
            for u in range(nl):
                hw[u] = (SL[i, 0, u] * fw[0, u] + SL[i, 1, u] * fw[1, u]
                         + SL[i, 2, u] * fw[2, u] + SL[i, 3, u] * fw[3, u]
                         + SL[i, 4, u] * fw[4, u] + SL[i, 5, u] * fw[5, u])
            # a coordinate's row of G is a unit row: only its 1 adds
            if qj >= 0:
                for u in range(nl):
                    HG[i, qj, u] += hw[u]
            else:
                for a in range(M):
                    for u in range(nl):
                        HG[i, a, u] += hw[u] * GL[j, a, u]
            if i != j:
                qi = qcol[i]
                if qi >= 0:
                    for u in range(nl):
                        HG[j, qi, u] += hw[u]
                else:
                    for a in range(M):
                        for u in range(nl):
                            HG[j, a, u] += hw[u] * GL[i, a, u]
            i = parent[i]
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
    # T0 = G^T T_phi where at rest (the sums in the order of j, as _project)
    for m in range(M):
        for u in range(nl):
            hw[u] = 0.0
        for j in range(N):
            for u in range(nl):
                hw[u] += GL[j, m, u] * Tphi[j, u]
        for u in range(nl):
            T0[m, u] = hw[u] if rest[u] else T0[m, u]


@_jit
def _identity_flags(origin, offset, T_a, T_b, flags):
    """Per joint j: bit 0 the rotation of ``origin[j]`` is the identity, bit 1
    ``offset[j]`` is the identity; per loop side (N + 2 l + side): bit 0 the
    rotation of its closure frame is the identity (for :func:`_design_frames`)."""
    N = origin.shape[0]
    L = T_a.shape[0]
    for j in range(N):
        f = 0
        one = True
        for i in range(3):
            for c in range(3):
                if origin[j, i, c] != (1.0 if i == c else 0.0):
                    one = False
        if one:
            f |= 1
        one = True
        for i in range(4):
            for c in range(4):
                if offset[j, i, c] != (1.0 if i == c else 0.0):
                    one = False
        if one:
            f |= 2
        flags[j] = f
    for l in range(L):
        for side in range(2):
            one = True
            for i in range(3):
                for c in range(3):
                    t = T_a[l, i, c] if side == 0 else T_b[l, i, c]
                    if t != (1.0 if i == c else 0.0):
                        one = False
            flags[N + 2 * l + side] = 1 if one else 0


@_jit
def _design_frames(parent, order, isR, axis, origin, offset, body_a, T_a, body_b, T_b, phi,
                   flags, F, S, X):
    """:func:`_frames` and :func:`_side_frames` in one pass for the design batches,
    the same numbers: a product with an identity rotation (``flags``, from
    :func:`_identity_flags`: the joints' origins and offsets, the closure frames)
    is a copy, so it is not formed."""
    N = order.shape[0]
    for jj in range(N):
        j = order[jj]
        pj = parent[j]
        fl = flags[j]
        # J = F_parent @ origin (rows 0..2)
        if pj < 0:
            j00, j01, j02, j03 = origin[j, 0, 0], origin[j, 0, 1], origin[j, 0, 2], origin[j, 0, 3]
            j10, j11, j12, j13 = origin[j, 1, 0], origin[j, 1, 1], origin[j, 1, 2], origin[j, 1, 3]
            j20, j21, j22, j23 = origin[j, 2, 0], origin[j, 2, 1], origin[j, 2, 2], origin[j, 2, 3]
        else:
            t0, t1, t2 = origin[j, 0, 3], origin[j, 1, 3], origin[j, 2, 3]
            j03 = F[pj, 0, 0] * t0 + F[pj, 0, 1] * t1 + F[pj, 0, 2] * t2 + F[pj, 0, 3]
            j13 = F[pj, 1, 0] * t0 + F[pj, 1, 1] * t1 + F[pj, 1, 2] * t2 + F[pj, 1, 3]
            j23 = F[pj, 2, 0] * t0 + F[pj, 2, 1] * t1 + F[pj, 2, 2] * t2 + F[pj, 2, 3]
            if fl & 1:
                j00, j01, j02 = F[pj, 0, 0], F[pj, 0, 1], F[pj, 0, 2]
                j10, j11, j12 = F[pj, 1, 0], F[pj, 1, 1], F[pj, 1, 2]
                j20, j21, j22 = F[pj, 2, 0], F[pj, 2, 1], F[pj, 2, 2]
            else:
                j00 = F[pj, 0, 0] * origin[j, 0, 0] + F[pj, 0, 1] * origin[j, 1, 0] \
                    + F[pj, 0, 2] * origin[j, 2, 0]
                j01 = F[pj, 0, 0] * origin[j, 0, 1] + F[pj, 0, 1] * origin[j, 1, 1] \
                    + F[pj, 0, 2] * origin[j, 2, 1]
                j02 = F[pj, 0, 0] * origin[j, 0, 2] + F[pj, 0, 1] * origin[j, 1, 2] \
                    + F[pj, 0, 2] * origin[j, 2, 2]
                j10 = F[pj, 1, 0] * origin[j, 0, 0] + F[pj, 1, 1] * origin[j, 1, 0] \
                    + F[pj, 1, 2] * origin[j, 2, 0]
                j11 = F[pj, 1, 0] * origin[j, 0, 1] + F[pj, 1, 1] * origin[j, 1, 1] \
                    + F[pj, 1, 2] * origin[j, 2, 1]
                j12 = F[pj, 1, 0] * origin[j, 0, 2] + F[pj, 1, 1] * origin[j, 1, 2] \
                    + F[pj, 1, 2] * origin[j, 2, 2]
                j20 = F[pj, 2, 0] * origin[j, 0, 0] + F[pj, 2, 1] * origin[j, 1, 0] \
                    + F[pj, 2, 2] * origin[j, 2, 0]
                j21 = F[pj, 2, 0] * origin[j, 0, 1] + F[pj, 2, 1] * origin[j, 1, 1] \
                    + F[pj, 2, 2] * origin[j, 2, 1]
                j22 = F[pj, 2, 0] * origin[j, 0, 2] + F[pj, 2, 1] * origin[j, 1, 2] \
                    + F[pj, 2, 2] * origin[j, 2, 2]
        a0, a1, a2 = axis[j, 0], axis[j, 1], axis[j, 2]
        s0 = j00 * a0 + j01 * a1 + j02 * a2
        s1 = j10 * a0 + j11 * a1 + j12 * a2
        s2 = j20 * a0 + j21 * a1 + j22 * a2
        x = phi[j]
        if isR[j]:
            c = np.cos(x)
            s = np.sin(x)
            t = 1.0 - c
            # Rodrigues: c I + s [a]x + (1 - c) a a^T
            r00 = c + t * a0 * a0
            r01 = t * a0 * a1 - s * a2
            r02 = t * a0 * a2 + s * a1
            r10 = t * a1 * a0 + s * a2
            r11 = c + t * a1 * a1
            r12 = t * a1 * a2 - s * a0
            r20 = t * a2 * a0 - s * a1
            r21 = t * a2 * a1 + s * a0
            r22 = c + t * a2 * a2
            j00, j01, j02 = (j00 * r00 + j01 * r10 + j02 * r20, j00 * r01 + j01 * r11 + j02 * r21,
                             j00 * r02 + j01 * r12 + j02 * r22)
            j10, j11, j12 = (j10 * r00 + j11 * r10 + j12 * r20, j10 * r01 + j11 * r11 + j12 * r21,
                             j10 * r02 + j11 * r12 + j12 * r22)
            j20, j21, j22 = (j20 * r00 + j21 * r10 + j22 * r20, j20 * r01 + j21 * r11 + j22 * r21,
                             j20 * r02 + j21 * r12 + j22 * r22)
            S[j, 0] = s0
            S[j, 1] = s1
            S[j, 2] = s2
            # the velocity of the body point at the world origin: omega x (0 - o) = o x s
            S[j, 3] = j13 * s2 - j23 * s1
            S[j, 4] = j23 * s0 - j03 * s2
            S[j, 5] = j03 * s1 - j13 * s0
        else:
            j03 += x * s0
            j13 += x * s1
            j23 += x * s2
            S[j, 0] = 0.0
            S[j, 1] = 0.0
            S[j, 2] = 0.0
            S[j, 3] = s0
            S[j, 4] = s1
            S[j, 5] = s2
        if fl & 2:
            F[j, 0, 0], F[j, 0, 1], F[j, 0, 2], F[j, 0, 3] = j00, j01, j02, j03
            F[j, 1, 0], F[j, 1, 1], F[j, 1, 2], F[j, 1, 3] = j10, j11, j12, j13
            F[j, 2, 0], F[j, 2, 1], F[j, 2, 2], F[j, 2, 3] = j20, j21, j22, j23
        else:
            for c in range(4):
                o0, o1, o2 = offset[j, 0, c], offset[j, 1, c], offset[j, 2, c]
                F[j, 0, c] = j00 * o0 + j01 * o1 + j02 * o2
                F[j, 1, c] = j10 * o0 + j11 * o1 + j12 * o2
                F[j, 2, c] = j20 * o0 + j21 * o1 + j22 * o2
            F[j, 0, 3] += j03
            F[j, 1, 3] += j13
            F[j, 2, 3] += j23
        F[j, 3, 0] = 0.0
        F[j, 3, 1] = 0.0
        F[j, 3, 2] = 0.0
        F[j, 3, 3] = 1.0
    # the two sides of every loop (side B on the ground: T_b)
    L = body_a.shape[0]
    for l in range(L):
        for side in range(2):
            b = body_a[l] if side == 0 else body_b[l]
            T = T_a if side == 0 else T_b
            if b < 0:
                for i in range(4):
                    for c in range(4):
                        X[l, side, i, c] = T[l, i, c]
                continue
            t0, t1, t2 = T[l, 0, 3], T[l, 1, 3], T[l, 2, 3]
            for i in range(3):
                if flags[N + 2 * l + side] & 1:
                    X[l, side, i, 0] = F[b, i, 0]
                    X[l, side, i, 1] = F[b, i, 1]
                    X[l, side, i, 2] = F[b, i, 2]
                else:
                    for c in range(3):
                        X[l, side, i, c] = F[b, i, 0] * T[l, 0, c] + F[b, i, 1] * T[l, 1, c] \
                            + F[b, i, 2] * T[l, 2, c]
                X[l, side, i, 3] = F[b, i, 0] * t0 + F[b, i, 1] * t1 + F[b, i, 2] * t2 + F[b, i, 3]
            X[l, side, 3, 0] = 0.0
            X[l, side, 3, 1] = 0.0
            X[l, side, 3, 2] = 0.0
            X[l, side, 3, 3] = 1.0




#: the Frobenius condition ||A||_F ||A^-1||_F bounds the 2-norm one: kappa_2 <=
#: kappa_F <= n kappa_2 (n x n).  The design batches decide "below max_condition"
#: from it and form kappa_2 by Jacobi only in between; the margin covers the
#: rounding of A^-1 from the LU factors many times over (kappa <= max_condition
#: there, so that error is below max_condition * 1e-15).
FROBENIUS_MARGIN = 4.0


@_jit
def _transfer_lanes(nl, isR, row_is_rot, dep, block_row, q_idx, Lc, maxc, JA, JQ, pending, GL,
                    DS, ST, LUL, PV, XL, fro, fri, sgn, big, As, Aw):
    """:func:`_transfer_pose` for the first ``nl`` of V poses side by side in lanes
    (the last axis, as :func:`_composite_inertia`): the blocks' LU factors with
    partial pivoting (the pivots' choices and row swaps as selects per lane, the
    arithmetic of :func:`_lu` in its order), each block's M columns of
    ``-A_b^-1 B_b`` and its nb columns of ``A_b^-1`` by the operations of
    :func:`_lu_solve`; G^phi_q into ``GL`` (N, M, V) where ``pending``.  In:
    ``JA`` (R, nb, V) each closure row's entries in its block's columns (``dep``),
    ``JQ`` (R, M, V) in the coordinates' columns.  Out: ``DS`` (B, V) the blocks'
    det signs, ``ST`` (V,) 2 where a block is singular, else 0.

    A block is singular where its dimensionless 2-norm condition is not below
    ``maxc``, as in :func:`_transfer_pose`; that is decided from the Frobenius
    condition of the scaled block, and only where that bound cannot decide
    (FROBENIUS_MARGIN) from :func:`_condition` (As, Aw (nb, nb) work).  ``LUL``
    (nb, nb, V), ``PV`` (nb, V) int, ``XL`` (nb, M + nb, V), ``fro``, ``fri``,
    ``sgn``, ``big`` (V,) are work."""
    M = JQ.shape[1]
    nB = block_row.shape[0] - 1
    inv_L = 1.0 / Lc
    for u in range(nl):
        ST[u] = 0
    for b in range(nB):
        r0, r1 = block_row[b], block_row[b + 1]
        nb = r1 - r0
        W = M + nb
        # the block and the square of its dimensionless Frobenius norm: position
        # rows / L, prismatic columns * L (a bound: products, not divisions)
        for u in range(nl):
            fro[u] = 0.0
            sgn[u] = 1.0
        for i in range(nb):
            rs = 1.0 if row_is_rot[r0 + i] else inv_L
            for c in range(nb):
                cs = 1.0 if isR[dep[r0 + c]] else Lc
                for u in range(nl):
                    a = JA[r0 + i, c, u]
                    LUL[i, c, u] = a
                    a = a * rs * cs
                    fro[u] += a * a
        # _lu of the blocks, in place
        for k in range(nb):
            for u in range(nl):
                big[u] = abs(LUL[k, k, u])
                PV[k, u] = k
            for i in range(k + 1, nb):
                for u in range(nl):
                    v = abs(LUL[i, k, u])
                    take = v > big[u]
                    big[u] = v if take else big[u]
                    PV[k, u] = i if take else PV[k, u]
            for i in range(k + 1, nb):          # row k <-> row PV[k] (> k), or none
                for c in range(nb):
                    for u in range(nl):
                        sel = PV[k, u] == i
                        x = LUL[k, c, u]
                        y = LUL[i, c, u]
                        LUL[k, c, u] = y if sel else x
                        LUL[i, c, u] = x if sel else y
            for u in range(nl):
                bad = not (big[u] > 0.0) or not np.isfinite(big[u])
                s = -sgn[u] if PV[k, u] != k else sgn[u]
                s = -s if LUL[k, k, u] < 0.0 else s
                sgn[u] = 0.0 if bad else s
            for i in range(k + 1, nb):
                for u in range(nl):
                    LUL[i, k, u] *= 1.0 / LUL[k, k, u]
                for c in range(k + 1, nb):
                    for u in range(nl):
                        LUL[i, c, u] -= LUL[i, k, u] * LUL[k, c, u]
        # the M + nb right-hand sides at once, each by the operations of _lu_solve
        for i in range(nb):
            for m in range(M):
                for u in range(nl):
                    XL[i, m, u] = -JQ[r0 + i, m, u]
            for c in range(nb):
                for u in range(nl):
                    XL[i, M + c, u] = 1.0 if i == c else 0.0
        for k in range(nb):
            for i in range(k + 1, nb):
                for m in range(W):
                    for u in range(nl):
                        sel = PV[k, u] == i
                        x = XL[k, m, u]
                        y = XL[i, m, u]
                        XL[k, m, u] = y if sel else x
                        XL[i, m, u] = x if sel else y
        for i in range(nb):
            for c in range(i):
                for m in range(W):
                    for u in range(nl):
                        XL[i, m, u] -= LUL[i, c, u] * XL[c, m, u]
        for i in range(nb - 1, -1, -1):
            for c in range(i + 1, nb):
                for m in range(W):
                    for u in range(nl):
                        XL[i, m, u] -= LUL[i, c, u] * XL[c, m, u]
            for m in range(M):
                for u in range(nl):
                    XL[i, m, u] = XL[i, m, u] / LUL[i, i, u]
            for m in range(M, W):               # the inverse only bounds: products
                for u in range(nl):
                    XL[i, m, u] *= 1.0 / LUL[i, i, u]
        # the scaled block's inverse is Dc^-1 A^-1 Dr^-1 (A_s = Dr A Dc)
        for u in range(nl):
            fri[u] = 0.0
        for i in range(nb):
            cs = 1.0 if isR[dep[r0 + i]] else inv_L
            for c in range(nb):
                rs = 1.0 if row_is_rot[r0 + c] else Lc
                for u in range(nl):
                    a = XL[i, M + c, u] * cs * rs
                    fri[u] += a * a
        for u in range(nl):
            DS[b, u] = 0.0 if sgn[u] == 0.0 else sgn[u]
            if not pending[u] or ST[u] != 0:
                continue
            if sgn[u] == 0.0:
                ST[u] = 2
                continue
            kf = np.sqrt(fro[u] * fri[u])
            if kf * FROBENIUS_MARGIN < maxc:
                continue
            if kf > FROBENIUS_MARGIN * nb * maxc:
                ST[u] = 2                         # kappa_2 >= kappa_F / nb >= maxc
                continue
            # in between (or not finite): the 2-norm condition itself
            for i in range(nb):
                for c in range(nb):
                    a = JA[r0 + i, c, u]
                    if not row_is_rot[r0 + i]:
                        a /= Lc
                    if not isR[dep[r0 + c]]:
                        a *= Lc
                    As[i, c] = a
            if not (_condition(As[:nb, :nb], Aw[:nb, :nb]) < maxc):
                ST[u] = 2
        for i in range(nb):
            j = dep[r0 + i]
            for m in range(M):
                for u in range(nl):
                    GL[j, m, u] = XL[i, m, u] if pending[u] else GL[j, m, u]


@_jit
def _round_robin(n):
    """The n (n - 1) / 2 column pairs (p < q) of a Jacobi sweep in round-robin
    order: n - 1 rounds (n rounded up to even) of disjoint pairs, so consecutive
    rotations are independent."""
    n2 = n + (n % 2)
    pos = np.arange(n2)
    pairs = np.empty((n * (n - 1) // 2, 2), np.int64)
    k = 0
    for rnd in range(n2 - 1):
        for i in range(n2 // 2):
            a, b = pos[i], pos[n2 - 1 - i]
            if a < n and b < n:
                pairs[k, 0] = min(a, b)
                pairs[k, 1] = max(a, b)
                k += 1
        last = pos[n2 - 1]
        for i in range(n2 - 1, 1, -1):
            pos[i] = pos[i - 1]
        pos[1] = last
    return pairs


@_jit
def _conditions_lanes(A, count, work, norms, gam, cs, sn, pairs, cond, live, turned):
    """2-norm condition numbers of the matrices ``A[:count]`` (each m x n, m >= n)
    into ``cond[:count]``: :func:`_condition`'s one-sided Jacobi rotations and
    stopping rule (a sweep without a rotation; inf if singular or not finite),
    with savings that change its numbers by rounding only:

    * the column pairs of a sweep in the order ``pairs`` (:func:`_round_robin`);
    * the test of a pair squared (no square root) and the rotation's tangent with
      one division fewer;
    * the squared column norms kept up to date through the rotations
      (``alpha - t gamma``, ``beta + t gamma``) and formed anew at the start of
      every sweep, so a pair costs one dot product, not three (a sweep that ends
      the iteration rotates nothing, so its test uses exact norms; the singular
      values are the norms of the final columns, formed from them);
    * the matrices side by side in lanes: ``work`` (n, m, V) holds entry (i, c) of
      matrix u at ``[c, i, u]``, and every step is a loop over the V lanes
      without branches, which the compiler turns into vector instructions (the
      square roots and divisions of a rotation bound the cost; V >= 32 fills the
      vector loop).  A lane that does not rotate (its pair is orthogonal, or
      its matrix has converged) takes t = 0, cos = 1, sin = 0, which leaves its
      numbers as they are; the sweeps go on while any lane rotates.  Each
      matrix sees the operations of one matrix alone, so the numbers do not
      depend on the others or on the vector width.

    ``norms`` (n, V), ``gam``, ``cs``, ``sn`` (V,), ``live`` and ``turned`` (V,)
    bool are overwritten; lanes past ``count`` hold the identity."""
    m, n = A.shape[1], A.shape[2]
    V = work.shape[2]
    for c in range(n):
        for i in range(m):
            for u in range(V):
                work[c, i, u] = A[u, i, c] if u < count else (1.0 if i == c else 0.0)
    for u in range(V):
        live[u] = u < count
    for sweep in range(60):
        for u in range(V):
            turned[u] = False
        for c in range(n):
            for u in range(V):
                norms[c, u] = 0.0
            for i in range(m):
                for u in range(V):
                    norms[c, u] += work[c, i, u] * work[c, i, u]
        for k in range(pairs.shape[0]):
            p = pairs[k, 0]
            r = pairs[k, 1]
            for u in range(V):
                gam[u] = 0.0
            for i in range(m):
                for u in range(V):
                    gam[u] += work[p, i, u] * work[r, i, u]
            for u in range(V):
                alpha = norms[p, u]
                beta = norms[r, u]
                gamma = gam[u]
                # |gamma| > 1e-15 sqrt(alpha beta), squared: no square root per pair
                rot = live[u] & (gamma * gamma > 1e-30 * (alpha * beta))
                # t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)), zeta = (beta - alpha) /
                # (2 gamma), times 2 |gamma| above and below: one division fewer
                db = beta - alpha
                g2 = 2.0 * abs(gamma)
                t = g2 / (abs(db) + np.sqrt(db * db + g2 * g2))
                t = -t if db * gamma < 0.0 else t
                t = t if rot else 0.0
                c_ = 1.0 / np.sqrt(1.0 + t * t)
                cs[u] = c_
                sn[u] = c_ * t
                turned[u] = turned[u] | rot
                norms[p, u] = alpha - t * gamma
                norms[r, u] = beta + t * gamma
            for i in range(m):
                for u in range(V):
                    x = work[p, i, u]
                    y = work[r, i, u]
                    work[p, i, u] = cs[u] * x - sn[u] * y
                    work[r, i, u] = sn[u] * x + cs[u] * y
        more = False
        for u in range(V):
            live[u] = live[u] & turned[u]
            more = more or live[u]
        if not more:
            break
    for u in range(count):
        cond[u] = _norm_ratio(work[:, :, u].T, m, n)     # lane u's columns as columns


@_jit
def _actuation_flush(count, pd, pt, PGa, PGs, pmaxc, pairs, work, norms, gam, cs, sn, cv, live,
                     turned, At, pv, TA, Ch, rhs, sol, loads, status, acond, aloads):
    """The actuation of the ``count`` poses waiting in the buffers (design pd[u],
    pose pt[u]; G^a in PGa, its dimensionless copy in PGs): the condition numbers
    (side by side, :func:`_conditions_lanes`), status 3 past ``pmaxc[u]``,
    else the actuator loads of the K accelerations from ``loads``."""
    _conditions_lanes(PGs, count, work, norms, gam, cs, sn, pairs, cv, live, turned)
    M = At.shape[0]
    K = loads.shape[2]
    Na = PGa.shape[1]
    for u in range(count):
        d = pd[u]
        t = pt[u]
        acond[d, t] = cv[u]
        if not (acond[d, t] < pmaxc[u]):
            status[d, t] = 3
            continue
        if Na == M:
            for i in range(M):
                for m in range(M):
                    At[m, i] = PGa[u, i, m]
            if _lu(At, M, pv) == 0.0:
                status[d, t] = 3
                continue
            # the K right-hand sides at once, each by the operations of _lu_solve
            for i in range(M):
                for k in range(K):
                    TA[i, k] = loads[d, t, k, i]
            for i in range(M):
                p = pv[i]
                if p != i:
                    for k in range(K):
                        f = TA[i, k]
                        TA[i, k] = TA[p, k]
                        TA[p, k] = f
            for i in range(M):
                for c in range(i):
                    f = At[i, c]
                    for k in range(K):
                        TA[i, k] -= f * TA[c, k]
            for i in range(M - 1, -1, -1):
                for c in range(i + 1, M):
                    f = At[i, c]
                    for k in range(K):
                        TA[i, k] -= f * TA[c, k]
                f = At[i, i]
                for k in range(K):
                    TA[i, k] = TA[i, k] / f
            for k in range(K):
                for i in range(M):
                    aloads[d, t, k, i] = TA[i, k]
        else:
            # least-norm loads: tau = G (G^T G)^-1 T_q
            ok = True
            for k in range(K):
                for a in range(M):
                    rhs[a] = loads[d, t, k, a]
                    for b in range(M):
                        s = 0.0
                        for i in range(Na):
                            s += PGa[u, i, a] * PGa[u, i, b]
                        Ch[a, b] = s
                if not _cholesky_solve(Ch, rhs, sol):
                    ok = False
                    break
                for i in range(Na):
                    s = 0.0
                    for m in range(M):
                        s += PGa[u, i, m] * sol[m]
                    aloads[d, t, k, i] = s
            if not ok:
                status[d, t] = 3
                for k in range(K):
                    for i in range(Na):
                        aloads[d, t, k, i] = np.nan


@_jit
def _design_loads(fstack, ibuf, q, qd, x, act, phi0, path, modes, skip, loads, aloads, Iout,
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
    transfer; I* by composite rigid bodies (:func:`_composite_inertia`) and the
    bias ``T0 = q'^T P* q' + T_gravity``: from the same composites at rest
    (q' = 0), else by phi', the velocity products and one Newton-Euler pass at
    q'' = 0 (the stages of :func:`_batch`); then for each of the K accelerations
    ``T_q = T0 + I* q''`` (the loads are affine in q'') and, with actuators,
    ``(G^a)^T tau_a = T_q`` (least-norm when Na > M).

    The poses of a design wait in lanes (V = 32 side by side) after their
    assembly: the transfer of the poses at rest (:func:`_transfer_lanes`; a
    moving pose, or one whose joint values start the next pose of a path, has
    its own at once, :func:`_transfer_pose`), I* and T0 go through the lanes
    together, and the actuations' condition numbers through lanes of their own
    (:func:`_actuation_flush`).  Each pose gets the operations it would get
    alone, so no pose's numbers depend on the others'.

    Fills (the caller's arrays, every entry) loads (D, n, K, M), actuator loads
    (D, n, K, Na), I* (D, n, M, M), phi (D, n, N), status (D, n), residual
    (D, n), det signs (D, n, B), actuation condition (D, n); status codes as
    :func:`_batch` (3: actuation singular,
    the coordinate loads are still given; the actuator loads are NaN)."""
    D = fstack.shape[0]
    n = skip.shape[1]
    K = x.shape[2]
    Na = act.shape[0]
    P0 = _unpack(fstack[0], ibuf)
    N, M, R, L, nB, nb = _dims(P0)
    W = _work(N, M, R, L, nB, nb)
    F, S, X, r, Jr, LUw, pivw, G, tau = W[0], W[1], W[2], W[3], W[4], W[5], W[6], W[7], W[13]
    phi = np.empty(N)
    last = np.empty(N)
    T0 = np.empty(M)
    zero = np.zeros(M)
    At = np.empty((M, M))
    Ch = np.empty((M, M))
    pv = np.zeros(M, np.int64)
    rhs = np.empty(M)
    sol = np.empty(M)
    # the poses that reach the dynamics wait in lanes (the last axis) for
    # :func:`_composite_inertia`, V at a time, all of one design
    V = 32
    FL = np.empty((N, 12, V))
    SL = np.empty((N, 6, V))
    GL = np.zeros((N, M, V))                # the coordinates' unit rows stay
    for m in range(M):
        for u in range(V):
            GL[P0[23][m], m, u] = 1.0
    IL = np.empty((M, M, V))
    T0L = np.empty((M, V))
    rest = np.empty(V, np.bool_)
    lane_t = np.empty(V, np.int64)
    # the poses at rest wait for the transfer too (:func:`_transfer_lanes`): their
    # closure Jacobian's block and coordinate columns, joint values, status so far
    pending = np.zeros(V, np.bool_)
    alive = np.empty(V, np.bool_)
    JA = np.empty((R, nb, V))
    JQ = np.empty((R, M, V))
    PHL = np.empty((N, V))
    stL = np.empty(V, np.int64)
    DS = np.empty((nB, V))
    ST = np.empty(V, np.int64)
    LUL = np.empty((nb, nb, V))
    PVL = np.empty((nb, V), np.int64)
    XL = np.empty((nb, M + nb, V))
    fro = np.empty(V)
    fri = np.empty(V)
    sgnL = np.empty(V)
    bigL = np.empty(V)
    Ic = np.empty((N, 10, V))
    HG = np.empty((N, M, V))
    Tphi = np.empty((N, V))
    fw = np.empty((6, V))
    hw = np.empty(V)
    empty = np.empty(N, np.bool_)
    As = np.empty((nb, nb))
    Aw = np.empty((nb, nb))
    ds = np.empty(nB)
    cond_w = np.empty(nB)
    col_scale = np.empty(M)
    prism_act = np.empty(Na, np.bool_)
    pairs = _round_robin(M)
    flags = np.zeros(N + 2 * L, np.int64)
    qcol = np.full(N, -1, np.int64)
    for m in range(M):
        qcol[P0[23][m]] = m
    row_block = np.empty(R, np.int64)          # the block of each closure row
    for b in range(nB):
        for i in range(P0[20][b], P0[20][b + 1]):
            row_block[i] = b
    # the actuation of NQ poses waits in buffers for their condition numbers,
    # computed side by side (:func:`_conditions_lanes`)
    NQ = 32
    PGa = np.empty((NQ, Na, M))
    PGs = np.empty((NQ, Na, M))
    work_a = np.empty((M, Na, NQ))
    norms_a = np.empty((M, NQ))
    gam_a = np.empty(NQ)
    cs_a = np.empty(NQ)
    sn_a = np.empty(NQ)
    pd = np.zeros(NQ, np.int64)
    pt = np.zeros(NQ, np.int64)
    pmaxc = np.empty(NQ)
    cv = np.empty(NQ)
    live_a = np.empty(NQ, np.bool_)
    turned_a = np.empty(NQ, np.bool_)
    nq = 0
    xT = np.empty((M, K))
    TK = np.empty((M, K))
    TA = np.empty((M, K))
    xt_at = -1
    xd_at = -1
    for d in range(D):
        P = _unpack(fstack[d], ibuf)
        # the plan's arrays as locals, once per design (each P[k] or W[k] in the pose
        # loop would take and drop a reference: atomic operations, per pose)
        (parent, order, isR, axis, origin, offset, mass, com, inertia, gravity, loop_k,
         loop_r, loop_row, body_a, T_a, body_b, T_b, U, row_is_rot, dep, block_row,
         block_loop, block_loops, q_idx, scal, max_iter) = P
        _identity_flags(origin, offset, T_a, T_b, flags)
        Lc, maxc = scal[0], scal[2]
        dq = d if q.shape[0] > 1 else 0
        dv = d if qd.shape[0] > 1 else 0
        dx = d if x.shape[0] > 1 else 0
        dp = d if phi0.shape[0] > 1 else 0
        mode = modes[d]
        have_mode = mode.shape[0] > 0
        # dimensionless actuation: prismatic coordinates * L, prismatic actuators / L
        for m in range(M):
            col_scale[m] = 1.0 if isR[q_idx[m]] else Lc
        for i in range(Na):
            prism_act[i] = not isR[act[i]]
        have_last = False
        cnt = 0
        have_pending = False
        # t == n: the last poses of the design still waiting in the lanes
        for t in range(n + 1):
            if t < n:
                for k in range(K):
                    for a in range(M):
                        loads[d, t, k, a] = np.nan
                    for i in range(Na):
                        aloads[d, t, k, i] = np.nan
                for a in range(M):
                    for b in range(M):
                        Iout[d, t, a, b] = np.nan
                for j in range(N):
                    phi_out[d, t, j] = np.nan
                resid[d, t] = np.nan
                acond[d, t] = np.nan
                if skip[d, t] != 0:
                    status[d, t] = skip[d, t]
                    continue
                tq = t if q.shape[1] > 1 else 0
                tv = t if qd.shape[1] > 1 else 0
                if path and have_last:
                    for j in range(N):
                        phi[j] = last[j]
                else:
                    tp = t if phi0.shape[1] > 1 else 0
                    for j in range(N):
                        phi[j] = phi0[dp, tp, j]
                for m in range(M):
                    phi[q_idx[m]] = q[dq, tq, m]
                # a start that closes the loops to rounding (an exact closed-form
                # inverse kinematics) is used as it is: Newton's polishing step would
                # not move it; otherwise Newton from it
                _design_frames(parent, order, isR, axis, origin, offset, body_a, T_a, body_b,
                               T_b, phi, flags, F, S, X)
                _residual(loop_k, loop_r, loop_row, U, X, r)
                res = 0.0
                for i in range(R):
                    e = abs(r[i]) if row_is_rot[i] else abs(r[i]) / Lc
                    if not (e <= res):
                        res = e
                if res < EXACT_START:
                    st = 0
                    _jacobian(parent, loop_k, loop_r, loop_row, body_a, body_b, U, S, X, Jr)
                else:
                    st, res = _assemble_pose(P, W, phi)
                resid[d, t] = res
                if st == 1:
                    status[d, t] = 1
                    continue
                at_rest = True
                for m in range(M):
                    if qd[dv, tv, m] != 0.0:
                        at_rest = False
                for j in range(N):
                    for i in range(3):
                        for c in range(4):
                            FL[j, 4 * i + c, cnt] = F[j, i, c]
                    for c in range(6):
                        SL[j, c, cnt] = S[j, c]
                if at_rest and not path:
                    # the transfer waits in the lanes (the status with it)
                    for i in range(R):
                        r0 = block_row[row_block[i]]      # the first row of its block
                        for c in range(block_row[row_block[i] + 1] - r0):
                            JA[i, c, cnt] = Jr[i, dep[r0 + c]]
                        for m in range(M):
                            JQ[i, m, cnt] = Jr[i, q_idx[m]]
                    for j in range(N):
                        PHL[j, cnt] = phi[j]
                    stL[cnt] = st
                    pending[cnt] = True
                else:
                    # now: the next start of a path, or the rates of a moving pose,
                    # need this pose's transfer
                    st2 = _transfer_pose(P, W, cond_w, ds)
                    for b in range(nB):
                        dsign[d, t, b] = ds[b]
                    if st != 0:
                        status[d, t] = 2
                        continue
                    for j in range(N):
                        phi_out[d, t, j] = phi[j]
                    if st2 != 0:
                        status[d, t] = 2
                        continue
                    if have_mode:
                        other = False
                        for b in range(nB):
                            if mode[b] != 0.0 and ds[b] != mode[b]:
                                other = True
                        if other:
                            status[d, t] = 4
                            continue
                    for j in range(N):
                        last[j] = phi[j]
                    have_last = True
                    # the bias where it moves (the composites give it at rest)
                    if not at_rest:
                        _rates(P, W, qd[dv, tv], zero)
                        _rnea(P, W, True)
                        _project(G, tau, T0)
                        for m in range(M):
                            T0L[m, cnt] = T0[m]
                    for j in range(N):
                        for m in range(M):
                            GL[j, m, cnt] = G[j, m]
                    pending[cnt] = False
                rest[cnt] = at_rest
                lane_t[cnt] = t
                have_pending = have_pending or pending[cnt]
                cnt += 1
                if cnt < V:
                    continue
            if cnt == 0:
                continue
            # the lanes are full (or the design is done): the transfer of the poses
            # at rest, then I* and the bias of each
            for u in range(cnt):
                alive[u] = True
            if have_pending:
                _transfer_lanes(cnt, isR, row_is_rot, dep, block_row, q_idx, Lc, maxc, JA, JQ,
                                pending, GL, DS, ST, LUL, PVL, XL, fro, fri, sgnL, bigL, As, Aw)
                for u in range(cnt):
                    if not pending[u]:
                        continue
                    tu = lane_t[u]
                    for b in range(nB):
                        dsign[d, tu, b] = DS[b, u]
                    alive[u] = False
                    if stL[u] != 0:
                        status[d, tu] = 2
                        continue
                    for j in range(N):
                        phi_out[d, tu, j] = PHL[j, u]
                    if ST[u] != 0:
                        status[d, tu] = 2
                        continue
                    if have_mode:
                        other = False
                        for b in range(nB):
                            if mode[b] != 0.0 and DS[b, u] != mode[b]:
                                other = True
                        if other:
                            status[d, tu] = 4
                            continue
                    alive[u] = True
            _composite_inertia(cnt, parent, order, mass, com, inertia, gravity, FL, SL, GL, qcol,
                               empty, Ic, HG, Tphi, fw, hw, IL, T0L, rest)
            for u in range(cnt):
                if not alive[u]:
                    continue
                tu = lane_t[u]
                for a in range(M):
                    for b in range(M):
                        Iout[d, tu, a, b] = IL[a, b, u]
                # T_q = T0 + I* q'' for the K accelerations at once: the K sums are
                # independent (innermost, overlapped), each in the order of b
                tx = tu if x.shape[1] > 1 else 0
                if tx != xt_at or dx != xd_at:
                    for k in range(K):
                        for b in range(M):
                            xT[b, k] = x[dx, tx, k, b]
                    xt_at, xd_at = tx, dx
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
                if Na == 0:
                    continue
                # the actuation waits in its buffers: NQ poses' condition numbers at once
                for i in range(Na):
                    a = act[i]
                    for m in range(M):
                        g = GL[a, m, u]
                        PGa[nq, i, m] = g
                        g *= col_scale[m]
                        if prism_act[i]:
                            g /= Lc
                        PGs[nq, i, m] = g
                pd[nq] = d
                pt[nq] = tu
                pmaxc[nq] = maxc
                nq += 1
                if nq == NQ:
                    _actuation_flush(nq, pd, pt, PGa, PGs, pmaxc, pairs, work_a, norms_a,
                                     gam_a, cs_a, sn_a, cv, live_a, turned_a, At, pv, TA, Ch,
                                     rhs, sol, loads, status, acond, aloads)
                    nq = 0
            cnt = 0
            have_pending = False
    if nq > 0:
        _actuation_flush(nq, pd, pt, PGa, PGs, pmaxc, pairs, work_a, norms_a, gam_a, cs_a,
                         sn_a, cv, live_a, turned_a, At, pv, TA, Ch, rhs, sol, loads, status,
                         acond, aloads)


def design_loads(ibuf, fstack, q, qd, x, act, phi0, path, modes, skip):
    """Python entry of :func:`_design_loads` (see there for shapes; the caller,
    :mod:`kic.designs`, lays the arrays out as float64/int64 C-contiguous and
    checks them).  Returns the kernel's tuple."""
    _require()
    D, n = skip.shape
    K, M, Na, N = x.shape[2], x.shape[3], act.shape[0], phi0.shape[2]
    B = int(ibuf[4])
    # numpy's buffers, not the kernel's: numpy asks the system for huge pages
    # (a few hundred page faults for the tens of megabytes, not tens of thousands)
    out = (np.empty((D, n, K, M)), np.empty((D, n, K, Na)), np.empty((D, n, M, M)),
           np.empty((D, n, N)), np.zeros((D, n), np.int64), np.empty((D, n)),
           np.zeros((D, n, B)), np.empty((D, n)))
    _design_loads(fstack, ibuf, q, qd, x, act, phi0, path, modes, skip, *out)
    return out


_DOP853 = None


def free_motion(plan, mode, t: float, t_end: float, y, phi, h_abs: float, rtol: float,
                atol: float, max_step: float, stop_condition: float, relax: float,
                capacity: int) -> tuple:
    """Python entry of :func:`_free_motion` (the caller lays out ``y`` (2M,) and
    ``phi`` (N,) as float64 C-contiguous).  Returns the kernel's tuple."""
    global _DOP853
    _require()
    if _DOP853 is None:
        from scipy.integrate import DOP853
        _DOP853 = tuple(np.ascontiguousarray(a, dtype=np.float64)
                        for a in (DOP853.A, DOP853.B, DOP853.C, DOP853.E3, DOP853.E5)) + (
            float(DOP853.error_estimator_order),)
    return _free_motion(plan.args[0], plan.args[1], mode, *_DOP853, float(t), float(t_end),
                        y, phi, float(h_abs), float(rtol), float(atol), float(max_step),
                        float(stop_condition), float(relax), int(capacity))
