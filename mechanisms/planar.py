"""Planar arms: Horn's two- and three-link arms, Craig's three-link exercise,
Fu-Gonzalez-Lee's two-link example.

All of them move in the world x-y plane with revolute joints about +z and
gravity along -y; angles are measured counter-clockwise, the first from +x,
the others relative to the previous link.  Lengths in m, masses in kg,
moments of inertia in kg m^2, gravity in m/s^2.
"""
from __future__ import annotations

import numpy as np

from kic.chain import Joint, Link, SerialChain

from . import _common as c

__all__ = ["planar_two_link", "planar_three_link", "craig_three_link", "fu_two_link"]


def _planar_rods(builder, lengths, link_masses, moments, g, name):
    """Chain of uniform rods along the local x axes, joints about z.

    Link frame k sits on joint k with x along the link; joint k+1 is at
    ``Tx(l_k)``.  Centroid at mid-length, centroidal inertia
    ``diag(0, I_k, I_k)`` (a thin rod: zero about its own axis).
    """
    n = len(lengths)
    ls = [c.length(builder, f"l{k + 1}", lengths[k]) for k in range(n)]
    ms = [c.mass(builder, f"m{k + 1}", link_masses[k]) for k in range(n)]
    Is = []
    for k in range(n):
        if moments[k] is None:
            Is.append(ms[k] * ls[k] ** 2 / 12.0)
        else:
            Is.append(c.moment(builder, f"I{k + 1}", moments[k]))
    g = c.gravity_magnitude(builder, "g", g)
    joints = [Joint("R", axis=(0, 0, 1),
                    origin=None if k == 0 else c.translation(ls[k - 1]))
              for k in range(n)]
    links = [Link(ms[k], com=(ls[k] / 2.0, 0.0, 0.0), inertia=np.diag([0.0, Is[k], Is[k]]))
             for k in range(n)]
    return SerialChain(joints, links, gravity=(0.0, -g, 0.0), tool=c.translation(ls[-1]),
                       name=name)


def planar_two_link(l1=1.0, l2=1.0, m1=1.0, m2=1.0, g=9.81, I1=None, I2=None,
                    name="planar two-link arm"):
    """Horn's planar two-link arm of uniform rods (seed 001).

    Parameters
    ----------
    l1, l2 : float
        Link lengths (m), > 0.
    m1, m2 : float
        Link masses (kg), >= 0.
    g : float
        Magnitude of gravity (m/s^2), acting along world -y.
    I1, I2 : float, optional
        Centroidal moments of inertia about z (kg m^2); default
        ``m l^2 / 12`` (uniform rod).
    name : str

    Returns
    -------
    kic.SerialChain
        Two revolute joints about +z.  Link frame k sits on joint k with x
        along the link; centroids at mid-length; the tool frame is the tip
        (``Tx(l2)`` in link 2's frame).

    Notes
    -----
    Source: B. K. P. Horn, *Kinematics, Statics, and Dynamics of
    Two-D Manipulators*, MIT AI Lab Working Paper 99 (1975), as re-derived in
    docs/theory.md section 8 (seed 001).  Coordinates: x-y plane with y
    up, theta1 measured from +x, theta2 relative to link 1, gravity (0, -g, 0).
    For equal links and masses ``M = m l^2 [[5/3 + c2, 1/3 + c2/2],
    [1/3 + c2/2, 1/3]]``.

    Raises
    ------
    kic.ModelError
        A length <= 0, a negative mass, moment or g, or a non-finite value.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanisms import planar_two_link
    >>> arm = planar_two_link()
    >>> arm.dof
    2
    >>> np.round(arm.dynamics([0.0, np.pi]).I_star, 6)   # theta2 = pi: folded
    array([[ 0.666667, -0.166667],
           [-0.166667,  0.333333]])
    >>> np.round(arm.tool_frame([0.0, np.pi / 2])[:3, 3], 12)
    array([1., 1., 0.])
    """
    return _planar_rods("planar_two_link", (l1, l2), (m1, m2), (I1, I2), g, name)


