"""Closed mechanisms: single loops, the Stewart platform, redundant and
overconstrained systems (seed 004, chapter IV).

Each builder assembles a :class:`kic.Mechanism` from its dimensions and masses
and returns the :class:`kic.ClosedModel` in the stated coordinates, with a
closed-form first guess for the position solver that keeps it on the stated
assembly branch.  Planar mechanisms lie in the x-y plane with gravity along
-y; their links are uniform slender rods (centroid at mid-length, ``m L^2/12``
about the centroid) and every revolute axis is +z.
"""
from __future__ import annotations

from functools import partial

import numpy as np

import kic
from kic.errors import ClosureError, Status

from ._common import composite, gravity_magnitude, length, mass, rod_inertia, translation, vector3

__all__ = ["five_bar", "FiveBarGeometry", "FIVE_BAR_HOME", "StewartGeometry", "four_bar",
           "slider_crank", "bricard", "stewart_platform", "redundant_planar_arm",
           "two_arm_object", "five_bar_designs", "five_bar_task", "FiveBarTask",
           "stewart_designs"]


def _rod_body(mech, name, m, L, extra=()):
    """A uniform rod along body x from 0 to L, plus point masses (m, x)."""
    parts = [(m, np.array([L / 2, 0.0, 0.0]), rod_inertia(m, L, 0))]
    parts += [(mp, np.array([x, 0.0, 0.0]), np.zeros((3, 3))) for mp, x in extra]
    M, c, I = composite(parts)
    mech.add_body(name, mass=M, com=c, inertia=I)


def _circle_meet(A, B, ra, rb, left=True, what="loop", strict=True):
    """Points at distance ra from A and rb from B (batched), left of A -> B; NaN
    where the circles do not meet, or a ClosureError when ``strict``."""
    d = B - A
    L = np.hypot(d[..., 0], d[..., 1])
    tol = 1e-12 * (ra + rb)
    out = (L > ra + rb + tol) | (L < abs(ra - rb) - tol) | (L == 0)
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


def _angle(v):
    return np.arctan2(v[..., 1], v[..., 0])


def _wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


# --------------------------------------------------------------- five-bar
_FIVE_BAR_JOINTS = ("crank1", "crank2", "elbow1", "elbow2", "tip")
#: the conventional home pose of the five-bar (crank angles, rad): the reference
#: when it lies in the requested mode and is regular (see :func:`five_bar`)
FIVE_BAR_HOME = (np.pi / 2 + 0.3, np.pi / 2 - 0.3)
_REGULAR = 0.05          # min |sin| of the passive joints for the home pose to serve


def _sign(name: str, v) -> int:
    if v not in (1, -1) or isinstance(v, bool):
        raise kic.ModelError(f"five_bar: {name} must be +1 or -1, got {v!r}")
    return int(v)


def _five_bar_mode(elbows, tip_side) -> tuple[int, int, int]:
    try:
        e1, e2 = elbows
    except (TypeError, ValueError) as exc:
        raise kic.ModelError(f"five_bar: elbows must be a pair of signs (+1 or -1), "
                             f"got {elbows!r}") from exc
    return _sign("elbows[0]", e1), _sign("elbows[1]", e2), _sign("tip_side", tip_side)


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
    of the three passive joints, 0 at either.
    """

    joints = _FIVE_BAR_JOINTS

    def __init__(self, base: float, crank1: float, crank2: float, coupler1: float,
                 coupler2: float, elbows=(-1, 1), tip_side: int = 1) -> None:
        self.base, self.crank1, self.crank2 = float(base), float(crank1), float(crank2)
        self.coupler1, self.coupler2 = float(coupler1), float(coupler2)
        *self.elbows, self.tip_side = _five_bar_mode(elbows, tip_side)
        self.elbows = tuple(self.elbows)

    @property
    def mode(self) -> tuple[int, int, int]:
        """(elbow1, elbow2, tip side) of this geometry's defaults."""
        return (*self.elbows, self.tip_side)

    def __repr__(self) -> str:
        return (f"FiveBarGeometry(base={self.base}, crank1={self.crank1}, crank2="
                f"{self.crank2}, coupler1={self.coupler1}, coupler2={self.coupler2}, "
                f"elbows={self.elbows}, tip_side={self.tip_side})")

    def _pivots(self):
        return np.zeros(2), np.array([self.base, 0.0])

    def _tips(self, cranks):
        O1, O2 = self._pivots()
        c = np.asarray(cranks, float)
        A1 = O1 + self.crank1 * np.stack([np.cos(c[..., 0]), np.sin(c[..., 0])], -1)
        A2 = O2 + self.crank2 * np.stack([np.cos(c[..., 1]), np.sin(c[..., 1])], -1)
        return A1, A2

    @staticmethod
    def _points(x, what: str) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.ndim == 0 or x.shape[-1] != 2:
            raise kic.ModelError(f"{what} must have shape (..., 2), got {x.shape}")
        return x

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
        x = self._points(tip, "tip")
        e1, e2 = self.elbows if elbows is None else _five_bar_mode(elbows, 1)[:2]
        side = self.tip_side if tip_side is None else tip_side
        if side not in (-1, 0, 1):
            raise kic.ModelError(f"tip_side must be +1, -1 or 0 (no check), got {side!r}")
        out = []
        reach = np.ones(x.shape[:-1], bool)
        for O, l, k, e in zip(self._pivots(), (self.crank1, self.crank2),
                              (self.coupler1, self.coupler2), (e1, e2)):
            d = x - O
            r = np.hypot(d[..., 0], d[..., 1])
            with np.errstate(divide="ignore", invalid="ignore"):
                c = (l * l + r * r - k * k) / (2 * l * r)
            ok = np.abs(c) <= 1.0 + 1e-12
            reach &= ok & (r > 0)
            out.append(_wrap(np.arctan2(d[..., 1], d[..., 0])
                             - e * np.arccos(np.clip(c, -1.0, 1.0))))
        cranks = np.stack(out, -1)
        status = np.where(reach, int(Status.OK), int(Status.UNASSEMBLABLE))
        if side:
            A1, A2 = self._tips(cranks)
            s = _cross(A2 - A1, x - A1)
            status = np.where(reach & (np.sign(s) != side), int(Status.OTHER_MODE), status)
        cranks = np.where((status == Status.OK)[..., None], cranks, np.nan)
        return cranks, status

    def forward(self, cranks, tip_side=None):
        """Tip positions C (..., 2) (m) at crank angles (..., 2) (rad), on the side
        ``tip_side`` (default :attr:`tip_side`) of A1 -> A2; returns
        ``(tip, status)``, NaN and ``Status.UNASSEMBLABLE`` where the couplers do
        not reach each other."""
        c = self._points(cranks, "cranks")
        side = self.tip_side if tip_side is None else _sign("tip_side", tip_side)
        A1, A2 = self._tips(c)
        C = _circle_meet(A1, A2, self.coupler1, self.coupler2, left=side > 0,
                         what="five-bar loop", strict=False)
        ok = np.all(np.isfinite(C), axis=-1)
        return C, np.where(ok, int(Status.OK), int(Status.UNASSEMBLABLE))

    def joint_values(self, cranks, tip_side=None) -> np.ndarray:
        """All five joint values (..., 5) (rad) in the order of :attr:`joints`
        at crank angles (..., 2), on ``tip_side``; NaN where not assemblable."""
        C, _ = self.forward(cranks, tip_side)
        return self._joints_at(np.asarray(cranks, float), C)

    def _joints_at(self, cranks, C) -> np.ndarray:
        A1, A2 = self._tips(cranks)
        p1, p2 = _angle(C - A1), _angle(C - A2)
        return np.stack([cranks[..., 0], cranks[..., 1], _wrap(p1 - cranks[..., 0]),
                         _wrap(p2 - cranks[..., 1]), _wrap(p2 - p1)], -1)

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
        s = np.sign(np.sin(self._passive(phi, names)))
        return np.where(np.isnan(s), 0, s).astype(int)

    def regularity(self, phi, names=None) -> np.ndarray:
        """Smallest ``|sin|`` of the passive joints (...) (dimensionless, in
        [0, 1]): 0 at a type I (an elbow straight) or type II (couplers aligned)
        singularity.  A cheap, scale-free screen; :mod:`kic.indices` has the
        conditioning indices proper."""
        return np.min(np.abs(np.sin(self._passive(phi, names))), axis=-1)

    def inverse_rates(self, cranks, tip, tip_rate, tip_acceleration=None):
        """Crank rates (and accelerations) for a tip motion (closed form).

        Differentiating ``|C - A_i(theta_i)|^2 = k_i^2`` with ``e_i = C - A_i``,
        ``u_i = (cos theta_i, sin theta_i)``, ``n_i = (-sin theta_i, cos theta_i)``::

            theta_i'  = (e_i . C') / (l_i e_i . n_i)
            theta_i'' = (|e_i'|^2 + e_i . C'' + l_i (e_i . u_i) theta_i'^2) / (l_i e_i . n_i)

        with ``e_i' = C' - l_i n_i theta_i'``; infinite at a type I singularity
        (``e_i . n_i = 0``).

        Parameters
        ----------
        cranks, tip, tip_rate, tip_acceleration : array_like (..., 2)
            Crank angles (rad) reaching ``tip`` (m), tip velocity (m/s) and
            acceleration (m/s^2).

        Returns
        -------
        qd : ndarray (..., 2)
            Crank rates (rad/s); with ``tip_acceleration`` also
        qdd : ndarray (..., 2)
            Crank accelerations (rad/s^2).
        """
        c = self._points(cranks, "cranks")
        x, xd = self._points(tip, "tip"), self._points(tip_rate, "tip_rate")
        xdd = None if tip_acceleration is None else self._points(tip_acceleration,
                                                                 "tip_acceleration")
        A1, A2 = self._tips(c)
        qd, qdd = [], []
        with np.errstate(divide="ignore", invalid="ignore"):
            for i, (A, l) in enumerate(((A1, self.crank1), (A2, self.crank2))):
                th = c[..., i]
                u = np.stack([np.cos(th), np.sin(th)], -1)
                n = np.stack([-np.sin(th), np.cos(th)], -1)
                e = x - A
                den = l * np.sum(e * n, -1)
                w = np.sum(e * xd, -1) / den
                qd.append(w)
                if xdd is not None:
                    ed = xd - l * n * w[..., None]
                    qdd.append((np.sum(ed * ed, -1) + np.sum(e * xdd, -1)
                                + l * np.sum(e * u, -1) * w * w) / den)
        if xdd is None:
            return np.stack(qd, -1)
        return np.stack(qd, -1), np.stack(qdd, -1)

    def reference_cranks(self, elbows=(-1, 1), tip_side=None, home=FIVE_BAR_HOME,
                         grid: int = 96) -> np.ndarray:
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
        side = _sign("tip_side", self.tip_side if tip_side is None else tip_side)
        want = None if elbows is None else np.array(_five_bar_mode(elbows, side))

        def fits(phi):
            m = self.modes(phi)
            if want is None:
                return (m[..., 2] == side) & np.all(m[..., :2] != 0, -1)
            return np.all(m == want, -1)

        if home is not None:
            h = _finite_pair("home", home)
            phi = self.joint_values(h, side)
            if fits(phi) and self.regularity(phi) >= _REGULAR:
                return h
        for n in (grid, 8 * grid):
            t = np.linspace(-np.pi, np.pi, n, endpoint=False) + np.pi / n
            cr = np.stack(np.meshgrid(t, t, indexing="ij"), -1).reshape(-1, 2)
            phi = self.joint_values(cr, side)
            score = np.where(fits(phi), self.regularity(phi), 0.0)
            k = int(np.argmax(score))
            if score[k] > 0:
                return cr[k]
        if np.all(np.isnan(phi[..., 2:])):
            raise kic.ModelError("five_bar: the loop closes nowhere (the longest of base, "
                                 f"cranks and couplers must be shorter than the sum of the "
                                 f"others): {self!r}")
        raise kic.ModelError(f"five_bar: no configuration in the mode elbows="
                             f"{tuple(int(v) for v in want[:2])}, "
                             f"tip_side={side} exists for {self!r}; choose another mode")


