"""Robots from URDF files, and back: import, export and mimic joints.

URDF (the Unified Robot Description Format of ROS) describes a *tree* of links
joined by joints.  kic reads it with the standard library's
:mod:`xml.etree.ElementTree` (no dependency; URDF needs no more than elements
and attributes) into

* a :class:`kic.SerialChain` (:func:`chain_from_urdf`, ``SerialChain.from_urdf``),
  the path from a base link to a tip link;
* a :class:`kic.Mechanism` (:func:`mechanism_from_urdf`, ``Mechanism.from_urdf``),
  the whole tree; loops are closed afterwards with ``Mechanism.add_joint``.

Mapping (URDF -> kic):

* ``revolute`` and ``continuous`` joints -> ``"R"``, ``prismatic`` -> ``"P"``;
  the joint frame is ``<origin>`` (xyz, rpy with ``R = Rz(yaw) Ry(pitch)
  Rx(roll)``) in the parent link frame and the child link frame is the joint
  frame, the ``<axis>`` (any direction, normalised) is given in it.
* ``fixed`` joints merge the child link into its parent (mass, centroid and
  inertia combined); the merged link's frame stays available in the returned
  object's ``fixed_frames`` mapping: URDF link name -> (kic body or link name,
  4x4 placement in that body's frame), the base (or ground) being ``None``
  (chain) or ``"ground"`` (mechanism).
* ``<inertial>``: mass (kg), centroid ``origin/xyz`` (m) and inertia (kg m^2)
  about the centroid in the axes ``origin/rpy``, rotated into the link axes.
* ``<limit lower upper>``: kic joints have no range, so the limits are kept in
  a ``limits`` mapping (joint name -> (lower, upper), rad or m) on the
  returned object; ``continuous`` joints have none.
* ``<mimic joint multiplier offset>``: the joint is a dependent coordinate
  ``phi = multiplier * phi_master + offset``; :class:`MimicModel` transfers
  the full-joint model to the independent joints (``phi = G q + c``, a
  constant transfer ``G^phi_q`` with ``H^phi_qq = 0``, :class:`kic.Transfer`).
* ``floating`` and ``planar`` joints raise :class:`kic.ModelError` (kic models
  a fixed base with one-degree-of-freedom joints); ``<visual>``,
  ``<collision>``, meshes, ``<transmission>``, ``<gazebo>`` are ignored.

Exports (:func:`to_urdf`) write a serial chain or a loop-free mechanism as
URDF with every number in full precision (``repr``), so that import of the
export gives the same model to rounding.  URDF has no gravity: pass it to the
importer (default ``(0, 0, -9.81)`` m/s^2, the ROS convention).
"""
from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .chain import Joint, Link, SerialChain
from .errors import ModelError
from .topology import GROUND, Mechanism
from .transfer import Transfer, transfer_influence

__all__ = ["UrdfRobot", "parse_urdf", "chain_from_urdf", "mechanism_from_urdf", "to_urdf",
           "MimicModel", "rpy_matrix", "matrix_rpy"]

_MOVING = {"revolute": "R", "continuous": "R", "prismatic": "P"}
_UNSUPPORTED = ("floating", "planar")


# --------------------------------------------------------------------------
# rotations
# --------------------------------------------------------------------------
def rpy_matrix(rpy) -> np.ndarray:
    """URDF rotation ``Rz(yaw) Ry(pitch) Rx(roll)`` of ``rpy = (roll, pitch, yaw)`` (rad)."""
    r, p, y = (float(a) for a in rpy)
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def matrix_rpy(R) -> tuple[float, float, float]:
    """``(roll, pitch, yaw)`` (rad) with ``rpy_matrix(matrix_rpy(R)) == R`` to rounding.

    At pitch = +-pi/2 (gimbal lock) only roll -+ yaw is defined; yaw = 0 is taken.
    """
    R = np.asarray(R, float)
    cp = math.hypot(R[0, 0], R[1, 0])
    pitch = math.atan2(-R[2, 0], cp)
    if cp > 1e-9:
        return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])
    # gimbal lock: R = Ry(+-pi/2) Rx(roll') with yaw folded into roll'
    return math.atan2(-R[1, 2], R[1, 1]), pitch, 0.0


def _transform(R=None, p=None) -> np.ndarray:
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def rigid_inverse(T: np.ndarray) -> np.ndarray:
    """Inverse of a 4x4 rigid transform, ``[R^T, -R^T p]``."""
    R, p = T[:3, :3], T[:3, 3]
    return _transform(R.T, -R.T @ p)


# --------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------
@dataclass
class UrdfLink:
    """A URDF link: mass (kg), centroid (m) and inertia about it in link axes (kg m^2)."""

    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


@dataclass
class UrdfJoint:
    """A URDF joint: ``kind`` "R", "P" or "fixed"; origin in the parent link frame."""

    name: str
    type: str
    kind: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    limit: tuple | None = None
    mimic: tuple | None = None          # (master, multiplier, offset)


