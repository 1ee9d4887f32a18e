"""Robots from URDF files, and back.

URDF (the Unified Robot Description Format of ROS) describes a *tree* of links
joined by joints.  kic reads it with the standard library's
:mod:`xml.etree.ElementTree` (no dependency; URDF needs no more than elements
and attributes) into

* a :class:`kic.SerialChain` (:func:`chain_from_urdf`, ``SerialChain.from_urdf``):
  the chain of moving joints, found by itself when the file holds one chain
  (fixed leaves such as a UR arm's ``tool0`` stay as named frames), or the path
  from a base link to a tip link;
* a :class:`kic.Mechanism` (:func:`mechanism_from_urdf`, ``Mechanism.from_urdf``):
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
  (chain) or ``"ground"`` (mechanism); ``fixed_joints`` maps each merged link
  to the name of its fixed joint (the URDF export writes them back).
* ``<inertial>``: mass (kg), centroid ``origin/xyz`` (m) and inertia (kg m^2)
  about the centroid in the axes ``origin/rpy``, rotated into the link axes.
* ``<limit lower upper>``: kept in a ``limits`` mapping (joint name -> (lower,
  upper), rad or m) on a chain, as joint ranges on a mechanism; ``continuous``
  joints have none.
* ``<mimic joint multiplier offset>``: the joint is a dependent coordinate
  ``phi = multiplier * phi_master + offset`` (:class:`kic.MimicModel`).
* ``floating`` and ``planar`` joints raise :class:`kic.ModelError` (kic models
  a fixed base with one-degree-of-freedom joints); ``<visual>``,
  ``<collision>``, meshes, ``<transmission>``, ``<gazebo>`` are ignored.

What is loaded as the file states, and said (``strict=False``, the default,
loads what Pinocchio loads):

* an inertia that is not physical (not positive semi-definite, or principal
  moments against the triangle inequality ``I1 + I2 >= I3``) beyond
  :data:`kic.settings.INERTIA_RTOL` of the link's own scale (round-off zeros
  pass) is kept as given, and one :class:`RepairWarning` lists every such link
  and its defect;
* a ``<mimic>`` naming a joint that does not exist (or a fixed joint, or
  itself) is dropped, in the same warning;
* links that never move (the root link and the links fixed to it) are not
  checked: they never enter the model.

With ``strict=True`` each of these raises :class:`kic.ModelError` naming the
links and joints.  Hostile XML (entity declarations: entity expansion,
external entities) is always refused.

Exports (:func:`to_urdf`) write a serial chain or a loop-free mechanism as
URDF with every number in full precision (``repr``), so that import of the
export gives the same model to rounding; the fixed links of an imported model
are written back as fixed joints.  URDF has no gravity: pass it to the
importer (default ``(0, 0, -9.81)`` m/s^2, the ROS convention).
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..chain import Joint, Link, SerialChain, composite_body, inertia_defects, inertia_scale
from ..errors import ModelError
from ..mimic import MimicModel
from ..settings import PARALLEL_SINE
from ..topology import GROUND, Mechanism
from ._xml import RepairWarning, format_number as _num, format_vector as _vec, read_xml
from ._xml import rigid_inverse as _inv, without_gc, xml_escape as _esc

__all__ = ["UrdfRobot", "parse_urdf", "chain_from_urdf", "mechanism_from_urdf", "to_urdf",
           "rpy_matrix", "matrix_rpy", "chain_parts", "mechanism_joints", "body_link"]

_MOVING = {"revolute": "R", "continuous": "R", "prismatic": "P"}
_UNSUPPORTED = ("floating", "planar")
_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
_IDENTITY = np.eye(4)           # copied, never handed out (np.eye costs 10x a copy)


# --------------------------------------------------------------------------
# rotations
# --------------------------------------------------------------------------
def _rpy_rows(roll: float, pitch: float, yaw: float) -> list[float]:
    """The 9 entries (row by row) of ``Rz(yaw) Ry(pitch) Rx(roll)``, in Python floats:
    a file's origins are converted one by one, and numpy's cost per call would be most
    of the work."""
    if not (roll or pitch or yaw):
        return [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, -0.0, 0.0, 1.0]
    cr, cp, cy = math.cos(roll), math.cos(pitch), math.cos(yaw)
    sr, sp, sy = math.sin(roll), math.sin(pitch), math.sin(yaw)
    return [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr,
            sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr,
            -sp, cp * sr, cp * cr]


def rpy_matrix(rpy) -> np.ndarray:
    """URDF rotation ``Rz(yaw) Ry(pitch) Rx(roll)`` of ``rpy = (roll, pitch, yaw)`` (rad);
    batched: ``rpy`` (..., 3) gives (..., 3, 3)."""
    rpy = np.asarray(rpy, float)
    rows = [_rpy_rows(*r) for r in rpy.reshape(-1, 3).tolist()]
    return np.array(rows, float).reshape(rpy.shape[:-1] + (3, 3))


def matrix_rpy(R) -> tuple[float, float, float]:
    """``(roll, pitch, yaw)`` (rad) with ``rpy_matrix(matrix_rpy(R)) == R`` to rounding.

    At pitch = +-pi/2 (gimbal lock) only roll -+ yaw is defined; yaw = 0 is taken.
    """
    R = np.asarray(R, float)
    cp = math.hypot(R[0, 0], R[1, 0])
    pitch = math.atan2(-R[2, 0], cp)
    if cp > PARALLEL_SINE:        # (below, roll and yaw from entries scaled by cp lose digits)
        return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])
    # gimbal lock: R = Ry(+-pi/2) Rx(roll') with yaw folded into roll'
    return math.atan2(-R[1, 2], R[1, 1]), pitch, 0.0


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
    body : dict[str, tuple[str, ndarray]]
        Each link's rigid group: (top link, 4x4 placement in the top's frame).
    dropped_mimics : dict[str, str]
        ``<mimic>`` elements dropped (joint name -> why): their master is no
        other moving joint of the robot.
    """

    def __init__(self, name: str, links: dict, joints: dict) -> None:
        self.name, self.links, self.joints = name, links, joints
        self.parent_joint: dict[str, UrdfJoint] = {}
        self.children: dict[str, list[UrdfJoint]] = {n: [] for n in links}
        for j in joints.values():
            if j.parent not in links or j.child not in links:
                side, link = ("parent", j.parent) if j.parent not in links else \
                    ("child", j.child)
                raise ModelError(f"URDF joint {j.name!r}: its {side} link {link!r} is "
                                 "not a <link> of the robot")
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
        self.order = order = self._order()      # links, parents first (depth first)
        if len(order) != len(links):
            lost = [n for n in links if n not in set(order)]
            raise ModelError(f"URDF joints form a cycle through links {lost} (not reachable "
                             f"from the root link {self.root!r})")
        self.dropped_mimics: dict[str, str] = {}
        for j in joints.values():
            if j.mimic is not None:
                m = joints.get(j.mimic[0])
                if m is None:
                    why = f"names unknown joint {j.mimic[0]!r}"
                elif m.kind == "fixed" or m.name == j.name:
                    why = (f"joint {m.name!r} is not another revolute, continuous or "
                           "prismatic joint")
                else:
                    continue
                self.dropped_mimics[j.name] = why
                j.mimic = None
        # group links that are rigidly joined: body[link] = (top link, T link in top)
        self.body: dict[str, tuple[str, np.ndarray]] = {}
        self.members: dict[str, list[str]] = {}      # top link -> the links of its group
        for n in order:
            j = self.parent_joint.get(n)
            if j is None or j.kind != "fixed":
                self.body[n] = (n, _IDENTITY.copy())
                self.members[n] = [n]
            else:
                top, T = self.body[j.parent]
                self.body[n] = (top, j.origin.copy() if top == j.parent else T @ j.origin)
                self.members[top].append(n)

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
        parent_joint = self.parent_joint
        return [j for j in map(parent_joint.get, self.order)
                if j is not None and j.kind != "fixed"]

    def body_links(self, tops) -> list[Link]:
        """The mass properties of the rigid groups with top links ``tops`` (fixed joints
        merged), as the file states them (defects are reported by the importers)."""
        masses, coms, inertias = [], [], []
        merged = []                             # (index, parts) of the groups to combine
        for top in tops:
            L = self.links[top]
            parts = [(L.mass, L.com, L.inertia)]
            for n in self._carrying(top):
                L = self.links[n]
                T = self.body[n][1]
                R = T[:3, :3]
                parts.append((L.mass, R @ L.com + T[:3, 3], R @ L.inertia @ R.T))
            if len(parts) > 1:
                merged.append((len(masses), parts))
            masses.append(parts[0][0])
            coms.append(parts[0][1])
            inertias.append(parts[0][2])
        if merged:
            # all groups at once: composite_body is batched; a group with fewer parts is
            # padded with parts of zero mass and inertia (they add exact zeros)
            width = max(len(parts) for _, parts in merged)
            m = np.zeros((width, len(merged)))
            c = np.zeros((width, len(merged), 3))
            I = np.zeros((width, len(merged), 3, 3))
            for g, (_, parts) in enumerate(merged):
                for p, (mp, cp, Ip) in enumerate(parts):
                    m[p, g], c[p, g], I[p, g] = mp, cp, Ip
            m, c, I = composite_body(list(zip(m, c, I)))
            for g, (k, _) in enumerate(merged):
                masses[k], coms[k], inertias[k] = m[g], c[g], I[g]
        return Link.many(masses, coms, inertias, tops, strict=False)

    def _carrying(self, top: str) -> list[str]:
        """The links fixed to ``top`` that carry mass or inertia (massless frames add
        nothing to a body)."""
        links = self.links
        return [n for n in self.members[top][1:]
                if links[n].mass != 0 or links[n].inertia.any()]

    def defects(self, tops, bodies: list[Link] | None = None) -> list[str]:
        """What is unphysical in the links of the rigid groups ``tops`` (the ones that
        move), one line each, and the dropped mimics.  ``bodies``, the groups'
        :meth:`body_links` if at hand, stand for the groups whose top link alone
        carries mass (the same test on the same numbers; massless frames have no
        defect)."""
        members = self.members
        alone = {} if bodies is None else \
            {t: L.defects for t, L in zip(tops, bodies)
             if len(members[t]) == 1 or not self._carrying(t)}
        names = [n for t in tops if t not in alone for n in members[t]]
        found = {}
        if names:
            L = [self.links[n] for n in names]
            I = np.array([x.inertia for x in L])
            scale = inertia_scale(I, np.array([x.mass for x in L]), np.array([x.com for x in L]))
            found = dict(zip(names, inertia_defects(I, scale)))
        notes = []
        for t in tops:
            if t in alone:
                notes += [f"link {t!r}: {d}" for d in alone[t]]
            else:
                notes += [f"link {n!r}: {found[n]}" for n in members[t] if found[n]]
        notes += [f"joint {j!r}: <mimic> {why}; dropped (the joint moves on its own)"
                  for j, why in self.dropped_mimics.items()]
        return notes

    def limits(self, names=None) -> dict:
        return {j.name: j.limit for j in self.joints.values()
                if j.limit is not None and (names is None or j.name in names)}

    def mimic(self, names=None) -> dict:
        return {j.name: j.mimic for j in self.joints.values()
                if j.mimic is not None and (names is None or j.name in names)}

    def fixed_joints(self, links) -> dict:
        """Merged link -> the name of its fixed joint, for the links ``links``."""
        return {n: self.parent_joint[n].name for n in links
                if n in self.parent_joint and self.parent_joint[n].kind == "fixed"}