def _finite_pair(name: str, value) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise kic.ModelError(f"{name} must be two finite angles (rad), got {value!r}") from exc
    if v.shape != (2,) or not np.all(np.isfinite(v)):
        raise kic.ModelError(f"{name} must be two finite angles (rad), got {value!r}")
    return v


def _cross(a, b):
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def five_bar(base=0.2, crank1=0.25, crank2=0.25, coupler1=0.35, coupler2=0.35,
             m_crank1=1.0, m_crank2=1.0, m_coupler1=0.8, m_coupler2=0.8, m_tip=0.5,
             g=9.81, branch: str | None = None, *, elbows=None, tip_side: int | None = None,
             mode=None, coordinates: str = "cranks", home=None) -> kic.ClosedModel:
    """Planar five-bar linkage driven at both cranks.

    Crank 1 pivots at (0, 0), crank 2 at (``base``, 0) (m); coupler 1 joins the
    tip A1 of crank 1 to the closing revolute C, coupler 2 joins the tip A2 of
    crank 2 to C.  ``m_tip`` (kg) is a point mass on coupler 1 at C.

    Parameters
    ----------
    base, crank1, crank2, coupler1, coupler2 : float
        Lengths (m).
    m_crank1, m_crank2, m_coupler1, m_coupler2, m_tip : float
        Masses (kg).
    g : float
        Gravity (m/s^2) along -y.
    branch : {"up", "down"}, optional
        Deprecated alias of ``tip_side`` (+1 / -1); kept working.
    elbows : (int, int), optional
        Working mode (+1/-1 each, :class:`FiveBarGeometry`): the elbows of
        the reference configuration and the default of
        ``model.geometry.inverse``.  By default those of the reference found
        on the tip side (with the default dimensions (-1, +1): elbows out, the
        tip above the base).
    tip_side : int, optional
        Assembly mode: +1 (default), C to the left of the directed line
        A1 -> A2; -1 to the right.
    mode : (int, int, int), optional
        ``(elbow1, elbow2, tip_side)`` in one argument (instead of the two above).
    coordinates : {"cranks", "tip"}
        The model's coordinates: the crank angles (default), or the tip C
        (``kic.PointPosition`` on coupler 1, coordinates ``"tip.x"``,
        ``"tip.y"``, m) with the closed-form inverse kinematics in ``elbows``
        as the position solver's guess.
    home : (float, float), optional
        Crank angles (rad) of the reference configuration; it must be in the
        mode.  By default the reference is found from the mode
        (:meth:`FiveBarGeometry.reference_cranks`): the conventional home
        pose :data:`FIVE_BAR_HOME` = (pi/2 + 0.3, pi/2 - 0.3) when it is in the
        mode and regular, else the most regular configuration in the mode.

    Returns
    -------
    kic.ClosedModel
        Coordinates q = (theta1, theta2), the crank angles from +x (joints
        ``"crank1"``, ``"crank2"``), or the tip; other joints ``"elbow1"``,
        ``"elbow2"`` (crank-coupler, relative) and ``"tip"`` (coupler 1 -
        coupler 2).  Bodies ``"crank1"``, ``"crank2"``, ``"coupler1"``,
        ``"coupler2"``.  ``model.geometry`` is the :class:`FiveBarGeometry`
        (closed-form inverse and forward kinematics, modes); in crank
        coordinates ``model.mode == (-tip_side,)``.

    Raises
    ------
    kic.ModelError
        Invalid dimensions, or no configuration of the linkage in the mode.

    Notes
    -----
    The spanning tree is the two crank-coupler chains; the closing revolute
    ``"tip"`` is cut, and its closure (planar: 3 of 6 rows) fixes the three
    passive joints.  The crank model is singular where the two couplers are
    collinear (type II); the tip model where a coupler and its crank are
    (type I).  In crank coordinates the elbows are not part of the model's
    mode: every crank pair has its elbows, which ``geometry.modes`` reports.

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> fb = mechanisms.five_bar()
    >>> q = np.array([np.pi / 2 + 0.3, np.pi / 2 - 0.3])
    >>> tau = fb.inverse_dynamics(q, [0.0, 0.0], [0.0, 0.0])    # holding torques
    >>> bool(np.allclose(tau, fb.dynamics(q).gravity_load))
    True
    >>> crossed = mechanisms.five_bar(mode=(1, -1, -1))
    >>> q, status = crossed.geometry.inverse([0.1, 0.45])
    >>> crossed.geometry.modes(crossed.assemble(q)).tolist()
    [1, -1, -1]
    """
    b = "five_bar"
    base, l1, l2, k1, k2 = (length(b, n, v) for n, v in (("base", base), ("crank1", crank1),
                            ("crank2", crank2), ("coupler1", coupler1), ("coupler2", coupler2)))
    m1, m2, n1, n2, mt = (mass(b, n, v) for n, v in (
        ("m_crank1", m_crank1), ("m_crank2", m_crank2), ("m_coupler1", m_coupler1),
        ("m_coupler2", m_coupler2), ("m_tip", m_tip)))
    g = gravity_magnitude(b, "g", g)
    if branch not in (None, "up", "down"):
        raise kic.ModelError(f"{b}: branch must be 'up' or 'down', got {branch!r}")
    sides = {s for s in (None if branch is None else 1 if branch == "up" else -1, tip_side,
                         None if mode is None else _mode_tuple(mode)[2]) if s is not None}
    if len(sides) > 1:
        raise kic.ModelError(f"{b}: branch={branch!r}, tip_side={tip_side!r} and mode="
                             f"{mode!r} name different tip sides")
    if mode is not None:
        if elbows is not None and tuple(elbows) != _mode_tuple(mode)[:2]:
            raise kic.ModelError(f"{b}: elbows={elbows!r} and mode={mode!r} differ")
        elbows = _mode_tuple(mode)[:2]
    side = sides.pop() if sides else 1
    want = None if elbows is None else _five_bar_mode(elbows, side)[:2]
    if coordinates not in ("cranks", "tip"):
        raise kic.ModelError(f"{b}: coordinates must be 'cranks' or 'tip', got {coordinates!r}")
    geometry = FiveBarGeometry(base, l1, l2, k1, k2, want or (-1, 1), side)
    if home is None:
        q0 = geometry.reference_cranks(want, side)
    else:
        q0 = _finite_pair(f"{b}: home", home)
    phi0 = geometry.joint_values(q0)
    found = tuple(int(v) for v in geometry.modes(phi0))
    if found[2] != side or 0 in found or (want is not None and found[:2] != want):
        raise kic.ModelError(f"{b}: home {q0.tolist()} rad is in the mode {found}, not the "
                             f"requested (elbow1, elbow2, tip_side) = "
                             f"{(want or ('any', 'any')) + (side,)}")
    geometry = FiveBarGeometry(base, l1, l2, k1, k2, found[:2], side)
    mech = kic.Mechanism(gravity=(0.0, -g, 0.0), name="five-bar")
    _rod_body(mech, "crank1", m1, l1)
    _rod_body(mech, "crank2", m2, l2)
    _rod_body(mech, "coupler1", n1, k1, extra=[(mt, k1)])
    _rod_body(mech, "coupler2", n2, k2)
    mech.add_joint("crank1", "R", "ground", "crank1")
    mech.add_joint("crank2", "R", "ground", "crank2", origin=translation(base))
    mech.add_joint("elbow1", "R", "crank1", "coupler1", origin=translation(l1))
    mech.add_joint("elbow2", "R", "crank2", "coupler2", origin=translation(l2))
    mech.add_joint("tip", "R", "coupler1", "coupler2", origin=translation(k1),
                   child_origin=translation(k2))
    ref = dict(zip(_FIVE_BAR_JOINTS, phi0))
    if coordinates == "cranks":
        guess = partial(_five_bar_guess, l1=l1, l2=l2, base=base, k1=k1, k2=k2, up=side > 0)
        model = mech.model(["crank1", "crank2"], reference=ref, guess=guess, name="five-bar")
    else:
        guess = partial(_five_bar_tip_guess, geometry=geometry)
        model = mech.model([kic.PointPosition("coupler1", (k1, 0.0, 0.0), prefix="tip.")],
                           reference=ref, guess=guess, name="five-bar in tip coordinates")
        model.actuators = ["crank1", "crank2"]
    model.geometry = geometry
    return model


def _mode_tuple(mode) -> tuple:
    try:
        e1, e2, s = mode
    except (TypeError, ValueError) as exc:
        raise kic.ModelError(f"five_bar: mode must be (elbow1, elbow2, tip_side), signs +1 "
                             f"or -1, got {mode!r}") from exc
    return _five_bar_mode((e1, e2), s)