class UrdfRobot:
    """A parsed, checked URDF tree.

    Attributes
    ----------
    name : str
    links : dict[str, UrdfLink]
    joints : dict[str, UrdfJoint]
        In document order.
    root : str
        The one link that is no joint's child.
    parent_joint : dict[str, UrdfJoint]
        The joint whose child each non-root link is.
    """

    def __init__(self, name: str, links: dict, joints: dict) -> None:
        self.name, self.links, self.joints = name, links, joints
        self.parent_joint: dict[str, UrdfJoint] = {}
        self.children: dict[str, list[UrdfJoint]] = {n: [] for n in links}
        for j in joints.values():
            for side in ("parent", "child"):
                if getattr(j, side) not in links:
                    raise ModelError(f"URDF joint {j.name!r}: its {side} link "
                                     f"{getattr(j, side)!r} is not a <link> of the robot")
            if j.child in self.parent_joint:
                raise ModelError(f"URDF joint {j.name!r}: link {j.child!r} is already the child "
                                 f"of joint {self.parent_joint[j.child].name!r}; a URDF is a "
                                 "tree (close loops afterwards with Mechanism.add_joint)")
            self.parent_joint[j.child] = j
            self.children[j.parent].append(j)
        roots = [n for n in links if n not in self.parent_joint]
        if not roots:
            raise ModelError("URDF joints form a cycle: every link is some joint's child "
                             f"(links {sorted(links)})")
        if len(roots) > 1:
            raise ModelError(f"URDF has several root links {roots}: every link but one must be "
                             "the child of a joint (a robot is one tree)")
        self.root = roots[0]
        seen, stack = {self.root}, [self.root]
        while stack:
            for j in self.children[stack.pop()]:
                seen.add(j.child)
                stack.append(j.child)
        lost = [n for n in links if n not in seen]
        if lost:
            raise ModelError(f"URDF joints form a cycle through links {lost} (not reachable "
                             f"from the root link {self.root!r})")
        for j in joints.values():
            if j.mimic is not None:
                m = joints.get(j.mimic[0])
                if m is None:
                    raise ModelError(f"URDF joint {j.name!r}: <mimic> names unknown joint "
                                     f"{j.mimic[0]!r}")
                if m.kind == "fixed" or m.name == j.name:
                    raise ModelError(f"URDF joint {j.name!r}: <mimic> joint {m.name!r} must be "
                                     "another revolute, continuous or prismatic joint")
        # group links that are rigidly joined: body[link] = (top link, T link in top)
        self.body: dict[str, tuple[str, np.ndarray]] = {}
        for n in self._order():
            j = self.parent_joint.get(n)
            if j is None or j.kind != "fixed":
                self.body[n] = (n, np.eye(4))
            else:
                top, T = self.body[j.parent]
                self.body[n] = (top, T @ j.origin)

    def _order(self) -> list[str]:
        """Links, parents before children (depth first, document order)."""
        out, stack = [], [self.root]
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(j.child for j in reversed(self.children[n]))
        return out

    def moving_joints(self) -> list[UrdfJoint]:
        """Revolute, continuous and prismatic joints, parents first (depth first)."""
        return [self.parent_joint[n] for n in self._order()
                if n in self.parent_joint and self.parent_joint[n].kind != "fixed"]

    def body_link(self, top: str, check_triangle: bool = True) -> Link:
        """The mass properties of the rigid group with top link ``top`` (fixed joints merged)."""
        parts = []
        for n, (t, T) in self.body.items():
            if t == top:
                L = self.links[n]
                R = T[:3, :3]
                parts.append((L.mass, R @ L.com + T[:3, 3], R @ L.inertia @ R.T))
        m, c, I = _composite(parts)
        try:
            return Link(m, c, I, name=top, check_triangle=check_triangle)
        except ModelError as exc:       # a merged body of physical links is physical
            raise ModelError(f"URDF link {top!r} with its fixed children: {exc}") from None

    def limits(self, names=None) -> dict:
        return {j.name: j.limit for j in self.joints.values()
                if j.limit is not None and (names is None or j.name in names)}

    def mimic(self, names=None) -> dict:
        return {j.name: j.mimic for j in self.joints.values()
                if j.mimic is not None and (names is None or j.name in names)}


def _composite(parts):
    """Mass, centroid and inertia about it of rigidly joined parts (m, c, I about c)."""
    m = sum(p[0] for p in parts)
    # a massless part may still carry rotational inertia (PUMA 560's link 1)
    c = sum(p[0] * p[1] for p in parts) / m if m > 0 else np.zeros(3)
    I = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        d = ci - c
        I += Ii + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, I


def _floats(text, what: str, n: int = 3, default=None) -> np.ndarray:
    if text is None:
        if default is None:
            raise ModelError(f"{what} is missing")
        return np.array(default, float)
    try:
        v = np.array([float(x) for x in text.split()], float)
    except ValueError:
        raise ModelError(f"{what} = {text!r} is not {n} numbers") from None
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise ModelError(f"{what} = {text!r} must be {n} finite numbers")
    return v


def _scalar(elem, key: str, what: str, default=None) -> float:
    text = elem.get(key)
    if text is None:
        if default is None:
            raise ModelError(f"{what}: attribute {key!r} is missing")
        return float(default)
    try:
        v = float(text)
    except ValueError:
        raise ModelError(f"{what}: {key}={text!r} is not a number") from None
    if not math.isfinite(v):
        raise ModelError(f"{what}: {key}={text!r} is not finite")
    return v


