"""Conditioning indices for design work: condition numbers, characteristic
length, manipulability, distance to singularity, Gosselin-Angeles singularity
measures.

Two layers:

* pure functions on Jacobian matrices ``J`` of shape ``(..., m, n)`` (every
  leading axis is a batch of poses or designs): :func:`singular_values`,
  :func:`condition_number`, :func:`distance_to_singularity`,
  :func:`manipulability`, :func:`homogeneous_jacobian`,
  :func:`best_conditioning_length`, :func:`singularity_measures`;
* model-level helpers that take a :class:`kic.ClosedModel` and poses and use
  only its public API: :func:`task_conditioning` (a model whose coordinates
  are the task, e.g. the Stewart platform in its platform pose, actuators
  given by name) and :func:`point_conditioning` (a model whose coordinates
  are the actuated joints, the task a point on a body, e.g. the five-bar in
  its crank angles with the tip as task).  Both return a
  :class:`Conditioning`.

Why not ``ClosedModel.condition``: it is the condition number of the closure
Jacobian of the *passive* joints, in mixed units (metres and radians), so it
depends on the size of the linkage and says nothing about the actuation
(issue 9, defect b).  The indices here are dimensionless and scale-invariant:
a Jacobian whose rows or columns mix translations (m) and rotations (rad) is
first made *dimensionally homogeneous* with a characteristic length ``L``
(Angeles), and ``L`` scales with the mechanism, so a linkage built at 1/10 of
the size gives the same indices at the corresponding pose.

Units: lengths in m, angles in rad; every returned index is dimensionless
except ``Conditioning.length`` (m).

References
----------
* C. Gosselin and J. Angeles, "Singularity analysis of closed-loop kinematic
  chains", IEEE Trans. Robotics and Automation 6(3):281-290, 1990 (type I and
  type II singularities from ``J_x x' + J_q q' = 0``).
* C. Gosselin and J. Angeles, "A global performance index for the kinematic
  optimization of robotic manipulators", J. Mechanical Design 113(3):220-226,
  1991 (the global conditioning index, mean of ``1/kappa`` over a workspace).
* J. Angeles, *Fundamentals of Robotic Mechanical Systems*, Springer (the
  characteristic length that makes a Jacobian dimensionally homogeneous, chosen
  to minimise its condition number); J. Angeles, "Is there a characteristic
  length of a rigid-body displacement?", Mech. Mach. Theory 41:884-896, 2006.
* T. Yoshikawa, "Manipulability of robotic mechanisms", Int. J. Robotics
  Research 4(2):3-9, 1985 (``w = sqrt(det(J J^T))``).
* J.-P. Merlet, "Jacobian, manipulability, condition number, and accuracy of
  parallel robots", J. Mechanical Design 128(1):199-206, 2006 (caveats: with
  mixed units the condition number and the manipulability of a raw Jacobian
  have no physical meaning; even homogenized, they depend on the chosen ``L``
  and are not measures of positioning accuracy; use them to compare poses and
  designs of one architecture, not as absolute figures).
* J. W. Demmel, "On condition numbers and the distance to the nearest
  ill-posed problem", Numer. Math. 51:251-289, 1987 (``1/kappa_2`` is the
  relative 2-norm distance to the nearest singular matrix).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ._array import as_batch
from .errors import KicError, ModelError, SingularityError, Status
from .settings import TYPE_TWO_INVERSE_CONDITION

__all__ = ["singular_values", "condition_number", "distance_to_singularity",
           "manipulability", "homogeneous_jacobian", "best_conditioning_length",
           "singularity_measures", "Conditioning", "task_conditioning",
           "point_conditioning"]

_TRANSLATIONAL = {"t", "p", "P", "T"}
_ROTATIONAL = {"r", "R"}
_SEARCH = 1e4          # L is sought within [L0 / _SEARCH, L0 * _SEARCH]
_GRID = 33             # coarse grid on log L before the root of the slope is refined


# ---------------------------------------------------------------- input helpers
def _matrix(J, name: str = "J") -> np.ndarray:
    try:
        A = np.asarray(J, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{name} must be a numeric array, got {J!r}") from exc
    if A.ndim < 2 or A.shape[-1] == 0 or A.shape[-2] == 0:
        raise ModelError(f"{name} must have shape (..., m, n) with m, n >= 1, got {A.shape}")
    return A


def _kinds(kinds, n: int, name: str) -> np.ndarray:
    """``kinds`` ('t'/'p' translational, 'r' rotational, a string or a sequence)
    as a boolean array ``translational`` of length n."""
    items = list(kinds)
    if len(items) != n:
        raise ModelError(f"{name} has {len(items)} entries for {n} rows/columns: give one "
                         f"kind per entry, 't' (translational, m) or 'r' (rotational, rad)")
    out = np.zeros(n, bool)
    for k, c in enumerate(items):
        if c in _TRANSLATIONAL:
            out[k] = True
        elif c not in _ROTATIONAL:
            raise ModelError(f"{name}[{k}] = {c!r}: use 't' (translational, m; also 'p' "
                             "for a prismatic joint) or 'r' (rotational, rad)")
    return out


def singular_values(J) -> np.ndarray:
    """Singular values of ``J`` (..., m, n), largest first, shape (..., min(m, n)).

    Poses with a non-finite entry give NaN (a failed pose stays data, it does
    not abort the batch).
    """
    A = _matrix(J)
    flat = A.reshape((-1,) + A.shape[-2:])
    ok = np.all(np.isfinite(flat), axis=(-2, -1))
    sv = np.full((flat.shape[0], min(A.shape[-2:])), np.nan)
    if ok.any():
        # sorted explicitly: the order LAPACK returns is a convention, not a contract
        sv[ok] = -np.sort(-np.linalg.svd(flat[ok], compute_uv=False), axis=-1)
    return sv.reshape(A.shape[:-2] + sv.shape[-1:])


def distance_to_singularity(J) -> np.ndarray:
    """Relative 2-norm distance of ``J`` to the nearest rank-deficient matrix,
    ``sigma_min / sigma_max`` (..., ), in [0, 1].

    By the Eckart-Young theorem the smallest perturbation ``dJ`` (spectral
    norm) that makes ``J`` lose rank has ``||dJ||_2 = sigma_min``; relative to
    ``||J||_2 = sigma_max`` this is ``1 / kappa_2(J)`` (Demmel 1987).  It is
    0 at a singularity and 1 for an isotropic matrix.  Meaningful only for a
    dimensionally homogeneous ``J`` (:func:`homogeneous_jacobian`).  A zero
    matrix gives 0, a non-finite pose NaN.

    Examples
    --------
    >>> import numpy as np, kic.indices as ki
    >>> float(ki.distance_to_singularity(np.diag([2.0, 0.5])))
    0.25
    """
    sv = singular_values(J)
    top, low = sv[..., 0], sv[..., -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(top > 0, low / np.where(top > 0, top, 1.0), np.where(top == 0, 0.0, top))


def condition_number(J, rtol: float | None = None) -> np.ndarray:
    """2-norm condition number ``kappa_2 = sigma_max / sigma_min`` of ``J``
    (..., m, n), shape (...), in [1, inf].

    ``inf`` where ``J`` is numerically rank-deficient: ``sigma_min <= rtol
    sigma_max`` with ``rtol = max(m, n) * eps`` by default (numpy's
    ``matrix_rank`` tolerance); beyond that the digits of ``sigma_min`` are
    rounding noise.  Compare only dimensionally homogeneous matrices
    (Merlet 2006); see :func:`homogeneous_jacobian`.

    Examples
    --------
    >>> import numpy as np, kic.indices as ki
    >>> ki.condition_number([np.diag([2.0, 0.5]), np.diag([1.0, 0.0])]).tolist()
    [4.0, inf]
    """
    A = _matrix(J)
    tol = max(A.shape[-2:]) * np.finfo(float).eps if rtol is None else float(rtol)
    d = distance_to_singularity(A)
    with np.errstate(divide="ignore"):
        return np.where(d > tol, 1.0 / np.where(d > tol, d, 1.0), np.where(np.isnan(d), d, np.inf))


def manipulability(J) -> np.ndarray:
    """Yoshikawa's manipulability ``w = sqrt(det(J J^T))`` of ``J`` (..., m, n),
    shape (...).

    Computed as the product of the singular values (equal to the square root of
    the determinant for m <= n, without squaring them); 0 for m > n, where
    ``J J^T`` is singular.  It is the volume ratio of the velocity ellipsoid:
    ``J`` maps the unit ball of rates onto an ellipsoid of volume ``w`` times
    the unit ball's.  It has units (those of the entries to the power m) unless
    ``J`` is homogeneous, and even then scales with ``L^-m``: compare designs
    only through the same characteristic length (Merlet 2006).

    Examples
    --------
    >>> import numpy as np, kic.indices as ki
    >>> float(ki.manipulability([[1.0, 0.0, 0.0], [0.0, 3.0, 0.0]]))
    3.0
    """
    A = _matrix(J)
    if A.shape[-2] > A.shape[-1]:
        w = np.zeros(A.shape[:-2])
        return np.where(np.all(np.isfinite(A), axis=(-2, -1)), w, np.nan)
    return np.prod(singular_values(A), axis=-1)


def homogeneous_jacobian(J, row_kinds, col_kinds, length) -> np.ndarray:
    """``J`` made dimensionless with a characteristic length ``L`` (m).

    ``J`` (..., m, n) maps rates of the column variables to rates of the row
    variables.  Translational variables (m, m/s) are divided by ``L``,
    rotational ones (rad) are kept, so that every variable is dimensionless:

        ``J_h[i, j] = J[i, j] * s_j / s_i``,  ``s = L`` (translational), 1 (rotational).

    An entry in m/rad (translational row, rotational column) is divided by
    ``L``, one in rad/m multiplied by it, the others are unchanged.

    Parameters
    ----------
    J : array_like (..., m, n)
    row_kinds, col_kinds : str or sequence of str
        One letter per row/column: ``"t"`` (or ``"p"``, a prismatic joint)
        translational, ``"r"`` rotational; e.g. ``"tttrrr"`` for a platform
        pose (x, y, z, yaw, pitch, roll).
    length : float or array_like (...)
        The characteristic length ``L > 0`` (m), broadcast over the batch.

    Examples
    --------
    >>> import numpy as np, kic.indices as ki
    >>> ki.homogeneous_jacobian([[0.2, 1.0], [3.0, 0.5]], "tr", "rt", 0.1).round(6).tolist()
    [[2.0, 1.0], [3.0, 0.05]]
    """
    A = _matrix(J)
    rt = _kinds(row_kinds, A.shape[-2], "row_kinds")
    ct = _kinds(col_kinds, A.shape[-1], "col_kinds")
    L = np.asarray(length, dtype=float)
    if np.any(~(L > 0)) or np.any(~np.isfinite(L)):
        raise ModelError(f"length must be positive and finite (m), got {length!r}")
    L = L[..., None, None]
    rows = np.where(rt[:, None], L, 1.0)
    cols = np.where(ct[None, :], L, 1.0)
    return A * cols / rows


def _length_groups(A: np.ndarray, rt: np.ndarray, ct: np.ndarray):
    """Scale of the entries in m/rad (k=+1), dimensionless (k=0) and rad/m (k=-1)
    of the finite poses of ``A`` (P, m, n): the median over the poses of each
    pose's RMS (a minority of near-singular poses, where some entries explode,
    does not set it); None where a group is empty or zero."""
    k = rt[:, None].astype(int) - ct[None, :].astype(int)
    out = {}
    for kk in (1, 0, -1):
        vals = A[:, k == kk]
        rms = np.sqrt(np.mean(vals ** 2, axis=-1)) if vals.shape[-1] else np.zeros(0)
        rms = rms[rms > 0]
        out[kk] = float(np.median(rms)) if rms.size else None
    return out


def _inverse_condition_mean(A, k, lengths, slope: bool = False) -> np.ndarray:
    """Mean over the poses of A (P, m, n) of 1/kappa of the homogeneous matrix
    ``H_ij = A_ij L^-k_ij``, for each length in ``lengths`` (G,); with
    ``slope``, its derivative with respect to log L instead.

    The derivative uses d sigma_i = u_i^T dH v_i (simple singular values),
    dH/dlog L = -k * H; the product u_i^T X v_i does not depend on the sign
    chosen for the singular vectors."""
    H = A[None] * lengths[:, None, None, None] ** (-k)
    ok = np.all(np.isfinite(H), axis=(-2, -1))
    H = np.where(ok[..., None, None], H, 0.0)
    if not slope:
        s = np.linalg.svd(H, compute_uv=False)
        smax, smin = s.max(axis=-1), s.min(axis=-1)
        return np.where(smax > 0, smin / np.where(smax > 0, smax, 1.0), 0.0).mean(axis=-1)
    U, s, Vt = np.linalg.svd(H, full_matrices=False)
    dH = -k * H
    ds = np.einsum("...ji,...jk,...ik->...i", U, dH, Vt)
    top, low = np.argmax(s, axis=-1)[..., None], np.argmin(s, axis=-1)[..., None]
    smax, smin = (np.take_along_axis(s, i, -1)[..., 0] for i in (top, low))
    dmax, dmin = (np.take_along_axis(ds, i, -1)[..., 0] for i in (top, low))
    pos = smax > 0
    smax = np.where(pos, smax, 1.0)
    return np.where(pos, (dmin * smax - smin * dmax) / smax ** 2, 0.0).mean(axis=-1)


def _kind_string(translational: np.ndarray) -> str:
    return "".join("t" if b else "r" for b in translational)


def _one_length(A: np.ndarray, rt: np.ndarray, ct: np.ndarray) -> float:
    from scipy.optimize import brentq
    A = A[np.all(np.isfinite(A), axis=(-2, -1))]
    if A.shape[0] == 0:
        return float("nan")
    g = _length_groups(A, rt, ct)
    used = {kk for kk in (1, 0, -1) if g[kk] is not None}
    if used == {1}:             # J_h = J / L: kappa does not depend on L; RMS scale
        return g[1]
    if used == {-1}:            # J_h = J L
        return 1.0 / g[-1]
    if not (used - {0}):        # no length in J at all
        return 1.0
    # a reference L0 that scales with the mechanism: the search below then runs
    # on the same dimensionless numbers for a scaled design
    if g[1] is not None and g[-1] is not None:
        L0 = np.sqrt(g[1] / g[-1])
    elif g[1] is not None:
        L0 = g[1] / g[0]
    else:
        L0 = g[0] / g[-1]
    k = (rt[:, None].astype(int) - ct[None, :].astype(int)).astype(float)
    A = A * L0 ** (-k)
    u = np.linspace(-np.log(_SEARCH), np.log(_SEARCH), _GRID)
    f = _inverse_condition_mean(A, k, np.exp(u))
    best = int(np.argmax(f))
    if not f[best] > max(A.shape[-2:]) * np.finfo(float).eps:
        return float(L0)            # every pose singular for every L: nothing to optimise
    lo, hi = u[max(best - 1, 0)], u[min(best + 1, _GRID - 1)]
    # The maximum is where the slope changes sign (a root, or a kink).  Bracketing
    # the slope makes every step a sign decision, so a scaled design (the same
    # numbers to rounding) takes the same steps and gets the same L to rounding,
    # whatever xtol; a search on the flat top of f would wander at sqrt(eps).
    slope = lambda v: float(_inverse_condition_mean(A, k, np.exp([v]), slope=True)[0])  # noqa
    s_lo, s_hi = slope(lo), slope(hi)
    v = brentq(slope, lo, hi, xtol=4 * np.finfo(float).eps, rtol=4 * np.finfo(float).eps) \
        if s_lo > 0 > s_hi else u[best]
    return float(L0 * np.exp(v))


def best_conditioning_length(J, row_kinds, col_kinds, axis=None) -> float | np.ndarray:
    """The length ``L`` (m) that best conditions ``J`` over a set of poses.

    Not the model's characteristic length (``ClosedModel.characteristic_length``,
    a property of the design, with which :func:`task_conditioning` and
    :func:`point_conditioning` measure every pose): this one is fitted to the
    poses given, so it changes with them; use it to study how a design's
    conditioning depends on the choice of ``L``.

    ``L`` maximises the global conditioning index (Gosselin and Angeles 1991)
    of the homogeneous Jacobian over the poses, ``mean_p 1 / kappa_2(J_h(p; L))``
    (:func:`homogeneous_jacobian`); for one pose this is Angeles' definition,
    the ``L`` minimising the condition number.  Singular poses contribute 0 and
    non-finite poses are skipped.  The search is a grid over
    ``L0 * [1e-4, 1e4]`` refined by a root of the slope of the index, where
    ``L0`` (the RMS of the entries in m/rad over that of those in rad/m,
    square-rooted, or the like) is a scale of
    the entries themselves, so a mechanism scaled by ``s`` gets ``s L``.  When
    every pose is singular for every ``L`` (a singular design) ``L = L0``.

    Cost: some 30-60 singular value decompositions of the whole set of poses
    (0.3-0.5 s for 1,000 poses of a 6x6 Jacobian); for a sweep over many
    designs pass a length of each design instead (e.g. its base radius) to the
    model-level helpers.

    Where the condition number does not depend on ``L`` (all length-carrying
    entries have the same units, e.g. a planar point Jacobian in m/rad), ``L``
    is the scale of those entries (the median over the poses of their RMS), so
    that ``J_h`` is of order one; with no length in ``J`` at all it is 1.  The
    condition number is then independent of ``L`` but the Gosselin-Angeles
    measures are not: to compare designs, or poses near a singularity where the
    entries explode, pass a length of the design itself (e.g. a crank length).

    Parameters
    ----------
    J : array_like (..., m, n)
    row_kinds, col_kinds : str or sequence of str
        As in :func:`homogeneous_jacobian`.
    axis : None, int or tuple of int
        The batch axes that hold the poses (pooled); the other batch axes
        (e.g. designs) each get their own ``L``.  Default: all batch axes,
        one ``L`` (a float).

    Returns
    -------
    float or ndarray
        ``L`` (m), of the shape of the batch axes not pooled.

    Examples
    --------
    >>> import numpy as np, kic.indices as ki
    >>> J = np.array([[2.0, 0.0], [0.0, 0.5]])      # rows (t, r), columns (r, r)
    >>> round(ki.best_conditioning_length(J, "tr", "rr"), 6)   # J_h = diag(2/L, 0.5)
    4.0
    """
    A = _matrix(J)
    rt = _kinds(row_kinds, A.shape[-2], "row_kinds")
    ct = _kinds(col_kinds, A.shape[-1], "col_kinds")
    nb = A.ndim - 2
    if axis is None:
        axes = tuple(range(nb))
    else:
        axes = [int(a) for a in ((axis,) if np.ndim(axis) == 0 else axis)]
        if any(not -nb <= a < nb for a in axes):
            raise ModelError(f"axis {axis!r} is not a batch axis of J with shape "
                             f"{A.shape} ({nb} batch axes)")
        axes = tuple(sorted({a % nb for a in axes}))
    keep = tuple(a for a in range(nb) if a not in axes)
    B = np.moveaxis(A, keep + axes, tuple(range(nb)))
    kshape = B.shape[:len(keep)]
    B = B.reshape((int(np.prod(kshape)), -1) + A.shape[-2:])
    out = np.array([_one_length(b, rt, ct) for b in B]).reshape(kshape)
    return float(out) if out.ndim == 0 else out


def _row_normalized_measures(Jx: np.ndarray, Jq: np.ndarray):
    """Type I and II measures of homogeneous ``J_x`` (..., m, n), ``J_q`` (..., m, k)."""
    norm = np.sqrt(np.sum(Jx ** 2, axis=-1) + np.sum(Jq ** 2, axis=-1))[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        Jx, Jq = Jx / norm, Jq / norm
    # a zero row (an equation that says nothing) is NaN: singular in both senses
    return singular_values(Jq)[..., -1], singular_values(Jx)[..., -1]


def singularity_measures(J_x, J_q, x_kinds, q_kinds, length):
    """Type I and type II singularity measures of ``J_x x' + J_q q' = 0``
    (Gosselin and Angeles 1990), each in [0, 1], 0 exactly at the singularity.

    ``q`` are the actuated joints, ``x`` the task (output) coordinates; ``J_q``
    (..., m, k) is the *inverse*-kinematic Jacobian and ``J_x`` (..., m, n) the
    *direct*-kinematic one.  Type I (serial, the workspace boundary): ``J_q``
    singular, some output direction cannot be produced (and some actuator rate
    moves nothing).  Type II (parallel): ``J_x`` singular, the output can move
    with the actuators locked.

    The relation is defined up to a scaling of each equation (row), so the
    measures are taken after (1) making the variables dimensionless with
    ``length`` (m): columns of translational variables times ``L``; (2)
    scaling each row of ``[J_x | J_q]`` to unit Euclidean norm.  Then

        ``type_one = sigma_min(J_q^)``,   ``type_two = sigma_min(J_x^)``,

    each the 2-norm distance of the normalised block to the nearest singular
    matrix (Eckart-Young).  Invariant to row scaling and to the size of the
    mechanism when ``L`` scales with it.  Row normalisation is the natural one
    when each actuator appears in one equation only (``J_q`` diagonal: one
    actuator per leg, the five-bar, the Stewart platform); with a general
    ``J_q`` the values depend on how the equations are combined.

    Parameters
    ----------
    J_x : array_like (..., m, n)
    J_q : array_like (..., m, k)
    x_kinds, q_kinds : str or sequence of str
        Kinds of the task and actuated variables (``"t"`` / ``"r"``).
    length : float or array_like (...)
        Characteristic length (m).

    Returns
    -------
    type_one, type_two : ndarray (...)

    Examples
    --------
    A Stewart-like relation: J_q = I, each leg's row of J_x its Plücker line.

    >>> import numpy as np, kic.indices as ki
    >>> t1, t2 = ki.singularity_measures(-np.eye(2), np.eye(2), "tt", "tt", 1.0)
    >>> round(float(t1), 6), round(float(t2), 6)
    (0.707107, 0.707107)
    """
    Ax, Aq = _matrix(J_x, "J_x"), _matrix(J_q, "J_q")
    if Ax.shape[-2] != Aq.shape[-2]:
        raise ModelError(f"J_x has {Ax.shape[-2]} rows and J_q {Aq.shape[-2]}: the "
                         "relation J_x x' + J_q q' = 0 needs one row per equation in both")
    xt = _kinds(x_kinds, Ax.shape[-1], "x_kinds")
    qt = _kinds(q_kinds, Aq.shape[-1], "q_kinds")
    L = np.asarray(length, dtype=float)
    if np.any(~(L > 0)) or np.any(~np.isfinite(L)):
        raise ModelError(f"length must be positive and finite (m), got {length!r}")
    L = L[..., None, None]
    Hx = Ax * np.where(xt, L, 1.0)
    Hq = Aq * np.where(qt, L, 1.0)
    return _row_normalized_measures(Hx, Hq)


# ------------------------------------------------------------- model level
@dataclass(frozen=True)
class Conditioning:
    """Conditioning indices of a mechanism at a batch of poses (shapes (...)).

    Attributes
    ----------
    length : float or ndarray
        The characteristic length ``L`` (m) used to make the Jacobians
        dimensionless: the model's own (``model.characteristic_length``), or
        the one given.
    jacobian : ndarray (..., Na, M)
        The homogeneous actuation (inverse-kinematic) Jacobian ``J_h`` with
        ``a'/s_a = J_h x'/s_x``: actuator rates per task rate.  Not finite at a
        type I singularity.
    task_jacobian : ndarray (..., M, Na)
        The homogeneous task Jacobian, task rates per actuator rate (the
        inverse of ``jacobian`` when square).  Not finite at type II.
    condition : ndarray
        ``kappa_2`` of the homogeneous actuation Jacobian, equal to that of the
        task Jacobian (its inverse); ``inf`` at either type of singularity.
    inverse_condition : ndarray
        ``1 / condition``, the relative distance to singularity
        (:func:`distance_to_singularity`), in [0, 1].
    type_one, type_two : ndarray
        Gosselin-Angeles measures (:func:`singularity_measures`), in [0, 1],
        0 at a type I (workspace boundary) / type II (uncontrolled motion)
        singularity.
    manipulability : ndarray
        Yoshikawa's ``sqrt(det(J J^T))`` of the homogeneous task Jacobian;
        0 at type I, ``inf`` at type II.
    singular : ndarray of bool
        ``condition >= max_condition``, by default the model's own
        ``max_condition`` (:data:`kic.settings.MAX_CONDITION`), the threshold
        at which ``actuator_loads`` and design batches report the actuation
        singular: one rule for type I and type II alike.
    status : ndarray of kic.Status
        OK; SINGULAR_LOAD where ``singular``; with ``on_failure="nan"`` also
        the model's reason where a pose could not be evaluated (not
        assembled, another mode, outside the limits, a singular closure),
        its indices NaN.
    """

    length: float | np.ndarray
    jacobian: np.ndarray
    task_jacobian: np.ndarray
    condition: np.ndarray
    inverse_condition: np.ndarray
    type_one: np.ndarray
    type_two: np.ndarray
    manipulability: np.ndarray
    singular: np.ndarray
    status: np.ndarray


def _joint_kinds(model, names: Sequence[str], what: str) -> str:
    """'t'/'r' of primitive joints."""
    kinds = {p.name: "t" if p.kind == "P" else "r" for p in model.mechanism.all_primitives()}
    out = []
    for n in names:
        if n not in kinds:
            raise ModelError(f"{what}: {n!r} is not a joint of the mechanism; give its kind "
                             f"explicitly ('t' or 'r')")
        out.append(kinds[n])
    return "".join(out)


_POSE_KINDS = {"x": "t", "y": "t", "z": "t", "px": "t", "py": "t", "pz": "t",
               "yaw": "r", "pitch": "r", "roll": "r"}


def _coordinate_kinds(model, given, what: str) -> str:
    if given is not None:
        return _kind_string(_kinds(given, model.dof, what))
    joints = set(model.mechanism.primitive_joints)
    out = []
    for n in model.coordinate_names:
        if n in joints:
            out.append(_joint_kinds(model, [n], what))
            continue
        tail = n.rsplit(".", 1)[-1]
        if tail not in _POSE_KINDS:
            raise ModelError(f"{what}: cannot tell whether coordinate {n!r} is translational "
                             f"or rotational; pass {what}= (one 't' or 'r' per coordinate "
                             f"of {model.coordinate_names})")
        out.append(_POSE_KINDS[tail])
    return "".join(out)


def _adjugate_rows(H: np.ndarray):
    """``(V diag(pi) U^T, prod sigma)`` for ``H = U diag(sigma) V^T`` (..., n, n),
    with ``pi_j = prod_{l != j} sigma_l``: up to one common sign, ``adj(H)`` and
    ``det(H)``.  Rows of ``[-adj(H) | det(H) I]`` are those of ``[-H^-1 | I]``
    scaled, and stay finite where ``H`` is singular.  The product does not
    depend on the SVD's sign or basis choices."""
    n = H.shape[-1]
    flat = H.reshape((-1, n, n))
    ok = np.all(np.isfinite(flat), axis=(-2, -1))
    adj = np.full(flat.shape, np.nan)
    det = np.full(flat.shape[0], np.nan)
    if ok.any():
        U, s, Vt = np.linalg.svd(flat[ok])
        others = np.stack([np.prod(np.delete(s, j, axis=-1), axis=-1) for j in range(n)], -1)
        adj[ok] = np.einsum("pji,pj,pkj->pik", Vt, others, U)
        det[ok] = np.prod(s, axis=-1)
    return adj.reshape(H.shape), det.reshape(H.shape[:-2])