def _five_bar_guess(q, l1, l2, base, k1, k2, up, strict=False):
    """All joint values of the five-bar at crank angles q (n, 2) on a branch
    (closed form; NaN where the loop does not close)."""
    q = np.asarray(q, float).reshape(-1, 2)
    A1 = l1 * np.stack([np.cos(q[:, 0]), np.sin(q[:, 0])], -1)
    A2 = np.array([base, 0.0]) + l2 * np.stack([np.cos(q[:, 1]), np.sin(q[:, 1])], -1)
    C = _circle_meet(A1, A2, k1, k2, left=up, what="five-bar loop", strict=strict)
    p1, p2 = _angle(C - A1), _angle(C - A2)
    return np.stack([q[:, 0], q[:, 1], _wrap(p1 - q[:, 0]), _wrap(p2 - q[:, 1]),
                     _wrap(p2 - p1)], -1)


def _five_bar_tip_guess(x, geometry):
    """Joint values (by name) of the five-bar with its tip at x (n, 2): the
    closed-form inverse kinematics in the geometry's elbows (any tip side: the
    model's mode check reports the other one); NaN where out of reach."""
    x = np.asarray(x, float).reshape(-1, 2)
    cranks, _ = geometry.inverse(x, tip_side=0)
    phi = geometry._joints_at(cranks, x)
    out = dict(zip(_FIVE_BAR_JOINTS, phi.T))
    out["tip.x"], out["tip.y"] = x[:, 0], x[:, 1]
    return out


# --------------------------------------------------------------- four-bar
def four_bar(ground=0.3, crank=0.1, coupler=0.35, rocker=0.25, m_crank=0.5, m_coupler=1.0,
             m_rocker=0.8, g=9.81, branch: str = "up", coordinate="crank") -> kic.ClosedModel:
    """Planar four-bar linkage (crank-rocker with the default dimensions).

    Crank pivot O2 = (0, 0), rocker pivot O4 = (``ground``, 0) (m); A is the
    crank tip, B the coupler-rocker joint.

    Parameters
    ----------
    ground, crank, coupler, rocker : float
        Lengths (m).
    m_crank, m_coupler, m_rocker : float
        Masses (kg).
    g : float
        Gravity (m/s^2) along -y.
    branch : {"up", "down"}
        B to the left of (above) the directed line A -> O4, or right.
    coordinate : str or kic.PointPosition
        ``"crank"`` (default, the crank angle from +x) or any other joint
        name, or a coordinate object.

    Returns
    -------
    kic.ClosedModel
        Joints ``"crank"``, ``"A"``, ``"B"``, ``"rocker"``; bodies
        ``"crank"``, ``"coupler"``, ``"rocker"``.

    Notes
    -----
    Grashof crank-rocker with the defaults (s + l < p + q).  The loop is cut
    at ``"B"``.

    Examples
    --------
    >>> import mechanisms
    >>> fb = mechanisms.four_bar()
    >>> fb.dof, fb.coordinate_names
    (1, ['crank'])
    """
    b = "four_bar"
    d, a, c, r = (length(b, n, v) for n, v in (("ground", ground), ("crank", crank),
                                              ("coupler", coupler), ("rocker", rocker)))
    ma, mc, mr = (mass(b, n, v) for n, v in (("m_crank", m_crank), ("m_coupler", m_coupler),
                                             ("m_rocker", m_rocker)))
    g = gravity_magnitude(b, "g", g)
    mech = kic.Mechanism(gravity=(0.0, -g, 0.0), name="four-bar")
    _rod_body(mech, "crank", ma, a)
    _rod_body(mech, "coupler", mc, c)
    _rod_body(mech, "rocker", mr, r)
    mech.add_joint("crank", "R", "ground", "crank")
    mech.add_joint("A", "R", "crank", "coupler", origin=translation(a))
    mech.add_joint("rocker", "R", "ground", "rocker", origin=translation(d))
    mech.add_joint("B", "R", "coupler", "rocker", origin=translation(c),
                   child_origin=translation(r))
    solve = partial(_four_bar_guess, a=a, c=c, r=r, d=d, up=branch == "up")
    ref = dict(zip(["crank", "A", "rocker", "B"], solve(np.array([1.0]), strict=True)[0]))
    guess = solve if coordinate == "crank" else None
    return mech.model([coordinate], reference=ref, guess=guess, name="four-bar")


def _four_bar_guess(theta, a, c, r, d, up, strict=False):
    """All joint values of the four-bar at crank angles theta (n,) on a branch."""
    theta = np.asarray(theta, float).reshape(-1)
    A = a * np.stack([np.cos(theta), np.sin(theta)], -1)
    B = _circle_meet(A, np.broadcast_to([d, 0.0], A.shape), c, r, left=up,
                     what="four-bar loop", strict=strict)
    pc, pr = _angle(B - A), _angle(B - np.array([d, 0.0]))
    return np.stack([theta, _wrap(pc - theta), pr, _wrap(pr - pc)], -1)


# ----------------------------------------------------------- slider-crank
def slider_crank(crank=0.1, rod=0.3, offset=0.0, m_crank=0.5, m_rod=1.0, m_slider=2.0,
                 g=9.81) -> kic.ClosedModel:
    """Offset slider-crank: crank at (0, 0), slider pin on the line y = ``offset``.

    Parameters
    ----------
    crank, rod : float
        Lengths (m).
    offset : float
        Height of the slider line (m), may be negative.
    m_crank, m_rod, m_slider : float
        Masses (kg); the slider is a point mass that does not rotate.
    g : float
        Gravity (m/s^2) along -y.

    Returns
    -------
    kic.ClosedModel
        q = crank angle (joint ``"crank"``); joints ``"A"`` (crank-rod),
        ``"B"`` (rod-slider), ``"slide"`` (prismatic along +x, value = x of B).
        Branch: the slider to the right of the crank tip.

    Notes
    -----
    The loop is cut at the slider pin ``"B"``; the slider is carried by the
    prismatic joint ``"slide"`` along the line y = offset.

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> sc = mechanisms.slider_crank()
    >>> round(float(sc.assemble([0.0])[sc.phi_names.index("slide")]), 12)
    0.4
    """
    b = "slider_crank"
    a, L = length(b, "crank", crank), length(b, "rod", rod)
    from ._common import finite
    e = finite(b, "offset", offset)
    ma, mr, ms = (mass(b, n, v) for n, v in (("m_crank", m_crank), ("m_rod", m_rod),
                                             ("m_slider", m_slider)))
    g = gravity_magnitude(b, "g", g)
    if L <= a + abs(e):
        raise kic.ModelError(f"{b}: rod ({L} m) must be longer than crank + |offset| "
                             f"({a + abs(e)} m) for a full-turn crank")
    mech = kic.Mechanism(gravity=(0.0, -g, 0.0), name="slider-crank")
    _rod_body(mech, "crank", ma, a)
    _rod_body(mech, "rod", mr, L)
    mech.add_body("slider", mass=ms)
    mech.add_joint("crank", "R", "ground", "crank")
    mech.add_joint("A", "R", "crank", "rod", origin=translation(a))
    mech.add_joint("slide", "P", "ground", "slider", axis=(1.0, 0.0, 0.0),
                   origin=translation(0.0, e))
    mech.add_joint("B", "R", "rod", "slider", origin=translation(L))

    guess = partial(_slider_crank_guess, a=a, L=L, e=e)
    ref = dict(zip(["crank", "A", "slide", "B"], guess([0.5])[0]))
    return mech.model(["crank"], reference=ref, guess=guess, name="slider-crank")


def _slider_crank_guess(q, a, L, e):
    """All joint values of the slider-crank at crank angles q (n,) (NaN where the
    rod cannot reach the slider's line)."""
    th = np.asarray(q, float).reshape(-1)
    Ay, Ax = a * np.sin(th), a * np.cos(th)
    with np.errstate(invalid="ignore"):
        phi_rod = np.arcsin((e - Ay) / L)
    xB = Ax + L * np.cos(phi_rod)
    return np.stack([th, _wrap(phi_rod - th), xB, -phi_rod], -1)


# --------------------------------------------------------------- Bricard
def bricard(a=0.3, m=1.0, g=9.81) -> kic.ClosedModel:
    """Bricard's orthogonal 6R linkage: six equal links of length ``a`` (m),
    twists alternating +90 and -90 degrees, zero joint offsets.

    Its closure is structurally rank deficient (rank 5 of 6 rows at every
    configuration) and it moves with one degree of freedom; kic keeps five
    independent row combinations.

    Parameters
    ----------
    a : float
        Length of every link (m), along the common normals.
    m : float
        Mass of each moving link (kg), a uniform rod.
    g : float
        Gravity (m/s^2) along -z.

    Returns
    -------
    kic.ClosedModel
        q = the angle of joint ``"j1"`` (at the ground link); joints
        ``"j1"`` .. ``"j6"``, moving bodies ``"b1"`` .. ``"b5"``.

    Notes
    -----
    Grubler's count gives 0 (a 6R loop is generically rigid); the actual
    mobility, from the rank of the closure Jacobian, is 1.  The reduction of
    the rank-deficient closure is re-computed at every configuration from the
    closure Jacobian's singular vectors.

    Examples
    --------
    >>> import mechanisms
    >>> br = mechanisms.bricard()
    >>> br.mobility, br.mechanism.grubler()
    (1, 0)
    """
    b = "bricard"
    a = length(b, "a", a)
    m = mass(b, "m", m)
    g = gravity_magnitude(b, "g", g)
    mech = kic.Mechanism(gravity=(0.0, 0.0, -g), name="Bricard 6R")
    for k in range(1, 6):
        _rod_body(mech, f"b{k}", m, a)
    twist = [np.pi / 2, -np.pi / 2] * 3
    bodies = ["ground", "b1", "b2", "b3", "b4", "b5", "ground"]
    link = lambda k: _rx4(twist[k]) @ translation(a)         # noqa: E731  (Craig: Rx Tx)
    for k in range(6):
        origin = np.eye(4) if k == 0 else link(k - 1)
        child = link(5) if k == 5 else None
        mech.add_joint(f"j{k + 1}", "R", bodies[k], bodies[k + 1], origin=origin,
                       child_origin=None if child is None else np.linalg.inv(child))
    # near a symmetric assembly (j1 = j3 = j5, j2 = j4 = j6); Newton refines it
    ref = {f"j{k}": (-1.3547 if k % 2 else -1.7483) for k in range(1, 7)}
    return mech.model(["j1"], reference=ref, name="Bricard 6R")