def _origin(elem, what: str) -> np.ndarray:
    o = elem.find("origin")
    if o is None:
        return np.eye(4)
    xyz = _floats(o.get("xyz"), f"{what} <origin xyz>", default=(0.0, 0.0, 0.0))
    rpy = _floats(o.get("rpy"), f"{what} <origin rpy>", default=(0.0, 0.0, 0.0))
    return _transform(rpy_matrix(rpy), xyz)


def _read(source) -> ET.Element:
    if isinstance(source, bytes):
        text = source.decode()
    elif isinstance(source, (str, os.PathLike)):
        s = os.fspath(source)
        if s.lstrip().startswith("<"):
            text = s
        else:
            try:
                with open(s, encoding="utf-8") as f:
                    text = f.read()
            except OSError as exc:
                raise ModelError(f"cannot read URDF file {s!r}: {exc.strerror}") from None
    else:
        raise ModelError(f"a URDF is given as XML text or a file path, got "
                         f"{type(source).__name__}")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ModelError(f"URDF is not well-formed XML: {exc}") from None
    if root.tag != "robot":
        raise ModelError(f"URDF root element must be <robot>, got <{root.tag}>")
    return root


def parse_urdf(source, check_triangle: bool = True) -> UrdfRobot:
    """Read and check a URDF given as XML text, bytes or a file path.

    Raises :class:`kic.ModelError` naming the element at fault: not XML, a
    link or joint without a name or repeated, a joint without parent or child
    or naming a missing link, an unknown or unsupported joint type, a zero
    axis, a negative mass, an inertia that is not positive semi-definite or
    (``check_triangle``) violates ``I1 + I2 >= I3``, several roots, a cycle,
    a mimic of an unknown joint.
    """
    root = _read(source)
    links: dict[str, UrdfLink] = {}
    for k, e in enumerate(root.findall("link")):
        name = e.get("name")
        if not name:
            raise ModelError(f"URDF <link> number {k + 1} has no name")
        if name in links:
            raise ModelError(f"URDF link {name!r} is defined twice")
        what = f"URDF link {name!r}"
        inertial = e.find("inertial")
        L = UrdfLink(name)
        if inertial is not None:
            me = inertial.find("mass")
            mass = 0.0 if me is None else _scalar(me, "value", f"{what} <mass>")
            if mass < 0:
                raise ModelError(f"{what} <mass value={mass!r}>: a mass is >= 0 kg")
            ie = inertial.find("inertia")
            keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
            v = {k2: 0.0 for k2 in keys} if ie is None else \
                {k2: _scalar(ie, k2, f"{what} <inertia>", 0.0) for k2 in keys}
            Ic = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                           [v["ixz"], v["iyz"], v["izz"]]])
            try:                                    # checks PSD and the triangle inequality
                Link(mass, inertia=Ic, name=name, check_triangle=check_triangle)
            except ModelError as exc:
                raise ModelError(f"{what} <inertial>: {exc}") from None
            T = _origin(inertial, f"{what} <inertial>")
            R = T[:3, :3]
            L = UrdfLink(name, mass, T[:3, 3].copy(), R @ Ic @ R.T)
        links[name] = L
    if not links:
        raise ModelError("URDF has no <link>")
    joints: dict[str, UrdfJoint] = {}
    for k, e in enumerate(root.findall("joint")):
        name = e.get("name")
        if not name:
            raise ModelError(f"URDF <joint> number {k + 1} has no name")
        if name in joints:
            raise ModelError(f"URDF joint {name!r} is defined twice")
        what = f"URDF joint {name!r}"
        jtype = e.get("type")
        if jtype in _UNSUPPORTED:
            raise ModelError(f"{what}: type {jtype!r} is not supported; kic models a fixed "
                             "base with revolute, continuous, prismatic and fixed joints (a "
                             "floating base or planar joint can be written as a chain of "
                             "prismatic and revolute joints with massless links)")
        if jtype not in _MOVING and jtype != "fixed":
            raise ModelError(f"{what}: unknown joint type {jtype!r}; URDF types are revolute, "
                             "continuous, prismatic, fixed (floating, planar unsupported)")
        ends = {}
        for side in ("parent", "child"):
            s = e.find(side)
            if s is None or not s.get("link"):
                raise ModelError(f"{what}: <{side} link=...> is missing")
            ends[side] = s.get("link")
        if ends["parent"] == ends["child"]:
            raise ModelError(f"{what} joins link {ends['parent']!r} to itself")
        axis = np.array([1.0, 0.0, 0.0])            # the URDF default
        limit = mimic = None
        if jtype != "fixed":
            a = e.find("axis")
            if a is not None:
                axis = _floats(a.get("xyz"), f"{what} <axis xyz>", default=(1.0, 0.0, 0.0))
            n = float(np.linalg.norm(axis))
            if n < 1e-12:
                raise ModelError(f"{what}: <axis xyz> is zero")
            axis = axis / n
            le = e.find("limit")
            if le is not None and jtype != "continuous" and \
                    (le.get("lower") is not None or le.get("upper") is not None):
                lo = _scalar(le, "lower", f"{what} <limit>", 0.0)
                hi = _scalar(le, "upper", f"{what} <limit>", 0.0)
                if lo > hi:
                    raise ModelError(f"{what} <limit>: lower {lo} > upper {hi}")
                limit = (lo, hi)
            mi = e.find("mimic")
            if mi is not None:
                if not mi.get("joint"):
                    raise ModelError(f"{what} <mimic>: attribute 'joint' is missing")
                mimic = (mi.get("joint"), _scalar(mi, "multiplier", f"{what} <mimic>", 1.0),
                         _scalar(mi, "offset", f"{what} <mimic>", 0.0))
        joints[name] = UrdfJoint(name, jtype, _MOVING.get(jtype, "fixed"), ends["parent"],
                                 ends["child"], _origin(e, what), axis, limit, mimic)
    return UrdfRobot(root.get("name") or "robot", links, joints)