def _report(robot: UrdfRobot, tops, strict: bool, bodies: list[Link]) -> None:
    """One warning (or, strict, one ModelError) for everything unphysical or broken;
    ``bodies`` are the groups' :meth:`UrdfRobot.body_links`."""
    notes = robot.defects(tops, bodies)
    if not notes:
        return
    lines = "\n".join(f"  - {n}" for n in notes)
    if strict:
        raise ModelError(f"URDF {robot.name!r} (strict=True):\n{lines}")
    warnings.warn(RepairWarning(
        f"URDF {robot.name!r} loaded as the file states it, with {len(notes)} "
        f"defect(s) (strict=True refuses them):\n{lines}"), stacklevel=3)


def _floats(text: str, what: str, part: str, seen: dict) -> tuple:
    """Three finite numbers of an attribute ``text`` of ``what``'s element ``part``
    (named in errors).  ``seen`` holds the strings converted before: a document
    repeats "0 0 0" and "0 0 1" hundreds of times."""
    v = seen.get(text)
    if v is not None:
        return v
    try:
        v = tuple(map(float, text.split()))
    except ValueError:
        raise ModelError(f"{what} {part} = {text!r} is not 3 numbers") from None
    # a sum is finite when every term is (only sums beyond 1e308 look twice)
    if len(v) != 3 or not math.isfinite(v[0] + v[1] + v[2]) and \
            not all(map(math.isfinite, v)):
        raise ModelError(f"{what} {part} = {text!r} must be 3 finite numbers")
    seen[text] = v
    return v