# ------------------------------------------------------- Stewart platform
def stewart_platform(rb=0.5, rp=0.3, base_half_angle=np.radians(15.0),
                     plat_half_angle=np.radians(45.0), h0=0.6, m_plat=10.0,
                     I_plat=(0.3, 0.3, 0.5), plat_com=(0.0, 0.0, 0.05), m_cyl=2.0,
                     cyl_com=0.2, I_cyl=(0.02, 0.02, 0.002), m_rod=1.0, rod_com=-0.15,
                     I_rod=(0.01, 0.01, 0.001), g=9.81, stroke=None) -> kic.ClosedModel:
    """Gough-Stewart platform, 6-UPS, in platform coordinates.

    Base anchors at radius ``rb`` (m) and angles ``120 k -/+ base_half_angle``
    (rad), platform anchors at radius ``rp`` and ``120 k -/+ plat_half_angle``
    (k = 0, 1, 2; leg i joins base anchor i to platform anchor i, in the
    order k=0 (-), k=0 (+), k=1 (-), ...).  Each leg: a U joint at the base
    (first axis the base x, second the rotated y), a prismatic actuator whose
    coordinate is the leg length from the U centre to the S centre, and an S
    joint at the platform.  The cylinder moves with the U (centroid
    ``cyl_com`` along the leg from the U centre, inertia diagonal in a leg
    frame with z along the leg); the rod moves with the actuator (centroid
    ``rod_com`` along the leg from the S centre).

    Parameters
    ----------
    rb, rp : float
        Radii of the base and platform anchor circles (m).
    base_half_angle, plat_half_angle : float
        Half the angular spacing of each anchor pair (rad, in [0, pi/3); the
        defaults are 15 and 45 degrees).
    h0 : float
        Nominal platform height (m).
    m_plat, I_plat, plat_com : float, (3,) or (3, 3), (3,)
        Platform mass (kg), inertia about its centroid in platform axes
        (kg m^2), centroid in the platform frame (m).
    m_cyl, cyl_com, I_cyl : float, float, (3,)
        Cylinder mass, centroid distance along the leg from the U centre,
        principal inertia in the leg frame.
    m_rod, rod_com, I_rod : float, float, (3,)
        Rod mass, centroid distance along the leg from the S centre (negative:
        towards the base), principal inertia in the leg frame.
    g : float
        Gravity (m/s^2) along -z.
    stroke : (float, float), optional
        Shortest and longest leg length (m): the range of each actuator
        ``"leg{i}.p"`` (``model.limits``); ``model.assemble`` and
        ``model.geometry.status`` report poses outside as
        ``kic.Status.OUTSIDE_LIMITS``.

    Returns
    -------
    kic.ClosedModel
        Coordinates q = (x, y, z, yaw, pitch, roll) of the platform frame (m,
        rad), ``R = Rz(yaw) Ry(pitch) Rx(roll)``, nominal (0, 0, h0, 0, 0, 0).
        Joints ``"leg{i}.u1"``, ``"leg{i}.u2"``, ``"leg{i}.p"`` (actuator) and
        the spherical joint ``"leg{i}.s"`` (closed as a point constraint, so its
        angles are not coordinates of the model); bodies ``"platform"``,
        ``"leg{i}.cyl"``, ``"leg{i}.rod"``.  ``model.actuators`` lists the
        six actuated joints; ``model.actuator_model()`` gives the model in
        the leg lengths; ``model.geometry`` is the :class:`StewartGeometry`
        (``leg_lengths(pose)``, the inverse kinematics, batched).

    Notes
    -----
    The platform pose is a virtual P-P-P-R-R-R chain from the ground, so the
    platform hangs on it in the spanning tree and each leg is cut at its S
    joint, which closes as a point constraint: six independent 3x3 closures in
    the U and P joints of each leg (docs/theory.md, parallel mechanisms).  The first
    guess of the position solver is the legs' closed-form inverse kinematics.

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> sp = mechanisms.stewart_platform()
    >>> f = sp.actuator_loads([0, 0, 0.6, 0, 0, 0], np.zeros(6), np.zeros(6), sp.actuators)
    >>> bool(np.allclose(f, f[0]))          # symmetric pose at rest: equal leg forces
    True
    """
    bld = "stewart_platform"
    rb, rp, h0 = length(bld, "rb", rb), length(bld, "rp", rp), length(bld, "h0", h0)
    from ._common import finite
    ba, pa = finite(bld, "base_half_angle", base_half_angle), finite(bld, "plat_half_angle",
                                                                     plat_half_angle)
    for name, v in (("base_half_angle", ba), ("plat_half_angle", pa)):
        if not 0.0 <= v < np.pi / 3:
            raise kic.ModelError(
                f"{bld}: {name} = {v!r} rad; a half angle must lie in [0, pi/3) rad (below 60 "
                "degrees, so that the three anchor pairs stay distinct); angles are in "
                f"radians, e.g. np.radians({v!r}) if {v!r} was meant in degrees")
    m_plat, m_cyl, m_rod = (mass(bld, n, v) for n, v in (("m_plat", m_plat), ("m_cyl", m_cyl),
                                                          ("m_rod", m_rod)))
    I_plat, I_cyl, I_rod = (np.diag(vector3(bld, n, v)) if np.ndim(v) == 1 else
                            np.asarray(v, float) for n, v in (("I_plat", I_plat),
                                                              ("I_cyl", I_cyl),
                                                              ("I_rod", I_rod)))
    plat_com = vector3(bld, "plat_com", plat_com)
    cyl_com, rod_com = float(cyl_com), float(rod_com)
    g = gravity_magnitude(bld, "g", g)
    angles_b = np.array([np.radians(120 * k) + s * ba for k in range(3) for s in (-1, 1)])
    angles_p = np.array([np.radians(120 * k) + s * pa for k in range(3) for s in (-1, 1)])
    B = np.stack([rb * np.cos(angles_b), rb * np.sin(angles_b), np.zeros(6)], -1)
    P = np.stack([rp * np.cos(angles_p), rp * np.sin(angles_p), np.zeros(6)], -1)
    geometry = StewartGeometry(B, P, stroke)
    mech = kic.Mechanism(gravity=(0.0, 0.0, -g), name="Stewart platform")
    mech.add_body("platform", mass=m_plat, com=plat_com, inertia=I_plat)
    for i in range(6):
        mech.add_body(f"leg{i}.cyl", mass=m_cyl, com=(0, 0, cyl_com), inertia=I_cyl)
        mech.add_body(f"leg{i}.rod", mass=m_rod, com=(0, 0, rod_com), inertia=I_rod)
        mech.add_joint(f"leg{i}.u", "U", "ground", f"leg{i}.cyl", origin=translation(*B[i]),
                       axes=[(1, 0, 0), (0, 1, 0)])
        mech.add_joint(f"leg{i}.p", "P", f"leg{i}.cyl", f"leg{i}.rod", axis=(0, 0, 1),
                       limits=geometry.stroke)     # the leg length's range (None: none)
        mech.add_joint(f"leg{i}.s", "S", f"leg{i}.rod", "platform",
                       child_origin=translation(*P[i]))

    guess = partial(_stewart_guess, B=B, P=P)

    q0 = np.array([0.0, 0.0, h0, 0.0, 0.0, 0.0])
    ref = {k: float(v[0]) for k, v in guess(q0).items() if k.startswith("leg")}
    model = mech.model([kic.BodyPose("platform")], reference=ref, guess=guess,
                       name="Stewart platform")
    model.actuators = [f"leg{i}.p" for i in range(6)]
    model.anchors = (B, P)
    model.geometry = geometry
    return model


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
        R = _rz(q[..., 3]) @ _ry(q[..., 4]) @ _rx(q[..., 5])
        return (q[..., None, :3] + np.einsum("...ij,lj->...li", R, self.platform_anchors)
                - self.base_anchors)

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


def _stewart_guess(q, B, P):
    """Closed-form leg inverse kinematics: joint name -> values (n,)."""
    q = np.asarray(q, float).reshape(-1, 6)
    R = _rz(q[:, 3]) @ _ry(q[:, 4]) @ _rx(q[:, 5])                  # (n, 3, 3)
    d = q[:, None, :3] + np.einsum("nij,lj->nli", R, P) - B           # (n, 6, 3) legs
    L = np.linalg.norm(d, axis=-1)
    u = d / L[..., None]
    u2 = np.arcsin(np.clip(u[..., 0], -1, 1))
    u1 = np.arctan2(-u[..., 1], u[..., 2])
    out = {}                     # (the S joints close as points: no angles needed)
    for name, v in zip(("u1", "u2", "p"), (u1, u2, L)):
        for i in range(6):
            out[f"leg{i}.{name}"] = v[:, i]
    for name, v in zip(("x", "y", "z", "yaw", "pitch", "roll"), q.T):
        out[f"platform.{name}"] = v
    return out


def _rx4(a: float) -> np.ndarray:
    """4x4 rotation about x."""
    T = np.eye(4)
    T[:3, :3] = _rx(a)
    return T


def _rx(a):
    a = np.asarray(a, float)
    c, s, o, z = np.cos(a), np.sin(a), np.ones_like(a), np.zeros_like(a)
    return np.stack([np.stack([o, z, z], -1), np.stack([z, c, -s], -1),
                     np.stack([z, s, c], -1)], -2)


def _ry(a):
    a = np.asarray(a, float)
    c, s, o, z = np.cos(a), np.sin(a), np.ones_like(a), np.zeros_like(a)
    return np.stack([np.stack([c, z, s], -1), np.stack([z, o, z], -1),
                     np.stack([-s, z, c], -1)], -2)


def _rz(a):
    a = np.asarray(a, float)
    c, s, o, z = np.cos(a), np.sin(a), np.ones_like(a), np.zeros_like(a)
    return np.stack([np.stack([c, -s, z], -1), np.stack([s, c, z], -1),
                     np.stack([z, z, o], -1)], -2)


# ------------------------------------------------------- redundant arm
def _two_link_ik(P, l1, l2, up=True, what="arm", strict=True):
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


def _redundant_arm_guess(q, L, up):
    q = np.asarray(q, float).reshape(-1, 3)
    W = q[:, :2] - L[2] * np.stack([np.cos(q[:, 2]), np.sin(q[:, 2])], -1)
    t1, t2 = _two_link_ik(W, L[0], L[1], up, "redundant arm", strict=False)
    return np.stack([t1, t2, _wrap(q[:, 2] - t1 - t2), q[:, 0], q[:, 1], q[:, 2]], -1)