def _finish(length, Jh, Gh, Jx, Jq, max_condition) -> Conditioning:
    t1, t2 = _row_normalized_measures(Jx, Jq)
    # whichever of the pair is finite at each pose carries the same singular values
    d_j, d_g = distance_to_singularity(Jh), distance_to_singularity(Gh)
    inv = np.where(np.isfinite(d_j), d_j, d_g)
    eps = max(Jh.shape[-2:]) * np.finfo(float).eps          # rank lost to rounding
    with np.errstate(divide="ignore"):
        cond = np.where(inv > eps, 1.0 / np.where(inv > eps, inv, 1.0), np.inf)
    cond = np.where(np.isnan(inv), np.nan, cond)
    manip = manipulability(Gh)
    with np.errstate(divide="ignore"):
        manip = np.where(np.isfinite(manip), manip, 1.0 / manipulability(Jh))
    singular = ~np.isnan(cond) & ~(cond < max_condition)
    status = np.where(singular, Status.SINGULAR_LOAD, Status.OK).astype(np.int8)
    return Conditioning(length, Jh, Gh, cond, inv, t1, t2, manip, singular, status)


def _model_length(model, length):
    """The model's characteristic length, or the one given (checked)."""
    return float(model.characteristic_length) if length is None else _check_length(length)


