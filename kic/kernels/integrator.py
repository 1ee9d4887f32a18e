"""The motion of a closed mechanism, integrated in one compiled loop (internal).

scipy's DOP853 (``scipy.integrate.DOP853``), step for step: its coefficients
(passed in from scipy), its error norm, its step-size control and its choice of
the first step, with every trial point assembled (:mod:`kic.kernels.closed_pose`)
from the joint values of the last accepted step, and its dense output at
requested output times.  The constants below are scipy's
(``scipy.integrate._ivp.rk`` and ``common``), so the steps are the ones
``solve_ivp`` takes on the same right-hand side.  The right-hand side takes a
constant input at the coordinates and joint loads of applied loads;
:func:`motion_rhs` is the same right-hand side in one call, for integrators
stepped from Python (BDF, Radau, inputs that vary).  :func:`lsoda_motion` is
the same loop with scipy's LSODA (:mod:`kic.kernels.lsoda`, step for step).
"""
from __future__ import annotations

import numpy as np

from .closed_pose import (OK, SINGULAR_DYNAMICS, assemble_pose, dynamics_work,
                          inertia_pose, pose_rates, project, rnea, settle, work)
from . import lsoda
from .jit import jit
from .layout import unpack
from .linalg import cholesky_solve

__all__ = ["place", "free_rhs", "motion_rhs", "free_motion", "lsoda_motion"]

# scipy.integrate._ivp.rk: the step-size control
SAFETY = 0.9              # the new step is this fraction of the optimal one
MIN_FACTOR = 0.2          # the step shrinks at most by this factor
MAX_FACTOR = 10.0         # and grows at most by this one
# scipy.integrate._ivp.common.select_initial_step
SMALL_NORM = 1e-5         # |y| or |f| below this (scaled): a default first step
FIRST_STEP = 1e-6         # that default
FLAT = 1e-15              # both derivatives below this: no curvature to scale by

# the codes of free_motion's end
AT_END, TOO_ILL, TRIAL_FAILED, STEP_UNDERFLOW, FULL, LOST = range(6)


@jit(inline=True)
def copy_into(src, out):
    """``out[:] = src`` for vectors, element by element: a slice's copy needs
    numba's reference counts, which bare kernels go without."""
    for i in range(src.shape[0]):
        out[i] = src[i]


@jit(bare=True)
def place(P, W, phi, q, mode, cond, dsign):
    """Assemble at the coordinates q starting from the joint values in phi (in
    place), form the transfer and check the assembly mode; returns the status
    (0 ok, 1 not assembled, 2 singular block, 4 other mode)."""
    q_idx = P.q_idx
    for m in range(q_idx.shape[0]):
        phi[q_idx[m]] = q[m]
    st, _ = assemble_pose(P, W, phi)
    return settle(P, W, st, phi, phi, cond, dsign, mode)


@jit(bare=True)
def free_rhs(P, W, D, start, phi, y, f, mode, cond, dsign, tau, tl):
    """f = (q', q'') at the state y = (q, q'), the joint values assembled from
    ``start``, under gravity, the input ``tau`` (M,) at the coordinates and the
    joint loads ``tl`` (N,) of applied loads (kic's sign: the load the joints must
    supply, ``T_L``); returns the status."""
    M = P.M
    copy_into(start, phi)
    st = place(P, W, phi, y[:M], mode, cond, dsign)
    if st != OK:
        return st
    pose_rates(P, W, y[M:], D.zero)
    rnea(P, W, True)
    for j in range(tl.shape[0]):
        W.tau[j] += tl[j]
    project(W.G, W.tau, D.Tq)
    Im, Tq, sol = D.Im, D.Tq, D.sol
    inertia_pose(P, W, Im)
    b = D.rhs[:M]
    for m in range(M):
        b[m] = tau[m] - Tq[m]
    if not cholesky_solve(Im, b, Im, sol):
        return SINGULAR_DYNAMICS
    for m in range(M):
        f[m] = y[M + m]
        f[M + m] = sol[m]
    return OK


