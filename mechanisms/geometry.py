"""Closed forms of the closed mechanisms: the five-bar's and the Stewart
platform's position analysis, written once for arrays of designs.

Every function here takes its dimensions as scalars or as arrays with leading
(design) axes that broadcast with the configurations' (..., n) axes, so that
one formula serves a single model (:class:`FiveBarGeometry`,
:class:`StewartGeometry`, the builders' position guesses) and a batch of
designs (:mod:`mechanisms.designs`).  Lengths in m, angles in rad.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import kic
from kic.errors import ClosureError, SingularityError, Status, at_batch_indices
from kic.loops import scaled_condition
from kic.settings import CLOSURE_TOLERANCE, MAX_CONDITION

__all__ = ["FiveBarGeometry", "FIVE_BAR_HOME", "StewartGeometry"]


# ------------------------------------------------------------ plane geometry
def circle_meet(A, B, ra, rb, left=True, what="loop", strict=True):
    """Points at distance ra from A and rb from B (batched), left of A -> B; NaN
    where the circles do not meet, or a ClosureError when ``strict``."""
    d = B - A
    L = np.hypot(d[..., 0], d[..., 1])
    out = ~circles_meet(L, ra, rb)
    if strict and np.any(out):
        bad = np.argwhere(np.atleast_1d(out))[0]
        Lb = np.atleast_1d(L)[tuple(bad)]
        raise ClosureError(f"the {what} cannot be assembled: the two sides are {Lb:.4g} m "
                           f"apart but the links reach from {abs(ra - rb):.4g} to "
                           f"{ra + rb:.4g} m", loop=what,
                           residual=float(max(Lb - ra - rb, abs(ra - rb) - Lb, 0)),
                           index=tuple(int(i) for i in bad) if np.ndim(out) else None)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (ra ** 2 - rb ** 2 + L ** 2) / (2 * L)
        h = np.sqrt(np.maximum(ra ** 2 - a ** 2, 0.0))
        u = d / L[..., None]
    n = np.stack([-u[..., 1], u[..., 0]], axis=-1)
    C = A + a[..., None] * u + (h if left else -h)[..., None] * n
    return np.where(np.asarray(out)[..., None], np.nan, C)


def circles_meet(distance, ra, rb):
    """Whether circles of radii ra and rb whose centres are ``distance`` apart
    meet (to the closure tolerance relative to the reach ra + rb), batched."""
    tol = CLOSURE_TOLERANCE * (ra + rb)
    return (distance <= ra + rb + tol) & (distance >= np.abs(ra - rb) - tol) & (distance != 0)


def angle(v):
    """Direction (rad) of planar vectors (..., 2)."""
    return np.arctan2(v[..., 1], v[..., 0])


def wrap(a):
    """Angles wrapped into [-pi, pi)."""
    return (a + np.pi) % (2 * np.pi) - np.pi


def cross(a, b):
    """z component of the cross product of planar vectors (..., 2)."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def two_link_ik(P, l1, l2, up=True, what="arm", strict=True):
    """Joint angles (batched) of a planar 2R arm at the origin reaching P (NaN out
    of reach unless ``strict``)."""
    r2 = (P ** 2).sum(-1)
    c2 = (r2 - l1 ** 2 - l2 ** 2) / (2 * l1 * l2)
    if strict and np.any(np.abs(c2) > 1):
        worst = int(np.argmax(np.abs(c2)))
        raise ClosureError(f"the {what} cannot reach {P.reshape(-1, 2)[worst]}"
                           f" (reach {abs(l1 - l2):.4g} to {l1 + l2:.4g} m)", loop=what,
                           residual=float(np.max(np.abs(c2)) - 1),
                           index=tuple(int(i) for i in np.unravel_index(worst, np.shape(c2)))
                           if np.ndim(c2) else None)
    t2 = np.where(np.abs(c2) > 1, np.nan, np.arccos(np.clip(c2, -1, 1))) * (1 if up else -1)
    t1 = np.arctan2(P[..., 1], P[..., 0]) - np.arctan2(l2 * np.sin(t2), l1 + l2 * np.cos(t2))
    return t1, t2


# ------------------------------------------------------------------ rotations
def rotation(a, axis: int) -> np.ndarray:
    """Rotations (..., 3, 3) about the coordinate axis ``axis`` (0: x, 1: y, 2: z)
    by angles a (...) (rad)."""
    a = np.asarray(a, float)
    c, s = np.cos(a), np.sin(a)
    R = np.zeros(a.shape + (3, 3))
    i, j = (axis + 1) % 3, (axis + 2) % 3
    R[..., axis, axis] = 1.0
    R[..., i, i], R[..., i, j], R[..., j, i], R[..., j, j] = c, -s, s, c
    return R


def rx4(a: float) -> np.ndarray:
    """4x4 rotation about x."""
    T = np.eye(4)
    T[:3, :3] = rotation(a, 0)
    return T


# ------------------------------------------------------------------ five-bar
FIVE_BAR_JOINTS = ("crank1", "crank2", "elbow1", "elbow2", "tip")
FIVE_BAR_LENGTHS = ("base", "crank1", "crank2", "coupler1", "coupler2")
#: the conventional home pose of the five-bar (crank angles, rad): the reference
#: when it lies in the requested mode and is regular (see :func:`mechanisms.five_bar`)
FIVE_BAR_HOME = (np.pi / 2 + 0.3, np.pi / 2 - 0.3)
REGULAR = 0.05           # min |sin| of the passive joints for the home pose to serve
GRID = 96                # the reference search's crank grid per turn (then 8 times finer)


