"""The compiled closed-mechanism kernels' Python entry points (internal).

A :class:`kic.closed_plan.ClosedPlan` and a batch of poses in, the kernels'
arrays out: assembly, the transfer ``G^phi_q``, I*, phi' and phi'', inverse
and forward dynamics and actuator loads (:mod:`kic.kernels.closed_pose`), the
design batches (:mod:`kic.kernels.closed_lanes`) and the free motion
(:mod:`kic.kernels.integrator`).  Each pose is evaluated once, in one compiled
call per batch:

1. assemble: Newton on the dependent joints of every block, converged when
   every reduced position row ``|r| < tol * L_char`` and every orientation row
   ``|r| < tol``;
2. the transfer ``G^phi_q`` with each block's dimensionless 2-norm condition
   number and the sign of ``det A_b`` (the assembly mode);
3. phi' = G q', phi'' = G q'' - A^-1 b;
4. one recursive Newton-Euler pass over the tree: ``T_q = G^T T_phi``;
5. forward dynamics: ``I*_q`` and the bias ``G^T T_phi`` at q'' = 0, q'' by
   Cholesky (:func:`kic.kernels.linalg.cholesky_solve`);
6. actuator loads: ``(G^a)^T tau_a = T_q`` (Na = M) or its least-norm solution
   ``tau_a = G^a (G^a^T G^a)^-1 T_q`` (Na > M).

Failures are data, per pose: ``status`` 0 ok, 1 not assembled (Newton did not
converge), 2 singular closure block (a zero pivot on the way, or the condition
number of a block at the solution >= ``max_condition``), 3 singular I* or
actuation, 4 assembled in another assembly mode than the one asked for (the
codes of :class:`kic.Status`).  Outputs of a failed pose are NaN (phi stays
finite for status 2, 3, 4).

numba is imported on first use (:func:`load`, :mod:`kic.kernels.jit`); without
it this module imports and :data:`available` is False, so that callers can keep
the numpy path.
"""
from __future__ import annotations

import numpy as np

from . import closed_lanes, closed_pose, integrator, layout
from . import jit as _registry
from .closed_pose import NOT_ASSEMBLED, OK, OTHER_MODE, SINGULAR_BLOCK, SINGULAR_DYNAMICS

__all__ = ["available", "load", "one", "assemble", "inverse_dynamics", "forward_dynamics",
           "actuator_loads", "rates", "transfer", "inertia", "free_motion", "motion_rhs",
           "design_loads",
           "OK", "NOT_ASSEMBLED", "SINGULAR_BLOCK", "SINGULAR_DYNAMICS", "OTHER_MODE"]


def __getattr__(name: str):
    if name == "available":
        # numba is installed and importable (False once an import has failed)
        return _registry.available
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load() -> bool:
    """Import numba and compile (or load from cache) the kernels; False if numba
    cannot be imported."""
    return _registry.load()


def _require() -> None:
    if not (_registry.available and _registry.load()):
        raise ImportError("kic's compiled closed-mechanism kernels need numba "
                          "(pip install 'kic[fast]'); use the numpy ClosedModel instead")


_F8 = np.dtype(np.float64)
_I8 = np.dtype(np.int64)
_EMPTY_I = np.zeros(0, np.int64)
_EMPTY_F = np.zeros(0)
_NAMES = ("", "q", "qd", "qdd or tau", "phi_start")
_BATCH = np.zeros(0)            # no one-pose phi: the entry evaluates a batch


def _rows(a, width: int, name: str) -> np.ndarray:
    """A C-contiguous float64 (k, width) view or copy of ``a`` ((width,) -> (1, width)).
    Kept lean: this runs on every single-pose call.  A read-only array is copied:
    numba types it apart, and each type compiles the entry again (seconds)."""
    if type(a) is not np.ndarray or a.dtype != _F8 or not a.flags.c_contiguous \
            or not a.flags.writeable:
        a = np.array(a, dtype=np.float64, order="C")
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2 or a.shape[1] != width:
        from ..errors import ModelError
        raise ModelError(f"{name} must have shape (n, {width}) or ({width},), got {a.shape}")
    return a


_NO_MODE = np.zeros(0)


def _mode(plan, mode) -> np.ndarray:
    if mode is None:
        return _NO_MODE
    m = np.array(mode, dtype=np.float64).reshape(-1)     # a copy of its own: writable
    # a few blocks: a plain-Python check is cheaper than numpy reductions
    if m.shape[0] != plan.block_row.shape[0] - 1 or any(v not in (-1.0, 0.0, 1.0)
                                                          for v in m.tolist()):
        from ..errors import ModelError
        raise ModelError(f"mode must give -1, 0 or +1 for each of the "
                         f"{plan.block_row.shape[0] - 1} blocks, got {mode!r}")
    return m