@jit(bare=True)
def initial_step(P, W, D, start, phi, mode, cond, dsign, tau, tl, t, t_end, y, f, ytmp, f1,
                 order, rtol, atol, max_step):
    """scipy's ``select_initial_step``: (first step, status of its trial point)."""
    n = y.shape[0]
    length = t_end - t
    d0 = 0.0
    d1 = 0.0
    for i in range(n):
        scale = atol + abs(y[i]) * rtol
        d0 += (y[i] / scale) ** 2
        d1 += (f[i] / scale) ** 2
    d0 = np.sqrt(d0 / n)
    d1 = np.sqrt(d1 / n)
    h0 = FIRST_STEP if (d0 < SMALL_NORM or d1 < SMALL_NORM) else 0.01 * d0 / d1
    h0 = min(h0, length)
    for i in range(n):
        ytmp[i] = y[i] + h0 * f[i]
    failed = free_rhs(P, W, D, start, phi, ytmp, f1, mode, cond, dsign, tau, tl)
    if failed != OK:
        return 0.0, failed
    d2 = 0.0
    for i in range(n):
        d2 += ((f1[i] - f[i]) / (atol + abs(y[i]) * rtol)) ** 2
    d2 = np.sqrt(d2 / n) / h0
    if d1 <= FLAT and d2 <= FLAT:
        h1 = max(FIRST_STEP, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / (order + 1))
    return min(100 * h0, h1, length, max_step), OK


@jit(bare=True)
def error_norm(K, E3, E5, y, y_new, h, rtol, atol):
    """DOP853's ``_estimate_error_norm`` of a step of size h (the stages K[:S + 1])."""
    n = y.shape[0]
    e5 = 0.0
    e3 = 0.0
    for i in range(n):
        sc = atol + max(abs(y[i]), abs(y_new[i])) * rtol
        a5 = 0.0
        a3 = 0.0
        for j in range(E5.shape[0]):        # the stages of the step (K has the dense
            a5 += K[j, i] * E5[j]           # output's three more rows after them)
            a3 += K[j, i] * E3[j]
        e5 += (a5 / sc) ** 2
        e3 += (a3 / sc) ** 2
    if e5 == 0.0 and e3 == 0.0:
        return 0.0
    return h * e5 / np.sqrt((e5 + 0.01 * e3) * n)


@jit(bare=True)
def rk_step(P, W, D, start, phi, mode, cond, dsign, tau, tl, A, B, K, y, f, ytmp, y_new, h):
    """scipy's ``rk_step``: the stages K (S + 1, n) and y_new of a step h from
    (y, f); returns (the status of the first trial point that fails, else OK;
    the trial points evaluated)."""
    n = y.shape[0]
    S = A.shape[0]
    copy_into(f, K[0])
    for s in range(1, S):
        for i in range(n):
            acc = 0.0
            for j in range(s):
                acc += K[j, i] * A[s, j]
            ytmp[i] = y[i] + acc * h
        failed = free_rhs(P, W, D, start, phi, ytmp, K[s], mode, cond, dsign, tau, tl)
        if failed != OK:
            return failed, s
    for i in range(n):
        acc = 0.0
        for j in range(S):
            acc += K[j, i] * B[j]
        y_new[i] = y[i] + h * acc
    return free_rhs(P, W, D, start, phi, y_new, K[S], mode, cond, dsign, tau, tl), S


@jit
def dense_samples(P, W, D, start, phi, mode, cond, dsign, tau, tl, A_extra, C_extra, Dd, K,
                  y, y_new, ytmp, t_old, h, times, first, ts, ys, phis, k):
    """DOP853's dense output over the step (t_old, t_old + h] (scipy's
    ``_dense_output_impl`` and ``Dop853DenseOutput``: three more stages into K
    (16, n), the interpolant of order 7), evaluated at ``times[first:]`` up to the
    step's end, each sample assembled from ``start`` and recorded from row k;
    returns (status of a failed stage or sample else OK, the next time's index,
    the next row, the stages evaluated)."""
    n = y.shape[0]
    M = P.M
    t_new = t_old + h
    last = first
    while last < times.shape[0] and times[last] <= t_new:
        last += 1
    if last == first:
        return OK, first, k, 0
    k0 = k          # on a failure no sample of this step is kept (the step is retried)
    S = K.shape[0] - A_extra.shape[0]
    for e in range(A_extra.shape[0]):
        s = S + e
        for i in range(n):
            acc = 0.0
            for j in range(s):
                acc += K[j, i] * A_extra[e, j]
            ytmp[i] = y[i] + acc * h
        failed = free_rhs(P, W, D, start, phi, ytmp, K[s], mode, cond, dsign, tau, tl)
        if failed != OK:
            return failed, first, k0, e + 1
    F = np.empty((3 + Dd.shape[0], n))
    for i in range(n):
        dy = y_new[i] - y[i]
        F[0, i] = dy
        F[1, i] = h * K[0, i] - dy
        F[2, i] = 2 * dy - h * (K[S - 1, i] + K[0, i])
        for r in range(Dd.shape[0]):
            acc = 0.0
            for j in range(K.shape[0]):
                acc += Dd[r, j] * K[j, i]
            F[3 + r, i] = h * acc
    R = F.shape[0]
    for m in range(first, last):
        x = (times[m] - t_old) / h
        for i in range(n):
            v = 0.0
            for r in range(R):
                v += F[R - 1 - r, i]
                if r % 2 == 0:
                    v *= x
                else:
                    v *= 1 - x
            ys[k, i] = v + y[i]
        phis[k, :] = start
        st = place(P, W, phis[k], ys[k, :M], mode, cond, dsign)
        if st != OK:
            return st, first, k0, A_extra.shape[0]
        ts[k] = times[m]
        k += 1
    return OK, last, k, A_extra.shape[0]