def sign(name: str, v) -> int:
    if v not in (1, -1) or isinstance(v, bool):
        raise kic.ModelError(f"five_bar: {name} must be +1 or -1, got {v!r}")
    return int(v)


def five_bar_mode(elbows, tip_side) -> tuple[int, int, int]:
    """(elbow1, elbow2, tip_side) checked: signs +1 or -1."""
    try:
        e1, e2 = elbows
    except (TypeError, ValueError) as exc:
        raise kic.ModelError(f"five_bar: elbows must be a pair of signs (+1 or -1), "
                             f"got {elbows!r}") from exc
    return sign("elbows[0]", e1), sign("elbows[1]", e2), sign("tip_side", tip_side)


def mode_tuple(mode) -> tuple[int, int, int]:
    """A five-bar mode given in one argument, (elbow1, elbow2, tip_side), checked."""
    try:
        e1, e2, s = mode
    except (TypeError, ValueError) as exc:
        raise kic.ModelError(f"five_bar: mode must be (elbow1, elbow2, tip_side), signs +1 "
                             f"or -1, got {mode!r}") from exc
    return five_bar_mode((e1, e2), s)


def finite_pair(name: str, value) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise kic.ModelError(f"{name} must be two finite angles (rad), got {value!r}") from exc
    if v.shape != (2,) or not np.all(np.isfinite(v)):
        raise kic.ModelError(f"{name} must be two finite angles (rad), got {value!r}")
    return v