def _call(plan, what: int, q, qd, x, act, phi, path: bool, mode=None):
    """Check the batch sizes, run the kernel, turn non-finite inputs into ModelError."""
    n = max(q.shape[0], qd.shape[0], x.shape[0], phi.shape[0])
    for a, name in ((q, "q"), (qd, "qd"), (x, "qdd or tau"), (phi, "phi_start")):
        if a.shape[0] not in (1, n):
            from ..errors import ModelError
            raise ModelError(f"{name} has {a.shape[0]} rows for a batch of {n}")
    buf, _, _, bad = closed_pose.batch(plan.args[0], plan.args[1], what, q.reshape(-1),
                                       qd.reshape(-1), x.reshape(-1), act, phi.reshape(-1),
                                       path, _mode(plan, mode), _BATCH)
    if bad:
        from ..errors import ModelError
        raise ModelError(f"{_NAMES[bad]} contains NaN or infinite values")
    if n == 0:              # no poses: the buffer's width from the output's
        N, M, B = plan.parent.shape[0], plan.q_idx.shape[0], plan.block_row.shape[0] - 1
        K = _registry.plain(closed_pose.__name__, "output_width")(what, N, M, act.shape[0])
        return _split(plan, buf.reshape(0, K + N + 3 + 2 * B))
    return _split(plan, buf.reshape(n, -1))


_CODE = {"assemble": closed_pose.ASSEMBLE, "inverse_dynamics": closed_pose.INVERSE_DYNAMICS,
         "forward_dynamics": closed_pose.FORWARD_DYNAMICS,
         "actuator_loads": closed_pose.ACTUATOR_LOADS, "rates": closed_pose.RATES,
         "transfer": closed_pose.ASSEMBLED_TRANSFER,
         "actuated_forward_dynamics": closed_pose.ACTUATED_FORWARD_DYNAMICS}


def one(plan, what: str, q, qd, x, act, phi_start, path: bool, mode, phi) -> tuple:
    """The lean call for one configuration whose arguments the caller has laid
    out already: ``q``, ``qd``, ``x`` float64 C-contiguous (M,), ``phi_start``
    (N,), ``act`` int64 (Na,) (or empty), ``mode`` float64 (B,) checked once;
    the pose's joint values are written into ``phi`` (float64 C-contiguous
    (N,): a caller that reads them only at once may reuse it, one that keeps
    them passes an array of their own).
    ``what`` names an entry point below ("transfer": ``G^phi_q`` (N * M,) after
    the assembly, row by row; "actuated_forward_dynamics": q'' under the loads
    ``x`` (Na,) of the actuated joints ``act``, ``T_q = (G^a)^T x``).
    Returns ``(output row, status, worst block condition, finite)``, the row
    an array of its own, ``finite`` whether every output is finite (False for
    a failed pose, or an overflow); NaN inputs still raise ModelError."""
    fbuf, ibuf = plan.args
    out, status, cond, bad = closed_pose.batch(fbuf, ibuf, _CODE[what], q, qd, x, act,
                                               phi_start, path, mode, phi)
    if bad > 0:
        from ..errors import ModelError
        raise ModelError(f"{_NAMES[bad]} contains NaN or infinite values")
    return out, status, cond, bad == 0


def _split(plan, buf):
    """(out, phi, status, residual, condition, det_sign, actuation_condition): views
    of the kernel's one output buffer (n, K + N + 3 + 2B), the status as int64."""
    N, B = plan.parent.shape[0], plan.block_row.shape[0] - 1
    K = buf.shape[1] - N - 3 - 2 * B
    return (buf[:, :K], buf[:, K:K + N], buf[:, -1].astype(np.int64), buf[:, K + N],
            buf[:, K + N + 1:K + N + 1 + B], buf[:, K + N + 1 + B:K + N + 1 + 2 * B],
            buf[:, K + N + 1 + 2 * B])


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
    out = _call(plan, closed_pose.ASSEMBLE, qa, qa, qa, _EMPTY_I, _rows(phi_start, N, "phi_start"),
                path, mode)
    return out[1], out[2], out[3], out[4], out[5]