def redundant_planar_arm(l1=0.5, l2=0.4, l3=0.3, m1=2.0, m2=1.5, m3=1.0, g=9.81,
                         elbow: str = "down") -> kic.ClosedModel:
    """A planar three-link arm that positions its tip, in augmented coordinates.

    The task is the tip position (x, y); with three joints the arm is
    redundant by one.  Following the seed, the model is written in the
    augmented coordinates q = (x, y, phi), phi the absolute angle of link 3
    (a pseudo-coordinate that makes the transfer square and the model exact).

    Parameters
    ----------
    l1, l2, l3 : float
        Link lengths (m); uniform rods.
    m1, m2, m3 : float
        Link masses (kg).
    g : float
        Gravity (m/s^2) along -y.
    elbow : {"down", "up"}
        Branch of the first two links for the position solver.

    Returns
    -------
    kic.ClosedModel
        Coordinates ``"tip.x"``, ``"tip.y"``, ``"tip.yaw"`` (m, m, rad); joints
        ``"j1"``, ``"j2"``, ``"j3"`` (relative angles, the actuators); bodies
        ``"link1"``, ``"link2"``, ``"link3"`` (link 3's frame is at the tip).

    Notes
    -----
    ``model.in_coordinates(["j1", "j2", "j3"])`` is the same arm in joint
    coordinates (equal to :func:`planar_three_link`).  The task-space inertia
    ``(G I*^-1 G^T)^-1`` of the joint model equals the Schur complement of
    ``I*_qq`` with respect to phi (:func:`kic.task_inertia`).

    Examples
    --------
    >>> import numpy as np, kic, mechanisms
    >>> arm = mechanisms.redundant_planar_arm()
    >>> q = np.array([0.6, 0.5, 0.3])
    >>> I = arm.dynamics(q).I_star
    >>> schur = I[:2, :2] - np.outer(I[:2, 2], I[2, :2]) / I[2, 2]
    >>> joints = arm.in_coordinates(["j1", "j2", "j3"])
    >>> th = arm.assemble(q)[:3]
    >>> tip = joints.kinematics(th).point("link3").G[:2]
    >>> bool(np.allclose(kic.task_inertia(joints.dynamics(th).I_star, tip), schur))
    True
    """
    b = "redundant_planar_arm"
    L = [length(b, n, v) for n, v in (("l1", l1), ("l2", l2), ("l3", l3))]
    m = [mass(b, n, v) for n, v in (("m1", m1), ("m2", m2), ("m3", m3))]
    g = gravity_magnitude(b, "g", g)
    mech = kic.Mechanism(gravity=(0.0, -g, 0.0), name="redundant planar arm")
    _rod_body(mech, "link1", m[0], L[0])
    _rod_body(mech, "link2", m[1], L[1])
    mech.add_body("link3", mass=m[2], com=(-L[2] / 2, 0, 0), inertia=rod_inertia(m[2], L[2], 0))
    mech.add_joint("j1", "R", "ground", "link1")
    mech.add_joint("j2", "R", "link1", "link2", origin=translation(L[0]))
    mech.add_joint("j3", "R", "link2", "link3", origin=translation(L[1]),
                   child_origin=translation(-L[2]))
    guess = partial(_redundant_arm_guess, L=tuple(L), up=elbow == "up")

    th0 = np.array([0.4, 0.8, -0.5])           # the reference tip pose, reached on the branch
    a1, a12 = th0[0], th0[0] + th0[1]
    q0 = np.array([L[0] * np.cos(a1) + L[1] * np.cos(a12) + L[2] * np.cos(th0.sum()),
                   L[0] * np.sin(a1) + L[1] * np.sin(a12) + L[2] * np.sin(th0.sum()),
                   th0.sum()])
    ref = dict(zip(["j1", "j2", "j3"], guess(q0)[0, :3]))
    model = mech.model([kic.BodyPose("link3", ("x", "y", "yaw"), prefix="tip.")],
                       reference=ref, guess=guess, name="redundant planar arm")
    model.actuators = ["j1", "j2", "j3"]
    return model


# ------------------------------------------------ overconstrained: two arms
def _two_arm_guess(q, base, a1, a2, b1, b2, w, strict=False):
    q = np.asarray(q, float).reshape(-1, 3)
    u = np.stack([np.cos(q[:, 2]), np.sin(q[:, 2])], -1)
    GA, GB = q[:, :2] - u * w / 2, q[:, :2] + u * w / 2
    ta1, ta2 = _two_link_ik(GA, a1, a2, True, "arm A", strict)
    tb1, tb2 = _two_link_ik(GB - np.array([base, 0.0]), b1, b2, False, "arm B", strict)
    return np.stack([ta1, ta2, tb1, tb2, _wrap(q[:, 2] - ta1 - ta2),
                     _wrap(q[:, 2] - tb1 - tb2), q[:, 0], q[:, 1], q[:, 2]], -1)


def two_arm_object(base=0.6, a1=0.4, a2=0.35, b1=0.4, b2=0.35, width=0.2, m_a1=1.5,
                   m_a2=1.0, m_b1=1.5, m_b2=1.0, m_obj=2.0, g=9.81) -> kic.ClosedModel:
    """Two planar two-link arms holding one object (overconstrained actuation).

    Arm A stands at (0, 0), arm B at (``base``, 0); each tip holds one end of
    the object (a uniform bar of length ``width``) through a revolute joint.
    The closed system has three degrees of freedom (the object's pose) and
    four actuated joints: the load distribution is not unique, and the
    difference is an internal (squeeze) load along the object.

    Parameters
    ----------
    base : float
        Distance between the arm bases (m).
    a1, a2, b1, b2 : float
        Link lengths of arms A and B (m); uniform rods.
    width : float
        Length of the object between the grips (m).
    m_a1, m_a2, m_b1, m_b2, m_obj : float
        Masses (kg).
    g : float
        Gravity (m/s^2) along -y.

    Returns
    -------
    kic.ClosedModel
        Coordinates ``"object.x"``, ``"object.y"``, ``"object.yaw"`` (its
        centre and angle); ``model.actuators`` = ``["a1", "a2", "b1", "b2"]``
        (shoulder and elbow joints); grips ``"gripA"``, ``"gripB"``.

    Notes
    -----
    Use ``model.actuator_loads(q, qd, qdd, model.actuators, weights=...)`` for
    the weighted minimum-norm distribution and :func:`kic.internal_loads` on
    ``model.actuator_jacobian`` for the squeeze direction.

    Examples
    --------
    >>> import numpy as np, kic, mechanisms
    >>> duo = mechanisms.two_arm_object()
    >>> q, z = np.array([0.3, 0.45, 0.0]), np.zeros(3)
    >>> tau = duo.actuator_loads(q, z, z, duo.actuators)
    >>> G = duo.actuator_jacobian(q, duo.actuators)
    >>> bool(np.allclose(G.T @ tau, duo.inverse_dynamics(q, z, z)))
    True
    >>> kic.internal_loads(G).shape
    (4, 1)
    """
    bld = "two_arm_object"
    base, a1, a2, b1, b2, w = (length(bld, n, v) for n, v in (
        ("base", base), ("a1", a1), ("a2", a2), ("b1", b1), ("b2", b2), ("width", width)))
    ma1, ma2, mb1, mb2, mo = (mass(bld, n, v) for n, v in (
        ("m_a1", m_a1), ("m_a2", m_a2), ("m_b1", m_b1), ("m_b2", m_b2), ("m_obj", m_obj)))
    g = gravity_magnitude(bld, "g", g)
    mech = kic.Mechanism(gravity=(0.0, -g, 0.0), name="two arms and an object")
    _rod_body(mech, "armA1", ma1, a1)
    _rod_body(mech, "armA2", ma2, a2)
    _rod_body(mech, "armB1", mb1, b1)
    _rod_body(mech, "armB2", mb2, b2)
    mech.add_body("object", mass=mo, inertia=rod_inertia(mo, w, 0))
    mech.add_joint("a1", "R", "ground", "armA1")
    mech.add_joint("a2", "R", "armA1", "armA2", origin=translation(a1))
    mech.add_joint("b1", "R", "ground", "armB1", origin=translation(base))
    mech.add_joint("b2", "R", "armB1", "armB2", origin=translation(b1))
    mech.add_joint("gripA", "R", "armA2", "object", origin=translation(a2),
                   child_origin=translation(-w / 2))
    mech.add_joint("gripB", "R", "armB2", "object", origin=translation(b2),
                   child_origin=translation(w / 2))

    guess = partial(_two_arm_guess, base=base, a1=a1, a2=a2, b1=b1, b2=b2, w=w)
    q0 = np.array([base / 2, 0.45, 0.0])
    ref = dict(zip(["a1", "a2", "b1", "b2", "gripA", "gripB"],
                   guess(q0, strict=True)[0, :6]))
    model = mech.model([kic.BodyPose("object", ("x", "y", "yaw"))], reference=ref,
                       guess=guess, name="two arms and an object")
    model.actuators = ["a1", "a2", "b1", "b2"]
    return model


# ------------------------------------------------ design batches (vectorized writers)
def _design_arrays(builder: str, spec: dict) -> tuple[dict, int]:
    """Broadcast design parameters to (D,) and check them: ``spec`` maps a name to
    (value, kind) with kind "length" (> 0), "mass" (>= 0), "angle" (finite) or
    "gravity" (>= 0); the message names the parameter and the first bad design."""
    arrays = {k: np.asarray(v, dtype=float) for k, (v, _) in spec.items()}
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError as exc:
        raise kic.ModelError(f"{builder}: the design parameters do not broadcast: "
                             f"{ {k: a.shape for k, a in arrays.items()} }") from exc
    if len(shape) > 1:
        raise kic.ModelError(f"{builder}: design parameters are scalars or arrays (D,), "
                             f"got shape {shape}")
    D = shape[0] if shape else 1
    out = {}
    for k, (_, kind) in spec.items():
        a = np.broadcast_to(arrays[k], (D,)).copy()
        bad = ~np.isfinite(a)
        if kind == "length":
            bad |= ~(a > 0)
        elif kind in ("mass", "gravity"):
            bad |= ~(a >= 0)
        if bad.any():
            d = int(np.argmax(bad))
            need = {"length": "a length > 0 m", "mass": "a mass >= 0 kg",
                    "gravity": "a gravity magnitude >= 0 m/s^2", "angle": "a finite angle"}
            raise kic.ModelError(f"{builder}: {k} of design {d} is {a[d]!r}, not {need[kind]}")
        out[k] = a
    return out, D