def _scalar(elem, key: str, what: str, part: str, default: float | None = None) -> float:
    """A finite number, attribute ``key`` of ``what``'s element ``part``."""
    text = elem.get(key)
    if text is None:
        if default is None:
            raise ModelError(f"{what} {part}: attribute {key!r} is missing")
        return default
    try:
        v = float(text)
    except ValueError:
        raise ModelError(f"{what} {part}: {key}={text!r} is not a number") from None
    if not math.isfinite(v):
        raise ModelError(f"{what} {part}: {key}={text!r} is not finite")
    return v


def _inertia(elem, what: str) -> tuple:
    """The six entries of ``what``'s ``<inertia>`` (missing ones 0), finite."""
    get = elem.get
    try:
        six = tuple(map(float, map(get, _INERTIA_KEYS, _ZERO6)))
    except ValueError:
        six = None
    if six is None or not math.isfinite(sum(six)) and not all(map(math.isfinite, six)):
        for key in _INERTIA_KEYS:                   # name the entry at fault
            _scalar(elem, key, what, "<inertia>", 0.0)
    return six


_ZERO3 = (0.0, 0.0, 0.0)
_ZERO6 = (0.0,) * 6
_X_AXIS = (1.0, 0.0, 0.0)                   # URDF's default joint axis