@jit
def motion_rhs(fbuf, ibuf, mode, start, y, tau, tl):
    """The right-hand side f = (q', q'') (2M,) at the state y = (q, q') (see
    :func:`free_rhs`) in one call, for integrators stepped from Python; returns
    (f, the joint values assembled from ``start``, status, worst block
    condition, the joint rates phi' (N,) there): the call that evaluates the
    motion at a trial point also tracks it at an accepted step (its joint values,
    condition and rates, which the record of the motion keeps)."""
    P = unpack(fbuf, ibuf)
    W = work(P)
    D = dynamics_work(P.M, 0)
    f = np.zeros(2 * P.M)
    phi = np.empty(P.N)
    cond = np.empty(P.B)
    dsign = np.empty(P.B)
    st = free_rhs(P, W, D, start, phi, y, f, mode, cond, dsign, tau, tl)
    worst = 1.0
    for c in range(P.B):
        worst = max(worst, cond[c])
    return f, phi, st, worst, W.phid.copy()


@jit(bare=True)
def track(P, W, D, start, phi, t, y, mode, cond, dsign, relax, stop_condition, k, ts, ys, phis,
          conds, phids):
    """An accepted step at (t, y) tracked: assembled from ``start`` (which then
    becomes its joint values), its worst block condition, the threshold's fall to
    ``relax`` (hysteresis), and row k of the record with its joint rates; returns
    (status, worst condition, threshold)."""
    M = P.M
    copy_into(start, phi)
    st = place(P, W, phi, y[:M], mode, cond, dsign)
    if st != OK:
        return st, 0.0, stop_condition
    copy_into(phi, start)
    worst = 1.0
    for c in range(P.B):
        worst = max(worst, cond[c])
    if worst <= relax:
        stop_condition = min(stop_condition, relax)
    ts[k] = t
    conds[k] = worst
    pose_rates(P, W, y[M:], D.zero)
    copy_into(y, ys[k])
    copy_into(phi, phis[k])
    copy_into(W.phid, phids[k])
    return OK, worst, stop_condition


@jit(inline=True)
def record_arrays(capacity, n_times, n, N, B):
    """What a compiled motion records into: its steps' times, states (n), joint
    values (N), conditions and joint rates (``capacity`` rows), its samples'
    times, states and joint values (``n_times`` rows); and one pose's joint
    values, block conditions and det signs (B)."""
    return (np.empty(capacity), np.empty((capacity, n)), np.empty((capacity, N)),
            np.empty(capacity), np.empty((capacity, N)), np.empty(n_times),
            np.empty((n_times, n)), np.empty((n_times, N)), np.empty(N), np.empty(B),
            np.empty(B))


