"""LSODA, compiled: ODEPACK's DLSODA as scipy's ``solve_ivp(method="LSODA")`` runs it
(internal).

Adams (orders 1-12) while the problem is not stiff, BDF (orders 1-5, a chord
iteration on a Jacobian by finite differences) while it is, switching by
Petzold's test: LSODA's own routines DSTODA (Nordsieck history, predictor,
corrector, error test, order and step selection, method switch), DPRJA (the
Newton matrix ``I - h l0 J``; the LU is :mod:`kic.kernels.linalg`'s), DCFODE,
DEWSET and the norms, DLSODA's choice of the first step and its one-step task
(``itask = 5``: one step, never past ``t_crit = t_end``), step for step as
scipy's C translation of ODEPACK (``scipy/integrate/src/lsoda.c``, public
domain) with scipy's settings: a dense Jacobian by differences (``jt = 2``),
scalar tolerances, ``max_step``, ``first_step`` (0: LSODA's own), no minimum
step, the default maximum orders.  The dense output is scipy's
``LsodaDenseOutput`` (the Nordsieck polynomial of the last step's order).

The right-hand side stays outside: every routine takes ``fun`` and its data
``ctx``, ``fun(ctx, t, y, f) -> status`` (0 ok; anything else ends the step
attempt, and :func:`step` returns that status).  numba compiles the routines
once per ``fun`` into each driver that calls them: the drivers take no function
argument, and every routine that takes ``fun`` is inline (a function passed
as a value would keep the driver out of numba's cache).  The state is a
:class:`State`, made by :func:`state`: views of one float and one integer
memory (returned, so that a later call goes on from them), its scalars in two
arrays indexed by the names below.

The Newton matrix's LU is kic's (:func:`kic.kernels.linalg.lu_factor`), scipy's
is LAPACK's, whose kernels round some products differently (fused): on the
same problem the two agree bit for bit in Adams and for the first BDF steps,
then to rounding, and over long stiff stretches a step decision can tip.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..settings import LSODA_BIAS_DOWN, LSODA_BIAS_SAME, LSODA_BIAS_UP, LSODA_PDH_FLOOR
from .jit import jit, stack_vector, view
from .linalg import lu_factor, lu_solve

__all__ = ["State", "state", "start", "step", "time", "dense", "integrate", "FAILED",
           "CONVERGENCE_FAILED", "TOO_MUCH_ACCURACY"]

# LSODA's constants (DLSODA, DSTODA; scipy's lsoda.c)
MXORDN = 12            # the Adams methods' highest order (mord(1))
MXORDS = 5             # the BDF methods' highest order (mord(2))
CCMAX = 0.3            # |rc - 1| above this (h l0 changed): a new Newton matrix
MAXCOR = 3             # corrector iterations per attempt
MSBP = 20              # a new Newton matrix at least every this many steps
MXNCF = 10             # corrector convergence failures allowed in one step
RATIO = 5.0            # the step-size advantage BDF must show to be switched to
SWITCH_AFTER = 20      # steps in a method before a switch is considered (icount)
UROUND = np.finfo(np.float64).eps
# the Adams methods' stability region: h |J| at most SM1[nq - 1] (DSTODA's sm1)
SM1 = np.array([0.5, 0.575, 0.55, 0.45, 0.35, 0.25, 0.20, 0.15, 0.10, 0.075, 0.050, 0.025])

# the real scalars of the state (DLS001's common block, the ones used here)
(H, HOLD, HU, TN, EL0, RC, CRATE, RMAX, PDEST, PDLAST, PDNORM, HMXI, CONIT, TSW,
 TCRIT) = range(15)
# the integer ones
(NQ, L, LMAX, IALTH, NSLP, IPUP, ICOUNT, IRFLAG, METH, MITER, MUSED, NST, NFE, NJE, NQU,
 JSTART, KFLAG, JCUR, ICF, IERPJ, MAXORD, STATUS) = range(22)

# corrector outcomes
CONVERGED, NO_CONVERGENCE, RHS_FAILED, RETRY = range(4)
# step outcomes (step's return: 0, the right-hand side's status > 0, or these)
FAILED = -1                  # repeated error test failures (kflag -1: istate -4)
CONVERGENCE_FAILED = -2      # repeated corrector failures (kflag -2: istate -5)
TOO_MUCH_ACCURACY = -3       # the tolerances ask for more than rounding allows (istate -2)

State = namedtuple("State", ["r", "i", "el", "elco", "tesco", "cm1", "cm2", "yh", "ewt",
                             "savf", "acor", "y", "wm", "piv", "rtol", "atol"])


@jit(inline=True)
def memory_sizes(n):
    """The lengths of the float and integer memory of a state of n equations."""
    return 15 + 13 + 12 * 13 + 12 * 3 + 12 + 5 + 13 * n + 4 * n + n * n, 22 + n


@jit
def state(n, rtol, atol, floats, ints):
    """The LSODA state for n equations at scalar tolerances, its arrays views of
    two flat memories: copies of ``floats`` and ``ints`` (a state saved where a
    call ended, to go on from it), or zeros where ``floats`` is empty (a fresh
    state, for :func:`start`).  Returns (state, its float memory, its integer
    memory)."""
    nf, ni = memory_sizes(n)
    fm = floats.copy() if floats.shape[0] == nf else np.zeros(nf)
    im = ints.copy() if floats.shape[0] == nf else np.zeros(ni, np.int64)
    S = State(view(fm, 0, (15,)), view(im, 0, (22,)), view(fm, 15, (13,)),
              view(fm, 28, (12, 13)), view(fm, 184, (12, 3)), view(fm, 220, (12,)),
              view(fm, 232, (5,)), view(fm, 237, (13 * n,)), view(fm, 237 + 13 * n, (n,)),
              view(fm, 237 + 14 * n, (n,)), view(fm, 237 + 15 * n, (n,)),
              view(fm, 237 + 16 * n, (n,)), view(fm, 237 + 17 * n, (n, n)),
              view(im, 22, (n,)), np.array([rtol]), np.array([atol]))
    return S, fm, im


@jit(inline=True)
def vmnorm(n, v, w):
    """DVMNORM: the weighted max-norm max |v_i| w_i (w: inverse error weights)."""
    vm = 0.0
    for i in range(n):
        vm = max(vm, abs(v[i]) * w[i])
    return vm


@jit(bare=True)
def fnorm(n, a, w):
    """DFNORM: the matrix norm of ``a`` consistent with :func:`vmnorm`."""
    an = 0.0
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += abs(a[i, j]) / w[j]
        an = max(an, s * w[i])
    return an


@jit(bare=True)
def ewset(S):
    """DEWSET, inverted as DLSODA keeps it: ewt_i = 1 / (rtol |yh_i| + atol); False
    where a weight is not positive."""
    n = S.ewt.shape[0]
    for i in range(n):
        w = S.rtol[0] * abs(S.yh[i]) + S.atol[0]
        if w <= 0.0:
            return False
        S.ewt[i] = 1.0 / w
    return True


@jit(bare=True)
def cfode(meth, elco, tesco):
    """DCFODE: the coefficients elco[nq - 1, :nq + 1] of the method of order nq and
    the test constants tesco[nq - 1, :] (Adams, meth 1, orders 1-12; BDF, 2, 1-5)."""
    pc = stack_vector(12)          # (on the stack: no allocation)
    for k in range(12):
        pc[k] = 0.0
    if meth == 1:
        elco[0, 0] = 1.0
        elco[0, 1] = 1.0
        tesco[0, 0] = 0.0
        tesco[0, 1] = 2.0
        tesco[1, 0] = 1.0
        tesco[11, 2] = 0.0
        pc[0] = 1.0
        rqfac = 1.0
        for nq in range(1, 12):
            # p(x) = (x + 1)(x + 2)...(x + nq - 1); its integrals from -1 to 0
            rq1fac = rqfac
            rqfac = rqfac / (nq + 1)
            pc[nq] = 0.0
            for ib in range(nq):
                pc[nq - ib] = pc[nq - ib - 1] + nq * pc[nq - ib]
            pc[0] = nq * pc[0]
            pint = pc[0]
            xpin = pc[0] * 0.5
            tsign = 1.0
            for i in range(1, nq + 1):
                tsign = -tsign
                pint = pint + tsign * pc[i] / (i + 1)
                xpin = xpin + tsign * pc[i] / (i + 2)
            elco[nq, 0] = pint * rq1fac
            elco[nq, 1] = 1.0
            for i in range(1, nq + 1):
                elco[nq, i + 1] = rq1fac * pc[i] / (i + 1)
            agamq = rqfac * xpin
            ragq = 1.0 / agamq
            tesco[nq, 1] = ragq
            if nq < 11:
                tesco[nq + 1, 0] = ragq * rqfac / (nq + 2)
            tesco[nq - 1, 2] = ragq
        return
    # BDF: p(x) = (x + 1)(x + 2)...(x + nq)
    pc[0] = 1.0
    rq1fac = 1.0
    for nq in range(5):
        pc[nq + 1] = 0.0
        for ib in range(nq + 1):
            pc[nq - ib + 1] = pc[nq - ib] + (nq + 1) * pc[nq - ib + 1]
        pc[0] = (nq + 1) * pc[0]
        for i in range(nq + 2):
            elco[nq, i] = pc[i] / pc[1]
        elco[nq, 1] = 1.0
        tesco[nq, 0] = rq1fac
        tesco[nq, 1] = (nq + 2) / elco[nq, 0]
        tesco[nq, 2] = (nq + 3) / elco[nq, 0]
        rq1fac = rq1fac / (nq + 1)


@jit(bare=True)
def reset_coefficients(S):
    """DSTODA at 150: el of the order nq; rc, el0 and conit follow."""
    r, i = S.r, S.i
    nq = i[NQ]
    for j in range(i[L]):
        S.el[j] = S.elco[nq - 1, j]
    r[RC] = r[RC] * S.el[0] / r[EL0]
    r[EL0] = S.el[0]
    r[CONIT] = 0.5 / (nq + 2)


@jit(bare=True)
def rescale(S, rh):
    """DSTODA at 175-180: h times rh (rh at most rmax, h at most the largest step,
    Adams within its stability region), the history rescaled to it."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    rh = min(rh, r[RMAX])
    rh = rh / max(1.0, abs(r[H]) * r[HMXI] * rh)
    if i[METH] != 2:
        # Adams: a step limited by stability marks (irflag) that roundoff may follow
        i[IRFLAG] = 0
        pdh = max(abs(r[H]) * r[PDLAST], LSODA_PDH_FLOOR)
        if rh * pdh * 1.00001 >= SM1[i[NQ] - 1]:
            rh = SM1[i[NQ] - 1] / pdh
            i[IRFLAG] = 1
    f = 1.0
    for j in range(1, i[L]):
        f = f * rh
        for k in range(n):
            S.yh[j * n + k] = S.yh[j * n + k] * f
    r[H] = r[H] * rh
    r[RC] = r[RC] * rh
    i[IALTH] = i[L]


