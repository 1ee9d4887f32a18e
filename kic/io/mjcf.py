"""MJCF (MuJoCo) export of kic mechanisms and chains, loops as equality constraints.

MuJoCo simulates a kinematic *tree* of bodies; closed loops are equality
constraints.  :func:`to_mjcf` picks a spanning tree of the mechanism
(:func:`spanning_tree`), writes it as nested ``<body>`` elements (one MJCF body
per kic body: the one-degree-of-freedom joints of a U, C or S joint go into
one body, applied in order as MuJoCo does) and closes each cut joint:

* a cut spherical joint: ``<connect>`` of two sites at its centre (3 rows);
* a cut revolute joint of a planar mechanism (all revolute axes parallel,
  prismatic axes normal to them): one ``<connect>`` at the joint (the
  out-of-plane row is redundant, as kic's planar loops are);
* a cut revolute joint otherwise: two ``<connect>`` at two points of its
  axis (5 independent rows, the revolute joint's);
* any other cut joint (P, U, C): the joint stays in the tree, joining a
  "ghost" of the body it is cut from, and a ``<weld>`` makes the ghost's frame
  coincide with that body's frame (orientation fixed, 6 rows); the ghost
  carries a share of the body's mass properties (the same closed mechanism).

Sites carry the constraint points, so the constraints hold wherever the two
sites coincide, not only at MuJoCo's reference configuration (all joints
zero, as kic's descriptions).  An assembled configuration can be stored as
the keyframe ``"reference"``.  Nothing but the standard library is needed.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from ..chain import Link, SerialChain
from ..errors import ModelError
from ..kernels.frames import joint_motions
from ..limits import ConeLimit
from ..mimic import MimicModel
from ..settings import (CLOSURE_TOLERANCE, DIFFERENCE_STEP, EXACT_START, NEWTON_MAX_ITERATIONS,
                        PARALLEL_SINE)
from ..topology import GROUND, Mechanism
from ._xml import format_number as _num, format_vector as _vec, rigid_inverse as _inv
from ._xml import xml_escape as _esc
from .urdf import body_link, chain_parts, mechanism_joints

__all__ = ["to_mjcf", "spanning_tree", "welded_side", "JointRecord", "joint_records"]


@dataclass
class JointRecord:
    """A joint of a mechanism as added: ``kind`` R, P, U, C or S, its primitive
    (one-DOF) joints in order, the bodies it joins and its frames."""

    name: str
    kind: str
    parent: str
    child: str
    origin: np.ndarray                  # joint frame in the parent body frame (q = 0)
    child_origin: np.ndarray            # joint frame in the child body frame (q = 0)
    primitives: list = field(default_factory=list)   # (name, "R"/"P", axis)


def joint_records(mech: Mechanism) -> list[JointRecord]:
    """The joints of ``mech`` as added (compound ones whole), from its public graph.

    The kind of a compound joint is read from its primitives (R R -> U,
    R P -> C, R R R -> S); kic has no public accessor for it yet.
    """
    groups: dict[str, list] = {}
    for p in mechanism_joints(mech):
        groups.setdefault(p.compound or p.name, []).append(p)
    out = []
    for name, prims in groups.items():
        kinds = "".join(p.kind for p in prims)
        kind = {"R": "R", "P": "P", "RR": "U", "RP": "C", "RRR": "S"}.get(kinds)
        if kind is None:
            raise ModelError(f"joint {name!r}: unexpected primitive joints {kinds}")
        out.append(JointRecord(name, kind, prims[0].parent, prims[-1].child, prims[0].origin,
                               prims[-1].child_origin,
                               [(p.name, p.kind, np.asarray(p.axis, float)) for p in prims]))
    return out


def welded_side(r: JointRecord) -> str:
    """The body that a cut P, U or C joint's ghost stands in for (its child, or its
    parent when the child is the ground)."""
    return r.parent if r.child == GROUND else r.child


def _add_joint(tree: Mechanism, r: JointRecord, parent: str, child: str) -> None:
    axes = [a for _, _, a in r.primitives]
    if r.kind in ("U", "S"):
        tree.add_joint(r.name, r.kind, parent, child, origin=r.origin,
                       child_origin=r.child_origin, axes=axes)
    else:
        tree.add_joint(r.name, r.kind, parent, child, axis=axes[0], origin=r.origin,
                       child_origin=r.child_origin)


_KEEP = {"S": 1.0, "R": 2.0, "P": 3.0, "U": 3.0, "C": 3.0}   # cut S first, then R


def spanning_tree(mech: Mechanism, cuts: Sequence[str] = ()):
    """A spanning tree of the mechanism for MuJoCo, and the cut joints.

    Spherical joints are cut first (a point constraint), then revolute ones;
    ``cuts`` names joints (as added) that must be cut.

    Returns
    -------
    tree : Mechanism
        The loop-free mechanism of the tree joints (same bodies, names and
        frames): ``tree.model(tree.primitive_joints).dynamics(phi).I_star`` is
        the tree's joint-space inertia that MuJoCo's ``mj_fullM`` gives.  A cut
        P, U or C joint stays in it, joining a ghost body ``name + ":ghost"``
        that has the frame and a share of the mass properties of the body the
        joint is cut from (:func:`welded_side`; the shares add up to the body).
    cut : list of str
        The cut joints (as added), one per independent loop.
    """
    records = joint_records(mech)
    names = {r.name for r in records}
    for c in cuts:
        if c not in names:
            raise ModelError(f"unknown cut joint {c!r}; joints are {sorted(names)}")
    G = nx.Graph()
    bodies = [b for b in mech.bodies]
    G.add_nodes_from(bodies)
    best: dict = {}
    for r in records:
        if r.name in cuts:
            continue
        key = tuple(sorted((r.parent, r.child)))
        if key not in best or _KEEP[r.kind] > _KEEP[best[key].kind]:
            best[key] = r
    for (a, b), r in best.items():
        G.add_edge(a, b, weight=_KEEP[r.kind], record=r)
    T = nx.maximum_spanning_tree(G)
    if not nx.is_connected(T):
        lost = sorted(set(bodies) - nx.node_connected_component(T, GROUND))
        raise ModelError(f"bodies {lost} are not connected to the ground"
                         + (f" once joints {list(cuts)} are cut" if cuts else ""))
    kept = {d["record"].name for _, _, d in T.edges(data=True)}
    # a cut P, U or C joint stays in the tree on a ghost of the body it is welded to;
    # the ghost carries a share of that body's mass properties (exact for the closed
    # mechanism, where the two move as one, and MuJoCo's soft constraints need mass)
    welds = [(r, welded_side(r)) for r in records if r.name not in kept and r.kind in "PUC"]
    shares = {b: 1 + sum(side == b for _, side in welds) for b in bodies}
    tree = Mechanism(gravity=mech.gravity, name=mech.name)

    def share(b):
        L = body_link(mech, b)
        n = shares[b]
        return L if n == 1 else Link(L.mass / n, L.com, L.inertia / n, name=L.name,
                                     check_triangle=False)

    for b in bodies:
        if b != GROUND:
            tree.add_body(b, link=share(b))
    for r in records:
        if r.name in kept:
            _add_joint(tree, r, r.parent, r.child)
    for r, side in welds:
        ghost = tree.add_body(f"{r.name}:ghost", link=share(side))
        _add_joint(tree, r, r.parent if side == r.child else ghost,
                   ghost if side == r.child else r.child)
    return tree, [r.name for r in records if r.name not in kept]


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------
def _quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = [0.0] * 4
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q = np.array(q)
    return q / np.linalg.norm(q)


def _pose_attr(T: np.ndarray) -> str:
    out = f'pos="{_vec(T[:3, 3])}"'
    if not np.array_equal(T[:3, :3], np.eye(3)):
        out += f' quat="{_vec(_quat(T[:3, :3]))}"'
    return out


def _inertial(link: Link | None, ind: str) -> str:
    if link is None or (link.mass == 0 and not np.any(link.inertia)):
        return ""
    I = link.inertia
    return (f'{ind}<inertial pos="{_vec(link.com)}" mass="{_num(link.mass)}" '
            f'fullinertia="{_num(I[0, 0])} {_num(I[1, 1])} {_num(I[2, 2])} {_num(I[0, 1])} '
            f'{_num(I[0, 2])} {_num(I[1, 2])}"/>\n')


class _Body:
    def __init__(self, name, pose, joints, link):
        self.name, self.pose, self.joints, self.link = name, pose, joints, link
        self.children: list[_Body] = []
        self.sites: list[tuple[str, np.ndarray]] = []


def _placement(r: JointRecord, forward: bool):
    """Body pose in its tree parent and its joints (name, kind, anchor, axis) in its frame."""
    if forward:
        O, C, prims = r.origin, r.child_origin, r.primitives
        sign = 1.0
    else:                                   # the tree runs the joint from child to parent
        O, C, prims = r.child_origin, r.origin, r.primitives[::-1]
        sign = -1.0
    pose = O @ _inv(C)
    joints = [(n, k, C[:3, 3], sign * (C[:3, :3] @ a)) for n, k, a in prims]
    return pose, joints


def _planar(mech: Mechanism, records, frames) -> bool:
    """All revolute axes parallel and all prismatic axes normal to them (world, reference)."""
    normal = None
    for r in records:
        for _, kind, a in r.primitives:
            if kind != "R":
                continue
            w = frames[r.parent][:3, :3] @ r.origin[:3, :3] @ a
            if normal is None:
                normal = w
            elif np.linalg.norm(np.cross(normal, w)) > PARALLEL_SINE:
                return False
    if normal is None:
        return False
    return all(abs(normal @ (frames[r.parent][:3, :3] @ r.origin[:3, :3] @ a)) < PARALLEL_SINE
               for r in records for _, kind, a in r.primitives if kind == "P")


def _motion(kind: str, axis: np.ndarray, q: float) -> np.ndarray:
    if kind == "P":
        return joint_motions(False, axis, q)
    return joint_motions(True, axis / np.linalg.norm(axis), q)


def to_mjcf(model, name: str | None = None, reference=None, q=None, cuts: Sequence[str] = (),
            timestep: float = 1e-3, axis_length: float = 0.1, min_mass: float = 1e-12,  # kg: the least mass MuJoCo takes
            solimp=None) -> str:
    """MJCF text of a mechanism (loops as equality constraints) or a serial chain.

    Parameters
    ----------
    model : Mechanism, ClosedModel, SerialChain or MimicModel
        A ClosedModel is exported through its ``mechanism``; a MimicModel as
        its model with the mimic couplings as ``<joint>`` equalities
        (``polycoef = offset multiplier``), as are the ``mimic`` of an
        imported model.  Joint ranges (R, P) are written ``limited`` with
        their ``range``; an imported model's fixed links become sites.
    name : str, optional
        The model name (default the mechanism's).
    reference : mapping or array_like, optional
        An assembled configuration, joint name -> value (rad, m) or all values
        in ``primitive_joints`` order; names that are not joints (e.g. a
        ClosedModel's pose coordinates) are ignored.  Written as the keyframe
        ``"reference"`` (``mujoco.mj_resetDataKeyframe(m, d, 0)``); it also
        decides whether the mechanism is planar (module docs).
    q : array_like, optional
        With a ClosedModel: its coordinates at the configuration to store as
        the keyframe (assembled by ``model.assemble``); joint values that the
        model does not carry (the angles of a spherical joint closed as a
        point) are solved from the bodies' frames ``model.kinematics(q).frame``.
    cuts : sequence of str
        Joints (as added) that must be cut (see :func:`spanning_tree`).
    timestep : float
        MuJoCo time step (s).
    axis_length : float
        Distance (m) between the two connect points of a cut spatial revolute joint.
    solimp : sequence of float, optional
        MuJoCo's constraint impedance for the loop closures (``solimp`` of each
        equality); default MuJoCo's (0.9, 0.95, 0.001), which lets a closure's
        acceleration err by some 5-10 %.  ``(0.99999, 0.99999, 0.001)`` makes
        MuJoCo's constrained accelerations agree with kic's closed-model forward
        dynamics to about 1e-5 (tests/test_mjcf.py).
    min_mass : float
        MuJoCo rejects moving bodies without mass or with a zero principal
        moment; ``<compiler boundmass boundinertia>`` raise them to this (kg,
        kg m^2), which changes the joint-space inertia by as little.

    Returns
    -------
    str
        The MJCF XML.  Body, joint and site names are kic's (a U, C or S
        joint's primitive joints ``name1``, ``name2``...); MuJoCo's joint
        values are kic's joint values (``qpos0`` = 0, kic's description).

    Notes
    -----
    Gravity is ``<option gravity>``.  MuJoCo's constraints are soft (its
    default ``solref``), so a simulated loop closes to a small tolerance, not
    exactly.  MuJoCo also requires the principal moments of every body to
    satisfy the triangle inequality (a published table such as PUMA 560's
    does not; add ``balanceinertia="true"`` to ``<compiler>`` to load it).
    """
    mimic = None
    if isinstance(model, MimicModel):
        mimic, model = model.mimic, model.model
    if isinstance(model, SerialChain):
        return _chain_mjcf(model, name, timestep, min_mass, mimic)
    mech = getattr(model, "mechanism", model)
    if not isinstance(mech, Mechanism):
        raise ModelError(f"to_mjcf takes a Mechanism, a ClosedModel or a SerialChain, got "
                         f"{type(model).__name__}")
    records = joint_records(mech)
    prim_names = mech.primitive_joints
    phi = dict.fromkeys(prim_names, 0.0)
    if reference is not None:
        if isinstance(reference, Mapping):
            for k, v in reference.items():
                if k in phi:
                    phi[k] = float(v)
        else:
            ref = np.asarray(reference, float)
            if ref.shape != (len(prim_names),):
                raise ModelError(f"reference must give the {len(prim_names)} joint values "
                                 f"{prim_names}, got shape {ref.shape}")
            phi = dict(zip(prim_names, ref.tolist()))
    known = set(phi) if reference is None else (
        set(prim_names) if not isinstance(reference, Mapping) else set(reference))
    targets = {}
    if q is not None:
        if mech is model:
            raise ModelError("q needs a ClosedModel (a Mechanism has no coordinates)")
        qa = np.asarray(q, float)
        full = dict(zip(model.phi_names, np.asarray(model.assemble(qa), float).reshape(-1)))
        phi.update({k: v for k, v in full.items() if k in phi})
        known = set(full)
        kin = model.kinematics(qa, 1)
        for b in mech.bodies:
            if b != GROUND:
                targets[b] = np.asarray(kin.frame(b), float).reshape(4, 4)
        reference = phi
    tree_mech, cut = spanning_tree(mech, cuts)
    by_name = {r.name: r for r in records}
    adj: dict = {b: [] for b in tree_mech.bodies}
    for r in joint_records(tree_mech):
        adj[r.parent].append(r)
        adj[r.child].append(r)
    for r in records:                       # a ghost is placed like its body
        if r.name in cut and r.kind in "PUC" and welded_side(r) in targets:
            targets[f"{r.name}:ghost"] = targets[welded_side(r)]
    bodies = {GROUND: _Body(GROUND, np.eye(4), [], None)}
    world = {GROUND: np.eye(4)}
    order = [GROUND]
    for b in order:
        for r in adj[b]:
            other = r.child if r.parent == b else r.parent
            if other in bodies:
                continue
            pose, joints = _placement(r, r.parent == b)
            if other in targets and any(n not in known for n, *_ in joints):
                phi.update(_solve_joint(pose, joints, _inv(world[b]) @ targets[other], r.name))
            body = _Body(other, pose, joints, body_link(tree_mech, other))
            bodies[b].children.append(body)
            bodies[other] = body
            order.append(other)
            T = world[b] @ pose
            for n, k, anchor, axis in joints:
                T = T @ _translate(anchor) @ _motion(k, axis, phi[n]) @ _translate(-anchor)
            world[other] = T
    # frames of each body at the reference, kept as world[b]; loop closures
    planar = _planar(mech, records, world)
    equality = _closures(cut, by_name, bodies, planar, solimp, axis_length)
    for n, (b, X) in (getattr(mech, "fixed_frames", None) or {}).items():
        if n not in bodies and b in bodies:      # an imported file's fixed links
            bodies[b].sites.append((n, X))
    mimic = mimic if mimic is not None else getattr(mech, "mimic", None)
    equality += _mimic_equalities(mimic, set(prim_names))
    qpos: list[float] = []
    lines = _header(name or mech.name, mech.gravity, timestep, min_mass)
    _write_body(bodies[GROUND], lines, "    ", qpos, phi, _ranges(mech.limits), root=True)
    lines.append("  </worldbody>")
    if equality:
        lines += ["  <equality>"] + equality + ["  </equality>"]
    if reference is not None:
        lines += ["  <keyframe>", f'    <key name="reference" qpos="{_vec(qpos)}"/>',
                  "  </keyframe>"]
    lines.append("</mujoco>")
    return "\n".join(lines) + "\n"


def _closures(cut, by_name, bodies, planar: bool, solimp, axis_length: float) -> list[str]:
    """The equality constraints that close the cut joints (module docs), their sites
    added to the bodies."""
    equality = []
    imp = "" if solimp is None else f' solimp="{_vec(solimp)}"'
    for cname in cut:
        r = by_name[cname]
        a, b = bodies[r.parent], bodies[r.child]
        if r.kind == "S" or (r.kind == "R" and planar):
            sa, sb = f"{cname}:parent", f"{cname}:child"
            a.sites.append((sa, _translate(r.origin[:3, 3])))
            b.sites.append((sb, _translate(r.child_origin[:3, 3])))
            equality.append(f'    <connect name="{_esc(cname)}"{imp} site1="{_esc(sa)}" '
                            f'site2="{_esc(sb)}"/>')
        elif r.kind == "R":
            axis = r.primitives[0][2]
            for k, s in enumerate((0.0, axis_length)):
                sa, sb = f"{cname}:parent{k}", f"{cname}:child{k}"
                a.sites.append((sa, _translate(r.origin[:3, 3] + s * (r.origin[:3, :3] @ axis))))
                b.sites.append((sb, _translate(r.child_origin[:3, 3]
                                               + s * (r.child_origin[:3, :3] @ axis))))
                equality.append(f'    <connect name="{_esc(cname)}:{k}"{imp} site1="{_esc(sa)}" '
                                f'site2="{_esc(sb)}"/>')
        else:                               # the joint on a ghost, welded to its body
            gname = f"{cname}:ghost"
            bodies[gname].sites.append((f"{gname}:frame", np.eye(4)))
            bodies[welded_side(r)].sites.append((f"{cname}:body", np.eye(4)))
            equality.append(f'    <weld name="{_esc(cname)}"{imp} site1="{_esc(gname)}:frame" '
                            f'site2="{_esc(cname)}:body"/>')
    return equality


def _header(name, gravity, timestep, min_mass) -> list[str]:
    return [f'<mujoco model="{_esc(name or "kic")}">',
            f'  <compiler angle="radian" boundmass="{_num(min_mass)}" '
            f'boundinertia="{_num(min_mass)}"/>',
            f'  <option gravity="{_vec(gravity)}" timestep="{_num(timestep)}"/>',
            "  <worldbody>"]


def _ranges(limits) -> dict:
    """Joint name -> (lower, upper) of the R and P joint ranges among ``limits``
    (a mechanism's :class:`kic.limits.JointRange` or an imported chain's pairs)."""
    out = {}
    for n, v in (limits or {}).items():
        if isinstance(v, ConeLimit):
            continue                        # a cone of a U or S joint: no MuJoCo range
        lo, hi = float(v[0]), float(v[1])
        if lo < hi:                         # equal bounds lock a joint: no range
            out[n] = (lo, hi)
    return out


def _mimic_equalities(mimic, joints: set) -> list[str]:
    """MuJoCo ``<joint>`` equalities ``q_j = offset + multiplier q_master`` (at MuJoCo's
    reference, all joints zero as in kic's descriptions) of the mimic joints."""
    out = []
    for j, (master, mult, off) in (mimic or {}).items():
        if j in joints and master in joints:
            out.append(f'    <joint name="{_esc(j)}:mimic" joint1="{_esc(j)}" '
                       f'joint2="{_esc(master)}" polycoef="{_num(off)} {_num(mult)} 0 0 0"/>')
    return out


def _joint_motion(pose, joints, values) -> np.ndarray:
    T = pose
    for (n, k, anchor, axis), v in zip(joints, values):
        T = T @ _translate(anchor) @ _motion(k, axis, v) @ _translate(-anchor)
    return T


def _solve_joint(pose, joints, target, what: str) -> dict:
    """Joint values that carry a body from ``pose`` to ``target`` (in its tree parent):
    Gauss-Newton on the pose error with difference Jacobians (export time only)."""
    def error(x):
        T = _joint_motion(pose, joints, x)
        E = target[:3, :3].T @ T[:3, :3]
        w = 0.5 * np.array([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]])
        return np.concatenate([T[:3, 3] - target[:3, 3], w])

    x = np.zeros(len(joints))
    for _ in range(NEWTON_MAX_ITERATIONS):
        e = error(x)
        if np.abs(e).max() < EXACT_START:
            break
        step = DIFFERENCE_STEP
        J = np.column_stack([(error(x + h) - error(x - h)) / (2 * step)
                             for h in step * np.eye(len(x))])
        x = x - np.linalg.lstsq(J, e, rcond=None)[0]
    if np.abs(error(x)).max() > CLOSURE_TOLERANCE:
        raise ModelError(f"joint {what!r}: no joint values place its child body at the "
                         "model's configuration; give them in reference")
    return {n: float(v) for (n, *_), v in zip(joints, x)}