def planar_three_link(l1=1.0, l2=1.0, l3=1.0, m1=1.0, m2=1.0, m3=1.0, g=9.81,
                      I1=None, I2=None, I3=None, name="planar three-link arm"):
    """Horn's planar three-link arm of uniform rods (seed 001).

    Parameters
    ----------
    l1, l2, l3 : float
        Link lengths (m), > 0.
    m1, m2, m3 : float
        Link masses (kg), >= 0.
    g : float
        Magnitude of gravity (m/s^2), acting along world -y.
    I1, I2, I3 : float, optional
        Centroidal moments of inertia about z (kg m^2); default
        ``m l^2 / 12`` (uniform rod).
    name : str

    Returns
    -------
    kic.SerialChain
        Three revolute joints about +z; link frame k on joint k with x along
        the link; centroids at mid-length; tool frame at the tip of link 3
        with its x axis along link 3, so its orientation is
        ``phi = theta1 + theta2 + theta3``.

    Notes
    -----
    Source: Horn, WP 99 (1975), three-link manipulator, as re-derived in
    docs/theory.md section 8 (seed 001).  Coordinates as in
    :func:`planar_two_link`.  At q = 0 with equal links and masses
    ``M = m l^2 [[9, 14/3, 4/3], [14/3, 8/3, 5/6], [4/3, 5/6, 1/3]]``.

    Raises
    ------
    kic.ModelError
        A length <= 0, a negative mass, moment or g, or a non-finite value.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanisms import planar_three_link
    >>> arm = planar_three_link()
    >>> np.round(arm.dynamics(np.zeros(3)).I_star * 6)   # 6 M at q = 0
    array([[54., 28.,  8.],
           [28., 16.,  5.],
           [ 8.,  5.,  2.]])
    """
    return _planar_rods("planar_three_link", (l1, l2, l3), (m1, m2, m3), (I1, I2, I3), g,
                        name)


def craig_three_link(l1=0.5, l2=0.5, m1=4.6, m2=2.3, m3=1.0, I3=(0.05, 0.1, 0.1), g=9.8,
                     name="Craig three-link arm"):
    """Craig's planar three-link arm (seed 003, the exercise of *Introduction to
    Robotics: Mechanics and Control*, programming exercise 6).

    Parameters
    ----------
    l1, l2 : float
        Lengths of links 1 and 2 (m), > 0.
    m1, m2 : float
        Point masses (kg) at the distal ends of links 1 and 2 (that is, on
        the axes of joints 2 and 3).
    m3 : float
        Mass of link 3 (kg); its centroid is at the origin of frame {3}, on
        the axis of joint 3.
    I3 : array_like, shape (3,) or (3, 3)
        Centroidal inertia of link 3 in frame {3} (kg m^2); the exercise gives
        diag(0.05, 0.1, 0.1).  Only ``Izz`` acts in the plane.
    g : float
        Magnitude of gravity (m/s^2), acting along world -y.
    name : str

    Returns
    -------
    kic.SerialChain
        Built with :meth:`kic.SerialChain.from_dh` in the modified (Craig)
        convention: rows ``a_{i-1} = 0, l1, l2``, all twists and offsets zero,
        so frame {i} sits on joint i with x along link i.  The tool frame is
        frame {3} itself (the "tip" of the seed: the origin of frame {3}).

    Notes
    -----
    Source: seed 003 (a worked Newton-Euler derivation of the exercise) with
    the corrections of docs/theory.md section 8: the printed hand
    derivation is not symmetric in M and uses c123/s23 where the centroid of
    link 3 sits on joint 3.  Coordinates: x-y plane, theta1 from +x, the others
    relative, gravity (0, -g, 0).

    Raises
    ------
    kic.ModelError
        A length <= 0, a negative mass or g, an invalid inertia, or a
        non-finite value.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanisms import craig_three_link
    >>> arm = craig_three_link()
    >>> q = [0.3, -0.5, 0.7]
    >>> np.round(arm.dynamics(q).I_star, 6)
    array([[4.348011, 1.649006, 0.1     ],
           [1.649006, 0.925   , 0.1     ],
           [0.1     , 0.1     , 0.1     ]])
    >>> np.round(arm.gravity_load(q), 6) + 0.0
    array([52.828752, 15.847677,  0.      ])
    """
    b = "craig_three_link"
    l1 = c.length(b, "l1", l1)
    l2 = c.length(b, "l2", l2)
    m1, m2, m3 = (c.mass(b, n, v) for n, v in (("m1", m1), ("m2", m2), ("m3", m3)))
    g = c.gravity_magnitude(b, "g", g)
    rows = [dict(name="joint1"), dict(a=l1, name="joint2"), dict(a=l2, name="joint3")]
    links = [Link(m1, com=(l1, 0.0, 0.0), name="link1"),
             Link(m2, com=(l2, 0.0, 0.0), name="link2"),
             Link(m3, com=(0.0, 0.0, 0.0), inertia=I3, name="link3")]
    return SerialChain.from_dh(rows, links, convention="modified", gravity=(0.0, -g, 0.0),
                               name=name)


