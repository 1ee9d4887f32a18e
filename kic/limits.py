"""Joint limits: ranges of R and P joints, cone angles of U and S joints.

The description (constant): a :class:`kic.Mechanism` holds one limit per
joint, set with ``add_joint(..., limits=...)`` or :meth:`kic.Mechanism.set_limits`:

* :class:`JointRange` ``(lower, upper)`` for an R joint (rad) or a P joint (m),
  or for one R/P joint of a compound (U, C, S) joint, named as expanded
  (``"u1"``, ``"u2"``...);
* :class:`ConeLimit` ``(angle, axis)`` for a U or S joint (rad): the cone
  angle theta between the *reference axis* ``n`` as fixed on the parent side
  of the joint and the same axis as carried by the child side,
  ``cos theta = n . R(phi) n``, with ``R(phi) = Rot(a1, phi1) Rot(a2, phi2)
  [Rot(a3, phi3)]`` the rotation of the joint (its axes ``a_k`` and angles
  ``phi_k`` in the joint frame, as :meth:`kic.Mechanism.add_joint` defines
  them).  ``n`` is given in the joint frame, by default ``a1 x a2`` (the z
  axis for the default x, y axes): the direction of the child that coincides
  with the parent's at zero joint values.  For a U joint with axes x and y,
  ``cos theta = cos(phi1) cos(phi2)``.

A revolute angle is compared modulo 2 pi (an assembled closed loop fixes a
passive angle only up to whole turns): the joint is within ``[lower, upper]``
when some ``phi + 2 pi k`` is; a range of 2 pi or wider never binds.

The check (per configuration): :meth:`JointLimits.check` on joint values phi
(..., N) returns a :class:`LimitCheck` with, per limit, whether it holds and a
scale-free *margin*, positive inside and negative outside: rad for R ranges
and cones (distance to the nearer bound, on the circle), a fraction of the
range for P ranges.  Models carry the limits of their mechanism as
``model.limits`` (a read-only :class:`JointLimits`) and
:meth:`kic.ClosedModel.assemble` reports configurations outside them as
:attr:`kic.Status.OUTSIDE_LIMITS`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .errors import ClosureError, ModelError, Status, at_batch_indices
from .kernels.frames import rotation_matrices
from .settings import PARALLEL_SINE

# statuses of an assembled configuration (its joint values are the ones tested)
_ASSEMBLED = (int(Status.OK), int(Status.SINGULAR), int(Status.SINGULAR_LOAD))

__all__ = ["JointRange", "ConeLimit", "JointLimits", "LimitCheck", "Violation", "make_limit",
           "outside_limits_error"]

_TWO_PI = 2.0 * np.pi


class JointRange(NamedTuple):
    """Range of an R (rad) or P (m) joint, ``lower < upper``."""

    lower: float
    upper: float


class ConeLimit(NamedTuple):
    """Largest cone angle (rad, in (0, pi]) of a U or S joint about its
    reference axis ``axis`` (unit, joint frame); see the module docs."""

    angle: float
    axis: tuple


def make_limit(joint: str, kind: str, axes: Sequence[np.ndarray], value, axis=None):
    """A validated :class:`JointRange` (kind R or P) or :class:`ConeLimit` (U or S)
    for ``joint`` from a user's value; raises :class:`kic.ModelError` naming it."""
    label = f"joint {joint!r}"
    if kind in ("R", "P"):
        if axis is not None:
            raise ModelError(f"{label}: a reference axis is for the cone of a U or S joint, "
                             f"not a {kind} joint's range")
        try:
            lower, upper = (float(v) for v in value)
        except (TypeError, ValueError):
            raise ModelError(f"{label}: the limits of a {kind} joint are (lower, upper) "
                             f"({'rad' if kind == 'R' else 'm'}), got {value!r}") from None
        if not (np.isfinite(lower) and np.isfinite(upper) and lower < upper):
            raise ModelError(f"{label}: limits need finite lower < upper, got ({lower!r}, "
                             f"{upper!r})")
        return JointRange(lower, upper)
    if kind in ("U", "S"):
        angle = value.angle if isinstance(value, ConeLimit) else value
        if axis is None and isinstance(value, ConeLimit):
            axis = value.axis
        try:
            angle = float(angle)
        except (TypeError, ValueError):
            raise ModelError(f"{label}: the limit of a {kind} joint is a cone angle (rad), got "
                             f"{value!r}") from None
        if not 0.0 < angle <= np.pi:
            raise ModelError(f"{label}: the cone angle must lie in (0, pi] rad, got {angle!r}")
        if axis is None:
            n = np.cross(axes[0], axes[1])
            if np.linalg.norm(n) < PARALLEL_SINE:
                raise ModelError(f"{label}: its first two axes are parallel; give the cone's "
                                 "reference axis (axis=...)")
        else:
            n = np.asarray(axis, dtype=float)
            if n.shape != (3,) or not np.all(np.isfinite(n)) or not np.linalg.norm(n) > 0:
                raise ModelError(f"{label}: the cone axis must be a non-zero 3-vector, got "
                                 f"{axis!r}")
        n = n / np.linalg.norm(n)
        return ConeLimit(angle, tuple(float(v) for v in n))
    raise ModelError(f"{label}: a {kind} joint takes no limits; give ranges to its R/P parts "
                     "by their expanded names")


