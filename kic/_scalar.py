"""The kernels without numba: numpy for batches, Python floats for one configuration.

This module is the numpy kernel set of :mod:`kic.backend` (the same functions, by
name and signature, as :mod:`kic._compiled`).

*Batches* run as numpy array passes, batch last ((3, M, N) arrays: element-wise
work on the contiguous last axis is several times faster than on a leading
batch axis), in blocks of :data:`kic._array.BLOCK` configurations: world-frame
joint screws, link motion by prefix sums, joint loads by suffix sums of the
link wrenches, I* from composite inertias, P* re-associated into composite
moments (Freeman's eq. 2-196, 2-197; see :mod:`kic.dynamics`).

*One configuration* costs a numpy kernel 100-300 calls of about a microsecond
each; the same recursion in Python floats (about 10 ns a flop) takes tens of
microseconds.  It runs the arithmetic the compiled kernels are made of -- the
frame step, the screw step, the link wrench and the Cholesky solve of
:mod:`kic._compiled` -- uncompiled (``kic._compiled.plain``), so both backends
evaluate one configuration by the same code.  This is what keeps one
configuration cheap without numba; measured in one run on a PUMA 560 (busy
2-core machine), floats against the numpy kernels on a batch of two: inverse
dynamics 48 us vs 539 us, forward dynamics 149 vs 2227 us, I* 129 vs 932 us,
gravity load 127 vs 881 us.
"""
from __future__ import annotations

import math

import numpy as np

from ._array import blocks, numpy_cross as cross, prefix_sum, suffix_sum
from ._compiled import plain

__all__ = []

frame_step = plain.frame_step
screw_step = plain.screw_step
link_wrench = plain.link_wrench
centroid = plain.centroid
gravity_step = plain.gravity_step
link_world = plain.link_world
composite_step = plain.composite_step
cholesky_solve = plain.cholesky_solve
spd_pivot_ok = plain.spd_pivot_ok


# --------------------------------------------------------------------------
# one configuration, Python floats
# --------------------------------------------------------------------------
def _floats(x, M: int):
    """A float64 vector of shape (M,) with finite values as a list, else None."""
    if type(x) is not np.ndarray or x.shape != (M,) or x.dtype != np.float64:
        return None
    v = x.tolist()
    return v if math.isfinite(math.fsum(v)) else None      # NaN, inf (or an overflow)


def _frames(d, q):
    """Per joint: (T, a, t), the link frame and the world joint screw."""
    T = d.base_t
    out = []
    for (revolute, O), qj in zip(d.joints_t, q):
        T, a, t = frame_step(T, O, revolute, qj)
        out.append((T, a, t))
    return out


def _loads(d, frames, qd, qdd, gravity=True):
    """Joint loads (list) of one configuration from its frames."""
    g = d.gravity
    V = (0.0,) * 9 + ((-float(g[0]), -float(g[1]), -float(g[2])) if gravity else (0.0,) * 3)
    wrenches = []
    for (T, a, t), (m, com, I), u, ud in zip(frames, d.links_t, qd, qdd):
        V = screw_step(a, t, u, ud, V)
        wrenches.append(link_wrench(m, com, I, T, V))
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


def _inertia_floats(d, frames):
    """I* (list of M lists) of one configuration by composite inertias."""
    M = len(frames)
    S = (0.0,) * 10
    cols = [None] * M
    for j in range(M - 1, -1, -1):
        T, a, t = frames[j]
        m, com, I = d.links_t[j]
        c, Iw = link_world(com, I, T)
        S, cols[j] = composite_step(m, c, Iw, a, t, S)
    out = [[0.0] * M for _ in range(M)]
    for n in range(M):
        fx, fy, fz, nx, ny, nz = cols[n]
        for k in range(n + 1):
            _, (ax, ay, az), (tx, ty, tz) = frames[k]
            x = ax * nx + ay * ny + az * nz + tx * fx + ty * fy + tz * fz
            out[k][n] = x
            out[n][k] = x
    return out