# --------------------------------------------------------------------------
# URDF -> kic
# --------------------------------------------------------------------------
def chain_from_urdf(source, base_link: str | None = None, tip_link: str | None = None,
                    gravity=(0.0, 0.0, -9.81), check_triangle: bool = True):
    """A :class:`kic.SerialChain` from the URDF path ``base_link`` -> ``tip_link``.

    Parameters
    ----------
    source : str, bytes or path
        URDF XML text or a file path.
    base_link : str, optional
        The link fixed to the world (its frame is the world frame); default the
        URDF root.
    tip_link : str, optional
        The last link; default the one leaf of the tree below ``base_link``
        (several leaves: give it, or use :func:`mechanism_from_urdf`).  If it is
        attached by fixed joints, their placement becomes the chain's ``tool``.
    gravity : array_like, shape (3,)
        m/s^2 in the world (base link) frame; URDF does not state it.
    check_triangle : bool
        Reject inertias that violate the triangle inequality (see :class:`kic.Link`).

    Returns
    -------
    kic.SerialChain or MimicModel
        The chain's joints are the moving joints of the path, its links their
        child links with everything fixed to them merged.  With mimic joints on
        the path, a :class:`MimicModel` of the chain in the independent joints.
        Attributes ``limits``, ``fixed_frames`` and ``mimic`` (see module docs).

    Notes
    -----
    Moving joints that branch off the chain's links raise ModelError (their
    motion would change the chain's dynamics); branches on the base link are
    fixed to the world and do not.
    """
    robot = parse_urdf(source, check_triangle)
    base = robot.root if base_link is None else base_link
    if base not in robot.links:
        raise ModelError(f"base_link {base!r} is not a link of the URDF (links: "
                         f"{sorted(robot.links)})")
    if tip_link is None:
        below = _subtree(robot, base)
        leaves = [n for n in below if not robot.children[n]]
        if len(leaves) != 1:
            raise ModelError(f"the URDF tree below {base!r} has {len(leaves)} leaves {leaves}; "
                             "give tip_link, or load the tree with Mechanism.from_urdf")
        tip_link = leaves[0]
    if tip_link not in robot.links:
        raise ModelError(f"tip_link {tip_link!r} is not a link of the URDF")
    path, n = [], tip_link
    while n != base:
        j = robot.parent_joint.get(n)
        if j is None:
            raise ModelError(f"tip_link {tip_link!r} is not below base_link {base!r}")
        path.append(j)
        n = j.parent
    path.reverse()
    moving = [j for j in path if j.kind != "fixed"]
    if not moving:
        raise ModelError(f"no revolute or prismatic joint between {base!r} and {tip_link!r}")
    on_path = {j.name for j in moving}
    # rigid groups along the chain: bodies are the moving joints' children
    tops = [j.child for j in moving]
    for t in tops:
        for n2, (top, _) in robot.body.items():
            if top != t:
                continue
            for j in robot.children[n2]:
                if j.kind != "fixed" and j.name not in on_path:
                    raise ModelError(f"URDF joint {j.name!r} moves link {j.child!r} off the "
                                     f"chain {base!r} -> {tip_link!r}; load the tree with "
                                     "Mechanism.from_urdf (or choose another tip_link)")
    # placement of the base link in its own group: the world frame is the base link
    base_top, T_base = robot.body[base]
    joints, links, prev = [], [], (base_top, T_base)
    for j in moving:
        top, T = robot.body[j.parent]
        if top != prev[0]:                    # cannot happen on a tree path
            raise ModelError(f"URDF joint {j.name!r} is not on the chain")
        origin = _inv(prev[1]) @ T @ j.origin
        joints.append(Joint(j.kind, j.axis, origin, name=j.name))
        links.append(robot.body_link(j.child, check_triangle))
        prev = (j.child, np.eye(4))
    tool = robot.body[tip_link][1]
    chain = SerialChain(joints, links, gravity=gravity, tool=tool, name=robot.name)
    names = [j.name for j in moving]
    chain.limits = robot.limits(names)
    chain.fixed_frames = {n: (None if top == base_top else top,
                              (_inv(T_base) @ T) if top == base_top else T)
                          for n, (top, T) in robot.body.items()
                          if top in tops or top == base_top}
    chain.mimic = robot.mimic(names)
    for j, (master, _, _) in chain.mimic.items():
        if master not in on_path:
            raise ModelError(f"URDF joint {j!r} mimics joint {master!r}, which is not on the "
                             f"chain {base!r} -> {tip_link!r}")
    if chain.mimic:
        model = MimicModel(chain, chain.mimic)
        model.limits, model.fixed_frames = chain.limits, chain.fixed_frames
        return model
    return chain


def _subtree(robot: UrdfRobot, top: str) -> list[str]:
    out, stack = [], [top]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(j.child for j in robot.children[n])
    return out


