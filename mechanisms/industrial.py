"""Published industrial arms: PUMA 560 and Stanford arm (standard DH), Franka
Emika Panda (modified DH).

The chains hold the rigid-body model only (link masses, centroids, centroidal
inertias).  Motor (armature) inertia, gear ratios and joint friction of the
same sources are returned separately by :func:`puma560_drives` and
:func:`stanford_drives` as a :class:`DriveTrain`, for DC-motor and
state-space work; they are never folded into the chain.

Units: m, kg, kg m^2, rad, m/s^2.  All tables are given in the DH frame of
each link, as published (standard DH: the frame at the distal end of link i,
whose z is the axis of joint i+1; modified DH: the frame on joint i).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kic.chain import Link, SerialChain

from . import _common as c

__all__ = ["DriveTrain", "puma560", "puma560_drives", "stanford_arm", "stanford_drives",
           "panda", "PUMA560_POSES", "PANDA_POSES"]

_PI = np.pi


# ------------------------------------------------------------------ drives
@dataclass(frozen=True)
class DriveTrain:
    """Actuator data of a published arm, per joint (motor side, as tabulated).

    Attributes
    ----------
    motor_inertia : ndarray, shape (M,)
        Armature (rotor) inertia ``Jm`` at the motor (kg m^2).
    gear_ratio : ndarray, shape (M,)
        Gear ratio ``G``, motor angle = ``G`` x joint angle (the sign encodes the
        direction of the drive).
    viscous_friction : ndarray, shape (M,)
        Viscous friction ``B`` at the motor (N m s/rad).
    coulomb_friction : ndarray, shape (M, 2)
        Coulomb friction at the motor for positive and negative motor velocity
        ``(Tc+, Tc-)`` (N m; ``Tc-`` is negative).
    source : str
        Where the numbers come from.

    Notes
    -----
    Reflected to the joint through an ideal gear (``phi = theta_m / G``), the
    rotor inertia is ``G^2 Jm`` and the viscous friction ``G^2 B`` (see
    docs/theory.md, motors and drive train): :attr:`reflected_inertia`,
    :attr:`reflected_viscous_friction`.
    """

    motor_inertia: np.ndarray
    gear_ratio: np.ndarray
    viscous_friction: np.ndarray
    coulomb_friction: np.ndarray
    source: str = ""

    @property
    def reflected_inertia(self) -> np.ndarray:
        """Rotor inertia seen at the joint, ``G^2 Jm`` (kg m^2 or kg), shape (M,)."""
        return self.gear_ratio ** 2 * self.motor_inertia

    @property
    def reflected_viscous_friction(self) -> np.ndarray:
        """Viscous friction seen at the joint, ``G^2 B`` (N m s/rad), shape (M,)."""
        return self.gear_ratio ** 2 * self.viscous_friction


def _links(builder, masses, coms, inertias, n, unchecked=()):
    ms = c.masses(builder, "masses", masses, n)
    cs = c.table(builder, "coms", coms, n, (3,))
    Is = c.inertia_table(builder, "inertias", inertias, n)
    return [Link(ms[k], com=cs[k], inertia=Is[k], name=f"link{k + 1}",
                 check_triangle=k not in unchecked)
            for k in range(n)]


# ------------------------------------------------------------------ PUMA 560
# Robotics Toolbox for MATLAB, mdl_puma560.m ("params of 8/95"), standard DH.
_PUMA_MASSES = (0.0, 17.4, 4.8, 0.82, 0.34, 0.09)
_PUMA_COMS = ((0.0, 0.0, 0.0),
              (-0.3638, 0.006, 0.2275),
              (-0.0203, -0.0141, 0.070),
              (0.0, 0.019, 0.0),
              (0.0, 0.0, 0.0),
              (0.0, 0.0, 0.032))
_PUMA_INERTIAS = ((0.0, 0.35, 0.0),
                  (0.13, 0.524, 0.539),
                  (0.066, 0.086, 0.0125),
                  (1.8e-3, 1.3e-3, 1.8e-3),
                  (0.3e-3, 0.4e-3, 0.3e-3),
                  (0.15e-3, 0.15e-3, 0.04e-3))

#: Named PUMA 560 configurations of the Robotics Toolbox (rad): zero ("L"
#: shape), ready (arm up), stretched along x, nominal (non-singular).
PUMA560_POSES = {
    "qz": np.zeros(6),
    "qr": np.array([0.0, _PI / 2, -_PI / 2, 0.0, 0.0, 0.0]),
    "qs": np.array([0.0, 0.0, -_PI / 2, 0.0, 0.0, 0.0]),
    "qn": np.array([0.0, _PI / 4, _PI, 0.0, _PI / 4, 0.0]),
}


def puma560(d1=0.0, a2=0.4318, a3=0.0203, d3=0.15005, d4=0.4318, masses=_PUMA_MASSES,
            coms=_PUMA_COMS, inertias=_PUMA_INERTIAS, gravity=(0.0, 0.0, -9.81),
            name="PUMA 560"):
    """Unimation PUMA 560, standard DH, with the commonly used inertial parameters.

    Parameters
    ----------
    d1 : float
        Height of the shoulder above the base frame (m).  0 in
        ``mdl_puma560.m``; the Python toolbox's ``Puma560`` uses 0.672 (the
        mounting surface).  It changes neither I* nor the gravity load.
    a2, a3, d3, d4 : float
        The other non-zero DH lengths (m): upper-arm length, elbow offset,
        shoulder offset, forearm length.
    masses : array_like, shape (6,)
        Link masses (kg): ``(0, 17.4, 4.8, 0.82, 0.34, 0.09)``.  Link 1 has no
        mass (Armstrong et al. found none, and none is needed: its centroid
        is on the joint-1 axis).
    coms : array_like, shape (6, 3)
        Centroids in the DH frame of each link (m).
    inertias : array_like, shape (6, 3) or (6, 3, 3)
        Centroidal inertias in the DH frame of each link (kg m^2); the table
        gives principal moments ``(Ixx, Iyy, Izz)`` only.
    gravity : array_like, shape (3,)
        Gravitational acceleration in the base frame (m/s^2); the toolbox uses
        9.81 along -z.
    name : str

    Returns
    -------
    kic.SerialChain
        Six revolute joints.  DH rows ``(d, a, alpha)``: (d1, 0, pi/2),
        (0, a2, 0), (d3, a3, -pi/2), (d4, 0, pi/2), (0, 0, -pi/2), (0, 0, 0);
        all joint offsets zero, so q = 0 is the toolbox's ``qz`` ("L" shape,
        upper arm horizontal along +x, forearm up).  The tool frame is DH
        frame 6 (wrist centre; no tool length).

    Notes
    -----
    Source: P. I. Corke, Robotics Toolbox for MATLAB, ``mdl_puma560.m``
    (parameters of 8/95), also ``roboticstoolbox.models.DH.Puma560`` in the
    Python toolbox, which cites P. Corke and B. Armstrong-Helouvry, "A search
    for consensus among model parameters reported for the PUMA 560 robot",
    Proc. IEEE ICRA 1994, pp. 1608-1613.  The masses are those of
    B. Armstrong, O. Khatib, J. Burdick, "The explicit dynamic model and
    inertial parameters of the PUMA 560 arm", Proc. IEEE ICRA 1986,
    pp. 510-518; centroids and inertias were moved by Corke from Armstrong's
    modified-DH frames to standard-DH frames (offsets shifted, y and z swapped
    for links 3-5) and revised in the consensus paper (link 3's moments
    differ from AKB's own table, which the toolbox keeps in
    ``mdl_puma560akb.m``).

    The table violates the triangle inequality ``I1 + I2 >= I3`` for link 1
    (a single non-zero moment, 0.35 about the joint-1 axis) and link 3
    (0.066 + 0.0125 < 0.086): no real body has these moments.  Those two links
    are built with ``check_triangle=False``; the others are checked.

    Motor inertia, gear ratios and friction are not part of the chain (the
    toolbox adds ``G^2 Jm`` to the diagonal of its inertia matrix); get them
    from :func:`puma560_drives`.  Named configurations: :data:`PUMA560_POSES`.

    Raises
    ------
    kic.ModelError
        A negative mass, a table of the wrong shape, or a non-finite value.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanisms import puma560, PUMA560_POSES
    >>> robot = puma560()
    >>> robot.dof, round(robot.total_mass, 2)
    (6, 23.45)
    >>> (np.round(robot.gravity_load(PUMA560_POSES["qn"]), 4) + 0.0).tolist()
    [0.0, 31.6399, 6.0351, 0.0, 0.0283, 0.0]
    """
    b = "puma560"
    d1, a2, a3, d3, d4 = (c.finite(b, n, v) for n, v in
                          (("d1", d1), ("a2", a2), ("a3", a3), ("d3", d3), ("d4", d4)))
    rows = [dict(d=d1, a=0.0, alpha=_PI / 2, name="joint1"),
            dict(d=0.0, a=a2, alpha=0.0, name="joint2"),
            dict(d=d3, a=a3, alpha=-_PI / 2, name="joint3"),
            dict(d=d4, a=0.0, alpha=_PI / 2, name="joint4"),
            dict(d=0.0, a=0.0, alpha=-_PI / 2, name="joint5"),
            dict(d=0.0, a=0.0, alpha=0.0, name="joint6")]
    links = _links(b, masses, coms, inertias, 6, unchecked=(0, 2))
    gravity = c.vector3(b, "gravity", gravity)
    return SerialChain.from_dh(rows, links, convention="standard", gravity=gravity,
                               name=name)


def puma560_drives() -> DriveTrain:
    """Motor inertia, gear ratio and friction of the PUMA 560 drives.

    Returns
    -------
    DriveTrain
        ``Jm = (200, 200, 200, 33, 33, 33) x 1e-6 kg m^2``,
        ``G = (-62.6111, 107.815, -53.7063, 76.0364, 71.923, 76.686)``,
        viscous ``B`` and Coulomb ``(Tc+, Tc-)`` friction at the motors.

    Notes
    -----
    Source: Robotics Toolbox for MATLAB, ``mdl_puma560.m`` (parameters of
    8/95; Corke & Armstrong-Helouvry 1994).  The toolbox's
    ``p560.inertia(q)`` equals the I* of :func:`puma560` plus
    ``diag(reflected_inertia)``.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanisms import puma560_drives
    >>> np.round(puma560_drives().reflected_inertia, 4)
    array([0.784 , 2.3248, 0.5769, 0.1908, 0.1707, 0.1941])
    """
    return DriveTrain(
        motor_inertia=np.array([200e-6, 200e-6, 200e-6, 33e-6, 33e-6, 33e-6]),
        gear_ratio=np.array([-62.6111, 107.815, -53.7063, 76.0364, 71.923, 76.686]),
        viscous_friction=np.array([1.48e-3, 0.817e-3, 1.38e-3, 71.2e-6, 82.6e-6, 36.7e-6]),
        coulomb_friction=np.array([[0.395, -0.435], [0.126, -0.071], [0.132, -0.105],
                                   [11.2e-3, -16.9e-3], [9.26e-3, -14.5e-3],
                                   [3.96e-3, -10.5e-3]]),
        source="Robotics Toolbox for MATLAB, mdl_puma560.m (Corke & Armstrong-Helouvry 1994)")


# ------------------------------------------------------------- Stanford arm
# Robotics Toolbox for MATLAB, mdl_stanford.m, standard DH.
_STANFORD_MASSES = (9.29, 5.01, 4.25, 1.08, 0.630, 0.51)
_STANFORD_COMS = ((0.0, 0.0175, -0.1105),
                  (0.0, -1.054, 0.0),
                  (0.0, 0.0, -6.447),
                  (0.0, 0.092, -0.054),
                  (0.0, 0.566, 0.003),
                  (0.0, 0.0, 1.554))
_STANFORD_INERTIAS = ((0.276, 0.255, 0.071),
                      (0.108, 0.018, 0.100),
                      (2.51, 2.51, 0.006),
                      (0.002, 0.001, 0.001),
                      (0.003, 0.0004, 0.0),
                      (0.013, 0.013, 0.0003))


def stanford_arm(d1=0.412, d2=0.154, d6=0.263, masses=_STANFORD_MASSES,
                 coms=_STANFORD_COMS, inertias=_STANFORD_INERTIAS,
                 gravity=(0.0, 0.0, -9.81), name="Stanford arm"):
    """The Stanford (Scheinman) arm: RRPRRR, standard DH, with its published
    mass table.

    Parameters
    ----------
    d1, d2, d6 : float
        DH offsets (m): column height, shoulder offset, wrist-to-flange.
    masses : array_like, shape (6,)
        Link masses (kg): ``(9.29, 5.01, 4.25, 1.08, 0.63, 0.51)``.
    coms : array_like, shape (6, 3)
        Centroids in the DH frame of each link, as tabulated (see Notes).
    inertias : array_like, shape (6, 3) or (6, 3, 3)
        Centroidal inertias in the DH frame of each link (kg m^2).
    gravity : array_like, shape (3,)
        Gravitational acceleration in the base frame (m/s^2).
    name : str

    Returns
    -------
    kic.SerialChain
        Joint 3 is prismatic (coordinate: the boom extension d3, in m; the
        toolbox's limits are 12 to 50 in, 0.3048 to 1.27 m).  DH rows
        ``(theta, d, a, alpha)``: (q1, d1, 0, -pi/2), (q2, d2, 0, pi/2),
        (-pi/2, q3, 0, 0), (q4, 0, 0, -pi/2), (q5, 0, 0, pi/2), (q6, d6, 0, 0).
        The tool frame is DH frame 6.

    Notes
    -----
    Source: P. I. Corke, Robotics Toolbox for MATLAB, ``mdl_stanford.m``:
    kinematics from Stanford AIM-177 (R. Paul, 1972, Fig. 2.3), dynamics from
    R. P. Paul, *Robot Manipulators: Mathematics, Programming and Control*
    (1981), Tables 6.5 and 6.6; see also Dobrotin & Scheinman, IJCAI 1973.
    (The Python toolbox's ``Stanford`` differs: it sets a3 = 0.0203 and
    d6 = 0; the MATLAB model is followed here.)

    The mass table is reproduced as tabulated, which is not physically
    plausible: several centroid offsets (1.054, 6.447, 0.566, 1.554) are far
    larger than the arm and look like values in other units, and link 5's
    moments ``(0.003, 0.0004, 0)`` violate the triangle inequality, so link 5
    is built with ``check_triangle=False``.  Pass ``coms=``/``inertias=`` to
    use better data.  Armature inertias (gear ratios unknown, 1) are in
    :func:`stanford_drives`.

    Raises
    ------
    kic.ModelError
        A negative mass, a table of the wrong shape, or a non-finite value.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanisms import stanford_arm
    >>> arm = stanford_arm()
    >>> "".join(j.kind for j in arm.joints)
    'RRPRRR'
    >>> np.round(arm.tool_frame([0, 0, 0.5, 0, 0, 0])[:3, 3], 4)   # boom vertical at q2 = 0
    array([0.   , 0.154, 1.175])
    """
    b = "stanford_arm"
    d1, d2, d6 = (c.finite(b, n, v) for n, v in (("d1", d1), ("d2", d2), ("d6", d6)))
    rows = [dict(d=d1, alpha=-_PI / 2, name="joint1"),
            dict(d=d2, alpha=_PI / 2, name="joint2"),
            dict(theta=-_PI / 2, kind="P", name="joint3"),
            dict(alpha=-_PI / 2, name="joint4"),
            dict(alpha=_PI / 2, name="joint5"),
            dict(d=d6, name="joint6")]
    links = _links(b, masses, coms, inertias, 6, unchecked=(4,))
    gravity = c.vector3(b, "gravity", gravity)
    return SerialChain.from_dh(rows, links, convention="standard", gravity=gravity,
                               name=name)


def stanford_drives() -> DriveTrain:
    """Armature inertias of the Stanford arm (gear ratios unknown, set to 1).

    Returns
    -------
    DriveTrain
        ``Jm = (0.953, 2.193, 0.782, 0.106, 0.097, 0.020)`` (already reflected
        to the joints: kg m^2, kg for the prismatic joint 3), ``G = 1``, no
        friction data.

    Notes
    -----
    Source: Robotics Toolbox for MATLAB, ``mdl_stanford.m`` (Paul 1981,
    Table 6.6).
    """
    return DriveTrain(
        motor_inertia=np.array([0.953, 2.193, 0.782, 0.106, 0.097, 0.020]),
        gear_ratio=np.ones(6), viscous_friction=np.zeros(6),
        coulomb_friction=np.zeros((6, 2)),
        source="Robotics Toolbox for MATLAB, mdl_stanford.m (Paul 1981, Table 6.6)")


# ------------------------------------------------------------------- Panda
# Gaz, Cognetti, Oliva, Robuffo Giordano, De Luca (2019), supplementary
# material Tables VIII-IX, as listed in the authors' repository
# (marcocognetti/FrankaEmikaPandaDynModel, matlab/ConvertDynPars2VREP).
_PANDA_MASSES = (4.970684, 0.646926, 3.228604, 3.587895, 1.225946, 1.666555, 0.735522)
_PANDA_COMS = ((3.875e-03, 2.081e-03, 0.0),
               (-3.141e-03, -2.872e-02, 3.495e-03),
               (2.7518e-02, 3.9252e-02, -6.6502e-02),
               (-5.317e-02, 1.04419e-01, 2.7454e-02),
               (-1.1953e-02, 4.1065e-02, -3.8437e-02),
               (6.0149e-02, -1.4117e-02, -1.0517e-02),
               (1.0517e-02, -4.252e-03, 6.1597e-02))
# (Ixx, Ixy, Ixz, Iyy, Iyz, Izz) about the centroid, link-frame axes.
_PANDA_INERTIA_ROWS = (
    (7.0337e-01, -1.3900e-04, 6.7720e-03, 7.0661e-01, 1.9169e-02, 9.1170e-03),
    (7.9620e-03, -3.9250e-03, 1.0254e-02, 2.8110e-02, 7.0400e-04, 2.5995e-02),
    (3.7242e-02, -4.7610e-03, -1.1396e-02, 3.6155e-02, -1.2805e-02, 1.0830e-02),
    (2.5853e-02, 7.7960e-03, -1.3320e-03, 1.9552e-02, 8.6410e-03, 2.8323e-02),
    (3.5549e-02, -2.1170e-03, -4.0370e-03, 2.9474e-02, 2.2900e-04, 8.6270e-03),
    (1.9640e-03, 1.0900e-04, -1.1580e-03, 4.3540e-03, 3.4100e-04, 5.4330e-03),
    (1.2516e-02, -4.2800e-04, -1.1960e-03, 1.0027e-02, -7.4100e-04, 4.8150e-03))
_PANDA_INERTIAS = tuple(((xx, xy, xz), (xy, yy, yz), (xz, yz, zz))
                        for xx, xy, xz, yy, yz, zz in _PANDA_INERTIA_ROWS)

#: Named Panda configurations (rad): zero, and the Robotics Toolbox's "ready".
PANDA_POSES = {
    "qz": np.zeros(7),
    "qr": np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, _PI / 4]),
}


def panda(d1=0.333, d3=0.316, a4=0.0825, a5=-0.0825, d5=0.384, a7=0.088, flange=0.107,
          masses=_PANDA_MASSES, coms=_PANDA_COMS, inertias=_PANDA_INERTIAS,
          gravity=(0.0, 0.0, -9.81), name="Franka Emika Panda"):
    """Franka Emika Panda, seven revolute joints, modified (Craig) DH.

    Parameters
    ----------
    d1, d3, d5 : float
        DH offsets (m): base to shoulder, upper arm, forearm.
    a4, a5, a7 : float
        DH link lengths (m), as published (a5 is negative).
    flange : float
        Distance from frame 7 to the flange along z7 (m); the tool frame.
    masses : array_like, shape (7,)
        Link masses (kg).
    coms : array_like, shape (7, 3)
        Centroids in the (modified-DH) frame of each link (m).
    inertias : array_like, shape (7, 3, 3) or (7, 3)
        Centroidal inertia tensors in link-frame axes (kg m^2).
    gravity : array_like, shape (3,)
        Gravitational acceleration in the base frame (m/s^2); Gaz et al. use
        9.80665.
    name : str

    Returns
    -------
    kic.SerialChain
        Built with ``SerialChain.from_dh(..., convention="modified")``.  Rows
        ``(a_{i-1}, d_i, alpha_{i-1})``: (0, d1, 0), (0, 0, -pi/2),
        (0, d3, pi/2), (a4, 0, pi/2), (a5, d5, -pi/2), (0, 0, pi/2),
        (a7, 0, pi/2); the tool frame is the flange, ``Tz(flange)`` in frame 7
        (no hand).

    Notes
    -----
    Kinematics: Franka Emika's published modified-DH table (FCI documentation,
    "Robot and interface specifications"; also ``Load_Franka_DH.m`` below).
    Inertial parameters: C. Gaz, M. Cognetti, A. Oliva, P. Robuffo Giordano,
    A. De Luca, "Dynamic Identification of the Franka Emika Panda Robot With
    Retrieval of Feasible Parameters Using Penalty-Based Optimization",
    IEEE Robotics and Automation Letters 4(4), 4147-4154, 2019, supplementary
    material Tables VIII-IX, as listed in the authors' repository
    ``marcocognetti/FrankaEmikaPandaDynModel`` (``DynPars2VREP.m``).  The
    parameters are the physically feasible set retrieved from the identified
    ones; link 1's centroid height is not identifiable and is given as 0.
    Their friction model and the hand are not included.

    Raises
    ------
    kic.ModelError
        A negative mass, an invalid inertia, a table of the wrong shape, or a
        non-finite value.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanisms import panda
    >>> robot = panda()
    >>> robot.dof, round(robot.total_mass, 6)
    (7, 16.062132)
    >>> (np.round(robot.tool_frame(np.zeros(7))[:3, 3], 4) + 0.0).tolist()   # flange at q = 0
    [0.088, 0.0, 0.926]
    """
    b = "panda"
    d1, d3, a4, a5, d5, a7, flange = (
        c.finite(b, n, v) for n, v in (("d1", d1), ("d3", d3), ("a4", a4), ("a5", a5),
                                       ("d5", d5), ("a7", a7), ("flange", flange)))
    rows = [dict(a=0.0, d=d1, alpha=0.0, name="joint1"),
            dict(a=0.0, d=0.0, alpha=-_PI / 2, name="joint2"),
            dict(a=0.0, d=d3, alpha=_PI / 2, name="joint3"),
            dict(a=a4, d=0.0, alpha=_PI / 2, name="joint4"),
            dict(a=a5, d=d5, alpha=-_PI / 2, name="joint5"),
            dict(a=0.0, d=0.0, alpha=_PI / 2, name="joint6"),
            dict(a=a7, d=0.0, alpha=_PI / 2, name="joint7")]
    links = _links(b, masses, coms, inertias, 7)
    gravity = c.vector3(b, "gravity", gravity)
    return SerialChain.from_dh(rows, links, convention="modified", gravity=gravity,
                               tool=c.translation(z=flange), name=name)