@jit(bare=True)
def predict(S):
    """DSTODA at 200: the history times the Pascal triangle matrix (the prediction
    at tn + h); a new Newton matrix is due where h l0 changed by more than CCMAX
    or MSBP steps have passed."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    if abs(r[RC] - 1.0) > CCMAX:
        i[IPUP] = i[MITER]
    if i[NST] >= i[NSLP] + MSBP:
        i[IPUP] = i[MITER]
    r[TN] = r[TN] + r[H]
    end = i[NQ] * n
    i1 = end
    for _ in range(i[NQ]):
        i1 -= n
        for k in range(i1, end):
            S.yh[k] = S.yh[k] + S.yh[k + n]
    return vmnorm(n, S.yh, S.ewt)


@jit(bare=True)
def retract(S, told):
    """DSTODA at 430-445 and 500-515: the history back to before the prediction."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    r[TN] = told
    end = i[NQ] * n
    i1 = end
    for _ in range(i[NQ]):
        i1 -= n
        for k in range(i1, end):
            S.yh[k] = S.yh[k] - S.yh[k + n]


@jit(inline=True)
def newton_matrix(fun, ctx, S, ftem):
    """DPRJA (miter 2): P = I - h l0 J, J by differences, and its LU; pdnorm the norm
    of J.  Returns the right-hand side's status (0 ok); ierpj 1 where P is
    singular."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    y, savf, ewt, wm = S.y, S.savf, S.ewt, S.wm
    i[NJE] += 1
    i[IERPJ] = 0
    i[JCUR] = 1
    hl0 = r[H] * r[EL0]
    fac = vmnorm(n, savf, ewt)
    r0 = 1000.0 * abs(r[H]) * UROUND * n * fac
    if r0 == 0.0:
        r0 = 1.0
    srur = np.sqrt(UROUND)
    for j in range(n):
        yj = y[j]
        inc = max(srur * abs(yj), r0 / ewt[j])
        y[j] = y[j] + inc
        fac = -hl0 / inc
        st = fun(ctx, r[TN], y, ftem)
        if st != 0:
            return st
        for k in range(n):
            wm[k, j] = (ftem[k] - savf[k]) * fac
        y[j] = yj
    i[NFE] += n
    r[PDNORM] = fnorm(n, wm, ewt) / abs(hl0)
    for k in range(n):
        wm[k, k] = wm[k, k] + 1.0
    if lu_factor(wm, n, S.piv) == 0.0:
        i[IERPJ] = 1
    return 0


@jit(inline=True)
def correct(fun, ctx, S, pnorm):
    """DSTODA at 220-450: the corrector iteration (functional for Adams, chord with
    the Newton matrix for BDF); acor accumulates the corrections.  Returns
    (outcome, iterations m, the last correction's norm)."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    y, yh, savf, acor, ewt, el = S.y, S.yh, S.savf, S.acor, S.ewt, S.el
    m = 0
    rate = 0.0
    dl = 0.0
    delp = 0.0
    for k in range(n):
        y[k] = yh[k]
    st = fun(ctx, r[TN], y, savf)
    if st != 0:
        i[STATUS] = st
        return RHS_FAILED, m, dl
    i[NFE] += 1
    if i[IPUP] > 0:
        st = newton_matrix(fun, ctx, S, acor)
        if st != 0:
            i[STATUS] = st
            return RHS_FAILED, m, dl
        i[IPUP] = 0
        r[RC] = 1.0
        i[NSLP] = i[NST]
        r[CRATE] = 0.7
        if i[IERPJ] != 0:
            return NO_CONVERGENCE, m, dl
    for k in range(n):
        acor[k] = 0.0
    while True:
        if i[MITER] == 0:
            for k in range(n):
                savf[k] = r[H] * savf[k] - yh[n + k]
                y[k] = savf[k] - acor[k]
            dl = vmnorm(n, y, ewt)
            for k in range(n):
                y[k] = yh[k] + el[0] * savf[k]
                acor[k] = savf[k]
        else:
            for k in range(n):
                y[k] = r[H] * savf[k] - (yh[n + k] + acor[k])
            lu_solve(S.wm, n, S.piv, y)
            dl = vmnorm(n, y, ewt)
            for k in range(n):
                acor[k] = acor[k] + y[k]
                y[k] = yh[k] + el[0] * acor[k]
        # converged: a change at the size of roundoff, or the rate test (Adams
        # iterates twice at least, for its estimate of the Lipschitz constant)
        if dl <= 100.0 * pnorm * UROUND:
            break
        if m != 0 or i[METH] != 1:
            if m != 0:
                rm = 1024.0
                if dl <= 1024.0 * delp:
                    rm = dl / delp
                rate = max(rate, rm)
                r[CRATE] = max(0.2 * r[CRATE], rm)
            dcon = dl * min(1.0, 1.5 * r[CRATE]) / (S.tesco[i[NQ] - 1, 1] * r[CONIT])
            if dcon <= 1.0:
                r[PDEST] = max(r[PDEST], rate / abs(r[H] * el[0]))
                if r[PDEST] != 0.0:
                    r[PDLAST] = r[PDEST]
                break
        m = m + 1
        if m == MAXCOR or (m >= 2 and dl > 2.0 * delp):
            if i[MITER] != 0 and i[JCUR] != 1:
                i[ICF] = 1
                i[IPUP] = i[MITER]
                return RETRY, m, dl
            return NO_CONVERGENCE, m, dl
        delp = dl
        st = fun(ctx, r[TN], y, savf)
        if st != 0:
            i[STATUS] = st
            return RHS_FAILED, m, dl
        i[NFE] += 1
    i[JCUR] = 0
    return CONVERGED, m, dl


@jit(bare=True)
def switch_method(S, dsm, pnorm):
    """DSTODA at 460-488 after a successful step: every SWITCH_AFTER steps, the step
    size the other method could have taken on it; switch where it is RATIO
    times this method's (Adams -> BDF) or no smaller (BDF -> Adams), rescaling
    the history.  Returns True where it switched."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    yh, ewt = S.yh, S.ewt
    i[ICOUNT] -= 1
    if i[ICOUNT] >= 0:
        return False
    nq = i[NQ]
    if i[METH] == 1:
        # Adams: above order 5 the problem is not stiff; where the estimates are
        # polluted by roundoff, switch only after a step limited by stability,
        # with twice the step
        if nq > 5:
            return False
        clean = dsm > 100.0 * pnorm * UROUND and r[PDEST] != 0.0
        if not clean and i[IRFLAG] == 0:
            return False
        if not clean:
            rh2 = 2.0
            nqm2 = min(nq, MXORDS)
        else:
            exsm = 1.0 / i[L]
            rh1 = 1.0 / (1.2 * dsm ** exsm + LSODA_BIAS_SAME)
            rh1it = 2.0 * rh1
            pdh = r[PDLAST] * abs(r[H])
            if pdh * rh1 > 0.00001:
                rh1it = SM1[nq - 1] / pdh
            rh1 = min(rh1, rh1it)
            if nq > MXORDS:
                nqm2 = MXORDS
                lm2 = MXORDS + 1
                exm2 = 1.0 / lm2
                dm2 = vmnorm(n, yh[lm2 * n:], ewt) / S.cm2[MXORDS - 1]
                rh2 = 1.0 / (1.2 * dm2 ** exm2 + LSODA_BIAS_SAME)
            else:
                dm2 = dsm * (S.cm1[nq - 1] / S.cm2[nq - 1])
                rh2 = 1.0 / (1.2 * dm2 ** exsm + LSODA_BIAS_SAME)
                nqm2 = nq
            if rh2 < RATIO * rh1:
                return False
        rh = rh2
        i[ICOUNT] = SWITCH_AFTER
        i[METH] = 2
        i[MITER] = 2            # jt = 2: the Jacobian by differences
        r[PDLAST] = 0.0
        i[NQ] = nqm2
        i[L] = nqm2 + 1
        rescale(S, rh)
        return True
    # BDF: the step Adams could have taken, unless so small that roundoff pollutes it
    exsm = 1.0 / i[L]
    if MXORDN >= nq:
        dm1 = dsm * (S.cm2[nq - 1] / S.cm1[nq - 1])
        rh1 = 1.0 / (1.2 * dm1 ** exsm + LSODA_BIAS_SAME)
        nqm1 = nq
        exm1 = exsm
    else:
        nqm1 = MXORDN
        lm1 = MXORDN + 1
        exm1 = 1.0 / lm1
        dm1 = vmnorm(n, yh[lm1 * n:], ewt) / S.cm1[MXORDN - 1]
        rh1 = 1.0 / (1.2 * dm1 ** exm1 + LSODA_BIAS_SAME)
    rh1it = 2.0 * rh1
    pdh = r[PDNORM] * abs(r[H])
    if pdh * rh1 > 0.00001:
        rh1it = SM1[nqm1 - 1] / pdh
    rh1 = min(rh1, rh1it)
    rh2 = 1.0 / (1.2 * dsm ** exsm + LSODA_BIAS_SAME)
    if rh1 * RATIO < 5.0 * rh2:
        return False
    dm1 = max(0.001, rh1) ** exm1 * dm1
    if dm1 <= 1000.0 * UROUND * pnorm:
        return False
    i[ICOUNT] = SWITCH_AFTER
    i[METH] = 1
    i[MITER] = 0
    r[PDLAST] = 0.0
    i[NQ] = nqm1
    i[L] = nqm1 + 1
    rescale(S, rh1)
    return True


@jit(bare=True)
def select(S, dsm, rhup):
    """DSTODA at 540-625: the step size ratio rh and order newq from the step sizes
    the orders nq - 1, nq and nq + 1 (``rhup``, 0 where not considered) allow
    (Adams: within its stability region).  Returns (rh, newq, keep): keep where
    a successful step's change would be under 10 % (then h stays, ialth 3)."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    nq = i[NQ]
    exsm = 1.0 / i[L]
    rhsm = 1.0 / (1.2 * dsm ** exsm + LSODA_BIAS_SAME)
    rhdn = 0.0
    if nq != 1:
        ddn = vmnorm(n, S.yh[(i[L] - 1) * n:], S.ewt) / S.tesco[nq - 1, 0]
        exdn = 1.0 / nq
        rhdn = 1.0 / (1.3 * ddn ** exdn + LSODA_BIAS_DOWN)
    pdh = 0.0
    if i[METH] == 1:
        pdh = max(abs(r[H]) * r[PDLAST], LSODA_PDH_FLOOR)
        if i[L] < i[LMAX]:
            rhup = min(rhup, SM1[i[L] - 1] / pdh)
        rhsm = min(rhsm, SM1[nq - 1] / pdh)
        if nq > 1:
            rhdn = min(rhdn, SM1[nq - 2] / pdh)
        r[PDEST] = 0.0
    if rhsm >= rhup:
        if rhsm >= rhdn:
            return rhsm, nq, False
        rh = rhdn
        if i[KFLAG] < 0 and rh > 1.0:
            rh = 1.0
        newq = nq - 1
    elif rhup > rhdn:
        return rhup, i[L], rhup < 1.1
    else:
        rh = rhdn
        if i[KFLAG] < 0 and rh > 1.0:
            rh = 1.0
        newq = nq - 1
    return rh, newq, False


@jit(bare=True)
def after_selection(S, rh, newq):
    """DSTODA at 620-630: the 10 % test (not where Adams is at its stability limit),
    at most 0.2 after two failures, the new order's coefficients and the step.
    Returns False where the step is kept (ialth 3)."""
    r, i = S.r, S.i
    pdh = max(abs(r[H]) * r[PDLAST], LSODA_PDH_FLOOR)
    bypass = i[METH] == 1 and rh * pdh * 1.00001 >= SM1[newq - 1]
    if not bypass and i[KFLAG] == 0 and rh < 1.1:
        i[IALTH] = 3
        return False
    if i[KFLAG] <= -2:
        rh = min(rh, 0.2)
    if newq != i[NQ]:
        i[NQ] = newq
        i[L] = newq + 1
        reset_coefficients(S)
    rescale(S, rh)
    return True


@jit(bare=True)
def accepted(S, dsm, pnorm):
    """DSTODA at 450-530 after the error test passed: the history corrected, the
    method switch considered, then (every ialth steps) the step sizes of the
    orders around nq.  Returns (rhup, action): action 0 done (rmax reset), 1
    done (no reset), 2 select the step and order, rhup the ratio nq + 1 allows."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    yh, acor = S.yh, S.acor
    i[KFLAG] = 0
    i[NST] += 1
    r[HU] = r[H]
    i[NQU] = i[NQ]
    i[MUSED] = i[METH]
    for j in range(i[L]):
        for k in range(n):
            yh[j * n + k] = yh[j * n + k] + S.el[j] * acor[k]
    if switch_method(S, dsm, pnorm):
        return 0.0, 0
    i[IALTH] -= 1
    if i[IALTH] == 0:
        rhup = 0.0
        if i[L] != i[LMAX]:
            # the order nq + 1: the difference of this and the saved correction
            for k in range(n):
                S.savf[k] = acor[k] - yh[(i[LMAX] - 1) * n + k]
            dup = vmnorm(n, S.savf, S.ewt) / S.tesco[i[NQ] - 1, 2]
            exup = 1.0 / (i[L] + 1.0)
            rhup = 1.0 / (1.4 * dup ** exup + LSODA_BIAS_UP)
        return rhup, 2
    if not (i[IALTH] > 1 or i[L] == i[LMAX]):
        for k in range(n):
            yh[(i[LMAX] - 1) * n + k] = acor[k]
    return 0.0, 1


@jit(inline=True)
def error_failed(fun, ctx, S, told):
    """DSTODA at 500-650: the error test failed: retract, and after three failures
    restart at order 1 from a new derivative with h / 10.  Returns (status of
    that evaluation or FAILED after ten failures else 0, restarted)."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    i[KFLAG] -= 1
    retract(S, told)
    r[RMAX] = 2.0
    if i[KFLAG] > -3:
        return 0, False
    if i[KFLAG] == -10:
        return FAILED, False
    r[H] = r[H] * 0.1
    for k in range(n):
        S.y[k] = S.yh[k]
    st = fun(ctx, r[TN], S.y, S.savf)
    if st != 0:
        return st, False
    i[NFE] += 1
    for k in range(n):
        S.yh[n + k] = r[H] * S.savf[k]
    i[IPUP] = i[MITER]
    i[IALTH] = 5
    if i[NQ] != 1:
        i[NQ] = 1
        i[L] = 2
        reset_coefficients(S)
    return 0, True


@jit(bare=True)
def first_call(S):
    """DSTODA at jstart 0: order 1, both methods' constants cm1, cm2, Adams."""
    r, i = S.r, S.i
    i[LMAX] = i[MAXORD] + 1
    i[NQ] = 1
    i[L] = 2
    i[IALTH] = 2
    r[RMAX] = 10000.0
    r[RC] = 0.0
    r[EL0] = 1.0
    r[CRATE] = 0.7
    r[HOLD] = r[H]
    i[NSLP] = 0
    i[IPUP] = i[MITER]
    i[ICOUNT] = SWITCH_AFTER
    i[IRFLAG] = 0
    r[PDEST] = 0.0
    r[PDLAST] = 0.0
    cfode(2, S.elco, S.tesco)
    for k in range(5):
        S.cm2[k] = S.tesco[k, 1] * S.elco[k, k + 1]
    cfode(1, S.elco, S.tesco)
    for k in range(12):
        S.cm1[k] = S.tesco[k, 1] * S.elco[k, k + 1]
    reset_coefficients(S)


@jit(bare=True)
def restart(S):
    """DSTODA at jstart -1 (after a method switch: the new method's coefficients)
    and -2 (h changed from outside): the history rescaled to the new h."""
    r, i = S.r, S.i
    if i[JSTART] == -1:
        i[IPUP] = i[MITER]
        i[LMAX] = i[MAXORD] + 1
        if i[IALTH] == 1:
            i[IALTH] = 2
        if i[METH] != i[MUSED]:
            cfode(i[METH], S.elco, S.tesco)
            i[IALTH] = i[L]
            reset_coefficients(S)
    if r[H] != r[HOLD]:
        rh = r[H] / r[HOLD]
        r[H] = r[HOLD]
        rescale(S, rh)


@jit(inline=True)
def stoda(fun, ctx, S):
    """DSTODA: one step (retried until accepted or failed).  Returns 0, a status of
    the right-hand side, FAILED or CONVERGENCE_FAILED."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    i[KFLAG] = 0
    i[IERPJ] = 0
    i[JCUR] = 0
    i[ICF] = 0
    told = r[TN]
    ncf = 0
    if i[JSTART] == 0:
        first_call(S)
    elif i[JSTART] < 0:
        restart(S)
    pnorm = predict(S)
    reset_rmax = True
    while True:
        outcome, m, dl = correct(fun, ctx, S, pnorm)
        if outcome == RETRY:
            continue
        if outcome == RHS_FAILED:
            r[HOLD] = r[H]
            i[JSTART] = 1
            return i[STATUS]
        if outcome == NO_CONVERGENCE:
            # at 430: h / 4 and a new Newton matrix (no minimum step: scipy's hmin 0)
            i[ICF] = 2
            ncf += 1
            r[RMAX] = 2.0
            retract(S, told)
            if ncf == MXNCF:
                r[HOLD] = r[H]
                i[JSTART] = 1
                return CONVERGENCE_FAILED
            i[IPUP] = i[MITER]
            rescale(S, 0.25)
            pnorm = predict(S)
            continue
        i[JCUR] = 0
        dsm = dl / S.tesco[i[NQ] - 1, 1] if m == 0 else (
            vmnorm(n, S.acor, S.ewt) / S.tesco[i[NQ] - 1, 1])
        if dsm > 1.0:
            st, restarted = error_failed(fun, ctx, S, told)
            if st != 0:
                r[HOLD] = r[H]
                i[JSTART] = 1
                return st
            if restarted:
                pnorm = predict(S)
                continue
            rhup = 0.0
        else:
            rhup, action = accepted(S, dsm, pnorm)
            if action == 0:
                break
            if action == 1:
                reset_rmax = False
                break
        rh, newq, keep = select(S, dsm, rhup)
        if keep:
            i[IALTH] = 3
            reset_rmax = False
            break
        if newq == i[L]:
            # order nq + 1: its history column from the saved correction
            f = S.el[i[L] - 1] / i[L]
            for k in range(n):
                S.yh[newq * n + k] = S.acor[k] * f
            i[NQ] = newq
            i[L] = newq + 1
            reset_coefficients(S)
            rescale(S, rh)
            break
        if not after_selection(S, rh, newq):
            reset_rmax = False
            break
        if i[KFLAG] == 0:
            break
        pnorm = predict(S)
    if reset_rmax:
        r[RMAX] = 10.0
    f = 1.0 / S.tesco[i[NQU] - 1, 1]
    for k in range(n):
        S.acor[k] = S.acor[k] * f
    r[HOLD] = r[H]
    i[JSTART] = 1
    return 0


@jit(inline=True)
def start(fun, ctx, S, t, t_end, y0, first_step, max_step):
    """DLSODA's first call (istate 1) with itask 5 and t_crit = t_end > t: f at
    (t, y0), the history of order 1, the first step ``first_step`` (cut to end
    at t_end) or, where 0, LSODA's own from the tolerances and |f|; steps at
    most ``max_step`` (inf: no limit).  Returns the right-hand side's status."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    yh = S.yh
    r[TCRIT] = t_end
    r[HMXI] = 1.0 / max_step if max_step > 0.0 and np.isfinite(max_step) else 0.0
    h0 = first_step
    if h0 != 0.0 and (t + h0 - t_end) * h0 > 0.0:
        h0 = t_end - t
    i[MAXORD] = MXORDN
    i[METH] = 1
    i[MITER] = 0
    i[MUSED] = 0
    i[JSTART] = 0
    i[NST] = 0
    i[NJE] = 0
    i[NQU] = 0
    r[HU] = 0.0
    r[TN] = t
    r[TSW] = t
    st = fun(ctx, t, y0, yh[n:2 * n])
    if st != 0:
        return st
    i[NFE] = 1
    for k in range(n):
        yh[k] = y0[k]
    i[NQ] = 1
    r[H] = 1.0
    if not ewset(S):
        return FAILED
    if h0 == 0.0:
        # h0 from the tolerance and the first derivative (DLSODA at 100-140)
        tdist = abs(t_end - t)
        w0 = max(abs(t), abs(t_end))
        tol = S.rtol[0]
        if tol <= 0.0:
            for k in range(n):
                if abs(y0[k]) != 0.0:
                    tol = max(tol, S.atol[0] / abs(y0[k]))
        tol = max(tol, 100.0 * UROUND)
        tol = min(tol, 0.001)
        s = vmnorm(n, yh[n:2 * n], S.ewt)
        s = 1.0 / (tol * w0 * w0) + tol * s * s
        h0 = 1.0 / np.sqrt(s)
        h0 = min(h0, tdist)
        h0 = abs(h0) if t_end >= t else -abs(h0)
    rh = abs(h0) * r[HMXI]
    if rh > 1.0:
        h0 = h0 / rh
    r[H] = h0
    for k in range(n):
        yh[n + k] = h0 * yh[n + k]
    return 0


@jit(inline=True)
def step(fun, ctx, S):
    """One step of DLSODA with itask 5 after :func:`start` (which it follows
    directly; later calls are istate 2: a step that would pass t_crit is cut to
    end there).  Returns 0, the right-hand side's status (the step abandoned: the
    state is the last accepted step's only in ``S.yh[:n]``, :func:`time`),
    FAILED, CONVERGENCE_FAILED or TOO_MUCH_ACCURACY."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    if i[NST] > 0 or i[JSTART] != 0:
        tnext = r[TN] + r[H] * (1.0 + 4.0 * UROUND)
        if (tnext - r[TCRIT]) * r[H] > 0.0:
            r[H] = (r[TCRIT] - r[TN]) * (1.0 - 4.0 * UROUND)
            if i[JSTART] >= 0:
                i[JSTART] = -2
        if not ewset(S):
            return FAILED
    if UROUND * vmnorm(n, S.yh, S.ewt) > 0.01:
        return TOO_MUCH_ACCURACY
    st = stoda(fun, ctx, S)
    if st != 0:
        return st
    if i[METH] != i[MUSED]:
        # switched: the next step starts with the new method's coefficients
        r[TSW] = r[TN]
        i[MAXORD] = MXORDS if i[METH] == 2 else MXORDN
        i[JSTART] = -1
    return 0


@jit(bare=True)
def time(S):
    """The time DLSODA reports after a step: tn, or t_crit where tn is within
    rounding of it."""
    r = S.r
    if abs(r[TN] - r[TCRIT]) <= 100.0 * UROUND * (abs(r[TN]) + abs(r[H])):
        return r[TCRIT]
    return r[TN]


@jit(bare=True)
def dense(S, t_now, t, out):
    """scipy's ``LsodaDenseOutput`` over the last step at time t (``t_now`` the time
    reported for the step): the Nordsieck polynomial of the step's order,
    its last column rescaled where the next order is lower."""
    r, i = S.r, S.i
    n = S.ewt.shape[0]
    order = i[NQU]
    h = r[H]
    s = (t - t_now) / h
    last = (h / r[HU]) ** float(order) if i[NQ] < order else 1.0
    for k in range(n):
        v = 0.0
        for j in range(order + 1):
            c = S.yh[j * n + k]
            if j == order:
                c = c * last
            v += c * s ** float(j)
        out[k] = v


@jit
def test_rhs(ctx, t, y, f):
    """The ODEs :func:`integrate` checks the port on: f = A y, plus for
    ``mu`` != 0 Van der Pol's term mu (1 - y0^2) y1 in f1 (``ctx = (A, mu)``)."""
    A, mu = ctx
    n = y.shape[0]
    for k in range(n):
        acc = 0.0
        for j in range(n):
            acc += A[k, j] * y[j]
        f[k] = acc
    if mu != 0.0:
        f[1] = mu * ((1.0 - y[0] * y[0]) * y[1]) + f[1]
    return 0


