"""Coordinates of a closed model: the user's choice of what q is.

A coordinate of a :class:`kic.ClosedModel` is a primitive joint (by name) or a
coordinate object:

* :class:`BodyPose`: x, y, z and three angles of a body, realised as a massless
  virtual P-P-P-R-R-R chain from the ground (docs/theory.md#coordinates-that-are-not-joints);
* :class:`PointPosition`: world coordinates of a point on a body, a virtual
  P chain whose tip must meet the point (a 3-row point closure);
* :class:`CoordinateFunction`: ``q = u(phi)`` with its influence coefficients
  (case (c) of docs/theory.md#cases-a-b-and-c), a 1-row closure.

:func:`apply_coordinates` adds the virtual joints to a copy of the mechanism
and lists the closures they bring; the original description is never changed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._array import finite_array
from .errors import ModelError

__all__ = ["BodyPose", "PointPosition", "CoordinateFunction", "CoordinateSetup",
           "apply_coordinates", "UNIT_AXES"]

UNIT_AXES = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


class BodyPose:
    """Coordinates of a body's pose: x, y, z (m) of its frame origin and the
    angles yaw, pitch, roll (rad) with ``R = Rz(yaw) Ry(pitch) Rx(roll)``.

    Realised as a massless virtual P-P-P-R-R-R chain from the ground to the
    body (docs/theory.md#coordinates-that-are-not-joints), so its influence coefficients come from the
    serial code.

    Parameters
    ----------
    body : str
    components : sequence of str, optional
        A subset of ``("x", "y", "z", "yaw", "pitch", "roll")`` in that order,
        e.g. ``("x", "y", "yaw")`` for a body moving in the x-y plane.
    prefix : str, optional
        Prefix of the coordinate names (default ``body + "."``).
    """

    names = ("x", "y", "z", "yaw", "pitch", "roll")
    #: the virtual joint (kind, world axis) realising each component
    joint_of = {"x": ("P", "x"), "y": ("P", "y"), "z": ("P", "z"),
                "yaw": ("R", "z"), "pitch": ("R", "y"), "roll": ("R", "x")}

    def __init__(self, body: str, components=None, prefix: str | None = None) -> None:
        self.body = body
        comps = tuple(self.names if components is None else components)
        if not comps or any(c not in self.names for c in comps) or \
                list(comps) != [n for n in self.names if n in comps]:
            raise ModelError(f"BodyPose components must be an ordered subset of {self.names}, "
                             f"got {components!r}")
        self.components = comps
        self.prefix = f"{body}." if prefix is None else prefix

    def coordinate_names(self) -> list[str]:
        return [self.prefix + n for n in self.components]

    def __repr__(self) -> str:
        return f"BodyPose({self.body!r}, {self.components})"


class PointPosition:
    """World coordinates (m) of a point fixed on a body, along ``axes``.

    Parameters
    ----------
    body : str
    point : array_like, shape (3,)
        The point in the body frame (m).
    axes : str
        Which world coordinates: any of ``"xyz"``, e.g. ``"xy"`` for a planar
        coupler point.
    """

    def __init__(self, body: str, point=(0.0, 0.0, 0.0), axes: str = "xy",
                 prefix: str | None = None) -> None:
        self.body = body
        self.point = finite_array(point, f"point on body {body!r}", (3,))
        if not axes or any(a not in "xyz" for a in axes) or len(set(axes)) != len(axes):
            raise ModelError(f"axes must be distinct letters of 'xyz', got {axes!r}")
        self.axes = axes
        self.prefix = f"{body}.p" if prefix is None else prefix

    def coordinate_names(self) -> list[str]:
        return [self.prefix + a for a in self.axes]

    def __repr__(self) -> str:
        return f"PointPosition({self.body!r}, {self.point.tolist()}, {self.axes!r})"


class CoordinateFunction:
    """A coordinate ``q = u(phi)`` given as a function of some joints, with its
    influence coefficients (case (c) of docs/theory.md#cases-a-b-and-c).

    Parameters
    ----------
    name : str
        The coordinate's name.
    joints : sequence of str
        The primitive joints u depends on (their order is the order of the
        columns below).
    fn : callable
        ``fn(phi) -> (u, G, H, D)`` for joint values ``phi`` of shape (n, k):
        ``u`` (n,), ``G`` (n, k) = du/dphi, ``H`` (n, k, k) = dG/dphi (first
        index the differentiating joint), ``D`` (n, k, k, k) = dH/dphi.

    Examples
    --------
    The difference of two crank angles as a coordinate of a five-bar:

    >>> import numpy as np, kic, mechanisms
    >>> def diff(phi):
    ...     n = phi.shape[0]
    ...     G = np.broadcast_to([-1.0, 1.0], (n, 2))
    ...     return phi[:, 1] - phi[:, 0], G, np.zeros((n, 2, 2)), np.zeros((n, 2, 2, 2))
    >>> fb = mechanisms.five_bar()
    >>> m = fb.in_coordinates(["crank1", kic.CoordinateFunction("spread", ["crank1", "crank2"],
    ...                                                         diff)])
    >>> m.coordinate_names
    ['crank1', 'spread']
    """

    def __init__(self, name: str, joints, fn) -> None:
        if not isinstance(name, str) or not name:
            raise ModelError(f"a coordinate function needs a name, got {name!r}")
        if not callable(fn):
            raise ModelError(f"coordinate {name!r}: fn must be callable")
        self.name, self.joints, self.fn = name, list(joints), fn
        if not self.joints:
            raise ModelError(f"coordinate {name!r} depends on no joint")

    def coordinate_names(self) -> list[str]:
        return [self.name]

    def evaluate(self, phi: np.ndarray):
        """(u, G, H, D) at joint values phi (n, k), checked for shape and finiteness."""
        n, k = phi.shape
        out = self.fn(phi)
        if not isinstance(out, tuple) or len(out) != 4:
            raise ModelError(f"coordinate {self.name!r}: fn must return (u, G, H, D)")
        shapes = [(n,), (n, k), (n, k, k), (n, k, k, k)]
        res = []
        for what, x, shape in zip("uGHD", out, shapes):
            x = np.asarray(x, dtype=float)
            if x.shape != shape:
                raise ModelError(f"coordinate {self.name!r}: {what} must have shape {shape}, "
                                 f"got {x.shape}")
            if not np.all(np.isfinite(x)):
                raise ModelError(f"coordinate {self.name!r}: {what} is not finite")
            res.append(x)
        return tuple(res)

    def __repr__(self) -> str:
        return f"CoordinateFunction({self.name!r}, {self.joints})"


@dataclass
class PointClosure:
    """A point coordinate's closure: the tip of its virtual chain meets ``point``
    on ``body`` along ``axes``."""

    name: str
    tip_body: str
    body: str
    point: np.ndarray
    axes: str


@dataclass
class CoordinateSetup:
    """What :func:`apply_coordinates` returns.

    Attributes
    ----------
    mechanism : kic.Mechanism
        A copy of the mechanism with the coordinates' virtual joints and bodies.
    names : list of str
        The coordinate names, in order.
    heavy : list of str
        Bodies with pose coordinates: the spanning tree hangs them on their
        virtual chains and cuts their physical joints.
    points : list of PointClosure
    functions : list of CoordinateFunction
    """

    mechanism: object
    names: list = field(default_factory=list)
    heavy: list = field(default_factory=list)
    points: list = field(default_factory=list)
    functions: list = field(default_factory=list)


def apply_coordinates(mech, coordinates) -> CoordinateSetup:
    """Add the virtual joints of ``coordinates`` to a copy of ``mech``.

    Parameters
    ----------
    mech : kic.Mechanism
    coordinates : str, coordinate object or sequence of them

    Returns
    -------
    CoordinateSetup

    Raises
    ------
    ModelError
        An unknown joint or body, a repeated coordinate, or an object that is
        not a coordinate.
    """
    if isinstance(coordinates, (str, BodyPose, PointPosition, CoordinateFunction)):
        coordinates = [coordinates]
    coordinates = list(coordinates)
    if not coordinates:
        raise ModelError("give at least one coordinate")
    ground = mech.ground
    m = mech.copy()
    out = CoordinateSetup(m)
    physical = set(mech.primitive_joints)
    for k, c in enumerate(coordinates):
        if isinstance(c, str):
            if c not in physical:
                raise ModelError(f"coordinate {c!r} is not a joint of the mechanism; "
                                 f"primitive joints are {sorted(physical)}")
            out.names.append(c)
        elif isinstance(c, BodyPose):
            if c.body not in mech.bodies or c.body == ground:
                raise ModelError(f"BodyPose: unknown body {c.body!r}")
            names = c.coordinate_names()
            chain_bodies = [f"virtual:{n}" for n in names[:-1]] + [c.body]
            prev = ground
            for n, b, comp in zip(names, chain_bodies, c.components):
                kind, ax = BodyPose.joint_of[comp]
                if b != c.body:
                    m.add_virtual_body(b)
                m.add_virtual_joint(n, kind, UNIT_AXES[ax], prev, b)
                prev = b
            out.heavy.append(c.body)
            out.names.extend(names)
        elif isinstance(c, PointPosition):
            if c.body not in mech.bodies or c.body == ground:
                raise ModelError(f"PointPosition: unknown body {c.body!r}")
            names = c.coordinate_names()
            prev = ground
            for n, a in zip(names, c.axes):
                b = f"virtual:{n}"
                m.add_virtual_body(b)
                m.add_virtual_joint(n, "P", UNIT_AXES[a], prev, b)
                prev = b
            out.points.append(PointClosure(f"point:{c.prefix}", prev, c.body, c.point, c.axes))
            out.names.extend(names)
        elif isinstance(c, CoordinateFunction):
            bad = [j for j in c.joints if j not in physical]
            if bad:
                raise ModelError(f"coordinate {c.name!r} depends on unknown joints {bad}")
            m.add_virtual_body(f"virtual:{c.name}")
            m.add_virtual_joint(c.name, "P", UNIT_AXES["x"], ground, f"virtual:{c.name}")
            out.functions.append(c)
            out.names.append(c.name)
        else:
            raise ModelError(f"coordinate {k} must be a joint name, BodyPose, "
                             f"PointPosition or CoordinateFunction, got {type(c).__name__}")
    if len(set(out.names)) != len(out.names):
        raise ModelError(f"repeated coordinates in {out.names}")
    return out