def inverse_dynamics(plan, q, qd, qdd, phi_start, path: bool = False, mode=None):
    """Required coordinate loads ``T_q = G^T T_phi`` (n, M), gravity included, after
    assembly (arguments as :func:`assemble`; qd, qdd (n, M) or (M,)).

    Returns ``(T_q, phi, status, residual, condition, det_sign)``; NaN rows where
    status != 0.
    """
    _require()
    M, N = plan.q_idx.shape[0], plan.parent.shape[0]
    out = _call(plan, closed_pose.INVERSE_DYNAMICS, _rows(q, M, "q"), _rows(qd, M, "qd"),
                _rows(qdd, M, "qdd"), _EMPTY_I, _rows(phi_start, N, "phi_start"), path, mode)
    return out[0], out[1], out[2], out[3], out[4], out[5]


def forward_dynamics(plan, q, qd, tau, phi_start, path: bool = False, mode=None):
    """Coordinate accelerations ``q'' = I*^-1 (tau - bias)`` (n, M), after assembly.

    Returns ``(qdd, phi, status, residual, condition, det_sign)``; status 3 where
    I* is singular (:func:`kic.kernels.linalg.spd_pivot_ok`).
    """
    _require()
    M, N = plan.q_idx.shape[0], plan.parent.shape[0]
    out = _call(plan, closed_pose.FORWARD_DYNAMICS, _rows(q, M, "q"), _rows(qd, M, "qd"),
                _rows(tau, M, "tau"), _EMPTY_I, _rows(phi_start, N, "phi_start"), path, mode)
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
    if type(act) is not np.ndarray or act.dtype != _I8 or act.ndim != 1 or \
            not act.flags.c_contiguous or not act.flags.writeable:
        act = np.array(act_idx, dtype=np.int64).reshape(-1)
    idx = act.tolist()                  # plain ints: cheaper than numpy reductions here
    if len(idx) < M or min(idx) < 0 or max(idx) >= N or len(set(idx)) != len(idx):
        from ..errors import ModelError
        raise ModelError(f"act_idx must name at least {M} distinct joints in 0..{N - 1}, "
                         f"got {idx}")
    out = _call(plan, closed_pose.ACTUATOR_LOADS, _rows(q, M, "q"), _rows(qd, M, "qd"),
                _rows(qdd, M, "qdd"), act,
                _rows(phi_start, N, "phi_start"), path, mode)
    return out[0], out[1], out[2], out[3], out[4], out[5], out[6]