def _per_pose(model, q, length, on_failure: str, compute) -> Conditioning:
    """``compute(q, L)`` over the poses; with ``on_failure="nan"`` the poses the
    model cannot evaluate get NaN and the model's status instead of raising for
    the whole batch (each pose is measured on its own either way)."""
    if on_failure not in ("raise", "nan"):
        raise ModelError(f"on_failure={on_failure!r}: use 'raise' or 'nan'")
    if on_failure == "raise":
        model.assemble(q)        # the model's own errors: not assembled, limits, mode
        return compute(q, length)
    qf, batch = as_batch(q, model.dof)
    qf = qf.T
    n = qf.shape[0]
    L = np.broadcast_to(np.asarray(length, float), batch).reshape(n) \
        if np.ndim(length) else length
    _, status = model.assemble(qf, on_failure="nan")
    status = np.asarray(status).astype(np.int8).reshape(n)
    parts: dict = {}
    good = np.nonzero(status == Status.OK)[0]
    chunks = [good] if good.size else []
    while chunks:
        idx = chunks.pop()
        try:
            c = compute(qf[idx], L[idx] if np.ndim(L) else L)
        except KicError as exc:
            if idx.size > 1:             # find the poses at fault, one by one
                chunks.extend(np.array([i]) for i in idx)
                continue
            status[idx] = Status.SINGULAR if isinstance(exc, SingularityError) else \
                Status.UNASSEMBLABLE
            continue
        parts[tuple(idx)] = c
        status[idx] = c.status
    M = model.dof
    out = {"jacobian": np.full((n, M, M), np.nan), "task_jacobian": np.full((n, M, M), np.nan),
           **{k: np.full(n, np.nan) for k in ("condition", "inverse_condition", "type_one",
                                              "type_two", "manipulability")},
           "singular": np.zeros(n, bool)}
    for idx, c in parts.items():
        for key, arr in out.items():
            arr[list(idx)] = getattr(c, key)
    shaped = {k: v.reshape(batch + v.shape[1:]) for k, v in out.items()}
    return Conditioning(length, status=status.reshape(batch), **shaped)