def inverse_dynamics_one(d, q, qd, qdd, out) -> bool:
    """Joint loads of one configuration into ``out`` (M,); False for inputs that are
    not finite float64 vectors of shape (M,)."""
    M = d.dof
    q, qd, qdd = _floats(q, M), _floats(qd, M), _floats(qdd, M)
    if q is None or qd is None or qdd is None:
        return False
    out[:] = _loads(d, _frames(d, q), qd, qdd)
    return True


def gravity_load_one(d, q, out) -> bool:
    """+dV/dq of one configuration into ``out`` (M,)."""
    q = _floats(q, d.dof)
    if q is None:
        return False
    frames = _frames(d, q)
    g = tuple(d.gravity.tolist())
    S = (0.0, 0.0, 0.0, 0.0)
    tau = [0.0] * d.dof
    for j in range(d.dof - 1, -1, -1):
        T, a, t = frames[j]
        m, com, _ = d.links_t[j]
        S, tau[j] = gravity_step(m, centroid(com, T), a, t, g, S)
    out[:] = tau
    return True


def inertia_one(d, q, out) -> bool:
    """I* of one configuration into ``out`` (M, M)."""
    q = _floats(q, d.dof)
    if q is None:
        return False
    out[:] = _inertia_floats(d, _frames(d, q))
    return True


def forward_dynamics_one(d, q, qd, tau, out) -> bool:
    """q'' of one configuration into ``out`` (M,); False also when I* fails the rule."""
    M = d.dof
    q, qd, tau = _floats(q, M), _floats(qd, M), _floats(tau, M)
    if q is None or qd is None or tau is None:
        return False
    frames = _frames(d, q)
    bias = _loads(d, frames, qd, [0.0] * M)
    x = [0.0] * M
    if not cholesky_solve(_inertia_floats(d, frames), [t - b for t, b in zip(tau, bias)],
                          [[0.0] * M for _ in range(M)], x):
        return False
    out[:] = x
    return True


# --------------------------------------------------------------------------
# batches, numpy (batch last inside)
# --------------------------------------------------------------------------
def pose(d, qT: np.ndarray):
    """Link frames by columns, batch last, Fc[j, k, i, n] = T_j[i, k] (k = 3: the
    origin), and the joint screws sR, sv (3, M, N): (Fc, sR, sv) of qT (M, N)."""
    M, N = qT.shape
    if N == 1:                        # one configuration: floats, packed the same way
        frames = _frames(d, np.asarray(qT[:, 0], dtype=float).tolist())
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
            sv[:, j] = cross(Fj[3], Fj[2])        # r x s: moment of the screw
        else:
            Fj[3] += qT[j] * Fj[2]
            sv[:, j] = Fj[2]
        T = Fj
    return Fc, sR, sv


def _rotations(Fc):
    """(R (3, 3, M, N), p (3, M, N)) views of the frames of :func:`pose`."""
    return Fc[:, :3].transpose(2, 1, 0, 3), Fc[:, 3].transpose(1, 0, 2)


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
    return _wrench_loads(d, Fc, sR, sv, w, v, aw + prefix_sum(sR * qddT), av + prefix_sum(dv))


def _wrench_loads(d, Fc, sR, sv, w, v, aw, av) -> np.ndarray:
    """Joint loads (M, N) of the full link motion (w, v, aw, av), gravity included
    in av if wanted."""
    R, p = _rotations(Fc)
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


class _LinkState:
    """Centroids, world inertias and composite sums of a chain at a pose."""

    def __init__(self, d, Fc) -> None:
        R, p = _rotations(Fc)
        self.c = np.einsum("ijmn,jm->imn", R, d.com.T) + p
        RI = np.einsum("ikmn,mkl->ilmn", R, d.inertia)           # R I_local
        self.I = np.einsum("ilmn,jlmn->ijmn", RI, R)             # R I_local R^T
        self.m = d.mass
        self.S0 = suffix_sum(d.mass, 0)                          # (M,)
        self.S1 = suffix_sum(d.mass[None, :, None] * self.c, 1)  # (3, M, N)