def _origin(elem, what: str, seen: dict) -> tuple:
    """``(xyz, rpy)`` of an element's ``<origin>`` (zeros where missing)."""
    o = elem.find("origin")
    if o is None:
        return _ZERO3, _ZERO3
    xyz, rpy = o.get("xyz"), o.get("rpy")
    return (_ZERO3 if xyz is None else _floats(xyz, what, "<origin xyz>", seen),
            _ZERO3 if rpy is None else _floats(rpy, what, "<origin rpy>", seen))


def _link(e, k: int, seen: dict) -> tuple:
    """A <link> as numbers: ``(name, mass, xyz, rpy, inertia entries)`` of its inertial
    (the arithmetic is done for all links at once, in :func:`parse_urdf`)."""
    name = e.get("name")
    if not name:
        raise ModelError(f"URDF <link> number {k + 1} has no name")
    inertial = e.find("inertial")
    if inertial is None:
        return name, 0.0, _ZERO3, _ZERO3, _ZERO6
    what = f"URDF link {name!r}"
    me = inertial.find("mass")
    mass = 0.0 if me is None else _scalar(me, "value", what, "<mass>")
    if mass < 0:
        raise ModelError(f"{what} <mass value={mass!r}>: a mass is >= 0 kg")
    ie = inertial.find("inertia")
    six = _ZERO6 if ie is None else _inertia(ie, what)
    return (name, mass, *_origin(inertial, f"{what} <inertial>", seen), six)