def _check_length(length):
    L = np.asarray(length, dtype=float)
    if np.any(~(L > 0)) or np.any(~np.isfinite(L)):
        raise ModelError(f"length must be positive and finite (m), got {length!r}")
    return float(L) if L.ndim == 0 else L


def task_conditioning(model, x, actuators: Sequence[str] | None = None, *,
                      task_kinds=None, actuator_kinds=None, length=None,
                      max_condition: float | None = None,
                      on_failure: str = "raise") -> Conditioning:
    """Conditioning of a closed model whose coordinates are the task.

    E.g. the Stewart platform in its platform pose (``kic.BodyPose``) with the
    six legs as actuators.  ``J = model.actuator_jacobian(x, actuators)`` is
    the inverse-kinematic Jacobian ``G^a_x`` (actuator rates per task rate);
    with one actuator per equation, ``J_q = I`` and ``J_x = -J`` in
    Gosselin-Angeles' relation (row normalisation makes this choice exact for
    any diagonal ``J_q``, :func:`singularity_measures`).

    Parameters
    ----------
    model : kic.ClosedModel
        Coordinates = the task (as many as actuators).
    x : array_like (..., M)
        Task coordinates (m, rad).
    actuators : sequence of str, optional
        The actuated joints; default ``model.actuators``.
    task_kinds, actuator_kinds : str, optional
        ``"t"``/``"r"`` per coordinate / actuator; by default taken from the
        joint kinds and the coordinate names (``.x``, ``.y``, ``.z``:
        translational; ``.yaw``, ``.pitch``, ``.roll``: rotational).
    length : float or array_like (...), optional
        Characteristic length (m); default the model's
        (``model.characteristic_length``), so that the number at a pose never
        depends on the other poses of the call.
    max_condition : float, optional
        Threshold of ``condition`` for ``singular`` (default the model's
        ``max_condition``, the one ``actuator_loads`` uses).
    on_failure : {"raise", "nan"}
        ``"nan"``: poses the model cannot evaluate get NaN indices and their
        :class:`kic.Status` in ``status`` instead of an exception.

    Returns
    -------
    Conditioning
    """
    if actuators is None:
        actuators = getattr(model, "actuators", None)
        if not actuators:
            raise ModelError("task_conditioning: give the actuated joints (actuators=...); "
                             "this model lists none in model.actuators")
    actuators = list(actuators)
    if len(actuators) != model.dof:
        raise ModelError(f"task_conditioning: {len(actuators)} actuators for {model.dof} task "
                         "coordinates; the Gosselin-Angeles measures need as many")
    xk = _coordinate_kinds(model, task_kinds, "task_kinds")
    ak = (_kind_string(_kinds(actuator_kinds, len(actuators), "actuator_kinds"))
          if actuator_kinds is not None else _joint_kinds(model, actuators, "actuators"))
    limit = float(model.max_condition if max_condition is None else max_condition)

    def compute(xs, L):
        J = np.asarray(model.actuator_jacobian(xs, actuators), float)
        Jh = homogeneous_jacobian(J, ak, xk, L)
        with np.errstate(all="ignore"):
            try:
                Gh = np.linalg.inv(Jh)
            except np.linalg.LinAlgError:      # some pose exactly singular: pose by pose
                Gh = np.stack([_safe_inv(a) for a in Jh.reshape((-1,) + Jh.shape[-2:])]
                              ).reshape(Jh.shape)
        eye = np.broadcast_to(np.eye(model.dof), Jh.shape)
        return _finish(L, Jh, Gh, -Jh, eye, limit)
    return _per_pose(model, x, _model_length(model, length), on_failure, compute)