def points(x, what: str) -> np.ndarray:
    """Planar points (..., 2) as floats (kic.ModelError naming ``what`` otherwise)."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 0 or x.shape[-1] != 2:
        raise kic.ModelError(f"{what} must have shape (..., 2), got {x.shape}")
    return x


def five_bar_tips(lengths: Mapping, cranks):
    """Crank tips A1, A2 (..., 2) (m) at crank angles (..., 2) (rad); crank 1
    pivots at (0, 0), crank 2 at (base, 0).  ``lengths`` maps the names of
    :data:`FIVE_BAR_LENGTHS` to scalars or arrays broadcasting with cranks[..., 0]."""
    c = np.asarray(cranks, float)
    l1, l2 = lengths["crank1"], lengths["crank2"]
    A1 = np.stack([l1 * np.cos(c[..., 0]), l1 * np.sin(c[..., 0])], -1)
    A2 = np.stack([lengths["base"] + l2 * np.cos(c[..., 1]), l2 * np.sin(c[..., 1])], -1)
    return A1, A2


def five_bar_forward(lengths: Mapping, cranks, tip_side=1):
    """Forward kinematics: the tip C (..., 2) at crank angles (..., 2), met on
    ``tip_side`` (+1: left of A1 -> A2), NaN where the couplers do not reach
    each other; and the crank tips A1, A2."""
    A1, A2 = five_bar_tips(lengths, cranks)
    C = circle_meet(A1, A2, lengths["coupler1"], lengths["coupler2"], left=tip_side > 0,
                    what="five-bar loop", strict=False)
    return C, A1, A2


def five_bar_joint_values(lengths: Mapping, cranks, tip=None, tip_side=1) -> np.ndarray:
    """All five joint values (..., 5) in the order of :data:`FIVE_BAR_JOINTS`
    at crank angles (..., 2), with the tip C given (..., 2) or met on
    ``tip_side``; NaN where the loop does not close."""
    c = np.asarray(cranks, float)
    if tip is None:
        tip, A1, A2 = five_bar_forward(lengths, c, tip_side)
    else:
        A1, A2 = five_bar_tips(lengths, c)
    p1, p2 = angle(tip - A1), angle(tip - A2)
    return np.stack([c[..., 0], c[..., 1], wrap(p1 - c[..., 0]), wrap(p2 - c[..., 1]),
                     wrap(p2 - p1)], -1)


def five_bar_inverse(lengths: Mapping, tip, elbows, tip_side):
    """Closed-form inverse kinematics: the crank angles that put the tip at
    ``tip`` (..., 2) in the working mode ``elbows`` (law of cosines per crank).

    Returns ``(cranks (..., 2), status (...))``: cranks in (-pi, pi], NaN where
    failed; status ``UNASSEMBLABLE`` where a crank cannot reach, ``OTHER_MODE``
    where the tip is on the other side of A1 A2 than ``tip_side`` (0: no check)."""
    x = np.asarray(tip, float)
    out, reach = [], True
    for O, l, k, e in ((0.0, lengths["crank1"], lengths["coupler1"], elbows[0]),
                       (lengths["base"], lengths["crank2"], lengths["coupler2"], elbows[1])):
        dx, dy = x[..., 0] - O, x[..., 1]
        r = np.hypot(dx, dy)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = (l * l + r * r - k * k) / (2 * l * r)
        reach = reach & (np.abs(c) <= 1.0 + CLOSURE_TOLERANCE) & (r > 0)
        out.append(wrap(np.arctan2(dy, dx) - e * np.arccos(np.clip(c, -1.0, 1.0))))
    cranks = np.stack(out, -1)
    status = np.where(reach, int(Status.OK), int(Status.UNASSEMBLABLE))
    if tip_side:
        A1, A2 = five_bar_tips(lengths, cranks)
        s = cross(A2 - A1, x - A1)
        status = np.where(reach & (np.sign(s) != tip_side), int(Status.OTHER_MODE), status)
    return np.where((status == Status.OK)[..., None], cranks, np.nan), status


def five_bar_rates(lengths: Mapping, cranks, tip, tip_rate, tip_acceleration=None):
    """Crank rates (..., 2) and accelerations (None without ``tip_acceleration``)
    of a tip motion, and the rows (..., 2) x (..., 2) of the inverse task
    Jacobian ``dq/dC``: ``e_i^T / (l_i e_i . n_i)`` (see
    :meth:`FiveBarGeometry.inverse_rates`)."""
    c = np.asarray(cranks, float)
    x, xd = np.asarray(tip, float), np.asarray(tip_rate, float)
    xdd = None if tip_acceleration is None else np.asarray(tip_acceleration, float)
    A1, A2 = five_bar_tips(lengths, c)
    qd, qdd, rows = [], [], []
    with np.errstate(divide="ignore", invalid="ignore"):
        for i, (A, l) in enumerate(((A1, lengths["crank1"]), (A2, lengths["crank2"]))):
            th = c[..., i]
            u = np.stack([np.cos(th), np.sin(th)], -1)
            n = np.stack([-np.sin(th), np.cos(th)], -1)
            e = x - A
            den = l * np.sum(e * n, -1)
            w = np.sum(e * xd, -1) / den
            qd.append(w)
            rows.append(e / den[..., None])
            if xdd is not None:
                ed = xd - np.asarray(l)[..., None] * n * w[..., None]
                qdd.append((np.sum(ed * ed, -1) + np.sum(e * xdd, -1)
                            + l * np.sum(e * u, -1) * w * w) / den)
    return np.stack(qd, -1), None if xdd is None else np.stack(qdd, -1), rows


def five_bar_rate_condition(rows) -> np.ndarray:
    """The dimensionless 2-norm condition number (...) of the task Jacobian
    ``J = dC/dq`` (tip velocity per crank rate) from the rows (..., 2) of ``J^-1``
    (:func:`five_bar_rates`), by kic's one rule (:func:`kic.loops.scaled_condition`;
    the tip's coordinates are lengths, the cranks' angles, so the characteristic
    length cancels and 1 m stands for it).  Infinite at a type I singularity (an
    elbow straight: ``J^-1`` unbounded) and at type II (the couplers aligned:
    ``J^-1`` loses rank); ``kappa(J^-1) = kappa(J)``."""
    return scaled_condition(np.stack(rows, -2), np.zeros(2, bool), np.ones(2, bool), 1.0)


def five_bar_singularity_kind(lengths: Mapping, cranks, tip) -> np.ndarray:
    """1 where a five-bar pose is nearer a type I singularity (an elbow straight:
    the smaller ``|sin|`` is an elbow's) than a type II (the couplers aligned),
    else 2 (...): which one a report names."""
    c, x = np.asarray(cranks, float), np.asarray(tip, float)
    A1, A2 = five_bar_tips(lengths, c)
    e1, e2 = x - A1, x - A2
    norm = lambda v: np.linalg.norm(v, axis=-1)              # noqa: E731
    O2 = np.stack([np.asarray(lengths["base"], float), 0.0 * lengths["base"]], -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        elbows = [np.abs(cross(A - O, e)) / (norm(A - O) * norm(e))
                  for A, O, e in ((A1, 0.0, e1), (A2, O2, e2))]
        tip_sin = np.abs(cross(e1, e2)) / (norm(e1) * norm(e2))
    return np.where(np.minimum(*elbows) <= tip_sin, 1, 2)


def five_bar_modes(passive) -> np.ndarray:
    """Signs (..., 3) of ``sin`` of the passive joints (elbow1, elbow2, tip) (...,
    3): the mode; 0 where undefined (exactly aligned, or NaN: not closed)."""
    s = np.sign(np.sin(passive))
    return np.where(np.isnan(s), 0, s).astype(int)


def five_bar_regularity(passive) -> np.ndarray:
    """Smallest ``|sin|`` of the passive joints (..., 3); NaN where not closed."""
    return _least(np.abs(np.sin(passive)))


def _least(a):
    return np.minimum(np.minimum(a[..., 0], a[..., 1]), a[..., 2])


def five_bar_score(phi, elbows, tip_side) -> np.ndarray:
    """The regularity of configurations (..., 5) in the mode (``elbows``: a pair of
    signs, or None: any, neither straight; ``tip_side``), 0 outside it or where
    the loop is not closed: the reference search's score."""
    sin = np.sin(phi[..., 2:])
    s = np.sign(sin)                    # (a loop not closed: NaN, not on the tip side)
    fits = s[..., 2] == tip_side
    if elbows is None:
        fits &= (s[..., 0] != 0) & (s[..., 1] != 0)
    else:
        fits &= (s[..., 0] == elbows[0]) & (s[..., 1] == elbows[1])
    return np.where(fits, _least(np.abs(sin)), 0.0)


def five_bar_gap(lengths: Mapping, cranks) -> np.ndarray:
    """Distances |A2 - A1| (...) between the crank tips at crank angles (..., 2):
    where the couplers can meet (:func:`circles_meet`), without the tips' arrays."""
    c = np.asarray(cranks, float)
    l1, l2 = lengths["crank1"], lengths["crank2"]
    return np.hypot(lengths["base"] + l2 * np.cos(c[..., 1]) - l1 * np.cos(c[..., 0]),
                    l2 * np.sin(c[..., 1]) - l1 * np.sin(c[..., 0]))


def five_bar_closes(lengths: Mapping) -> np.ndarray:
    """Whether a five-bar's loop closes at some crank angles, in closed form
    (batched over designs: ``lengths`` maps :data:`FIVE_BAR_LENGTHS` to scalars
    or arrays (...); returns (...) bool).

    As the cranks turn, the distance |A2 - A1| between the crank tips takes
    every value from ``max(0, base - l1 - l2, |l1 - l2| - base)`` to
    ``base + l1 + l2`` (A2 - A1 sweeps the annulus of radii |l1 - l2| and
    l1 + l2 about (base, 0)); the couplers meet where it lies in
    ``[|k1 - k2|, k1 + k2]`` (:func:`circles_meet`, same tolerance).  The two
    intervals overlap exactly when no length exceeds the sum of the other four
    (the closed polygon's inequality): no search over crank angles decides more.
    """
    L = {k: np.asarray(lengths[k], float) for k in FIVE_BAR_LENGTHS}
    b, l1, l2, k1, k2 = (L[k] for k in FIVE_BAR_LENGTHS)
    near = np.maximum(np.maximum(b - l1 - l2, np.abs(l1 - l2) - b), 0.0)
    far = b + l1 + l2
    tol = CLOSURE_TOLERANCE * (k1 + k2)
    return (near <= k1 + k2 + tol) & (far >= np.abs(k1 - k2) - tol) & (far > 0)


def five_bar_reference(lengths: Mapping, elbows, tip_side, home=FIVE_BAR_HOME,
                       grid: int = GRID):
    """Reference configurations (D, 5) of D five-bar designs (``lengths``: arrays
    (D,)) in a mode, and whether each design's loop closes anywhere (D,).

    ``home`` (crank angles) where it is in the mode with regularity at least
    :data:`REGULAR`, else the most regular configuration in the mode (the first
    in grid order among equals) of a ``grid`` x ``grid`` crank grid over the
    full turn, then of an 8 times finer one; NaN rows where the mode has none.
    Designs whose loop closes nowhere (:func:`five_bar_closes`) are not searched.
    """
    L = {k: np.asarray(lengths[k], float).reshape(-1) for k in FIVE_BAR_LENGTHS}
    D = L["base"].shape[0]
    ref = np.full((D, 5), np.nan)
    closes = np.zeros(D, bool)
    todo = np.nonzero(five_bar_closes(L))[0]
    if home is not None and todo.size:
        h = np.broadcast_to(np.asarray(home, float), (todo.size, 2))
        phi = five_bar_joint_values({k: v[todo] for k, v in L.items()}, h, None, tip_side)
        good = five_bar_score(phi, elbows, tip_side) >= REGULAR
        ref[todo[good]] = phi[good]
        closes[todo[good]] = True
        todo = todo[~good]
    for n in (grid, 8 * grid):
        if todo.size == 0:
            break
        t = np.linspace(-np.pi, np.pi, n, endpoint=False) + np.pi / n
        cr = np.stack(np.meshgrid(t, t, indexing="ij"), -1).reshape(-1, 2)
        closes[todo] = False
        lost = []
        for chunk in np.array_split(todo, max(1, todo.size * n * n // 2 ** 18)):
            if chunk.size == 0:
                continue
            sub = {k: v[chunk][:, None] for k, v in L.items()}
            # only the grid points where the couplers can meet (the rest score 0)
            dd, gg = np.nonzero(circles_meet(five_bar_gap(sub, cr), sub["coupler1"],
                                             sub["coupler2"]))
            phi = five_bar_joint_values({k: v[chunk][dd] for k, v in L.items()}, cr[gg],
                                        None, tip_side)
            closes[chunk[dd]] = True
            score = np.zeros((chunk.size, cr.shape[0]))
            score[dd, gg] = five_bar_score(phi, elbows, tip_side)
            k = np.argmax(score, axis=1)
            found = score[np.arange(chunk.size), k] > 0
            best = cr[k[found]]
            ref[chunk[found]] = five_bar_joint_values(
                {kk: v[chunk[found]] for kk, v in L.items()}, best, None, tip_side)
            lost.extend(chunk[~found].tolist())
        todo = np.array(lost, dtype=int)
    return ref, closes


class FiveBarGeometry:
    """Closed-form position analysis of a five-bar linkage (picklable).

    Crank i pivots at O_i (O1 = (0, 0), O2 = (``base``, 0), m), its tip A_i at
    ``crank_i`` from O_i; coupler i joins A_i to the tip C (``coupler_i`` m).

    Modes (signs +1/-1):

    * **elbow i** (working mode, chooses the inverse kinematics): the sign of
      the z component of ``(A_i - O_i) x (C - A_i)``, i.e. of ``sin`` of the
      joint ``"elbow{i}"`` (the coupler's angle relative to the crank);
      +1 when the coupler turns counter-clockwise from the crank;
    * **tip side** (assembly mode, chooses the forward kinematics): the sign of
      ``(A2 - A1) x (C - A1)``, i.e. of ``sin`` of the joint ``"tip"``; +1: C
      to the left of the directed line A1 -> A2 (the old ``branch="up"``).
      The crank-coordinate model's :attr:`kic.ClosedModel.mode` is
      ``(-tip_side,)``: the sign of ``det A``, A = dc/d(elbow1, elbow2, tip),
      is that of ``-sin(tip)`` for every design (tests/test_design.py).

    Parameters
    ----------
    base, crank1, crank2, coupler1, coupler2 : float
        Lengths (m).
    elbows : (int, int)
        Default working mode of :meth:`inverse`.
    tip_side : int
        Default assembly mode of :meth:`forward` and of the check in
        :meth:`inverse`.

    Notes
    -----
    The inverse kinematics decouples: crank i sees only the tip,
    ``theta_i = atan2(C - O_i) - e_i arccos((l_i^2 + r_i^2 - k_i^2) / (2 l_i r_i))``
    with ``r_i = |C - O_i|``, e_i the elbow sign (law of cosines).  The
    forward kinematics meets the circles of radius k_i about A_i on the side
    ``tip_side``.  Type I singularities (workspace boundary): an elbow at 0 or
    pi (crank and coupler aligned); type II (uncontrolled tip): the tip joint at
    0 or pi (couplers aligned).  :meth:`regularity` is the smallest ``|sin|``
    of the three passive joints, 0 at either.  The formulas are those of the
    design batches (:func:`mechanisms.five_bar_task`), written once for arrays.
    """

    joints = FIVE_BAR_JOINTS

    def __init__(self, base: float, crank1: float, crank2: float, coupler1: float,
                 coupler2: float, elbows=(-1, 1), tip_side: int = 1) -> None:
        self.base, self.crank1, self.crank2 = float(base), float(crank1), float(crank2)
        self.coupler1, self.coupler2 = float(coupler1), float(coupler2)
        *self.elbows, self.tip_side = five_bar_mode(elbows, tip_side)
        self.elbows = tuple(self.elbows)

    @property
    def mode(self) -> tuple[int, int, int]:
        """(elbow1, elbow2, tip side) of this geometry's defaults."""
        return (*self.elbows, self.tip_side)

    @property
    def lengths(self) -> dict:
        """The five lengths (m) by name (:data:`FIVE_BAR_LENGTHS`)."""
        return {k: getattr(self, k) for k in FIVE_BAR_LENGTHS}

    def __repr__(self) -> str:
        return (f"FiveBarGeometry(base={self.base}, crank1={self.crank1}, crank2="
                f"{self.crank2}, coupler1={self.coupler1}, coupler2={self.coupler2}, "
                f"elbows={self.elbows}, tip_side={self.tip_side})")

    def inverse(self, tip, elbows=None, tip_side=None):
        """Crank angles that put the tip C at ``tip`` (closed form, batched).

        Parameters
        ----------
        tip : array_like (..., 2)
            Tip positions (m).
        elbows : (int, int), optional
            Working mode; default :attr:`elbows`.
        tip_side : int, optional
            Assembly mode the answer must be in; default :attr:`tip_side`;
            ``0``: no check.

        Returns
        -------
        cranks : ndarray (..., 2)
            theta1, theta2 (rad, in (-pi, pi]); NaN where failed.
        status : ndarray of int (...)
            :class:`kic.Status`: ``UNASSEMBLABLE`` where a crank cannot reach
            (``|r_i - l_i| > k_i`` or ``r_i > l_i + k_i``), ``OTHER_MODE``
            where the cranks reach the tip but with C on the other side of
            A1 A2 (the model in ``tip_side`` would assemble elsewhere).
        """
        x = points(tip, "tip")
        e = self.elbows if elbows is None else five_bar_mode(elbows, 1)[:2]
        side = self.tip_side if tip_side is None else tip_side
        if side not in (-1, 0, 1):
            raise kic.ModelError(f"tip_side must be +1, -1 or 0 (no check), got {side!r}")
        return five_bar_inverse(self.lengths, x, e, side)

    def forward(self, cranks, tip_side=None):
        """Tip positions C (..., 2) (m) at crank angles (..., 2) (rad), on the side
        ``tip_side`` (default :attr:`tip_side`) of A1 -> A2; returns
        ``(tip, status)``, NaN and ``Status.UNASSEMBLABLE`` where the couplers do
        not reach each other."""
        c = points(cranks, "cranks")
        side = self.tip_side if tip_side is None else sign("tip_side", tip_side)
        C, _, _ = five_bar_forward(self.lengths, c, side)
        ok = np.all(np.isfinite(C), axis=-1)
        return C, np.where(ok, int(Status.OK), int(Status.UNASSEMBLABLE))

    def joint_values(self, cranks, tip_side=None) -> np.ndarray:
        """All five joint values (..., 5) (rad) in the order of :attr:`joints`
        at crank angles (..., 2), on ``tip_side``; NaN where not assemblable."""
        side = self.tip_side if tip_side is None else sign("tip_side", tip_side)
        return five_bar_joint_values(self.lengths, np.asarray(cranks, float), None, side)

    def _passive(self, phi, names):
        phi = np.asarray(phi, dtype=float)
        if names is None:
            if phi.ndim == 0 or phi.shape[-1] != 5:
                raise kic.ModelError(f"phi must hold the five joints {list(self.joints)} "
                                     f"(..., 5), got shape {phi.shape}; give names= "
                                     "(model.phi_names) for another layout")
            idx = [2, 3, 4]
        else:
            names = list(names)
            missing = [n for n in ("elbow1", "elbow2", "tip") if n not in names]
            if missing or phi.shape[-1:] != (len(names),):
                raise kic.ModelError(f"phi (..., {len(names)}) with names {names} must hold "
                                     f"the joints elbow1, elbow2, tip; missing {missing}")
            idx = [names.index(n) for n in ("elbow1", "elbow2", "tip")]
        return phi[..., idx]

    def modes(self, phi, names=None) -> np.ndarray:
        """The mode (elbow1, elbow2, tip side) of each configuration (..., 3).

        Parameters
        ----------
        phi : array_like (..., N)
            Joint values, e.g. ``model.assemble(q)``; NaN rows give 0.
        names : sequence of str, optional
            The joint names of phi's columns (``model.phi_names``); default the
            five joints in the order of :attr:`joints`.

        Returns
        -------
        ndarray of int (..., 3)
            Signs of ``sin`` of the elbow and tip joints; 0 where undefined
            (exactly aligned, or NaN).
        """
        return five_bar_modes(self._passive(phi, names))

    def regularity(self, phi, names=None) -> np.ndarray:
        """Smallest ``|sin|`` of the passive joints (...) (dimensionless, in
        [0, 1]): 0 at a type I (an elbow straight) or type II (couplers aligned)
        singularity.  A cheap, scale-free screen; :mod:`kic.indices` has the
        conditioning indices proper."""
        return five_bar_regularity(self._passive(phi, names))

    def inverse_rates(self, cranks, tip, tip_rate, tip_acceleration=None,
                      on_failure: str = "raise"):
        """Crank rates (and accelerations) for a tip motion (closed form).

        Differentiating ``|C - A_i(theta_i)|^2 = k_i^2`` with ``e_i = C - A_i``,
        ``u_i = (cos theta_i, sin theta_i)``, ``n_i = (-sin theta_i, cos theta_i)``::

            theta_i'  = (e_i . C') / (l_i e_i . n_i)
            theta_i'' = (|e_i'|^2 + e_i . C'' + l_i (e_i . u_i) theta_i'^2) / (l_i e_i . n_i)

        with ``e_i' = C' - l_i n_i theta_i'``; unbounded at a type I singularity
        (``e_i . n_i = 0``, an elbow straight: the tip at the edge of its reach).

        Singular poses are those of kic's one rule for type I and type II alike:
        the dimensionless condition number of the task Jacobian ``J = dC/dq``
        (:func:`five_bar_rate_condition`) at or above
        :data:`kic.settings.MAX_CONDITION`, where the rates are not to be
        trusted (:class:`kic.Status` ``SINGULAR_LOAD``: the actuation Jacobian
        singular, as :mod:`kic.indices` and ``actuator_loads`` report it).

        Parameters
        ----------
        cranks, tip, tip_rate, tip_acceleration : array_like (..., 2)
            Crank angles (rad) reaching ``tip`` (m), tip velocity (m/s) and
            acceleration (m/s^2).
        on_failure : {"raise", "nan"}
            ``"nan"``: NaN rates where singular, and a status (...) returned last.

        Returns
        -------
        qd : ndarray (..., 2)
            Crank rates (rad/s); with ``tip_acceleration`` also
        qdd : ndarray (..., 2)
            Crank accelerations (rad/s^2); with ``on_failure="nan"`` also
        status : ndarray (...) of int
            ``Status.OK`` or ``Status.SINGULAR_LOAD``.

        Raises
        ------
        kic.SingularityError
            A singular pose (``on_failure="raise"``): the message gives its
            batch index, its condition number and the kind (type I or II).
        kic.ModelError
            Inputs that are not finite (a pose the inverse kinematics missed).
        """
        if on_failure not in ("raise", "nan"):
            raise kic.ModelError(f"on_failure must be 'raise' or 'nan', got {on_failure!r}")
        c = points(cranks, "cranks")
        x, xd = points(tip, "tip"), points(tip_rate, "tip_rate")
        xdd = None if tip_acceleration is None else points(tip_acceleration,
                                                           "tip_acceleration")
        for v, name in ((c, "cranks"), (x, "tip"), (xd, "tip_rate"), (xdd, "tip_acceleration")):
            if v is not None and not np.all(np.isfinite(v)):
                raise kic.ModelError(f"inverse_rates: {name} contains NaN or infinite values "
                                     "(pass the poses the inverse kinematics reached)")
        qd, qdd, rows = five_bar_rates(self.lengths, c, x, xd, xdd)
        cond = five_bar_rate_condition(rows)
        singular = ~(cond < MAX_CONDITION)
        if singular.any() and on_failure == "raise":
            shape = singular.shape
            bad = [tuple(int(i) for i in np.unravel_index(k, shape))
                   for k in np.flatnonzero(singular)]
            first = bad[0]
            kind = int(np.broadcast_to(five_bar_singularity_kind(self.lengths, c, x),
                                       shape)[first])
            what = ("type I: an elbow straight, the tip at the edge of its reach" if kind == 1
                    else "type II: the couplers aligned")
            raise SingularityError(
                f"five-bar crank rates at a singular pose ({what}): dimensionless condition "
                f"number of the task Jacobian {float(cond[first]):.3e} >= "
                f"{MAX_CONDITION:.0e}{at_batch_indices(bad, bool(shape))}",
                condition=float(cond[first]), where="five-bar task Jacobian dC/dq",
                index=first if shape else None)
        if on_failure == "raise":
            return qd if xdd is None else (qd, qdd)
        status = np.where(singular, int(Status.SINGULAR_LOAD), int(Status.OK))
        qd = np.where(singular[..., None], np.nan, qd)
        if xdd is None:
            return qd, status
        return qd, np.where(singular[..., None], np.nan, qdd), status

    def reference_cranks(self, elbows=(-1, 1), tip_side=None, home=FIVE_BAR_HOME,
                         grid: int = GRID) -> np.ndarray:
        """Crank angles (2,) of a regular configuration in a mode.

        ``home`` when it is in the mode with :meth:`regularity` at least 0.05,
        else the most regular configuration (largest :meth:`regularity`, the
        first in grid order among equals) of a ``grid`` x ``grid`` crank grid
        over the full turn, then of an 8 times finer one where a thin
        workspace escapes the first.

        Parameters
        ----------
        elbows : (int, int) or None
            The working mode; None: any elbows.
        tip_side : int, optional
            The assembly mode; default :attr:`tip_side`.
        home : (float, float) or None
            Crank angles (rad) tried first.

        Raises
        ------
        kic.ModelError
            The mode does not exist for these dimensions (or the loop never
            closes).
        """
        side = sign("tip_side", self.tip_side if tip_side is None else tip_side)
        want = None if elbows is None else five_bar_mode(elbows, side)[:2]
        h = None if home is None else finite_pair("home", home)
        phi, closes = five_bar_reference({k: np.array([v]) for k, v in self.lengths.items()},
                                         want, side, h, grid)
        if np.all(np.isfinite(phi[0])):
            return phi[0, :2]
        if not closes[0]:
            raise kic.ModelError("five_bar: the loop closes nowhere (the longest of base, "
                                 f"cranks and couplers must be shorter than the sum of the "
                                 f"others): {self!r}")
        raise kic.ModelError(f"five_bar: no configuration in the mode elbows="
                             f"{'any' if want is None else want}, "
                             f"tip_side={side} exists for {self!r}; choose another mode")


def five_bar_crank_guess(q, geometry: FiveBarGeometry) -> np.ndarray:
    """The five-bar model's position guess in crank coordinates: all joint values
    (n, 5) at crank angles q (n, 2) on the geometry's tip side (NaN where the
    loop does not close)."""
    return geometry.joint_values(np.asarray(q, float).reshape(-1, 2))


def five_bar_tip_guess(x, geometry: FiveBarGeometry) -> dict:
    """The five-bar model's position guess in tip coordinates: joint values (by
    name) with the tip at x (n, 2), the closed-form inverse kinematics in the
    geometry's elbows (any tip side: the model's mode check reports the other
    one); NaN where out of reach."""
    x = np.asarray(x, float).reshape(-1, 2)
    cranks, _ = geometry.inverse(x, tip_side=0)
    phi = five_bar_joint_values(geometry.lengths, cranks, x)
    out = dict(zip(FIVE_BAR_JOINTS, phi.T))
    out["tip.x"], out["tip.y"] = x[:, 0], x[:, 1]
    return out


# ------------------------------------------------------------ Stewart platform
STEWART_POSE = ("x", "y", "z", "yaw", "pitch", "roll")


def stewart_anchors(rb, rp, base_half_angle, plat_half_angle):
    """Base and platform anchors (..., 6, 3) (m): radius ``rb`` (``rp``) at the
    angles ``120 k -/+ half angle`` (rad), k = 0, 1, 2, in the order k=0 (-),
    k=0 (+), k=1 (-), ...; the arguments scalars or arrays (...)."""
    k = np.radians(120.0 * np.repeat(np.arange(3), 2))
    s = np.tile([-1.0, 1.0], 3)
    rb, rp, ba, pa = (np.asarray(v, float)[..., None] for v in (rb, rp, base_half_angle,
                                                                  plat_half_angle))
    ab, ap = k + s * ba, k + s * pa
    z = np.zeros_like(ab)
    return (np.stack([rb * np.cos(ab), rb * np.sin(ab), z], -1),
            np.stack([rp * np.cos(ap), rp * np.sin(ap), z], -1))


def stewart_legs(B, P, q):
    """Leg vectors ``d_i = p + R P_i - B_i`` (m), one array (D, n, 6) per world
    coordinate, of D designs with anchors B, P (D, 6, 3) at platform poses q
    (D or 1, n, 6) (m, rad), ``R = Rz(yaw) Ry(pitch) Rx(roll)``.

    The rotations are formed once when the poses are shared by the designs, and
    the sums of ``R P_i`` are taken coordinate by coordinate in place: per pose
    this is the cost of a design batch outside its compiled kernel, and every
    temporary of size (D, n, 6, 3) is memory the system must hand over anew."""
    q = np.asarray(q, float)
    shared = q.ndim == 2 or q.shape[0] == 1 or q.strides[0] == 0     # poses of all designs
    q1 = q[(0,) * (q.ndim - 2)] if shared else q        # the first design's poses
    # R = Rz(yaw) Ry(pitch) Rx(roll), (n or D, n, 3, 3)
    R = rotation(q1[..., 3], 2) @ rotation(q1[..., 4], 1) @ rotation(q1[..., 5], 0)
    q = np.broadcast_to(q, (B.shape[0],) + q.shape[-2:])
    Rb = R[None] if shared else R                                     # (1 or D, n, 3, 3)
    shape = np.broadcast_shapes(Rb.shape[:2], q.shape[:2]) + (P.shape[1],)
    d = [np.empty(shape) for _ in range(3)]
    tmp = np.empty(shape)
    for i in range(3):
        np.multiply(Rb[:, :, i, 0, None], P[:, None, :, 0], out=d[i])
        for k in (1, 2):
            np.multiply(Rb[:, :, i, k, None], P[:, None, :, k], out=tmp)
            d[i] += tmp
        np.add(q[..., i, None], d[i], out=d[i])         # q_i + (R P)_i - B_i, in that order
        d[i] -= B[:, None, :, i]
    return d


def stewart_leg_joints(B, P, q) -> dict:
    """The legs' closed-form inverse kinematics at platform poses q (D or 1, n, 6):
    joint values (D, n, 6) by joint ("u1", "u2": the U joint's angles about the
    base x and the rotated y, rad; "p": the leg length, m).  (The S joints close
    as points: their angles are not needed.)"""
    d = stewart_legs(B, P, q)
    L = np.multiply(d[0], d[0])
    tmp = np.empty_like(L)
    for i in (1, 2):
        np.multiply(d[i], d[i], out=tmp)
        L += tmp
    np.sqrt(L, out=L)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(3):
            np.divide(d[i], L, out=d[i])                  # the unit vector u
    np.clip(d[0], -1, 1, out=d[0])
    np.negative(d[1], out=d[1])
    return {"u2": np.arcsin(d[0], out=d[0]), "u1": np.arctan2(d[1], d[2], out=d[1]), "p": L}


def stewart_joint_values(B, P, q, names) -> np.ndarray:
    """Joint values (D, n, len(names)) in the order ``names`` ("leg{i}.u1",
    "leg{i}.u2", "leg{i}.p", "platform.x", ...) at platform poses q (D or 1, n, 6)."""
    q = np.asarray(q, float)
    values = stewart_leg_joints(B, P, q)
    q = np.broadcast_to(q, (B.shape[0],) + q.shape[-2:])
    out = np.empty(q.shape[:-1] + (len(names),))
    for c, name in enumerate(names):
        body, joint = name.split(".")
        out[..., c] = (q[..., STEWART_POSE.index(joint)] if body == "platform"
                       else values[joint][..., int(body[3:])])
    return out


def stewart_guess(q, geometry: "StewartGeometry") -> dict:
    """The Stewart model's position guess: joint name -> values (n,) at platform
    poses q (n, 6), the legs' closed-form inverse kinematics."""
    q = np.asarray(q, float).reshape(1, -1, 6)
    values = stewart_leg_joints(geometry.base_anchors[None], geometry.platform_anchors[None], q)
    out = {}
    for name in ("u1", "u2", "p"):
        for i in range(6):
            out[f"leg{i}.{name}"] = values[name][0, :, i]
    for c, name in enumerate(STEWART_POSE):
        out[f"platform.{name}"] = q[0, :, c]
    return out


class StewartGeometry:
    """Closed-form leg kinematics of a Stewart platform (picklable).

    Parameters
    ----------
    base_anchors, platform_anchors : array_like (6, 3)
        U centres in the world frame and S centres in the platform frame (m).
    stroke : (float, float), optional
        Shortest and longest leg length (m), the actuators' limits; None: no
        limits.

    Notes
    -----
    The inverse kinematics of a parallel platform is explicit: with the pose
    ``(x, y, z, yaw, pitch, roll)``, ``R = Rz(yaw) Ry(pitch) Rx(roll)``, leg i
    is ``d_i = p + R P_i - B_i`` and its length ``L_i = |d_i|``.
    """

    def __init__(self, base_anchors, platform_anchors, stroke=None) -> None:
        self.base_anchors = np.array(base_anchors, dtype=float).reshape(6, 3)
        self.platform_anchors = np.array(platform_anchors, dtype=float).reshape(6, 3)
        if stroke is not None:
            lo, hi = (float(v) for v in stroke)
            if not 0.0 <= lo < hi < np.inf:
                raise kic.ModelError(f"stewart_platform: stroke must be (shortest, longest) "
                                     f"leg length with 0 <= shortest < longest (m), got "
                                     f"{stroke!r}")
            stroke = (lo, hi)
        self.stroke = stroke

    def __repr__(self) -> str:
        return f"StewartGeometry(stroke={self.stroke})"

    def legs(self, pose) -> np.ndarray:
        """Leg vectors ``d_i`` (..., 6, 3) from the U to the S centres (m) at
        platform poses (..., 6) (m, rad)."""
        q = np.asarray(pose, dtype=float)
        if q.ndim == 0 or q.shape[-1] != 6:
            raise kic.ModelError(f"pose must have shape (..., 6) (x, y, z, yaw, pitch, roll), "
                                 f"got {q.shape}")
        d = stewart_legs(self.base_anchors[None], self.platform_anchors[None],
                         q.reshape(1, -1, 6))
        return np.stack([c[0] for c in d], -1).reshape(q.shape[:-1] + (6, 3))

    def leg_lengths(self, pose) -> np.ndarray:
        """Leg lengths ``L_i = |p + R P_i - B_i|`` (..., 6) (m): the inverse
        kinematics, the actuator coordinates at platform poses (..., 6)."""
        return np.linalg.norm(self.legs(pose), axis=-1)

    def status(self, pose) -> np.ndarray:
        """:class:`kic.Status` per pose (...): ``OUTSIDE_LIMITS`` where a leg
        length is outside :attr:`stroke`, else ``OK``."""
        L = self.leg_lengths(pose)
        if self.stroke is None:
            return np.zeros(L.shape[:-1], int)
        out = np.any((L < self.stroke[0]) | (L > self.stroke[1]), axis=-1)
        return np.where(out, int(Status.OUTSIDE_LIMITS), int(Status.OK))
