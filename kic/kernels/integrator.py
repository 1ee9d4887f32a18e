"""The free motion of a closed mechanism, integrated in one compiled loop (internal).

scipy's DOP853 (``scipy.integrate.DOP853``), step for step: its coefficients
(passed in from scipy), its error norm, its step-size control and its choice of
the first step, with every trial point assembled (:mod:`kic.kernels.closed_pose`)
from the joint values of the last accepted step.  The constants below are
scipy's (``scipy.integrate._ivp.rk`` and ``common``), so the steps are the ones
``solve_ivp`` takes on the same right-hand side.
"""
from __future__ import annotations

import numpy as np

from .closed_pose import (OK, SINGULAR_DYNAMICS, assemble_pose, dynamics_work,
                          inertia_pose, pose_rates, project, rnea, settle, work)
from .jit import jit
from .layout import unpack
from .linalg import cholesky_solve

__all__ = ["place", "free_rhs", "free_motion"]

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


@jit
def place(P, W, phi, q, mode, cond, dsign):
    """Assemble at the coordinates q starting from the joint values in phi (in
    place), form the transfer and check the assembly mode; returns the status
    (0 ok, 1 not assembled, 2 singular block, 4 other mode)."""
    q_idx = P.q_idx
    for m in range(q_idx.shape[0]):
        phi[q_idx[m]] = q[m]
    st, _ = assemble_pose(P, W, phi)
    return settle(P, W, st, phi, phi, cond, dsign, mode)


@jit
def free_rhs(P, W, D, start, phi, y, f, mode, cond, dsign):
    """f = (q', q'') of the free motion (gravity only) at the state y = (q, q'),
    the joint values assembled from ``start``; returns the status."""
    M = P.M
    phi[:] = start
    st = place(P, W, phi, y[:M], mode, cond, dsign)
    if st != OK:
        return st
    pose_rates(P, W, y[M:], D.zero)
    rnea(P, W, True)
    project(W.G, W.tau, D.Tq)
    Im, Tq, sol = D.Im, D.Tq, D.sol
    inertia_pose(P, W, Im)
    b = D.rhs[:M]
    for m in range(M):
        b[m] = -Tq[m]
    if not cholesky_solve(Im, b, Im, sol):
        return SINGULAR_DYNAMICS
    for m in range(M):
        f[m] = y[M + m]
        f[M + m] = sol[m]
    return OK


@jit
def initial_step(P, W, D, start, phi, mode, cond, dsign, t, t_end, y, f, ytmp, f1, order,
                 rtol, atol, max_step):
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
    failed = free_rhs(P, W, D, start, phi, ytmp, f1, mode, cond, dsign)
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


@jit
def error_norm(K, E3, E5, y, y_new, h, rtol, atol):
    """DOP853's ``_estimate_error_norm`` of a step of size h."""
    n = y.shape[0]
    e5 = 0.0
    e3 = 0.0
    for i in range(n):
        sc = atol + max(abs(y[i]), abs(y_new[i])) * rtol
        a5 = 0.0
        a3 = 0.0
        for j in range(K.shape[0]):
            a5 += K[j, i] * E5[j]
            a3 += K[j, i] * E3[j]
        e5 += (a5 / sc) ** 2
        e3 += (a3 / sc) ** 2
    if e5 == 0.0 and e3 == 0.0:
        return 0.0
    return h * e5 / np.sqrt((e5 + 0.01 * e3) * n)


@jit
def rk_step(P, W, D, start, phi, mode, cond, dsign, A, B, K, y, f, ytmp, y_new, h):
    """scipy's ``rk_step``: the stages K (S + 1, n) and y_new of a step h from
    (y, f); returns (the status of the first trial point that fails, else OK;
    the trial points evaluated)."""
    n = y.shape[0]
    S = A.shape[0]
    K[0, :] = f
    for s in range(1, S):
        for i in range(n):
            acc = 0.0
            for j in range(s):
                acc += K[j, i] * A[s, j]
            ytmp[i] = y[i] + acc * h
        failed = free_rhs(P, W, D, start, phi, ytmp, K[s], mode, cond, dsign)
        if failed != OK:
            return failed, s
    for i in range(n):
        acc = 0.0
        for j in range(S):
            acc += K[j, i] * B[j]
        y_new[i] = y[i] + h * acc
    return free_rhs(P, W, D, start, phi, y_new, K[S], mode, cond, dsign), S


@jit
def free_motion(fbuf, ibuf, mode, A, B, C, E3, E5, order, t, t_end, y0, phi0, h_abs, rtol,
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
    the threshold in effect is returned last.  Returns (code, steps recorded,
    their times, states, joint values and conditions, t, y, joint values, the
    next step, function evaluations, failed status, the last step, threshold)."""
    P = unpack(fbuf, ibuf)
    N, M = P.N, P.M
    W = work(P)
    D = dynamics_work(M, 0)
    n = 2 * M
    S = A.shape[0]
    K = np.empty((S + 1, n))
    ytmp = np.empty(n)
    y = y0.copy()
    y_new = np.empty(n)
    f = np.empty(n)
    start = phi0.copy()
    phi = np.empty(N)
    cond = np.empty(P.B)
    dsign = np.empty(P.B)
    ts = np.empty(capacity)
    ys = np.empty((capacity, n))
    phis = np.empty((capacity, N))
    conds = np.empty(capacity)
    nfev = 1
    failed = free_rhs(P, W, D, start, phi, y, f, mode, cond, dsign)
    k = 0
    last = 0.0
    if failed != OK:
        return (TRIAL_FAILED, 0, ts, ys, phis, conds, t, y, start, h_abs, nfev, failed, last,
                stop_condition)
    exponent = -1.0 / (order + 1)
    if h_abs <= 0.0:
        h_first, failed = initial_step(P, W, D, start, phi, mode, cond, dsign, t, t_end, y, f,
                                       ytmp, K[0], order, rtol, atol, max_step)
        nfev += 1
        if failed != OK:
            return (TRIAL_FAILED, 0, ts, ys, phis, conds, t, y, start, h_abs, nfev, failed,
                    last, stop_condition)
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
                        stop_condition)
            t_new = t + h
            if t_new > t_end:
                t_new = t_end
            h = t_new - t
            failed, evaluated = rk_step(P, W, D, start, phi, mode, cond, dsign, A, B, K, y, f,
                                        ytmp, y_new, h)
            nfev += evaluated
            if failed != OK:
                return (TRIAL_FAILED, k, ts, ys, phis, conds, t, y, start, h, nfev, failed,
                        last, stop_condition)
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
        last = t_new - t
        t = t_new
        y[:] = y_new
        f[:] = K[S]
        phi[:] = start
        st = place(P, W, phi, y[:M], mode, cond, dsign)
        if st != OK:
            return LOST, k, ts, ys, phis, conds, t, y, start, h_abs, nfev, st, last, stop_condition
        start[:] = phi
        worst = 1.0
        for c in range(P.B):
            worst = max(worst, cond[c])
        if worst <= relax:
            stop_condition = min(stop_condition, relax)
        ts[k] = t
        ys[k] = y
        phis[k] = phi
        conds[k] = worst
        k += 1
        if worst > stop_condition:
            code = TOO_ILL
            break
    return code, k, ts, ys, phis, conds, t, y, start, h_abs, nfev, 0, last, stop_condition