def _joint(e, k: int, seen: dict) -> tuple:
    """A <joint> as ``(UrdfJoint fields but origin and axis, xyz, rpy, axis)``."""
    name = e.get("name")
    if not name:
        raise ModelError(f"URDF <joint> number {k + 1} has no name")
    what = f"URDF joint {name!r}"
    jtype = e.get("type")
    kind = _MOVING.get(jtype) or ("fixed" if jtype == "fixed" else None)
    if kind is None:
        if jtype in _UNSUPPORTED:
            raise ModelError(f"{what}: type {jtype!r} is not supported; kic models a fixed "
                             "base with revolute, continuous, prismatic and fixed joints (a "
                             "floating base or planar joint can be written as a chain of "
                             "prismatic and revolute joints with massless links)")
        raise ModelError(f"{what}: unknown joint type {jtype!r}; URDF types are revolute, "
                         "continuous, prismatic, fixed (floating, planar unsupported)")
    ends = []
    for side in ("parent", "child"):
        s = e.find(side)
        link = None if s is None else s.get("link")
        if not link:
            raise ModelError(f"{what}: <{side} link=...> is missing")
        ends.append(link)
    if ends[0] == ends[1]:
        raise ModelError(f"{what} joins link {ends[0]!r} to itself")
    axis = _X_AXIS
    limit = mimic = None
    if kind != "fixed":
        a = e.find("axis")
        text = None if a is None else a.get("xyz")
        if text is not None:
            axis = _floats(text, what, "<axis xyz>", seen)
        if not any(axis):
            raise ModelError(f"{what}: <axis xyz> is zero")
        le = e.find("limit")
        if le is not None and jtype != "continuous" and \
                (le.get("lower") is not None or le.get("upper") is not None):
            lo = _scalar(le, "lower", what, "<limit>", 0.0)
            hi = _scalar(le, "upper", what, "<limit>", 0.0)
            if lo > hi:
                raise ModelError(f"{what} <limit>: lower {lo} > upper {hi}")
            limit = (lo, hi)
        mi = e.find("mimic")
        if mi is not None:
            if not mi.get("joint"):
                raise ModelError(f"{what} <mimic>: attribute 'joint' is missing")
            mimic = (mi.get("joint"), _scalar(mi, "multiplier", what, "<mimic>", 1.0),
                     _scalar(mi, "offset", what, "<mimic>", 0.0))
    return (name, jtype, kind, ends[0], ends[1], limit, mimic, *_origin(e, what, seen), axis)


def parse_urdf(source) -> UrdfRobot:
    """Read and check a URDF given as XML text, bytes or a file path.

    Raises :class:`kic.ModelError` naming the element at fault: not XML, XML
    that declares entities, a link or joint without a name or repeated, a joint
    without parent or child or naming a missing link, an unknown or unsupported
    joint type, a zero axis, a negative mass, several roots, a cycle.  Inertias
    and mimics are checked by the importers (only where they matter).
    """
    root = read_xml(source, "URDF", "robot")
    seen: dict = {}                         # attribute strings converted so far
    raw = [_link(e, k, seen) for k, e in enumerate([x for x in root if x.tag == "link"])]
    if not raw:
        raise ModelError("URDF has no <link>")
    # inertia about the centroid in link axes, rotated by the inertial's rpy where the
    # file gives one (few links do)
    I = np.array([(a, b, c, b, d, e, c, e, f) for *_, (a, b, c, d, e, f) in raw],
                 float).reshape(-1, 3, 3)
    turned = [k for k, r in enumerate(raw) if any(r[3])]
    if turned:
        R = rpy_matrix([raw[k][3] for k in turned])
        I[turned] = R @ I[turned] @ R.transpose(0, 2, 1)
    com = np.array([r[2] for r in raw], float)
    links: dict[str, UrdfLink] = {}
    for k, r in enumerate(raw):
        if r[0] in links:
            raise ModelError(f"URDF link {r[0]!r} is defined twice")
        links[r[0]] = UrdfLink(r[0], r[1], com[k], I[k])
    raw = [_joint(e, k, seen) for k, e in enumerate([x for x in root if x.tag == "joint"])]
    joints: dict[str, UrdfJoint] = {}
    if raw:
        # origins as 4x4 transforms and unit axes, one array each for all joints
        flat, axes = [], []
        for r in raw:
            R, (x, y, z), (u, v, w) = _rpy_rows(*r[8]), r[7], r[9]
            flat += (*R[0:3], x, *R[3:6], y, *R[6:9], z, 0.0, 0.0, 0.0, 1.0)
            n = math.sqrt(u * u + v * v + w * w)
            axes.append((u / n, v / n, w / n))
        origins = np.array(flat, float).reshape(-1, 4, 4)
        axes = np.array(axes, float)
        for k, r in enumerate(raw):
            if r[0] in joints:
                raise ModelError(f"URDF joint {r[0]!r} is defined twice")
            joints[r[0]] = UrdfJoint(*r[:5], origins[k], axes[k], *r[5:7])
    return UrdfRobot(root.get("name") or "robot", links, joints)