def _check_writer(builder: str, written, plan) -> None:
    """The writer must reproduce the template model's own buffer (it relies on the
    builder's layout of joints, bodies and loops)."""
    ref = plan.args[0]
    if not np.allclose(written, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max()):
        k = int(np.argmax(np.abs(written - ref)))
        raise RuntimeError(f"{builder}: the vectorized writer no longer matches the builder "
                           f"(float buffer entry {k}: {written[k]!r} != {ref[k]!r})")


def _five_bar_joint_values(params: dict, cranks, tip=None, tip_side=1) -> np.ndarray:
    """Joint values (D, n, 5) (crank1, crank2, elbow1, elbow2, tip) of designs
    ``params`` (arrays (D,)) at crank angles (D, n, 2), with the tip C given
    (D, n, 2) or met on ``tip_side``; NaN where the loop does not close."""
    b, l1, l2, k1, k2 = (params[k][:, None] for k in ("base", "crank1", "crank2",
                                                        "coupler1", "coupler2"))
    c = np.asarray(cranks, float)
    A1 = np.stack([l1 * np.cos(c[..., 0]), l1 * np.sin(c[..., 0])], -1)
    A2 = np.stack([b + l2 * np.cos(c[..., 1]), l2 * np.sin(c[..., 1])], -1)
    if tip is None:
        tip = _circle_meet(A1, A2, k1, k2, left=tip_side > 0, strict=False)
    p1, p2 = _angle(tip - A1), _angle(tip - A2)
    return np.stack([c[..., 0], c[..., 1], _wrap(p1 - c[..., 0]), _wrap(p2 - c[..., 1]),
                     _wrap(p2 - p1)], -1)


def _five_bar_design_guess(params: dict, q, tip_side=1) -> np.ndarray:
    """Start values (D, n, 5) at crank angles q (D, n, 2): the closed form."""
    return _five_bar_joint_values(params, q, None, tip_side)