def _inertia(sR, sv, state: _LinkState) -> np.ndarray:
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


def _power(A, t, state: _LinkState) -> np.ndarray:
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


def _by_blocks(q, shape, fn) -> np.ndarray:
    """``fn(qT)`` (shape + (n,)) over blocks of the batch q (N, M), batch first out."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    N = q.shape[0]
    out = np.empty((N,) + shape)
    qT = np.ascontiguousarray(q.T)
    for sl in blocks(N):
        x = fn(sl, qT[:, sl])
        out[sl] = np.moveaxis(x, -1, 0)
    return out


def inverse_dynamics(d, q, qd, qdd, gravity: bool = True) -> np.ndarray:
    """Joint loads (N, M) of configurations q, qd, qdd (N, M)."""
    qdT, qddT = (np.atleast_2d(np.asarray(x, dtype=float)).T for x in (qd, qdd))

    def run(sl, qT):
        Fc, sR, sv = pose(d, qT)
        motion = link_motion(sR, sv, qdT[:, sl], qddT[:, sl], d.gravity if gravity else None)
        return _wrench_loads(d, Fc, sR, sv, *motion)
    return _by_blocks(q, (d.dof,), run)


def gravity_load(d, q) -> np.ndarray:
    """+dV/dq = -sum G_c^T m g (N, M), by suffix sums of mass and first moment."""
    g = d.gravity[:, None, None]
    S0 = suffix_sum(d.mass, 0)[None, :, None]

    def run(sl, qT):
        Fc, sR, sv = pose(d, qT)
        R, p = _rotations(Fc)
        c = np.einsum("ijmn,jm->imn", R, d.com.T) + p
        S1 = suffix_sum(d.mass[None, :, None] * c, 1)
        return -(sR * cross(S1, g) + sv * (S0 * g)).sum(axis=0)
    return _by_blocks(q, (d.dof,), run)


def inertia(d, q) -> np.ndarray:
    """I* (N, M, M)."""
    def run(sl, qT):
        Fc, sR, sv = pose(d, qT)
        return _inertia(sR, sv, _LinkState(d, Fc))
    return _by_blocks(q, (d.dof, d.dof), run)


def inertia_power(d, q, with_inertia: bool = True):
    """(I* (N, M, M) or None, P* (N, M, M, M))."""
    M = d.dof
    I = np.empty((q.shape[0], M, M)) if with_inertia else None

    def run(sl, qT):
        Fc, sR, sv = pose(d, qT)
        state = _LinkState(d, Fc)
        if with_inertia:
            I[sl] = np.moveaxis(_inertia(sR, sv, state), -1, 0)
        return _power(sR, sv, state)
    return I, _by_blocks(q, (M, M, M), run)


def spd_factor(A: np.ndarray):
    """Cholesky factors of stacked SPD matrices (..., m, m) and where they are valid:
    ``(L, ok (...))``, ok False where A fails :func:`kic._compiled.spd_pivot_ok`
    (L is then unusable there)."""
    m = A.shape[-1]
    diag = np.diagonal(A, axis1=-2, axis2=-1)
    good = spd_pivot_ok(diag, 0.0).all(-1) & np.isfinite(A).all((-2, -1))
    # factor the matrices that can be; the others get the identity, flagged
    Afix = np.where(good[..., None, None], A, np.eye(m))
    try:
        L = np.linalg.cholesky(Afix)
        ok = good.copy()
    except np.linalg.LinAlgError:          # some are not positive definite: one by one
        L = np.empty(A.shape)
        ok = good.copy()
        flat_A, flat_L, flat_ok = Afix.reshape(-1, m, m), L.reshape(-1, m, m), ok.reshape(-1)
        for i in range(flat_A.shape[0]):
            try:
                flat_L[i] = np.linalg.cholesky(flat_A[i])
            except np.linalg.LinAlgError:
                flat_L[i] = np.eye(m)
                flat_ok[i] = False
    Ld = np.diagonal(L, axis1=-2, axis2=-1)
    return L, ok & spd_pivot_ok(Ld * Ld, diag).all(-1)


def spd_substitute(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x = (L L^T)^-1 b for stacked factors: forward and back substitution over the
    few rows, batched (LAPACK's per-matrix calls cost more than the arithmetic)."""
    m = L.shape[-1]
    x = np.array(b, dtype=float, copy=True)
    for i in range(m):
        if i:
            x[..., i] -= (L[..., i, :i] * x[..., :i]).sum(-1)
        x[..., i] /= L[..., i, i]
    for i in range(m - 1, -1, -1):
        if i < m - 1:
            x[..., i] -= (L[..., i + 1:, i] * x[..., i + 1:]).sum(-1)
        x[..., i] /= L[..., i, i]
    return x