@dataclass(frozen=True)
class LimitCheck:
    """Limits at a batch of configurations.

    Attributes
    ----------
    names : list of str
        The limited joints, in the order of the last axis.
    within : ndarray of bool (..., K)
        Whether each limit holds (False where phi is NaN).
    margin : ndarray (..., K)
        Positive inside, negative outside: rad for R ranges and cones, a
        fraction of the range for P ranges; NaN where phi is NaN.
    """

    names: list
    within: np.ndarray
    margin: np.ndarray

    @property
    def ok(self) -> np.ndarray:
        """Every limit holds (...)."""
        return np.all(self.within, axis=-1)

    def violated(self, index: tuple = ()) -> list:
        """Names of the limits that fail at one configuration (its batch index)."""
        w = self.within[index]
        return [n for n, good in zip(self.names, w) if not good]


class Violation(NamedTuple):
    """A limit that fails at one configuration (:meth:`JointLimits.violations`)."""

    #: the limited joint (a primitive joint's name, or a U/S joint's for a cone)
    joint: str
    #: the joint value as assembled (rad or m, not wrapped), or the cone angle (rad)
    value: float
    #: the limit it fails: a JointRange or a ConeLimit
    limit: JointRange | ConeLimit
    #: the margin (negative): rad for R ranges and cones, a fraction of a P range
    margin: float
    #: "rad" or "m"
    unit: str

    def __str__(self) -> str:
        if isinstance(self.limit, ConeLimit):
            return (f"joint {self.joint!r} cone angle {self.value:.6g} rad above its limit "
                    f"{self.limit.angle:.6g} rad")
        return (f"joint {self.joint!r} = {self.value:.6g} {self.unit} outside its range "
                f"[{self.limit.lower:.6g}, {self.limit.upper:.6g}] {self.unit}")