def five_bar_designs(base=0.2, crank1=0.25, crank2=0.25, coupler1=0.35, coupler2=0.35,
                     m_crank1=1.0, m_crank2=1.0, m_coupler1=0.8, m_coupler2=0.8, m_tip=0.5,
                     g=9.81, *, mode=(-1, 1, 1)):
    """D five-bar designs as one :class:`kic.designs.DesignBatch`, without a model per design.

    Every parameter is that of :func:`five_bar` (same units and meaning), given
    as a scalar or an array (D,) (broadcast together).  The structure is built
    once (a template model); each design's numbers (joint origins, masses,
    centroids, inertias, the closure frame, gravity, the characteristic length
    at its reference configuration) are written into its float buffer by numpy
    array operations.  A design with no configuration in ``mode`` (or whose
    loop never closes) is kept as infeasible (``batch.feasible``): its poses
    fail with ``kic.Status.UNASSEMBLABLE``, no exception.

    Parameters
    ----------
    base, crank1, crank2, coupler1, coupler2 : float or array_like (D,)
        Lengths (m), > 0.
    m_crank1, m_crank2, m_coupler1, m_coupler2, m_tip : float or array_like (D,)
        Masses (kg), >= 0.
    g : float or array_like (D,)
        Gravity (m/s^2) along -y.
    mode : (int, int, int)
        (elbow1, elbow2, tip_side), shared by the designs: the reference
        configuration of each design is in it, as in :func:`five_bar`.

    Returns
    -------
    kic.designs.DesignBatch
        Coordinates the crank angles; ``parameters`` the arrays above plus
        ``elbow1``, ``elbow2``, ``tip_side``; ``guess`` the closed-form joint
        values at crank angles (so ``batch.loads`` starts every pose there);
        :func:`five_bar_task` evaluates a task of the tip.

    Raises
    ------
    kic.ModelError
        A parameter out of range (the message names it and the first design).

    Notes
    -----
    Each design's float buffer equals the one of ``five_bar(..., mode=mode)``
    for its parameters (tests/test_designs.py): the joint origins ``base``,
    ``crank_i``, ``coupler1``, the tip's frame on coupler 2, the rods' masses,
    centroids and inertias (``m L^2 / 12``, the tip mass on coupler 1 by the
    parallel-axis theorem), gravity, and the characteristic length at the
    reference configuration, found from the mode as :func:`five_bar` does (the
    home pose where it is in the mode and regular, else the most regular
    configuration of the same crank grid, searched for many designs at once).

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> batch = mechanisms.five_bar_designs(crank1=[0.25, 0.3], crank2=[0.25, 0.3])
    >>> task = mechanisms.five_bar_task(batch, [[0.1, 0.45]], [[0.0, 0.0]], [[0.0, 0.0]])
    >>> task.torques.shape, task.status.tolist()
    ((2, 1, 2), [[0], [0]])
    """
    from kic.closed_plan import plan_from_model
    from kic.designs import DesignBatch

    b = "five_bar_designs"
    elbows_side = _mode_tuple(mode)
    p, D = _design_arrays(b, {
        "base": (base, "length"), "crank1": (crank1, "length"), "crank2": (crank2, "length"),
        "coupler1": (coupler1, "length"), "coupler2": (coupler2, "length"),
        "m_crank1": (m_crank1, "mass"), "m_crank2": (m_crank2, "mass"),
        "m_coupler1": (m_coupler1, "mass"), "m_coupler2": (m_coupler2, "mass"),
        "m_tip": (m_tip, "mass"), "g": (g, "gravity")})
    side = elbows_side[2]
    # the structure (the default design), built once per tip side and kept
    if side not in _FIVE_BAR_TEMPLATES:
        template = five_bar(tip_side=side)
        _FIVE_BAR_TEMPLATES[side] = (plan_from_model(template), template.reference_phi)
    plan, t_ref = _FIVE_BAR_TEMPLATES[side]
    tparams = {"base": 0.2, "crank1": 0.25, "crank2": 0.25, "coupler1": 0.35,
               "coupler2": 0.35, "m_crank1": 1.0, "m_crank2": 1.0, "m_coupler1": 0.8,
               "m_coupler2": 0.8, "m_tip": 0.5, "g": 9.81}
    tparams = {k: np.array([v]) for k, v in tparams.items()}
    t_ref = t_ref[None]
    _check_writer(b, _five_bar_floats(plan, tparams, t_ref)[0], plan)

    # reference configurations: the home pose where it is in the mode and regular
    # (vectorized), else each design's own search (FiveBarGeometry.reference_cranks)
    home = np.broadcast_to(np.asarray(FIVE_BAR_HOME), (D, 1, 2))
    ref = _five_bar_joint_values(p, home, None, side)[:, 0]
    passive = ref[:, 2:]
    fits = np.all(np.sign(np.sin(passive)) == np.array(elbows_side), -1) & \
        (np.min(np.abs(np.sin(passive)), -1) >= _REGULAR)
    feasible = np.ones(D, bool)
    want = np.array(elbows_side, float)
    miss = np.nonzero(~fits)[0]
    # FiveBarGeometry.reference_cranks' first grid, for many designs at once
    grid = 96
    t = np.linspace(-np.pi, np.pi, grid, endpoint=False) + np.pi / grid
    cr = np.stack(np.meshgrid(t, t, indexing="ij"), -1).reshape(-1, 2)
    lost = []
    for chunk in np.array_split(miss, max(1, len(miss) // 32)):
        if chunk.size == 0:
            continue
        # only the grid points where the couplers can meet (the rest score 0)
        b_, l1, l2, k1, k2 = (p[k][chunk][:, None] for k in ("base", "crank1", "crank2",
                                                               "coupler1", "coupler2"))
        gap = np.hypot(b_ + l2 * np.cos(cr[:, 1]) - l1 * np.cos(cr[:, 0]),
                       l2 * np.sin(cr[:, 1]) - l1 * np.sin(cr[:, 0]))
        tol = 1e-9 * (k1 + k2)
        dd, gg = np.nonzero((gap <= k1 + k2 + tol) & (gap >= np.abs(k1 - k2) - tol))
        sub = {k: v[chunk][dd] for k, v in p.items()}
        phi = _five_bar_joint_values(sub, cr[gg][:, None], None, side)[:, 0]
        s_ = np.sin(phi[:, 2:])
        # in the mode (NaN: no), scored by the smallest |sin| of the passive joints
        fit = (np.sign(s_[:, 0]) == want[0]) & (np.sign(s_[:, 1]) == want[1]) & \
            (np.sign(s_[:, 2]) == want[2])
        a_ = np.abs(s_)
        score = np.zeros((chunk.size, cr.shape[0]))
        score[dd, gg] = np.where(fit, np.minimum(np.minimum(a_[:, 0], a_[:, 1]), a_[:, 2]),
                                 0.0)
        k = np.argmax(score, axis=1)
        found = score[np.arange(chunk.size), k] > 0
        ref[chunk[found]] = _five_bar_joint_values(
            {kk: v[chunk[found]] for kk, v in p.items()}, cr[k[found]][:, None], None,
            side)[:, 0]
        lost.extend(chunk[~found].tolist())
    for d in lost:                    # the finer grid, or the mode does not exist
        geo = FiveBarGeometry(*(p[k][d] for k in ("base", "crank1", "crank2", "coupler1",
                                                   "coupler2")), elbows_side[:2], side)
        try:
            ref[d] = geo.joint_values(geo.reference_cranks(elbows_side[:2], side))
        except kic.ModelError:
            feasible[d] = False
            ref[d] = np.nan
    floats = _five_bar_floats(plan, p, np.where(feasible[:, None], ref, t_ref))
    params = dict(p, elbow1=np.full(D, elbows_side[0]), elbow2=np.full(D, elbows_side[1]),
                  tip_side=np.full(D, side))
    build = partial(_five_bar_design_model, mode=elbows_side)
    return DesignBatch(plan, floats, ref, np.full((D, 1), -float(side)), feasible,
                       ("crank1", "crank2"), params, build=build,
                       guess=partial(_five_bar_design_guess, tip_side=side))


#: five_bar_designs' template plans by tip side (plans are immutable)
_FIVE_BAR_TEMPLATES: dict = {}


def _five_bar_design_model(mode, elbow1=None, elbow2=None, tip_side=None, **kw):
    """The model of one design of :func:`five_bar_designs` (the numpy path)."""
    return five_bar(**kw, mode=mode)


def _five_bar_floats(plan, p: dict, ref) -> np.ndarray:
    """The float buffers (D, F) of five-bar designs ``p`` (arrays (D,)) whose
    reference joint values are ``ref`` (D, 5)."""
    from kic.closed_plan import float_fields, reference_length
    D = p["base"].shape[0]
    floats = np.tile(plan.args[0], (D, 1))
    f = float_fields(plan, floats)
    j = {n: i for i, n in enumerate(plan.phi_names)}
    f["origin"][:, j["crank2"], 0, 3] = p["base"]
    f["origin"][:, j["elbow1"], 0, 3] = p["crank1"]
    f["origin"][:, j["elbow2"], 0, 3] = p["crank2"]
    f["origin"][:, j["tip"], 0, 3] = p["coupler1"]
    f["T_b"][:, 0, 0, 3] = p["coupler2"]            # the tip on coupler 2
    bodies = (("crank1", p["m_crank1"], p["crank1"], 0.0),
              ("crank2", p["m_crank2"], p["crank2"], 0.0),
              ("elbow1", p["m_coupler1"], p["coupler1"], p["m_tip"]),
              ("elbow2", p["m_coupler2"], p["coupler2"], 0.0))
    for joint, m, L, tip in bodies:
        total = m + tip
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(total > 0, (m * L / 2 + tip * L) / total, 0.0)
        transverse = m * L * L / 12.0 + m * (L / 2 - c) ** 2 + tip * (L - c) ** 2
        k = j[joint]
        f["mass"][:, k] = total
        f["com"][:, k] = 0.0
        f["com"][:, k, 0] = c
        f["inertia"][:, k] = 0.0
        f["inertia"][:, k, 1, 1] = transverse
        f["inertia"][:, k, 2, 2] = transverse
    f["gravity"][:] = 0.0
    f["gravity"][:, 1] = -p["g"]
    f["scale"][:, 0] = reference_length(plan, f, ref)
    return floats


def _five_bar_inverse(params: dict, tip, elbows, tip_side):
    """Closed-form inverse kinematics of designs (D,) at tips (D or 1, n, 2):
    (cranks (D, n, 2), status (D, n)) as :meth:`FiveBarGeometry.inverse`."""
    x = np.asarray(tip, float)
    b = params["base"][:, None]
    out, reach = [], True
    for O, l, k, e in (((0.0, 0.0), params["crank1"][:, None], params["coupler1"][:, None],
                        elbows[0]),
                       ((b, 0.0), params["crank2"][:, None], params["coupler2"][:, None],
                        elbows[1])):
        dx, dy = x[..., 0] - O[0], x[..., 1] - O[1]
        r = np.hypot(dx, dy)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = (l * l + r * r - k * k) / (2 * l * r)
        reach = reach & (np.abs(c) <= 1.0 + 1e-12) & (r > 0)
        out.append(_wrap(np.arctan2(dy, dx) - e * np.arccos(np.clip(c, -1.0, 1.0))))
    cranks = np.stack(out, -1)
    status = np.where(reach, int(Status.OK), int(Status.UNASSEMBLABLE))
    l1, l2 = params["crank1"][:, None], params["crank2"][:, None]
    A1 = np.stack([l1 * np.cos(cranks[..., 0]), l1 * np.sin(cranks[..., 0])], -1)
    A2 = np.stack([b + l2 * np.cos(cranks[..., 1]), l2 * np.sin(cranks[..., 1])], -1)
    s = _cross(A2 - A1, x - A1)
    status = np.where(reach & (np.sign(s) != tip_side), int(Status.OTHER_MODE), status)
    return np.where((status == Status.OK)[..., None], cranks, np.nan), status, A1, A2


def _condition_2x2(a, b, c, d):
    """2-norm condition numbers of [[a, b], [c, d]] (batched), from
    ``sigma_1 = Q + R``, ``sigma_1 sigma_2 = |det|`` with Q, R the norms of the
    matrix's conformal and anticonformal parts (no cancellation near 1); inf
    where singular, NaN where not finite."""
    Q = np.hypot((a + d) / 2, (c - b) / 2)
    R = np.hypot((a - d) / 2, (c + b) / 2)
    det = np.abs(a * d - b * c)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.where(det > 0, (Q + R) ** 2 / np.where(det > 0, det, 1.0), np.inf)
    return np.where(np.isfinite(a + b + c + d), k, np.nan)


class FiveBarTask:
    """A tip task evaluated for D five-bar designs (per-configuration results).

    Attributes
    ----------
    mode : (int, int, int)
        (elbow1, elbow2, tip_side) every answer is in.
    cranks, crank_rates, crank_accelerations : ndarray (D, n, 2)
        The closed-form inverse kinematics (rad, rad/s, rad/s^2); NaN where failed.
    phi : ndarray (D, n, 5)
        All joint values (rad) in the batch's joint order (``batch.plan.phi_names``).
    torques : ndarray (D, n, 2)
        Crank torques (N m), gravity included: ``I* q'' + q'^T P* q' + T_gravity``.
    inertia : ndarray (D, n, 2, 2)
        I* in the crank angles (kg m^2).
    status : ndarray (D, n) of int
        :class:`kic.Status`: UNASSEMBLABLE where a crank cannot reach the tip (or
        the design is infeasible), OTHER_MODE where the cranks reach it with the
        tip on the other side, SINGULAR where the couplers are aligned (type II).
    condition : ndarray (D, n)
        2-norm condition number of the task Jacobian ``J = dC/dq`` (m/rad), tip
        velocity per crank rate: 1 where a crank rate moves the tip equally
        fast in every direction, inf at a type I (an elbow straight: J loses
        rank) or type II singularity (the couplers aligned: J unbounded).  All
        entries of J are lengths per radian, so ``kappa(J)`` does not depend on
        the units or on the size of the linkage (it equals
        ``kic.indices.point_conditioning(...).condition``); computed in closed
        form from ``J^-1`` with rows ``e_i^T / (l_i e_i . n_i)`` (``e_i = C - A_i``,
        ``n_i`` the normal of crank i).  NaN where the inverse kinematics failed.
    """

    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)

    @property
    def ok(self) -> np.ndarray:
        return self.status == Status.OK


def five_bar_task(batch, tip, tip_rate, tip_acceleration) -> FiveBarTask:
    """Evaluate a tip task for every design of a :func:`five_bar_designs` batch.

    Parameters
    ----------
    batch : kic.designs.DesignBatch
        From :func:`five_bar_designs` (its ``parameters`` name the lengths and
        the mode).
    tip, tip_rate, tip_acceleration : array_like (n, 2) or (D, n, 2)
        Tip positions (m), velocities (m/s) and accelerations (m/s^2).

    Returns
    -------
    FiveBarTask
        Inverse kinematics in the batch's mode, crank torques, I* and the
        conditioning per (design, point); failures as data (NaN + status).

    Notes
    -----
    The inverse kinematics and rates are :meth:`FiveBarGeometry.inverse` and
    :meth:`FiveBarGeometry.inverse_rates` written for a design axis; every
    pose starts its assembly from the closed-form joint values, so the
    torques are those of the design's model at the same configuration.

    Examples
    --------
    >>> import numpy as np, kic, mechanisms
    >>> batch = mechanisms.five_bar_designs(coupler1=[0.35, 0.1], coupler2=[0.35, 0.1])
    >>> task = mechanisms.five_bar_task(batch, [[0.1, 0.45]], [[0.0, 0.0]], [[0.0, 0.0]])
    >>> [kic.Status(s).name for s in task.status[:, 0]]
    ['OK', 'UNASSEMBLABLE']
    >>> bool(np.isnan(task.torques[1]).all())
    True
    """
    p = batch.parameters
    need = ("base", "crank1", "crank2", "coupler1", "coupler2", "elbow1", "elbow2", "tip_side")
    if any(k not in p for k in need):
        raise kic.ModelError("five_bar_task needs a batch from mechanisms.five_bar_designs")
    D = len(batch)
    x, xd, xdd = (FiveBarGeometry._points(v, w) for v, w in (
        (tip, "tip"), (tip_rate, "tip_rate"), (tip_acceleration, "tip_acceleration")))
    x, xd, xdd = (v if v.ndim == 3 else v.reshape((1,) * (3 - v.ndim) + v.shape)
                  for v in (x, xd, xdd))
    n = max(v.shape[1] for v in (x, xd, xdd))
    x, xd, xdd = (np.broadcast_to(v, (D, n, 2)) for v in (x, xd, xdd))
    mode = (int(p["elbow1"][0]), int(p["elbow2"][0]), int(p["tip_side"][0]))
    cranks, status, A1, A2 = _five_bar_inverse(p, x, mode[:2], mode[2])
    # rates (FiveBarGeometry.inverse_rates) and the inverse task Jacobian rows
    qd, qdd, rows = [], [], []
    with np.errstate(divide="ignore", invalid="ignore"):
        for i, (A, l) in enumerate(((A1, p["crank1"][:, None]), (A2, p["crank2"][:, None]))):
            th = cranks[..., i]
            u = np.stack([np.cos(th), np.sin(th)], -1)
            nrm = np.stack([-np.sin(th), np.cos(th)], -1)
            e = x - A
            den = l * np.sum(e * nrm, -1)
            w = np.sum(e * xd, -1) / den
            ed = xd - l[..., None] * nrm * w[..., None]
            qd.append(w)
            qdd.append((np.sum(ed * ed, -1) + np.sum(e * xdd, -1)
                        + l * np.sum(e * u, -1) * w * w) / den)
            rows.append(e / den[..., None])
    qd, qdd = np.stack(qd, -1), np.stack(qdd, -1)
    condition = _condition_2x2(rows[0][..., 0], rows[0][..., 1], rows[1][..., 0],
                               rows[1][..., 1])
    ok = status == Status.OK
    start = _five_bar_joint_values(p, np.where(ok[..., None], cranks, 0.0), x)
    # a type I singularity (infinite rates) cannot be evaluated: singular
    finite = np.all(np.isfinite(qd), -1) & np.all(np.isfinite(qdd), -1)
    status = np.where(ok & ~finite, int(Status.SINGULAR), status)
    ok = status == Status.OK
    z = lambda a: np.where(ok[..., None], a, 0.0)                # noqa: E731
    res = batch.loads(z(cranks), z(qd), z(qdd), actuators=(),
                      start=np.where(ok[..., None], start, 0.0), skip=status)
    status = res.status
    good = status == Status.OK
    nan = lambda a: np.where(good.reshape(good.shape + (1,) * (a.ndim - 2)), a,  # noqa: E731
                             np.nan)
    return FiveBarTask(mode=mode, phi=res.phi, cranks=nan(cranks), crank_rates=nan(qd),
                       crank_accelerations=nan(qdd), torques=res.loads, inertia=res.inertia,
                       status=status,
                       condition=np.where(status == Status.UNASSEMBLABLE, np.nan,
                                          np.where(status == Status.OTHER_MODE, np.nan,
                                                   condition)))


def _stewart_anchors(params: dict):
    """Base and platform anchors (D, 6, 3) of Stewart designs (as :func:`stewart_platform`)."""
    k = np.radians(120.0 * np.repeat(np.arange(3), 2))
    s = np.tile([-1.0, 1.0], 3)
    ab = k + s * params["base_half_angle"][:, None]
    ap = k + s * params["plat_half_angle"][:, None]
    z = np.zeros_like(ab)
    rb, rp = params["rb"][:, None], params["rp"][:, None]
    return (np.stack([rb * np.cos(ab), rb * np.sin(ab), z], -1),
            np.stack([rp * np.cos(ap), rp * np.sin(ap), z], -1))


def _stewart_design_guess(params: dict, q, names=()) -> np.ndarray:
    """Start values (D, n, N) in the joint order ``names`` at platform poses
    q (D, n, 6): the legs' closed-form inverse kinematics (as ``_stewart_guess``)."""
    B, P = _stewart_anchors(params)
    q = np.asarray(q, float)
    shared = q.ndim == 2 or q.shape[0] == 1 or q.strides[0] == 0     # poses of all designs
    q1 = q.reshape((-1,) + q.shape[-2:])[0] if shared else q
    R = _rz(q1[..., 3]) @ _ry(q1[..., 4]) @ _rx(q1[..., 5])          # (n or D, n, 3, 3)
    q = np.broadcast_to(q, (B.shape[0],) + q.shape[-2:])
    Rb = R[None] if shared else R                                     # (1 or D, n, 3, 3)
    # the legs d = p + R P_i - B_i coordinate by coordinate, (D, n, 6) each: the sums
    # of the product R P_i in order, without (D, n, 6, 3) passes, in place (this is
    # per pose the cost of a design batch outside its compiled kernel; every
    # temporary of this size is memory the system must hand over anew)
    shape = np.broadcast_shapes(Rb.shape[:2], q.shape[:2]) + (P.shape[1],)
    d = [np.empty(shape) for _ in range(3)]
    tmp = np.empty(shape)
    for i in range(3):
        np.multiply(Rb[:, :, i, 0, None], P[:, None, :, 0], out=d[i])
        for k in (1, 2):
            np.multiply(Rb[:, :, i, k, None], P[:, None, :, k], out=tmp)
            d[i] += tmp
        # q_i + rp - B_i, in that order
        np.add(q[..., i, None], d[i], out=d[i])
        d[i] -= B[:, None, :, i]
    L = np.multiply(d[0], d[0])
    for i in (1, 2):
        np.multiply(d[i], d[i], out=tmp)
        L += tmp
    np.sqrt(L, out=L)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(3):
            np.divide(d[i], L, out=d[i])                  # the unit vector u
    np.clip(d[0], -1, 1, out=d[0])
    np.negative(d[1], out=d[1])
    values = {"u2": np.arcsin(d[0], out=d[0]), "u1": np.arctan2(d[1], d[2], out=d[1]),
              "p": L}
    out = np.empty(q.shape[:-1] + (len(names),))
    coords = ("x", "y", "z", "yaw", "pitch", "roll")
    for c, name in enumerate(names):
        body, joint = name.split(".")
        out[..., c] = (q[..., coords.index(joint)] if body == "platform"
                       else values[joint][..., int(body[3:])])
    return out


def stewart_designs(rb=0.5, rp=0.3, base_half_angle=np.radians(15.0),
                    plat_half_angle=np.radians(45.0), h0=0.6, m_plat=10.0, m_cyl=2.0,
                    m_rod=1.0, g=9.81, **fixed):
    """D Stewart platform designs as one :class:`kic.designs.DesignBatch`, without a
    model per design.

    The parameters are those of :func:`stewart_platform` (same units and
    meaning), as scalars or arrays (D,) broadcast together: the anchor radii,
    the half-angles of the anchor pairs (rad, in [0, pi/3)), the nominal
    height ``h0`` (the reference pose, m) and the masses (kg), gravity
    (m/s^2).  ``fixed`` keyword arguments of :func:`stewart_platform`
    (``I_plat``, ``plat_com``, ``cyl_com``, ``I_cyl``, ``rod_com``, ``I_rod``)
    are shared by all designs.  The structure is built once; each design's base
    anchors (the U joints' origins), platform anchors (the S closures'
    frames), masses, gravity and characteristic length at its reference pose
    are written into its float buffer.

    Parameters
    ----------
    rb, rp : float or array_like (D,)
        Radii of the base and platform anchor circles (m).
    base_half_angle, plat_half_angle : float or array_like (D,)
        Half the angular spacing of each anchor pair (rad, in [0, pi/3)).
    h0 : float or array_like (D,)
        Nominal platform height (m): the reference pose.
    m_plat, m_cyl, m_rod : float or array_like (D,)
        Masses of the platform, each cylinder and each rod (kg).
    g : float or array_like (D,)
        Gravity (m/s^2) along -z.
    **fixed
        Other keyword arguments of :func:`stewart_platform`, shared.

    Returns
    -------
    kic.designs.DesignBatch
        Coordinates the platform pose (x, y, z, yaw, pitch, roll); actuators
        the six legs; ``guess`` the legs' closed-form inverse kinematics (the
        start of every pose); ``parameters`` the arrays above.  The assembly
        mode is the template's (every leg's U-P block with the leg pointing
        up, ``det A > 0``), the same for every design with ``h0 > 0``.

    Raises
    ------
    kic.ModelError
        A parameter out of range (the message names it and the first design).

    Notes
    -----
    The reference configuration of each design is its nominal pose
    ``(0, 0, h0, 0, 0, 0)`` with the legs' closed-form joint values.
    :func:`stewart_platform`'s model starts from the same legs but closes the
    loops by a minimum-norm step that also moves the platform (to z = 0.53 m
    for the defaults), so its reference, and with it the characteristic length
    that makes conditions dimensionless, can differ from the writer's; every
    other number of the float buffer is the builder's (tests/test_designs.py).

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> batch = mechanisms.stewart_designs(rb=[0.5, 0.6])
    >>> pose = [0.0, 0.0, 0.6, 0.0, 0.0, 0.0]
    >>> res = batch.loads(pose, np.zeros(6), accelerations=np.zeros((1, 6)))
    >>> res.actuator_loads.shape                  # designs, poses, accelerations, legs
    (2, 1, 1, 6)
    """
    from kic.closed_plan import float_fields, plan_from_model, reference_length
    from kic.designs import DesignBatch

    b = "stewart_designs"
    p, D = _design_arrays(b, {
        "rb": (rb, "length"), "rp": (rp, "length"), "base_half_angle": (base_half_angle, "angle"),
        "plat_half_angle": (plat_half_angle, "angle"), "h0": (h0, "length"),
        "m_plat": (m_plat, "mass"), "m_cyl": (m_cyl, "mass"), "m_rod": (m_rod, "mass"),
        "g": (g, "gravity")})
    for name in ("base_half_angle", "plat_half_angle"):
        bad = ~((p[name] >= 0) & (p[name] < np.pi / 3))
        if bad.any():
            d = int(np.argmax(bad))
            raise kic.ModelError(f"{b}: {name} of design {d} is {p[name][d]!r} rad; a half "
                                 "angle must lie in [0, pi/3) rad")
    if fixed or "" not in _STEWART_TEMPLATE:      # the defaults' structure is kept
        template = stewart_platform(**fixed)
        built = (plan_from_model(template), template.block_mode, tuple(template.actuators))
        if not fixed:
            _STEWART_TEMPLATE[""] = built
    plan, t_mode, t_actuators = built if fixed else _STEWART_TEMPLATE[""]
    names = tuple(plan.phi_names)
    guess = partial(_stewart_design_guess, names=names)

    def write(prm):
        n_designs = prm["rb"].shape[0]
        floats = np.tile(plan.args[0], (n_designs, 1))
        f = float_fields(plan, floats)
        B, P = _stewart_anchors(prm)
        j = {nm: i for i, nm in enumerate(names)}
        for i in range(6):
            f["origin"][:, j[f"leg{i}.u1"], :3, 3] = B[:, i]
            f["mass"][:, j[f"leg{i}.u2"]] = prm["m_cyl"]
            f["mass"][:, j[f"leg{i}.p"]] = prm["m_rod"]
        for loop in range(plan.loop_k.shape[0]):
            leg = int(names[plan.body_a[loop]].split(".")[0][3:])
            f["T_b"][:, loop, :3, 3] = P[:, leg]
        f["mass"][:, j["platform.roll"]] = prm["m_plat"]
        f["gravity"][:] = 0.0
        f["gravity"][:, 2] = -prm["g"]
        home = np.zeros((n_designs, 1, 6))
        home[:, 0, 2] = prm["h0"]
        ref = guess(prm, home)[:, 0]
        f["scale"][:, 0] = reference_length(plan, f, ref)
        return floats, ref

    # the template is stewart_platform's defaults: the writer must reproduce its buffer
    tpl = {"rb": 0.5, "rp": 0.3, "base_half_angle": np.radians(15.0),
           "plat_half_angle": np.radians(45.0), "h0": 0.6, "m_plat": 10.0, "m_cyl": 2.0,
           "m_rod": 1.0, "g": 9.81}
    _check_writer(b, write({k: np.array([v]) for k, v in tpl.items()})[0][0], plan)
    floats, ref = write(p)
    return DesignBatch(plan, floats, ref, np.tile(t_mode, (D, 1)),
                       actuators=t_actuators, parameters=p,
                       build=partial(_stewart_design_model, fixed=fixed), guess=guess)


#: stewart_designs' template (the defaults' plan, mode and actuators; plans are immutable)
_STEWART_TEMPLATE: dict = {}


def _stewart_design_model(fixed, **kw):
    """The model of one design of :func:`stewart_designs` (the numpy path)."""
    return stewart_platform(**kw, **fixed)