def forward_dynamics(d, q, qd, tau):
    """(q'' (N, M), ok (N,)): ok is False where I* fails the singularity rule."""
    M = d.dof
    qdT = np.asarray(qd, dtype=float).T
    I = np.empty((np.shape(q)[0], M, M))

    def run(sl, qT):                      # one pose per block for the bias and I*
        Fc, sR, sv = pose(d, qT)
        I[sl] = np.moveaxis(_inertia(sR, sv, _LinkState(d, Fc)), -1, 0)
        return _wrench_loads(d, Fc, sR, sv, *link_motion(sR, sv, qdT[:, sl], None, d.gravity))
    bias = _by_blocks(q, (M,), run)
    L, ok = spd_factor(I)
    return spd_substitute(L, np.asarray(tau, dtype=float) - bias), ok


# --------------------------------------------------------------------------
# array primitives
# --------------------------------------------------------------------------
def small_inverse(A: np.ndarray) -> np.ndarray:
    """Inverse of stacked (..., m, m) matrices; closed form (adjugate) for m <= 3.

    LAPACK's per-matrix call costs about a microsecond however small the matrix;
    the adjugate of a 3x3 is a few dozen batched products.  Singular matrices give
    inf/nan, which the callers' condition checks catch.
    """
    m = A.shape[-1]
    if m > 3:
        return np.linalg.inv(A)
    with np.errstate(divide="ignore", invalid="ignore"):
        if m == 1:
            return 1.0 / A
        if m == 2:
            a, b, c, d = A[..., 0, 0], A[..., 0, 1], A[..., 1, 0], A[..., 1, 1]
            det = a * d - b * c
            return np.stack([np.stack([d, -b], -1), np.stack([-c, a], -1)], -2) \
                / det[..., None, None]
        a0, a1, a2 = A[..., 0, :], A[..., 1, :], A[..., 2, :]
        c0 = cross(a1.T, a2.T).T          # rows of the adjugate's transpose
        c1 = cross(a2.T, a0.T).T
        c2 = cross(a0.T, a1.T).T
        det = (a0 * c0).sum(-1)
        return np.stack([c0, c1, c2], -1) / det[..., None, None]


def inverse_with_condition(A: np.ndarray):
    """Inverses of stacked (..., m, m) matrices and their 1-norm condition numbers
    ``||A||_1 ||A^-1||_1`` (...): inf/NaN where singular, or ``np.linalg.LinAlgError``
    from LAPACK (m > 3)."""
    Ai = small_inverse(A)
    with np.errstate(invalid="ignore"):
        cond = _norm1(A) * _norm1(Ai)
    return Ai, cond


def _norm1(A: np.ndarray) -> np.ndarray:
    """Largest column sum of |A| (..., m, m) -> (...): a loop over the few rows and
    columns is 3-5x faster than numpy's reductions over small trailing axes."""
    a = np.abs(A)
    m = A.shape[-1]
    col = a[..., 0, :].copy()
    for i in range(1, m):
        col += a[..., i, :]
    out = col[..., 0].copy()
    for j in range(1, m):
        np.maximum(out, col[..., j], out=out)
    return out