class JointLimits(Mapping):
    """The limits of a model: a read-only mapping joint name -> limit, and the
    batched check of joint values phi (..., N) in the model's joint order.

    Parameters
    ----------
    mechanism : kic.Mechanism
    phi_names : sequence of str
        The joint values' names (``model.phi_names``).

    Raises
    ------
    kic.ModelError
        A cone limit whose joint angles are not joint values of the model (an S
        joint closed as a point, whose angles the model never solves for).
    """

    def __init__(self, mechanism, phi_names: Sequence[str]) -> None:
        self._limits = dict(mechanism.limits)
        index = {n: i for i, n in enumerate(phi_names)}
        prims = {p.name: p for p in mechanism.all_primitives()}
        r_idx, r_lo, r_hi, r_angle, self._range_names = [], [], [], [], []
        self._cones = []
        for joint, lim in self._limits.items():
            if isinstance(lim, JointRange):
                name = joint
                if name not in index:
                    raise ModelError(
                        f"the range of joint {joint!r} cannot be checked in this model: it is "
                        "not a joint value of the model (the loop is closed at its joint as a "
                        "point); cut the loops elsewhere or limit another joint")
                r_idx.append(index[name])
                r_lo.append(lim.lower)
                r_hi.append(lim.upper)
                r_angle.append(prims[name].kind == "R")
                self._range_names.append(joint)
            else:
                parts = mechanism.joint_primitives(joint)
                missing = [p.name for p in parts if p.name not in index]
                if missing:
                    raise ModelError(
                        f"the cone limit of joint {joint!r} cannot be checked in this model: its "
                        f"angles {missing} are not joint values of the model (the loop is "
                        "closed at that joint as a point); cut the loops elsewhere or limit "
                        "another joint")
                self._cones.append((joint, np.array([index[p.name] for p in parts]),
                                    np.stack([p.axis for p in parts]),
                                    np.asarray(lim.axis), lim.angle))
        self._r_idx = np.array(r_idx, int)
        self._r_lo, self._r_hi = np.array(r_lo, float), np.array(r_hi, float)
        self._r_angle = np.array(r_angle, bool)
        self.names = self._range_names + [c[0] for c in self._cones]
        # the one-pose test (within) on plain arrays: P ranges, and R ranges that bind
        lin = ~self._r_angle
        turn = self._r_angle & (self._r_hi - self._r_lo < _TWO_PI)
        self._lin = (self._r_idx[lin], self._r_lo[lin], self._r_hi[lin])
        self._turn = (self._r_idx[turn], self._r_lo[turn], self._r_hi[turn])

    # the mapping (read-only)
    def __getitem__(self, joint: str):
        return self._limits[joint]

    def __iter__(self):
        return iter(self._limits)

    def __len__(self) -> int:
        return len(self._limits)

    def __repr__(self) -> str:
        return f"JointLimits({self._limits!r})"

    @property
    def checked(self) -> bool:
        """Whether any limit applies to the model's joints."""
        return bool(self.names)

    def check(self, phi) -> LimitCheck:
        """Whether each limit holds at joint values phi (..., N), and its margin."""
        phi = np.asarray(phi, dtype=float)
        batch = phi.shape[:-1]
        margins = []
        if self._r_idx.size:
            v = phi[..., self._r_idx]
            lo, hi, ang = self._r_lo, self._r_hi, self._r_angle
            width = hi - lo
            # angles: the representative in [lower, lower + 2 pi); past the upper
            # bound the distance to the nearer bound on the circle counts
            w = np.where(ang, lo + np.mod(v - lo, _TWO_PI), v)
            inside = np.minimum(w - lo, hi - w)
            around = np.where(ang, np.maximum(hi - w, w - (lo + _TWO_PI)), inside)
            m = np.where(ang & (width >= _TWO_PI), np.inf, np.where(ang, np.where(
                w <= hi, inside, around), inside / width))
            margins.append(np.where(np.isnan(v), np.nan, m))
        for _, idx, axes, n, angle in self._cones:
            R = np.broadcast_to(np.eye(3), batch + (3, 3))
            for k in range(idx.size):
                R = R @ rotation_matrices(axes[k], phi[..., idx[k]])
            cos = np.einsum("i,...ij,j->...", n, R, n)
            margins.append((angle - np.arccos(np.clip(cos, -1.0, 1.0)))[..., None])
        margin = np.concatenate(margins, -1) if margins else np.zeros(batch + (0,))
        return LimitCheck(list(self.names), margin >= 0, margin)

    def within(self, phi) -> bool:
        """Whether every limit holds at one configuration phi (N,): the test the
        compiled one-pose path makes (True at once when no limit applies), the
        same as ``check(phi).ok`` in fewer operations."""
        if not self.names:
            return True
        if self._cones:
            return bool(np.all(self.check(phi).within))
        idx, lo, hi = self._lin
        v = phi[idx]
        if not np.all((v >= lo) & (v <= hi)):
            return False
        idx, lo, hi = self._turn
        return bool(np.all(lo + np.mod(phi[idx] - lo, _TWO_PI) <= hi))     # as check()

    def violations(self, phi) -> list:
        """The limits that fail at one configuration phi (N,) (rad, m), worst
        (most negative margin) first: a list of :class:`Violation` (joint, its
        value or cone angle, the limit, the margin); empty where every limit
        holds.  What a report or a simulation's limit event names."""
        phi = np.asarray(phi, dtype=float).reshape(-1)
        if not np.all(np.isfinite(phi)):
            raise ModelError("violations: phi must be finite joint values (an assembled "
                             f"configuration), got {phi!r}")
        c = self.check(phi)
        out = []
        for k, (name, ok, margin) in enumerate(zip(c.names, c.within, c.margin)):
            if ok:
                continue
            if k < len(self._range_names):
                value = float(phi[self._r_idx[k]])
                unit = "rad" if self._r_angle[k] else "m"
            else:                      # the cone angle from its margin
                value, unit = float(self._cones[k - len(self._range_names)][4] - margin), "rad"
            out.append(Violation(name, value, self._limits[name], float(margin), unit))
        return sorted(out, key=lambda v: (not np.isnan(v.margin), v.margin))

    def status(self, phi, status=None) -> np.ndarray:
        """:class:`kic.Status` codes (...): ``OUTSIDE_LIMITS`` where phi (..., N)
        violates a limit and ``status`` (default all OK) says the configuration was
        assembled (OK, or singular: a configuration the mechanism cannot reach is
        reported as such before its conditioning, by every path alike)."""
        phi = np.asarray(phi, dtype=float)
        st = np.zeros(phi.shape[:-1], int) if status is None else np.asarray(status, int)
        if not self.checked:
            return st.copy()
        assembled = np.isin(st, _ASSEMBLED) & np.isfinite(phi).all(axis=-1)
        return np.where(assembled & ~self.check(phi).ok, int(Status.OUTSIDE_LIMITS), st)


def outside_limits_error(limits: JointLimits, phi: np.ndarray, status: np.ndarray,
                         batch: tuple, name: str | None) -> ClosureError:
    """The error for configurations outside the limits: every failing batch index
    listed (the first ten in the message), the limits violated at the first.

    ``phi`` (n, N) and ``status`` (n,) are flat over ``batch``."""
    bad = np.nonzero(np.asarray(status) == Status.OUTSIDE_LIMITS)[0]
    indices = [tuple(int(i) for i in np.unravel_index(k, batch)) if batch else ()
               for k in bad]
    violated = limits.violations(phi[bad[0]])
    worst = "; ".join(str(v) for v in violated[:3]) + (
        f"; and {len(violated) - 3} more limit(s)" if len(violated) > 3 else "")
    where = at_batch_indices(indices, bool(batch))
    first = f" at batch index {indices[0]}" if batch and len(bad) > 1 else ""
    return ClosureError(
        f"{len(bad)} configuration(s) of {name or 'the model'} outside the joint limits"
        f"{where}: {worst}{first}",
        index=indices[0] if batch else None, indices=indices if batch else [],
        status=[Status.OUTSIDE_LIMITS] * len(bad))
