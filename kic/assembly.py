"""Assembly: the joint values phi of a closed mechanism at its coordinates q.

Newton's method on the dependent joints, block by block (the blocks of
:class:`kic.loops.LoopSystem`), with every configuration of a batch iterating
together in array form.  Where several assemblies exist, the *mode* decides:
a model's assembly mode is the sign of ``det A`` (``A = dc/dp``, the
dependent-joint Jacobian) of each diagonal block of each block's fine
block-triangular form (Dulmage-Mendelsohn: det A is their product, and each
sign is a choice of its own, e.g. each elbow of a five-bar in tip
coordinates), fixed at the model's reference configuration or given by name;
the signs change only across a singular configuration, which is where the
modes meet.  Every assembled configuration is checked to be
in the model's mode.

Where to start, in order of preference: an explicit warm start (``start``,
e.g. the previous step of a simulation), the model's guess function (a
closed-form inverse kinematics on the desired branch), the reference
configuration.  A configuration that does not converge in the mode from there
is reached by continuation: a straight path in q, in growing numbers of
steps, from the reference, each step checked to stay in the mode.  Where the
guess function answers NaN (it knows the configuration is unreachable, e.g. the
closed form of a loop that cannot close there), the configuration is reported
UNASSEMBLABLE at once, without Newton or continuation.

Each configuration of a batch is solved as it would be alone: from its own
start, never from a batch-mate (no warm start from a neighbour, no
continuation from one), so a batch equals its configurations asked one by
one, bit for bit, whatever their order (the compiled path starts every pose
from the reference and calls the guess function only for the poses lost from
there, as its one-pose shortcut, :meth:`kic.closed_eval.CompiledEvaluation.one`,
does).  One convention for the values of
revolute joints (:func:`reference_branch`): a revolute joint the closure solves
for is reported within pi of its value in the start configuration (the
explicit warm start, else the model's reference), ``[a - pi, a + pi)``; an
assembled loop fixes a passive angle only up to whole turns, and this picks
one.  The coordinates q are the caller's and are never wrapped.

The answer at q never depends on earlier calls: a model keeps no state
between calls.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import Status
from .kernels.linalg import small_inverse
from .loops import LoopSystem
from .settings import CLOSURE_TOLERANCE, NEWTON_MAX_ITERATIONS, NEWTON_MAX_STEP, TINY

__all__ = ["Assembly", "assemble", "first_guess", "guessed_start", "newton", "in_mode",
           "project", "reference_branch"]

_CONTINUATION_STEPS = (4, 16, 64)


@dataclass
class Assembly:
    """Joint values at a batch of coordinates, with how each configuration fared.

    Attributes
    ----------
    phi : ndarray (n, N)
        All joint values (NaN where the configuration could not be assembled).
    status : ndarray (n,) of int
        :class:`kic.Status` codes: OK, UNASSEMBLABLE or OTHER_MODE.
    residual : ndarray (n,)
        Worst closure residual (rad, and lengths divided by the model's
        characteristic length).
    mode : ndarray (n, S)
        The assembly mode at phi (:meth:`kic.loops.LoopSystem.mode`; 0 where not
        assembled or not defined).
    attempt : ndarray (n, N)
        Where the solver stopped (equal to phi where it succeeded): what a
        report on a failure looks at.
    condition : ndarray (n,)
        Dimensionless condition number of the worst block of dependent joints
        (NaN where not assembled); filled by :meth:`kic.ClosedModel.assembly`.
    """

    phi: np.ndarray
    status: np.ndarray
    residual: np.ndarray
    mode: np.ndarray
    attempt: np.ndarray | None = None
    condition: np.ndarray | None = None

    @property
    def ok(self) -> np.ndarray:
        return self.status == Status.OK


def newton(system: LoopSystem, phi: np.ndarray):
    """Newton on the dependent joints from ``phi`` (n, N), all configurations at
    once; a configuration leaves the iteration when it converges or its step
    becomes undefined (a singular block).  Returns (phi, worst scaled residual)."""
    phi = phi.copy()
    n = phi.shape[0]
    worst = np.full(n, np.inf)
    polished = np.zeros(n, bool)
    active = np.arange(n)
    sub = phi
    kins = None
    for it in range(NEWTON_MAX_ITERATIONS + 2):
        w, kins = system.scaled_residual(sub, kins)
        worst[active] = w
        # once within the tolerance, one more full step takes a configuration to
        # rounding, so the answer does not depend on where Newton started
        keep = np.isfinite(w) & ((w >= CLOSURE_TOLERANCE) | ~polished[active])
        polished[active[w < CLOSURE_TOLERANCE]] = True
        if it >= NEWTON_MAX_ITERATIONS or not keep.any():
            break
        if not keep.all():
            active, sub, kins = active[keep], sub[keep], None
        rows, kins = system.rows(sub, 1, kins=kins)
        m = sub.shape[0]
        for block in system.blocks:
            r = system.block_residual(rows, block)
            A, _ = system.block_matrices(rows, block, m, need_q=False)
            Ai = small_inverse(A)              # NaN where singular: the pose leaves
            step = -np.einsum("npr,nr->np", Ai, r)
            lim = np.abs(step).max(axis=1, keepdims=True)
            lim[~np.isfinite(lim)] = np.inf
            with np.errstate(invalid="ignore", divide="ignore"):
                step *= np.minimum(1.0, NEWTON_MAX_STEP / np.maximum(lim, TINY))
            sub[:, block.joints] += step
        phi[active] = sub
        kins = None
    return phi, worst


def project(system: LoopSystem, phi: np.ndarray, closure=None):
    """The nearest assembled configurations to joint values ``phi`` (n, N).

    Gauss-Newton on *all* joints with minimum-norm steps (lengths divided by
    the characteristic length L, so rad and m weigh alike): it needs no choice
    of independent coordinates, so it works where every choice is singular,
    e.g. to land on the far side of a bifurcation.  Returns (phi, worst scaled
    residual (n,)); a configuration whose residual stays above
    :data:`kic.settings.CLOSURE_TOLERANCE` did not reach the closure.

    ``closure(phi) -> (worst (n,), r (n, R), J (n, R, N))``: the worst scaled
    residual, the reduced closure rows and their Jacobian at joint values (n, N)
    (:class:`kic.ClosedModel` passes the compiled kernels'); default the numpy
    loops' (the worst residual of the raw rows, :meth:`LoopSystem.scaled_residual`).
    """
    phi = np.array(phi, dtype=float)
    scale = np.where(system.is_prismatic, system.length, 1.0)   # joint = scale * x
    worst = np.full(phi.shape[0], np.inf)
    polished = np.zeros(phi.shape[0], bool)
    for _ in range(NEWTON_MAX_ITERATIONS + 2):
        if closure is None:
            worst, _ = system.scaled_residual(phi)
        else:
            worst, r_all, J_all = closure(phi)
        polished_now = worst < CLOSURE_TOLERANCE
        todo = np.isfinite(worst) & ~(polished_now & polished)
        polished |= polished_now
        if not todo.any():
            break
        if closure is None:
            r, J = _numpy_rows(system, phi[todo])
        else:
            r, J = r_all[todo], J_all[todo]
        J = J * scale
        phi[todo] -= np.einsum("npr,nr->np", np.linalg.pinv(J), r) * scale
    return phi, worst


def _numpy_rows(system: LoopSystem, phi: np.ndarray) -> tuple:
    """The reduced closure rows (n, R) and their Jacobian (n, R, N) at phi (n, N)
    from the numpy loops."""
    rows, _ = system.rows(phi, 1)
    n = phi.shape[0]
    r = np.concatenate([rw.r for rw in rows], axis=1)
    J = np.concatenate([system.loop_matrix(li, rw, n)
                        for li, rw in zip(system.loops, rows)], axis=1)
    return r, J


def in_mode(found: np.ndarray, mode: np.ndarray) -> np.ndarray:
    """Whether the block signs ``found`` (n, B) agree with ``mode`` (B,) wherever
    both are defined."""
    if found.shape[1] == 0:
        return np.ones(found.shape[0], bool)
    defined = (found != 0) & (mode != 0)
    return np.all(~defined | (found == mode), axis=1)


def reference_branch(system: LoopSystem, phi: np.ndarray, anchor: np.ndarray) -> np.ndarray:
    """Joint values ``phi`` (n, N) with every revolute joint the closure solves for
    (not a coordinate) moved by whole turns into ``[a - pi, a + pi)`` of its value
    ``a`` in ``anchor`` (N,) or (n, N): kic's one convention for assembled angles
    (the start's branch).  A value already there is returned unchanged, bit for
    bit; NaN rows stay NaN."""
    wrap = ~np.asarray(system.is_prismatic, bool)
    wrap[system.q_idx] = False
    wrap = np.nonzero(wrap)[0]
    if wrap.size == 0 or phi.shape[0] == 0:
        return phi
    a = np.broadcast_to(anchor, phi.shape)[:, wrap]
    turns = np.floor((phi[:, wrap] - a + np.pi) / (2.0 * np.pi))
    if not np.any(turns):                  # the usual case: nothing to move
        return phi
    out = phi.copy()
    out[:, wrap] = np.where(turns != 0, phi[:, wrap] - turns * (2.0 * np.pi), phi[:, wrap])
    return out


def first_guess(system: LoopSystem, q: np.ndarray, reference: np.ndarray,
                start: np.ndarray | None = None, guess=None) -> np.ndarray:
    """Where Newton starts (n, N): the warm start, else the guess function, else the
    reference; rows the guess has no answer for (NaN) start from the reference."""
    return guessed_start(system, q, reference, start, guess)[0]


def guessed_start(system: LoopSystem, q: np.ndarray, reference: np.ndarray,
                  start: np.ndarray | None = None, guess=None):
    """:func:`first_guess` and which rows (n,) the guess function declared
    unreachable: a non-finite value in its answer for a configuration says that
    the configuration cannot be assembled (a closed form knows it), so no
    search is made there; those rows start from the reference."""
    n, N = q.shape[0], system.N
    if start is not None:
        phi0 = np.array(np.broadcast_to(np.asarray(start, float).reshape(-1, N), (n, N)))
    elif guess is not None:
        g = guess(q)
        if isinstance(g, dict):
            phi0 = np.array(np.broadcast_to(reference, (n, N)))
            for k, v in g.items():
                if k in system.index:
                    phi0[:, system.index[k]] = v
        else:
            phi0 = np.asarray(g, dtype=float).reshape(n, N).copy()
    else:
        phi0 = np.array(np.broadcast_to(reference, (n, N)))
    lost = ~np.all(np.isfinite(phi0), axis=1)       # a guess that has no answer there
    phi0[lost] = reference
    phi0[:, system.q_idx] = q
    return phi0, (lost if start is None and guess is not None else np.zeros(n, bool))


def assemble(system: LoopSystem, q: np.ndarray, mode: np.ndarray, reference: np.ndarray,
             start: np.ndarray | None = None, guess=None) -> Assembly:
    """Assemble at coordinates ``q`` (n, M) in assembly ``mode`` (B,).

    Parameters
    ----------
    system : LoopSystem
    q : ndarray (n, M)
    mode : ndarray (S,)
        The assembly mode (:meth:`LoopSystem.mode`: a det sign per diagonal
        block of each block's fine block-triangular form; 0: not checked).
    reference : ndarray (N,)
        An assembled configuration in the mode (the model's reference).
    start : ndarray (n, N) or (N,), optional
        Warm start (its coordinate values are replaced by q).
    guess : callable, optional
        ``guess(q) -> phi`` (n, N) or a mapping joint name -> values (n,).

    Returns
    -------
    Assembly
    """
    n = q.shape[0]
    phi0, unreachable = guessed_start(system, q, reference, start, guess)
    if unreachable.any():       # declared by the guess: no Newton, no continuation
        phi, worst = phi0.copy(), np.full(n, np.inf)
        worst[unreachable], _ = system.scaled_residual(phi0[unreachable])
        rest = np.nonzero(~unreachable)[0]
        phi[rest], worst[rest] = newton(system, phi0[rest])
    else:
        phi, worst = newton(system, phi0)
    converged = (worst < CLOSURE_TOLERANCE) & ~unreachable
    found = np.zeros((n, len(system.mode_parts)))
    if converged.any():
        found[converged] = system.mode(phi[converged])
    good = converged & in_mode(found, mode)
    if not (good | unreachable).all():
        phi, worst, found, good = _continue(system, q, mode, reference, phi, worst, found, good,
                                            unreachable)
    status = np.where(good, Status.OK, np.where((worst < CLOSURE_TOLERANCE) & ~unreachable,
                                                 Status.OTHER_MODE,
                                                 Status.UNASSEMBLABLE)).astype(int)
    phi = reference_branch(system, phi, reference if start is None else
                           np.asarray(start, float).reshape(-1, system.N))
    attempt = phi.copy()
    phi[~good] = np.nan
    found[~good] = 0.0
    return Assembly(phi, status, worst, found, attempt)


def _continue(system, q, mode, reference, phi, worst, found, good, unreachable):
    """Reach the configurations that failed (and are not ``unreachable``) by
    continuation from the reference (never from a batch-mate: the answer at q
    is the one it gets alone)."""
    failed = np.nonzero(~good & ~unreachable)[0]
    q0 = np.broadcast_to(reference[system.q_idx], (failed.size, system.dof))
    p0 = np.broadcast_to(reference, (failed.size, system.N))
    todo = np.arange(failed.size)
    for steps in _CONTINUATION_STEPS:
        if todo.size == 0:
            break
        cur = p0[todo].copy()
        alive = np.ones(todo.size, bool)
        for k in range(1, steps + 1):
            t = k / steps          # the last step at q itself (q0 + (q - q0) may round)
            qt = q[failed[todo]] if k == steps else q0[todo] + t * (q[failed[todo]] - q0[todo])
            cur[:, system.q_idx] = qt
            idx = np.nonzero(alive)[0]
            sol, w = newton(system, cur[idx])
            ok = w < CLOSURE_TOLERANCE
            if ok.any():
                ok[ok] = in_mode(system.mode(sol[ok]), mode)
            cur[idx] = sol
            alive[idx[~ok]] = False
            if not alive.any():
                break
        won = todo[alive]
        if won.size:
            i = failed[won]
            phi[i] = cur[alive]
            worst[i], _ = system.scaled_residual(phi[i])
            found[i] = system.mode(phi[i])
            good[i] = True
        todo = todo[~alive]
    return phi, worst, found, good