@jit
def integrate(A, mu, t, t_end, y0, rtol, atol, first_step, max_step, capacity):
    """LSODA on :func:`test_rhs` from (t, y0) to t_end as scipy's
    ``solve_ivp(method="LSODA")`` steps it.  Returns (status, steps k, times
    (k,), states (k, n), the method of each step (1 Adams, 2 BDF), evaluations,
    Jacobians, samples at the midpoints of the steps (k, n) by the dense output)."""
    n = y0.shape[0]
    ctx = (A, mu)
    S = state(n, rtol, atol, np.zeros(0), np.zeros(0, np.int64))[0]
    ts = np.empty(capacity)
    ys = np.empty((capacity, n))
    mid = np.empty((capacity, n))
    methods = np.zeros(capacity, np.int64)
    st = start(test_rhs, ctx, S, t, t_end, y0, first_step, max_step)
    k = 0
    while st == 0 and k < capacity and t < t_end:
        st = step(test_rhs, ctx, S)
        if st != 0:
            break
        t_new = time(S)
        dense(S, t_new, 0.5 * (t + t_new), mid[k])
        t = t_new
        ts[k] = t
        ys[k] = S.yh[:n]
        methods[k] = S.i[MUSED]
        k += 1
    return st, k, ts, ys, methods, S.i[NFE], S.i[NJE], mid