def _translate(p) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T


def _write_body(body: _Body, lines: list, ind: str, qpos: list, phi: dict, ranges: dict,
                root=False):
    inner = ind if root else ind + "  "
    if not root:
        lines.append(f'{ind}<body name="{_esc(body.name)}" {_pose_attr(body.pose)}>')
        for n, k, anchor, axis in body.joints:
            jtype = "hinge" if k == "R" else "slide"
            rng = (f' limited="true" range="{_vec(ranges[n])}"' if n in ranges else "")
            lines.append(f'{inner}<joint name="{_esc(n)}" type="{jtype}" pos="{_vec(anchor)}" '
                         f'axis="{_vec(axis)}"{rng}/>')
            qpos.append(phi.get(n, 0.0))
        inert = _inertial(body.link, inner)
        if inert:
            lines.append(inert.rstrip("\n"))
    for sname, T in body.sites:
        lines.append(f'{inner}<site name="{_esc(sname)}" {_pose_attr(T)}/>')
    for child in body.children:
        _write_body(child, lines, inner, qpos, phi, ranges)
    if not root:
        lines.append(f"{ind}</body>")


def _chain_mjcf(chain: SerialChain, name, timestep, min_mass, mimic) -> str:
    links, joints = chain_parts(chain)
    data = {n: Link(m, c, I, check_triangle=False, strict=False) for n, m, c, I in links}
    root = _Body(GROUND, np.eye(4), [], None)
    bodies = {links[0][0]: root}
    for jname, kind, parent, child, T, axis in joints:
        if kind == "fixed":
            bodies[parent].sites.append((child, T))
            continue
        b = _Body(child, T, [(jname, kind, np.zeros(3), axis)], data[child])
        bodies[parent].children.append(b)
        bodies[child] = b
    lines = _header(name or chain.name, chain.gravity, timestep, min_mass)
    _write_body(root, lines, "    ", [], {}, _ranges(getattr(chain, "limits", None)),
                root=True)
    lines.append("  </worldbody>")
    mimic = mimic if mimic is not None else getattr(chain, "mimic", None)
    equality = _mimic_equalities(mimic, set(chain.joint_names))
    if equality:
        lines += ["  <equality>"] + equality + ["  </equality>"]
    lines.append("</mujoco>")
    return "\n".join(lines) + "\n"