@jit
def free_motion(fbuf, ibuf, mode, A, B, C, E3, E5, A_extra, C_extra, Dd, order, t, t_end,
                y0, phi0, tau, tl, times, h_abs, rtol, atol, max_step, stop_condition, relax,
                capacity):
    """Integrate the motion from (t, y0) towards t_end by DOP853 with scipy's
    coefficients, error norm and step-size control (``scipy.integrate.DOP853``,
    step for step), every trial point assembled from the joint values of the last
    accepted step, every accepted step tracked (assembled) and recorded, under
    gravity, the constant input ``tau`` (M,) and joint loads ``tl`` (N,).

    ``times`` (increasing, after t): output times, each sampled by DOP853's
    dense output and assembled, recorded as samples (at most ``times.shape[0]``).

    ``h_abs`` <= 0 selects the first step as scipy does.  Stops at t_end (code 0),
    after an accepted step whose worst block condition exceeds ``stop_condition``
    (1), when a trial point (or a stage or sample of the dense output) fails (2;
    ``failed`` its status), when the step underflows (3), when ``capacity`` steps
    are recorded (4), or when an accepted point cannot be tracked (5; that state
    is returned, not recorded).  Once a step's condition is at most ``relax``,
    ``stop_condition`` falls to ``relax`` (hysteresis: a raised threshold holds
    only while the condition stays high); the threshold in effect is returned.
    Returns (code, steps recorded, their times, states, joint values and
    conditions, t, y, joint values, the next step, function evaluations, failed
    status, the last step, threshold, samples recorded, their times, states and
    joint values, the joint rates of the steps recorded)."""
    P = unpack(fbuf, ibuf)
    N, M = P.N, P.M
    W = work(P)
    D = dynamics_work(M, 0)
    n = 2 * M
    S = A.shape[0]
    K = np.empty((S + 1 + A_extra.shape[0], n))
    ytmp = np.empty(n)
    y = y0.copy()
    y_new = np.empty(n)
    f = np.empty(n)
    start = phi0.copy()
    n_times = times.shape[0]
    ts, ys, phis, conds, phids, ts_s, ys_s, phis_s, phi, cond, dsign = record_arrays(
        capacity, n_times, n, N, P.B)
    next_time = 0
    k_s = 0
    nfev = 1
    failed = free_rhs(P, W, D, start, phi, y, f, mode, cond, dsign, tau, tl)
    k = 0
    last = 0.0
    if failed != OK:
        return (TRIAL_FAILED, 0, ts, ys, phis, conds, t, y, start, h_abs, nfev, failed, last,
                stop_condition, k_s, ts_s, ys_s, phis_s, phids)
    exponent = -1.0 / (order + 1)
    if h_abs <= 0.0:
        h_first, failed = initial_step(P, W, D, start, phi, mode, cond, dsign, tau, tl, t,
                                       t_end, y, f, ytmp, K[0], order, rtol, atol, max_step)
        nfev += 1
        if failed != OK:
            return (TRIAL_FAILED, 0, ts, ys, phis, conds, t, y, start, h_abs, nfev, failed,
                    last, stop_condition, k_s, ts_s, ys_s, phis_s, phids)
        h_abs = h_first
    code = AT_END
    while True:
        if not (t < t_end):
            code = AT_END
            break
        if k >= capacity:
            code = FULL
            break
        min_step = 10 * abs(np.nextafter(t, np.inf) - t)
        h = min(h_abs, max_step) if h_abs > min_step else min_step
        rejected = False
        while True:
            if h < min_step:
                return (STEP_UNDERFLOW, k, ts, ys, phis, conds, t, y, start, h, nfev, 0, last,
                        stop_condition, k_s, ts_s, ys_s, phis_s, phids)
            t_new = t + h
            if t_new > t_end:
                t_new = t_end
            h = t_new - t
            failed, evaluated = rk_step(P, W, D, start, phi, mode, cond, dsign, tau, tl, A, B,
                                        K, y, f, ytmp, y_new, h)
            nfev += evaluated
            if failed != OK:
                return (TRIAL_FAILED, k, ts, ys, phis, conds, t, y, start, h, nfev, failed,
                        last, stop_condition, k_s, ts_s, ys_s, phis_s, phids)
            error = error_norm(K, E3, E5, y, y_new, h, rtol, atol)
            if error < 1.0:
                factor = MAX_FACTOR if error == 0.0 else min(MAX_FACTOR,
                                                             SAFETY * error ** exponent)
                if rejected:
                    factor = min(1.0, factor)
                h_abs = h * factor
                break
            h = h * max(MIN_FACTOR, SAFETY * error ** exponent)
            rejected = True
        if next_time < n_times:
            failed, next_time, k_s, evaluated = dense_samples(
                P, W, D, start, phi, mode, cond, dsign, tau, tl, A_extra, C_extra, Dd, K, y,
                y_new, ytmp, t, h, times, next_time, ts_s, ys_s, phis_s, k_s)
            nfev += evaluated
            if failed != OK:
                return (TRIAL_FAILED, k, ts, ys, phis, conds, t, y, start, h, nfev, failed,
                        last, stop_condition, k_s, ts_s, ys_s, phis_s, phids)
        last = t_new - t
        t = t_new
        y[:] = y_new
        f[:] = K[S]
        st, worst, stop_condition = track(P, W, D, start, phi, t, y, mode, cond, dsign, relax,
                                          stop_condition, k, ts, ys, phis, conds, phids)
        if st != OK:
            return (LOST, k, ts, ys, phis, conds, t, y, start, h_abs, nfev, st, last,
                    stop_condition, k_s, ts_s, ys_s, phis_s, phids)
        k += 1
        if worst > stop_condition:
            code = TOO_ILL
            break
    return (code, k, ts, ys, phis, conds, t, y, start, h_abs, nfev, 0, last, stop_condition,
            k_s, ts_s, ys_s, phis_s, phids)


