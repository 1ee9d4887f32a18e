"""Spatial chains from the seed documents: Horn, Hirokawa and Vazirani's
three-degree-of-freedom chain (MIT AI Memo 478, 1977)."""
from __future__ import annotations

import numpy as np

from kic.chain import Joint, Link, SerialChain, composite_body

from . import _common as c

__all__ = ["horn_three_dof"]


def horn_three_dof(I1=0.05, m2=2.0, l2=0.5, m3=1.5, l3=0.4, M2=0.0, M3=0.0, delta2=0.0,
                   delta3=0.0, gravity=(0.0, 0.0, -9.81), name="Horn three-DOF chain"):
    """The three-DOF spatial chain of Horn, Hirokawa & Vazirani (seed 000).

    An upright column (joint 1 about the vertical z axis), a shoulder and an
    elbow whose axes are parallel and horizontal, thin uniform rods for the
    upper and lower links, optional point masses at their distal ends and the
    MIT-Scheinman lateral offsets.  The defaults are those of case A1 of
    docs/theory.md section 8 (seed 000).

    Parameters
    ----------
    I1 : float
        Moment of inertia of the column about z (kg m^2), >= 0; for a solid
        cylinder ``m1 R^2 / 2``.
    m2, l2 : float
        Mass (kg, >= 0) and length (m, > 0) of the uniform rod of link 2.
    m3, l3 : float
        Mass (kg, >= 0) and length (m, > 0) of the uniform rod of link 3.
    M2 : float
        Point mass at the distal end of link 2 (kg), >= 0.
    M3 : float
        Point mass at the distal end of link 3, the carried load (kg), >= 0.
    delta2 : float
        Offset of link 2 along the shoulder axis u2 (m), signed.
    delta3 : float
        Offset of link 3 along u2, measured from the vertical plane through the
        z axis (absolute, not relative to delta2) (m), signed.
    gravity : array_like, shape (3,)
        Gravitational acceleration in the base frame (m/s^2).
    name : str

    Returns
    -------
    kic.SerialChain
        Joints (all revolute): 1 about z at the origin; 2 about
        ``u2 = Rz(theta1) y`` through the origin (the shoulder);
        3 about u2 through the distal end of link 2.  Link frames:
        ``Rz(theta1)`` for the column, ``Rz(theta1) Ry(theta2)`` for link 2 and
        ``Rz(theta1) Ry(theta2 + theta3)`` (origin at the elbow) for link 3;
        rods lie along the local z axes, at local y = delta2 and delta3.  The
        tool frame is at the distal end of link 3, ``(0, delta3, l3)`` in
        link 3's frame.

    Notes
    -----
    Source: B. K. P. Horn, K. Hirokawa, V. V. Vazirani, *Dynamics of a three
    degree of freedom kinematic chain*, MIT AI Memo 478 (1977); geometry and
    conventions reconstructed in docs/theory.md section 8 (seed 000)
    from the memo's position vectors.  The base origin is at the
    shoulder; theta1 is measured from +x about +z, theta2 from the upward
    vertical (positive tips the arm towards the azimuth direction), theta3
    relative to link 2 (0 = straight arm).

    Mass model: the column is a body on the z axis with ``Izz = I1`` (its
    transverse moments, set to ``I1/2``, never act since it only spins about
    z; its mass does not enter the equations and is taken as zero).  Each
    rod has ``diag(m l^2/12, m l^2/12, 0)`` about its centroid (zero axial
    inertia: the principal moments satisfy the triangle inequality with
    equality).  A point mass and its rod form one rigid link, so they are
    combined into one body (combined centroid, centroidal inertia by the
    parallel-axis theorem).

    The torques follow ``tau = M q'' + h + G`` with ``G = +dV/dq`` (the memo
    prints gravity with the opposite sign, see the notes §2.1.1).

    Raises
    ------
    kic.ModelError
        A length <= 0, a negative mass or moment, or a non-finite value.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanisms import horn_three_dof
    >>> arm = horn_three_dof()                  # case A1
    >>> q = [0.3, 0.7, -0.4]
    >>> (arm.dynamics(q).I_star.round(9) + 0.0).tolist()
    [[0.338900944, 0.0, 0.0], [0.0, 0.897984965, 0.218159149], [0.0, 0.218159149, 0.08]]
    >>> (arm.gravity_load(q).round(9) + 0.0).tolist()
    [0.0, -8.769435358, -0.869715968]
    """
    b = "horn_three_dof"
    I1 = c.moment(b, "I1", I1)
    m2 = c.mass(b, "m2", m2)
    l2 = c.length(b, "l2", l2)
    m3 = c.mass(b, "m3", m3)
    l3 = c.length(b, "l3", l3)
    M2 = c.mass(b, "M2", M2)
    M3 = c.mass(b, "M3", M3)
    delta2 = c.finite(b, "delta2", delta2)
    delta3 = c.finite(b, "delta3", delta3)
    gravity = c.vector3(b, "gravity", gravity)

    column = Link(0.0, com=(0.0, 0.0, 0.0), inertia=np.diag([I1 / 2, I1 / 2, I1]),
                  name="column")
    m, com, I = composite_body([(m2, (0.0, delta2, l2 / 2), c.rod_inertia(m2, l2, 2)),
                             (M2, (0.0, delta2, l2), np.zeros((3, 3)))])
    upper = Link(m, com=com, inertia=I, name="link2")
    m, com, I = composite_body([(m3, (0.0, delta3, l3 / 2), c.rod_inertia(m3, l3, 2)),
                             (M3, (0.0, delta3, l3), np.zeros((3, 3)))])
    lower = Link(m, com=com, inertia=I, name="link3")
    joints = [Joint("R", axis=(0, 0, 1), name="joint1"),
              Joint("R", axis=(0, 1, 0), name="joint2"),
              Joint("R", axis=(0, 1, 0), origin=c.translation(z=l2), name="joint3")]
    return SerialChain(joints, [column, upper, lower], gravity=gravity,
                       tool=c.translation(y=delta3, z=l3), name=name)