def mechanism_from_urdf(source, gravity=(0.0, 0.0, -9.81), check_triangle: bool = True,
                        name: str | None = None) -> Mechanism:
    """A :class:`kic.Mechanism` of the whole URDF tree (fixed base: the root link).

    Bodies are the rigid groups of links (fixed joints merged), named by their
    top link; the root group is ``"ground"``.  Joints keep their URDF names
    (revolute, continuous: ``"R"``; prismatic: ``"P"``), each body frame is
    its joint frame.  The returned mechanism carries ``limits``,
    ``fixed_frames`` and ``mimic`` (module docs); close loops with
    :meth:`kic.Mechanism.add_joint`, model it with :meth:`kic.Mechanism.model`
    and, with mimic joints, wrap the model in all joints in :class:`MimicModel`.
    """
    robot = parse_urdf(source, check_triangle)
    root = robot.root
    tops = [j.child for j in robot.moving_joints()]
    if GROUND in tops:
        raise ModelError(f"URDF link {GROUND!r} is moved by a joint; kic reserves that name "
                         "for the fixed base")
    mech = Mechanism(gravity=gravity, name=name or robot.name)
    for t in tops:
        mech.add_body(t, link=robot.body_link(t, check_triangle))
    rename = {root: GROUND}
    for j in robot.moving_joints():
        top, T = robot.body[j.parent]
        mech.add_joint(j.name, j.kind, rename.get(top, top), j.child, axis=j.axis,
                       origin=T @ j.origin)
    # equal bounds (a joint its limits lock) are no range of motion: a kic range needs
    # lower < upper, so such a joint keeps no range
    mech.limits = {k: v for k, v in robot.limits().items() if v[0] < v[1]}
    mech.mimic = robot.mimic()
    mech.fixed_frames = {n: (rename.get(top, top), T) for n, (top, T) in robot.body.items()}
    return mech


# --------------------------------------------------------------------------
# mimic joints: a constant transfer phi = G q + c
# --------------------------------------------------------------------------
class MimicModel:
    """A model in all joints seen in its independent joints (URDF mimic joints).

    Each mimic joint follows ``phi_j = multiplier * phi_master + offset``; with
    the independent joints q, ``phi = G q + c`` where ``G = G^phi_q`` is a
    constant selection-and-multiplier matrix and ``H^phi_qq = 0``.  The whole
    model follows by the transfer of coordinates (:class:`kic.Transfer`,
    docs/theory.md): ``I*_q = G^T I*_phi G``, ``P*_q = G^T o (G^T P*_phi G)``,
    ``T_q = G^T T_phi``.  The offset c moves the configuration only.

    Parameters
    ----------
    model : SerialChain or ClosedModel
        The model in all joints (``coordinate_names`` or ``joint_names``).
    mimic : mapping
        joint name -> (master joint name, multiplier, offset); masters may be
        mimic joints themselves (resolved), cycles raise ModelError.

    Attributes
    ----------
    coordinate_names : list of str
        The independent joints, in the model's order.
    dof : int
    G : ndarray, shape (N, M)
    c : ndarray, shape (N,)
        Offsets (rad or m).
    """

    def __init__(self, model, mimic: Mapping) -> None:
        names = list(getattr(model, "coordinate_names", None) or model.joint_names)
        self.model, self.mimic = model, dict(mimic)
        index = {n: k for k, n in enumerate(names)}
        for j, spec in self.mimic.items():
            if j not in index:
                raise ModelError(f"mimic joint {j!r} is not a coordinate of the model {names}")
            if len(spec) != 3 or spec[0] not in index:
                raise ModelError(f"mimic joint {j!r}: give (master joint, multiplier, offset) "
                                 f"with a master among {names}, got {spec!r}")
        free = [n for n in names if n not in self.mimic]
        if not free:
            raise ModelError("every joint mimics another: no independent coordinate")
        N, M = len(names), len(free)
        G, c = np.zeros((N, M)), np.zeros(N)
        for k, n in enumerate(free):
            G[index[n], k] = 1.0

        def resolve(n, seen):
            if n not in self.mimic:
                return G[index[n]], 0.0
            if n in seen:
                raise ModelError(f"mimic joints form a cycle through {sorted(seen)}")
            master, mult, off = self.mimic[n]
            g, c0 = resolve(master, seen | {n})
            return mult * g + 0.0, mult * c0 + off     # + 0.0: no -0.0

        for n in self.mimic:
            G[index[n]], c[index[n]] = resolve(n, set())
        self.G, self.c = G, c
        self.coordinate_names = free
        self.dof = M
        self.name = getattr(model, "name", None)

    def __repr__(self) -> str:
        return f"<MimicModel {self.dof} of {self.G.shape[0]} joints: {self.coordinate_names}>"

    # ------------------------------------------------------------- maps
    def _q(self, q, what="q") -> np.ndarray:
        q = np.asarray(q, float)
        if q.ndim == 0 or q.shape[-1] != self.dof:
            raise ModelError(f"{what} must have shape (..., {self.dof}) (joints "
                             f"{self.coordinate_names}), got {q.shape}")
        return q

    def joints(self, q) -> np.ndarray:
        """All joint values ``phi = G q + c`` (..., N)."""
        return self._q(q) @ self.G.T + self.c

    def rates(self, qd) -> np.ndarray:
        """All joint rates (or accelerations) ``G q'`` (..., N)."""
        return self._q(qd, "rates") @ self.G.T

    def transfer(self, q) -> Transfer:
        """The constant transfer phi <- q at a batch q (``G``, ``H = 0``, ``D = 0``)."""
        batch = self._q(q).shape[:-1]
        N, M = self.G.shape
        return Transfer(np.broadcast_to(self.G, batch + (N, M)),
                        np.zeros(batch + (N, M, M)), np.zeros(batch + (N, M, M, M)))

    # ----------------------------------------------------------- the model
    def kinematics(self, q, order: int = 2) -> "MimicKinematics":
        """Influence coefficients in q: the full model's, transferred (chain rule)."""
        return MimicKinematics(self, q, order)

    def dynamics(self, q) -> "MimicDynamics":
        """I*, P*, gravity load and potential energy in q (see class docs)."""
        return MimicDynamics(self, q)

    def gravity_load(self, q) -> np.ndarray:
        """``G^T dV/dphi`` (..., M), N m or N."""
        return self.dynamics(q).gravity_load

    def inverse_dynamics(self, q, qd, qdd, loads=None) -> np.ndarray:
        """``G^T T_phi(phi, G q', G q'')`` (..., M): the full model's required loads
        transferred (``phi'' = G q''`` since H = 0)."""
        tau = self.model.inverse_dynamics(self.joints(q), self.rates(qd), self.rates(qdd),
                                          loads)
        return tau @ self.G

    def forward_dynamics(self, q, qd, tau, loads=None) -> np.ndarray:
        """``q'' = I*_q^-1 (T - G^T T_phi(phi, G q', 0))`` (..., M)."""
        bias = self.inverse_dynamics(q, qd, np.zeros_like(np.asarray(qd, float)), loads)
        I = self.dynamics(q).I_star
        rhs = np.asarray(tau, float) - bias
        return np.linalg.solve(I, rhs[..., None])[..., 0]

    def kinetic_energy(self, q, qd) -> np.ndarray:
        """``q'^T I* q' / 2`` (J)."""
        return self.dynamics(q).kinetic_energy(qd)

    def potential_energy(self, q) -> np.ndarray:
        """Gravitational potential energy (J) at ``phi(q)``."""
        return self.model.dynamics(self.joints(q)).potential_energy