def fu_two_link(m1=1.0, m2=1.0, l=1.0, g=9.8062, name="Fu-Gonzalez-Lee two-link arm"):
    """The two-link planar arm of Fu, Gonzalez & Lee, chapter 3 (seed 002).

    Parameters
    ----------
    m1, m2 : float
        Masses of the two uniform slender rods (kg), >= 0.
    l : float
        Length of both links (m), > 0.
    g : float
        Magnitude of gravity (m/s^2), acting along world -y; the chapter uses
        9.8062.
    name : str

    Returns
    -------
    kic.SerialChain
        Built with :meth:`kic.SerialChain.from_dh` in the standard (distal)
        convention, rows ``a1 = a2 = l`` and zero twists and offsets
        (Fu-Gonzalez-Lee Fig. 3.2).  Frame i is at the distal end of link i,
        so each centroid is at ``(-l/2, 0, 0)`` in its frame and each inertia
        is ``diag(0, m l^2/12, m l^2/12)`` there.  The tool frame is frame 2
        (the tip).

    Notes
    -----
    Source: K. S. Fu, R. C. Gonzalez, C. S. G. Lee, *Robotics: Control,
    Sensing, Vision and Intelligence* (1987), §3.2.6, §3.3.7, §3.4.2, with the
    errata E2, E3 of docs/theory.md section 8.  Closed form:
    ``D = [[m1 l^2/3 + 4/3 m2 l^2 + m2 l^2 C2, m2 l^2/3 + m2 l^2 C2/2],
    [., m2 l^2/3]]``, ``c = ((m1/2 + m2) g l C1 + m2 g l C12/2, m2 g l C12/2)``.

    Raises
    ------
    kic.ModelError
        l <= 0, a negative mass or g, or a non-finite value.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanisms import fu_two_link
    >>> arm = fu_two_link()
    >>> np.round(arm.dynamics([0.0, np.pi / 2]).I_star * 3, 12)   # case C: 3 D
    array([[5., 1.],
           [1., 1.]])
    >>> np.round(arm.gravity_load([0.0, 0.0]), 4)   # case A: (2 g, g / 2)
    array([19.6124,  4.9031])
    """
    b = "fu_two_link"
    m1 = c.mass(b, "m1", m1)
    m2 = c.mass(b, "m2", m2)
    l = c.length(b, "l", l)
    g = c.gravity_magnitude(b, "g", g)
    rod = lambda m, k: Link(m, com=(-l / 2.0, 0.0, 0.0), inertia=c.rod_inertia(m, l, 0),
                            name=f"link{k}")
    return SerialChain.from_dh([dict(a=l, name="joint1"), dict(a=l, name="joint2")],
                               [rod(m1, 1), rod(m2, 2)], convention="standard",
                               gravity=(0.0, -g, 0.0), name=name)