# --------------------------------------------------------------------------
# URDF -> kic
# --------------------------------------------------------------------------
@without_gc
def chain_from_urdf(source, base_link: str | None = None, tip_link: str | None = None,
                    gravity=(0.0, 0.0, -9.81), strict: bool = False):
    """A :class:`kic.SerialChain` of the moving joints of a URDF.

    Parameters
    ----------
    source : str, bytes, path or UrdfRobot
        URDF XML text, a file path, or a parsed robot.
    base_link : str, optional
        The link fixed to the world (its frame is the world frame); default the
        URDF root.
    tip_link : str, optional
        The last link.  By default the chain is found by itself: the moving
        joints below ``base_link`` must follow one another (fixed links may
        branch anywhere: they become ``fixed_frames``); the tool is the one
        fixed leaf of the last link, if there is exactly one.  Give it where
        moving joints branch (several fingers, legs); if it is attached by
        fixed joints, their placement becomes the chain's ``tool``.
    gravity : array_like, shape (3,)
        m/s^2 in the world (base link) frame; URDF does not state it.
    strict : bool
        Refuse unphysical inertias and broken mimics (module docs) with a
        :class:`kic.ModelError` instead of loading them with a
        :class:`RepairWarning`.

    Returns
    -------
    kic.SerialChain or kic.MimicModel
        The chain's joints are the moving joints of the path, its links their
        child links with everything fixed to them merged.  With mimic joints on
        the path, a :class:`kic.MimicModel` of the chain in the independent
        joints.  Attributes ``limits``, ``fixed_frames``, ``fixed_joints`` and
        ``mimic`` (module docs).

    Notes
    -----
    Moving joints that branch off the chain's links raise ModelError (their
    motion would change the chain's dynamics); branches on the base link are
    fixed to the world and do not.
    """
    robot = source if isinstance(source, UrdfRobot) else parse_urdf(source)
    base = robot.root if base_link is None else base_link
    if base not in robot.links:
        raise ModelError(f"base_link {base!r} is not a link of the URDF (links: "
                         f"{sorted(robot.links)})")
    if tip_link is None:
        moving, tip_link = _single_chain(robot, base)
    else:
        moving = _path(robot, base, tip_link)
    on_path = {j.name for j in moving}
    tops = [j.child for j in moving]
    links = robot.body_links(tops)
    _report(robot, tops, strict, links)
    base_top, T_base = robot.body[base]
    joints = []
    for k, j in enumerate(moving):
        top, T = robot.body[j.parent]
        if k == 0:                          # the first joint's origin in the base frame
            origin = _inv(T_base) @ T @ j.origin
        else:                               # the others' in their parent body's frame
            origin = j.origin if top == j.parent else T @ j.origin
        joints.append(Joint(j.kind, j.axis, origin, name=j.name))
    tool = robot.body[tip_link][1]
    chain = SerialChain(joints, links, gravity=gravity, tool=tool, name=robot.name)
    names = [j.name for j in moving]
    chain.limits = robot.limits(names)
    to_base = _inv(T_base)
    on_chain = set(tops)
    chain.fixed_frames = {n: (None, to_base @ T) if top == base_top else (top, T)
                          for n, (top, T) in robot.body.items()
                          if top in on_chain or top == base_top}
    chain.fixed_joints = robot.fixed_joints(chain.fixed_frames)
    chain.mimic = robot.mimic(names)
    for j, (master, _, _) in chain.mimic.items():
        if master not in on_path:
            raise ModelError(f"URDF joint {j!r} mimics joint {master!r}, which is not on the "
                             f"chain {base!r} -> {tip_link!r}")
    if chain.mimic:
        model = MimicModel(chain, chain.mimic)
        model.limits, model.fixed_frames = chain.limits, chain.fixed_frames
        model.fixed_joints = chain.fixed_joints
        return model
    return chain


def _single_chain(robot: UrdfRobot, base: str) -> tuple[list[UrdfJoint], str]:
    """The moving joints below ``base`` when they form one chain, and the tip link."""
    below = robot.links if base == robot.root else set(_subtree(robot, base))
    after: dict[str, list[UrdfJoint]] = {}     # rigid group -> moving joints on it
    for j in robot.moving_joints():
        if j.child in below:
            after.setdefault(robot.body[j.parent][0], []).append(j)
    moving, top = [], robot.body[base][0]
    while top in after:
        if len(after[top]) > 1:
            names = [j.name for j in after[top]]
            raise ModelError(f"the URDF is not one chain: moving joints {names} branch from "
                             f"link {top!r}; give tip_link (the last link of the branch to "
                             "follow), or load the tree with Mechanism.from_urdf")
        moving.append(after[top][0])
        top = moving[-1].child
    if not moving:
        raise ModelError(f"no revolute or prismatic joint below link {base!r}")
    leaves = [n for n, (t, _) in robot.body.items()
              if t == top and n != top and not robot.children[n]]
    return moving, (leaves[0] if len(leaves) == 1 else top)