class MimicDynamics:
    """The dynamic model of a :class:`MimicModel` at a batch q (I*, P*, loads)."""

    def __init__(self, model: MimicModel, q) -> None:
        self.q = model._q(q)
        self.full = model.model.dynamics(model.joints(q))
        self._tr = model.transfer(q)

    @property
    def dof(self) -> int:
        return self.q.shape[-1]

    @property
    def I_star(self) -> np.ndarray:
        return self._tr.inertia(self.full.I_star)

    @property
    def P_star(self) -> np.ndarray:
        return self._tr.power(self.full.I_star, self.full.P_star)

    @property
    def gravity_load(self) -> np.ndarray:
        return self._tr.load(self.full.gravity_load)

    @property
    def potential_energy(self) -> np.ndarray:
        return self.full.potential_energy

    def velocity_term(self, qd) -> np.ndarray:
        """``q'^T P* q'`` (..., M)."""
        return np.einsum("...nml,...m,...l->...n", self.P_star, qd, qd)

    def kinetic_energy(self, qd) -> np.ndarray:
        qd = np.asarray(qd, float)
        return 0.5 * np.einsum("...m,...mn,...n->...", qd, self.I_star, qd)

    def torque(self, qd, qdd) -> np.ndarray:
        """``I* q'' + q'^T P* q' + gravity load`` (..., M)."""
        return (np.einsum("...mn,...n->...m", self.I_star, np.asarray(qdd, float))
                + self.velocity_term(qd) + self.gravity_load)

    def acceleration(self, qd, tau) -> np.ndarray:
        """``I*^-1 (T - q'^T P* q' - gravity load)`` (..., M)."""
        rhs = np.asarray(tau, float) - self.velocity_term(qd) - self.gravity_load
        return np.linalg.solve(self.I_star, rhs[..., None])[..., 0]


class MimicKinematics:
    """Influence coefficients of a :class:`MimicModel`: every method of the full
    model's kinematics that returns an :class:`kic.Influence` (``point``,
    ``rotation``, ``tool``...) returns it transferred to q."""

    def __init__(self, model: MimicModel, q, order: int = 2) -> None:
        self.full = model.model.kinematics(model.joints(q), order)
        self._tr = model.transfer(q)

    def __getattr__(self, name):
        attr = getattr(self.full, name)
        if not callable(attr):
            return attr
        from .kinematics import Influence

        def call(*args, **kwargs):
            out = attr(*args, **kwargs)
            if isinstance(out, Influence):
                return Influence(*transfer_influence(out.G, out.H, out.D,
                                                     self._tr.G, self._tr.H, self._tr.D))
            return out
        return call


# --------------------------------------------------------------------------
# kic -> URDF
# --------------------------------------------------------------------------
def format_number(x: float) -> str:
    """A float in full precision for XML (``repr``: reads back exactly)."""
    x = float(x)
    return "0" if x == 0 else repr(x)