@jit(bare=True)
def motion_point(ctx, t, y, f):
    """:func:`free_rhs` as :mod:`kic.kernels.lsoda` calls a right-hand side
    (``ctx``: the mechanism, its work and the joint values to start from)."""
    P, W, D, start, phi, mode, cond, dsign, tau, tl = ctx
    return free_rhs(P, W, D, start, phi, y, f, mode, cond, dsign, tau, tl)


@jit(bare=True)
def lsoda_step(ctx, S):
    """One step of LSODA over the motion (:func:`kic.kernels.lsoda.step` of
    :func:`motion_point`), its bookkeeping without reference counts."""
    return lsoda.step(motion_point, ctx, S)


@jit
def lsoda_motion(fbuf, ibuf, mode, t, t_end, y0, phi0, tau, tl, times, h_first, rtol, atol,
                 max_step, stop_condition, relax, capacity, floats, ints):
    """:func:`free_motion` with scipy's LSODA (``scipy.integrate.LSODA``, step for
    step: :mod:`kic.kernels.lsoda`) instead of DOP853: the same arguments, stops
    and returned tuple, and LSODA's state at the end (its float and integer
    memory) after it.  With an empty ``floats``, LSODA starts afresh, as a new
    scipy solver does: at order 1 with Adams, its first step ``h_first`` (<= 0:
    LSODA's own); with the memory a call returned (at the state (t, y0) it
    returned, towards the same t_end), it goes on from there as if not
    interrupted.  The step returned is LSODA's next (for code 2, the one that
    failed).  Samples at ``times`` are scipy's dense output of LSODA (the
    Nordsieck polynomial of the step)."""
    P = unpack(fbuf, ibuf)
    N, M = P.N, P.M
    n = 2 * M
    y = y0.copy()
    start = phi0.copy()
    n_times = times.shape[0]
    ts, ys, phis, conds, phids, ts_s, ys_s, phis_s, phi, cond, dsign = record_arrays(
        capacity, n_times, n, N, P.B)
    ctx = (P, work(P), dynamics_work(M, 0), start, phi, mode, cond, dsign, tau, tl)
    S, fm, im = lsoda.state(n, rtol, atol, floats, ints)
    k = 0
    k_s = 0
    next_time = 0
    last = 0.0
    failed = OK
    nfev0 = S.i[lsoda.NFE]          # (a state gone on from counts its evaluations so far)
    if floats.shape[0] == 0:
        failed = lsoda.start(motion_point, ctx, S, t, t_end, y, max(h_first, 0.0), max_step)
    code = TRIAL_FAILED if failed != OK else AT_END
    while failed == OK:
        if not (t < t_end):
            break
        if k >= capacity:
            code = FULL
            break
        failed = lsoda_step(ctx, S)
        if failed != OK:
            # a trial point failed (its status), or LSODA gave up (the step underflowed)
            code = TRIAL_FAILED if failed > 0 else STEP_UNDERFLOW
            failed = max(failed, 0)
            break
        t_new = lsoda.time(S)
        k_s0 = k_s      # on a failure no sample of this step is kept
        while next_time < n_times and times[next_time] <= t_new:
            lsoda.dense(S, t_new, times[next_time], ys_s[k_s])
            phis_s[k_s, :] = start
            failed = place(P, ctx[1], phis_s[k_s], ys_s[k_s, :M], mode, cond, dsign)
            if failed != OK:
                break
            ts_s[k_s] = times[next_time]
            next_time += 1
            k_s += 1
        if failed != OK:
            code = TRIAL_FAILED
            k_s = k_s0
            break
        last = t_new - t
        t = t_new
        y[:] = S.yh[:n]
        st, worst, stop_condition = track(P, ctx[1], ctx[2], start, phi, t, y, mode, cond,
                                          dsign, relax, stop_condition, k, ts, ys, phis,
                                          conds, phids)
        if st != OK:
            code = LOST
            failed = st
            break
        k += 1
        if worst > stop_condition:
            code = TOO_ILL
            break
    return (code, k, ts, ys, phis, conds, t, y, start, S.r[lsoda.H], S.i[lsoda.NFE] - nfev0, failed,
            last, stop_condition, k_s, ts_s, ys_s, phis_s, phids, fm, im)