def rates(plan, q, qd, qdd, phi_start, path: bool = False, mode=None):
    """Joint rates phi' = G q' and accelerations phi'' = G q'' - A^-1 b (n, N) each,
    after assembly.  Returns ``(phid, phidd, phi, status, residual, condition,
    det_sign)``."""
    _require()
    M, N = plan.q_idx.shape[0], plan.parent.shape[0]
    out = _call(plan, closed_pose.RATES, _rows(q, M, "q"), _rows(qd, M, "qd"), _rows(qdd, M, "qdd"),
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
    out = _at_phi(plan, phi, closed_pose.TRANSFER)
    n, N, M = out[1].shape[0], plan.parent.shape[0], plan.q_idx.shape[0]
    return out[0].reshape(n, N, M), out[2], out[3], out[4], out[5]


def inertia(plan, phi):
    """Effective inertia ``I*_q`` (n, M, M) at assembled joint values ``phi``.

    Returns ``(I_star, status, residual, condition, det_sign)``.
    """
    out = _at_phi(plan, phi, closed_pose.INERTIA)
    n, M = out[1].shape[0], plan.q_idx.shape[0]
    return out[0].reshape(n, M, M), out[2], out[3], out[4], out[5]


def design_loads(ibuf, fstack, q, qd, x, act, phi0, path, modes, skip):
    """Python entry of :func:`kic.kernels.closed_lanes.design_loads` (see there for
    shapes; the caller,
    :mod:`kic.designs`, lays the arrays out as float64/int64 C-contiguous and
    checks them).  Returns the kernel's tuple."""
    _require()
    D, n = skip.shape
    K, M, Na, N = x.shape[2], x.shape[3], act.shape[0], phi0.shape[2]
    B = int(ibuf[layout.HEADER.index("B")])
    # numpy's buffers, not the kernel's: numpy asks the system for huge pages
    # (a few hundred page faults for the tens of megabytes, not tens of thousands)
    out = (np.empty((D, n, K, M)), np.empty((D, n, K, Na)), np.empty((D, n, M, M)),
           np.empty((D, n, N)), np.zeros((D, n), np.int64), np.empty((D, n)),
           np.zeros((D, n, B)), np.empty((D, n)))
    closed_lanes.design_loads(fstack, ibuf, q, qd, x, act, phi0, path, modes, skip, *out)
    return out


_DOP853 = None


def _dop853() -> tuple:
    """scipy's DOP853 coefficients, laid out for the kernel once: A, B, C, E3, E5, the
    dense output's A and C rows and D, and the error estimator's order."""
    global _DOP853
    if _DOP853 is None:
        from scipy.integrate import DOP853
        from scipy.integrate._ivp import dop853_coefficients as coefficients
        S = DOP853.n_stages
        _DOP853 = tuple(np.ascontiguousarray(a, dtype=np.float64)
                        for a in (DOP853.A, DOP853.B, DOP853.C, DOP853.E3, DOP853.E5,
                                  coefficients.A[S + 1:], coefficients.C[S + 1:],
                                  coefficients.D)) + (float(DOP853.error_estimator_order),)
    return _DOP853


def free_motion(plan, mode, t: float, t_end: float, y, phi, tau, tl, times, h_abs: float,
                rtol: float, atol: float, max_step: float, stop_condition: float,
                relax: float, capacity: int, method: str = "DOP853",
                resume: tuple | None = None) -> tuple:
    """Python entry of :func:`kic.kernels.integrator.free_motion` (``method`` "LSODA":
    :func:`~kic.kernels.integrator.lsoda_motion`, from the state ``resume`` (its
    float and integer memory) an earlier call returned, if given; the caller lays
    out ``y`` (2M,), ``phi`` (N,), ``tau`` (M,), ``tl`` (N,) and ``times`` (k,) as
    float64 C-contiguous).  Returns the kernel's tuple."""
    _require()
    if method == "LSODA":
        floats, ints = resume if resume is not None else (_EMPTY_F, _EMPTY_I)
        return integrator.lsoda_motion(plan.args[0], plan.args[1], mode, float(t), float(t_end),
                                       y, phi, tau, tl, times, float(h_abs), float(rtol),
                                       float(atol), float(max_step), float(stop_condition),
                                       float(relax), int(capacity), floats, ints)
    return integrator.free_motion(plan.args[0], plan.args[1], mode, *_dop853(), float(t),
                                  float(t_end), y, phi, tau, tl, times, float(h_abs),
                                  float(rtol), float(atol), float(max_step),
                                  float(stop_condition), float(relax), int(capacity))


def motion_rhs(plan, mode, start, y, tau, tl) -> tuple:
    """Python entry of :func:`kic.kernels.integrator.motion_rhs`: (f (2M,), phi (N,),
    status, worst block condition, phi' (N,)) at the state ``y`` (2M,), assembled from
    ``start`` (N,), under the input ``tau`` (M,) and joint loads ``tl`` (N,), all
    float64 C-contiguous (the caller's layout; no checks: the lean call of an
    integrator's every evaluation)."""
    return integrator.motion_rhs(plan.args[0], plan.args[1], mode, start, y, tau, tl)


def closure_rows(plan, phi) -> tuple:
    """The reduced closure residual (n, R) and Jacobian ``dc/dphi`` (n, R, N) at
    joint values ``phi`` (n, N) or (N,), rows in loop order, as
    :meth:`kic.loops.LoopSystem.jacobian` gives them: Python entry of
    :func:`kic.kernels.closed_pose.closure_rows`."""
    _require()
    N = plan.parent.shape[0]
    phi = _rows(phi, N, "phi")
    n, R = phi.shape[0], int(plan.loop_r.sum())
    r, J = np.empty((n, R)), np.empty((n, R, N))
    closed_pose.closure_rows(plan.args[0], plan.args[1], phi, r, J)
    return r, J


def joint_space(plan, phi, phid) -> tuple:
    """``(H (n, N, N), b (n, N), J (n, R, N), c (n, R))`` of the tree held together
    by its closures at joint values and rates ``phi``, ``phid`` (n, N) or (N,):
    ``H phi'' + b = J^T lambda``, ``J phi'' + c = 0`` (closure rows in loop
    order): Python entry of :func:`kic.kernels.closed_pose.joint_space`."""
    _require()
    N = plan.parent.shape[0]
    phi, phid = _rows(phi, N, "phi"), _rows(phid, N, "phid")
    if phid.shape != phi.shape:
        from ..errors import ModelError
        raise ModelError(f"phi and phid must have the same shape, got {phi.shape} and "
                         f"{phid.shape}")
    n, R = phi.shape[0], int(plan.loop_r.sum())
    H, b, J, c = np.empty((n, N, N)), np.empty((n, N)), np.empty((n, R, N)), np.empty((n, R))
    closed_pose.joint_space(plan.args[0], plan.args[1], phi, phid, H, b, J, c)
    return H, b, J, c