def format_vector(v) -> str:
    """Numbers separated by spaces, each as :func:`format_number`."""
    return " ".join(_num(x) for x in v)


def _origin_xml(T: np.ndarray) -> str:
    return f'<origin xyz="{_vec(T[:3, 3])}" rpy="{_vec(matrix_rpy(T[:3, :3]))}"/>'


def _link_xml(name: str, mass: float, com, I) -> str:
    if mass == 0 and not np.any(I):
        return f'  <link name="{_esc(name)}"/>'
    I = 0.5 * (np.asarray(I) + np.asarray(I).T)
    return (f'  <link name="{_esc(name)}">\n    <inertial>\n'
            f'      <origin xyz="{_vec(com)}" rpy="0 0 0"/>\n'
            f'      <mass value="{_num(mass)}"/>\n'
            f'      <inertia ixx="{_num(I[0, 0])}" ixy="{_num(I[0, 1])}" ixz="{_num(I[0, 2])}" '
            f'iyy="{_num(I[1, 1])}" iyz="{_num(I[1, 2])}" izz="{_num(I[2, 2])}"/>\n'
            f'    </inertial>\n  </link>')


def xml_escape(s: str) -> str:
    """A name escaped for an XML attribute value."""
    return (str(s).replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
            .replace(">", "&gt;"))


# short names for this module's XML writers (and kic.mjcf's)
_num, _vec, _esc, _inv = format_number, format_vector, xml_escape, rigid_inverse


def _joint_xml(name, kind, parent, child, T, axis=None, limit=None, mimic=None) -> str:
    if kind == "fixed":
        jtype = "fixed"
    elif kind == "P":
        jtype = "prismatic"
    else:
        jtype = "revolute" if limit is not None else "continuous"
    out = [f'  <joint name="{_esc(name)}" type="{jtype}">',
           f'    <parent link="{_esc(parent)}"/>', f'    <child link="{_esc(child)}"/>',
           f'    {_origin_xml(T)}']
    if kind != "fixed":
        out.append(f'    <axis xyz="{_vec(axis)}"/>')
        if limit is not None:
            out.append(f'    <limit lower="{_num(limit[0])}" upper="{_num(limit[1])}" '
                       'effort="0" velocity="0"/>')
        elif kind == "P":
            out.append('    <limit effort="0" velocity="0"/>')
        if mimic is not None:
            out.append(f'    <mimic joint="{_esc(mimic[0])}" multiplier="{_num(mimic[1])}" '
                       f'offset="{_num(mimic[2])}"/>')
    out.append("  </joint>")
    return "\n".join(out)


def _unique(name: str, taken) -> str:
    out, k = name, 1
    while out in taken:
        k += 1
        out = f"{name}_{k}"
    return out


def to_urdf(model, name: str | None = None, limits: Mapping | None = None,
            base_link: str = "base") -> str:
    """URDF text of a serial chain or a loop-free mechanism (numbers in full precision).

    Parameters
    ----------
    model : SerialChain, Mechanism or MimicModel
        A mechanism must be a tree (no loops; for loops see
        :func:`kic.mjcf.to_mjcf`); a :class:`MimicModel` writes its
        ``<mimic>`` elements.
    name : str, optional
        The robot name (default the model's).
    limits : mapping, optional
        joint name -> (lower, upper) (rad, m); default the model's ``limits``
        attribute (set by the importer).  Revolute joints without limits are
        written ``continuous``.
    base_link : str
        Name of the root link of a chain (the world); a mechanism's root is
        ``"ground"``.

    Notes
    -----
    Each URDF link frame is its joint frame; mass properties are written in it
    (centroid and inertia in link axes, ``rpy = 0``).  The chain's ``base``
    goes into the first joint's origin, its ``tool`` becomes a fixed joint
    ``"tool_joint"`` to a massless link ``"tool"``.  Gravity is not part of
    URDF.  A compound joint (U, C, S) of a mechanism is written as its
    revolute and prismatic joints with massless links between them.
    """
    mimic = None
    if isinstance(model, MimicModel):
        mimic, model = model.mimic, model.model
    lim = dict(getattr(model, "limits", None) or {})
    if limits is not None:
        lim.update(limits)
    mimic = mimic or getattr(model, "mimic", None) or {}
    if isinstance(model, SerialChain):
        links, joints = chain_parts(model, base_link)
    elif isinstance(model, Mechanism):
        links, joints = _mechanism_parts(model)
    else:
        raise ModelError(f"to_urdf takes a SerialChain, a loop-free Mechanism or a MimicModel, "
                         f"got {type(model).__name__}")
    robot = name or getattr(model, "name", None) or "robot"
    body = [f'<?xml version="1.0"?>', f'<robot name="{_esc(robot)}">']
    body += [_link_xml(*L) for L in links]
    body += [_joint_xml(n, k, p, c, T, a, lim.get(n), mimic.get(n))
             for n, k, p, c, T, a in joints]
    body.append("</robot>")
    return "\n".join(body) + "\n"