def _path(robot: UrdfRobot, base: str, tip_link: str) -> list[UrdfJoint]:
    """The moving joints from ``base`` to ``tip_link``; none may branch off the path."""
    if tip_link not in robot.links:
        raise ModelError(f"tip_link {tip_link!r} is not a link of the URDF")
    path, n = [], tip_link
    while n != base:
        j = robot.parent_joint.get(n)
        if j is None:
            raise ModelError(f"tip_link {tip_link!r} is not below base_link {base!r}")
        path.append(j)
        n = j.parent
    moving = [j for j in reversed(path) if j.kind != "fixed"]
    if not moving:
        raise ModelError(f"no revolute or prismatic joint between {base!r} and {tip_link!r}")
    on_path = {j.name for j in moving}
    tops = {j.child for j in moving}
    for n2, (top, _) in robot.body.items():
        if top in tops:
            for j in robot.children[n2]:
                if j.kind != "fixed" and j.name not in on_path:
                    raise ModelError(f"URDF joint {j.name!r} moves link {j.child!r} off the "
                                     f"chain {base!r} -> {tip_link!r}; load the tree with "
                                     "Mechanism.from_urdf (or choose another tip_link)")
    return moving


def _subtree(robot: UrdfRobot, top: str) -> list[str]:
    out, stack = [], [top]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(j.child for j in robot.children[n])
    return out


@without_gc
def mechanism_from_urdf(source, gravity=(0.0, 0.0, -9.81), strict: bool = False,
                        name: str | None = None) -> Mechanism:
    """A :class:`kic.Mechanism` of the whole URDF tree (fixed base: the root link).

    Bodies are the rigid groups of links (fixed joints merged), named by their
    top link; the root group is ``"ground"``.  Joints keep their URDF names
    (revolute, continuous: ``"R"``; prismatic: ``"P"``), each body frame is
    its joint frame.  The returned mechanism carries ``limits``,
    ``fixed_frames``, ``fixed_joints`` and ``mimic`` (module docs); close loops
    with :meth:`kic.Mechanism.add_joint`, model it with
    :meth:`kic.Mechanism.model` and, with mimic joints, wrap the model in all
    joints in :class:`kic.MimicModel`.  ``strict``: as :func:`chain_from_urdf`.
    """
    robot = source if isinstance(source, UrdfRobot) else parse_urdf(source)
    root = robot.root
    moving = robot.moving_joints()
    tops = [j.child for j in moving]
    if GROUND in tops:
        raise ModelError(f"URDF link {GROUND!r} is moved by a joint; kic reserves that name "
                         "for the fixed base")
    bodies = robot.body_links(tops)
    _report(robot, tops, strict, bodies)
    mech = Mechanism(gravity=gravity, name=name or robot.name)
    for t, link in zip(tops, bodies):
        mech.add_body(t, link=link)
    rename = {root: GROUND}
    for j in moving:
        top, T = robot.body[j.parent]
        mech.add_joint(j.name, j.kind, rename.get(top, top), j.child, axis=j.axis,
                       origin=j.origin if top == j.parent else T @ j.origin)
    # equal bounds (a joint its limits lock) are no range of motion: a kic range needs
    # lower < upper, so such a joint keeps no range
    mech.limits = {k: v for k, v in robot.limits().items() if v[0] < v[1]}
    mech.mimic = robot.mimic()
    mech.fixed_frames = {n: (rename.get(top, top), T) for n, (top, T) in robot.body.items()}
    mech.fixed_joints = robot.fixed_joints(robot.links)
    return mech


