"""Build a Pinocchio model of a :class:`kic.SerialChain` (for benchmarks and tests).

The chain's own description is translated one to one, so that both libraries
compute the same mechanism:

* joint ``j`` of the chain becomes a Pinocchio joint whose placement in its
  parent joint's frame is ``joints[j].origin`` (``base @ origin`` for the first
  joint): Pinocchio's joint frames are kic's *kinematic* link frames;
* a revolute/prismatic joint about the frame's x, y or z axis becomes
  ``JointModelR{X,Y,Z}`` / ``JointModelP{X,Y,Z}``, any other axis the
  ``...Unaligned`` joint;
* the link's mass properties, given in the frame ``frame_offsets[j]`` relative
  to the kinematic frame, are moved into the joint frame and passed as
  ``pinocchio.Inertia(mass, com, inertia about the centroid)``;
* one operational frame per link, named like the link, at ``frame_offsets[j]``
  (the frame kic's ``frames(q)`` returns and in which points are given), and a
  frame ``"tool"`` at ``frame_offsets[-1] @ tool`` on the last joint (kic gives
  the tool in the last link's described frame);
* ``model.gravity.linear = chain.gravity``.

Pinocchio's configuration vector for such a model is kic's ``q`` itself.
"""
from __future__ import annotations

import numpy as np

__all__ = ["build_pin_model", "link_frame_ids", "TOOL_FRAME", "build_pin_tree",
           "point_constraints"]

TOOL_FRAME = "tool"


def _se3(pin, T) -> "pin.SE3":
    T = np.asarray(T, dtype=float)
    return pin.SE3(np.ascontiguousarray(T[:3, :3]), np.ascontiguousarray(T[:3, 3]))


def _joint_model(pin, kind: str, axis: np.ndarray):
    """The cheapest Pinocchio joint model for a unit ``axis`` in the joint frame."""
    for k, letter in enumerate("XYZ"):
        e = np.zeros(3)
        e[k] = 1.0
        if np.allclose(axis, e, atol=1e-14):
            return getattr(pin, f"JointModel{'R' if kind == 'R' else 'P'}{letter}")()
    if kind == "R":
        return pin.JointModelRevoluteUnaligned(*map(float, axis))
    return pin.JointModelPrismaticUnaligned(*map(float, axis))


def build_pin_model(chain):
    """Return a ``pinocchio.Model`` equivalent to the serial ``chain``.

    Parameters
    ----------
    chain : kic.SerialChain

    Returns
    -------
    pinocchio.Model
        With one joint per chain joint (same names), one ``OP_FRAME`` per link
        (same names as ``chain.link_names``) and a ``"tool"`` frame.
    """
    import pinocchio as pin

    model = pin.Model()
    model.name = chain.name or "kic_chain"
    parent = 0
    for j, (joint, link) in enumerate(zip(chain.joints, chain.links)):
        placement = chain.base @ joint.origin if j == 0 else joint.origin
        jm = _joint_model(pin, joint.kind, np.asarray(joint.axis, dtype=float))
        jid = model.addJoint(parent, jm, _se3(pin, placement), chain.joint_names[j])
        Fo = np.asarray(chain.frame_offsets[j], dtype=float)
        R, p = Fo[:3, :3], Fo[:3, 3]
        com = R @ np.asarray(link.com, dtype=float) + p
        inertia = R @ np.asarray(link.inertia, dtype=float) @ R.T
        inertia = 0.5 * (inertia + inertia.T)
        model.appendBodyToJoint(jid, pin.Inertia(float(link.mass), com, inertia),
                                pin.SE3.Identity())
        model.addFrame(pin.Frame(chain.link_names[j], jid, _se3(pin, Fo),
                                 pin.FrameType.OP_FRAME))
        parent = jid
    # the tool is given in the last link's described frame (after its frame offset)
    tool = np.asarray(chain.frame_offsets[-1], dtype=float) @ np.asarray(chain.tool, dtype=float)
    model.addFrame(pin.Frame(TOOL_FRAME, parent, _se3(pin, tool), pin.FrameType.OP_FRAME))
    model.gravity.linear = np.asarray(chain.gravity, dtype=float)
    return model


def link_frame_ids(model, chain) -> list[int]:
    """Pinocchio frame ids of the chain's link frames, in link order."""
    return [model.getFrameId(name) for name in chain.link_names]