def chain_parts(chain: SerialChain, base_link: str):
    """A chain as URDF links ``(name, mass, com, inertia in the link frame)`` and
    joints ``(name, kind, parent, child, origin, axis)``; the tool a fixed joint."""
    taken = set(chain.link_names)
    base = _unique(base_link, taken)
    links = [(base, 0.0, np.zeros(3), np.zeros((3, 3)))]
    joints = []
    prev = base
    for k, (j, L) in enumerate(zip(chain.joints, chain.links)):
        F = chain.frame_offsets[k]
        R = F[:3, :3]
        links.append((chain.link_names[k], L.mass, R @ L.com + F[:3, 3], R @ L.inertia @ R.T))
        origin = chain.base @ j.origin if k == 0 else j.origin
        joints.append((chain.joint_names[k], j.kind, prev, chain.link_names[k], origin, j.axis))
        prev = chain.link_names[k]
    tool = chain.frame_offsets[-1] @ chain.tool
    if not np.allclose(tool, np.eye(4), rtol=0, atol=0):
        tname = _unique("tool", taken | {base})
        links.append((tname, 0.0, np.zeros(3), np.zeros((3, 3))))
        joints.append((_unique("tool_joint", set(chain.joint_names)), "fixed", prev, tname,
                       tool, None))
    return links, joints


def mechanism_joints(mech: Mechanism) -> list:
    """The one-degree-of-freedom joints of a mechanism in ``primitive_joints`` order.

    Each item has ``name``, ``kind`` ("R"/"P"), ``axis``, ``parent``, ``child``
    (bodies, intermediate ones of U/C/S joints included), ``origin`` and
    ``child_origin`` (4x4, the joint frame in either body's frame at zero) and
    ``compound`` (the U/C/S joint's name or None).  Read from the mechanism's
    public graph (edge attribute ``primitive``); kic has no public accessor
    for them yet.
    """
    found = {}
    for _, _, key, data in mech.graph.edges(keys=True, data=True):
        p = data.get("primitive")
        if p is not None and not p.virtual:
            found[key] = p
    return [found[n] for n in mech.primitive_joints]


def body_link(mech: Mechanism, body: str) -> Link | None:
    """The :class:`kic.Link` (mass properties) of a body of a mechanism (None: ground)."""
    if body not in mech.graph:
        raise ModelError(f"unknown body {body!r}")
    return mech.graph.nodes[body].get("link")


def _mechanism_parts(mech: Mechanism):
    prims = mechanism_joints(mech)
    nodes = list(mech.graph.nodes)
    if len(prims) != len(nodes) - 1:
        raise ModelError(f"mechanism {mech.name!r} has {len(prims) - len(nodes) + 1} loop(s); "
                         "URDF describes trees only: export it with to_mjcf, or cut the "
                         "loops")
    adj: dict = {n: [] for n in nodes}
    for p in prims:
        adj[p.parent].append(p)
        adj[p.child].append(p)
    X = {GROUND: np.eye(4)}                 # body frame in its URDF link frame
    links, joints = [], []
    order = [GROUND]
    for b in order:
        for p in adj[b]:
            other = p.child if p.parent == b else p.parent
            if other in X:
                continue
            if p.parent == b:               # forward: child link frame = joint frame
                O, C, axis = p.origin, p.child_origin, p.axis
            else:                           # the tree runs the joint backwards
                O, C, axis = p.child_origin, p.origin, -p.axis
            X[other] = _inv(C)
            joints.append((p.name, p.kind, b, other, X[b] @ O, axis))
            order.append(other)
    if len(order) != len(nodes):
        lost = sorted(set(nodes) - set(order))
        raise ModelError(f"bodies {lost} are not connected to the ground")
    for b in order:
        L = body_link(mech, b)
        if L is None:
            links.append((b, 0.0, np.zeros(3), np.zeros((3, 3))))
            continue
        T = X[b]
        R = T[:3, :3]
        links.append((b, L.mass, R @ L.com + T[:3, 3], R @ L.inertia @ R.T))
    return links, joints


# The description classes offer URDF as a constructor and a method
# (SerialChain.from_urdf, Mechanism.to_urdf, ...).  They are attached here, where
# the format lives, so that chain.py and topology.py stay below the file formats in
# the data flow and import nothing of them (no import circle).
def _chain_from_urdf(cls, source, base_link: str | None = None, tip_link: str | None = None,
                     gravity=(0.0, 0.0, -9.81), check_triangle: bool = True):
    """The chain ``base_link`` -> ``tip_link`` of a URDF (text or path); see
    :func:`kic.urdf.chain_from_urdf` (with mimic joints: a ``MimicModel``)."""
    return chain_from_urdf(source, base_link, tip_link, gravity, check_triangle)


def _mechanism_from_urdf(cls, source, gravity=(0.0, 0.0, -9.81), check_triangle: bool = True,
                         name: str | None = None):
    """The whole tree of a URDF (text or path) as a :class:`kic.Mechanism`; close its
    loops with :meth:`~kic.Mechanism.add_joint` (see :func:`kic.urdf.mechanism_from_urdf`)."""
    return mechanism_from_urdf(source, gravity=gravity, check_triangle=check_triangle,
                               name=name)


def _to_urdf(self, name: str | None = None, limits=None) -> str:
    """URDF text of this chain or loop-free mechanism (:func:`kic.urdf.to_urdf`)."""
    return to_urdf(self, name=name, limits=limits)


SerialChain.from_urdf = classmethod(_chain_from_urdf)
Mechanism.from_urdf = classmethod(_mechanism_from_urdf)
SerialChain.to_urdf = _to_urdf
Mechanism.to_urdf = _to_urdf