# --------------------------------------------------------------------------
# kic -> URDF
# --------------------------------------------------------------------------
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
            base_link: str | None = None) -> str:
    """URDF text of a serial chain or a loop-free mechanism (numbers in full precision).

    Parameters
    ----------
    model : SerialChain, Mechanism or MimicModel
        A mechanism must be a tree (no loops; for loops see
        :func:`kic.io.mjcf.to_mjcf`); a :class:`kic.MimicModel` writes its
        ``<mimic>`` elements.
    name : str, optional
        The robot name (default the model's).
    limits : mapping, optional
        joint name -> (lower, upper) (rad, m); default the model's ``limits``.
        Revolute joints without limits are written ``continuous``.
    base_link : str, optional
        Name of the root link of a chain (the world); default the imported
        root link's name, or ``"base"``.  A mechanism's root is ``"ground"``.

    Notes
    -----
    Each URDF link frame is its joint frame; mass properties are written in it
    (centroid and inertia in link axes, ``rpy = 0``).  The chain's ``base``
    goes into the first joint's origin, its ``tool`` becomes a fixed joint
    ``"tool_joint"`` to a massless link ``"tool"`` unless a fixed frame of the
    last link is the tool.  The ``fixed_frames`` of an imported model are
    written as massless links on fixed joints (their mass is in the body they
    are fixed to), named as in the source file.  Gravity is not part of URDF.
    A compound joint (U, C, S) of a mechanism is written as its revolute and
    prismatic joints with massless links between them.
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
    body = ['<?xml version="1.0"?>', f'<robot name="{_esc(robot)}">']
    body += [_link_xml(*L) for L in links]
    body += [_joint_xml(n, k, p, c, T, a, lim.get(n), mimic.get(n))
             for n, k, p, c, T, a in joints]
    body.append("</robot>")
    return "\n".join(body) + "\n"


def _fixed_parts(model, place, links: list, joints: list) -> None:
    """Append the model's ``fixed_frames`` as massless links on fixed joints.

    ``place(body)`` gives the URDF link a body is written as and the body frame
    in that link's frame (None: the frame is not written)."""
    fixed = getattr(model, "fixed_frames", None) or {}
    names = getattr(model, "fixed_joints", None) or {}
    taken_links = {L[0] for L in links}
    taken_joints = {J[0] for J in joints}
    for n, (body, X) in fixed.items():
        where = place(body)
        if n in taken_links or where is None:
            continue
        link, F = where
        jname = _unique(names.get(n, f"{n}_joint"), taken_joints)
        taken_links.add(n)
        taken_joints.add(jname)
        links.append((n, 0.0, np.zeros(3), np.zeros((3, 3))))
        joints.append((jname, "fixed", link, n, F @ X, None))


def chain_parts(chain: SerialChain, base_link: str | None = None):
    """A chain as URDF links ``(name, mass, com, inertia in the link frame)`` and
    joints ``(name, kind, parent, child, origin, axis)``: its links, its tool and
    its ``fixed_frames`` (if imported) on fixed joints."""
    fixed = getattr(chain, "fixed_frames", None) or {}
    taken = set(chain.link_names)
    if base_link is None:                   # the imported root: at the world frame
        base_link = next((n for n, (b, X) in fixed.items()
                          if b is None and n not in taken and np.array_equal(X, np.eye(4))),
                         "base")
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
    index = {n: k for k, n in enumerate(chain.link_names)}

    def place(body):
        if body is None:
            return base, np.eye(4)
        return (body, np.eye(4)) if body in index else None

    _fixed_parts(chain, place, links, joints)
    tool = chain.frame_offsets[-1] @ chain.tool
    last = chain.link_names[-1]
    is_frame = any(b == last and np.array_equal(X, tool) for b, X in fixed.values())
    if not is_frame and not np.array_equal(tool, np.eye(4)):
        tname = _unique("tool", {L[0] for L in links})
        links.append((tname, 0.0, np.zeros(3), np.zeros((3, 3))))
        joints.append((_unique("tool_joint", {J[0] for J in joints}), "fixed", prev, tname,
                       tool, None))
    return links, joints


def mechanism_joints(mech: Mechanism) -> list:
    """The one-degree-of-freedom joints of a mechanism in ``primitive_joints`` order
    (:class:`kic.topology.PrimitiveJoint`: name, kind, axis, parent, child, origin,
    child_origin, compound), virtual joints left out."""
    found = {p.name: p for p in mech.all_primitives() if not p.virtual}
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
    _fixed_parts(mech, lambda b: (b, X[b]) if b in X else None, links, joints)
    return links, joints
