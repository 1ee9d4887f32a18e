"""Closed mechanisms: single loops, the Stewart platform, redundant and
overconstrained systems (seed 004, chapter IV).

Each builder assembles a :class:`kic.Mechanism` from its dimensions and masses
and returns the :class:`kic.ClosedModel` in the stated coordinates, with a
closed-form first guess for the position solver that keeps it on the stated
assembly branch (:mod:`mechanisms.geometry`).  Planar mechanisms lie in the x-y
plane with gravity along -y; their links are uniform slender rods (centroid at
mid-length, ``m L^2/12`` about the centroid) and every revolute axis is +z.

The numbers of the five-bar and of the Stewart platform (masses, centroids,
inertias, joint origins, closure frames, gravity) are derived once, for arrays
of designs, by :func:`five_bar_numbers` and :func:`stewart_numbers`: the
builders take one design from them, the design-batch writers
(:mod:`mechanisms.designs`) write D designs' float buffers from them.
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np

import kic
from kic.settings import DEFAULT_GRAVITY

from kic.chain import composite_body as composite  # the one home of joining bodies

from ._common import (checked, finite, gravity_magnitude, length, mass,
                      rod_inertia, translation, vector3)
from .geometry import (FIVE_BAR_HOME, FIVE_BAR_JOINTS, FIVE_BAR_LENGTHS, FiveBarGeometry,
                       StewartGeometry, angle, circle_meet, finite_pair, five_bar_closes,
                       five_bar_crank_guess, five_bar_mode, five_bar_tip_guess, mode_tuple,
                       rx4, stewart_anchors, stewart_guess, two_link_ik, wrap)

__all__ = ["five_bar", "FiveBarGeometry", "FIVE_BAR_HOME", "StewartGeometry", "four_bar",
           "slider_crank", "bricard", "stewart_platform", "redundant_planar_arm",
           "two_arm_object"]


#: the design parameters of the five-bar and of the Stewart platform with their
#: kinds (mechanisms._common.KINDS): one list for the builders and the writers
FIVE_BAR_PARAMETERS = {**dict.fromkeys(FIVE_BAR_LENGTHS, "length"), **dict.fromkeys(
    ("m_crank1", "m_crank2", "m_coupler1", "m_coupler2", "m_tip"), "mass"), "g": "gravity"}
STEWART_PARAMETERS = {"rb": "length", "rp": "length", "base_half_angle": "angle",
                      "plat_half_angle": "angle", "h0": "length", "m_plat": "mass",
                      "m_cyl": "mass", "m_rod": "mass", "g": "gravity"}


def _rod_body(mech, name, m, L, extra=()):
    """A uniform rod along body x from 0 to L, plus point masses (m, x)."""
    M, c, I = composite(_rod_parts(m, L, extra))
    mech.add_body(name, mass=M, com=c, inertia=I)


def _rod_parts(m, L, extra=()):
    """The parts (m, c, I_c) of a uniform rod along body x from 0 to L plus point
    masses (m, x), batched over designs (arrays (...))."""
    return ([(m, _along_x(np.asarray(L) / 2), rod_inertia(m, L, 0))]
            + [(mp, _along_x(x), np.zeros(np.shape(x) + (3, 3))) for mp, x in extra])


def _along_x(x) -> np.ndarray:
    """Points (..., 3) at x (...) on the x axis."""
    x = np.asarray(x, float)
    out = np.zeros(x.shape + (3,))
    out[..., 0] = x
    return out


def _gravity(g, axis: int) -> np.ndarray:
    """Gravity vectors (..., 3) of magnitude g (...) along -axis."""
    g = np.asarray(g, float)
    out = np.zeros(g.shape + (3,))
    out[..., axis] = -g
    return out


def _one(numbers, d: int = 0):
    """Design d of the arrays of :func:`five_bar_numbers` or :func:`stewart_numbers`."""
    if isinstance(numbers, dict):
        return {k: _one(v, d) for k, v in numbers.items()}
    if isinstance(numbers, tuple):
        return tuple(_one(v, d) for v in numbers)
    return numbers[d]


def five_bar(base=0.2, crank1=0.25, crank2=0.25, coupler1=0.35, coupler2=0.35,
             m_crank1=1.0, m_crank2=1.0, m_coupler1=0.8, m_coupler2=0.8, m_tip=0.5,
             g=DEFAULT_GRAVITY, branch: str | None = None, *, elbows=None,
             tip_side: int | None = None, mode=None, coordinates: str = "cranks",
             home=None) -> kic.ClosedModel:
    """Planar five-bar linkage driven at both cranks.

    Crank 1 pivots at (0, 0), crank 2 at (``base``, 0) (m); coupler 1 joins the
    tip A1 of crank 1 to the closing revolute C, coupler 2 joins the tip A2 of
    crank 2 to C.  ``m_tip`` (kg) is a point mass on coupler 1 at C.

    Parameters
    ----------
    base, crank1, crank2, coupler1, coupler2 : float
        Lengths (m).
    m_crank1, m_crank2, m_coupler1, m_coupler2, m_tip : float
        Masses (kg).
    g : float
        Gravity (m/s^2) along -y.
    branch : {"up", "down"}, optional
        Deprecated alias of ``tip_side`` (+1 / -1); kept working.
    elbows : (int, int), optional
        Working mode (+1/-1 each, :class:`FiveBarGeometry`): the elbows of
        the reference configuration and the default of
        ``model.geometry.inverse``.  By default those of the reference found
        on the tip side (with the default dimensions (-1, +1): elbows out, the
        tip above the base).
    tip_side : int, optional
        Assembly mode: +1 (default), C to the left of the directed line
        A1 -> A2; -1 to the right.
    mode : (int, int, int), optional
        ``(elbow1, elbow2, tip_side)`` in one argument (instead of the two above).
    coordinates : {"cranks", "tip"}
        The model's coordinates: the crank angles (default), or the tip C
        (``kic.PointPosition`` on coupler 1, coordinates ``"tip.x"``,
        ``"tip.y"``, m) with the closed-form inverse kinematics in ``elbows``
        as the position solver's guess.
    home : (float, float), optional
        Crank angles (rad) of the reference configuration; it must be in the
        mode.  By default the reference is found from the mode
        (:meth:`FiveBarGeometry.reference_cranks`): the conventional home
        pose :data:`FIVE_BAR_HOME` = (pi/2 + 0.3, pi/2 - 0.3) when it is in the
        mode and regular, else the most regular configuration in the mode.

    Returns
    -------
    kic.ClosedModel
        Coordinates q = (theta1, theta2), the crank angles from +x (joints
        ``"crank1"``, ``"crank2"``), or the tip; other joints ``"elbow1"``,
        ``"elbow2"`` (crank-coupler, relative) and ``"tip"`` (coupler 1 -
        coupler 2).  Bodies ``"crank1"``, ``"crank2"``, ``"coupler1"``,
        ``"coupler2"``.  ``model.geometry`` is the :class:`FiveBarGeometry`
        (closed-form inverse and forward kinematics, modes); in crank
        coordinates ``model.mode == (-tip_side,)``.

    Raises
    ------
    kic.ModelError
        Invalid dimensions, or no configuration of the linkage in the mode.

    Notes
    -----
    The spanning tree is the two crank-coupler chains; the closing revolute
    ``"tip"`` is cut, and its closure (planar: 3 of 6 rows) fixes the three
    passive joints.  The crank model is singular where the two couplers are
    collinear (type II); the tip model where a coupler and its crank are
    (type I).  In crank coordinates the elbows are not part of the model's
    mode: every crank pair has its elbows, which ``geometry.modes`` reports.

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> fb = mechanisms.five_bar()
    >>> q = np.array([np.pi / 2 + 0.3, np.pi / 2 - 0.3])
    >>> tau = fb.inverse_dynamics(q, [0.0, 0.0], [0.0, 0.0])    # holding torques
    >>> bool(np.allclose(tau, fb.dynamics(q).gravity_load))
    True
    >>> crossed = mechanisms.five_bar(mode=(1, -1, -1))
    >>> q, status = crossed.geometry.inverse([0.1, 0.45])
    >>> crossed.geometry.modes(crossed.assemble(q)).tolist()
    [1, -1, -1]
    """
    b = "five_bar"
    p = checked(b, FIVE_BAR_PARAMETERS, dict(
        base=base, crank1=crank1, crank2=crank2, coupler1=coupler1, coupler2=coupler2,
        m_crank1=m_crank1, m_crank2=m_crank2, m_coupler1=m_coupler1, m_coupler2=m_coupler2,
        m_tip=m_tip, g=g))
    if branch not in (None, "up", "down"):
        raise kic.ModelError(f"{b}: branch must be 'up' or 'down', got {branch!r}")
    sides = {s for s in (None if branch is None else 1 if branch == "up" else -1, tip_side,
                         None if mode is None else mode_tuple(mode)[2]) if s is not None}
    if len(sides) > 1:
        raise kic.ModelError(f"{b}: branch={branch!r}, tip_side={tip_side!r} and mode="
                             f"{mode!r} name different tip sides")
    if mode is not None:
        if elbows is not None and tuple(elbows) != mode_tuple(mode)[:2]:
            raise kic.ModelError(f"{b}: elbows={elbows!r} and mode={mode!r} differ")
        elbows = mode_tuple(mode)[:2]
    side = sides.pop() if sides else 1
    want = None if elbows is None else five_bar_mode(elbows, side)[:2]
    if coordinates not in ("cranks", "tip"):
        raise kic.ModelError(f"{b}: coordinates must be 'cranks' or 'tip', got {coordinates!r}")
    lengths = [p[k] for k in FIVE_BAR_LENGTHS]
    if not five_bar_closes(dict(zip(FIVE_BAR_LENGTHS, lengths))):
        longest = max(FIVE_BAR_LENGTHS, key=p.__getitem__)
        raise kic.ModelError(f"{b}: the loop closes nowhere: {longest} = {p[longest]:.6g} m "
                             f"is longer than the other four lengths together "
                             f"({sum(lengths) - p[longest]:.6g} m)")
    geometry = FiveBarGeometry(*lengths, want or (-1, 1), side)
    if home is None:
        q0 = geometry.reference_cranks(want, side)
    else:
        q0 = finite_pair(f"{b}: home", home)
    phi0 = geometry.joint_values(q0)
    found = tuple(int(v) for v in geometry.modes(phi0))
    if found[2] != side or 0 in found or (want is not None and found[:2] != want):
        raise kic.ModelError(f"{b}: home {q0.tolist()} rad is in the mode {found}, not the "
                             f"requested (elbow1, elbow2, tip_side) = "
                             f"{(want or ('any', 'any')) + (side,)}")
    geometry = FiveBarGeometry(*lengths, found[:2], side)
    num = _one(five_bar_numbers({k: np.array([v]) for k, v in p.items()}))
    mech = kic.Mechanism(gravity=num["gravity"], name="five-bar")
    for body, (m, c, I) in num["bodies"].items():
        mech.add_body(body, mass=m, com=c, inertia=I)
    at = {k: translation(*v) for k, v in num["origins"].items()}
    mech.add_joint("crank1", "R", "ground", "crank1")
    mech.add_joint("crank2", "R", "ground", "crank2", origin=at["crank2"])
    mech.add_joint("elbow1", "R", "crank1", "coupler1", origin=at["elbow1"])
    mech.add_joint("elbow2", "R", "crank2", "coupler2", origin=at["elbow2"])
    mech.add_joint("tip", "R", "coupler1", "coupler2", origin=at["tip"],
                   child_origin=translation(*num["closures"]["tip"]))
    ref = dict(zip(FIVE_BAR_JOINTS, phi0))
    if coordinates == "cranks":
        guess = partial(five_bar_crank_guess, geometry=geometry)
        model = mech.model(["crank1", "crank2"], reference=ref, guess=guess, name="five-bar")
    else:
        guess = partial(five_bar_tip_guess, geometry=geometry)
        model = mech.model([kic.PointPosition("coupler1", tuple(num["origins"]["tip"]),
                                            prefix="tip.")],
                           reference=ref, guess=guess, name="five-bar in tip coordinates")
        model.actuators = ["crank1", "crank2"]
    model.geometry = geometry
    return model



def five_bar_numbers(p: Mapping) -> dict:
    """The numbers of five-bar designs from their parameters (arrays (D,), the
    names of :func:`five_bar`'s arguments): the one derivation of
    :func:`five_bar` (one design) and :func:`mechanisms.five_bar_designs` (D).

    Returns a dict of arrays with a leading design axis:

    * ``"bodies"``: body name -> (mass (D,) kg, centroid (D, 3) m, inertia about
      it (D, 3, 3) kg m^2) in the body frame: the four rods, the tip mass on
      coupler 1 at C (parallel-axis theorem, :func:`kic.composite_body`);
    * ``"origins"``: joint name -> its frame's origin (D, 3) in the parent
      body's frame (the joints' frames are not rotated);
    * ``"closures"``: joint name of the closure's A side -> the closing frame's
      origin (D, 3) on the B side (the tip on coupler 2);
    * ``"gravity"``: (D, 3), m/s^2 along -y.
    """
    rod = lambda m, L, extra=(): composite(_rod_parts(p[m], p[L], extra))  # noqa: E731
    return {"bodies": {"crank1": rod("m_crank1", "crank1"),
                       "crank2": rod("m_crank2", "crank2"),
                       "coupler1": rod("m_coupler1", "coupler1",
                                       [(p["m_tip"], p["coupler1"])]),
                       "coupler2": rod("m_coupler2", "coupler2")},
            "origins": {"crank2": _along_x(p["base"]),
                        "elbow1": _along_x(p["crank1"]), "elbow2": _along_x(p["crank2"]),
                        "tip": _along_x(p["coupler1"])},
            "closures": {"tip": _along_x(p["coupler2"])},
            "gravity": _gravity(p["g"], 1)}


# --------------------------------------------------------------- four-bar
def four_bar(ground=0.3, crank=0.1, coupler=0.35, rocker=0.25, m_crank=0.5, m_coupler=1.0,
             m_rocker=0.8, g=DEFAULT_GRAVITY, branch: str = "up",
             coordinate="crank") -> kic.ClosedModel:
    """Planar four-bar linkage (crank-rocker with the default dimensions).

    Crank pivot O2 = (0, 0), rocker pivot O4 = (``ground``, 0) (m); A is the
    crank tip, B the coupler-rocker joint.

    Parameters
    ----------
    ground, crank, coupler, rocker : float
        Lengths (m).
    m_crank, m_coupler, m_rocker : float
        Masses (kg).
    g : float
        Gravity (m/s^2) along -y.
    branch : {"up", "down"}
        B to the left of (above) the directed line A -> O4, or right.
    coordinate : str or kic.PointPosition
        ``"crank"`` (default, the crank angle from +x) or any other joint
        name, or a coordinate object.

    Returns
    -------
    kic.ClosedModel
        Joints ``"crank"``, ``"A"``, ``"B"``, ``"rocker"``; bodies
        ``"crank"``, ``"coupler"``, ``"rocker"``.

    Notes
    -----
    Grashof crank-rocker with the defaults (s + l < p + q).  The loop is cut
    at ``"B"``.

    Examples
    --------
    >>> import mechanisms
    >>> fb = mechanisms.four_bar()
    >>> fb.dof, fb.coordinate_names
    (1, ['crank'])
    """
    b = "four_bar"
    d, a, c, r = (length(b, n, v) for n, v in (("ground", ground), ("crank", crank),
                                              ("coupler", coupler), ("rocker", rocker)))
    ma, mc, mr = (mass(b, n, v) for n, v in (("m_crank", m_crank), ("m_coupler", m_coupler),
                                             ("m_rocker", m_rocker)))
    g = gravity_magnitude(b, "g", g)
    mech = kic.Mechanism(gravity=(0.0, -g, 0.0), name="four-bar")
    _rod_body(mech, "crank", ma, a)
    _rod_body(mech, "coupler", mc, c)
    _rod_body(mech, "rocker", mr, r)
    mech.add_joint("crank", "R", "ground", "crank")
    mech.add_joint("A", "R", "crank", "coupler", origin=translation(a))
    mech.add_joint("rocker", "R", "ground", "rocker", origin=translation(d))
    mech.add_joint("B", "R", "coupler", "rocker", origin=translation(c),
                   child_origin=translation(r))
    solve = partial(_four_bar_guess, a=a, c=c, r=r, d=d, up=branch == "up")
    ref = dict(zip(["crank", "A", "rocker", "B"], solve(np.array([1.0]), strict=True)[0]))
    guess = solve if coordinate == "crank" else None
    return mech.model([coordinate], reference=ref, guess=guess, name="four-bar")


def _four_bar_guess(theta, a, c, r, d, up, strict=False):
    """All joint values of the four-bar at crank angles theta (n,) on a branch."""
    theta = np.asarray(theta, float).reshape(-1)
    A = a * np.stack([np.cos(theta), np.sin(theta)], -1)
    B = circle_meet(A, np.broadcast_to([d, 0.0], A.shape), c, r, left=up,
                     what="four-bar loop", strict=strict)
    pc, pr = angle(B - A), angle(B - np.array([d, 0.0]))
    return np.stack([theta, wrap(pc - theta), pr, wrap(pr - pc)], -1)


# ----------------------------------------------------------- slider-crank
def slider_crank(crank=0.1, rod=0.3, offset=0.0, m_crank=0.5, m_rod=1.0, m_slider=2.0,
                 g=DEFAULT_GRAVITY) -> kic.ClosedModel:
    """Offset slider-crank: crank at (0, 0), slider pin on the line y = ``offset``.

    Parameters
    ----------
    crank, rod : float
        Lengths (m).
    offset : float
        Height of the slider line (m), may be negative.
    m_crank, m_rod, m_slider : float
        Masses (kg); the slider is a point mass that does not rotate.
    g : float
        Gravity (m/s^2) along -y.

    Returns
    -------
    kic.ClosedModel
        q = crank angle (joint ``"crank"``); joints ``"A"`` (crank-rod),
        ``"B"`` (rod-slider), ``"slide"`` (prismatic along +x, value = x of B).
        Branch: the slider to the right of the crank tip.

    Notes
    -----
    The loop is cut at the slider pin ``"B"``; the slider is carried by the
    prismatic joint ``"slide"`` along the line y = offset.

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> sc = mechanisms.slider_crank()
    >>> round(float(sc.assemble([0.0])[sc.phi_names.index("slide")]), 12)
    0.4
    """
    b = "slider_crank"
    a, L = length(b, "crank", crank), length(b, "rod", rod)
    e = finite(b, "offset", offset)
    ma, mr, ms = (mass(b, n, v) for n, v in (("m_crank", m_crank), ("m_rod", m_rod),
                                             ("m_slider", m_slider)))
    g = gravity_magnitude(b, "g", g)
    if L <= a + abs(e):
        raise kic.ModelError(f"{b}: rod ({L} m) must be longer than crank + |offset| "
                             f"({a + abs(e)} m) for a full-turn crank")
    mech = kic.Mechanism(gravity=(0.0, -g, 0.0), name="slider-crank")
    _rod_body(mech, "crank", ma, a)
    _rod_body(mech, "rod", mr, L)
    mech.add_body("slider", mass=ms)
    mech.add_joint("crank", "R", "ground", "crank")
    mech.add_joint("A", "R", "crank", "rod", origin=translation(a))
    mech.add_joint("slide", "P", "ground", "slider", axis=(1.0, 0.0, 0.0),
                   origin=translation(0.0, e))
    mech.add_joint("B", "R", "rod", "slider", origin=translation(L))

    guess = partial(_slider_crank_guess, a=a, L=L, e=e)
    ref = dict(zip(["crank", "A", "slide", "B"], guess([0.5])[0]))
    return mech.model(["crank"], reference=ref, guess=guess, name="slider-crank")


def _slider_crank_guess(q, a, L, e):
    """All joint values of the slider-crank at crank angles q (n,) (NaN where the
    rod cannot reach the slider's line)."""
    th = np.asarray(q, float).reshape(-1)
    Ay, Ax = a * np.sin(th), a * np.cos(th)
    with np.errstate(invalid="ignore"):
        phi_rod = np.arcsin((e - Ay) / L)
    xB = Ax + L * np.cos(phi_rod)
    return np.stack([th, wrap(phi_rod - th), xB, -phi_rod], -1)


# --------------------------------------------------------------- Bricard
def bricard(a=0.3, m=1.0, g=DEFAULT_GRAVITY) -> kic.ClosedModel:
    """Bricard's orthogonal 6R linkage: six equal links of length ``a`` (m),
    twists alternating +90 and -90 degrees, zero joint offsets.

    Its closure is structurally rank deficient (rank 5 of 6 rows at every
    configuration) and it moves with one degree of freedom; kic keeps five
    independent row combinations.

    Parameters
    ----------
    a : float
        Length of every link (m), along the common normals.
    m : float
        Mass of each moving link (kg), a uniform rod.
    g : float
        Gravity (m/s^2) along -z.

    Returns
    -------
    kic.ClosedModel
        q = the angle of joint ``"j1"`` (at the ground link); joints
        ``"j1"`` .. ``"j6"``, moving bodies ``"b1"`` .. ``"b5"``.

    Notes
    -----
    Grubler's count gives 0 (a 6R loop is generically rigid); the actual
    mobility, from the rank of the closure Jacobian, is 1.  The reduction of
    the rank-deficient closure is re-computed at every configuration from the
    closure Jacobian's singular vectors.

    Examples
    --------
    >>> import mechanisms
    >>> br = mechanisms.bricard()
    >>> br.mobility, br.mechanism.grubler()
    (1, 0)
    """
    b = "bricard"
    a = length(b, "a", a)
    m = mass(b, "m", m)
    g = gravity_magnitude(b, "g", g)
    mech = kic.Mechanism(gravity=(0.0, 0.0, -g), name="Bricard 6R")
    for k in range(1, 6):
        _rod_body(mech, f"b{k}", m, a)
    twist = [np.pi / 2, -np.pi / 2] * 3
    bodies = ["ground", "b1", "b2", "b3", "b4", "b5", "ground"]
    link = lambda k: rx4(twist[k]) @ translation(a)         # noqa: E731  (Craig: Rx Tx)
    for k in range(6):
        origin = np.eye(4) if k == 0 else link(k - 1)
        child = link(5) if k == 5 else None
        mech.add_joint(f"j{k + 1}", "R", bodies[k], bodies[k + 1], origin=origin,
                       child_origin=None if child is None else np.linalg.inv(child))
    # near a symmetric assembly (j1 = j3 = j5, j2 = j4 = j6); Newton refines it
    ref = {f"j{k}": (-1.3547 if k % 2 else -1.7483) for k in range(1, 7)}
    return mech.model(["j1"], reference=ref, name="Bricard 6R")


# ------------------------------------------------------- Stewart platform
def stewart_platform(rb=0.5, rp=0.3, base_half_angle=np.radians(15.0),
                     plat_half_angle=np.radians(45.0), h0=0.6, m_plat=10.0,
                     I_plat=(0.3, 0.3, 0.5), plat_com=(0.0, 0.0, 0.05), m_cyl=2.0,
                     cyl_com=0.2, I_cyl=(0.02, 0.02, 0.002), m_rod=1.0, rod_com=-0.15,
                     I_rod=(0.01, 0.01, 0.001), g=DEFAULT_GRAVITY,
                     stroke=None) -> kic.ClosedModel:
    """Gough-Stewart platform, 6-UPS, in platform coordinates.

    Base anchors at radius ``rb`` (m) and angles ``120 k -/+ base_half_angle``
    (rad), platform anchors at radius ``rp`` and ``120 k -/+ plat_half_angle``
    (k = 0, 1, 2; leg i joins base anchor i to platform anchor i, in the
    order k=0 (-), k=0 (+), k=1 (-), ...).  Each leg: a U joint at the base
    (first axis the base x, second the rotated y), a prismatic actuator whose
    coordinate is the leg length from the U centre to the S centre, and an S
    joint at the platform.  The cylinder moves with the U (centroid
    ``cyl_com`` along the leg from the U centre, inertia diagonal in a leg
    frame with z along the leg); the rod moves with the actuator (centroid
    ``rod_com`` along the leg from the S centre).

    Parameters
    ----------
    rb, rp : float
        Radii of the base and platform anchor circles (m).
    base_half_angle, plat_half_angle : float
        Half the angular spacing of each anchor pair (rad, in [0, pi/3); the
        defaults are 15 and 45 degrees).
    h0 : float
        Nominal platform height (m).
    m_plat, I_plat, plat_com : float, (3,) or (3, 3), (3,)
        Platform mass (kg), inertia about its centroid in platform axes
        (kg m^2), centroid in the platform frame (m).
    m_cyl, cyl_com, I_cyl : float, float, (3,)
        Cylinder mass, centroid distance along the leg from the U centre,
        principal inertia in the leg frame.
    m_rod, rod_com, I_rod : float, float, (3,)
        Rod mass, centroid distance along the leg from the S centre (negative:
        towards the base), principal inertia in the leg frame.
    g : float
        Gravity (m/s^2) along -z.
    stroke : (float, float), optional
        Shortest and longest leg length (m): the range of each actuator
        ``"leg{i}.p"`` (``model.limits``); ``model.assemble`` and
        ``model.geometry.status`` report poses outside as
        ``kic.Status.OUTSIDE_LIMITS``.

    Returns
    -------
    kic.ClosedModel
        Coordinates q = (x, y, z, yaw, pitch, roll) of the platform frame (m,
        rad), ``R = Rz(yaw) Ry(pitch) Rx(roll)``, nominal (0, 0, h0, 0, 0, 0).
        Joints ``"leg{i}.u1"``, ``"leg{i}.u2"``, ``"leg{i}.p"`` (actuator) and
        the spherical joint ``"leg{i}.s"`` (closed as a point constraint, so its
        angles are not coordinates of the model); bodies ``"platform"``,
        ``"leg{i}.cyl"``, ``"leg{i}.rod"``.  ``model.actuators`` lists the
        six actuated joints; ``model.actuator_model()`` gives the model in
        the leg lengths; ``model.geometry`` is the :class:`StewartGeometry`
        (``leg_lengths(pose)``, the inverse kinematics, batched).

    Notes
    -----
    The platform pose is a virtual P-P-P-R-R-R chain from the ground, so the
    platform hangs on it in the spanning tree and each leg is cut at its S
    joint, which closes as a point constraint: six independent 3x3 closures in
    the U and P joints of each leg (docs/theory.md, parallel mechanisms).  The first
    guess of the position solver is the legs' closed-form inverse kinematics.

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> sp = mechanisms.stewart_platform()
    >>> f = sp.actuator_loads([0, 0, 0.6, 0, 0, 0], np.zeros(6), np.zeros(6), sp.actuators)
    >>> bool(np.allclose(f, f[0]))          # symmetric pose at rest: equal leg forces
    True
    """
    bld = "stewart_platform"
    p = checked(bld, STEWART_PARAMETERS, dict(
        rb=rb, rp=rp, base_half_angle=base_half_angle, plat_half_angle=plat_half_angle, h0=h0,
        m_plat=m_plat, m_cyl=m_cyl, m_rod=m_rod, g=g))
    for name in ("base_half_angle", "plat_half_angle"):
        check_half_angles(bld, name, p[name])
    fixed = stewart_inertias(bld, I_plat=I_plat, plat_com=plat_com, cyl_com=cyl_com,
                           I_cyl=I_cyl, rod_com=rod_com, I_rod=I_rod)
    num = _one(stewart_numbers({k: np.array([v]) for k, v in p.items()}, **fixed))
    B, P = num["anchors"]
    geometry = StewartGeometry(B, P, stroke)
    mech = kic.Mechanism(gravity=num["gravity"], name="Stewart platform")
    for body, (m, c, I) in num["bodies"].items():
        mech.add_body(body, mass=m, com=c, inertia=I)
    for i in range(6):
        mech.add_joint(f"leg{i}.u", "U", "ground", f"leg{i}.cyl",
                       origin=translation(*num["origins"][f"leg{i}.u1"]),
                       axes=[(1, 0, 0), (0, 1, 0)])
        mech.add_joint(f"leg{i}.p", "P", f"leg{i}.cyl", f"leg{i}.rod", axis=(0, 0, 1),
                       limits=geometry.stroke)     # the leg length's range (None: none)
        mech.add_joint(f"leg{i}.s", "S", f"leg{i}.rod", "platform",
                       child_origin=translation(*num["closures"][f"leg{i}.p"]))

    guess = partial(stewart_guess, geometry=geometry)

    q0 = np.array([0.0, 0.0, p["h0"], 0.0, 0.0, 0.0])
    # every joint value at the nominal pose, the platform's pose joints included (a
    # reference naming only the legs left the pose at zero, and closing the loops by
    # a minimum-norm step moved the platform to z = 0.53 m for the defaults)
    ref = {k: float(v[0]) for k, v in guess(q0).items()}
    model = mech.model([kic.BodyPose("platform")], reference=ref, guess=guess,
                       name="Stewart platform")
    model.actuators = [f"leg{i}.p" for i in range(6)]
    model.anchors = (B, P)
    model.geometry = geometry
    return model


def check_half_angles(builder: str, name: str, values) -> None:
    """A half angle of the Stewart platform's anchor pairs (rad, or an array (D,) of
    designs') must lie in [0, pi/3): below 60 degrees the three pairs stay distinct."""
    a = np.asarray(values, float)
    bad = np.atleast_1d(~((a >= 0.0) & (a < np.pi / 3)))
    if bad.any():
        d = int(np.argmax(bad))
        v = float(np.atleast_1d(a)[d])
        where = f" of design {d}" if a.ndim else ""
        raise kic.ModelError(
            f"{builder}: {name}{where} = {v!r} rad; a half angle must lie in [0, pi/3) rad "
            "(below 60 degrees, so that the three anchor pairs stay distinct); angles are in "
            f"radians, e.g. np.radians({v!r}) if {v!r} was meant in degrees")


def stewart_inertias(builder: str, I_plat, plat_com, cyl_com, I_cyl, rod_com, I_rod) -> dict:
    """The Stewart platform's inertias (principal moments (3,) or tensors (3, 3),
    kg m^2) and centroids (m), checked."""
    out = {n: np.diag(vector3(builder, n, v)) if np.ndim(v) == 1 else np.asarray(v, float)
           for n, v in (("I_plat", I_plat), ("I_cyl", I_cyl), ("I_rod", I_rod))}
    out["plat_com"] = vector3(builder, "plat_com", plat_com)
    out["cyl_com"], out["rod_com"] = float(cyl_com), float(rod_com)
    return out


def stewart_numbers(p: Mapping, I_plat, plat_com, cyl_com, I_cyl, rod_com, I_rod) -> dict:
    """The numbers of Stewart platform designs from their parameters (arrays
    (D,) named as :func:`stewart_platform`'s arguments ``rb``, ``rp``,
    ``base_half_angle``, ``plat_half_angle``, ``m_plat``, ``m_cyl``, ``m_rod``,
    ``g``; the inertias and centroids shared, as :func:`stewart_inertias` checks
    them): the one derivation of :func:`stewart_platform` (one design) and
    :func:`mechanisms.stewart_designs` (D).

    Returns the dict of :func:`five_bar_numbers` (bodies, the U joints'
    origins at the base anchors, the S closures' frames at the platform anchors
    by the joint ``"leg{i}.p"`` of their A side, gravity along -z; every array
    with the design axis first) and
    ``"anchors"``: (B, P), the base and platform anchors (D, 6, 3).
    """
    B, P = stewart_anchors(p["rb"], p["rp"], p["base_half_angle"], p["plat_half_angle"])
    D = B.shape[0]
    each = lambda a: np.broadcast_to(np.asarray(a, float), (D,) + np.shape(a))  # noqa: E731
    bodies = {"platform": (p["m_plat"], each(plat_com), each(I_plat))}
    for i in range(6):
        bodies[f"leg{i}.cyl"] = (p["m_cyl"], each((0.0, 0.0, cyl_com)), each(I_cyl))
        bodies[f"leg{i}.rod"] = (p["m_rod"], each((0.0, 0.0, rod_com)), each(I_rod))
    return {"bodies": bodies, "origins": {f"leg{i}.u1": B[:, i] for i in range(6)},
            "closures": {f"leg{i}.p": P[:, i] for i in range(6)},
            "gravity": _gravity(p["g"], 2), "anchors": (B, P)}


# ------------------------------------------------------- redundant arm
def _redundant_arm_guess(q, L, up):
    q = np.asarray(q, float).reshape(-1, 3)
    W = q[:, :2] - L[2] * np.stack([np.cos(q[:, 2]), np.sin(q[:, 2])], -1)
    t1, t2 = two_link_ik(W, L[0], L[1], up, "redundant arm", strict=False)
    return np.stack([t1, t2, wrap(q[:, 2] - t1 - t2), q[:, 0], q[:, 1], q[:, 2]], -1)


def redundant_planar_arm(l1=0.5, l2=0.4, l3=0.3, m1=2.0, m2=1.5, m3=1.0, g=DEFAULT_GRAVITY,
                         elbow: str = "down") -> kic.ClosedModel:
    """A planar three-link arm that positions its tip, in augmented coordinates.

    The task is the tip position (x, y); with three joints the arm is
    redundant by one.  Following the seed, the model is written in the
    augmented coordinates q = (x, y, phi), phi the absolute angle of link 3
    (a pseudo-coordinate that makes the transfer square and the model exact).

    Parameters
    ----------
    l1, l2, l3 : float
        Link lengths (m); uniform rods.
    m1, m2, m3 : float
        Link masses (kg).
    g : float
        Gravity (m/s^2) along -y.
    elbow : {"down", "up"}
        Branch of the first two links for the position solver.

    Returns
    -------
    kic.ClosedModel
        Coordinates ``"tip.x"``, ``"tip.y"``, ``"tip.yaw"`` (m, m, rad); joints
        ``"j1"``, ``"j2"``, ``"j3"`` (relative angles, the actuators); bodies
        ``"link1"``, ``"link2"``, ``"link3"`` (link 3's frame is at the tip).

    Notes
    -----
    ``model.in_coordinates(["j1", "j2", "j3"])`` is the same arm in joint
    coordinates (equal to :func:`planar_three_link`).  The task-space inertia
    ``(G I*^-1 G^T)^-1`` of the joint model equals the Schur complement of
    ``I*_qq`` with respect to phi (:func:`kic.task_inertia`).

    Examples
    --------
    >>> import numpy as np, kic, mechanisms
    >>> arm = mechanisms.redundant_planar_arm()
    >>> q = np.array([0.6, 0.5, 0.3])
    >>> I = arm.dynamics(q).I_star
    >>> schur = I[:2, :2] - np.outer(I[:2, 2], I[2, :2]) / I[2, 2]
    >>> joints = arm.in_coordinates(["j1", "j2", "j3"])
    >>> th = arm.assemble(q)[:3]
    >>> tip = joints.kinematics(th).point("link3").G[:2]
    >>> bool(np.allclose(kic.task_inertia(joints.dynamics(th).I_star, tip), schur))
    True
    """
    b = "redundant_planar_arm"
    L = [length(b, n, v) for n, v in (("l1", l1), ("l2", l2), ("l3", l3))]
    m = [mass(b, n, v) for n, v in (("m1", m1), ("m2", m2), ("m3", m3))]
    g = gravity_magnitude(b, "g", g)
    mech = kic.Mechanism(gravity=(0.0, -g, 0.0), name="redundant planar arm")
    _rod_body(mech, "link1", m[0], L[0])
    _rod_body(mech, "link2", m[1], L[1])
    mech.add_body("link3", mass=m[2], com=(-L[2] / 2, 0, 0), inertia=rod_inertia(m[2], L[2], 0))
    mech.add_joint("j1", "R", "ground", "link1")
    mech.add_joint("j2", "R", "link1", "link2", origin=translation(L[0]))
    mech.add_joint("j3", "R", "link2", "link3", origin=translation(L[1]),
                   child_origin=translation(-L[2]))
    guess = partial(_redundant_arm_guess, L=tuple(L), up=elbow == "up")

    th0 = np.array([0.4, 0.8, -0.5])           # the reference tip pose, reached on the branch
    a1, a12 = th0[0], th0[0] + th0[1]
    q0 = np.array([L[0] * np.cos(a1) + L[1] * np.cos(a12) + L[2] * np.cos(th0.sum()),
                   L[0] * np.sin(a1) + L[1] * np.sin(a12) + L[2] * np.sin(th0.sum()),
                   th0.sum()])
    ref = dict(zip(["j1", "j2", "j3"], guess(q0)[0, :3]))
    model = mech.model([kic.BodyPose("link3", ("x", "y", "yaw"), prefix="tip.")],
                       reference=ref, guess=guess, name="redundant planar arm")
    model.actuators = ["j1", "j2", "j3"]
    return model


# ------------------------------------------------ overconstrained: two arms
def _two_arm_guess(q, base, a1, a2, b1, b2, w, strict=False):
    q = np.asarray(q, float).reshape(-1, 3)
    u = np.stack([np.cos(q[:, 2]), np.sin(q[:, 2])], -1)
    GA, GB = q[:, :2] - u * w / 2, q[:, :2] + u * w / 2
    ta1, ta2 = two_link_ik(GA, a1, a2, True, "arm A", strict)
    tb1, tb2 = two_link_ik(GB - np.array([base, 0.0]), b1, b2, False, "arm B", strict)
    return np.stack([ta1, ta2, tb1, tb2, wrap(q[:, 2] - ta1 - ta2),
                     wrap(q[:, 2] - tb1 - tb2), q[:, 0], q[:, 1], q[:, 2]], -1)


def two_arm_object(base=0.6, a1=0.4, a2=0.35, b1=0.4, b2=0.35, width=0.2, m_a1=1.5,
                   m_a2=1.0, m_b1=1.5, m_b2=1.0, m_obj=2.0,
                   g=DEFAULT_GRAVITY) -> kic.ClosedModel:
    """Two planar two-link arms holding one object (overconstrained actuation).

    Arm A stands at (0, 0), arm B at (``base``, 0); each tip holds one end of
    the object (a uniform bar of length ``width``) through a revolute joint.
    The closed system has three degrees of freedom (the object's pose) and
    four actuated joints: the load distribution is not unique, and the
    difference is an internal (squeeze) load along the object.

    Parameters
    ----------
    base : float
        Distance between the arm bases (m).
    a1, a2, b1, b2 : float
        Link lengths of arms A and B (m); uniform rods.
    width : float
        Length of the object between the grips (m).
    m_a1, m_a2, m_b1, m_b2, m_obj : float
        Masses (kg).
    g : float
        Gravity (m/s^2) along -y.

    Returns
    -------
    kic.ClosedModel
        Coordinates ``"object.x"``, ``"object.y"``, ``"object.yaw"`` (its
        centre and angle); ``model.actuators`` = ``["a1", "a2", "b1", "b2"]``
        (shoulder and elbow joints); grips ``"gripA"``, ``"gripB"``.

    Notes
    -----
    Use ``model.actuator_loads(q, qd, qdd, model.actuators, weights=...)`` for
    the weighted minimum-norm distribution and :func:`kic.internal_loads` on
    ``model.actuator_jacobian`` for the squeeze direction.

    Examples
    --------
    >>> import numpy as np, kic, mechanisms
    >>> duo = mechanisms.two_arm_object()
    >>> q, z = np.array([0.3, 0.45, 0.0]), np.zeros(3)
    >>> tau = duo.actuator_loads(q, z, z, duo.actuators)
    >>> G = duo.actuator_jacobian(q, duo.actuators)
    >>> bool(np.allclose(G.T @ tau, duo.inverse_dynamics(q, z, z)))
    True
    >>> kic.internal_loads(G).shape
    (4, 1)
    """
    bld = "two_arm_object"
    base, a1, a2, b1, b2, w = (length(bld, n, v) for n, v in (
        ("base", base), ("a1", a1), ("a2", a2), ("b1", b1), ("b2", b2), ("width", width)))
    ma1, ma2, mb1, mb2, mo = (mass(bld, n, v) for n, v in (
        ("m_a1", m_a1), ("m_a2", m_a2), ("m_b1", m_b1), ("m_b2", m_b2), ("m_obj", m_obj)))
    g = gravity_magnitude(bld, "g", g)
    mech = kic.Mechanism(gravity=(0.0, -g, 0.0), name="two arms and an object")
    _rod_body(mech, "armA1", ma1, a1)
    _rod_body(mech, "armA2", ma2, a2)
    _rod_body(mech, "armB1", mb1, b1)
    _rod_body(mech, "armB2", mb2, b2)
    mech.add_body("object", mass=mo, inertia=rod_inertia(mo, w, 0))
    mech.add_joint("a1", "R", "ground", "armA1")
    mech.add_joint("a2", "R", "armA1", "armA2", origin=translation(a1))
    mech.add_joint("b1", "R", "ground", "armB1", origin=translation(base))
    mech.add_joint("b2", "R", "armB1", "armB2", origin=translation(b1))
    mech.add_joint("gripA", "R", "armA2", "object", origin=translation(a2),
                   child_origin=translation(-w / 2))
    mech.add_joint("gripB", "R", "armB2", "object", origin=translation(b2),
                   child_origin=translation(w / 2))

    guess = partial(_two_arm_guess, base=base, a1=a1, a2=a2, b1=b1, b2=b2, w=w)
    q0 = np.array([base / 2, 0.45, 0.0])
    ref = dict(zip(["a1", "a2", "b1", "b2", "gripA", "gripB"],
                   guess(q0, strict=True)[0, :6]))
    model = mech.model([kic.BodyPose("object", ("x", "y", "yaw"))], reference=ref,
                       guess=guess, name="two arms and an object")
    model.actuators = ["a1", "a2", "b1", "b2"]
    return model