def _safe_inv(A: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.inv(A)
    except np.linalg.LinAlgError:
        return np.full_like(A, np.inf)


def point_conditioning(model, q, body: str, point=(0.0, 0.0, 0.0), axes: str = "xy", *,
                       actuator_kinds=None, length=None, max_condition: float | None = None,
                       on_failure: str = "raise") -> Conditioning:
    """Conditioning of a closed model in actuated coordinates with a task point.

    E.g. the five-bar in its crank angles, the task the closing joint ``C``
    (``body="coupler1"``, ``point=(coupler1, 0, 0)``).  The task Jacobian is
    ``G = model.kinematics(q, order=1).point(body, point).G`` restricted to
    ``axes`` (m/rad or m/m), shape (..., M, M): square, as many task
    components as coordinates.  Gosselin-Angeles' relation with one actuator
    per equation is ``[-G^-1 | I]`` up to row scaling; it is evaluated as
    ``[-adj(G_h) | det(G_h) I]``, finite at a type I singularity where ``G``
    loses rank.  At a type II singularity the model itself raises
    :class:`kic.SingularityError` (the closure cannot be solved for the
    passive joints).  Within an inverse condition of 1e-8 of a type I
    singularity ``type_two`` is NaN: there ``G`` holds the equations of the
    other legs only through its vanishing singular value (at the singularity
    not at all), so their directions would be rounding noise.

    Parameters
    ----------
    model : kic.ClosedModel
        Coordinates = the actuated joints.
    q : array_like (..., M)
        Actuator coordinates (rad or m).
    body : str
    point : array_like (3,)
        The task point in the body's frame (m).
    axes : str
        Which world components of the point are the task, e.g. ``"xy"``.
    actuator_kinds : str, optional
        ``"t"``/``"r"`` per coordinate; default from the joint kinds.
    length, max_condition, on_failure
        As in :func:`task_conditioning` (default ``L`` the model's).

    Returns
    -------
    Conditioning
    """
    if not axes or any(a not in "xyz" for a in axes) or len(set(axes)) != len(axes):
        raise ModelError(f"axes must be distinct letters of 'xyz', got {axes!r}")
    if len(axes) != model.dof:
        raise ModelError(f"point_conditioning: {len(axes)} task components ({axes!r}) for a "
                         f"{model.dof}-coordinate model; the measures need as many")
    ak = _coordinate_kinds(model, actuator_kinds, "actuator_kinds")
    xk = "t" * len(axes)
    limit = float(model.max_condition if max_condition is None else max_condition)

    def compute(qs, L):
        G = np.asarray(model.kinematics(qs, order=1).point(body, point).G, float)
        G = G[..., ["xyz".index(a) for a in axes], :]
        Gh = homogeneous_jacobian(G, xk, ak, L)
        adj, det = _adjugate_rows(Gh)
        with np.errstate(all="ignore"):
            try:
                Jh = np.linalg.inv(Gh)
            except np.linalg.LinAlgError:
                Jh = np.stack([_safe_inv(a) for a in Gh.reshape((-1,) + Gh.shape[-2:])]
                              ).reshape(Gh.shape)
        eye = np.eye(model.dof) * det[..., None, None]
        out = _finish(L, Jh, Gh, -adj, eye, limit)
        # Near a type I singularity G carries the equations of the other legs only
        # through its smallest singular value: their directions are accurate to about
        # eps / inverse_condition, so type II is not known there from G alone.
        lost = ~(out.inverse_condition > TYPE_TWO_INVERSE_CONDITION)
        if np.any(lost & ~np.isnan(out.inverse_condition)):
            out = replace(out, type_two=np.where(lost, np.nan, out.type_two))
        return out
    return _per_pose(model, q, _model_length(model, length), on_failure, compute)