def build_pin_tree(mechanism, cuts):
    """Pinocchio model of the spanning tree of a :class:`kic.Mechanism`.

    Every primitive joint of ``mechanism`` except those in ``cuts`` becomes a
    Pinocchio joint, depth first from the ground (Pinocchio's algorithms need
    each subtree's joints contiguous).  A kic body frame sits at
    ``inv(child_origin)`` in the frame of the joint that carries it, so joint
    ``j`` is placed at ``inv(child_origin of the parent's joint) @ origin_j``
    and the body's mass properties at ``inv(child_origin_j)``.  Each cut joint
    gets two operational frames, ``"<cut>.parent"`` and ``"<cut>.child"``: its
    joint frame as seen from either side, which coincide (origins, for a point
    closure) when the loop is closed.

    Parameters
    ----------
    mechanism : kic.Mechanism
        Every tree joint must point away from the ground (parent nearer).
    cuts : sequence of str
        Primitive joints that open the loops.

    Returns
    -------
    model : pinocchio.Model
        One-DOF joints only, so ``q`` and ``v`` have one entry per tree joint.
    names : list of str
        kic joint names in Pinocchio's joint (and ``v``) order.
    closures : list of (int, int)
        Frame ids ``(parent side, child side)`` of each cut, in ``cuts`` order.
    """
    import pinocchio as pin

    prims = {k: d["primitive"] for _, _, k, d in mechanism.graph.edges(keys=True, data=True)}
    unknown = [c for c in cuts if c not in prims]
    if unknown:
        raise ValueError(f"cut joints {unknown} are not primitive joints of the mechanism")
    model = pin.Model()
    model.name = (mechanism.name or "mechanism") + " (spanning tree)"
    joint_of = {"ground": 0}             # body -> Pinocchio joint carrying it
    carrier = {"ground": np.eye(4)}      # body -> child_origin of that joint
    names: list[str] = []

    def visit(body):
        for name, p in prims.items():
            if name in cuts or name in names or p.parent != body:
                continue
            if p.child in joint_of:
                raise ValueError(f"joint {name!r} closes a loop: list it in cuts")
            placement = np.linalg.inv(carrier[body]) @ p.origin
            jid = model.addJoint(joint_of[body], _joint_model(pin, p.kind, p.axis),
                                 _se3(pin, placement), name)
            link = mechanism.graph.nodes[p.child]["link"]
            model.appendBodyToJoint(jid, pin.Inertia(float(link.mass),
                                                     np.asarray(link.com, dtype=float),
                                                     np.asarray(link.inertia, dtype=float)),
                                    _se3(pin, np.linalg.inv(p.child_origin)))
            joint_of[p.child], carrier[p.child] = jid, p.child_origin
            names.append(name)
            visit(p.child)

    visit("ground")
    missing = [p.name for n, p in prims.items() if n not in cuts and n not in names]
    if missing:
        raise ValueError(f"joints {missing} are not reachable from the ground parent-first")
    closures = []
    for c in cuts:
        p = prims[c]
        ids = []
        for side, body, placement in (("parent", p.parent, p.origin),
                                      ("child", p.child, p.child_origin)):
            X = np.linalg.inv(carrier[body]) @ placement
            ids.append(model.addFrame(pin.Frame(f"{c}.{side}", joint_of[body], _se3(pin, X),
                                                pin.FrameType.OP_FRAME)))
        closures.append(tuple(ids))
    model.gravity.linear = np.asarray(mechanism.gravity, dtype=float)
    return model, names, closures


def point_constraints(model, frame_pairs):
    """``CONTACT_3D`` constraints holding the origins of frame pairs together.

    Parameters
    ----------
    model : pinocchio.Model
    frame_pairs : sequence of (int, int)
        Frame ids; each pair's origins must coincide (a spherical joint, or a
        revolute of a planar loop).

    Returns
    -------
    (StdVec_RigidConstraintModel, StdVec_RigidConstraintData)
        Ready for ``pinocchio.constraintDynamics`` (``initConstraintDynamics``
        is the caller's, on its own ``Data``).
    """
    import pinocchio as pin

    models = pin.StdVec_RigidConstraintModel()
    for a, b in frame_pairs:
        fa, fb = model.frames[a], model.frames[b]
        models.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, model,
                                               fa.parentJoint, fa.placement,
                                               fb.parentJoint, fb.placement,
                                               pin.ReferenceFrame.LOCAL))
    datas = pin.StdVec_RigidConstraintData()
    for m in models:
        datas.append(m.createData())
    return models, datas
