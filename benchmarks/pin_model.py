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

__all__ = ["build_pin_model", "link_frame_ids", "TOOL_FRAME"]

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
